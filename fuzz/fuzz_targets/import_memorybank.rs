//! Fuzzes the memorybank import parser (`membank_engine::import::memorybank::parse`) on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "import_common.rs"]
mod import_common;

fuzz_target!(|data: &[u8]| import_common::check(data, membank_engine::import::memorybank::parse));
