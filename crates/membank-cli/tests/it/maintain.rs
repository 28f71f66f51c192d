//! `membank maintain`, `--forgetting-policy`, `--importance` and the `[forgetting.fademem]`
//! and `[maintenance]` tables, with the real binary and the real model.

use crate::{Bank, write};

#[test]
fn maintain_reports_the_documented_json_and_merges_near_duplicates() {
    let bank = Bank::new();
    let old = bank
        .ok(&[
            "note",
            "--user",
            "ana",
            "--text",
            "My sister Lena lives in Porto and works as a nurse",
            "--at",
            "2024-05-01T09:00:00Z",
        ])
        .trim()
        .to_string();
    let new = bank
        .ok(&[
            "note",
            "--user",
            "ana",
            "--text",
            "My sister Lena lives in Porto and works as a nurse.",
            "--at",
            "2024-05-02T09:00:00Z",
        ])
        .trim()
        .to_string();
    bank.ok(&["note", "--user", "ana", "--text", "I had a sandwich", "--at", "2024-05-01T12:00:00Z"]);
    bank.ok(&["note", "--user", "bob", "--text", "Bob plays chess on Sundays", "--at", "2024-05-01T12:00:00Z"]);

    let dry = bank.json(&["maintain", "--user", "ana", "--now", "2024-05-03T00:00:00Z", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["merged"], 1);
    assert_eq!(bank.json(&["list", "--user", "ana"])["counts"]["active"], 3, "a dry run changes nothing");

    let all = bank.json(&["maintain", "--all-users", "--now", "2024-05-03T00:00:00Z"]);
    for key in ["users", "examined", "promoted", "demoted", "archived", "merged", "fused", "conflicts", "skipped"] {
        assert!(all.get(key).is_some(), "missing {key}: {all}");
    }
    assert_eq!(all["users"], 2);
    assert_eq!(all["examined"], 4);
    assert_eq!(all["merged"], 1);
    assert_eq!(all["fused"], 0);
    // Without an LLM, fusion and conflicts are skipped and say so.
    assert!(all["skipped"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("no LLM")), "{all}");

    let shown = bank.json(&["show", "--user", "ana", &old]);
    let memory = &shown["memories"][0];
    assert_eq!(memory["status"], "superseded");
    let events = bank.json(&["events", "--user", "ana", "--memory", &old]);
    let superseded = events["events"].as_array().unwrap().iter().find(|e| e["kind"] == "superseded").unwrap();
    assert_eq!(superseded["data"]["by"], new.as_str());
    assert_eq!(superseded["data"]["rule"], "near_duplicate");
    // Human output.
    let human = bank.ok(&["maintain", "--user", "bob", "--now", "2024-05-04T00:00:00Z"]);
    assert!(human.contains("bob (memorybank): examined 1"), "{human}");
}

#[test]
fn list_and_show_carry_layer_importance_and_the_policys_retention() {
    let bank = Bank::new();
    let id = bank
        .ok(&[
            "note",
            "--user",
            "ana",
            "--text",
            "Ana's passport expires in March",
            "--importance",
            "0.8",
            "--at",
            "2024-05-01T09:00:00Z",
        ])
        .trim()
        .to_string();
    let small = bank
        .ok(&[
            "remember",
            "--user",
            "ana",
            "--user-text",
            "hi",
            "--assistant-text",
            "Hello! How are you?",
            "--at",
            "2024-05-01T09:05:00Z",
        ])
        .trim()
        .to_string();
    let shown = &bank.json(&["show", "--user", "ana", &id])["memories"][0];
    assert_eq!(shown["layer"], "short");
    assert_eq!(shown["importance"], 0.8);
    assert_eq!(shown["base_importance"], 0.8);
    assert_eq!(shown["metadata"]["importance_source"], "explicit");
    let greeting = &bank.json(&["show", "--user", "ana", &small])["memories"][0];
    assert_eq!(greeting["metadata"]["importance_source"], "estimator");
    assert!(greeting["base_importance"].as_f64().unwrap() < 0.3, "{greeting}");

    // The same memory under both policies: MemoryBank's exp(-t/S) or FadeMem's v.
    let list = bank.json(&["list", "--user", "ana"]);
    let mb = list["memories"].as_array().unwrap().iter().find(|m| m["id"] == id.as_str()).unwrap()["retention"]
        .as_f64()
        .unwrap();
    let fade = bank.json(&["--forgetting-policy", "fademem", "list", "--user", "ana"]);
    let fm = fade["memories"].as_array().unwrap().iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert!(fm.get("layer").is_some() && fm.get("importance").is_some());
    assert_ne!(fm["retention"].as_f64().unwrap(), mb, "each policy reports its own retention");
}

#[test]
fn bad_importance_and_policy_values_are_refused_with_their_name() {
    let bank = Bank::new();
    for bad in ["1.5", "-0.1", "NaN", "inf"] {
        let err = bank.fails(&["note", "--user", "ana", "--text", "x y z", &format!("--importance={bad}")], 3);
        assert!(err.contains("importance"), "{bad}: {err}");
    }
    let err = bank.fails(&["note", "--user", "ana", "--text", "x", "--importance", "high"], 2);
    assert!(err.contains("importance"), "{err}");
    // Unknown policies, from the flag or the environment.
    let err = bank.fails(&["--forgetting-policy", "lru", "list", "--user", "ana"], 3);
    assert!(err.contains("memorybank, fademem"), "{err}");
    let out =
        bank.command().env("MEMBANK_FORGETTING_POLICY", "fadmem").args(["list", "--user", "ana"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    // Parameters out of range are refused at start, by name.
    let config = bank.path("fademem.toml");
    for (table, name) in [
        ("[forgetting.fademem]\ndemote = 0.8\npromote = 0.7\n", "demote"),
        ("[forgetting.fademem]\nlambda_base = -0.1\n", "lambda_base"),
        ("[forgetting.fademem]\nepsilon = 1.5\n", "epsilon"),
        ("[forgetting.fademem]\nconflict_decay_factor = 0.5\n", "conflict_decay_factor"),
        ("[forgetting.fademem]\nbase_weight = 0.9\n", "base_weight"),
    ] {
        write(&config, table.as_bytes());
        let err = bank.fails(&["--config", config.to_str().unwrap(), "list", "--user", "ana"], 3);
        assert!(err.contains(name), "{table}: {err}");
    }
    write(&config, b"[forgetting.fademem]\nunknown_knob = 1\n");
    let err = bank.fails(&["--config", config.to_str().unwrap(), "list", "--user", "ana"], 1);
    assert!(err.contains("unknown_knob"), "{err}");
    for (table, needle) in [
        ("[maintenance]\ninterval = \"1y\"\n", "unit"),
        ("[maintenance]\nevery_turns = 0\n", "every_turns"),
        ("[maintenance]\ninterval = 0\n", "interval"),
    ] {
        write(&config, table.as_bytes());
        let err = bank.fails(&["--config", config.to_str().unwrap(), "list", "--user", "ana"], 1);
        assert!(err.contains(needle), "{table}: {err}");
    }
    // maintain's own usage errors.
    let err = bank.fails(&["maintain"], 2);
    assert!(err.contains("--user") || err.contains("--all-users"), "{err}");
    bank.fails(&["maintain", "--user", "ana", "--now", "yesterday"], 3);
    bank.fails(&["maintain", "--user", "  "], 3);
}

#[test]
fn a_fademem_config_table_is_used() {
    let bank = Bank::new();
    let config = bank.path("fademem.toml");
    // A very low ε keeps everything; a high one archives a week-old neutral memory.
    bank.ok(&[
        "note",
        "--user",
        "ana",
        "--text",
        "We watched a film",
        "--importance",
        "0.5",
        "--at",
        "2024-05-01T09:00:00Z",
        "--clock-from",
        "event",
    ]);
    write(
        &config,
        b"[forgetting]\npolicy = \"fademem\"\n[forgetting.fademem]\nepsilon = 0.9\nconsolidation_threshold = 0.95\n",
    );
    let report = bank.json(&[
        "--config",
        config.to_str().unwrap(),
        "maintain",
        "--user",
        "ana",
        "--now",
        "2024-05-08T09:00:00Z",
        "--dry-run",
    ]);
    assert_eq!(report["policy"], "fademem");
    assert_eq!(report["archived"], 1, "{report}");
    assert_eq!(report["archived_memories"][0]["mode"], "fademem");
    write(&config, b"[forgetting]\npolicy = \"fademem\"\n[forgetting.fademem]\nepsilon = 0.001\n");
    let report = bank.json(&[
        "--config",
        config.to_str().unwrap(),
        "maintain",
        "--user",
        "ana",
        "--now",
        "2024-05-08T09:00:00Z",
        "--dry-run",
    ]);
    assert_eq!(report["archived"], 0, "{report}");
}
