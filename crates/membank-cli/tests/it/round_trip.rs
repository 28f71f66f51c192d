//! The CLI contract, end to end with the real model.

use crate::Bank;

#[test]
fn remember_then_recall_in_a_new_process() {
    let bank = Bank::new();
    let id = bank.remember("alice", "I adopted a grey cat named Miso last week", "2024-05-04T10:00:00Z");
    assert_eq!(id.len(), 36, "remember prints the new id: {id:?}");
    bank.ok(&["remember", "--user", "alice", "--user-text", "I started learning the cello", "--assistant-text", "That is wonderful!", "--at", "2024-05-05T09:00:00Z"]);
    bank.ok(&["note", "--user", "alice", "--text", "Alice prefers tea to coffee", "--at", "2024-05-06T09:00:00Z"]);
    bank.remember("bob", "My cat is called Pixel", "2024-05-04T10:00:00Z");

    let out = bank.json(&["recall", "--user", "alice", "--query", "what is my cat's name?", "--k", "2", "--now", "2024-05-07T12:00:00Z"]);
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let top = &results[0];
    assert_eq!(top["id"], id.as_str());
    assert_eq!(top["kind"], "turn");
    assert_eq!(top["day"], "2024-05-04");
    assert_eq!(top["occurred_at"], "2024-05-04T10:00:00.000Z");
    assert!(top["content"].as_str().unwrap().contains("Miso"));
    assert!(top["score"].as_f64().unwrap() > results[1]["score"].as_f64().unwrap());
    assert!(top["dense_score"].as_f64().unwrap() > 0.3, "{top}");
    assert!(results.iter().all(|r| r["user"] == "alice"), "bob's memory leaked into alice's recall");

    // The recall strengthened what it returned (default policy: retrieved = recalled).
    let shown = bank.json(&["show", "--user", "alice", &id]);
    assert_eq!(shown["memories"][0]["strength"], 2.0);
    assert_eq!(shown["memories"][0]["recall_count"], 1);
    assert_eq!(shown["memories"][0]["last_recalled_at"], "2024-05-07T12:00:00.000Z");
    let events = bank.json(&["events", "--user", "alice", "--memory", &id]);
    let kinds: Vec<&str> = events["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["created", "recalled", "strengthened"]);

    // --no-strengthen inspects without changing anything.
    bank.json(&["recall", "--user", "alice", "--query", "cat", "--k", "1", "--no-strengthen"]);
    assert_eq!(bank.json(&["show", "--user", "alice", &id])["memories"][0]["strength"], 2.0);

    // Human output names the memory and its day.
    let human = bank.ok(&["recall", "--user", "alice", "--query", "cello", "--k", "1", "--no-strengthen"]);
    assert!(human.contains("2024-05-05") && human.contains("cello"), "{human}");
}

#[test]
fn lifecycle_commands_and_sweep_report() {
    let bank = Bank::new();
    let keep = bank.remember("u1", "My daughter's birthday is on March 3rd", "2024-01-01T08:00:00Z");
    let old = bank.remember("u1", "I had pasta for lunch", "2024-01-01T12:00:00Z");
    let other = bank.remember("u1", "It rained all day", "2024-01-01T13:00:00Z");
    bank.ok(&["pin", "--user", "u1", &keep]);

    // Dry run first: reports, changes nothing.
    let dry = bank.json(&["sweep", "--user", "u1", "--now", "2024-01-28T00:00:00Z", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["archived"].as_array().unwrap().len(), 2);
    assert_eq!(bank.json(&["list", "--user", "u1"])["counts"]["active"], 3);

    let report = bank.json(&["sweep", "--user", "u1", "--now", "2024-01-28T00:00:00Z"]);
    assert_eq!(report["examined"], 3);
    let archived = report["archived"].as_array().unwrap();
    let ids: Vec<&str> = archived.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&old.as_str()) && ids.contains(&other.as_str()) && !ids.contains(&keep.as_str()));
    let pasta = archived.iter().find(|a| a["id"] == old.as_str()).unwrap();
    assert_eq!(pasta["S"], 1.0);
    let t = pasta["t"].as_f64().unwrap();
    // 26.5 days in the default unit of three days.
    assert!((t - (27.0 - 0.5) / 3.0).abs() < 1e-6, "t = {t}");
    assert!((pasta["R"].as_f64().unwrap() - (-t).exp()).abs() < 1e-9);

    // Archived memories are listed with --status archived, and can be restored.
    let listed = bank.json(&["list", "--user", "u1", "--status", "archived"]);
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2);
    bank.ok(&["restore", "--user", "u1", &old]);
    bank.ok(&["forget", "--user", "u1", &old, "--reason", "user asked"]);
    bank.ok(&["unpin", "--user", "u1", &keep]);
    bank.ok(&["erase", "--yes", "--user", "u1", &other]);
    let shown = bank.json(&["show", "--user", "u1", &other]);
    assert_eq!(shown["memories"][0]["status"], "erased");
    assert_eq!(shown["memories"][0]["content"], serde_json::Value::Null);
    let events = bank.ok(&["events", "--user", "u1"]);
    assert!(!events.contains("rained"), "erased content in the event log");
    for kind in ["pinned", "archived", "restored", "unpinned", "erased", "swept"] {
        assert!(events.contains(kind), "no {kind} event in\n{events}");
    }
    bank.ok(&["check"]);
}
