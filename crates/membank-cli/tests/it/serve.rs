//! `membank serve`, `keys` and `mcp` as processes: the loud no-auth warning, refusal of a
//! non-loopback address without keys, a curl-like round trip over a real socket with and
//! without a key, SIGTERM shutting down cleanly, the MCP tools over stdio through
//! the rmcp client spawning `membank mcp`, a model that was missing at start being
//! loaded once it is put in place, without a restart, and the cache budget from the
//! environment over the config file reaching `/metrics`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use crate::Bank;

struct Server {
    child: Child,
    addr: String,
    banner: String,
}

impl Server {
    fn start(bank: &Bank) -> Self {
        Self::start_with(bank, |_| {})
    }

    /// Starts `membank serve` after `adjust` has had its say on the command (environment).
    fn start_with(bank: &Bank, adjust: impl FnOnce(&mut std::process::Command)) -> Self {
        let mut command = bank.command();
        adjust(&mut command);
        let mut child = command
            .args(["serve", "--addr", "127.0.0.1:0"])
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
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr, banner }
    }

    fn request(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let auth = key.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
        let body = body.unwrap_or("");
        write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, response.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
    }

    fn wait_ready(&self) {
        self.wait_ready_for(600);
    }

    /// Polls `/readyz` every 50 ms, at most `polls` times.
    fn wait_ready_for(&self, polls: u32) {
        for _ in 0..polls {
            if self.request("GET", "/readyz", None, None).0 == 200 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the server never became ready");
    }

    fn stop(mut self) {
        let status = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "serve did not shut down cleanly: {exit:?}");
    }
}

impl Drop for Server {
    /// A test that fails before `stop` leaves no server behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_without_keys_is_loopback_only_and_says_so() {
    let bank = Bank::new();
    // A usage mistake (exit 2), its advice said once.
    let err = bank.fails(&["serve", "--addr", "0.0.0.0:0"], 2);
    assert!(err.contains("refusing to listen") && err.contains("without API keys"), "{err}");
    assert_eq!(err.matches("keys create").count(), 1, "{err}");
    assert_eq!(err.matches("bind to 127.0.0.1").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let server = Server::start(&bank);
    assert!(server.banner.contains("WITHOUT AUTHENTICATION"), "{}", server.banner);
    server.wait_ready();
    let (status, body) = server.request(
        "POST",
        "/v1/users/alice/turns",
        None,
        Some(r#"{"user_text":"I adopted a grey cat named Miso","assistant_text":"Lovely name!"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) =
        server.request("POST", "/v1/users/alice/recall", None, Some(r#"{"query":"what is my cat called?","k":3}"#));
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(body["results"][0]["content"].as_str().unwrap().contains("Miso"));
    // The web app comes with the binary.
    let (status, page) = server.request("GET", "/", None, None);
    assert_eq!(status, 200);
    assert!(page.to_ascii_lowercase().starts_with("<!doctype html") && page.contains("/assets/app."), "{page}");
    server.stop();
    // The database is intact after the shutdown.
    bank.ok(&["check"]);
}

#[test]
fn serve_reports_its_caches_against_the_configured_budget() {
    let bank = Bank::new();
    let config = bank.path("config.toml");
    crate::write(&config, b"[cache]\nmax_mb = 32\n");
    let server = Server::start_with(&bank, |command| {
        command.arg("--config").arg(&config).env("MEMBANK_CACHE_MB", "64");
    });
    server.wait_ready();
    let (status, _) = server.request(
        "POST",
        "/v1/users/alice/turns",
        None,
        Some(r#"{"user_text":"I adopted a grey cat named Miso","assistant_text":"Lovely name!"}"#),
    );
    assert_eq!(status, 201);
    let (status, _) =
        server.request("POST", "/v1/users/alice/recall", None, Some(r#"{"query":"what is my cat called?","k":3}"#));
    assert_eq!(status, 200);
    let (status, metrics) = server.request("GET", "/metrics", None, None);
    assert_eq!(status, 200);
    // The environment's 64 MiB, not the file's 32.
    assert!(metrics.contains("\nmembank_cache_budget_bytes 67108864\n"), "{metrics}");
    let bytes: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("membank_cache_bytes{cache=\"vectors\"} "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(bytes > 0, "{metrics}");
    assert!(metrics.contains("membank_cache_misses_total{cache=\"terms\"} 1\n"), "{metrics}");
    server.stop();
}

/// The counter named `name` in a `/metrics` text.
fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_repeated_query_is_answered_from_the_query_cache_and_counted() {
    let bank = Bank::new();
    let config = bank.path("config.toml");
    crate::write(&config, b"[embedding]\nquery_cache_mb = 2\n");
    let server = Server::start_with(&bank, |command| {
        command.arg("--config").arg(&config);
    });
    server.wait_ready();
    let (status, _) =
        server.request("POST", "/v1/users/alice/notes", None, Some(r#"{"text":"My cat is called Miso"}"#));
    assert_eq!(status, 201);
    let recall = |query: &str| {
        let (status, body) = server.request(
            "POST",
            "/v1/users/alice/recall",
            None,
            Some(&format!(r#"{{"query":{},"k":3,"strengthen":false}}"#, serde_json::json!(query))),
        );
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["results"].clone()
    };
    let (_, before) = server.request("GET", "/metrics", None, None);
    let first = recall("what is my cat called?");
    // The same query again, with its whitespace changed: the same answer, from the cache.
    let again = recall("  what is my   cat called?");
    // The same memory at the same cosine: the cached vector is the model's (the retention
    // moved with the clock).
    assert_eq!((&first[0]["id"], &first[0]["dense_score"]), (&again[0]["id"], &again[0]["dense_score"]));
    assert!(first[0]["content"].as_str().unwrap().contains("Miso"), "{first}");
    let (_, after) = server.request("GET", "/metrics", None, None);
    assert!(after.contains("\nmembank_query_cache_budget_bytes 2097152\n"), "{after}");
    let delta = |name: &str| counter(&after, name) - counter(&before, name);
    assert_eq!(delta("membank_query_cache_hits_total"), 1, "{after}");
    assert_eq!(delta("membank_query_cache_misses_total"), 1, "{after}");
    assert!(counter(&after, "membank_query_cache_bytes") > 0);
    server.stop();

    // The flag turns it off: no query cache, so none in /metrics.
    let server = Server::start_with(&bank, |command| {
        command.arg("--config").arg(&config).env("MEMBANK_QUERY_CACHE_MB", "0");
    });
    server.wait_ready();
    recall_on(&server);
    let (_, metrics) = server.request("GET", "/metrics", None, None);
    assert!(!metrics.contains("membank_query_cache"), "{metrics}");
    server.stop();
}

fn recall_on(server: &Server) {
    let (status, body) =
        server.request("POST", "/v1/users/alice/recall", None, Some(r#"{"query":"cat","k":1,"strengthen":false}"#));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn keys_are_created_listed_revoked_and_required() {
    let bank = Bank::new();
    let key = bank.ok(&["--tenant", "acme", "keys", "create", "--label", "ci"]).trim().to_string();
    assert!(key.starts_with("mbk_"), "{key}");
    let id = key.split('_').nth(1).unwrap().to_string();
    let listed = bank.json(&["keys", "list"]);
    assert_eq!(listed["keys"][0]["id"], id.as_str());
    assert!(!listed.to_string().contains(&key), "keys list must never show a secret");
    let raw = std::fs::read(bank.db()).unwrap();
    assert!(!raw.windows(key.len()).any(|w| w == key.as_bytes()), "the key must be stored hashed");

    let server = Server::start(&bank);
    assert!(!server.banner.contains("WITHOUT AUTHENTICATION"));
    server.wait_ready();
    assert_eq!(server.request("GET", "/v1/users/alice/memories", None, None).0, 401);
    assert_eq!(server.request("POST", "/v1/users/alice/notes", Some(&key), Some(r#"{"text":"likes tea"}"#)).0, 201);
    server.stop();

    bank.ok(&["keys", "revoke", &id]);
    bank.fails(&["keys", "revoke", &id], 5);
    bank.fails(&["keys", "revoke", "nope"], 4);
    let server = Server::start(&bank);
    // Keys existed once but none is live: the server falls back to loopback no-auth.
    assert!(server.banner.contains("WITHOUT AUTHENTICATION"));
    server.wait_ready();
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_stdio_with_the_rmcp_client() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let bank = Bank::new();
    let mut command = tokio::process::Command::from(bank.command());
    command.args(["mcp", "--user", "alice"]);
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    let args = |v: serde_json::Value| v.as_object().unwrap().clone();
    let saved = client
        .call_tool(CallToolRequestParams::new("remember").with_arguments(args(
            serde_json::json!({ "text": "Alice's cat is called Miso", "occurred_at": "2024-05-04T10:00:00Z" }),
        )))
        .await
        .unwrap();
    assert_ne!(saved.is_error, Some(true));
    let recalled = client
        .call_tool(
            CallToolRequestParams::new("recall").with_arguments(args(serde_json::json!({ "query": "cat's name" }))),
        )
        .await
        .unwrap();
    let text: String = recalled.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert!(text.contains("Miso") && text.contains("2024-05-04"), "{text}");
    client.cancel().await.unwrap();
    // It acted for alice, as configured.
    let listed = bank.json(&["list", "--user", "alice"]);
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
    assert_eq!(bank.json(&["list", "--user", "bob"])["memories"].as_array().unwrap().len(), 0);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn serve_loads_the_model_once_it_is_put_in_place_without_a_restart() {
    let bank = Bank::new();
    let models = bank.path("models");
    let dir = models.join("all-MiniLM-L6-v2");
    let server = Server::start_with(&bank, |command| {
        command.env("MEMBANK_MODEL_DIR", &dir);
    });
    let note = r#"{"text":"Alice's cat is called Miso"}"#;
    for _ in 0..3 {
        let (status, body) = server.request("POST", "/v1/users/alice/notes", None, Some(note));
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("try again later"), "{body}");
    }
    assert_eq!(server.request("GET", "/readyz", None, None).0, 503);
    // The operator puts the model in place, whole (a directory renamed in).
    let staging = models.join("staging");
    copy_dir(&crate::model_dir(), &staging);
    std::fs::rename(&staging, &dir).unwrap();
    // Retries back off to at most 60 s; allow a few of them on a busy machine.
    server.wait_ready_for(4_000);
    let (status, body) = server.request("POST", "/v1/users/alice/notes", None, Some(note));
    assert_eq!(status, 201, "{body}");
    let (status, body) =
        server.request("POST", "/v1/users/alice/recall", None, Some(r#"{"query":"what is the cat called?","k":3}"#));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Miso"), "{body}");
    server.stop();
}

/// Concurrent recalls through `serve`'s micro-batcher (the default) get exactly the
/// results the same queries get one at a time, and the same as from a server that embeds
/// each query alone (`--query-batch 1`): batching changes when a query is embedded, never
/// its vector. A server with `--query-precision f32` answers too (the reference path).
#[test]
fn concurrent_recalls_through_the_batcher_equal_recalls_one_at_a_time() {
    let bank = Bank::new();
    let facts = [
        "I adopted a grey cat named Miso",
        "My sister Anna is getting married in June",
        "I started learning the cello",
        "We hiked up Mount Tam on Saturday",
        "My favourite food is okonomiyaki",
        "I work as a nurse on night shifts",
        "The landlord is raising the rent again",
        "I ran my first half marathon",
        "My grandmother taught me to knit",
        "I am saving up for a trip to Lisbon",
    ];
    for fact in facts {
        bank.ok(&["remember", "--user", "alice", "--user-text", fact, "--assistant-text", "Tell me more!"]);
    }
    let queries: Vec<String> = [
        "cat",
        "wedding",
        "music lessons",
        "hiking",
        "food I like",
        "my job",
        "rent",
        "running",
        "knitting",
        "travel plans",
        "family",
        "hobbies",
    ]
    .iter()
    .map(|q| format!(r#"{{"query":"what about {q}?","k":4}}"#))
    .collect();
    let ids = |body: &str| -> Vec<(String, String)> {
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].as_str().unwrap().to_owned(), r["score"].to_string()))
            .collect()
    };
    let batched = Server::start(&bank);
    batched.wait_ready();
    let alone: Vec<_> = queries
        .iter()
        .map(|q| {
            let (status, body) = batched.request("POST", "/v1/users/alice/recall", None, Some(q));
            assert_eq!(status, 200, "{body}");
            ids(&body)
        })
        .collect();
    for _ in 0..3 {
        let together: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = queries
                .iter()
                .map(|q| scope.spawn(|| batched.request("POST", "/v1/users/alice/recall", None, Some(q))))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((status, body), expected) in together.iter().zip(&alone) {
            assert_eq!(*status, 200, "{body}");
            assert_eq!(&ids(body), expected);
        }
    }
    batched.stop();
    let unbatched = Server::start_with(&bank, |c| {
        c.env("MEMBANK_QUERY_BATCH", "1");
    });
    unbatched.wait_ready();
    for (q, expected) in queries.iter().zip(&alone) {
        let (status, body) = unbatched.request("POST", "/v1/users/alice/recall", None, Some(q));
        assert_eq!(status, 200, "{body}");
        assert_eq!(&ids(&body), expected, "{q}");
    }
    unbatched.stop();
    let reference = Server::start_with(&bank, |c| {
        c.env("MEMBANK_QUERY_PRECISION", "f32");
    });
    reference.wait_ready();
    let (status, body) =
        reference.request("POST", "/v1/users/alice/recall", None, Some(r#"{"query":"what is my cat called?","k":1}"#));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Miso"), "{body}");
    reference.stop();
}

/// A small tmpfs mounted over a directory for as long as it lives, so a test can fill a
/// real disk; `None` where this process may not mount (then the test says so and skips).
struct TinyDisk(std::path::PathBuf);

impl TinyDisk {
    fn mount(dir: &std::path::Path, mib: u32) -> Option<Self> {
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| Self(dir.to_path_buf()))
    }

    /// Writes a filler file until the disk refuses more.
    fn fill(&self) {
        use std::io::Write as _;
        let mut file = std::fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![0u8; 64 << 10];
        while file.write_all(&block).and_then(|()| file.flush()).is_ok() {}
        let _ = file.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.0.join("filler")).unwrap();
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_answers_507_storage_full_and_loses_nothing() {
    let bank = Bank::new();
    let Some(disk) = TinyDisk::mount(bank.dir.path(), 8) else {
        eprintln!("skipping: this process may not mount a tmpfs to fill");
        return;
    };
    let id = bank.remember("ana", "I keep bees on the roof", "2024-05-04T10:00:00Z");
    let server = Server::start(&bank);
    server.wait_ready();
    let (status, body) = server.request("POST", "/v1/users/ana/notes", None, Some(r#"{"text":"Ana moved to Lisbon"}"#));
    assert_eq!(status, 201, "{body}");

    disk.fill();
    // Notes of 30 KB until the database has no room left: each answer is 201 or 507.
    let note = format!(r#"{{"text":"{}"}}"#, "filling the disk ".repeat(1800));
    let mut stored = 0;
    let mut full = None;
    for _ in 0..400 {
        let (status, body) = server.request("POST", "/v1/users/ana/notes", None, Some(&note));
        match status {
            201 => stored += 1,
            507 => {
                full = Some(body);
                break;
            }
            other => panic!("a note on a full disk answered {other}: {body}"),
        }
    }
    let body = full.expect("the disk never filled");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "storage_full", "{body}");
    assert!(error["error"]["message"].as_str().unwrap().contains("nothing of this operation was stored"), "{body}");
    // An erase that cannot complete says so, and the memory keeps its text.
    let (status, body) = server.request("DELETE", &format!("/v1/users/ana/memories/{id}"), None, None);
    if status != 200 {
        assert_eq!(status, 507, "{body}");
        let (status, shown) = server.request("GET", &format!("/v1/users/ana/memories/{id}"), None, None);
        assert_eq!(status, 200, "{shown}");
        assert!(shown.contains("I keep bees on the roof"), "an erase that failed changed the memory: {shown}");
    }
    // The CLI says the same in words.
    let out = bank.output(&["note", "--user", "ana", "--text", &"filling the disk ".repeat(1800)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("disk is full") && !stderr.contains("panicked"), "{stderr}");

    // With room again, everything acknowledged is there and writes work.
    disk.free();
    let (status, body) = server.request("POST", "/v1/users/ana/notes", None, Some(r#"{"text":"room again"}"#));
    assert_eq!(status, 201, "{body}");
    let (_, listed) = server.request("GET", "/v1/users/ana/memories?limit=1000&status=active,archived", None, None);
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let texts: Vec<&str> =
        listed["memories"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("Ana moved to Lisbon")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("room again")), "{texts:?}");
    assert_eq!(texts.iter().filter(|t| t.contains("filling the disk")).count(), stored, "every 201 was kept");
    server.stop();
    let check = bank.output(&["check"]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}
