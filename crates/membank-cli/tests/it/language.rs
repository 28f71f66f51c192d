//! Any language by default: with no model named, a new store gets the model the writing of
//! its first memories needs (multilingual-e5-small for Chinese and other scripts than
//! Latin, all-MiniLM-L6-v2 otherwise), an existing store keeps its own, a named model always
//! wins, and a store of the English-only model that is given other scripts says so once
//! and in `membank check`, with commands that work (these tests run them).
//!
//! These commands run without `MEMBANK_MODEL_DIR` (naming a directory turns the choice
//! off), with the data directory that holds the real models, so the models are found in
//! their default directories as a user's would be. They need multilingual-e5-small and
//! skip, saying so, when it is absent (unless `MEMBANK_REQUIRE_E5=1`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use membank_embed::KnownModel;

use crate::Bank;

const MINILM_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The data directory whose `membank/models/<name>` hold the real models, or `None` (after
/// saying why) when multilingual-e5-small is not there.
fn data_dir() -> Option<PathBuf> {
    let e5 = membank_embed::fetch::default_dir_for(KnownModel::MultilingualE5Small);
    let minilm = membank_embed::fetch::default_dir_for(KnownModel::AllMiniLmL6V2);
    assert!(
        minilm.join("model.safetensors").exists(),
        "all-MiniLM-L6-v2 is missing in {}: run `membank models fetch`",
        minilm.display()
    );
    if !e5.join("model.safetensors").exists() {
        let message = format!(
            "multilingual-e5-small is not in {}; run `membank models fetch --model multilingual-e5-small`",
            e5.display()
        );
        assert!(std::env::var_os("MEMBANK_REQUIRE_E5").is_none(), "{message}");
        eprintln!("SKIPPED: {message}");
        return None;
    }
    Some(e5.ancestors().nth(3).expect("<data>/membank/models/<name>").to_path_buf())
}

/// The binary on `bank` with no model named: the automatic choice.
fn auto(bank: &Bank, data: &Path) -> Command {
    let mut command = bank.command();
    command.env_remove("MEMBANK_MODEL_DIR").env_remove("MEMBANK_LOCAL_MODEL").env("XDG_DATA_HOME", data);
    command
}

fn run(mut command: Command, args: &[&str]) -> Output {
    command.args(args).output().unwrap()
}

fn ok(command: Command, args: &[&str]) -> (String, String) {
    let out = run(command, args);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "membank {args:?} failed with {:?}:\n{stderr}", out.status.code());
    (stdout, stderr)
}

fn json(command: Command, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(command, &all).0).unwrap()
}

/// The store's model as `check --json` reports it.
fn store_model(bank: &Bank, data: &Path) -> String {
    json(auto(bank, data), &["check"])["embedding_model"].as_str().unwrap_or("none").to_string()
}

const CHINESE: [(&str, &str); 3] = [
    ("我昨天去了绿禾公园，看到了一朵很美的樱花。", "真好，樱花季很短。"),
    ("我最近在学做清蒸鲈鱼。", "听起来很健康。"),
    ("我的猫叫小白，它很喜欢晒太阳。", "小白真可爱。"),
];

#[test]
fn a_new_store_given_chinese_becomes_an_e5_store_and_recalls_it_sqlite() {
    a_new_store_given_chinese_becomes_an_e5_store_and_recalls_it(&Bank::new());
}

#[test]
fn a_new_store_given_chinese_becomes_an_e5_store_and_recalls_it_postgres() {
    if let Some(bank) = Bank::postgres("language_new_chinese") {
        a_new_store_given_chinese_becomes_an_e5_store_and_recalls_it(&bank);
    }
}

fn a_new_store_given_chinese_becomes_an_e5_store_and_recalls_it(bank: &Bank) {
    let Some(data) = data_dir() else { return };
    // A first command that only reads decides nothing: an English recall of an empty store
    // (on SQLite there is no store yet, and a recall does not create one).
    let recall = ["--json", "recall", "--user", "li", "--query", "what flowers did I see?"];
    if bank.pg.is_some() {
        let empty = json(auto(bank, &data), &recall[1..]);
        assert_eq!(empty["results"].as_array().unwrap().len(), 0);
        assert_eq!(store_model(bank, &data), "none");
    } else {
        assert_eq!(run(auto(bank, &data), &recall).status.code(), Some(4));
        assert!(!bank.db().exists());
    }
    for (user, assistant) in CHINESE {
        let (_, stderr) =
            ok(auto(bank, &data), &["remember", "--user", "li", "--user-text", user, "--assistant-text", assistant]);
        assert!(!stderr.contains("reads English only"), "no warning for an e5 store: {stderr}");
    }
    assert!(store_model(bank, &data).starts_with("intfloat/multilingual-e5-small"), "{}", store_model(bank, &data));
    let out = json(
        auto(bank, &data),
        &["recall", "--user", "li", "--k", "1", "--no-strengthen", "--query", "我在公园看到了什么花？"],
    );
    assert!(out["results"][0]["content"].as_str().unwrap().contains("樱花"), "{out}");
    assert!(out["results"][0]["dense_score"].as_f64().unwrap() > 0.5, "the dense half reads Chinese: {out}");
    // The store's model wins over the writing of what comes next: English stays e5.
    ok(auto(bank, &data), &["note", "--user", "li", "--text", "Li is learning the cello"]);
    let out = json(
        auto(bank, &data),
        &["recall", "--user", "li", "--k", "1", "--no-strengthen", "--query", "is Li learning the cello?"],
    );
    assert!(out["results"][0]["content"].as_str().unwrap().contains("cello"), "{out}");
    assert!(store_model(bank, &data).starts_with("intfloat/multilingual-e5-small"));
    let report = json(auto(bank, &data), &["check"]);
    assert_eq!(
        (report["active_memories"].as_u64(), report["other_script_memories"].as_u64()),
        (Some(4), Some(3)),
        "{report}"
    );
    assert!(report["switch_model"].is_null(), "no advice for an e5 store: {report}");
}

#[test]
fn a_new_store_given_english_stays_with_minilm() {
    let Some(data) = data_dir() else { return };
    let bank = Bank::new();
    ok(
        auto(&bank, &data),
        &[
            "remember",
            "--user",
            "alice",
            "--user-text",
            "I adopted a grey cat named Miso",
            "--assistant-text",
            "Miso is a lovely name!",
        ],
    );
    assert_eq!(store_model(&bank, &data), MINILM_ID);
    let out = json(auto(&bank, &data), &["recall", "--user", "alice", "--query", "what is my cat called?"]);
    assert!(out["results"][0]["content"].as_str().unwrap().contains("Miso"));
}

#[test]
fn text_without_letters_mixed_scripts_and_empty_text() {
    let Some(data) = data_dir() else { return };
    // Empty and blank text is refused before any model is chosen; nothing is recorded.
    let bank = Bank::new();
    for text in ["", "   \n "] {
        let out = run(auto(&bank, &data), &["remember", "--user", "u", "--user-text", text]);
        assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(store_model(&bank, &data), "none");
    // Only emoji and punctuation: nothing to read, so the default model.
    ok(auto(&bank, &data), &["remember", "--user", "u", "--user-text", "😀🎉👍 !!! ... 12345"]);
    assert_eq!(store_model(&bank, &data), MINILM_ID);
    // Mixed: the majority of words (a Han character counts as one) decides.
    let mostly_chinese = Bank::new();
    ok(
        auto(&mostly_chinese, &data),
        &[
            "remember",
            "--user",
            "u",
            "--user-text",
            "我今天用Python写了一个web server，很开心 https://example.com/some/long/path",
        ],
    );
    assert!(store_model(&mostly_chinese, &data).starts_with("intfloat/multilingual-e5-small"));
    let mostly_english = Bank::new();
    ok(
        auto(&mostly_english, &data),
        &["remember", "--user", "u", "--user-text", "I had 寿司 for lunch with my friends today"],
    );
    assert_eq!(store_model(&mostly_english, &data), MINILM_ID);
    // Cyrillic is not Latin: e5.
    let russian = Bank::new();
    ok(auto(&russian, &data), &["note", "--user", "u", "--text", "Я люблю своего кота Мурзика"]);
    assert!(store_model(&russian, &data).starts_with("intfloat/multilingual-e5-small"));
}

#[test]
fn a_named_model_always_wins() {
    let Some(data) = data_dir() else { return };
    let bank = Bank::new();
    let mut named = auto(&bank, &data);
    named.args(["--local-model", "all-MiniLM-L6-v2"]);
    ok(named, &["remember", "--user", "li", "--user-text", CHINESE[0].0]);
    assert_eq!(store_model(&bank, &data), MINILM_ID);
    let english = Bank::new();
    let mut named = auto(&english, &data);
    named.env("MEMBANK_LOCAL_MODEL", "multilingual-e5-small");
    ok(named, &["remember", "--user", "alice", "--user-text", "I adopted a grey cat"]);
    assert!(store_model(&english, &data).starts_with("intfloat/multilingual-e5-small"));
}

#[test]
fn a_missing_chosen_model_names_the_command_that_fetches_it() {
    let Some(_) = data_dir() else { return };
    let bank = Bank::new();
    let empty = bank.path("no-models");
    let out = run(auto(&bank, &empty), &["remember", "--user", "li", "--user-text", CHINESE[0].0]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("membank models fetch --model multilingual-e5-small"), "{stderr}");
    let out = run(auto(&bank, &empty), &["remember", "--user", "al", "--user-text", "hello there"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("membank models fetch --model all-MiniLM-L6-v2"), "{stderr}");
}

#[test]
fn an_english_store_given_chinese_warns_once_and_check_gives_commands_that_work_sqlite() {
    an_english_store_given_chinese_warns_once_and_check_gives_commands_that_work(&Bank::new());
}

#[test]
fn an_english_store_given_chinese_warns_once_and_check_gives_commands_that_work_postgres() {
    if let Some(bank) = Bank::postgres("language_english_store") {
        an_english_store_given_chinese_warns_once_and_check_gives_commands_that_work(&bank);
    }
}

/// Counts the warning in a command's standard error.
fn warnings(stderr: &str) -> usize {
    stderr.matches("reads English only").count()
}

fn an_english_store_given_chinese_warns_once_and_check_gives_commands_that_work(bank: &Bank) {
    let Some(data) = data_dir() else { return };
    let minilm = || {
        let mut command = auto(bank, &data);
        command.args(["--local-model", "all-MiniLM-L6-v2"]);
        command
    };
    let (_, stderr) = ok(minilm(), &["remember", "--user", "li", "--user-text", "I adopted a grey cat named Miso"]);
    assert_eq!(warnings(&stderr), 0, "{stderr}");
    // One Chinese memory: one warning, with the commands.
    let (_, stderr) =
        ok(minilm(), &["remember", "--user", "li", "--user-text", CHINESE[0].0, "--assistant-text", CHINESE[0].1]);
    assert_eq!(warnings(&stderr), 1, "{stderr}");
    assert!(
        stderr.contains("export --all-users --output")
            && stderr.contains("--local-model multilingual-e5-small import membank-export"),
        "{stderr}"
    );
    // A process that stores many (an import of a Chinese history, in batches): still once.
    let history = bank.path("history.json");
    let turns: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"query": "第{i}天，{}", "response": "{}"}}"#, CHINESE[i % 3].0, CHINESE[i % 3].1))
        .collect();
    std::fs::write(
        &history,
        format!(
            r#"{{"小李": {{"history": {{"2024-05-01": [{}], "2024-05-02": [{}]}}}}}}"#,
            turns[..20].join(","),
            turns[20..].join(",")
        ),
    )
    .unwrap();
    let (_, stderr) = ok(minilm(), &["import", "memorybank", history.to_str().unwrap()]);
    assert_eq!(warnings(&stderr), 1, "{stderr}");
    // With no model named the store's own model is used: the same warning.
    let (_, stderr) = ok(auto(bank, &data), &["note", "--user", "li", "--text", CHINESE[2].0]);
    assert_eq!(warnings(&stderr), 1, "{stderr}");
    // English memories say nothing.
    let (_, stderr) = ok(auto(bank, &data), &["note", "--user", "li", "--text", "Li plays the cello on Sundays"]);
    assert_eq!(warnings(&stderr), 0, "{stderr}");

    // check counts the active memories written in other scripts and gives the commands.
    let (text, _) = ok(auto(bank, &data), &["check"]);
    assert!(
        text.contains("warning: 42 of 44 active memories are written mostly in scripts other than Latin"),
        "{text}"
    );
    let report = json(auto(bank, &data), &["check"]);
    assert_eq!(report["embedding_model"], MINILM_ID);
    assert_eq!(
        (report["active_memories"].as_u64(), report["other_script_memories"].as_u64()),
        (Some(44), Some(42)),
        "{report}"
    );
    let commands: Vec<String> =
        report["switch_model"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect();
    for command in &commands {
        assert!(text.contains(command.as_str()), "check's text shows {command}: {text}");
    }

    // Run them, as a person would paste them (a shell, `membank` on the PATH).
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_membank")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let new_pg = bank.pg.as_ref().map(|_| {
        membank_store::postgres::testing::TestDatabase::create(
            &std::env::var("MEMBANK_TEST_PG_URL").unwrap(),
            "language_switched",
        )
    });
    for command in &commands {
        if command.starts_with("createdb ") {
            // The test makes its database its own way; the command names the new database.
            assert!(new_pg.is_some(), "createdb only for PostgreSQL: {commands:?}");
            continue;
        }
        let command = match (&new_pg, &bank.pg) {
            // The new database's URL is the old one's with `_e5` after its name.
            (Some(new), Some(old)) => command.replace(&format!("{}_e5", old.url), &new.url),
            _ => command.clone(),
        };
        let out = Command::new("sh")
            .args(["-c", &command])
            .env("PATH", &path)
            .env("HOME", bank.dir.path())
            .env("XDG_DATA_HOME", &data)
            .env_remove("MEMBANK_MODEL_DIR")
            .env_remove("MEMBANK_LOCAL_MODEL")
            .env_remove("MEMBANK_DB")
            .env_remove("MEMBANK_CONFIG")
            .current_dir(bank.dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{command} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    // The new store is an e5 store holding everything, and with no model named it reads
    // Chinese: a Chinese question finds the Chinese memory by meaning.
    let switched = match &new_pg {
        Some(new) => new.url.clone(),
        None => bank.db().with_file_name("bank-e5.db").to_string_lossy().into_owned(),
    };
    let on_new = || {
        let mut command = bank.command_without_db();
        command
            .env_remove("MEMBANK_MODEL_DIR")
            .env_remove("MEMBANK_LOCAL_MODEL")
            .env("XDG_DATA_HOME", &data)
            .args(["--db", &switched]);
        command
    };
    let report = json(on_new(), &["check"]);
    assert!(report["embedding_model"].as_str().unwrap().starts_with("intfloat/multilingual-e5-small"), "{report}");
    assert_eq!(report["active_memories"].as_u64(), Some(44));
    assert!(report["switch_model"].is_null());
    let out =
        json(on_new(), &["recall", "--user", "li", "--k", "3", "--no-strengthen", "--query", "我的猫叫什么名字？"]);
    assert!(out["results"][0]["content"].as_str().unwrap().contains("小白"), "{out}");
    let (_, stderr) = ok(on_new(), &["remember", "--user", "li", "--user-text", CHINESE[1].0]);
    assert_eq!(warnings(&stderr), 0, "{stderr}");
}

/// One HTTP/1.1 request to a local server; the status and the body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, response.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

/// A long-running server decides nothing until it stores a memory: its first request, an
/// English recall on an empty store, does not stop the first Chinese memory from making an
/// e5 store.
#[test]
fn a_server_whose_first_request_is_an_english_recall_still_picks_e5_for_chinese() {
    use std::io::BufRead;
    let Some(data) = data_dir() else { return };
    let bank = Bank::new();
    let mut child = auto(&bank, &data)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut child = Kill(child);
    let addr = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server exited early");
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut all);
        all
    });
    // Ready once a model is warm (the default one, on an empty store).
    let ready = (0..600).any(|_| {
        let ok = request(&addr, "GET", "/readyz", "").0 == 200;
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ok
    });
    assert!(ready, "the server never became ready");
    let (status, body) =
        request(&addr, "POST", "/v1/users/li/recall", r#"{"query": "what flowers did I see?", "k": 3}"#);
    assert_eq!(status, 200, "{body}");
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/users/li/turns",
        &format!(r#"{{"user_text": "{}", "assistant_text": "{}"}}"#, CHINESE[0].0, CHINESE[0].1),
    );
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, body) = request(&addr, "POST", "/v1/users/li/turns", r#"{"user_text": "I also like the cello"}"#);
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, body) =
        request(&addr, "POST", "/v1/users/li/recall", r#"{"query": "我在公园看到了什么花？", "k": 1}"#);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("樱花"), "{body}");
    assert!(std::process::Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap().success());
    assert!(child.0.wait().unwrap().success());
    let log = log.join().unwrap();
    assert_eq!(warnings(&log), 0, "an e5 store never warns: {log}");
    assert!(store_model(&bank, &data).starts_with("intfloat/multilingual-e5-small"), "{}", store_model(&bank, &data));
}
