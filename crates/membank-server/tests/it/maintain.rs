//! Maintenance through the server: `POST /v1/users/{user}/maintain` (dry runs, archiving
//! by the curve, near-duplicate merging, bad bodies, scope), the background scheduler
//! driven by a manual clock (a cycle once a user is due, a year of days in a loop, after
//! N new turns, stopped by graceful shutdown), the maintenance metrics, and the explicit
//! `importance` field over REST and MCP.
//!
//! Waits on the background are bounded polls of a counter, never fixed sleeps: the clock
//! the scheduler reads is the test's, so only "has it happened yet" is asked of real time.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::{DateTime, Utc};
use membank_engine::core::ManualClock;
use membank_engine::core::forgetting::{DecisionMode, ForgettingState, PolicyKind, Strength, retention};
use membank_server::{AuthMode, MaintenanceConfig};
use serde_json::{Value, json};

use crate::support::*;

/// Where every manual clock here starts.
fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2024-05-01T09:00:00Z").unwrap().with_timezone(&Utc)
}

fn at(value: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(value.as_str().unwrap_or_else(|| panic!("not a time: {value}")))
        .unwrap()
        .with_timezone(&Utc)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    membank_server::wire::rfc3339(t)
}

/// A server on the manual clock; `maintenance` adjusts the background settings.
fn server(clock: &Arc<ManualClock>, auth: AuthMode, maintenance: impl FnOnce(&mut MaintenanceConfig)) -> TestServer {
    TestServer::with_clock(auth, clock.clone(), |config| maintenance(&mut config.maintenance))
}

async fn note(app: &axum::Router, key: Option<&str>, user: &str, text: &str) -> String {
    let (status, body) =
        call(app, "POST", &format!("/v1/users/{user}/notes"), key, Some(json!({ "text": text }))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_string()
}

async fn events(app: &axum::Router, key: Option<&str>, user: &str) -> Vec<Value> {
    let (status, body) = call(app, "GET", &format!("/v1/users/{user}/events?limit=10000"), key, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["events"].as_array().unwrap().clone()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The value of an unlabelled sample in the Prometheus text at `/metrics`.
async fn metric(app: &axum::Router, name: &str) -> f64 {
    let response =
        tower::ServiceExt::oneshot(app.clone(), Request::builder().uri("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
    let text = String::from_utf8(axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
        .parse()
        .unwrap()
}

/// Waits until the background has applied at least `n` cycles in all. The bound only
/// keeps a broken scheduler from hanging the run; nothing is asserted about speed.
async fn cycles_reach(server: &TestServer, n: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while server.state.metrics().maintenance_cycles.load(Ordering::Relaxed) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the scheduler did not reach {n} cycles (at {})",
            server.state.metrics().maintenance_cycles.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The real server over a loopback socket with a stop switch.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), membank_server::ServeError>>,
}

async fn run(server: &TestServer) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));
    Running { stop, handle }
}

impl Running {
    /// Signals shutdown; the serve future must return (bounded, as above).
    async fn shut_down(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .expect("serve returns after the shutdown signal")
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn a_dry_run_changes_nothing_and_a_real_run_archives_what_the_curve_says() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |_| {});
    let app = server.router();
    let id = note(&app, None, "alice", "Alice's old locker code was 4512").await;
    let two_months_later = rfc3339(start() + chrono::Duration::days(60));

    let (status, dry) =
        call(&app, "POST", "/v1/users/alice/maintain", None, Some(json!({ "now": two_months_later, "dry_run": true })))
            .await;
    assert_eq!(status, StatusCode::OK, "{dry}");
    assert_eq!(
        (dry["dry_run"].clone(), dry["policy"].clone(), dry["examined"].clone(), dry["archived"].clone()),
        (json!(true), json!("memorybank"), json!(1), json!(1)),
        "{dry}"
    );
    assert_eq!(dry["archived_memories"][0]["id"], id.as_str());
    let (_, list) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(
        (list["counts"]["active"].clone(), list["counts"]["archived"].clone()),
        (json!(1), json!(0)),
        "a dry run changes nothing: {list}"
    );
    assert!(
        of_kind(&events(&app, None, "alice").await, "maintained").is_empty(),
        "a dry run leaves no cycle in the log"
    );
    assert_eq!(metric(&app, "membank_maintenance_cycles_total").await, 0.0, "a dry run is not a cycle");

    // A cycle that writes runs at most a day ahead of the server's clock: move the clock.
    clock.set(start() + chrono::Duration::days(60));
    let (status, real) =
        call(&app, "POST", "/v1/users/alice/maintain", None, Some(json!({ "now": two_months_later }))).await;
    assert_eq!(status, StatusCode::OK, "{real}");
    assert_eq!(
        (real["user"].clone(), real["dry_run"].clone(), real["archived"].clone()),
        (json!("alice"), json!(false), json!(1)),
        "{real}"
    );
    assert_eq!(at(&real["now"]), start() + chrono::Duration::days(60));
    let archived = &real["archived_memories"][0];
    assert_eq!(archived["id"], id.as_str());
    // exp(-t/S) with t in the policy's units and S the effective strength, S = 1 with the
    // importance weighed in (the default's form): below the default θ = 0.05.
    let policy = server.state.engine().config().forgetting;
    let units = 60.0 * 86_400.0 / policy.unit.num_seconds() as f64;
    let (_, stored) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), None, None).await;
    let s = effective(&policy, 1.0, stored["base_importance"].as_f64().unwrap());
    assert!((archived["S"].as_f64().unwrap() - s).abs() < 1e-9, "{archived}");
    assert!((archived["R"].as_f64().unwrap() - (-units / s).exp()).abs() < 1e-9, "{archived}");
    assert!(archived["R"].as_f64().unwrap() < 0.05, "{archived}");
    let (_, memory) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), None, None).await;
    assert_eq!(memory["status"], "archived");
    let log = events(&app, None, "alice").await;
    assert_eq!(of_kind(&log, "maintained").len(), 1);
    assert!(of_kind(&log, "archived").iter().any(|e| e["memory_id"] == id.as_str()));
    assert_eq!(metric(&app, "membank_maintenance_cycles_total").await, 1.0);
    assert_eq!(metric(&app, "membank_maintenance_archived_total").await, 1.0);
    assert_eq!(metric(&app, "membank_maintenance_failures_total").await, 0.0);
    // The gauge reads the engine's clock when the cycle ended, not the machine's.
    assert_eq!(
        metric(&app, "membank_maintenance_last_cycle_timestamp_seconds").await,
        (start() + chrono::Duration::days(60)).timestamp() as f64
    );
}

#[tokio::test]
async fn a_near_duplicate_pair_merges_into_the_newer_copy() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |_| {});
    let app = server.router();
    let older = note(&app, None, "alice", "Alice's sister Mia lives in Lisbon").await;
    clock.advance(chrono::Duration::minutes(1));
    let newer = note(&app, None, "alice", "Alice's sister Mia lives in Lisbon").await;
    // No body at all: a real cycle at the engine's time.
    let (status, report) = call(&app, "POST", "/v1/users/alice/maintain", None, None).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        (report["examined"].clone(), report["merged"].clone(), report["archived"].clone()),
        (json!(2), json!(1), json!(0)),
        "{report}"
    );
    assert_eq!((report["merges"][0]["id"].clone(), report["merges"][0]["by"].clone()), (json!(older), json!(newer)));
    let (_, old) = call(&app, "GET", &format!("/v1/users/alice/memories/{older}"), None, None).await;
    assert_eq!(old["status"], "superseded", "{old}");
    let (_, new) = call(&app, "GET", &format!("/v1/users/alice/memories/{newer}"), None, None).await;
    assert_eq!(new["status"], "active", "{new}");
    assert_eq!(metric(&app, "membank_maintenance_merged_total").await, 1.0);
}

#[tokio::test]
async fn bad_maintain_bodies_are_refused_in_the_error_shape_and_change_nothing() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |_| {});
    let app = server.router();
    note(&app, None, "alice", "Alice plays the violin").await;
    for body in [
        json!({ "now": "yesterday" }),
        json!({ "now": 5 }),
        json!({ "dry_run": "yes" }),
        json!({ "dryrun": true }),
        json!([]),
        json!("now"),
        json!(1),
        Value::Null,
    ] {
        assert_error(
            &call(&app, "POST", "/v1/users/alice/maintain", None, Some(body.clone())).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
    }
    // Malformed JSON is a 400, as on every route.
    assert_error(&send(&app, raw("{", Some("application/json"))).await, StatusCode::BAD_REQUEST, "bad_request");
    assert_error(
        &send(&app, raw("{\"dry_run\": true}", None)).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );
    let too_large = TestServer::with_clock(AuthMode::LoopbackOpen, clock.clone(), |c| c.limits.body_bytes = 64);
    let padded = format!("{{\"now\": \"{}\"}}", " ".repeat(100));
    assert_error(
        &send(&too_large.router(), raw(padded, Some("application/json"))).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    // A bad user path is refused before anything runs.
    assert_error(
        &call(&app, "POST", "/v1/users/%20/maintain", None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    assert!(of_kind(&events(&app, None, "alice").await, "maintained").is_empty(), "no refused request ran a cycle");
    // An empty body with a JSON content type is no body: a real cycle.
    let (status, report) = send(&app, raw("", Some("application/json"))).await;
    assert_eq!((status, report["dry_run"].clone()), (StatusCode::OK, json!(false)), "{report}");
}

/// A `POST /v1/users/alice/maintain` with this exact body and content type.
fn raw(body: impl Into<Body>, content_type: Option<&str>) -> Request<Body> {
    let mut builder = Request::builder().method("POST").uri("/v1/users/alice/maintain");
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    builder.body(body.into()).unwrap()
}

#[tokio::test]
async fn maintain_acts_only_in_the_callers_scope() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::Keys, |_| {});
    let app = server.router();
    let alice_key = server.key("acme", Some("alice"), false);
    let acme = server.key("acme", None, false);
    let other_tenant = server.key("globex", None, false);
    let id = note(&app, Some(&acme), "alice", "Alice's old locker code was 4512").await;
    note(&app, Some(&acme), "bob", "Bob's old locker code was 7781").await;
    let later = json!({ "now": rfc3339(start() + chrono::Duration::days(60)) });
    // Writes run at most a day ahead of the server's clock.
    clock.set(start() + chrono::Duration::days(60));

    assert_error(
        &call(&app, "POST", "/v1/users/bob/maintain", Some(&alice_key), Some(later.clone())).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(&app, "POST", "/v1/users/alice/maintain", None, Some(later.clone())).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // Another tenant's "alice" is nobody: nothing examined, nothing created.
    let (status, report) =
        call(&app, "POST", "/v1/users/alice/maintain", Some(&other_tenant), Some(later.clone())).await;
    assert_eq!(
        (status, report["examined"].clone(), report["archived"].clone()),
        (StatusCode::OK, json!(0), json!(0)),
        "{report}"
    );
    let (_, users) = call(&app, "GET", "/v1/users", Some(&other_tenant), None).await;
    assert_eq!(users["users"], json!([]), "maintaining an unknown user creates none");
    let (_, memory) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), Some(&acme), None).await;
    assert_eq!(memory["status"], "active");
    // Alice's own key maintains alice, and only alice.
    let (status, report) = call(&app, "POST", "/v1/users/alice/maintain", Some(&alice_key), Some(later)).await;
    assert_eq!((status, report["archived"].clone()), (StatusCode::OK, json!(1)), "{report}");
    let (_, bob) = call(&app, "GET", "/v1/users/bob/memories", Some(&acme), None).await;
    assert_eq!(bob["counts"]["active"], 1, "bob is untouched: {bob}");
}

#[tokio::test]
async fn the_openapi_document_has_the_maintain_route_and_the_importance_field() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let (status, doc) = call(&server.router(), "GET", "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let post = &doc["paths"]["/v1/users/{user}/maintain"]["post"];
    assert!(post.is_object(), "maintain is documented");
    assert_ne!(post["requestBody"]["required"], json!(true), "its body is optional: {post}");
    assert!(
        post["responses"]["200"].is_object()
            && post["responses"]["422"].is_object()
            && post["responses"]["403"].is_object()
    );
    assert!(doc["components"]["schemas"]["MaintainOut"].is_object());
    for schema in ["TurnIn", "NoteIn"] {
        let importance = &doc["components"]["schemas"][schema]["properties"]["importance"];
        assert_eq!(
            (importance["minimum"].as_f64(), importance["maximum"].as_f64()),
            (Some(0.0), Some(1.0)),
            "{schema}: {importance}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_runs_a_cycle_once_a_user_is_due_and_shows_it() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |m| m.tick = Duration::from_millis(2));
    let app = server.router();
    note(&app, None, "alice", "Alice plays the violin").await;
    let running = run(&server).await;
    clock.advance(chrono::Duration::days(2));
    cycles_reach(&server, 1).await;
    // Requests are served while the scheduler runs.
    let (status, _) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let log = events(&app, None, "alice").await;
    let maintained = of_kind(&log, "maintained");
    assert!(!maintained.is_empty(), "the cycle is in the event log");
    assert_eq!(at(&maintained[0]["at"]), start() + chrono::Duration::days(2), "at the engine's time");
    assert!(metric(&app, "membank_maintenance_cycles_total").await >= 1.0);
    assert_eq!(
        metric(&app, "membank_maintenance_last_cycle_timestamp_seconds").await,
        (start() + chrono::Duration::days(2)).timestamp() as f64
    );
    running.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_year_of_days_archives_each_memory_on_the_day_its_curve_falls_below_theta() {
    let clock = Arc::new(ManualClock::new(start()));
    // Due half a day after the last cycle, so each day the clock moves makes one cycle.
    let server = server(&clock, AuthMode::LoopbackOpen, |m| {
        m.interval = Duration::from_secs(12 * 3600);
        m.tick = Duration::from_millis(1);
    });
    let app = server.router();
    let forgotten = note(&app, None, "alice", "Alice parked on level 3 of the garage").await;
    let recalled = note(&app, None, "alice", "Alice bought bread at the Elm Street bakery").await;
    let pinned = note(&app, None, "alice", "Alice is allergic to peanuts").await;
    let (status, _) = call(&app, "POST", &format!("/v1/users/alice/memories/{pinned}/pin"), None, None).await;
    assert_eq!(status, StatusCode::OK);
    // The next day (a recall the day a memory was made adds no strength): the year runs from
    // there.
    let base = start() + chrono::Duration::days(1);
    clock.set(base);
    let (_, hits) =
        call(&app, "POST", "/v1/users/alice/recall", None, Some(json!({ "query": "bread Elm Street bakery", "k": 1 })))
            .await;
    assert_eq!(hits["results"][0]["id"], recalled.as_str(), "{hits}");

    // The day each should go, from the engine's curve itself: the first whole day on which
    // exp(-t/S) is below θ, t counted from its last recall in the policy's units.
    let policy = server.state.engine().config().forgetting;
    assert_eq!(policy.kind, PolicyKind::MemoryBank, "the default policy");
    let DecisionMode::Threshold { theta } = policy.mode else { panic!("the default policy decides by threshold") };
    let unit_ms = policy.unit.num_milliseconds() as f64;
    let mut expected = Vec::new();
    for id in [&forgotten, &recalled] {
        let (_, memory) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), None, None).await;
        // The effective strength (the default weighs importance in).
        let strength = Strength::new(effective(
            &policy,
            memory["strength"].as_f64().unwrap(),
            memory["base_importance"].as_f64().unwrap(),
        ))
        .unwrap();
        let last = at(&memory["last_recalled_at"]);
        let day = (1..=365)
            .find(|&d| {
                retention((base + chrono::Duration::days(d) - last).num_milliseconds() as f64 / unit_ms, strength)
                    < theta
            })
            .unwrap();
        expected.push((id.clone(), base + chrono::Duration::days(day)));
    }
    assert!(expected[0].1 < expected[1].1, "the recalled memory lasts longer: {expected:?}");

    let running = run(&server).await;
    for day in 1..=365u64 {
        clock.advance(chrono::Duration::days(1));
        cycles_reach(&server, day).await;
    }
    running.shut_down().await;

    let log = events(&app, None, "alice").await;
    let maintained = of_kind(&log, "maintained");
    assert_eq!(maintained.len(), 365, "one cycle a day");
    assert_eq!(at(&maintained[364]["at"]), base + chrono::Duration::days(365));
    for (id, day) in &expected {
        let archived = of_kind(&log, "archived")
            .into_iter()
            .filter(|e| e["memory_id"] == id.as_str())
            .map(|e| at(&e["at"]))
            .collect::<Vec<_>>();
        assert_eq!(archived, [*day], "{id} is archived once, on the day its curve says");
    }
    let (_, kept) = call(&app, "GET", &format!("/v1/users/alice/memories/{pinned}"), None, None).await;
    assert_eq!(kept["status"], "active", "a pinned memory outlives the year");
    assert_eq!(metric(&app, "membank_maintenance_cycles_total").await, 365.0);
    assert_eq!(metric(&app, "membank_maintenance_archived_total").await, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_n_turns_makes_a_user_due_before_the_interval() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |m| {
        m.every_turns = Some(3);
        m.tick = Duration::from_millis(2);
    });
    let app = server.router();
    note(&app, None, "alice", "Alice plays the violin").await;
    let running = run(&server).await;
    clock.advance(chrono::Duration::days(2));
    cycles_reach(&server, 1).await;
    // The clock stands still: only the turns can make alice due again.
    for n in 0..3 {
        let (status, body) = call(
            &app,
            "POST",
            "/v1/users/alice/turns",
            None,
            Some(json!({ "user_text": format!("practice session {n} went well") })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    cycles_reach(&server, 2).await;
    running.shut_down().await;
    assert_eq!(of_kind(&events(&app, None, "alice").await, "maintained").len(), 2);
}

#[tokio::test]
async fn graceful_shutdown_stops_the_scheduler() {
    let clock = Arc::new(ManualClock::new(start()));
    let server = server(&clock, AuthMode::LoopbackOpen, |m| m.tick = Duration::from_millis(1));
    let app = server.router();
    note(&app, None, "alice", "Alice plays the violin").await;
    // The scheduler alone: cancelled, its task ends.
    let stop = tokio_util::sync::CancellationToken::new();
    let handle = membank_server::maintenance::spawn(server.state.clone(), stop.clone()).expect("enabled by default");
    clock.advance(chrono::Duration::days(2));
    cycles_reach(&server, 1).await;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(30), handle).await.expect("the scheduler exits when cancelled").unwrap();
    // Through serve: the future returns after the signal although maintenance is on
    // (serve returns only once its scheduler has exited).
    run(&server).await.shut_down().await;
    // Disabled, no scheduler is started at all.
    let off = TestServer::with_clock(AuthMode::LoopbackOpen, clock.clone(), |c| c.maintenance.enabled = false);
    assert!(
        membank_server::maintenance::spawn(off.state.clone(), tokio_util::sync::CancellationToken::new()).is_none()
    );
}

#[tokio::test]
async fn an_explicit_importance_is_stored_and_checked() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let (status, stored) = call(
        &app,
        "POST",
        "/v1/users/alice/notes",
        None,
        Some(json!({ "text": "Alice's passport expires in June", "importance": 0.8 })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    let (_, shown) =
        call(&app, "GET", &format!("/v1/users/alice/memories/{}", stored["id"].as_str().unwrap()), None, None).await;
    assert_eq!(
        (shown["importance"].clone(), shown["base_importance"].clone(), shown["metadata"]["importance_source"].clone()),
        (json!(0.8), json!(0.8), json!("explicit")),
        "{shown}"
    );
    let (status, turn) = call(
        &app,
        "POST",
        "/v1/users/alice/turns",
        None,
        Some(json!({ "user_text": "I start the new job on Monday", "importance": 0.8 })),
    )
    .await;
    assert_eq!(
        (status, turn["base_importance"].clone(), turn["metadata"]["importance_source"].clone()),
        (StatusCode::CREATED, json!(0.8), json!("explicit")),
        "{turn}"
    );
    let (_, estimated) =
        call(&app, "POST", "/v1/users/alice/notes", None, Some(json!({ "text": "Alice had tea" }))).await;
    assert_eq!(estimated["metadata"]["importance_source"], "estimator", "{estimated}");

    for bad in [json!(1.5), json!(-1), json!("high"), json!(true)] {
        assert_error(
            &call(
                &app,
                "POST",
                "/v1/users/bob/notes",
                None,
                Some(json!({ "text": "Bob likes tea", "importance": bad.clone() })),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
        assert_error(
            &call(
                &app,
                "POST",
                "/v1/users/bob/turns",
                None,
                Some(json!({ "user_text": "I like tea", "importance": bad.clone() })),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
        // A batch with one bad turn stores none of it.
        let batch = json!({ "turns": [{ "user_text": "I like tea", "importance": 0.5 }, { "user_text": "I like coffee", "importance": bad }] });
        assert_error(
            &call(&app, "POST", "/v1/users/bob/turns/batch", None, Some(batch)).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
    }
    // JSON has no NaN or infinity; a number too large for a double fails in the JSON parser,
    // which answers 400 as for any malformed body.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/users/bob/notes")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"text": "Bob likes tea", "importance": 1e999}"#))
        .unwrap();
    assert_error(&send(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
    let (_, bob) = call(&app, "GET", "/v1/users/bob/memories", None, None).await;
    assert_eq!(bob["counts"]["active"], 0, "nothing refused was stored: {bob}");
    let (status, batch) = call(
        &app,
        "POST",
        "/v1/users/bob/turns/batch",
        None,
        Some(json!({ "turns": [{ "user_text": "I like tea", "importance": 0.25 }, { "user_text": "I like coffee" }] })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    assert_eq!(
        (
            batch["memories"][0]["base_importance"].clone(),
            batch["memories"][1]["metadata"]["importance_source"].clone()
        ),
        (json!(0.25), json!("estimator"))
    );
}

#[tokio::test]
async fn mcp_remember_takes_an_importance_in_range_only() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let mut session = McpSession::open(&app, None, Some("alice")).await;
    let tools = session.rpc("tools/list", json!({})).await;
    let remember =
        tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "remember").unwrap().clone();
    let importance = &remember["inputSchema"]["properties"]["importance"];
    assert_eq!(
        (importance["minimum"].as_f64(), importance["maximum"].as_f64()),
        (Some(0.0), Some(1.0)),
        "the model sees the range: {importance}"
    );
    for bad in [json!(2), json!(-0.5), json!("high")] {
        let (is_error, text) =
            session.tool("remember", json!({ "text": "Alice's passport expires in June", "importance": bad })).await;
        assert!(is_error, "importance {bad} is refused: {text}");
    }
    let (is_error, text) =
        session.tool("remember", json!({ "text": "Alice's passport expires in June", "importance": 0.3 })).await;
    assert!(!is_error, "{text}");
    let (_, list) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    let memories = list["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 1, "only the valid call stored: {list}");
    assert_eq!(
        (memories[0]["base_importance"].clone(), memories[0]["metadata"]["importance_source"].clone()),
        (json!(0.3), json!("explicit"))
    );
}

#[tokio::test]
async fn one_maintenance_cycle_per_user_at_a_time_a_second_gets_409() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    for user in ["ana", "bob"] {
        let stored =
            call(&app, "POST", &format!("/v1/users/{user}/notes"), None, Some(serde_json::json!({ "text": "a note" })))
                .await;
        assert_eq!(stored.0, StatusCode::CREATED, "{}", stored.1);
    }
    let scope = |user: &str| {
        membank_engine::core::Scope::user(
            membank_engine::core::TenantId::new("default").unwrap(),
            membank_engine::core::UserId::new(user).unwrap(),
        )
    };
    // A cycle is running for ana (held here as the scheduler or another request would).
    let held = server.state.begin_maintenance(&scope("ana")).expect("nothing runs yet");
    assert!(server.state.begin_maintenance(&scope("ana")).is_none(), "a second reservation for ana");
    let busy = call(&app, "POST", "/v1/users/ana/maintain", None, Some(serde_json::json!({ "dry_run": true }))).await;
    assert_error(&busy, StatusCode::CONFLICT, "conflict");
    assert!(busy.1["error"]["message"].as_str().unwrap().contains("running already"), "{}", busy.1);
    // Another user is not held up.
    let other = call(&app, "POST", "/v1/users/bob/maintain", None, Some(serde_json::json!({ "dry_run": true }))).await;
    assert_eq!(other.0, StatusCode::OK, "{}", other.1);
    drop(held);
    let done = call(&app, "POST", "/v1/users/ana/maintain", None, Some(serde_json::json!({ "dry_run": true }))).await;
    assert_eq!(done.0, StatusCode::OK, "{}", done.1);
    // Concurrent requests for one user: each is done or told to wait, never run twice at once.
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            call(&app, "POST", "/v1/users/ana/maintain", None, Some(serde_json::json!({ "dry_run": true }))).await.0
        }));
    }
    for task in tasks {
        let status = task.await.unwrap();
        assert!(status == StatusCode::OK || status == StatusCode::CONFLICT, "{status}");
    }
    assert!(server.state.begin_maintenance(&scope("ana")).is_some(), "every reservation was released");
}

/// The strength the policy's curve decays by for a memory of strength `s` and base
/// importance `importance`.
fn effective(policy: &membank_engine::core::ForgettingPolicy, s: f64, importance: f64) -> f64 {
    let state = ForgettingState {
        strength: Strength::new(s).unwrap(),
        base_importance: importance,
        ..ForgettingState::new(chrono::DateTime::UNIX_EPOCH)
    };
    policy.effective_strength(&state).get()
}
