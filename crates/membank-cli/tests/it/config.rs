//! Configuration layering: defaults < file < environment < flags, and clear errors for a
//! bad file.

use crate::{Bank, write};

/// Sweeps one 6-day-old memory (two units of three days: S = 1, R = e^-2 ≈ 0.135) under the given threshold
/// settings and says whether it was archived.
fn archived_with(
    bank: &Bank,
    file_threshold: Option<f64>,
    env_threshold: Option<&str>,
    flag_threshold: Option<&str>,
) -> bool {
    let config = bank.path("config.toml");
    match file_threshold {
        Some(theta) => write(&config, format!("[forgetting]\nthreshold = {theta}\n").as_bytes()),
        None => write(&config, b""),
    }
    let mut command = bank.command();
    command.arg("--config").arg(&config).arg("--json");
    if let Some(theta) = env_threshold {
        command.env("MEMBANK_THRESHOLD", theta);
    }
    command.args(["sweep", "--user", "u", "--dry-run", "--now", "2024-01-07T00:00:00Z"]);
    if let Some(theta) = flag_threshold {
        command.args(["--threshold", theta]);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    !report["archived"].as_array().unwrap().is_empty()
}

#[test]
fn flags_beat_env_beat_file_beat_defaults() {
    let bank = Bank::new();
    // Importance .3: S counts as (1 + .3/.7)³ = 2.92 under the default curve, so six days
    // leave R = exp(-2.06) = 0.128.
    let args = ["remember", "--user", "u", "--user-text", "an ordinary day", "--at", "2024-01-01T00:00:00Z"];
    bank.ok(&[&args[..], &["--clock-from", "event", "--importance", "0.3"]].concat());
    assert!(!archived_with(&bank, None, None, None), "default θ = 0.05 keeps R = 0.128");
    assert!(archived_with(&bank, Some(0.2), None, None), "file θ = 0.2 archives");
    assert!(!archived_with(&bank, Some(0.2), Some("0.1"), None), "env beats file");
    assert!(archived_with(&bank, Some(0.2), Some("0.1"), Some("0.3")), "flag beats env");
}

/// `spaced_recall` from the file: by default a memory recalled three times on one day is no
/// stronger than the day it was made; with `spaced_recall = false` each recall adds one.
#[test]
fn spaced_recall_comes_from_the_file() {
    for (file, strength) in [(&b""[..], 1.0), (&b"[forgetting]\nspaced_recall = false\n"[..], 4.0)] {
        let bank = Bank::new();
        let config = bank.path("c.toml");
        std::fs::write(&config, file).unwrap();
        let with = |args: &[&str]| {
            let out = bank.command().arg("--config").arg(&config).arg("--json").args(args).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        with(&[
            "remember",
            "--user",
            "u",
            "--user-text",
            "my cat is called Miso",
            "--at",
            "2024-01-01T08:00:00Z",
            "--clock-from",
            "event",
        ]);
        for hour in ["09", "12", "18"] {
            with(&["recall", "--user", "u", "--query", "cat Miso", "--now", &format!("2024-01-01T{hour}:00:00Z")]);
        }
        let memory = &with(&["list", "--user", "u"])["memories"][0];
        assert_eq!(
            (memory["strength"].as_f64(), memory["recall_count"].as_u64()),
            (Some(strength), Some(3)),
            "{memory}"
        );
    }
}

#[test]
fn a_bad_config_file_is_a_clear_error() {
    let bank = Bank::new();
    let config = bank.path("bad.toml");
    for (bytes, needle) in [
        (&b"[forgetting]\nthreshold = \"high\"\n"[..], "invalid"),
        (&b"[forgeting]\nthreshold = 0.1\n"[..], "unknown field"),
        (&b"\xff\xfe not utf-8"[..], "not valid UTF-8"),
        (&b"[forgetting]\nthreshold = 1.5\n"[..], "between 0 and 1"),
        (&b"[forgetting]\nmode = \"random\"\n"[..], "not one of"),
        (&b"[forgetting]\nimportance_form = \"cubic\"\n"[..], "forgetting.importance_form"),
        (&b"[forgetting]\nimportance_form = \"\"\n"[..], "forgetting.importance_form"),
        (&b"[forgetting]\nimportance_form = 2\n"[..], "invalid type"),
        (&b"[forgetting]\nimportance_form = \"scaled\"\nimportance_weight = -2\n"[..], "[0, 100]"),
        (&b"[forgetting]\nimportance_exponent = 0.5\n"[..], "forgetting.importance_exponent"),
        (&b"[forgetting]\nimportance_exponent = inf\n"[..], "forgetting.importance_exponent"),
        (&b"[forgetting]\nimportance_exponent = \"three\"\n"[..], "invalid type"),
        (&b"[forgetting]\nimportance_exponent = 5\n"[..], "[1, 4]"),
        (&b"[forgetting]\nimportance_exponent = nan\n"[..], "[1, 4]"),
        (&b"[forgetting]\nspaced_recall = \"yes\"\n"[..], "invalid type"),
        (&b"[forgetting]\nspaced_recall = 1\n"[..], "invalid type"),
        (&b"[forgetting]\nspaced_recalls = false\n"[..], "unknown field"),
        (&b"[recall]\nday_diversity = 1.0\n"[..], "recall.day_diversity must be at least 0 and below 1"),
        (&b"[recall]\nfeedback_depth = 0\n"[..], "recall.feedback_depth must be between 1 and 50"),
        (&b"[recall]\nfeedback_weight = -1\n"[..], "recall.feedback_weight must be between 0 and 100"),
        (&b"[recall]\nspeaker_query = \"yes\"\n"[..], "invalid"),
    ] {
        write(&config, bytes);
        let out = bank.command().arg("--config").arg(&config).args(["list", "--user", "u"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    let missing =
        bank.command().args(["--config", "/nonexistent/membank.toml", "list", "--user", "u"]).output().unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read config file"));
}

#[test]
fn a_bad_query_cache_budget_is_a_usage_error_from_every_layer() {
    let bank = Bank::new();
    bank.remember("u", "an ordinary day", "2024-01-01T00:00:00Z");
    // Refused before anything is opened or bound.
    for value in ["-1", "lots", "1.5", "", "1025", "99999999999999999999999", "\u{202e}4"] {
        let flag = format!("--query-cache-mb={value}");
        let stderr = bank.fails(&["serve", "--addr", "127.0.0.1:0", &flag], 2);
        assert!(stderr.contains("--query-cache-mb") && stderr.contains("MiB"), "{value:?}: {stderr}");
        let out = bank
            .command()
            .env("MEMBANK_QUERY_CACHE_MB", value)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "MEMBANK_QUERY_CACHE_MB={value:?}");
    }
    let config = bank.path("query-cache.toml");
    for (value, needle) in [
        ("-1", "not -1"),
        ("2048", "from 0 to 1024 MiB, not 2048"),
        ("\"4\"", "not a whole number"),
        ("0.5", "not a whole number"),
    ] {
        write(&config, format!("[embedding]\nquery_cache_mb = {value}\n").as_bytes());
        let stderr = bank.fails(&["--config", config.to_str().unwrap(), "list", "--user", "u"], 2);
        assert!(stderr.contains("embedding.query_cache_mb") && stderr.contains(needle), "{value}: {stderr}");
    }
    // 0 (off) and a budget are fine.
    for value in ["0", "16"] {
        write(&config, format!("[embedding]\nquery_cache_mb = {value}\n").as_bytes());
        bank.ok(&["--config", config.to_str().unwrap(), "list", "--user", "u"]);
    }
}

#[test]
fn a_bad_cache_budget_is_a_usage_error_from_every_layer() {
    let bank = Bank::new();
    bank.remember("u", "an ordinary day", "2024-01-01T00:00:00Z");
    for value in ["0", "-5", "lots", "1.5", "", "1048577", "99999999999999999999999"] {
        let flag = format!("--cache-mb={value}");
        let stderr = bank.fails(&[&flag, "list", "--user", "u"], 2);
        assert!(stderr.contains("--cache-mb") && stderr.contains("MiB"), "{value:?}: {stderr}");
        let out = bank.command().env("MEMBANK_CACHE_MB", value).args(["list", "--user", "u"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "MEMBANK_CACHE_MB={value:?}: {stderr}");
        assert!(stderr.contains("--cache-mb") && stderr.contains("MiB"), "MEMBANK_CACHE_MB={value:?}: {stderr}");
    }
    let config = bank.path("cache.toml");
    for (value, needle) in [
        ("0", "from 1 to 1048576 MiB, not 0"),
        ("-1", "not -1"),
        ("2000000", "not 2000000"),
        ("\"512\"", "not a whole number"),
        ("1.5", "not a whole number"),
    ] {
        write(&config, format!("[cache]\nmax_mb = {value}\n").as_bytes());
        let stderr = bank.fails(&["--config", config.to_str().unwrap(), "list", "--user", "u"], 2);
        assert!(stderr.contains("cache.max_mb") && stderr.contains(needle), "{value}: {stderr}");
    }
    // Good values at every layer; a flag or the environment wins over a bad file.
    write(&config, b"[cache]\nmax_mb = 64\n");
    bank.ok(&["--config", config.to_str().unwrap(), "list", "--user", "u"]);
    bank.ok(&["--cache-mb", "1", "recall", "--user", "u", "--query", "day"]);
    write(&config, b"[cache]\nmax_mb = 0\n");
    bank.ok(&["--config", config.to_str().unwrap(), "--cache-mb", "16", "list", "--user", "u"]);
    let out = bank
        .command()
        .arg("--config")
        .arg(&config)
        .env("MEMBANK_CACHE_MB", "16")
        .args(["list", "--user", "u"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
