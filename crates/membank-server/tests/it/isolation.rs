//! Randomised isolation: tenants and users with the same user names, keys of each tenant
//! (unbound, bound to one user, and one admin key), and thousands of random operations
//! over REST and MCP. No answer may contain, and no operation may change, a memory of
//! another user or tenant: every read (recall, list, show, events, export, MCP recall and
//! list) is checked against a model of who owns which id after every operation, every
//! reach for someone else's id must be refused as not found and leave that memory as it
//! was, and at the end each user's export, list and events are compared whole.
//!
//! `MEMBANK_ISOLATION_OPS` sets the number of operations (default 2,400, what CI runs) and
//! `MEMBANK_ISOLATION_SEED` the seed; with `MEMBANK_ISOLATION_SOCKET=1` the same operations
//! go over HTTP to the real server on 127.0.0.1:0 instead of through the router in-process.
//! `scripts/isolation-10k.sh` runs 10,000 operations over the socket. Isolation violations
//! are collected, not stopped at, so a run reports how many there were; any other
//! surprise (a 5xx, a refused write of one's own) fails at once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use axum::http::StatusCode;
use membank_server::AuthMode;
use serde_json::{Value, json};

use crate::support::*;

const TENANTS: [&str; 4] = ["t0", "t1", "t2", "t3"];
const USERS: [&str; 4] = ["ann", "ben", "cho", "dan"];
/// Each tenant also has a key bound to this user.
const BOUND: usize = 0;
const WORDS: [&str; 8] = ["cat", "tea", "paris", "guitar", "birthday", "rain", "garden", "chess"];

type Owner = (usize, usize);

fn marker((t, u): Owner) -> String {
    format!("owner{t}x{u}")
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Ids in the text of MCP answers: `(id <uuid>, …)` / `(id <uuid>)`.
fn mcp_ids(out: &str) -> Vec<String> {
    out.split("(id ").skip(1).map(|s| s.split([',', ')']).next().unwrap().to_string()).collect()
}

/// The model, the clients and the tally.
struct World {
    transport: Transport,
    keys: Vec<String>,
    bound_keys: Vec<String>,
    admin_key: String,
    owned: HashMap<Owner, HashSet<String>>,
    owner_of: HashMap<String, Owner>,
    /// Every id in the order it was made, so that picking one at random is reproducible.
    ids: Vec<String>,
    mcp: HashMap<Owner, TransportMcp>,
    bound_mcp: Vec<TransportMcp>,
    violations: Vec<String>,
    rest_ops: usize,
    mcp_ops: usize,
}

impl World {
    fn violation(&mut self, what: String) {
        if self.violations.len() < 50 {
            eprintln!("VIOLATION: {what}");
        }
        self.violations.push(what);
    }

    async fn rest(&mut self, method: &str, path: &str, key: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.rest_ops += 1;
        let result = self.transport.call(method, path, Some(key), &[], body).await;
        assert!(!result.0.is_server_error(), "{method} {path}: {} {}", result.0, result.1);
        result
    }

    async fn tool(&mut self, owner: Owner, name: &str, args: Value) -> (bool, String) {
        self.mcp_ops += 1;
        let result = self.mcp.get_mut(&owner).unwrap().tool(name, args).await;
        assert!(!result.1.contains("http_status"), "MCP {name}: {}", result.1);
        result
    }

    fn own(&mut self, owner: Owner, id: String) {
        self.owned.entry(owner).or_default().insert(id.clone());
        match self.owner_of.insert(id.clone(), owner) {
            Some(previous) => self.violation(format!("id {id} of {owner:?} was already given to {previous:?}")),
            None => self.ids.push(id),
        }
    }

    /// Every id in an answer for `owner` must be `owner`'s; `what` names the answer.
    fn only_own(&mut self, owner: Owner, what: &str, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            match self.owner_of.get(&id) {
                Some(o) if *o == owner => {}
                other => {
                    let other = other.copied();
                    self.violation(format!("{what} of {owner:?} returned {id}, owned by {other:?}"));
                }
            }
        }
    }

    /// Contents of another user's markers in text shown to `owner`.
    fn no_foreign_marker(&mut self, owner: Owner, what: &str, text: &str) {
        for t in 0..TENANTS.len() {
            for u in 0..USERS.len() {
                if (t, u) != owner && text.contains(&marker((t, u))) {
                    self.violation(format!("{what} of {owner:?} shows {:?}'s text", (t, u)));
                }
            }
        }
    }

    /// Every memory of `owner` (all statuses), page by page, through `key`.
    async fn list_all(&mut self, owner: Owner, key: &str, extra: &[(&str, &str)]) -> Vec<Value> {
        let mut all = Vec::new();
        loop {
            let path = format!(
                "/v1/users/{}/memories?status=active,archived,superseded,erased&limit=1000&offset={}",
                USERS[owner.1],
                all.len()
            );
            self.rest_ops += 1;
            let (status, body) = self.transport.call("GET", &path, Some(key), extra, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let page = body["memories"].as_array().unwrap().clone();
            let done = page.len() < 1000;
            all.extend(page);
            if done {
                return all;
            }
        }
    }

    async fn events_all(&mut self, owner: Owner) -> Vec<Value> {
        let key = self.keys[owner.0].clone();
        let mut all: Vec<Value> = Vec::new();
        loop {
            let after = all.last().map(|e| format!("&after={}", e["seq"])).unwrap_or_default();
            let (status, body) =
                self.rest("GET", &format!("/v1/users/{}/events?limit=10000{after}", USERS[owner.1]), &key, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let page = body["events"].as_array().unwrap().clone();
            let done = page.len() < 10_000;
            all.extend(page);
            if done {
                return all;
            }
        }
    }

    /// A memory as its owner sees it, without what time alone changes.
    async fn snapshot(&mut self, owner: Owner, id: &str) -> Value {
        let key = self.keys[owner.0].clone();
        let (status, mut body) =
            self.rest("GET", &format!("/v1/users/{}/memories/{id}", USERS[owner.1]), &key, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body.as_object_mut().unwrap().remove("retention");
        body.as_object_mut().unwrap().remove("past_threshold");
        body
    }

    /// Whole-user state as the owner sees it (for "nothing of mine changed").
    async fn fingerprint(&mut self, owner: Owner) -> BTreeMap<String, Value> {
        let key = self.keys[owner.0].clone();
        self.list_all(owner, &key, &[])
            .await
            .into_iter()
            .map(|mut m| {
                // Both follow the clock, not the operation: another user's sweep moves the
                // test's clock 20 days on.
                m.as_object_mut().unwrap().remove("retention");
                m.as_object_mut().unwrap().remove("past_threshold");
                (m["id"].as_str().unwrap().to_string(), m)
            })
            .collect()
    }

    /// After an operation that may make memories of its own (an edit, a maintenance
    /// cycle): adopt new ids that carry the owner's marker.
    async fn adopt_new(&mut self, owner: Owner) {
        let key = self.keys[owner.0].clone();
        for m in self.list_all(owner, &key, &[]).await {
            let id = m["id"].as_str().unwrap().to_string();
            if !self.owner_of.contains_key(&id) {
                if m["content"].as_str().is_some_and(|c| c.contains(&marker(owner))) {
                    self.own(owner, id);
                } else {
                    self.violation(format!("{owner:?} has a memory {id} nobody stored: {m}"));
                }
            }
        }
    }

    /// Export, list and events of `owner` against the model, whole.
    async fn full_check(&mut self, owner: Owner) {
        let key = self.keys[owner.0].clone();
        let user = USERS[owner.1];
        let mine = self.owned.get(&owner).cloned().unwrap_or_default();
        let (status, export) = self.rest("GET", &format!("/v1/users/{user}/export"), &key, None).await;
        assert_eq!(status, StatusCode::OK, "{export}");
        if export["tenant"] != TENANTS[owner.0] || export["user"] != user {
            self.violation(format!("export of {owner:?} says it is {}/{}", export["tenant"], export["user"]));
        }
        let exported: HashSet<String> =
            export["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
        if exported != mine {
            self.violation(format!(
                "export of {owner:?}: {} foreign ids, {} of its own missing",
                exported.difference(&mine).count(),
                mine.difference(&exported).count()
            ));
        }
        self.no_foreign_marker(owner, "export", &export["memories"].to_string());
        let event_ids: Vec<String> = export["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["memory_id"].as_str().map(str::to_string))
            .collect();
        self.only_own(owner, "exported events", event_ids);
        let listed: HashSet<String> =
            self.list_all(owner, &key, &[]).await.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
        if listed != mine {
            self.violation(format!(
                "list of {owner:?}: {} foreign ids, {} of its own missing",
                listed.difference(&mine).count(),
                mine.difference(&listed).count()
            ));
        }
        let events = self.events_all(owner).await;
        let event_ids: Vec<String> =
            events.iter().filter_map(|e| e["memory_id"].as_str().map(str::to_string)).collect();
        let with_events: HashSet<String> = event_ids.iter().cloned().collect();
        self.only_own(owner, "events", event_ids);
        for id in mine.difference(&with_events) {
            self.violation(format!("{owner:?}'s memory {id} has no event in its owner's log"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_operations_never_cross_users_or_tenants() {
    let ops: usize = env_or("MEMBANK_ISOLATION_OPS", 2400);
    let seed: u64 = env_or("MEMBANK_ISOLATION_SEED", 0x5eed_1234_abcd_0001);
    let socket = std::env::var("MEMBANK_ISOLATION_SOCKET").is_ok_and(|v| v == "1");
    // A clock the test moves forward before each sweep, so sweeps archive something while
    // every `now` stays within the server's reach (a write may not run in the future).
    let clock = std::sync::Arc::new(membank_engine::core::ManualClock::new(chrono::Utc::now()));
    let server = TestServer::with_clock(AuthMode::Keys, clock.clone(), |_| {});
    let keys: Vec<String> = TENANTS.iter().map(|t| server.key(t, None, false)).collect();
    let bound_keys: Vec<String> = TENANTS.iter().map(|t| server.key(t, Some(USERS[BOUND]), false)).collect();
    let admin_key = server.key("ops", None, true);
    let mut stop = None;
    let transport = if socket {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
            let _ = rx.await;
        }));
        stop = Some((tx, handle));
        Transport::Socket { client: reqwest::Client::new(), base: format!("http://{addr}") }
    } else {
        Transport::Router(server.router())
    };
    let mut mcp = HashMap::new();
    for (t, key) in keys.iter().enumerate() {
        for (u, user) in USERS.iter().enumerate() {
            mcp.insert((t, u), TransportMcp::open(&transport, Some(key), Some(user)).await);
        }
    }
    let mut bound_mcp = Vec::new();
    for key in &bound_keys {
        bound_mcp.push(TransportMcp::open(&transport, Some(key), None).await);
    }
    let mut w = World {
        transport,
        keys,
        bound_keys,
        admin_key,
        owned: HashMap::new(),
        owner_of: HashMap::new(),
        ids: Vec::new(),
        mcp,
        bound_mcp,
        violations: Vec::new(),
        rest_ops: 0,
        mcp_ops: 0,
    };
    let mut rng = Rng(seed);
    let started = Instant::now();
    for step in 0..ops {
        let owner = (rng.below(TENANTS.len()), rng.below(USERS.len()));
        let (t, u) = owner;
        let user = USERS[u];
        let key = w.keys[t].clone();
        let word = WORDS[rng.below(WORDS.len())];
        let text = format!("{} likes {word} note {step}", marker(owner));
        match rng.below(20) {
            // Writes: a turn, a note, a batch, MCP remember, MCP remember through a bound key.
            0 | 1 => {
                let (status, body) = w
                    .rest(
                        "POST",
                        &format!("/v1/users/{user}/turns"),
                        &key,
                        Some(json!({ "user_text": text, "assistant_text": "noted" })),
                    )
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                w.own(owner, body["id"].as_str().unwrap().to_string());
            }
            2 => {
                let (status, body) =
                    w.rest("POST", &format!("/v1/users/{user}/notes"), &key, Some(json!({ "text": text }))).await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                w.own(owner, body["id"].as_str().unwrap().to_string());
            }
            3 => {
                let turns: Vec<Value> =
                    (0..1 + rng.below(4)).map(|i| json!({ "user_text": format!("{text} part {i}") })).collect();
                let (status, body) = w
                    .rest("POST", &format!("/v1/users/{user}/turns/batch"), &key, Some(json!({ "turns": turns })))
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                for m in body["memories"].as_array().unwrap() {
                    w.own(owner, m["id"].as_str().unwrap().to_string());
                }
            }
            4 => {
                let (err, out) = w.tool(owner, "remember", json!({ "text": text })).await;
                assert!(!err, "{out}");
                w.own(owner, mcp_ids(&out).pop().unwrap());
            }
            5 => {
                // A bound key's session acts for its own user whatever the host says.
                let bound = (t, BOUND);
                let text = format!("{} likes {word} note {step}", marker(bound));
                w.mcp_ops += 1;
                let (err, out) = w.bound_mcp[t].tool("remember", json!({ "text": text })).await;
                assert!(!err, "{out}");
                w.own(bound, mcp_ids(&out).pop().unwrap());
            }
            // Reads.
            6 | 7 => {
                // Archived memories only in audits, which never strengthen.
                let include_archived = rng.below(3) == 0;
                let strengthen = !include_archived && rng.below(2) == 0;
                let (status, body) = w.rest("POST", &format!("/v1/users/{user}/recall"), &key, Some(json!({ "query": format!("likes {word}"), "k": 20, "strengthen": strengthen, "include_archived": include_archived }))).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                let ids: Vec<String> =
                    body["results"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect();
                w.only_own(owner, "REST recall", ids);
                w.no_foreign_marker(owner, "REST recall", &body.to_string());
            }
            8 => {
                let (err, out) = w.tool(owner, "recall", json!({ "query": format!("likes {word}"), "k": 20 })).await;
                assert!(!err, "{out}");
                w.only_own(owner, "MCP recall", mcp_ids(&out));
                w.no_foreign_marker(owner, "MCP recall", &out);
            }
            9 => {
                let listed: HashSet<String> =
                    w.list_all(owner, &key, &[]).await.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
                let mine = w.owned.get(&owner).cloned().unwrap_or_default();
                if listed != mine {
                    w.violation(format!(
                        "list of {owner:?} at step {step}: {} foreign, {} missing",
                        listed.difference(&mine).count(),
                        mine.difference(&listed).count()
                    ));
                }
                let offset = rng.below(3) * 100;
                let (_, out) = w
                    .tool(owner, "list_memories", json!({ "limit": 100, "offset": offset, "include_forgotten": true }))
                    .await;
                w.only_own(owner, "MCP list", mcp_ids(&out));
                w.no_foreign_marker(owner, "MCP list", &out);
            }
            10 => {
                let events = w.events_all(owner).await;
                let ids: Vec<String> =
                    events.iter().filter_map(|e| e["memory_id"].as_str().map(str::to_string)).collect();
                w.only_own(owner, "events", ids);
            }
            11 => {
                let (status, export) = w.rest("GET", &format!("/v1/users/{user}/export"), &key, None).await;
                assert_eq!(status, StatusCode::OK);
                let ids: Vec<String> = export["memories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["id"].as_str().unwrap().to_string())
                    .collect();
                w.only_own(owner, "export", ids);
                let event_ids: Vec<String> = export["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|e| e["memory_id"].as_str().map(str::to_string))
                    .collect();
                w.only_own(owner, "exported events", event_ids);
                w.no_foreign_marker(owner, "export", &export["memories"].to_string());
            }
            // Reaching for an id, often someone else's.
            12..=15 if !w.ids.is_empty() => {
                let id = w.ids[rng.below(w.ids.len())].clone();
                let target = w.owner_of[&id];
                let mine = target == owner;
                let before = if mine { None } else { Some(w.snapshot(target, &id).await) };
                let op = rng.below(11);
                let path = format!("/v1/users/{user}/memories/{id}");
                let (status, body, via) = match op {
                    0 => {
                        let (s, b) = w.rest("GET", &path, &key, None).await;
                        (s, b, "show")
                    }
                    1 => {
                        let (s, b) = w.rest("POST", &format!("{path}/pin"), &key, None).await;
                        (s, b, "pin")
                    }
                    2 => {
                        let (s, b) = w.rest("POST", &format!("{path}/unpin"), &key, None).await;
                        (s, b, "unpin")
                    }
                    3 => {
                        let (s, b) = w.rest("POST", &format!("{path}/forget?reason=test"), &key, None).await;
                        (s, b, "forget")
                    }
                    4 => {
                        let (s, b) = w.rest("POST", &format!("{path}/restore"), &key, None).await;
                        (s, b, "restore")
                    }
                    5 => {
                        let (s, b) = w
                            .rest(
                                "PATCH",
                                &path,
                                &key,
                                Some(json!({ "text": format!("{} edited at {step}", marker(owner)) })),
                            )
                            .await;
                        (s, b, "edit")
                    }
                    6 if rng.below(3) == 0 => {
                        let (s, b) = w.rest("DELETE", &path, &key, None).await;
                        (s, b, "erase")
                    }
                    7 => {
                        let (s, b) = w.rest("GET", &format!("/v1/users/{user}/events?memory={id}"), &key, None).await;
                        (s, b, "events of")
                    }
                    8 => {
                        let (s, b) = w
                            .rest(
                                "POST",
                                &format!("/v1/users/{user}/memories/used"),
                                &key,
                                Some(json!({ "ids": [id] })),
                            )
                            .await;
                        (s, b, "used")
                    }
                    _ => {
                        let tool = if rng.below(2) == 0 { "pin" } else { "forget" };
                        let (err, out) = w.tool(owner, tool, json!({ "id": id })).await;
                        let refused = err && out.contains("not found");
                        if !(mine || refused) {
                            w.violation(format!("MCP {tool} by {owner:?} reached {id} of {target:?}: {out}"));
                        }
                        (StatusCode::OK, Value::Null, "mcp")
                    }
                };
                if via == "events of" && status == StatusCode::OK {
                    // Another user's id answers an empty page, never that memory's events.
                    let ids: Vec<String> = body["events"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|e| e["memory_id"].as_str().map(str::to_string))
                        .collect();
                    if !mine && !ids.is_empty() {
                        w.violation(format!(
                            "events?memory={id} by {owner:?} showed {} events of {target:?}'s memory",
                            ids.len()
                        ));
                    }
                } else if !mine && via != "mcp" && status != StatusCode::NOT_FOUND {
                    w.violation(format!("{via} by {owner:?} of {id} ({target:?}'s) answered {status}: {body}"));
                }
                if !mine && via != "mcp" {
                    w.no_foreign_marker(owner, via, &body.to_string());
                }
                if let Some(before) = before {
                    let after = w.snapshot(target, &id).await;
                    if after != before {
                        w.violation(format!("{via} by {owner:?} changed {id} of {target:?}: {before} -> {after}"));
                    }
                } else {
                    assert!(
                        status.is_success()
                            || status == StatusCode::CONFLICT
                            || status == StatusCode::UNPROCESSABLE_ENTITY,
                        "{via} of own {id}: {status} {body}"
                    );
                    if via == "edit" && status.is_success() {
                        w.own(owner, body["id"].as_str().unwrap().to_string());
                    }
                }
            }
            // Forgetting and maintenance of one user leave every other user as it was.
            16 => {
                let other = ((t + 1 + rng.below(TENANTS.len() - 1)) % TENANTS.len(), rng.below(USERS.len()));
                let before = w.fingerprint(other).await;
                if rng.below(2) == 0 {
                    clock.advance(chrono::Duration::days(20));
                    let (status, body) = w
                        .rest(
                            "POST",
                            &format!("/v1/users/{user}/sweep"),
                            &key,
                            Some(json!({ "max_archive_fraction": 0.2 })),
                        )
                        .await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                    let ids: Vec<String> = body["archived"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a["id"].as_str().unwrap().to_string())
                        .collect();
                    w.only_own(owner, "sweep", ids);
                } else {
                    let (status, body) = w.rest("POST", &format!("/v1/users/{user}/maintain"), &key, None).await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                    w.adopt_new(owner).await;
                }
                let after = w.fingerprint(other).await;
                if after != before {
                    w.violation(format!("sweep or maintenance of {owner:?} changed {other:?}"));
                }
            }
            // Keys: another tenant by header; a bound key for another user; the admin key.
            17 => {
                let other = TENANTS[(t + 1) % TENANTS.len()];
                let (status, _) = w
                    .transport
                    .call(
                        "GET",
                        &format!("/v1/users/{user}/memories"),
                        Some(&key),
                        &[("x-membank-tenant", other)],
                        None,
                    )
                    .await;
                w.rest_ops += 1;
                if status != StatusCode::FORBIDDEN {
                    w.violation(format!("tenant key of {t} read tenant {other} by header: {status}"));
                }
            }
            18 => {
                let bound = w.bound_keys[t].clone();
                if u != BOUND {
                    let (status, _) = w.rest("GET", &format!("/v1/users/{user}/memories"), &bound, None).await;
                    if status != StatusCode::FORBIDDEN {
                        w.violation(format!("key bound to {} of {t} read {user}: {status}", USERS[BOUND]));
                    }
                    w.mcp_ops += 1;
                    let mut s = TransportMcp::open(&w.transport, Some(&bound), Some(user)).await;
                    let (err, out) = s.tool("recall", json!({ "query": format!("likes {word}") })).await;
                    if !(err && out.contains("only act for user")) {
                        w.violation(format!("MCP with a key bound to {} of {t} acted for {user}: {out}", USERS[BOUND]));
                    }
                } else {
                    let listed: HashSet<String> = w
                        .list_all(owner, &bound, &[])
                        .await
                        .iter()
                        .map(|m| m["id"].as_str().unwrap().to_string())
                        .collect();
                    let mine = w.owned.get(&owner).cloned().unwrap_or_default();
                    if listed != mine {
                        w.violation(format!("bound key's list of {owner:?} differs from the model"));
                    }
                }
            }
            _ => {
                // The admin key names the tenant by header and sees exactly that user.
                let admin = w.admin_key.clone();
                let listed: HashSet<String> = w
                    .list_all(owner, &admin, &[("x-membank-tenant", TENANTS[t])])
                    .await
                    .iter()
                    .map(|m| m["id"].as_str().unwrap().to_string())
                    .collect();
                let mine = w.owned.get(&owner).cloned().unwrap_or_default();
                if listed != mine {
                    w.violation(format!("admin list of {owner:?} (by header) differs from the model"));
                }
            }
        }
    }
    // Finally, each user whole: export, list and events against the model.
    for t in 0..TENANTS.len() {
        for u in 0..USERS.len() {
            w.full_check((t, u)).await;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let memories = w.owner_of.len();
    println!(
        "isolation: {ops} operations ({} REST requests, {} MCP tool calls) over {} tenants x {} users, {memories} memories, transport {}, seed {seed:#x}, {seconds:.1} s, {} violations",
        w.rest_ops,
        w.mcp_ops,
        TENANTS.len(),
        USERS.len(),
        if socket { "127.0.0.1 socket" } else { "in-process router" },
        w.violations.len()
    );
    assert!(
        w.violations.is_empty(),
        "{} isolation violations, first: {:?}",
        w.violations.len(),
        &w.violations[..w.violations.len().min(5)]
    );
    assert!(memories > ops / 10, "{memories} memories after {ops} operations");
    if let Some((tx, handle)) = stop {
        let _ = tx.send(());
        handle.await.unwrap().unwrap();
    }
    assert!(server.store.integrity_check().unwrap().is_empty());
}
