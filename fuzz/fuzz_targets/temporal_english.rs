//! Fuzzes the temporal parser with free text (English and anything else UTF-8): four
//! bytes choose the day, the rest is the query.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "temporal_common.rs"]
mod temporal_common;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let today = temporal_common::today([data[0], data[1], data[2], data[3]]);
    let query = String::from_utf8_lossy(&data[4..]);
    temporal_common::check(&query, today);
});
