//! The `membank` binary end to end: real SQLite files, the real embedding model, one
//! process per command (so "recallable right after remember returns" is checked across
//! processes), exit codes and messages for bad input, and durability under `kill -9`.
//!
//! The model is found through `MEMBANK_MODEL_DIR` or the default location; if it is
//! missing these tests fail and say to run `membank models fetch` (CI fetches it first).

#![allow(missing_docs)]

mod bad_input;
mod bench;
mod chat;
mod citus_faults;
mod config;
mod durability;
mod eval_importance;
mod first_hour;
mod hardening;
mod import;
mod language;
mod maintain;
mod migrate;
mod output;
mod postgres;
mod round_trip;
mod scan_kernels;
mod serve;
mod transfer;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Bank {
    pub dir: tempfile::TempDir,
    /// The PostgreSQL database every command uses instead of the SQLite file, if any.
    pub pg: Option<membank_store::postgres::testing::TestDatabase>,
}

pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("MEMBANK_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(membank_embed::fetch::default_model_dir);
    assert!(
        dir.join("model.safetensors").exists(),
        "the embedding model is missing in {}: run `cargo run -p membank-cli -- models fetch` (or set MEMBANK_MODEL_DIR)",
        dir.display()
    );
    dir
}

impl Default for Bank {
    fn default() -> Self {
        Self::new()
    }
}

impl Bank {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap(), pg: None }
    }

    /// A bank on a new database of the PostgreSQL server `MEMBANK_TEST_PG_URL` names, or
    /// `None` (after saying why) when there is none; `MEMBANK_REQUIRE_PG=1` fails instead.
    pub fn postgres(test: &str) -> Option<Self> {
        let Some(url) = std::env::var("MEMBANK_TEST_PG_URL").ok().filter(|u| !u.trim().is_empty()) else {
            assert!(
                std::env::var("MEMBANK_REQUIRE_PG").as_deref() != Ok("1"),
                "MEMBANK_REQUIRE_PG=1 but MEMBANK_TEST_PG_URL is not set"
            );
            eprintln!(
                "skipping {test} on PostgreSQL: MEMBANK_TEST_PG_URL is not set (scripts/postgres-dev.sh start prints one)"
            );
            return None;
        };
        let database = membank_store::postgres::testing::TestDatabase::create(&url, test);
        assert!(
            std::env::var("MEMBANK_REQUIRE_CITUS").as_deref() != Ok("1") || database.citus,
            "MEMBANK_REQUIRE_CITUS=1 but MEMBANK_TEST_PG_URL is not a Citus coordinator (scripts/citus-dev.sh start prints one)"
        );
        Some(Self { dir: tempfile::tempdir().unwrap(), pg: Some(database) })
    }

    /// The SQLite file of a SQLite bank.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("bank.db")
    }

    /// What `--db` names: the PostgreSQL URL, or the SQLite file.
    pub fn db_arg(&self) -> std::ffi::OsString {
        match &self.pg {
            Some(pg) => pg.url.clone().into(),
            None => self.db().into(),
        }
    }

    pub fn command(&self) -> Command {
        let mut command = self.command_without_db();
        command.arg("--db").arg(self.db_arg());
        command
    }

    /// The binary with this bank's environment but no `--db`.
    pub fn command_without_db(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_membank"));
        command
            .env("MEMBANK_MODEL_DIR", model_dir())
            .env_remove("MEMBANK_CONFIG")
            .env_remove("MEMBANK_EMBED_KERNEL")
            .env_remove("MEMBANK_SCAN_KERNEL")
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"));
        command
    }

    /// Runs and returns the output, whatever the exit code.
    pub fn output(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// Runs, asserts success, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "membank {args:?} failed with {:?}:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs with --json, asserts success, parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    /// Runs, asserts the exit code, returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.output(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "membank {args:?}: stdout {}\nstderr {stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
        stderr
    }

    pub fn remember(&self, user: &str, text: &str, at: &str) -> String {
        self.ok(&["remember", "--user", user, "--user-text", text, "--at", at, "--clock-from", "event"])
            .trim()
            .to_string()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

pub fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}
