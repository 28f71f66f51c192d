//! Helpers: a state over a temporary database, requests through `oneshot`, keys.
//! [`Transport`] and [`TransportMcp`] say the same over a loopback socket to the real server.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use membank_embed::HashEmbedder;
use membank_engine::Engine;
use membank_engine::core::{Clock, SystemClock, TenantId};
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use membank_store::SqliteStore;
use serde_json::Value;
use tower::ServiceExt;

pub struct TestServer {
    pub state: AppState,
    pub store: Arc<SqliteStore>,
    pub _dir: tempfile::TempDir,
}

impl TestServer {
    pub fn new(auth: AuthMode) -> Self {
        Self::with(auth, |_| {})
    }

    pub fn with(auth: AuthMode, adjust: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::with_clock(auth, Arc::new(SystemClock), adjust)
    }

    /// A server whose engine reads `clock` (a `ManualClock` in tests that move time).
    pub fn with_clock(auth: AuthMode, clock: Arc<dyn Clock>, adjust: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::with_engine(auth, clock, membank_engine::EngineConfig::default(), adjust)
    }

    /// A server on `clock` whose engine runs the paper's curve on a three-day unit
    /// (importance weight 0, every recall adding 1), for tests that pin its arithmetic.
    pub fn paper_curve(auth: AuthMode, clock: Arc<dyn Clock>) -> Self {
        let forgetting = membank_engine::core::forgetting::ForgettingPolicy {
            unit: chrono::Duration::days(3),
            importance_weight: 0.0,
            spaced_recall: false,
            ..Default::default()
        };
        Self::with_engine(auth, clock, membank_engine::EngineConfig { forgetting, ..Default::default() }, |_| {})
    }

    /// A server on `clock` with `engine` as the engine's configuration.
    pub fn with_engine(
        auth: AuthMode,
        clock: Arc<dyn Clock>,
        engine: membank_engine::EngineConfig,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        // On tmpfs when there is one: these tests are about behaviour, not durability,
        // and a per-commit fsync on a shared disk would make them slow for nothing.
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() };
        let store = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
        let engine = Arc::new(Engine::new(store.clone(), Arc::new(HashEmbedder::new(64)), clock, engine).unwrap());
        let mut config = ServerConfig::new(TenantId::new("default").unwrap(), auth);
        config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
        adjust(&mut config);
        Self { state: AppState::new(engine, store.clone(), config), store, _dir: dir }
    }

    pub fn router(&self) -> Router {
        membank_server::router(self.state.clone())
    }

    /// Creates a key; returns the secret.
    pub fn key(&self, tenant: &str, user: Option<&str>, admin: bool) -> String {
        let user = user.map(|u| membank_engine::core::UserId::new(u).unwrap());
        membank_server::keys::create_key(
            self.store.as_ref(),
            TenantId::new(tenant).unwrap(),
            user,
            admin,
            None,
            chrono::Utc::now(),
        )
        .unwrap()
        .key
    }
}

/// A request builder with the usual headers.
pub fn request(method: &str, path: &str, key: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    match body {
        Some(body) => builder.header("content-type", "application/json").body(Body::from(body.to_string())).unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

/// Sends one request through the router; returns status and JSON (or `Value::Null`).
pub async fn send(app: &Router, req: Request<Body>) -> (StatusCode, Value) {
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024 * 1024).await.unwrap();
    (status, decode(&bytes))
}

/// A body as JSON: a JSON document, or a membank-export (JSON Lines) read into one object
/// `{"header", "tenant", "user", "memories": [...], "events": [...], "end"}` (the first
/// user's tenant and name), or `Value::Null`.
pub fn decode(bytes: &[u8]) -> Value {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return value;
    }
    let Ok(text) = std::str::from_utf8(bytes) else { return Value::Null };
    let lines: Result<Vec<Value>, _> =
        text.lines().filter(|l| !l.is_empty()).map(serde_json::from_str::<Value>).collect();
    let Ok(lines) = lines else { return Value::Null };
    if lines.first().is_none_or(|h| h["format"] != "membank-export") {
        return Value::Null;
    }
    let user = lines.iter().find(|l| l["type"] == "user");
    serde_json::json!({
        "header": lines[0],
        "tenant": user.map(|u| u["tenant"].clone()).unwrap_or(Value::Null),
        "user": user.map(|u| u["user"].clone()).unwrap_or(Value::Null),
        "memories": lines.iter().filter(|l| l["type"] == "memory").collect::<Vec<_>>(),
        "events": lines.iter().filter(|l| l["type"] == "event").collect::<Vec<_>>(),
        "end": lines.iter().find(|l| l["type"] == "end"),
    })
}

pub async fn call(
    app: &Router,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(app, request(method, path, key, body.as_ref())).await
}

/// Asserts the error shape and code.
pub fn assert_error(result: &(StatusCode, Value), status: StatusCode, code: &str) {
    assert_eq!(result.0, status, "body: {}", result.1);
    assert_eq!(result.1["error"]["code"], code, "body: {}", result.1);
    let message = result.1["error"]["message"].as_str().expect("message");
    assert!(!message.is_empty());
    for leak in ["SELECT", "sqlite", "panicked", "rusqlite", "/tmp/"] {
        assert!(!message.contains(leak), "message leaks internals: {message}");
    }
}

/// A raw MCP (streamable HTTP) session through the router, for in-process tests.
pub struct McpSession {
    app: Router,
    key: Option<String>,
    user: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl McpSession {
    pub async fn open(app: &Router, key: Option<&str>, user: Option<&str>) -> Self {
        let mut s = Self {
            app: app.clone(),
            key: key.map(str::to_string),
            user: user.map(str::to_string),
            session: None,
            next_id: 1,
        };
        let init = s
            .rpc("initialize", serde_json::json!({ "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "membank-test", "version": "0" } }))
            .await;
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        s.notify("notifications/initialized").await;
        s
    }

    fn base(&self, body: String) -> Request<Body> {
        let mut b = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("host", "127.0.0.1");
        if let Some(key) = &self.key {
            b = b.header("authorization", format!("Bearer {key}"));
        }
        if let Some(user) = &self.user {
            b = b.header("x-membank-user", user.as_str());
        }
        if let Some(session) = &self.session {
            b = b.header("mcp-session-id", session.as_str());
        }
        b.body(Body::from(body)).unwrap()
    }

    async fn notify(&mut self, method: &str) {
        let body = serde_json::json!({ "jsonrpc": "2.0", "method": method }).to_string();
        let response = self.app.clone().oneshot(self.base(body)).await.unwrap();
        assert!(response.status().is_success(), "{method}: {}", response.status());
    }

    /// One JSON-RPC request; returns the response message.
    pub async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        let response = self.app.clone().oneshot(self.base(body)).await.unwrap();
        let status = response.status();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_string());
        }
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20).await.unwrap();
        let text = String::from_utf8_lossy(&bytes).to_string();
        if !status.is_success() {
            return serde_json::json!({ "http_status": status.as_u16(), "body": text });
        }
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            return v;
        }
        for line in text.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && v["id"] == id
            {
                return v;
            }
        }
        panic!("no response to {method} in {text:?}");
    }

    /// Calls a tool; returns (is_error, text of all content blocks).
    pub async fn tool(&mut self, name: &str, arguments: Value) -> (bool, String) {
        let v = self.rpc("tools/call", serde_json::json!({ "name": name, "arguments": arguments })).await;
        if v.get("http_status").is_some() {
            return (true, v.to_string());
        }
        let result = &v["result"];
        if result.is_null() {
            return (true, v["error"].to_string());
        }
        let text = result["content"]
            .as_array()
            .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (result["isError"] == true, text)
    }
}

/// A small deterministic generator (xorshift64*), so randomised tests are reproducible by seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Where a test's requests go: through the router in-process (`oneshot`), or over HTTP to
/// the real server (`membank_server::serve`) on a loopback socket. Tests that run either
/// way (the randomised isolation test) say everything through this.
#[derive(Clone)]
pub enum Transport {
    Router(Router),
    Socket { client: reqwest::Client, base: String },
}

impl Transport {
    /// One request with the given headers; returns status, the `mcp-session-id` answered (if
    /// any) and the raw body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> (StatusCode, Option<String>, Vec<u8>) {
        match self {
            Transport::Router(app) => {
                let mut builder = Request::builder().method(method).uri(path).header("host", "127.0.0.1");
                for (name, value) in headers {
                    builder = builder.header(*name, *value);
                }
                let req = builder.body(body.map(Body::from).unwrap_or_else(Body::empty)).unwrap();
                let response = app.clone().oneshot(req).await.unwrap();
                let status = response.status();
                let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
                let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024 * 1024).await.unwrap();
                (status, session, bytes.to_vec())
            }
            Transport::Socket { client, base } => {
                let mut builder = client.request(method.parse().unwrap(), format!("{base}{path}"));
                for (name, value) in headers {
                    builder = builder.header(*name, *value);
                }
                if let Some(body) = body {
                    builder = builder.body(body);
                }
                let response = builder.send().await.unwrap();
                let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
                let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
                (status, session, response.bytes().await.unwrap().to_vec())
            }
        }
    }

    /// A REST call with an optional key and extra headers; returns status and JSON (or `Value::Null`).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        extra: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let auth = key.map(|k| format!("Bearer {k}"));
        let mut headers: Vec<(&str, &str)> = extra.to_vec();
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        if body.is_some() {
            headers.push(("content-type", "application/json"));
        }
        let (status, _, bytes) = self.send(method, path, &headers, body.map(|b| b.to_string())).await;
        (status, decode(&bytes))
    }
}

/// A raw MCP (streamable HTTP) session over a [`Transport`]; the same protocol steps as
/// [`McpSession`], which is tied to the router.
pub struct TransportMcp {
    transport: Transport,
    key: Option<String>,
    user: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl TransportMcp {
    pub async fn open(transport: &Transport, key: Option<&str>, user: Option<&str>) -> Self {
        let mut s = Self {
            transport: transport.clone(),
            key: key.map(str::to_string),
            user: user.map(str::to_string),
            session: None,
            next_id: 1,
        };
        let init = s
            .rpc("initialize", serde_json::json!({ "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "membank-test", "version": "0" } }))
            .await;
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        let (status, _) =
            s.post(serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string()).await;
        assert!(status.is_success(), "notifications/initialized: {status}");
        s
    }

    async fn post(&mut self, body: String) -> (StatusCode, String) {
        let auth = self.key.as_ref().map(|k| format!("Bearer {k}"));
        let mut headers = vec![("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        if let Some(user) = &self.user {
            headers.push(("x-membank-user", user.as_str()));
        }
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id", session.as_str()));
        }
        let (status, session, bytes) = self.transport.send("POST", "/mcp", &headers, Some(body)).await;
        if let Some(session) = session {
            self.session = Some(session);
        }
        (status, String::from_utf8_lossy(&bytes).to_string())
    }

    /// One JSON-RPC request; returns the response message.
    pub async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (status, text) = self
            .post(serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string())
            .await;
        if !status.is_success() {
            return serde_json::json!({ "http_status": status.as_u16(), "body": text });
        }
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            return v;
        }
        for line in text.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && v["id"] == id
            {
                return v;
            }
        }
        panic!("no response to {method} in {text:?}");
    }

    /// Calls a tool; returns (is_error, text of all content blocks).
    pub async fn tool(&mut self, name: &str, arguments: Value) -> (bool, String) {
        let v = self.rpc("tools/call", serde_json::json!({ "name": name, "arguments": arguments })).await;
        if v.get("http_status").is_some() {
            return (true, v.to_string());
        }
        let result = &v["result"];
        if result.is_null() {
            return (true, v["error"].to_string());
        }
        let text = result["content"]
            .as_array()
            .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (result["isError"] == true, text)
    }
}
