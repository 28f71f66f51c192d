//! The CLI contract on PostgreSQL, and two servers over one PostgreSQL database.
//!
//! The contract itself runs on both backends in `round_trip.rs`; here is only what one
//! SQLite file cannot say: two real `membank serve` processes, on loopback without keys,
//! sharing one PostgreSQL database. A write through one is read through the other at
//! once, an erasure through one leaves the other nothing of the content, and strengthening
//! recalls split across both lose no increment. Each test skips, saying so, without
//! `MEMBANK_TEST_PG_URL` (and fails with `MEMBANK_REQUIRE_PG=1`), like `Bank::postgres`;
//! but one: a database that cannot be reached (nothing listens) is exit code 10.
//! No test here reads a clock: ordering comes from the requests' own completion.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use crate::Bank;

/// One `membank serve` process over the bank's database, on a free loopback port (the
/// Citus fault tests, `citus_faults.rs`, run theirs with it too).
pub(crate) struct Server {
    child: Child,
    addr: String,
    /// Everything the server wrote to stderr so far, for failure messages.
    log: std::sync::Arc<std::sync::Mutex<String>>,
    /// The thread that drains stderr into `log`; it ends when the server does.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts `membank serve` and waits for its banner, which names the port. Background
    /// maintenance is off and so is the rate limit: the tests count exact effects.
    fn start(bank: &Bank) -> Self {
        Self::spawn(bank.command())
    }

    /// [`Server::start`] with `command` (the binary, its environment and `--db`).
    pub(crate) fn spawn(mut command: std::process::Command) -> Self {
        let mut child = command
            .args(["serve", "--addr", "127.0.0.1:0", "--no-maintenance", "--rate-limit", "0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut banner = String::new();
        let addr = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "server exited early: {banner}");
            banner.push_str(&line);
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        assert!(addr.starts_with("127.0.0.1:"), "{banner}");
        // Keep draining stderr so the server never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(banner));
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Self { child, addr, log, reader: Some(reader) }
    }

    /// One request on its own connection; the status and the body.
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let (status, _, body) = self.exchange(method, path, body);
        (status, body)
    }

    /// One request on its own connection; the status, the response head (status line and
    /// headers) and the body. An answer slower than the bound below fails the test rather
    /// than hang it.
    pub(crate) fn exchange(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(300))).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .unwrap_or_else(|e| panic!("{method} {path} on {}: no answer: {e}", self.addr));
        let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        (status, head.to_string(), body.to_string())
    }

    /// A request that must answer `status`; its body as JSON.
    fn expect(&self, status: u16, method: &str, path: &str, body: Option<Value>) -> Value {
        let (got, text) = self.request(method, path, body.as_ref());
        assert_eq!(got, status, "{method} {path} on {}: {text}", self.addr);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }

    /// Polls `/readyz` every 50 ms, at most 600 times (the model loads at start).
    pub(crate) fn wait_ready(&self) {
        for _ in 0..600 {
            if self.request("GET", "/readyz", None).0 == 200 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the server on {} never became ready", self.addr);
    }

    /// Everything the server wrote to stderr so far.
    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the process still runs (it has not exited, crashed or been restarted).
    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGTERM to this process only; its exit status and all it wrote to stderr.
    pub(crate) fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let status = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        let log = self.log.lock().unwrap().clone();
        (exit, log)
    }

    pub(crate) fn note(&self, user: &str, text: &str) -> String {
        let memory = self.expect(201, "POST", &format!("/v1/users/{user}/notes"), Some(json!({ "text": text })));
        memory["id"].as_str().unwrap().to_string()
    }

    fn recall(&self, user: &str, body: Value) -> Value {
        self.expect(200, "POST", &format!("/v1/users/{user}/recall"), Some(body))
    }

    pub(crate) fn get(&self, user: &str, id: &str) -> Value {
        self.expect(200, "GET", &format!("/v1/users/{user}/memories/{id}"), None)
    }

    /// The memories a list returns, `query` being its query string.
    fn list(&self, user: &str, query: &str) -> Value {
        self.expect(200, "GET", &format!("/v1/users/{user}/memories?{query}"), None)
    }

    fn events(&self, user: &str, query: &str) -> Vec<Value> {
        self.expect(200, "GET", &format!("/v1/users/{user}/events?{query}"), None)["events"].as_array().unwrap().clone()
    }
}

impl Drop for Server {
    /// A test that fails before `stop` leaves no server behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two servers over one new PostgreSQL database, both ready; `None` (after saying why)
/// without `MEMBANK_TEST_PG_URL`. They start at the same time, so both open (and migrate)
/// the fresh database at once.
fn two_servers(test: &str) -> Option<(Bank, Server, Server)> {
    two_servers_with(test, "")
}

/// [`two_servers`] with `config` (TOML) as both servers' configuration file.
fn two_servers_with(test: &str, config: &str) -> Option<(Bank, Server, Server)> {
    let bank = Bank::postgres(test)?;
    let file = bank.path("config.toml");
    std::fs::write(&file, config).unwrap();
    let start = || {
        let mut command = bank.command();
        command.env("MEMBANK_CONFIG", &file);
        Server::spawn(command)
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(start);
        let b = s.spawn(start);
        (a.join().unwrap(), b.join().unwrap())
    });
    a.wait_ready();
    b.wait_ready();
    assert_ne!(a.addr, b.addr);
    Some((bank, a, b))
}

/// Stops both servers, each by its own process id. Their exit status is not asserted here
/// but in `postgres_serve_exits_cleanly_on_sigterm` alone, so a shutdown failure is
/// reported once, under its own name, instead of hiding what these tests found.
fn stop(a: Server, b: Server) {
    a.terminate();
    b.terminate();
}

fn ids(values: &[Value]) -> Vec<&str> {
    values.iter().map(|v| v["id"].as_str().unwrap()).collect()
}

#[test]
fn postgres_two_servers_read_their_writes_across_processes() {
    let Some((bank, a, b)) = two_servers("two_servers_read_writes") else { return };
    let servers = [&a, &b];
    let facts = [
        ("My grey cat is called Miso", "what is my cat called?"),
        ("I work as a nurse at the city hospital", "what is my job?"),
        ("My favourite food is spicy ramen", "what food do I like best?"),
        ("I am allergic to peanuts", "do I have any allergies?"),
        ("My brother Tom lives in Toronto", "where does my brother live?"),
        ("I drive an old blue Volvo", "what car do I drive?"),
    ];
    let mut stored = Vec::new();
    for (i, (fact, question)) in facts.iter().enumerate() {
        let (writer, reader) = (servers[i % 2], servers[(i + 1) % 2]);
        let id = writer.note("hana", fact);
        stored.push(id.clone());
        // The other process finds it at once: by recall, by id, and in its list.
        let recall = reader.recall("hana", json!({ "query": question, "k": 1, "strengthen": false }));
        let results = recall["results"].as_array().unwrap();
        assert_eq!(
            ids(results),
            [id.as_str()],
            "{fact:?} written through {} not recalled through {}: {recall}",
            writer.addr,
            reader.addr
        );
        assert_eq!(results[0]["content"], *fact);
        assert_eq!(reader.get("hana", &id)["content"], *fact);
        let list = reader.list("hana", "limit=100");
        assert_eq!(list["counts"]["active"], i + 1);
        assert!(ids(list["memories"].as_array().unwrap()).contains(&id.as_str()));
    }
    // A strengthening recall through one is seen through the other, and the users stay apart.
    // (On a later day than the memory was written: spaced strengthening adds to S once a day.)
    let tomorrow = chrono::Utc::now().date_naive().succ_opt().unwrap().and_hms_opt(0, 0, 1).unwrap().and_utc();
    let recall = a.recall("hana", json!({ "query": "what is my cat called?", "k": 1, "now": tomorrow.to_rfc3339() }));
    assert_eq!(ids(recall["results"].as_array().unwrap()), [stored[0].as_str()]);
    let seen = b.get("hana", &stored[0]);
    assert_eq!((seen["strength"].as_f64(), seen["recall_count"].as_u64()), (Some(2.0), Some(1)));
    assert_eq!(b.recall("ivan", json!({ "query": "what is my cat called?", "k": 5 }))["results"], json!([]));
    stop(a, b);
    bank.ok(&["check"]);
}

#[test]
fn postgres_two_servers_erasure_through_one_is_seen_by_the_other() {
    let Some((bank, a, b)) = two_servers("two_servers_erasure") else { return };
    let secret = a.note("jun", "The door code of my flat is Lighthouse Marigold");
    let kept = a.note("jun", "I go swimming on Tuesdays");
    let query = "what is the door code of my flat? Lighthouse";
    let before = b.recall("jun", json!({ "query": query, "k": 1, "strengthen": false }));
    assert_eq!(ids(before["results"].as_array().unwrap()), [secret.as_str()]);

    // The erasure answers the tombstone.
    let tombstone = a.expect(200, "DELETE", &format!("/v1/users/jun/memories/{secret}"), None);
    assert_eq!(tombstone["status"], "erased");
    assert_eq!(tombstone["content"], Value::Null);

    // Neither server has anything of the content left to give; B never held it in a cache
    // that could outlive the erasure. GET answers the content-free tombstone (200).
    for server in [&b, &a] {
        let shown = server.get("jun", &secret);
        assert_eq!(shown["status"], "erased");
        assert_eq!(shown["content"], Value::Null);
        assert!(shown.get("user_text").is_none(), "{shown}");
        for (what, body) in [
            ("get", shown.to_string()),
            ("recall", server.recall("jun", json!({ "query": query, "k": 5, "strengthen": false })).to_string()),
            (
                "audit recall",
                server
                    .recall("jun", json!({ "query": query, "k": 5, "include_archived": true, "strengthen": false }))
                    .to_string(),
            ),
            ("list", server.list("jun", "status=active,archived,superseded,erased").to_string()),
            ("events", json!(server.events("jun", "")).to_string()),
        ] {
            assert!(
                !body.contains("Lighthouse") && !body.contains("Marigold"),
                "{what} through {} still holds the erased content: {body}",
                server.addr
            );
        }
        let recall =
            server.recall("jun", json!({ "query": query, "k": 5, "include_archived": true, "strengthen": false }));
        assert_eq!(ids(recall["results"].as_array().unwrap()), [kept.as_str()], "{recall}");
        let active = server.list("jun", "");
        assert_eq!(ids(active["memories"].as_array().unwrap()), [kept.as_str()]);
        assert_eq!((active["counts"]["active"].as_u64(), active["counts"]["erased"].as_u64()), (Some(1), Some(1)));
        let erased = server.list("jun", "status=erased");
        assert_eq!(ids(erased["memories"].as_array().unwrap()), [secret.as_str()]);
        assert_eq!(erased["memories"][0]["content"], Value::Null);
        let kinds: Vec<String> = server
            .events("jun", &format!("memory={secret}"))
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["created", "erased"]);
    }
    // A tombstone stays one: erasing again through B changes nothing, restoring is refused.
    let again = b.expect(200, "DELETE", &format!("/v1/users/jun/memories/{secret}"), None);
    assert_eq!((again["status"].as_str(), &again["content"]), (Some("erased"), &Value::Null));
    let refused = b.expect(409, "POST", &format!("/v1/users/jun/memories/{secret}/restore"), None);
    assert!(refused["error"]["code"].is_string(), "{refused}");
    stop(a, b);
    bank.ok(&["check"]);
}

#[test]
fn postgres_two_servers_lose_no_strengthening_under_concurrent_recalls() {
    const THREADS: usize = 20;
    const RECALLS_PER_THREAD: usize = 10;
    const RECALLS: usize = THREADS * RECALLS_PER_THREAD;
    // Every recall strengthens (the paper's reading), so a lost update would show; spaced
    // strengthening would count one a day.
    let Some((bank, a, b)) =
        two_servers_with("two_servers_concurrent_recalls", "[forgetting]\nspaced_recall = false\n")
    else {
        return;
    };
    // The user's only memory, so every recall at k = 1 returns it.
    let id = a.note("kim", "My grandmother taught me to bake rye bread");
    let initial = b.get("kim", &id);
    assert_eq!(initial["recall_count"], 0);
    let initial_strength = initial["strength"].as_f64().unwrap();

    let servers = [&a, &b];
    let answered: Vec<(usize, usize)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let id = id.as_str();
                s.spawn(move || {
                    let mut per_server = (0, 0);
                    for n in 0..RECALLS_PER_THREAD {
                        // Alternating within each thread, so each server gets exactly half.
                        let which = (thread + n) % 2;
                        let recall = servers[which]
                            .recall("kim", json!({ "query": "who taught me to bake?", "k": 1, "strengthen": true }));
                        assert_eq!(recall["strengthened"], true, "{recall}");
                        assert_eq!(ids(recall["results"].as_array().unwrap()), [id], "{recall}");
                        if which == 0 { per_server.0 += 1 } else { per_server.1 += 1 }
                    }
                    per_server
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let through_a: usize = answered.iter().map(|(a, _)| a).sum();
    let through_b: usize = answered.iter().map(|(_, b)| b).sum();
    assert_eq!((through_a, through_b), (RECALLS / 2, RECALLS / 2));

    // MemoryBank's rule (core::forgetting): each strengthening recall adds exactly 1 to S
    // and 1 to recall_count, so no increment may be lost between the two processes.
    let expected_strength = initial_strength + RECALLS as f64;
    for server in [&a, &b] {
        let memory = server.get("kim", &id);
        assert_eq!(memory["strength"].as_f64(), Some(expected_strength), "{memory}");
        assert_eq!(memory["recall_count"].as_u64(), Some(RECALLS as u64), "{memory}");
    }
    let events = b.events("kim", &format!("memory={id}&limit=10000"));
    let of_kind = |kind: &str| events.iter().filter(|e| e["kind"] == kind).collect::<Vec<_>>();
    assert_eq!(of_kind("created").len(), 1);
    assert_eq!(of_kind("recalled").len(), RECALLS);
    let strengthened = of_kind("strengthened");
    assert_eq!(strengthened.len(), RECALLS);
    // Each strengthening logged its own step: S went through every value once.
    let mut after: Vec<f64> = strengthened.iter().map(|e| e["data"]["strength_after"].as_f64().unwrap()).collect();
    after.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (1..=RECALLS).map(|n| initial_strength + n as f64).collect();
    assert_eq!(after, expected);
    assert!(
        strengthened
            .iter()
            .all(|e| e["data"]["strength_before"].as_f64().unwrap() + 1.0
                == e["data"]["strength_after"].as_f64().unwrap())
    );
    stop(a, b);
    // The CLI, a third process, sees the same.
    let shown = bank.json(&["show", "--user", "kim", &id]);
    assert_eq!(shown["memories"][0]["strength"].as_f64(), Some(expected_strength));
    bank.ok(&["check"]);
}

#[test]
fn postgres_serve_exits_cleanly_on_sigterm() {
    let Some(bank) = Bank::postgres("serve_exits_cleanly") else { return };
    let server = Server::start(&bank);
    server.wait_ready();
    // Use the pool, so there are open connections to close at shutdown.
    let id = server.note("lena", "I collect vintage postcards");
    assert_eq!(
        ids(server.recall("lena", json!({ "query": "what do I collect?", "k": 1 }))["results"].as_array().unwrap()),
        [id.as_str()]
    );
    let (exit, log) = server.terminate();
    assert!(
        exit.success() && log.contains("membank: stopped") && !log.contains("panicked"),
        "serve over PostgreSQL did not shut down cleanly: {exit:?}\n{log}"
    );
    // What it stored is there for the next process.
    let listed = bank.json(&["list", "--user", "lena"]);
    assert_eq!(listed["memories"][0]["id"], id.as_str());
    assert_eq!(listed["memories"][0]["recall_count"], 1);
}

/// A database that cannot be reached is an error class of its own: one line saying so and
/// what failed, and exit code 10 (try again), not 1. Needs no PostgreSQL: nothing listens on
/// the port.
#[test]
fn an_unreachable_database_is_exit_10_with_a_clear_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let bank = Bank::new();
    let url = format!("postgres://membank@127.0.0.1:{port}/membank");
    for args in [&["list", "--user", "ana"][..], &["check"]] {
        let out = bank.command_without_db().arg("--db").arg(&url).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(10), "membank {args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("cannot be reached now (try again shortly)"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn bench_scale_measures_postgres_or_citus_beside_sqlite_and_refuses_the_wrong_flag() {
    let Some(bank) = Bank::postgres("bench_scale") else { return };
    let pg = bank.pg.as_ref().unwrap();
    let (flag, other, backend) =
        if pg.citus { ("--citus", "--postgres", "citus") } else { ("--postgres", "--citus", "postgres") };
    let args = crate::bench::tiny_scale_args(&bank);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    // A Citus coordinator is not plain PostgreSQL, and the other way round.
    let stderr = bank.fails(&[&args[..], &[other, &pg.url]].concat(), 3);
    assert!(stderr.contains("Citus coordinator"), "{stderr}");
    // The copy goes into a new database of that server (made a cluster of the same nodes on
    // Citus), migrated, and is dropped at the end with the ingestion's scratch databases.
    args.extend([flag, &pg.url, "--no-keep"]);
    let out = bank.command().arg("--json").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::bench::check_scale_report(&report, &["sqlite", backend]);
    assert!(stderr.contains(&format!("{backend}: migrated 60 memories")), "{stderr}");
    let dataset = &report["datasets"][1];
    assert_eq!(dataset["added"], 60, "{report}");
    assert!(dataset["memories_per_second"].as_f64().unwrap() > 0.0, "{report}");
    let workers = &report["backends"][1]["workers"];
    if pg.citus {
        assert!(workers.as_u64().unwrap() >= 1, "{report}");
    } else {
        assert!(workers.is_null(), "{report}");
    }
    assert!(!report["backends"][1]["location"].as_str().unwrap().contains(&pg.name), "a database of its own: {report}");
}
