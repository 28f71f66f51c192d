//! What the web app stands on: its page and assets (content types, CSP, compression,
//! caching), `/v1/about`, a memory's forgetting curve replayed from its log, a user's
//! counts over time, and the streamed chat — each with its bad input.

use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::{Duration, TimeZone, Utc};
use membank_engine::Engine;
use membank_engine::core::{Clock, ManualClock, SystemClock, TenantId};
use membank_llm::OpenAiChatConfig;
use membank_llm::stub::{Reply, StubServer};
use membank_server::{AppState, AuthMode, ServerConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::*;

/// Status, headers and raw body of one request.
async fn raw(app: &axum::Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut builder = Request::builder().method("GET").uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = app.clone().oneshot(builder.body(Body::empty()).unwrap()).await.unwrap();
    let (parts, body) = response.into_parts();
    (parts.status, parts.headers, axum::body::to_bytes(body, 16 << 20).await.unwrap().to_vec())
}

fn header<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_csp_compression_and_caching_and_need_no_key() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let (status, headers, body) = raw(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(header(&headers, "content-type").starts_with("text/html"));
    let csp = header(&headers, "content-security-policy");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("default-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(header(&headers, "x-content-type-options"), "nosniff");
    assert_eq!(header(&headers, "cache-control"), "no-cache");
    let page = String::from_utf8(body).unwrap();
    // The page loads its script by a hashed name.
    let script = page
        .split("src=\"/assets/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|name| name.starts_with("app."))
        .expect("the app's script from /assets/")
        .to_string();
    assert!(script.starts_with("app.") && script.matches('.').count() >= 2, "{script}");

    let (status, headers, gzipped) = raw(&app, &format!("/assets/{script}"), &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(header(&headers, "content-type").starts_with("text/javascript"));
    assert_eq!(header(&headers, "cache-control"), "public, max-age=31536000, immutable");
    let (_, plain_headers, plain) = raw(&app, &format!("/assets/{script}"), &[]).await;
    if header(&headers, "content-encoding") == "gzip" {
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&gzipped[..]).read_to_end(&mut unzipped).unwrap();
        assert_eq!(unzipped, plain, "the gzip form is the same script");
        assert!(gzipped.len() < plain.len());
        assert_eq!(header(&plain_headers, "content-encoding"), "", "no gzip for a client that did not ask");
    }
    let etag = header(&headers, "etag").to_string();
    assert!(etag.starts_with('"'), "{etag}");
    let (status, _, body) = raw(&app, &format!("/assets/{script}"), &[("if-none-match", &etag)]).await;
    assert_eq!((status, body.len()), (StatusCode::NOT_MODIFIED, 0));
    // The plain name works too, revalidated by its ETag.
    let (status, headers, _) = raw(&app, "/assets/app.js", &[]).await;
    assert_eq!((status, header(&headers, "cache-control")), (StatusCode::OK, "no-cache"));

    for hostile in ["/assets/nope.js", "/assets/../Cargo.toml", "/assets/%2e%2e/src/web.rs", "/assets/app.js%00.png"] {
        let (status, headers, body) = raw(&app, hostile, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{hostile}");
        assert!(!header(&headers, "content-security-policy").is_empty(), "{hostile}");
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["error"]["code"], "not_found");
    }
}

#[tokio::test]
async fn a_loopback_server_serves_the_page_only_to_loopback_names() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    assert_eq!(raw(&app, "/", &[("host", "127.0.0.1:8787")]).await.0, StatusCode::OK);
    assert_eq!(raw(&app, "/", &[("host", "evil.example:8787")]).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn about_says_who_the_caller_is_and_what_the_server_runs() {
    let open = TestServer::new(AuthMode::LoopbackOpen);
    let (status, about) = call(&open.router(), "GET", "/v1/about", None, None).await;
    assert_eq!(status, StatusCode::OK, "{about}");
    assert_eq!(
        (about["auth"].as_str(), about["role"].as_str(), about["user"].clone()),
        (Some("loopback"), Some("local"), Value::Null)
    );
    assert!(about["llm"].is_null() && about["llm_hint"].as_str().unwrap().contains("MEMBANK_LLM_BASE_URL"));
    assert_eq!(about["forgetting"]["policy"], "memorybank");
    assert_eq!(about["forgetting"]["archive_below"], 0.05);
    assert_eq!(about["forgetting"]["unit_seconds"], 86_400);
    assert_eq!(about["forgetting"]["importance_weight"], membank_engine::core::forgetting::DEFAULT_IMPORTANCE_WEIGHT);
    assert_eq!(about["forgetting"]["importance_form"], "scaled");
    assert_eq!(
        about["forgetting"]["importance_exponent"],
        membank_engine::core::forgetting::DEFAULT_IMPORTANCE_EXPONENT
    );
    assert_eq!(about["forgetting"]["spaced_recall"], true);

    let keyed = TestServer::new(AuthMode::Keys);
    let app = keyed.router();
    let alice = keyed.key("acme", Some("alice"), false);
    let (status, about) = call(&app, "GET", "/v1/about", Some(&alice), None).await;
    assert_eq!(status, StatusCode::OK, "{about}");
    assert_eq!(
        (about["auth"].as_str(), about["role"].as_str(), about["user"].as_str(), about["tenant"].as_str()),
        (Some("keys"), Some("user"), Some("alice"), Some("acme"))
    );
    let tenant = keyed.key("acme", None, false);
    assert_eq!(call(&app, "GET", "/v1/about", Some(&tenant), None).await.1["role"], "tenant");
    assert_error(&call(&app, "GET", "/v1/about", None, None).await, StatusCode::UNAUTHORIZED, "unauthorized");
    assert_error(
        &call(&app, "GET", "/v1/about", Some("mb_not_a_key"), None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
}

fn t0() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap()
}

#[tokio::test]
async fn a_memorys_curve_jumps_at_each_recall_and_projects_the_sweeps_archive_date() {
    let clock = Arc::new(ManualClock::new(t0()));
    let server = TestServer::paper_curve(AuthMode::Keys, clock.clone());
    let app = server.router();
    let alice = server.key("acme", Some("alice"), false);
    let (status, turn) = call(
        &app,
        "POST",
        "/v1/users/alice/turns",
        Some(&alice),
        Some(json!({ "user_text": "my sister Lena lives in Porto", "clock_from": "event" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{turn}");
    let id = turn["id"].as_str().unwrap().to_string();
    let mut recalls = Vec::new();
    for days in [2, 3] {
        clock.advance(Duration::days(days));
        recalls.push(clock.now());
        let (status, hits) = call(
            &app,
            "POST",
            "/v1/users/alice/recall",
            Some(&alice),
            Some(json!({ "query": "where does Lena live?" })),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{hits}");
        assert_eq!(hits["results"][0]["id"], id.as_str());
    }
    // A recall that does not strengthen is read-only: no event, no jump.
    clock.advance(Duration::hours(12));
    call(&app, "POST", "/v1/users/alice/recall", Some(&alice), Some(json!({ "query": "Lena", "strengthen": false })))
        .await;
    clock.advance(Duration::hours(12));

    let (status, curve) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}/curve"), Some(&alice), None).await;
    assert_eq!(status, StatusCode::OK, "{curve}");
    let points = curve["points"].as_array().unwrap();
    assert!(points.len() > 200, "sampled finely: {}", points.len());
    assert!(points.windows(2).all(|w| w[0]["t"].as_f64() < w[1]["t"].as_f64()), "ascending");
    assert_eq!(points[0]["retention"], 1.0);
    assert_eq!(points[0]["t"].as_f64().unwrap(), t0().timestamp() as f64);
    for (i, at) in recalls.iter().enumerate() {
        let t = at.timestamp() as f64;
        let before = points
            .iter()
            .find(|p| (p["t"].as_f64().unwrap() - (t - 0.001)).abs() < 1e-6)
            .expect("a point just before the recall");
        let after = points.iter().find(|p| p["t"].as_f64().unwrap() == t).expect("a point at the recall");
        let (r0, r1) = (before["retention"].as_f64().unwrap(), after["retention"].as_f64().unwrap());
        assert!(r0 < 0.8 && (r1 - 1.0).abs() < 1e-9, "recall {i}: {r0} → {r1}");
        assert_eq!(after["strength"].as_f64().unwrap(), (i + 2) as f64);
    }
    let jumps: Vec<&Value> =
        curve["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "strengthened").collect();
    assert_eq!(jumps.len(), 2);
    assert!(jumps.iter().all(|e| e["retention_before"].as_f64().unwrap() < e["retention_after"].as_f64().unwrap()));
    let recalled = curve["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "recalled").count();
    assert_eq!(recalled, 2, "every strengthening recall is listed with its query");
    assert!(
        curve["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "recalled")
            .all(|e| e["retention_before"].is_null())
    );
    // S = 3 after two recalls: archived once exp(-t/3) < 0.05, t in units of three days.
    let expected = recalls[1] + Duration::milliseconds((3.0 * 20f64.ln() * 3.0 * 86_400_000.0) as i64);
    let projected = chrono::DateTime::parse_from_rfc3339(curve["projected_archive_at"].as_str().unwrap()).unwrap();
    assert!((projected.with_timezone(&Utc) - expected).num_seconds().abs() <= 1, "{projected} vs {expected}");
    assert!(
        points.iter().any(|p| p["projected"] == true && p["t"].as_f64().unwrap() > projected.timestamp() as f64),
        "the projection runs past the archive date"
    );
    assert_eq!(curve["archive_below"], 0.05);
    // The curve's value now is the memory's retention everywhere else.
    let now = clock.now().timestamp() as f64;
    let at_now = points.iter().find(|p| p["t"].as_f64().unwrap() == now).expect("a point at now");
    assert_eq!(at_now["retention"], curve["memory"]["retention"]);
    let (_, shown) = call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), Some(&alice), None).await;
    assert_eq!(shown["retention"], curve["memory"]["retention"]);
    // Reading the curve strengthens nothing.
    assert_eq!(shown["strength"], 3.0);

    // A pin flattens it and removes the archive date.
    call(&app, "POST", &format!("/v1/users/alice/memories/{id}/pin"), Some(&alice), None).await;
    let (_, pinned) =
        call(&app, "GET", &format!("/v1/users/alice/memories/{id}/curve?days_ahead=10"), Some(&alice), None).await;
    assert!(pinned["projected_archive_at"].is_null(), "{pinned}");
    assert!(pinned["note"].as_str().unwrap().starts_with("pinned"));
    let last = pinned["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["retention"], 1.0);
    assert_eq!(last["t"].as_f64().unwrap(), (clock.now() + Duration::days(10)).timestamp() as f64);

    // Under the default curve, a memory whose retention stays above the threshold for a
    // century has no archive date, and the note says why (the policy does have a threshold).
    let durable =
        TestServer::with_engine(AuthMode::Keys, clock.clone(), membank_engine::EngineConfig::default(), |_| {});
    let app2 = durable.router();
    let alice2 = durable.key("acme", Some("alice"), false);
    let (_, note) = call(
        &app2,
        "POST",
        "/v1/users/alice/notes",
        Some(&alice2),
        Some(json!({ "text": "my blood type is 0 negative", "importance": 0.99 })),
    )
    .await;
    let (status, curve) = call(
        &app2,
        "GET",
        &format!("/v1/users/alice/memories/{}/curve", note["id"].as_str().unwrap()),
        Some(&alice2),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{curve}");
    assert!(curve["projected_archive_at"].is_null() && curve["archive_below"] == 0.05, "{curve}");
    let said = curve["note"].as_str().unwrap();
    assert!(
        said.contains("stays above the threshold for more than a century") && !said.contains("draws or ranks"),
        "{said}"
    );

    // Bad and hostile input, and another user's key.
    let bob = server.key("acme", Some("bob"), false);
    assert_error(
        &call(&app, "GET", &format!("/v1/users/alice/memories/{id}/curve"), Some(&bob), None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(&app, "GET", &format!("/v1/users/bob/memories/{id}/curve"), Some(&bob), None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    for bad in ["days_ahead=99999", "days_ahead=-1", "days_ahead=soon", "days_ahead=5&erase=1"] {
        let result = call(&app, "GET", &format!("/v1/users/alice/memories/{id}/curve?{bad}"), Some(&alice), None).await;
        assert!(result.0.is_client_error(), "{bad}: {result:?}");
        assert!(result.1["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{bad}: {result:?}");
    }
    for bad_id in ["not-an-id", "00000000-0000-0000-0000-000000000000", "%00"] {
        let result = call(&app, "GET", &format!("/v1/users/alice/memories/{bad_id}/curve"), Some(&alice), None).await;
        assert!(result.0.is_client_error(), "{bad_id}: {result:?}");
    }
}

#[tokio::test]
async fn the_overview_counts_statuses_by_day_from_the_log_and_ends_at_the_stores_counts() {
    let clock = Arc::new(ManualClock::new(t0()));
    let server = TestServer::with_clock(AuthMode::LoopbackOpen, clock.clone(), |_| {});
    let app = server.router();
    let mut ids = Vec::new();
    for (day, text) in
        ["I started a pottery class", "the kiln cracked my vase", "I bought a new bike", "my bike got a flat tyre"]
            .iter()
            .enumerate()
    {
        clock.set(t0() + Duration::days(day as i64));
        let (_, turn) = call(&app, "POST", "/v1/users/mia/turns", None, Some(json!({ "user_text": text }))).await;
        ids.push(turn["id"].as_str().unwrap().to_string());
    }
    clock.advance(Duration::days(1));
    let ok = |result: (StatusCode, Value)| assert!(result.0.is_success(), "{result:?}");
    ok(call(&app, "POST", &format!("/v1/users/mia/memories/{}/forget?reason=old", ids[0]), None, None).await);
    ok(call(
        &app,
        "PATCH",
        &format!("/v1/users/mia/memories/{}", ids[1]),
        None,
        Some(json!({ "user_text": "the kiln cracked my blue vase" })),
    )
    .await);
    clock.advance(Duration::days(1));
    ok(call(&app, "DELETE", &format!("/v1/users/mia/memories/{}", ids[2]), None, None).await);
    ok(call(&app, "POST", &format!("/v1/users/mia/memories/{}/restore", ids[0]), None, None).await);
    ok(call(&app, "POST", &format!("/v1/users/mia/memories/{}/forget", ids[3]), None, None).await);

    let (status, overview) = call(&app, "GET", "/v1/users/mia/overview", None, None).await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    let days = overview["days"].as_array().unwrap();
    let summary: Vec<(String, u64, u64, u64, u64)> = days
        .iter()
        .map(|d| {
            (
                d["day"].as_str().unwrap().to_string(),
                d["active"].as_u64().unwrap(),
                d["archived"].as_u64().unwrap(),
                d["superseded"].as_u64().unwrap(),
                d["erased"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("2026-03-02".into(), 1, 0, 0, 0),
            ("2026-03-03".into(), 2, 0, 0, 0),
            ("2026-03-04".into(), 3, 0, 0, 0),
            ("2026-03-05".into(), 4, 0, 0, 0),
            // Forgot one; the edit superseded one and made a new version.
            ("2026-03-06".into(), 3, 1, 1, 0),
            // Erased one, restored the first, forgot the last.
            ("2026-03-07".into(), 2, 1, 1, 1),
        ]
    );
    let last = days.last().unwrap();
    for status in ["active", "archived", "superseded", "erased"] {
        assert_eq!(overview["current"][status], last[status], "{status}");
    }
    let (_, listed) = call(&app, "GET", "/v1/users/mia/memories", None, None).await;
    assert_eq!(listed["counts"], overview["current"]);
    // A user with no memories has no days; bad input is refused.
    let (status, empty) = call(&app, "GET", "/v1/users/nobody/overview", None, None).await;
    assert_eq!((status, empty["days"].as_array().unwrap().len()), (StatusCode::OK, 0));
    assert!(call(&app, "GET", "/v1/users/%20/overview", None, None).await.0.is_client_error());
    assert!(call(&app, "POST", "/v1/users/mia/overview", None, None).await.0.is_client_error());
}

#[tokio::test]
async fn a_backdated_sweep_over_imported_history_counts_from_when_the_memory_was_stored() {
    // Stored on day 10 about day −20 with its clock from the event; a sweep dated day 5 (before
    // the memory was stored) archives it. The overview must end archived, not active.
    let clock = Arc::new(ManualClock::new(t0() + Duration::days(10)));
    let server = TestServer::paper_curve(AuthMode::LoopbackOpen, clock.clone());
    let app = server.router();
    let occurred = (t0() - Duration::days(20)).to_rfc3339();
    let (status, turn) = call(
        &app,
        "POST",
        "/v1/users/ivy/turns",
        None,
        Some(json!({ "user_text": "I moved to Lyon", "occurred_at": occurred, "clock_from": "event" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{turn}");
    let (status, swept) = call(
        &app,
        "POST",
        "/v1/users/ivy/sweep",
        None,
        Some(json!({ "now": (t0() + Duration::days(5)).to_rfc3339() })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{swept}");
    assert_eq!(swept["archived"].as_array().map(Vec::len), Some(1), "{swept}");
    let (_, overview) = call(&app, "GET", "/v1/users/ivy/overview", None, None).await;
    let days = overview["days"].as_array().unwrap();
    assert_eq!(days.len(), 1, "{overview}");
    assert_eq!(
        (days[0]["day"].as_str(), days[0]["active"].as_u64(), days[0]["archived"].as_u64()),
        (Some("2026-03-12"), Some(0), Some(1)),
        "{overview}"
    );
    assert_eq!(overview["current"]["archived"], 1);
}

fn with_llm(stub: &StubServer) -> (TestServer, axum::Router) {
    let base = TestServer::new(AuthMode::LoopbackOpen);
    let llm = Arc::new(membank_llm::OpenAiChat::new(OpenAiChatConfig::new(stub.base_url(), "stub-model")).unwrap());
    let engine = Engine::new(
        base.store.clone(),
        Arc::new(membank_embed::HashEmbedder::new(64)),
        Arc::new(SystemClock),
        Default::default(),
    )
    .unwrap()
    .with_llm(llm);
    let state = AppState::new(
        Arc::new(engine),
        base.store.clone(),
        ServerConfig::new(TenantId::new("default").unwrap(), AuthMode::LoopbackOpen),
    );
    let app = membank_server::router(state);
    (base, app)
}

/// The events of a server-sent-event body: (event name, data as JSON).
fn events(body: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(body).unwrap();
    text.split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event:")).map(|n| n.trim().to_string())?;
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n");
            Some((name, serde_json::from_str(&data).unwrap_or(Value::Null)))
        })
        .collect()
}

async fn stream(app: &axum::Router, body: Value) -> (StatusCode, String, Vec<u8>) {
    let req = Request::builder()
        .method("POST")
        .uri("/v1/users/alice/chat/stream")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = response.into_parts();
    (
        parts.status,
        header(&parts.headers, "content-type").to_string(),
        axum::body::to_bytes(body, 16 << 20).await.unwrap().to_vec(),
    )
}

#[tokio::test]
async fn a_streamed_chat_sends_the_prompts_memories_then_the_reply_in_pieces_then_the_whole_answer() {
    let stub = StubServer::scripted(vec![Reply::stream(&["Your cat ", "is called ", "Miso [M1]."])]);
    let (_base, app) = with_llm(&stub);
    call(&app, "POST", "/v1/users/alice/turns", None, Some(json!({ "user_text": "my cat is called Miso" }))).await;
    let (status, content_type, body) = stream(&app, json!({ "message": "what is my cat called?" })).await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    let events = events(&body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["recalled", "delta", "delta", "delta", "done"], "{}", String::from_utf8_lossy(&body));
    assert_eq!(events[0].1["memories"][0]["label"], "M1");
    assert!(events[0].1["memories"][0]["content"].as_str().unwrap().contains("Miso"));
    let streamed: String = events[1..4].iter().map(|(_, d)| d["text"].as_str().unwrap()).collect();
    let done = &events[4].1;
    assert_eq!(streamed, "Your cat is called Miso [M1].");
    assert_eq!(done["reply"], streamed.as_str());
    assert_eq!(done["used"][0]["label"], "M1");
    assert_eq!(done["used"][0]["day"], events[0].1["memories"][0]["day"]);
    assert_eq!(stub.requests()[0].body["stream"], true);
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2, "the exchange is stored: {listed}");
}

#[tokio::test]
async fn a_streamed_chat_refuses_bad_input_before_streaming_and_reports_a_model_failure_in_the_stream() {
    // No LLM: an ordinary 503 with the message, not a stream.
    let open = TestServer::new(AuthMode::LoopbackOpen);
    let (status, content_type, body) = stream(&open.router(), json!({ "message": "hello" })).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(content_type.starts_with("application/json"));
    assert!(
        serde_json::from_slice::<Value>(&body).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no LLM is configured")
    );

    let stub = StubServer::scripted(vec![Reply::error(401, "invalid api key")]);
    let (_base, app) = with_llm(&stub);
    for (bad, code) in [
        (json!({ "message": "   " }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "hi", "k": 0 }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "hi", "now": "tomorrow-ish" }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "hi", "now": "2999-01-01T00:00:00Z" }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "hi", "persona": " " }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "x".repeat(40 * 1024) }), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({ "message": "hi", "delete_all": true }), StatusCode::BAD_REQUEST),
        (json!({ "message": 42 }), StatusCode::BAD_REQUEST),
    ] {
        let (status, content_type, body) = stream(&app, bad.clone()).await;
        assert!(status == code || (status.is_client_error() && code.is_client_error()), "{bad}: {status}");
        assert!(content_type.starts_with("application/json"), "{bad}: {content_type}");
        assert!(serde_json::from_slice::<Value>(&body).unwrap()["error"]["message"].is_string());
    }
    assert_eq!(stub.count(), 0, "bad input never reaches the model");
    // The model refuses: the stream says so, and nothing is stored.
    let (status, _, body) = stream(&app, json!({ "message": "hello" })).await;
    assert_eq!(status, StatusCode::OK);
    let events = events(&body);
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error", "{events:?}");
    assert_eq!(data["error"]["code"], "unavailable", "{data}");
    assert!(data["error"]["message"].as_str().unwrap().contains("llm_unauthorized"), "{data}");
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_app_has_an_icon_at_its_link_and_at_the_root_so_no_browser_logs_a_404() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let (status, _, page) = raw(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let page = String::from_utf8(page).unwrap();
    let link = page
        .split("rel=\"icon\"")
        .nth(1)
        .and_then(|rest| rest.split("href=\"").nth(1))
        .map(|h| h.split('"').next().unwrap().to_string());
    let link = link.unwrap_or_else(|| panic!("the page names no icon: {page}"));
    for path in [link.as_str(), "/favicon.ico"] {
        let (status, headers, body) = raw(&app, path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(header(&headers, "content-type"), "image/svg+xml", "{path}");
        assert!(String::from_utf8_lossy(&body).starts_with("<svg"), "{path}");
    }
}

#[tokio::test]
async fn healthz_says_whether_a_key_is_needed_so_the_page_asks_before_a_refused_request() {
    for (mode, auth) in [(AuthMode::Keys, "keys"), (AuthMode::LoopbackOpen, "loopback")] {
        let server = TestServer::new(mode);
        let (status, body) = call(&server.router(), "GET", "/healthz", None, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({ "status": "ok", "auth": auth }));
    }
}
