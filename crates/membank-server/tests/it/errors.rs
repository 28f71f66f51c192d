//! One test per error class, plus malformed, oversized, empty and hostile input on every
//! endpoint: each answer has the error shape, its stable code and status, and never a
//! 5xx or a leak of internals.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use membank_server::AuthMode;
use serde_json::{Value, json};

use crate::support::*;

async fn remember(app: &axum::Router, key: Option<&str>, user: &str, text: &str) -> String {
    let (status, body) = call(
        app,
        "POST",
        &format!("/v1/users/{user}/turns"),
        key,
        Some(json!({ "user_text": text, "assistant_text": "ok" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn round_trip_matches_the_cli_shape() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = remember(&app, None, "alice", "I adopted a grey cat named Miso").await;
    let (status, body) =
        call(&app, "POST", "/v1/users/alice/recall", None, Some(json!({ "query": "cat named Miso", "k": 3 }))).await;
    assert_eq!(status, StatusCode::OK);
    let hit = &body["results"][0];
    assert_eq!(hit["id"], id.as_str());
    for field in
        ["kind", "content", "day", "occurred_at", "score", "dense_score", "lexical_score", "retention", "strength"]
    {
        assert!(hit.get(field).is_some(), "missing {field}: {hit}");
    }
    assert!(body["query_id"].is_string() && body["strengthened"] == true);
    let (status, body) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(status, StatusCode::OK);
    // Recalled the moment it was made: spaced strengthening adds nothing that day (the
    // recall restarts its clock and is logged as a strengthening all the same).
    assert_eq!(body["memories"][0]["strength"], 1.0);
    assert_eq!(body["memories"][0]["recall_count"], 1);
    let (status, body) = call(&app, "GET", "/v1/users/alice/events", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["events"].as_array().unwrap().iter().any(|e| e["kind"] == "strengthened"));
}

/// A recall's answer describes one moment (the memory after the recall, `retention_before`
/// named as such), explains each score's terms, and says which days a date in the query
/// meant; the OpenAPI document describes the same fields.
#[tokio::test]
async fn a_recall_answers_one_moment_explains_its_scores_and_names_its_days() {
    let at =
        |text: &str| -> membank_engine::core::Timestamp { chrono::DateTime::parse_from_rfc3339(text).unwrap().into() };
    let clock = std::sync::Arc::new(membank_engine::core::ManualClock::new(at("2025-03-01T10:00:00Z")));
    let server = TestServer::with_clock(AuthMode::LoopbackOpen, clock.clone(), |_| {});
    let app = server.router();
    for (text, when) in
        [("we went to the lake", "2023-05-04T10:00:00Z"), ("a quiet day at home", "2023-08-01T10:00:00Z")]
    {
        let (status, body) =
            call(&app, "POST", "/v1/users/alice/turns", None, Some(json!({ "user_text": text, "occurred_at": when })))
                .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    clock.set(at("2025-05-20T10:00:00Z"));
    let (status, body) = call(
        &app,
        "POST",
        "/v1/users/alice/recall",
        None,
        Some(json!({ "query": "what did we do on May 4th?", "k": 2 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["date_filter"],
        json!({ "from": "2023-05-04", "to": "2023-05-04", "from_query": "May 4th", "mode": "boost", "exact": true, "year_inferred": "latest_with_memories" })
    );
    let hit = &body["results"][0];
    assert_eq!(hit["content"], "User: we went to the lake");
    assert_eq!(
        (hit["strength"].clone(), hit["last_recalled_at"].clone(), hit["retention"].clone()),
        (json!(2.0), json!("2025-05-20T10:00:00.000Z"), json!(1.0))
    );
    assert!(hit["retention_before"].as_f64().unwrap() < 0.5, "{hit}");
    let parts = &hit["score_parts"];
    let sum = (parts["dense"].as_f64().unwrap()
        + parts["lexical"].as_f64().unwrap()
        + parts["date"].as_f64().unwrap()
        + parts["feedback"].as_f64().unwrap()
        + parts["neighbour"].as_f64().unwrap())
        * parts["speaker"].as_f64().unwrap()
        * parts["retention"].as_f64().unwrap()
        * parts["diversity"].as_f64().unwrap();
    assert_eq!(parts["day_summary"], json!(false), "{hit}");
    assert!((sum - hit["score"].as_f64().unwrap()).abs() < 1e-12, "{hit}");
    assert!(parts["date"].as_f64().unwrap() > 0.0 && hit["dense_rank"].is_u64(), "{hit}");

    // An inspection recall: one state, before and after alike; the caller's days are a filter.
    let (_, body) = call(
        &app,
        "POST",
        "/v1/users/alice/recall",
        None,
        Some(json!({ "query": "lake", "strengthen": false, "from": "2023-01-01" })),
    )
    .await;
    let hit = &body["results"][0];
    assert_eq!(hit["retention"], hit["retention_before"]);
    assert_eq!(body["date_filter"], json!({ "from": "2023-01-01", "to": null, "mode": "filter", "exact": true }));

    let (_, doc) = call(&app, "GET", "/openapi.json", None, None).await;
    let schemas = &doc["components"]["schemas"];
    // The memory is flattened in: the hit's own fields are the second part of an allOf.
    let hit_fields = &schemas["RecallHitOut"]["allOf"][1]["properties"];
    for field in ["retention", "retention_before", "score_parts", "dense_rank", "lexical_rank"] {
        assert!(hit_fields.get(field).is_some(), "RecallHitOut.{field} is not documented: {hit_fields}");
    }
    assert!(schemas["RecallOut"]["properties"].get("date_filter").is_some());
    assert!(schemas["DateFilterOut"]["properties"].get("year_inferred").is_some());
    for field in ["date", "feedback", "diversity", "day_summary"] {
        assert!(schemas["ScorePartsOut"]["properties"].get(field).is_some(), "ScorePartsOut.{field} is not documented");
    }
}

#[tokio::test]
async fn memory_lifecycle_edit_pin_forget_restore_erase_export() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let (status, note) =
        call(&app, "POST", "/v1/users/bob/notes", None, Some(json!({ "text": "Bob is allergic to peanuts" }))).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = note["id"].as_str().unwrap();
    let (status, edited) = call(
        &app,
        "PATCH",
        &format!("/v1/users/bob/memories/{id}"),
        None,
        Some(json!({ "text": "Bob is allergic to peanuts and cashews" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["derived_from"][0], id);
    let new_id = edited["id"].as_str().unwrap();
    let (_, old) = call(&app, "GET", &format!("/v1/users/bob/memories/{id}"), None, None).await;
    assert_eq!(old["status"], "superseded");
    assert_eq!(old["content"], "Bob is allergic to peanuts", "history is kept");
    let (status, pinned) = call(&app, "POST", &format!("/v1/users/bob/memories/{new_id}/pin"), None, None).await;
    assert_eq!((status, pinned["pinned"].clone()), (StatusCode::OK, json!(true)));
    // A reason longer than the schema's 1,024 characters is refused and changes nothing.
    let long = "%C3%A9".repeat(1025);
    assert_error(
        &call(&app, "POST", &format!("/v1/users/bob/memories/{new_id}/forget?reason={long}"), None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    let (_, still) = call(&app, "GET", &format!("/v1/users/bob/memories/{new_id}"), None, None).await;
    assert_eq!(still["status"], "active");
    let (status, _) =
        call(&app, "POST", &format!("/v1/users/bob/memories/{new_id}/forget?reason=asked"), None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, restored) = call(&app, "POST", &format!("/v1/users/bob/memories/{new_id}/restore"), None, None).await;
    assert_eq!((status, restored["status"].clone()), (StatusCode::OK, json!("active")));
    let (status, erased) = call(&app, "DELETE", &format!("/v1/users/bob/memories/{new_id}"), None, None).await;
    assert_eq!((status, erased["content"].clone()), (StatusCode::OK, Value::Null));
    let (status, export) = call(&app, "GET", "/v1/users/bob/export", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(export["memories"].as_array().unwrap().len(), 2);
    assert!(!export.to_string().contains("cashews"), "erased content must not be exported");
    let (status, sweep) = call(&app, "POST", "/v1/users/bob/sweep", None, Some(json!({ "dry_run": true }))).await;
    assert_eq!((status, sweep["dry_run"].clone()), (StatusCode::OK, json!(true)));
}

#[tokio::test]
async fn bad_request_400_for_malformed_json_and_bad_query() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    for body in ["{", "not json", "{\"user_text\": \"a\",}", "\u{0}"] {
        let req = Request::builder()
            .method("POST")
            .uri("/v1/users/a/turns")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        assert_error(&send(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
    }
    // Invalid UTF-8 inside a JSON string.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/users/a/turns")
        .header("content-type", "application/json")
        .body(Body::from(&b"{\"user_text\": \"\xff\xfe\"}"[..]))
        .unwrap();
    assert_error(&send(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
    // Empty body.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/users/a/recall")
        .header("content-type", "application/json")
        .body(Body::empty())
        .unwrap();
    let r = send(&app, req).await;
    assert!(r.0 == StatusCode::BAD_REQUEST || r.0 == StatusCode::UNPROCESSABLE_ENTITY, "{r:?}");
    // Well-formed JSON that is not an object: serde would read a struct from an array.
    for body in [json!([null, null]), json!("text"), json!(3), json!(null)] {
        assert_error(
            &call(&app, "POST", "/v1/users/a/sweep", None, Some(body.clone())).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
        assert_error(
            &call(&app, "POST", "/v1/users/a/recall", None, Some(body)).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        );
    }
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories?limit=-1", None, None).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/events?after=abc", None, None).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
}

#[tokio::test]
async fn unauthorized_401_without_or_with_a_bad_or_revoked_key() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let key = server.key("acme", None, false);
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories", None, None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories", Some("mbk_0_wrong"), None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories", Some("' OR 1=1 --"), None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let req = Request::builder()
        .uri("/v1/users/a/memories")
        .header("authorization", "Basic abc")
        .body(Body::empty())
        .unwrap();
    assert_error(&send(&app, req).await, StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(call(&app, "GET", "/v1/users/a/memories", Some(&key), None).await.0, StatusCode::OK);
    let id = key.split('_').nth(1).unwrap();
    membank_store::ApiKeyStore::revoke_key(server.store.as_ref(), id, chrono::Utc::now()).unwrap();
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories", Some(&key), None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // MCP needs a key too; system endpoints do not.
    assert_eq!(call(&app, "POST", "/mcp", None, Some(json!({}))).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(call(&app, "GET", "/healthz", None, None).await.0, StatusCode::OK);
    assert_eq!(call(&app, "GET", "/openapi.json", None, None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn forbidden_403_for_other_tenants_other_users_and_admin_endpoints() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let key = server.key("acme", None, false);
    let bound = server.key("acme", Some("alice"), false);
    let admin = server.key("ops", None, true);
    let req = Request::builder()
        .uri("/v1/users/a/memories")
        .header("authorization", format!("Bearer {key}"))
        .header("x-membank-tenant", "other")
        .body(Body::empty())
        .unwrap();
    assert_error(&send(&app, req).await, StatusCode::FORBIDDEN, "forbidden");
    assert_error(
        &call(&app, "GET", "/v1/users/bob/memories", Some(&bound), None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_eq!(call(&app, "GET", "/v1/users/alice/memories", Some(&bound), None).await.0, StatusCode::OK);
    assert_error(&call(&app, "GET", "/v1/admin/check", Some(&key), None).await, StatusCode::FORBIDDEN, "forbidden");
    let (status, check) = call(&app, "GET", "/v1/admin/check", Some(&admin), None).await;
    assert_eq!((status, check["ok"].clone()), (StatusCode::OK, json!(true)));
    // An admin key may act in another tenant, by header.
    remember(&app, Some(&key), "carol", "carol likes tea").await;
    let req = Request::builder()
        .uri("/v1/users/carol/memories")
        .header("authorization", format!("Bearer {admin}"))
        .header("x-membank-tenant", "acme")
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&app, req).await;
    assert_eq!((status, body["memories"].as_array().unwrap().len()), (StatusCode::OK, 1));
}

#[tokio::test]
async fn not_found_404_for_unknown_ids_other_users_ids_and_routes() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = remember(&app, None, "alice", "secret of alice").await;
    assert_error(
        &call(&app, "GET", &format!("/v1/users/bob/memories/{id}"), None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(&app, "POST", &format!("/v1/users/bob/memories/{id}/forget"), None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(&app, "DELETE", &format!("/v1/users/bob/memories/{id}"), None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/alice/memories/not-an-id", None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/alice/memories/0190f5b2-0000-7000-8000-000000000000", None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&call(&app, "GET", "/v2/nothing", None, None).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(call(&app, "GET", &format!("/v1/users/alice/memories/{id}"), None, None).await.0, StatusCode::OK);
    // Unknown users are answered: an empty list, not an error.
    let (status, body) = call(&app, "GET", "/v1/users/nobody/memories", None, None).await;
    assert_eq!((status, body["memories"].as_array().unwrap().len()), (StatusCode::OK, 0));
}

#[tokio::test]
async fn conflict_409_when_the_state_does_not_allow_it() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = remember(&app, None, "alice", "hello there").await;
    assert_error(
        &call(&app, "POST", &format!("/v1/users/alice/memories/{id}/restore"), None, None).await,
        StatusCode::CONFLICT,
        "conflict",
    );
    assert_eq!(
        call(&app, "POST", &format!("/v1/users/alice/memories/{id}/forget"), None, None).await.0,
        StatusCode::OK
    );
    assert_error(
        &call(&app, "POST", &format!("/v1/users/alice/memories/{id}/forget"), None, None).await,
        StatusCode::CONFLICT,
        "conflict",
    );
    assert_error(
        &call(&app, "PATCH", &format!("/v1/users/alice/memories/{id}"), None, Some(json!({ "user_text": "x" }))).await,
        StatusCode::CONFLICT,
        "conflict",
    );
}

#[tokio::test]
async fn payload_too_large_413_and_unsupported_media_type_415() {
    let server = TestServer::with(AuthMode::LoopbackOpen, |c| c.limits.body_bytes = 4096);
    let app = server.router();
    let big = json!({ "user_text": "x".repeat(10_000) });
    assert_error(
        &call(&app, "POST", "/v1/users/a/turns", None, Some(big)).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    let req = Request::builder()
        .method("POST")
        .uri("/v1/users/a/turns")
        .header("content-type", "text/plain")
        .body(Body::from("{\"user_text\":\"hi\"}"))
        .unwrap();
    assert_error(&send(&app, req).await, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    let req =
        Request::builder().method("POST").uri("/v1/users/a/turns").body(Body::from("{\"user_text\":\"hi\"}")).unwrap();
    assert_error(&send(&app, req).await, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
}

#[tokio::test]
async fn invalid_422_for_values_that_break_rules() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let cases = [
        ("/v1/users/a/turns", json!({ "user_text": "" })),
        ("/v1/users/a/turns", json!({ "user_text": "   " })),
        ("/v1/users/a/turns", json!({ "user_text": "x".repeat(40_000) })),
        ("/v1/users/a/turns", json!({ "user_text": "hi", "occurred_at": "yesterday-ish" })),
        ("/v1/users/a/turns", json!({ "user_text": "hi", "occurred_at": "2999-01-01T00:00:00Z" })),
        ("/v1/users/a/turns", json!({ "user_text": "hi", "asistant_text": "typo" })),
        ("/v1/users/a/turns", json!({ "user_text": 5 })),
        ("/v1/users/a/turns", json!({ "user_text": "a\u{0}b" })),
        ("/v1/users/a/turns", json!({})),
        ("/v1/users/a/turns", json!([])),
        ("/v1/users/a/notes", json!({ "text": "hi", "source": "derived" })),
        ("/v1/users/a/notes", json!({ "text": "hi", "source": "martian" })),
        ("/v1/users/a/recall", json!({ "query": "hi", "k": 0 })),
        ("/v1/users/a/recall", json!({ "query": "hi", "k": 201 })),
        ("/v1/users/a/recall", json!({ "query": "hi", "k": -3 })),
        ("/v1/users/a/recall", json!({ "query": "" })),
        ("/v1/users/a/recall", json!({ "query": "hi", "from": "2024-05-09", "to": "2024-05-01" })),
        ("/v1/users/a/recall", json!({ "query": "hi", "kinds": ["nonsense"] })),
        ("/v1/users/a/sweep", json!({ "max_archive_fraction": 7.5 })),
        ("/v1/users/a/turns/batch", json!({ "turns": [] })),
        ("/v1/users/a/memories/used", json!({ "ids": [] })),
        ("/v1/users/%20/turns", json!({ "user_text": "hi" })),
    ];
    for (path, body) in cases {
        let r = call(&app, "POST", path, None, Some(body.clone())).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    }
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories?limit=0", None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories?limit=5000", None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories?status=gone", None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories?order=sideways", None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    let long_user = "u".repeat(300);
    assert_error(
        &call(&app, "GET", &format!("/v1/users/{long_user}/memories"), None, None).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    // Nothing was stored by any of them.
    let (_, body) = call(&app, "GET", "/v1/users/a/memories", None, None).await;
    assert_eq!(body["counts"]["active"], 0);
}

#[tokio::test]
async fn rate_limited_429_with_retry_after() {
    let server = TestServer::with(AuthMode::Keys, |c| {
        c.rate_limit = membank_server::RateLimit { per_second: 0.001, burst: 3.0 }
    });
    let app = server.router();
    let key = server.key("acme", None, false);
    let other = server.key("acme", None, false);
    for _ in 0..3 {
        assert_eq!(call(&app, "GET", "/v1/users/a/memories", Some(&key), None).await.0, StatusCode::OK);
    }
    let req = request("GET", "/v1/users/a/memories", Some(&key), None);
    let response = tower::ServiceExt::oneshot(app.clone(), req).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().get("retry-after").is_some());
    assert_error(
        &call(&app, "GET", "/v1/users/a/memories", Some(&key), None).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    );
    // Limits are per key.
    assert_eq!(call(&app, "GET", "/v1/users/a/memories", Some(&other), None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn method_not_allowed_and_readiness() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let r = call(&app, "PUT", "/v1/users/a/turns", None, Some(json!({}))).await;
    assert_eq!(r.0, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.1["error"]["code"], "method_not_allowed");
    server.state.set_ready(false);
    assert_eq!(call(&app, "GET", "/readyz", None, None).await.0, StatusCode::SERVICE_UNAVAILABLE);
    server.state.set_ready(true);
    assert_eq!(call(&app, "GET", "/readyz", None, None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn hostile_input_is_data_not_syntax() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let hostile = [
        "'; DROP TABLE memories; --",
        "\" OR scope_tag : u1 OR \"",
        "body : * NEAR(a b)",
        "../../etc/passwd",
        "<script>alert(1)</script>",
        "😀🙃 مرحبا 你好",
        "%00%ff",
        "{{7*7}}",
    ];
    for text in hostile {
        remember(&app, None, "mallory", text).await;
        let (status, body) =
            call(&app, "POST", "/v1/users/mallory/recall", None, Some(json!({ "query": text, "k": 10 }))).await;
        assert_eq!(status, StatusCode::OK, "{text}: {body}");
        assert!(body["results"].as_array().unwrap().iter().all(|h| h["user"] == "mallory"));
    }
    for user in ["..", "a%2Fb", "%E2%80%AE", "Robert%27%29%3B%20DROP%20TABLE%20users%3B--"] {
        let r = call(&app, "GET", &format!("/v1/users/{user}/memories"), None, None).await;
        assert!(r.0.is_success() || r.0.is_client_error(), "{user}: {r:?}");
    }
    let (_, check) = (0, server.store.integrity_check().unwrap());
    assert!(check.is_empty(), "{check:?}");
}

#[tokio::test]
async fn metrics_count_requests_by_route_template() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    remember(&app, None, "alice", "hello").await;
    call(&app, "POST", "/v1/users/alice/recall", None, Some(json!({ "query": "hello" }))).await;
    let response = tower::ServiceExt::oneshot(app.clone(), request("GET", "/metrics", None, None)).await.unwrap();
    let text = String::from_utf8(axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
    assert!(text.contains("route=\"/v1/users/{user}/recall\",status=\"200\"} 1"), "{text}");
    assert!(text.contains("membank_recalls_total 1"));
    assert!(text.contains("membank_http_request_duration_seconds_bucket"));
    assert!(!text.contains("alice"), "user ids must not become label values");
}

#[tokio::test]
async fn metrics_show_the_search_caches_against_their_budget() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let scrape = || async {
        let response = tower::ServiceExt::oneshot(app.clone(), request("GET", "/metrics", None, None)).await.unwrap();
        String::from_utf8(axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap()
    };
    let value = |text: &str, sample: &str| -> u64 {
        text.lines()
            .find_map(|line| line.strip_prefix(sample).and_then(|rest| rest.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{sample} missing:\n{text}"))
            .parse()
            .unwrap()
    };
    let before = scrape().await;
    assert_eq!(value(&before, "membank_cache_budget_bytes"), membank_store::DEFAULT_CACHE_MB << 20);
    assert_eq!(value(&before, "membank_cache_bytes{cache=\"vectors\"}"), 0);
    remember(&app, None, "alice", "I adopted a grey cat named Miso").await;
    for _ in 0..2 {
        let (status, _) =
            call(&app, "POST", "/v1/users/alice/recall", None, Some(json!({ "query": "what is my cat called" }))).await;
        assert_eq!(status, StatusCode::OK);
    }
    let after = scrape().await;
    for cache in ["vectors", "terms"] {
        let sample = |family: &str| value(&after, &format!("{family}{{cache=\"{cache}\"}}"));
        assert!(sample("membank_cache_bytes") > 0, "{cache}");
        assert_eq!(sample("membank_cache_users"), 1, "{cache}");
        // The first recall loaded alice; every later search was served from the cache.
        assert_eq!(sample("membank_cache_misses_total"), 1, "{cache}");
        assert!(sample("membank_cache_hits_total") >= 1, "{cache}");
        assert_eq!(sample("membank_cache_evictions_total"), 0, "{cache}");
    }
    assert!(after.contains("# TYPE membank_cache_hits_total counter"));
    assert_eq!(
        server.store.cache_stats().bytes(),
        value(&after, "membank_cache_bytes{cache=\"vectors\"}") + value(&after, "membank_cache_bytes{cache=\"terms\"}")
    );
}

#[tokio::test]
async fn openapi_documents_every_route_the_router_serves() {
    let doc = serde_json::to_value(membank_server::openapi()).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/v1/users/{user}/turns",
        "/v1/users/{user}/notes",
        "/v1/users/{user}/recall",
        "/v1/users/{user}/memories",
        "/v1/users/{user}/memories/{id}",
        "/v1/users/{user}/events",
        "/v1/users/{user}/export",
        "/v1/users/{user}/sweep",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(paths.contains_key(path), "{path} missing from the OpenAPI document");
    }
    assert!(paths["/v1/users/{user}/recall"]["post"]["responses"]["422"].is_object());
    // The web app's read-only routes and the streamed chat are public API like the rest.
    for path in [
        "/v1/about",
        "/v1/users/{user}/memories/{id}/curve",
        "/v1/users/{user}/overview",
        "/v1/users/{user}/chat/stream",
    ] {
        assert!(paths.contains_key(path), "{path} missing from the OpenAPI document");
    }
    let stream = &paths["/v1/users/{user}/chat/stream"]["post"];
    assert!(stream["responses"]["200"]["content"]["text/event-stream"].is_object(), "{stream}");
    assert!(stream["description"].as_str().unwrap_or_default().contains("event: delta"), "{stream}");
    assert!(
        paths["/v1/users/{user}/memories/{id}/curve"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "days_ahead")
    );
}
