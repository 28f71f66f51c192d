//! The CLI contract, end to end with the real model, on both backends: each test body
//! takes a [`Bank`] and runs twice, `…_sqlite` on a SQLite file and `…_postgres` on a new
//! PostgreSQL database (skipped, saying so, without `MEMBANK_TEST_PG_URL`). The same
//! assertions hold on both: that is the contract. Together the bodies cover `remember`,
//! `note`, `recall`, `list`, `show`, `forget`, `restore`, `pin`, `unpin`, `erase`,
//! `sweep`, `events` and `check`. What only one backend can say (a SQLite file's bytes,
//! two servers over one PostgreSQL database) is tested elsewhere, not here.

use crate::Bank;

/// The kinds of a user's events, in log order (of one memory when `memory` is given).
fn event_kinds(bank: &Bank, user: &str, memory: Option<&str>) -> Vec<String> {
    let mut args = vec!["events", "--user", user];
    if let Some(id) = memory {
        args.extend(["--memory", id]);
    }
    let events = bank.json(&args);
    events["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

/// The ids of a recall's results, best first.
fn result_ids(recall: &serde_json::Value) -> Vec<String> {
    recall["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

/// The ids of a list's memories.
fn listed_ids(list: &serde_json::Value) -> Vec<String> {
    list["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn remember_then_recall_in_a_new_process_sqlite() {
    remember_then_recall_in_a_new_process(&Bank::new());
}

#[test]
fn remember_then_recall_in_a_new_process_postgres() {
    if let Some(bank) = Bank::postgres("remember_then_recall") {
        remember_then_recall_in_a_new_process(&bank);
    }
}

fn remember_then_recall_in_a_new_process(bank: &Bank) {
    let id = bank.remember("alice", "I adopted a grey cat named Miso last week", "2024-05-04T10:00:00Z");
    assert_eq!(id.len(), 36, "remember prints the new id: {id:?}");
    bank.ok(&[
        "remember",
        "--user",
        "alice",
        "--user-text",
        "I started learning the cello",
        "--assistant-text",
        "That is wonderful!",
        "--at",
        "2024-05-05T09:00:00Z",
    ]);
    bank.ok(&["note", "--user", "alice", "--text", "Alice prefers tea to coffee", "--at", "2024-05-06T09:00:00Z"]);
    bank.remember("bob", "My cat is called Pixel", "2024-05-04T10:00:00Z");

    let out = bank.json(&[
        "recall",
        "--user",
        "alice",
        "--query",
        "what is my cat's name?",
        "--k",
        "2",
        "--now",
        "2024-05-07T12:00:00Z",
    ]);
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
    assert_eq!(event_kinds(bank, "alice", Some(&id)), ["created", "recalled", "strengthened"]);

    // --no-strengthen inspects without changing anything.
    bank.json(&["recall", "--user", "alice", "--query", "cat", "--k", "1", "--no-strengthen"]);
    assert_eq!(bank.json(&["show", "--user", "alice", &id])["memories"][0]["strength"], 2.0);
    assert_eq!(event_kinds(bank, "alice", Some(&id)), ["created", "recalled", "strengthened"]);

    // Human output names the memory and its day.
    let human = bank.ok(&["recall", "--user", "alice", "--query", "cello", "--k", "1", "--no-strengthen"]);
    assert!(human.contains("2024-05-05") && human.contains("cello"), "{human}");

    // Each user sees only their own memories.
    let alice = bank.json(&["list", "--user", "alice"]);
    assert_eq!(alice["counts"]["active"], 3);
    assert_eq!(alice["memories"].as_array().unwrap().len(), 3);
    let bob =
        bank.json(&["recall", "--user", "bob", "--query", "what is my cat's name?", "--k", "5", "--no-strengthen"]);
    let bob_results = bob["results"].as_array().unwrap();
    assert_eq!(bob_results.len(), 1, "{bob}");
    assert!(bob_results[0]["content"].as_str().unwrap().contains("Pixel"));
    // Another user's memory is not found by id either.
    bank.fails(&["show", "--user", "bob", &id], 4);
}

#[test]
fn lifecycle_commands_and_sweep_report_sqlite() {
    lifecycle_commands_and_sweep_report(&Bank::new());
}

#[test]
fn lifecycle_commands_and_sweep_report_postgres() {
    if let Some(bank) = Bank::postgres("lifecycle_and_sweep") {
        lifecycle_commands_and_sweep_report(&bank);
    }
}

fn lifecycle_commands_and_sweep_report(bank: &Bank) {
    let keep = bank.remember("u1", "My daughter's birthday is on March 3rd", "2024-01-01T08:00:00Z");
    let old = bank.remember("u1", "I had pasta for lunch", "2024-01-01T12:00:00Z");
    let other = bank.remember("u1", "It rained all day", "2024-01-01T13:00:00Z");
    bank.ok(&["pin", "--user", "u1", &keep]);

    // Dry run first: reports, changes nothing.
    // Two months on: under the default (a one-day unit, S scaled by the importance's odds)
    // lunch and the weather, which the estimator rates low, are long gone.
    let dry = bank.json(&["sweep", "--user", "u1", "--now", "2024-03-01T00:00:00Z", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["archived"].as_array().unwrap().len(), 2);
    assert_eq!(bank.json(&["list", "--user", "u1"])["counts"]["active"], 3);

    let report = bank.json(&["sweep", "--user", "u1", "--now", "2024-03-01T00:00:00Z"]);
    assert_eq!(report["examined"], 3);
    let archived = report["archived"].as_array().unwrap();
    let ids: Vec<&str> = archived.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&old.as_str()) && ids.contains(&other.as_str()) && !ids.contains(&keep.as_str()));
    let pasta = archived.iter().find(|a| a["id"] == old.as_str()).unwrap();
    // S is the effective strength, 1·(1 + w·I/(1−I)), I the estimated importance in (0, 1).
    let s = pasta["S"].as_f64().unwrap();
    assert!(s > 1.0 && s < 20.0, "S = {s}");
    let t = pasta["t"].as_f64().unwrap();
    // 59.5 days (2024 is a leap year) in the default unit of one day.
    assert!((t - 59.5).abs() < 1e-6, "t = {t}");
    assert!((pasta["R"].as_f64().unwrap() - (-t / s).exp()).abs() < 1e-9);

    // Archived memories are listed with --status archived, and can be restored.
    let listed = bank.json(&["list", "--user", "u1", "--status", "archived"]);
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2);
    let counts = &bank.json(&["list", "--user", "u1"])["counts"];
    assert_eq!((counts["active"].as_u64(), counts["archived"].as_u64()), (Some(1), Some(2)));
    // Only the pinned memory is active now: a recall of the active memories alone returns
    // it, one that may reminisce brings the better-matching archived ones along, flagged (and,
    // not strengthening, restores nothing); an audit still finds the archived ones.
    let recall = bank.json(&[
        "recall",
        "--user",
        "u1",
        "--query",
        "what did I eat for lunch?",
        "--k",
        "3",
        "--no-strengthen",
        "--reminisce",
        "never",
    ]);
    assert_eq!(result_ids(&recall), [keep.as_str()]);
    let reminiscing =
        bank.json(&["recall", "--user", "u1", "--query", "what did I eat for lunch?", "--k", "3", "--no-strengthen"]);
    assert_eq!(reminiscing["reminiscence"]["consulted"], true, "{reminiscing}");
    for hit in reminiscing["results"].as_array().unwrap() {
        assert_eq!(hit["reminisced"], hit["status"] == "archived", "{hit}");
    }
    let counts = &bank.json(&["list", "--user", "u1"])["counts"];
    assert_eq!((counts["active"].as_u64(), counts["archived"].as_u64()), (Some(1), Some(2)));
    let audit = bank.json(&[
        "recall",
        "--user",
        "u1",
        "--query",
        "what did I eat for lunch?",
        "--k",
        "3",
        "--include-archived",
        "--no-strengthen",
    ]);
    assert_eq!(result_ids(&audit)[0], old);
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
    assert_eq!(event_kinds(bank, "u1", Some(&old)), ["created", "archived", "restored", "archived"]);
    assert_eq!(event_kinds(bank, "u1", Some(&keep)), ["created", "pinned", "unpinned"]);
    bank.ok(&["check"]);
}

#[test]
fn erase_leaves_no_content_anywhere_sqlite() {
    erase_leaves_no_content_anywhere(&Bank::new());
}

#[test]
fn erase_leaves_no_content_anywhere_postgres() {
    if let Some(bank) = Bank::postgres("erase_no_content") {
        erase_leaves_no_content_anywhere(&bank);
    }
}

fn erase_leaves_no_content_anywhere(bank: &Bank) {
    let secret = bank.remember("carol", "I keep my spare key under the blue flowerpot", "2024-03-01T09:00:00Z");
    let band = bank.remember("carol", "My favourite band is Radiohead", "2024-03-01T10:00:00Z");
    let query = "where is my spare key? the flowerpot";
    let before = bank.json(&["recall", "--user", "carol", "--query", query, "--k", "1", "--no-strengthen"]);
    assert_eq!(result_ids(&before), [secret.as_str()]);

    // Erasure cannot be undone, so a script has to say --yes (usage error otherwise).
    let refused =
        bank.command().args(["erase", "--user", "carol", &secret]).stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert_eq!(bank.json(&["show", "--user", "carol", &secret])["memories"][0]["status"], "active");

    let erased = bank.ok(&["erase", "--yes", "--user", "carol", &secret]);
    assert_eq!(erased.trim(), format!("erased {secret}"));
    // Erasing again changes nothing and is not an error.
    bank.ok(&["erase", "--yes", "--user", "carol", &secret]);

    // show keeps a content-free tombstone.
    let shown = bank.json(&["show", "--user", "carol", &secret]);
    let tombstone = &shown["memories"][0];
    assert_eq!(tombstone["status"], "erased");
    assert_eq!(tombstone["content"], serde_json::Value::Null);
    assert!(tombstone.get("user_text").is_none(), "{tombstone}");
    assert!(!shown.to_string().contains("flowerpot"), "{shown}");
    assert!(!bank.ok(&["show", "--user", "carol", &secret]).contains("flowerpot"));

    // list: gone from the active and "all" views, a tombstone under --status erased.
    let active = bank.json(&["list", "--user", "carol"]);
    assert_eq!(listed_ids(&active), [band.as_str()]);
    assert_eq!((active["counts"]["active"].as_u64(), active["counts"]["erased"].as_u64()), (Some(1), Some(1)));
    assert_eq!(listed_ids(&bank.json(&["list", "--user", "carol", "--all"])), [band.as_str()]);
    let tombstones = bank.json(&["list", "--user", "carol", "--status", "erased"]);
    assert_eq!(listed_ids(&tombstones), [secret.as_str()]);
    assert!(!tombstones.to_string().contains("flowerpot"), "{tombstones}");
    assert!(!bank.ok(&["list", "--user", "carol", "--all"]).contains("flowerpot"));

    // recall never returns it, not even in an audit of archived memories.
    for extra in [&[][..], &["--include-archived"][..]] {
        let mut args = vec!["recall", "--user", "carol", "--query", query, "--k", "5", "--no-strengthen"];
        args.extend_from_slice(extra);
        let recall = bank.json(&args);
        assert_eq!(result_ids(&recall), [band.as_str()], "{recall}");
        assert!(!recall.to_string().contains("flowerpot"));
    }

    // The log says erased, and carries no content.
    assert_eq!(event_kinds(bank, "carol", Some(&secret)), ["created", "erased"]);
    let events = bank.json(&["events", "--user", "carol"]);
    assert!(!events.to_string().contains("flowerpot") && !events.to_string().contains("spare key"), "{events}");
    let erasure = events["events"].as_array().unwrap().iter().find(|e| e["kind"] == "erased").unwrap();
    assert_eq!(erasure["memory_id"], secret.as_str());
    assert_eq!(erasure["data"]["previous_status"], "active");

    // A tombstone cannot be brought back or archived.
    bank.fails(&["restore", "--user", "carol", &secret], 5);
    bank.fails(&["forget", "--user", "carol", &secret], 5);
    bank.ok(&["check"]);
}

#[test]
fn forget_with_a_reason_then_restore_sqlite() {
    forget_with_a_reason_then_restore(&Bank::new());
}

#[test]
fn forget_with_a_reason_then_restore_postgres() {
    if let Some(bank) = Bank::postgres("forget_then_restore") {
        forget_with_a_reason_then_restore(&bank);
    }
}

fn forget_with_a_reason_then_restore(bank: &Bank) {
    let sister = bank.remember("dave", "My sister lives in Lisbon", "2024-06-01T09:00:00Z");
    let chess = bank.remember("dave", "I play chess every Sunday", "2024-06-02T09:00:00Z");
    let query = "where does my sister live?";
    let now = "2024-06-03T12:00:00Z";

    let forgotten = bank.ok(&["forget", "--user", "dave", &sister, "--reason", "she moved away"]);
    assert_eq!(forgotten.trim(), format!("archived {sister}"));
    // Archived, not erased: the content is kept.
    let shown = &bank.json(&["show", "--user", "dave", &sister])["memories"][0];
    assert_eq!(shown["status"], "archived");
    assert!(shown["content"].as_str().unwrap().contains("Lisbon"));
    // Only an active memory can be forgotten.
    bank.fails(&["forget", "--user", "dave", &sister], 5);

    // A recall of the active memories no longer returns it (so does not strengthen it); an
    // audit does. (A recall that may reminisce would bring it back as the best match: `erase`
    // is the way to make sure it never returns.)
    let recall =
        bank.json(&["recall", "--user", "dave", "--query", query, "--k", "2", "--now", now, "--reminisce", "never"]);
    assert_eq!(result_ids(&recall), [chess.as_str()]);
    let audit =
        bank.json(&["recall", "--user", "dave", "--query", query, "--k", "2", "--include-archived", "--no-strengthen"]);
    assert_eq!(result_ids(&audit)[0], sister);
    assert_eq!(audit["results"][0]["status"], "archived");
    assert_eq!(listed_ids(&bank.json(&["list", "--user", "dave"])), [chess.as_str()]);
    assert_eq!(listed_ids(&bank.json(&["list", "--user", "dave", "--status", "archived"])), [sister.as_str()]);

    // The reason is kept in the log.
    let events = bank.json(&["events", "--user", "dave", "--memory", &sister]);
    let archived = events["events"].as_array().unwrap().iter().find(|e| e["kind"] == "archived").unwrap();
    assert_eq!(archived["data"]["reason"], "she moved away");
    assert_eq!(archived["data"]["policy"], "request");

    let restored = bank.ok(&["restore", "--user", "dave", &sister]);
    assert_eq!(restored.trim(), format!("restored {sister}"));
    assert_eq!(bank.json(&["show", "--user", "dave", &sister])["memories"][0]["status"], "active");
    // Only an archived (or superseded) memory can be restored.
    bank.fails(&["restore", "--user", "dave", &sister], 5);
    let counts = &bank.json(&["list", "--user", "dave"])["counts"];
    assert_eq!((counts["active"].as_u64(), counts["archived"].as_u64()), (Some(2), Some(0)));

    // Recallable and strengthened again, from the strength it had, by a recall on a later
    // day than the restoration (which restarted its clock now; spaced strengthening counts
    // one recall a day).
    let tomorrow = chrono::Utc::now().date_naive().succ_opt().unwrap().and_hms_opt(0, 0, 1).unwrap();
    let later = tomorrow.and_utc().to_rfc3339();
    let recall = bank.json(&["recall", "--user", "dave", "--query", query, "--k", "1", "--now", &later]);
    assert_eq!(result_ids(&recall), [sister.as_str()]);
    let shown = &bank.json(&["show", "--user", "dave", &sister])["memories"][0];
    assert_eq!(shown["strength"], 2.0);
    assert_eq!(shown["recall_count"], 1);
    assert_eq!(
        event_kinds(bank, "dave", Some(&sister)),
        ["created", "archived", "restored", "recalled", "strengthened"]
    );
    // The first recall strengthened only what it returned.
    assert_eq!(event_kinds(bank, "dave", Some(&chess)), ["created", "recalled", "strengthened"]);
    assert_eq!(bank.json(&["show", "--user", "dave", &chess])["memories"][0]["strength"], 2.0);

    // Not found for another user, and an unknown id is not found either.
    bank.fails(&["forget", "--user", "erin", &sister], 4);
    bank.fails(&["restore", "--user", "dave", "01a23299-0000-7000-8000-000000000000"], 4);
}
