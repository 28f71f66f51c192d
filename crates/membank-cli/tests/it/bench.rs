//! `membank bench …`, `bench/embed/compare.sh` and the counts of `membank eval memorybank`
//! through the real binary, at tiny sizes: the JSON shape of every benchmark (numbers are
//! checked to be numbers, never against a time), progress on a non-terminal standard error
//! as whole lines, bad values of the flags refused with exit 2 or 3, the comparison script's
//! Rust side end to end (so it cannot rot), and questions asked but not scored counted with
//! their reason.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::{Bank, model_dir, write};

/// A public-data folder in miniature: `memorybank/memory_bank_en.json` and
/// `locomo/locomo10.json` with nine distinct sentences between them.
fn tiny_data(bank: &Bank) -> std::path::PathBuf {
    let data = bank.path("data");
    std::fs::create_dir_all(data.join("memorybank")).unwrap();
    std::fs::create_dir_all(data.join("locomo")).unwrap();
    write(
        &data.join("memorybank/memory_bank_en.json"),
        br#"{"Ann": {"history": {"2023-04-27": [
            {"query": "I adopted a grey cat named Miso", "response": "What a lovely name for a cat."},
            {"query": "We went hiking on Mount Tam last weekend", "response": "The views must have been great."},
            {"query": "My sister is getting married in June", "response": "Congratulations to her!"}]}}}"#,
    );
    write(
        &data.join("locomo/locomo10.json"),
        br#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I started learning the piano this spring"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "Which pieces are you practising now?"},
                          {"speaker": "A", "dia_id": "D1:3", "text": "Mostly Bach preludes and some jazz standards"}]}}]"#,
    );
    data
}

fn number(value: &Value, what: &str) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("{what} should be a number: {value}"))
}

/// Every field of a latency object is a number of milliseconds.
fn latency(value: &Value, what: &str) {
    let fields: Vec<&String> = value.as_object().unwrap_or_else(|| panic!("{what}: {value}")).keys().collect();
    assert_eq!(fields, ["p50_ms", "p95_ms", "p99_ms"], "{what}");
    for (name, ms) in value.as_object().unwrap() {
        assert!(number(ms, name) >= 0.0, "{what}.{name}");
    }
}

/// Runs with `--json` (spawned: standard error is a pipe, not a terminal); returns the
/// report and standard error, after checking that progress came as whole lines.
fn json_and_stderr(bank: &Bank, args: &[&str]) -> (Value, String) {
    let out = bank.command().arg("--json").args(args).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "membank --json {args:?}: {stderr}");
    assert_whole_lines(&stderr);
    (
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout))),
        stderr,
    )
}

/// No carriage return, and every line ended: what a log file or CI console can show.
fn assert_whole_lines(stderr: &str) {
    assert!(!stderr.contains('\r'), "progress on a non-terminal must be whole lines: {stderr:?}");
    assert!(stderr.is_empty() || stderr.ends_with('\n'), "an unfinished line: {stderr:?}");
}

#[test]
fn bench_embed_reads_a_sentence_file_and_reports_json() {
    let bank = Bank::new();
    let file = bank.path("sentences.txt");
    write(&file, b"I adopted a grey cat named Miso\r\nWe went hiking on Mount Tam\nMy sister is getting married\nnot read: past --n\n");
    let (report, stderr) = json_and_stderr(
        &bank,
        &["bench", "embed", "--sentences", file.to_str().unwrap(), "--n", "3", "--runs", "2", "--thread-counts", "1,2"],
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(report["benchmark"], "embed");
    assert_eq!(report["model"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(report["source"], file.to_str().unwrap());
    // The kernel paths that ran: the ones the embedding crate chooses on this CPU (a list
    // of names here went stale when a path was added).
    let paths = membank_embed::kernel_paths();
    assert_eq!(report["kernels"], serde_json::json!({ "int8": paths.int8, "f32": paths.f32 }), "{report}");
    assert_eq!(
        (report["sentences"].as_u64(), report["words"].as_u64(), report["runs"].as_u64()),
        (Some(3), Some(18), Some(2))
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.iter().map(|r| r["threads"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    for row in results {
        assert!(
            number(&row["sentences_per_second"], "sentences_per_second") > 0.0
                && number(&row["seconds"], "seconds") > 0.0,
            "{row}"
        );
        assert!(row["sentences_per_cpu_second"].is_number() || row["sentences_per_cpu_second"].is_null(), "{row}");
        assert_eq!(row["run_rates"].as_array().unwrap().len(), 2, "{row}");
        assert_eq!(row.as_object().unwrap().len(), 5, "{row}");
    }
    // The text table names the source and has a row per thread count.
    let text = bank.ok(&[
        "bench",
        "embed",
        "--sentences",
        file.to_str().unwrap(),
        "--n",
        "3",
        "--runs",
        "1",
        "--thread-counts",
        "1",
    ]);
    assert!(text.starts_with(&format!("embedding 3 sentences from {}", file.display())), "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("embedding kernels: int8 "), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
}

/// `MEMBANK_EMBED_KERNEL` forces the encoder's int8 path (to measure here how a CPU without
/// AMX or VNNI fares); a name it does not know is said on stderr and ignored.
#[test]
fn bench_embed_runs_the_int8_path_the_environment_names() {
    let bank = Bank::new();
    let file = bank.path("sentences.txt");
    write(&file, b"I adopted a grey cat named Miso\nWe went hiking on Mount Tam\n");
    let run = |value: &str| {
        let args = [
            "--json",
            "bench",
            "embed",
            "--sentences",
            file.to_str().unwrap(),
            "--n",
            "2",
            "--runs",
            "1",
            "--thread-counts",
            "1",
        ];
        let out = bank.command().env("MEMBANK_EMBED_KERNEL", value).args(args).output().unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "MEMBANK_EMBED_KERNEL={value:?}: {stderr}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        (report["kernels"]["int8"].as_str().unwrap().to_string(), stderr)
    };
    // Every CPU has the portable path.
    let (path, stderr) = run("portable");
    assert_eq!(path, "portable");
    assert!(stderr.is_empty(), "{stderr}");
    let best = membank_embed::kernel_paths().int8;
    let long = "x".repeat(10_000);
    for wanted in ["amx", "", "avx512-vnni; rm -rf /", "PORTABLE", long.as_str()] {
        let (path, stderr) = run(wanted);
        assert_eq!(path, best, "{wanted:?}");
        assert!(stderr.contains("MEMBANK_EMBED_KERNEL") && stderr.contains("is not an int8 path"), "{stderr}");
    }
}

#[test]
fn bench_embed_refuses_bad_sentence_files_and_counts() {
    let bank = Bank::new();
    let path = |name: &str, bytes: &[u8]| {
        let p = bank.path(name);
        write(&p, bytes);
        p.to_str().unwrap().to_string()
    };
    let two = path("two.txt", b"one sentence\nanother sentence\n");
    let files = [
        (bank.path("missing.txt").to_str().unwrap().to_string(), "cannot read it"),
        (bank.dir.path().to_str().unwrap().to_string(), "cannot read it"),
        (path("empty.txt", b""), "holds no sentences"),
        (path("blank.txt", b"fine\n   \nfine again\n"), "line 2 is blank"),
        (path("latin1.txt", b"caf\xe9 au lait\n"), "line 1 is not valid UTF-8"),
        (two.clone(), "only 2 sentences; ask for --n 2 or fewer"),
    ];
    for (file, expect) in files {
        let stderr = bank.fails(&["bench", "embed", "--sentences", &file, "--n", "3", "--runs", "1"], 3);
        assert!(stderr.contains("invalid sentences") && stderr.contains(expect), "{file:?}: {stderr}");
    }
    let usage: &[&[&str]] = &[
        &["--n", "0"],
        &["--n", "-1"],
        &["--n", "2x"],
        &["--n", "99999999999999999999"],
        &["--runs", "0"],
        &["--thread-counts", "0"],
        &["--thread-counts", "1,,2"],
        &["--thread-counts", ""],
        &["--thread-counts", "257"],
        &["--thread-counts", "1;2"],
        &["--data", "somewhere"],
        &["--sentences", ""],
    ];
    for extra in usage {
        let mut args = vec!["bench", "embed", "--sentences", &two, "--runs", "1"];
        args.extend_from_slice(extra);
        let stderr = bank.fails(&args, 2);
        assert!(stderr.contains("error:"), "{extra:?}: {stderr}");
    }
    // From the data folder: asking for more sentences than it holds is refused, naming it.
    let data = tiny_data(&bank);
    let stderr = bank.fails(&["bench", "embed", "--data", data.to_str().unwrap(), "--n", "1000", "--runs", "1"], 3);
    assert!(stderr.contains("only 9 distinct sentences") && stderr.contains("--n 9 or fewer"), "{stderr}");
}

#[test]
fn bench_recall_reports_json_and_reuses_its_databases() {
    let bank = Bank::new();
    let data = tiny_data(&bank);
    let dir = bank.path("bench");
    let args = [
        "bench",
        "recall",
        "--sizes",
        "4,20",
        "--queries",
        "2",
        "--dir",
        dir.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ];
    let (report, stderr) = json_and_stderr(&bank, &args);
    assert_eq!(report["benchmark"], "recall");
    assert_eq!(
        (report["k"].as_u64(), report["queries"].as_u64()),
        (Some(10), Some(2)),
        "one query per 7 sentences: {report}"
    );
    assert!(report["model"].is_string());
    let results = report["results"].as_array().unwrap();
    assert_eq!(
        results.iter().map(|r| (r["memories"].as_u64().unwrap(), r["built"].as_u64().unwrap())).collect::<Vec<_>>(),
        [(4, 4), (20, 20)]
    );
    for row in results {
        for series in ["total", "no_embed", "dense", "dense_exact", "bm25", "embed"] {
            latency(&row[series], series);
        }
        // Below 20k memories the default scan is the exact one.
        assert_eq!(row["dense_recall"].as_f64(), Some(1.0), "{row}");
        assert_eq!(row.as_object().unwrap().len(), 10, "{row}");
        // The user's entries in both search caches, warm: at least its f32 vectors.
        let dim = 384;
        assert!(
            row["cache_bytes"]["vectors"].as_u64().unwrap() >= row["memories"].as_u64().unwrap() * dim * 4,
            "{row}"
        );
        assert!(row["cache_bytes"]["terms"].as_u64().unwrap() > 0, "{row}");
    }
    // Building 20 memories reports its end on a line of its own.
    assert!(
        stderr.contains("embedding: 9/9 in ")
            && stderr.contains("inserting: 20/20 in ")
            && stderr.contains("built 20 memories in "),
        "{stderr}"
    );

    let (again, stderr) = json_and_stderr(&bank, &args);
    assert_eq!(
        again["results"].as_array().unwrap().iter().map(|r| r["built"].as_u64().unwrap()).collect::<Vec<_>>(),
        [0, 0]
    );
    assert!(stderr.is_empty(), "nothing to build: {stderr}");

    for bad in [["--sizes", "0"], ["--sizes", "10,x"], ["--queries", "0"]] {
        bank.fails(&[&args[..], &bad[..]].concat(), 2);
    }
}

#[test]
fn bench_http_reports_json_per_concurrency_and_mode() {
    let bank = Bank::new();
    let data = tiny_data(&bank);
    let dir = bank.path("bench");
    let args = [
        "bench",
        "http",
        "--memories",
        "8",
        "--clients",
        "1,2",
        "--requests",
        "2",
        "--k",
        "3",
        "--dir",
        dir.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ];
    let (report, _) = json_and_stderr(&bank, &[&args[..], &["--strengthen"]].concat());
    assert_eq!(report["benchmark"], "http");
    assert_eq!((report["memories"].as_u64(), report["k"].as_u64()), (Some(8), Some(3)));
    assert!(report["model"].is_string() && report["model_threads"].is_u64(), "{report}");
    let results = report["results"].as_array().unwrap();
    // At least 10 requests per client, on each query path: the default (int8, batched)
    // and the f32 reference, side by side.
    let rows: Vec<(u64, bool, &str, u64)> = results
        .iter()
        .map(|r| {
            (
                r["clients"].as_u64().unwrap(),
                r["strengthen"].as_bool().unwrap(),
                r["query_path"].as_str().unwrap(),
                r["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (1, false, "int8-batched", 10),
            (1, false, "f32", 10),
            (1, true, "int8-batched", 10),
            (1, true, "f32", 10),
            (2, false, "int8-batched", 20),
            (2, false, "f32", 20),
            (2, true, "int8-batched", 20),
            (2, true, "f32", 20)
        ]
    );
    let ratios = report["path_ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 4, "{report}");
    for ratio in ratios {
        assert!(number(&ratio["p50"], "p50") > 0.0 && number(&ratio["p95"], "p95") > 0.0, "{ratio}");
    }
    assert!(report.get("ratios").is_none(), "backend ratios only with PostgreSQL: {report}");
    assert_eq!(
        (report["query_batch"].as_u64(), report["query_batch_wait_us"].as_u64()),
        (Some(32), Some(0)),
        "{report}"
    );
    for row in results {
        latency(&row["latency"], "latency");
        assert!(number(&row["recalls_per_second"], "recalls_per_second") > 0.0);
    }
    for bad in [
        ["--clients", "0"],
        ["--clients", "257"],
        ["--clients", "1,-2"],
        ["--requests", "0"],
        ["--k", "0"],
        ["--k", "100000"],
        ["--memories", "0"],
        ["--query-batch", "0"],
        ["--query-batch", "257"],
        ["--query-batch-wait-us", "100001"],
        ["--query-batch-wait-us", "-1"],
    ] {
        bank.fails(&[&args[..], &bad[..]].concat(), 2);
    }
    // Without the batcher, as `serve --query-batch 1`, and a wait, as the flags say.
    let (alone, _) = json_and_stderr(&bank, &[&args[..], &["--query-batch", "1"]].concat());
    assert_eq!(alone["query_batch"], 1, "{alone}");
    assert_eq!(alone["results"][0]["query_path"], "int8-unbatched", "{alone}");
    let (waiting, _) = json_and_stderr(&bank, &[&args[..], &["--query-batch-wait-us", "500"]].concat());
    assert_eq!(waiting["query_batch_wait_us"], 500, "{waiting}");
    assert_eq!(waiting["results"][0]["query_path"], "int8-batched", "{waiting}");
}

#[test]
fn bench_sweep_reports_json_for_the_dry_and_the_real_sweep() {
    let bank = Bank::new();
    let dir = bank.path("bench");
    let args = ["bench", "sweep", "--users", "3", "--per-user", "40", "--dir", dir.to_str().unwrap()];
    let (report, stderr) = json_and_stderr(&bank, &args);
    assert_eq!(report["benchmark"], "sweep");
    assert_eq!(
        (report["users"].as_u64(), report["per_user"].as_u64(), report["built"].as_bool()),
        (Some(3), Some(40), Some(true))
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.iter().map(|r| r["dry_run"].as_bool().unwrap()).collect::<Vec<_>>(), [true, false]);
    for row in results {
        assert_eq!(row["examined"].as_u64(), Some(120), "{row}");
        for field in ["seconds", "memories_per_second", "ms_per_user"] {
            number(&row[field], field);
        }
    }
    // The dry run and the real sweep decide alike; day 40 archives some and keeps others.
    let archived = results[0]["archived"].as_u64().unwrap();
    assert!(archived > 0 && archived < 120 && results[1]["archived"].as_u64() == Some(archived), "{report}");
    assert!(stderr.contains("building users: 3/3 in ") && stderr.contains("built 120 memories"), "{stderr}");

    let (again, _) = json_and_stderr(&bank, &args);
    assert_eq!(again["built"], false);
    assert_eq!(again["results"][1]["archived"].as_u64(), Some(archived), "each run sweeps a fresh copy");
    bank.fails(&["bench", "sweep", "--users", "0", "--dir", dir.to_str().unwrap()], 2);
    bank.fails(&["bench", "sweep", "--per-user", "many", "--dir", dir.to_str().unwrap()], 2);
}

#[test]
fn bench_cache_reports_json_per_pass_with_the_caches_and_resident_memory() {
    let bank = Bank::new();
    let data = tiny_data(&bank);
    let dir = bank.path("bench");
    let args = [
        "--cache-mb",
        "1",
        "bench",
        "cache",
        "--users",
        "3",
        "--per-user",
        "20",
        "--passes",
        "2",
        "--clients",
        "2",
        "--dir",
        dir.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ];
    let (report, stderr) = json_and_stderr(&bank, &args);
    assert_eq!(report["benchmark"], "cache");
    assert_eq!(
        (
            report["users"].as_u64(),
            report["per_user"].as_u64(),
            report["built"].as_bool(),
            report["budget_bytes"].as_u64()
        ),
        (Some(3), Some(20), Some(true), Some(1 << 20))
    );
    assert!(report["per_user_bytes"]["vectors"].as_u64().unwrap() >= 20 * 384 * 4, "{report}");
    assert!(report["per_user_bytes"]["terms"].as_u64().unwrap() > 0, "{report}");
    assert!(stderr.contains("built 3 users x 20 memories"), "{stderr}");
    let rss_fields = |rss: &Value| {
        for field in ["vm_rss_mb", "rss_anon_mb", "rss_file_mb", "vm_hwm_mb"] {
            assert!(number(&rss[field], field) > 0.0, "{rss}");
        }
    };
    rss_fields(&report["baseline"]);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    // All three users fit in 1 MiB: the first pass loads each into both caches, the
    // second is served from them.
    for (row, (hits, misses)) in results.iter().zip([(0, 6), (6, 6)]) {
        let cache = &row["cache"];
        assert_eq!(
            (cache["hits"].as_u64(), cache["misses"].as_u64(), cache["evictions"].as_u64()),
            (Some(hits), Some(misses), Some(0)),
            "{row}"
        );
        assert_eq!(
            (cache["vectors_users"].as_u64(), cache["terms_users"].as_u64(), row["searches"].as_u64()),
            (Some(3), Some(3), Some(6)),
            "{row}"
        );
        assert!(cache["bytes"].as_u64().unwrap() <= 1 << 20, "{row}");
        number(&row["seconds"], "seconds");
        rss_fields(&row["rss"]);
    }
    let (again, _) = json_and_stderr(&bank, &args);
    assert_eq!(again["built"], false);
    for bad in [["--users", "0"], ["--clients", "0"], ["--passes", "x"]] {
        bank.fails(&[&args[..], &bad[..]].concat(), 2);
    }
    bank.fails(&[&["--cache-mb", "0"], &args[2..]].concat(), 2);
}

/// The arguments of a tiny `bench scale` in `bank`: 3 users × 20 memories, 1 and 2
/// clients, 2 turns of ingestion per level.
pub(crate) fn tiny_scale_args(bank: &Bank) -> Vec<String> {
    let data = tiny_data(bank);
    let dir = bank.path("bench");
    [
        "bench",
        "scale",
        "--users",
        "3",
        "--per-user",
        "20",
        "--clients",
        "1,2",
        "--requests",
        "2",
        "--k",
        "3",
        "--ingest",
        "2",
        "--dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.to_str().unwrap().to_string(), "--data".into(), data.to_str().unwrap().to_string()])
    .collect()
}

/// Checks a `bench scale` report of [`tiny_scale_args`] over `backends` (SQLite first):
/// every backend's row at every level, in the order of the turns, with the counts the
/// arguments ask for.
pub(crate) fn check_scale_report(report: &Value, backends: &[&str]) {
    assert_eq!(report["benchmark"], "scale");
    assert_eq!(
        (report["users"].as_u64(), report["per_user"].as_u64(), report["k"].as_u64()),
        (Some(3), Some(20), Some(3))
    );
    let names = |rows: &Value| -> Vec<String> {
        rows.as_array().unwrap().iter().map(|r| r["backend"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&report["backends"]), backends, "{report}");
    assert_eq!(names(&report["datasets"]), backends, "{report}");
    assert_eq!(names(&report["cache"]), backends, "{report}");
    // Every user recalled once on each backend, then at least 10 requests per client.
    let rows = |key: &str, count: &str| -> Vec<(String, u64, u64)> {
        report[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (r["backend"].as_str().unwrap().to_string(), r["clients"].as_u64().unwrap(), r[count].as_u64().unwrap())
            })
            .collect()
    };
    let expect = |levels: &[(u64, u64)]| -> Vec<(String, u64, u64)> {
        levels.iter().flat_map(|&(c, n)| backends.iter().map(move |b| (b.to_string(), c, n))).collect()
    };
    assert_eq!(rows("first_touch", "requests"), expect(&[(3, 3)]), "{report}");
    assert_eq!(rows("results", "requests"), expect(&[(1, 10), (2, 20)]), "{report}");
    assert_eq!(rows("ingest", "turns"), expect(&[(1, 2), (2, 2)]), "{report}");
    for row in report["first_touch"].as_array().unwrap().iter().chain(report["results"].as_array().unwrap()) {
        latency(&row["latency"], "latency");
        assert!(number(&row["recalls_per_second"], "recalls_per_second") > 0.0, "{row}");
    }
    for row in report["ingest"].as_array().unwrap() {
        latency(&row["latency"], "latency");
        assert!(number(&row["turns_per_second"], "turns_per_second") > 0.0, "{row}");
    }
    // 3 first touches and 30 recalls on each backend, each one dense and one BM25 search;
    // the first search of each user in each cache loads it.
    for cache in report["cache"].as_array().unwrap() {
        let (hits, misses) = (cache["hits"].as_u64().unwrap(), cache["misses"].as_u64().unwrap());
        assert_eq!(misses, 6, "{cache}");
        assert_eq!(hits + misses, 66, "{cache}");
    }
}

#[test]
fn bench_scale_reports_json_on_sqlite_and_refuses_bad_servers() {
    let bank = Bank::new();
    let args = tiny_scale_args(&bank);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (report, stderr) = json_and_stderr(&bank, &args);
    check_scale_report(&report, &["sqlite"]);
    assert!(stderr.contains("built 3 users x 20 memories"), "{stderr}");
    assert_eq!(report["datasets"][0]["added"], 60, "{report}");
    assert_eq!(report["backends"][0]["workers"], Value::Null, "{report}");
    // The dataset is kept: a second run builds nothing.
    let (again, _) = json_and_stderr(&bank, &args);
    assert_eq!(again["datasets"][0]["added"], 0, "{again}");
    for bad in [
        ["--users", "0"],
        ["--per-user", "-1"],
        ["--clients", "0"],
        ["--clients", "257"],
        ["--requests", "0"],
        ["--k", "0"],
        ["--ingest", "100001"],
        ["--ingest", "many"],
    ] {
        bank.fails(&[&args[..], &bad[..]].concat(), 2);
    }
    // Not a PostgreSQL URL, empty, hostile, or a server that is not there: refused before
    // anything is built, naming the flag (the dataset of the runs above stays as it was).
    for flag in ["--postgres", "--citus"] {
        for (url, code) in [
            ("mysql://127.0.0.1/x", 3),
            ("", 3),
            ("/etc/passwd", 3),
            // A host name no resolver knows: unavailable.
            ("postgres://x'; DROP DATABASE membank; --", 10),
            // Nothing listens on port 1: unavailable, the documented exit code 10.
            ("postgres://membank@127.0.0.1:1/membank?connect_timeout=2", 10),
        ] {
            let stderr = bank.fails(&[&args[..], &[flag, url]].concat(), code);
            assert!(stderr.contains(&flag[2..]), "{flag} {url}: {stderr}");
            if code == 10 {
                assert!(stderr.contains("nothing was measured"), "{stderr}");
            }
        }
    }
    let (last, _) = json_and_stderr(&bank, &args);
    assert_eq!(last["datasets"][0]["added"], 0, "{last}");
}

/// `bench/embed/compare.sh` with the binary under test, the model, and `home` as HOME.
fn compare_sh(home: &Path) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/embed/compare.sh"))
        .env("MEMBANK_BIN", env!("CARGO_BIN_EXE_membank"))
        .env("MODEL_DIR", model_dir())
        // The Rust side must need neither PyTorch nor cargo.
        .env("PYTHON", "/nonexistent/python")
        .env("CARGO", "/nonexistent/cargo")
        .env("HOME", home)
        .env_remove("MEMBANK_CONFIG")
        .env_remove("COMPARE_STOP_BEFORE_PYTORCH");
    command
}

/// The comparison script cited by the README, run with the binary under test up to the
/// point where it would need PyTorch.
#[test]
fn compare_sh_runs_the_rust_side_with_the_built_binary() {
    let bank = Bank::new();
    let file = bank.path("sentences.txt");
    write(
        &file,
        b"I adopted a grey cat named Miso\nWe went hiking on Mount Tam\nMy sister is getting married in June\n",
    );
    let out = compare_sh(bank.dir.path())
        .args([
            "--rust-only",
            "--n",
            "3",
            "--runs",
            "1",
            "--thread-counts",
            "1,2",
            "--sentences",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "compare.sh failed: {stdout}\n{stderr}");
    assert!(
        stdout.contains("3 sentences (20 words), median of 1 runs, Rust only (stopped before PyTorch)"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with("threads")).skip(1).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for (row, threads) in rows.iter().zip(["1", "2"]) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[0], threads, "{row}");
        assert!(fields[1].parse::<f64>().is_ok_and(|r| r > 0.0), "{row}");
    }
    // The environment variable stops it as well.
    let out = compare_sh(bank.dir.path())
        .env("COMPARE_STOP_BEFORE_PYTORCH", "1")
        .args(["--n", "2", "--runs", "1", "--thread-counts", "1", "--sentences", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Rust only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn compare_sh_refuses_bad_arguments_with_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--n", "0"], "--n takes a number"),
        (&["--n", "1e3"], "--n takes a number"),
        (&["--n", "$(false)"], "--n takes a number"),
        (&["--runs", ""], "--runs takes a number"),
        (&["--thread-counts", "1,"], "--thread-counts takes numbers"),
        (&["--sentences", "/nonexistent/sentences.txt"], "is not a file"),
        (&["--n"], "--n needs a value"),
        (&["--fast"], "unknown argument --fast"),
    ];
    let bank = Bank::new();
    for (args, expect) in cases {
        let out = compare_sh(bank.dir.path()).arg("--rust-only").args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

const BANK: &str = r#"{"Ann": {"name": "Ann", "history": {
  "2023-04-27": [{"query": "I adopted a grey cat named Miso", "response": "Lovely!"}, {"query": "I went hiking on Mount Tam", "response": "Fun."}],
  "2023-04-28": [{"query": "My sister is getting married in June", "response": "Congratulations!"}]}}}"#;

/// As on the English dev set (56 asked, 55 scored): a question whose gold lists no
/// evidence is asked, not scored, and counted with its reason in text and JSON.
#[test]
fn eval_memorybank_counts_the_questions_it_did_not_score() {
    let bank = Bank::new();
    write(&bank.path("memory_bank_en.json"), BANK.as_bytes());
    write(
        &bank.path("probing_questions_en.jsonl"),
        "{\"Ann\": [\"What is my cat called?\", \"Where did I hike?\", \"What dish did I cook on May 5th?\"]}\n"
            .as_bytes(),
    );
    let gold = bank.path("gold.jsonl");
    write(
        &gold,
        concat!(
            "{\"user\": \"Ann\", \"qid\": \"en-Ann-0\", \"evidence\": [{\"date\": \"2023-04-27\", \"turn\": 0}], \"kind\": \"fact\"}\n",
            "{\"user\": \"Ann\", \"qid\": \"en-Ann-1\", \"evidence\": [{\"date\": \"2023-04-27\", \"turn\": 1}], \"kind\": \"fact\"}\n",
            "{\"user\": \"Ann\", \"qid\": \"en-Ann-2\", \"evidence\": [], \"kind\": \"unanswerable\"}\n",
        )
        .as_bytes(),
    );
    let eval_db = bank.path("eval.db");
    let data = bank.dir.path().to_str().unwrap();
    let args = [
        "eval",
        "memorybank",
        "--data",
        data,
        "--gold",
        gold.to_str().unwrap(),
        "--k",
        "1,3",
        "--eval-db",
        eval_db.to_str().unwrap(),
    ];
    let (report, stderr) = json_and_stderr(&bank, &args);
    assert_eq!(
        (report["asked"].as_u64(), report["n"].as_u64(), report["skipped"].as_u64()),
        (Some(3), Some(2), Some(1)),
        "{report}"
    );
    assert_eq!(report["skipped_by_reason"], serde_json::json!({"no_evidence": 1}));
    let skipped: Vec<&Value> =
        report["questions"].as_array().unwrap().iter().filter(|q| q["scored"] == false).collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        (&skipped[0]["qid"], &skipped[0]["skip_reason"]),
        (&Value::from("en-Ann-2"), &Value::from("no_evidence"))
    );
    assert!(report["questions"][0].get("skip_reason").is_none(), "a scored question has no skip reason");
    // Progress on a pipe: one whole line per step.
    assert!(stderr.contains("importing: ") && stderr.contains("asking: 3/3 in "), "{stderr}");

    let text = bank.ok(&args);
    assert!(text.contains("MemoryBank (en), gold ") && text.contains(": 2 of 3 questions scored"), "{text}");
    assert!(
        text.contains("skipped 1: the gold line lists no evidence (not answerable from the history): en-Ann-2"),
        "{text}"
    );

    // Without gold, every question is asked and none scored, for that reason.
    let no_gold = bank.json(&["eval", "memorybank", "--data", data, "--eval-db", eval_db.to_str().unwrap()]);
    assert_eq!(
        (no_gold["asked"].as_u64(), no_gold["n"].as_u64(), no_gold["skipped"].as_u64()),
        (Some(3), Some(0), Some(3)),
        "{no_gold}"
    );
    assert_eq!(no_gold["skipped_by_reason"], serde_json::json!({"no_gold": 3}));
}

#[test]
fn bench_maintain_reports_each_shape_and_refuses_bad_values() {
    let bank = Bank::new();
    let (data, dir) = (tiny_data(&bank), bank.path("bench"));
    let (data, dir) = (data.to_str().unwrap(), dir.to_str().unwrap());
    let sizes = ["--long", "30", "--long-bytes", "400", "--similar", "25", "--short", "60"];
    let args: Vec<&str> = ["bench", "maintain", "--dir", dir, "--data", data].into_iter().chain(sizes).collect();
    let (report, _) = json_and_stderr(&bank, &args);
    assert_eq!(report["benchmark"], "maintain");
    let results = report["results"].as_array().unwrap();
    let rows: Vec<(&str, u64, bool)> = results
        .iter()
        .map(|r| (r["shape"].as_str().unwrap(), r["memories"].as_u64().unwrap(), r["dry_run"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("long", 30, true),
            ("long", 30, false),
            ("similar", 25, true),
            ("similar", 25, false),
            ("short", 60, true),
            ("short", 60, false)
        ]
    );
    for row in results {
        number(&row["seconds"], "seconds");
        number(&row["peak_anon_mb"], "peak_anon_mb");
        assert!(row["skipped"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("no LLM")), "{row}");
    }
    // The near-identical turns merge into one, dry run or not.
    assert_eq!((results[2]["merged"].as_u64(), results[3]["merged"].as_u64()), (Some(24), Some(24)), "{report}");
    // --only runs one shape, on the database built before.
    let only: Vec<&str> = args.iter().copied().chain(["--only", "similar"]).collect();
    let (again, _) = json_and_stderr(&bank, &only);
    assert!(again["results"].as_array().unwrap().iter().all(|r| r["shape"] == "similar"), "{again}");
    for bad in [["--only", "all"], ["--long", "0"], ["--similar", "-3"], ["--long-bytes", "lots"]] {
        let args: Vec<&str> = ["bench", "maintain", "--dir", dir, "--data", data].into_iter().chain(bad).collect();
        bank.fails(&args, 2);
    }
}

#[test]
fn bench_erase_reports_latencies_and_refuses_bad_values() {
    let bank = Bank::new();
    let (data, dir) = (tiny_data(&bank), bank.path("bench"));
    let (data, dir) = (data.to_str().unwrap(), dir.to_str().unwrap());
    let args = ["bench", "erase", "--sizes", "200", "--users", "4", "--erases", "3", "--dir", dir, "--data", data];
    let (report, _) = json_and_stderr(&bank, &args);
    assert_eq!(report["benchmark"], "erase");
    let row = &report["results"][0];
    assert_eq!((row["memories"].as_u64(), row["erases"].as_u64()), (Some(200), Some(3)), "{report}");
    for field in ["file_bytes", "index_bytes", "erase_max_ms", "full_index_merge_ms"] {
        number(&row[field], field);
    }
    latency(&row["erase"], "erase");
    for bad in [["--sizes", "0"], ["--sizes", "ten"], ["--users", "0"], ["--erases", "-1"]] {
        let args: Vec<&str> = ["bench", "erase", "--dir", dir, "--data", data].into_iter().chain(bad).collect();
        bank.fails(&args, 2);
    }
}
