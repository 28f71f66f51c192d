//! Acknowledged writes survive `kill -9` of the writer.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::Bank;

#[test]
fn acknowledged_turns_survive_kill_9() {
    let bank = Bank::new();
    bank.remember("alice", "first", "2024-05-04T10:00:00Z");
    // A shell loop of writers; every id printed on stdout is an acknowledged write.
    let script = format!(
        "i=0; while true; do MEMBANK_MODEL_DIR='{model}' '{bin}' --db '{db}' remember --user alice --user-text \"turn $i about the garden\" || exit 1; i=$((i+1)); done",
        model = crate::model_dir().display(),
        bin = env!("CARGO_BIN_EXE_membank"),
        db = bank.db().display()
    );
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut acknowledged = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while acknowledged.len() < 6 {
        acknowledged.push(lines.next().expect("writer ended early").unwrap());
    }
    // Kill the whole group (the shell and the membank process in the middle of a write).
    let pgid = child.id().to_string();
    Command::new("kill").args(["-9", "--", &format!("-{pgid}")]).status().unwrap();
    child.wait().unwrap();
    acknowledged.extend(lines.map_while(Result::ok));

    for id in &acknowledged {
        bank.ok(&["show", "--user", "alice", id]);
    }
    bank.ok(&["check"]);
    let recalled = bank.json(&["recall", "--user", "alice", "--query", "garden", "--k", "50", "--no-strengthen"]);
    assert!(recalled["results"].as_array().unwrap().len() >= acknowledged.len());
}

use std::os::unix::process::CommandExt;
