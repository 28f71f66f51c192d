//! `summarize`, `profile` and `chat` end to end against the stub LLM on 127.0.0.1, with
//! the real embedding model: configuration through MEMBANK_LLM_*, the JSON shapes, the
//! footer, slash commands, and the exit codes without or with a failing LLM.

use membank_llm::stub::{Recorded, Reply, StubServer};

use crate::Bank;

fn with_llm(bank: &Bank, stub: &StubServer, args: &[&str]) -> std::process::Output {
    bank.command()
        .env("MEMBANK_LLM_BASE_URL", stub.base_url())
        .env("MEMBANK_LLM_MODEL", "stub-model")
        .env("MEMBANK_LLM_API_KEY", "sk-cli")
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: std::process::Output) -> String {
    assert!(out.status.success(), "failed with {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn without_an_llm_summarize_and_chat_exit_8_and_say_how_to_configure_one() {
    let bank = Bank::new();
    bank.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    let command = |args: &[&str]| {
        let out = bank
            .command()
            .env_remove("MEMBANK_LLM_BASE_URL")
            .env_remove("MEMBANK_LLM_MODEL")
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for args in [&["summarize", "--user", "alice"][..], &["chat", "--user", "alice", "--message", "hi"]] {
        let (code, stderr) = command(args);
        assert_eq!(code, Some(8), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no LLM is configured")
                && stderr.contains("MEMBANK_LLM_BASE_URL")
                && stderr.contains("MEMBANK_LLM_MODEL"),
            "{stderr}"
        );
    }
    // Everything else keeps working.
    let out = bank.json(&["recall", "--user", "alice", "--query", "cat", "--no-strengthen"]);
    assert_eq!(out["results"].as_array().unwrap().len(), 1);
    assert!(bank.ok(&["profile", "--user", "alice"]).contains("no profile for alice yet"));
}

#[test]
fn summarize_then_profile_then_chat_with_citations_and_slash_commands() {
    let stub = StubServer::with(|r: &Recorded| {
        let s = r.system();
        Reply::text(if s.contains("summarise one day") {
            "Alice adopted a grey cat named Miso."
        } else if s.contains("personality from one day") {
            "Alice is caring and happy."
        } else if s.contains("daily summaries") {
            "Alice adopted Miso on 2024-05-04."
        } else if s.contains("daily personality") {
            "Alice is warm and caring."
        } else {
            "Your cat is Miso [M1]."
        })
    });
    let bank = Bank::new();
    let miso = bank.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    bank.remember("bob", "My dog is called Pixel", "2024-05-04T10:00:00Z");

    let report: serde_json::Value =
        serde_json::from_str(&ok(with_llm(&bank, &stub, &["--json", "summarize", "--user", "alice"]))).unwrap();
    assert_eq!(report["llm_calls"], 4, "{report}");
    assert_eq!(report["days"][0]["summary"]["outcome"], "made");
    assert_eq!(stub.requests()[0].authorization.as_deref(), Some("Bearer sk-cli"));
    let again = ok(with_llm(&bank, &stub, &["summarize", "--user", "alice"]));
    assert!(again.contains("0 LLM calls") && again.contains("summary unchanged"), "{again}");
    assert_eq!(stub.count(), 4);

    let profile = bank.ok(&["profile", "--user", "alice"]);
    assert!(
        profile.contains("Alice is warm and caring.")
            && profile.contains("Alice adopted Miso on 2024-05-04.")
            && profile.contains("2024-05-04"),
        "{profile}"
    );

    let reply: serde_json::Value = serde_json::from_str(&ok(with_llm(
        &bank,
        &stub,
        &["--json", "chat", "--user", "alice", "--message", "What is my cat called?", "--now", "2024-05-10T09:00:00Z"],
    )))
    .unwrap();
    assert_eq!(reply["reply"], "Your cat is Miso [M1].");
    assert_eq!(reply["used"][0]["id"], miso.as_str(), "{reply}");
    assert_eq!(reply["used"][0]["day"], "2024-05-04");
    assert_eq!(reply["turn"]["user_text"], "What is my cat called?");
    let system = stub.requests().last().unwrap().system();
    assert!(
        system.contains("Today is Friday, 2024-05-10")
            && system.contains("Alice is warm and caring.")
            && !system.contains("Pixel"),
        "{system}"
    );

    // Human output ends with a compact footer of the used memories and their dates.
    let human = ok(with_llm(&bank, &stub, &["chat", "--user", "alice", "--message", "And again?"]));
    assert!(human.contains("Your cat is Miso [M1].") && human.contains("─ used: [M1] 20"), "{human}");

    // Slash commands are the person's, and work through --message too.
    let forgot = ok(with_llm(&bank, &stub, &["chat", "--user", "alice", "--message", &format!("/forget {miso}")]));
    assert!(forgot.contains("archived"), "{forgot}");
    assert_eq!(bank.json(&["show", "--user", "alice", &miso])["memories"][0]["status"], "archived");

    // An interactive session on standard input: /remember, a message, /memories, /quit.
    let mut child = bank
        .command()
        .env("MEMBANK_LLM_BASE_URL", stub.base_url())
        .env("MEMBANK_LLM_MODEL", "stub-model")
        .args(["chat", "--user", "alice"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/remember I love jasmine tea\nWhat do I drink?\n/memories\n/bogus\n/quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("remembered ") && stdout.contains("Your cat is Miso") && stdout.contains("jasmine tea"),
        "{stdout}"
    );
    assert!(stderr.contains("unknown command /bogus"), "{stderr}");
}

#[test]
fn a_failing_llm_exits_9_with_a_clear_message() {
    let stub = StubServer::with(|_| Reply::error(401, "invalid api key"));
    let bank = Bank::new();
    bank.remember("alice", "hello", "2024-05-04T10:00:00Z");
    let out = with_llm(&bank, &stub, &["chat", "--user", "alice", "--message", "hi"]);
    assert_eq!(out.status.code(), Some(9), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused the API key"));
    let out = bank
        .command()
        .env("MEMBANK_LLM_BASE_URL", stub.base_url())
        .env_remove("MEMBANK_LLM_MODEL")
        .args(["summarize", "--user", "alice"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model"), "{}", String::from_utf8_lossy(&out.stderr));
}
