//! Fuzzes the REST request bodies through the real router, in-process, as the server's
//! tests call it (`oneshot`): the first byte picks an endpoint and the rest is its JSON
//! body (or, for the two listing endpoints, its query string). Deserialising into the
//! request types of `membank_server::rest::types`, their conversion into engine requests
//! and the engine's validation all run. The check: whatever the body, the answer is never
//! a 500 — a panic in a handler (e.g. the temporal parser on a `now` far in the past)
//! surfaces as one.
//!
//! The engine runs on a SQLite file in /dev/shm with the hashing embedder and a manual
//! clock (so runs are reproducible); the database is replaced every few thousand inputs so
//! the stored memories do not grow without bound.
#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use membank_embed::HashEmbedder;
use membank_engine::Engine;
use membank_engine::core::{ManualClock, TenantId};
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use membank_store::SqliteStore;
use tower::ServiceExt;

const FRESH_DATABASE_EVERY: u32 = 4000;
const MEMORY_ID: &str = "0190f5c2-7d2e-7b3a-9c4e-2f1a0b3c4d5e";

struct World {
    router: axum::Router,
    runtime: tokio::runtime::Runtime,
    uses: u32,
    _dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("temporary directory");
        let store = Arc::new(SqliteStore::open(dir.path().join("fuzz.db")).expect("store"));
        let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2024, 5, 1, 9, 0, 0).unwrap()));
        let engine = Arc::new(Engine::new(store.clone(), Arc::new(HashEmbedder::new(32)), clock, Default::default()).expect("engine"));
        let mut config = ServerConfig::new(TenantId::new("default").unwrap(), AuthMode::LoopbackOpen);
        config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
        config.maintenance.enabled = false;
        let router = membank_server::router(AppState::new(engine, store, config));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        Self { router, runtime, uses: 0, _dir: dir }
    }
}

thread_local! {
    static WORLD: RefCell<Option<World>> = const { RefCell::new(None) };
}

/// (method, path, whether the rest of the input is a JSON body rather than a query string)
const ENDPOINTS: &[(&str, &str, bool)] = &[
    ("POST", "/v1/users/ann/turns", true),
    ("POST", "/v1/users/ann/turns/batch", true),
    ("POST", "/v1/users/ann/notes", true),
    ("POST", "/v1/users/ann/recall", true),
    ("PATCH", "/v1/users/ann/memories/{id}", true),
    ("POST", "/v1/users/ann/memories/used", true),
    ("POST", "/v1/users/ann/sweep", true),
    ("POST", "/v1/users/ann/maintain", true),
    ("GET", "/v1/users/ann/memories", false),
    ("GET", "/v1/users/ann/events", false),
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let (method, path, json) = ENDPOINTS[first as usize % ENDPOINTS.len()];
    let path = path.replace("{id}", MEMORY_ID);
    let request = if json {
        Request::builder().method(method).uri(path).header("content-type", "application/json").body(Body::from(body.to_vec()))
    } else {
        let Ok(query) = std::str::from_utf8(body) else { return };
        Request::builder().method(method).uri(format!("{path}?{query}")).body(Body::empty())
    };
    let Ok(request) = request else { return };
    WORLD.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|w| w.uses >= FRESH_DATABASE_EVERY) {
            *slot = None;
            *slot = Some(World::new());
        }
        let world = slot.as_mut().expect("set above");
        world.uses += 1;
        let response = world.runtime.block_on(world.router.clone().oneshot(request)).expect("the router is infallible");
        let status = response.status();
        let bytes = world.runtime.block_on(axum::body::to_bytes(response.into_body(), usize::MAX)).expect("body");
        assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "{method} {}: {}", String::from_utf8_lossy(body), String::from_utf8_lossy(&bytes));
    });
});
