//! Writes that are all or nothing and safe to retry over REST, the client's `now` kept
//! within reach of the server's clock, and the streamed membank-export.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use membank_server::AuthMode;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::*;

async fn post_with_key(
    app: &axum::Router,
    path: &str,
    key: Option<&str>,
    body: &Value,
) -> (StatusCode, Option<String>, Value) {
    let mut builder = Request::builder().method("POST").uri(path).header("content-type", "application/json");
    if let Some(key) = key {
        builder = builder.header("idempotency-key", key);
    }
    let response = app.clone().oneshot(builder.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = response.status();
    let replayed = response.headers().get("idempotent-replayed").map(|v| v.to_str().unwrap().to_string());
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 24).await.unwrap();
    (status, replayed, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn count(app: &axum::Router, user: &str) -> usize {
    let (status, body) = call(
        app,
        "GET",
        &format!("/v1/users/{user}/memories?status=active,archived,superseded,erased&limit=1000"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["memories"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_batch_with_a_bad_third_turn_stores_nothing() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let ahead = (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339();
    let batch = json!({ "turns": [{ "user_text": "one" }, { "user_text": "two" }, { "user_text": "three", "occurred_at": ahead }] });
    let result = call(&app, "POST", "/v1/users/ana/turns/batch", None, Some(batch)).await;
    assert_error(&result, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    assert!(result.1["error"]["message"].as_str().unwrap().contains("entry 2"), "{}", result.1);
    assert_eq!(count(&app, "ana").await, 0);
}

#[tokio::test]
async fn a_retry_with_the_same_idempotency_key_gets_the_first_answer_and_stores_nothing() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let batch = json!({ "turns": [{ "user_text": "I keep bees" }, { "user_text": "The hives are on the roof" }] });
    let (status, replayed, first) = post_with_key(&app, "/v1/users/ana/turns/batch", Some("k-1"), &batch).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, None), "{first}");
    // White space and key order do not make it another request.
    let reordered: Value = serde_json::from_str(
        r#"{ "turns": [ {"user_text":"I keep bees"}, {"user_text": "The hives are on the roof"} ] }"#,
    )
    .unwrap();
    let (status, replayed, again) = post_with_key(&app, "/v1/users/ana/turns/batch", Some("k-1"), &reordered).await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::CREATED, Some("true")));
    assert_eq!(again, first);
    assert_eq!(count(&app, "ana").await, 2);
    // The same key with another body, or on another endpoint, is refused and stores nothing.
    let (status, _, body) = post_with_key(
        &app,
        "/v1/users/ana/turns/batch",
        Some("k-1"),
        &json!({ "turns": [{ "user_text": "something else" }] }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _, _) =
        post_with_key(&app, "/v1/users/ana/notes", Some("k-1"), &json!({ "text": "I keep bees" })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(count(&app, "ana").await, 2);
    // Notes and single turns take keys too; another user has its own key space.
    for path in ["/v1/users/ana/notes", "/v1/users/bob/notes"] {
        let note = json!({ "text": "Maya is Ana's sister" });
        let (s1, _, a) = post_with_key(&app, path, Some("k-2"), &note).await;
        let (s2, r2, b) = post_with_key(&app, path, Some("k-2"), &note).await;
        assert_eq!((s1, s2, r2.as_deref()), (StatusCode::CREATED, StatusCode::CREATED, Some("true")));
        assert_eq!(a["id"], b["id"]);
    }
    let (_, _, t1) = post_with_key(&app, "/v1/users/ana/turns", Some("k-3"), &json!({ "user_text": "hello" })).await;
    let (_, _, t2) = post_with_key(&app, "/v1/users/ana/turns", Some("k-3"), &json!({ "user_text": "hello" })).await;
    assert_eq!(t1["id"], t2["id"]);
    assert_eq!(count(&app, "ana").await, 4);
    assert_eq!(count(&app, "bob").await, 1);
    // A replay after the memory was erased quotes nothing of it.
    let id = t1["id"].as_str().unwrap();
    let (status, _) = call(&app, "DELETE", &format!("/v1/users/ana/memories/{id}"), None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, t3) = post_with_key(&app, "/v1/users/ana/turns", Some("k-3"), &json!({ "user_text": "hello" })).await;
    assert_eq!(
        (t3["id"].as_str(), t3["status"].as_str(), t3["content"].clone()),
        (Some(id), Some("erased"), Value::Null)
    );
    // Malformed keys are refused.
    for bad in ["", &"x".repeat(300)] {
        let (status, _, _) = post_with_key(&app, "/v1/users/ana/notes", Some(bad), &json!({ "text": "x" })).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "key {bad:?}");
    }
}

#[tokio::test]
async fn now_far_ahead_is_refused_for_writes_and_far_behind_never_panics() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    call(&app, "POST", "/v1/users/ana/turns", None, Some(json!({ "user_text": "I keep bees" }))).await;
    let result = call(
        &app,
        "POST",
        "/v1/users/ana/recall",
        None,
        Some(json!({ "query": "bees", "now": "9999-12-31T00:00:00Z" })),
    )
    .await;
    assert_error(&result, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    let result = call(&app, "POST", "/v1/users/ana/sweep", None, Some(json!({ "now": "9999-12-31T00:00:00Z" }))).await;
    assert_error(&result, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    let result =
        call(&app, "POST", "/v1/users/ana/maintain", None, Some(json!({ "now": "9999-12-31T00:00:00Z" }))).await;
    assert_error(&result, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    for now in ["0001-01-01T00:00:00Z", "-200000-01-01T00:00:00Z", "1900-02-29T00:00:00Z"] {
        let (status, body) = call(
            &app,
            "POST",
            "/v1/users/ana/recall",
            None,
            Some(json!({ "query": "bees last week", "now": now, "strengthen": false })),
        )
        .await;
        assert!(status == StatusCode::OK || status == StatusCode::UNPROCESSABLE_ENTITY, "{now}: {status} {body}");
    }
    let (_, listed) = call(&app, "GET", "/v1/users/ana/memories", None, None).await;
    assert!(listed["memories"][0]["last_recalled_at"].as_str().unwrap() < "2100");
}

#[tokio::test]
async fn export_streams_the_lossless_format() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    for i in 0..30 {
        call(
            &app,
            "POST",
            "/v1/users/ana/turns",
            None,
            Some(json!({ "user_text": format!("turn number {i} about bees {}", "and hives ".repeat(300)) })),
        )
        .await;
    }
    let response = app
        .clone()
        .oneshot(Request::builder().uri("/v1/users/ana/export?vectors=true").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 26).await.unwrap();
    let text = std::str::from_utf8(&bytes).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0], json!({ "format": "membank-export", "version": 1, "vectors": true }));
    assert_eq!(lines[1]["type"], "user");
    assert_eq!(lines.iter().filter(|l| l["type"] == "memory").count(), 30);
    assert!(
        lines.iter().filter(|l| l["type"] == "memory").all(|m| m["vector"].as_array().is_some_and(|v| !v.is_empty()))
    );
    assert_eq!(lines.last().unwrap()["type"], "end");
    assert_eq!(lines.last().unwrap()["memories"], 30);
    // Bad query parameters are refused; an unknown user has nothing: header and end only.
    assert_error(
        &call(&app, "GET", "/v1/users/ana/export?vectors=maybe", None, None).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    let response = app
        .clone()
        .oneshot(Request::builder().uri("/v1/users/nobody/export").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    assert_eq!(std::str::from_utf8(&bytes).unwrap().lines().count(), 2);
}

/// `clock_from` on `/turns`, `/turns/batch` and `/notes`: a backdated memory starts fresh by
/// default, `event` starts its clock at `occurred_at` (past the threshold at once, and the
/// listing says so), and anything else is refused with nothing stored.
#[tokio::test]
async fn the_forgetting_clock_of_a_backdated_write_starts_where_clock_from_says() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let (status, fresh) = call(
        &app,
        "POST",
        "/v1/users/ana/turns",
        None,
        Some(json!({ "user_text": "We met in Lisbon", "occurred_at": "2024-05-04T10:00:00Z" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{fresh}");
    assert_ne!(fresh["last_recalled_at"], "2024-05-04T10:00:00.000Z", "{fresh}");
    let (status, old) = call(
        &app,
        "POST",
        "/v1/users/ana/notes",
        None,
        Some(json!({ "text": "Ana flew home", "occurred_at": "2024-05-04T11:00:00Z", "clock_from": "event" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{old}");
    assert_eq!(old["last_recalled_at"], "2024-05-04T11:00:00.000Z");
    let (status, batch) = call(&app, "POST", "/v1/users/ana/turns/batch", None, Some(json!({ "turns": [{ "user_text": "old", "occurred_at": "2024-05-05T10:00:00Z", "clock_from": "event" }, { "user_text": "new", "occurred_at": "2024-05-05T10:00:00Z", "clock_from": "import" }] }))).await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    let (status, listed) = call(&app, "GET", "/v1/users/ana/memories?limit=100", None, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(
        (listed["archive_below"].as_f64(), listed["past_threshold"].as_u64()),
        (Some(0.05), Some(2)),
        "{listed}"
    );
    let (_, shown) =
        call(&app, "GET", &format!("/v1/users/ana/memories/{}", old["id"].as_str().unwrap()), None, None).await;
    assert_eq!(shown["past_threshold"], true, "{shown}");
    for bad in [json!("events"), json!(""), json!(1), json!(null), json!("<script>"), json!("import".repeat(10_000))] {
        let result = call(
            &app,
            "POST",
            "/v1/users/ana/turns",
            None,
            Some(json!({ "user_text": "x", "occurred_at": "2024-05-04T10:00:00Z", "clock_from": bad })),
        )
        .await;
        if bad.is_null() {
            assert_eq!(result.0, StatusCode::CREATED, "null means the default: {}", result.1);
            continue;
        }
        assert_eq!(result.0, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", result.1);
    }
    assert_eq!(count(&app, "ana").await, 5);
}
