//! Reminiscence over REST and MCP: `reminisce` on a recall (`auto`, `never`, `always`;
//! anything else a 422), hits from the archive marked `reminisced`, the response's
//! `reminiscence` summary, the `reminisced` event, chat's recalled memories, the OpenAPI
//! document.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use membank_engine::Engine;
use membank_engine::core::{SystemClock, TenantId};
use membank_llm::OpenAiChatConfig;
use membank_llm::stub::{Reply, StubServer};
use membank_server::{AppState, AuthMode, ServerConfig};
use serde_json::{Value, json};

use crate::support::*;

const QUESTION: &str = "where does my sister Lena live";

/// Ana's archived fact about her sister and two active turns about other things; the
/// fact's id.
async fn ana_with_an_archived_fact(app: &Router) -> String {
    let (status, fact) = call(
        app,
        "POST",
        "/v1/users/ana/turns",
        None,
        Some(json!({ "user_text": "my sister Lena lives in Porto and works as a nurse" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{fact}");
    for text in ["I had pasta for lunch", "my bike has a flat tyre"] {
        call(app, "POST", "/v1/users/ana/turns", None, Some(json!({ "user_text": text }))).await;
    }
    let id = fact["id"].as_str().unwrap().to_string();
    let (status, body) = call(app, "POST", &format!("/v1/users/ana/memories/{id}/forget"), None, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    id
}

async fn recall(app: &Router, user: &str, body: Value) -> (StatusCode, Value) {
    call(app, "POST", &format!("/v1/users/{user}/recall"), None, Some(body)).await
}

#[tokio::test]
async fn a_recall_reminisces_when_the_active_memories_do_not_answer_and_says_so() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = ana_with_an_archived_fact(&app).await;

    // `never`: as before reminiscence, the archived fact is not there.
    let (status, never) =
        recall(&app, "ana", json!({ "query": QUESTION, "reminisce": "never", "strengthen": false })).await;
    assert_eq!(status, StatusCode::OK, "{never}");
    assert!(never["results"].as_array().unwrap().iter().all(|h| h["id"] != id.as_str() && h["reminisced"] == false));
    assert_eq!(
        never["reminiscence"],
        json!({ "mode": "never", "probed": false, "consulted": false, "archived_hits": 0, "active_best": null, "active_bar": null, "archived_best": null, "margin": 0.0 })
    );

    // The default (`auto`) consults the archive: the fact is first, marked, and brought back.
    let (status, auto) = recall(&app, "ana", json!({ "query": QUESTION })).await;
    assert_eq!(status, StatusCode::OK, "{auto}");
    let first = &auto["results"][0];
    assert_eq!((first["id"].as_str(), first["reminisced"].as_bool()), (Some(id.as_str()), Some(true)), "{auto}");
    assert_eq!(first["status"], "active", "the hit is the memory as it is now: {first}");
    let summary = &auto["reminiscence"];
    assert_eq!(
        (summary["mode"].as_str(), summary["probed"].as_bool(), summary["consulted"].as_bool()),
        (Some("auto"), Some(true), Some(true)),
        "{summary}"
    );
    assert_eq!(summary["archived_hits"], 1);
    assert!(
        summary["archived_best"].as_f64().unwrap()
            > summary["active_bar"].as_f64().unwrap_or(f64::NEG_INFINITY) + summary["margin"].as_f64().unwrap(),
        "{summary}"
    );
    assert!(auto["results"].as_array().unwrap().iter().skip(1).all(|h| h["reminisced"] == false));

    let (_, events) = call(&app, "GET", &format!("/v1/users/ana/events?memory={id}"), None, None).await;
    let event = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "reminisced")
        .expect("a reminisced event")
        .clone();
    assert_eq!(event["data"]["query_id"], auto["query_id"]);
    assert_eq!(
        (
            event["data"]["strength_before"].as_f64(),
            event["data"]["strength_at_archive"].as_f64(),
            event["data"]["strength_after"].as_f64()
        ),
        (Some(1.0), Some(1.0), Some(2.0)),
        "{event}"
    );
    let (_, shown) = call(&app, "GET", &format!("/v1/users/ana/memories/{id}"), None, None).await;
    assert_eq!((shown["status"].as_str(), shown["strength"].as_f64()), (Some("active"), Some(2.0)), "{shown}");

    // Now active, the next recall finds it without the archive.
    let (_, again) = recall(&app, "ana", json!({ "query": QUESTION, "strengthen": false })).await;
    assert_eq!(again["results"][0]["id"], id.as_str());
    assert_eq!(
        (again["results"][0]["reminisced"].as_bool(), again["reminiscence"]["consulted"].as_bool()),
        (Some(false), Some(false)),
        "{again}"
    );
}

#[tokio::test]
async fn always_and_audits_and_another_users_archive() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = ana_with_an_archived_fact(&app).await;
    let (_, always) =
        recall(&app, "ana", json!({ "query": "pasta", "reminisce": "always", "strengthen": false })).await;
    assert_eq!(
        (always["reminiscence"]["consulted"].as_bool(), always["reminiscence"]["probed"].as_bool()),
        (Some(true), Some(false)),
        "{always}"
    );
    // An audit sees the archive anyway and marks nothing.
    let (_, audit) =
        recall(&app, "ana", json!({ "query": QUESTION, "include_archived": true, "reminisce": "always" })).await;
    let hit = audit["results"].as_array().unwrap().iter().find(|h| h["id"] == id.as_str()).unwrap();
    assert_eq!((hit["reminisced"].as_bool(), hit["status"].as_str()), (Some(false), Some("archived")), "{hit}");
    // Bob has no archive: Ana's is never his.
    call(&app, "POST", "/v1/users/bob/turns", None, Some(json!({ "user_text": "I had pasta for lunch" }))).await;
    for mode in ["auto", "always"] {
        let (status, bob) = recall(&app, "bob", json!({ "query": QUESTION, "reminisce": mode })).await;
        assert_eq!(status, StatusCode::OK, "{bob}");
        assert!(
            bob["results"].as_array().unwrap().iter().all(|h| h["id"] != id.as_str() && h["reminisced"] == false),
            "{bob}"
        );
        assert_eq!(bob["reminiscence"]["archived_hits"], 0);
        assert!(bob["reminiscence"]["archived_best"].is_null(), "{bob}");
    }
}

#[tokio::test]
async fn bad_values_of_reminisce_are_a_422_and_change_nothing() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = ana_with_an_archived_fact(&app).await;
    let long = "always".repeat(2_000);
    for bad in [
        json!("sometimes"),
        json!(""),
        json!(" auto"),
        json!("AUTO"),
        json!("never\u{0000}"),
        json!("<script>alert(1)</script>"),
        json!("'; DROP TABLE memories; --"),
        json!(long),
        json!(1),
        json!(true),
        json!(["auto"]),
        json!({ "mode": "auto" }),
    ] {
        let result = recall(&app, "ana", json!({ "query": QUESTION, "reminisce": bad })).await;
        assert_error(&result, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
        let message = result.1["error"]["message"].as_str().unwrap();
        assert!(message.contains("reminisce") || message.contains("invalid type"), "{bad}: {message}");
        assert!(message.len() < 300, "the value is not echoed whole: {} chars", message.len());
    }
    // null is the default.
    let (status, body) =
        recall(&app, "ana", json!({ "query": QUESTION, "reminisce": null, "strengthen": false })).await;
    assert_eq!((status, body["reminiscence"]["mode"].as_str()), (StatusCode::OK, Some("auto")), "{body}");
    // Nothing was logged or restored by the refused recalls.
    let (_, shown) = call(&app, "GET", &format!("/v1/users/ana/memories/{id}"), None, None).await;
    assert_eq!(shown["status"], "archived", "{shown}");
    let (_, events) = call(&app, "GET", "/v1/users/ana/events", None, None).await;
    assert!(events["events"].as_array().unwrap().iter().all(|e| e["kind"] != "recalled"), "{events}");
}

#[tokio::test]
async fn the_openapi_document_describes_reminisce_and_reminisced() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let (status, doc) = call(&server.router(), "GET", "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    let field = &schemas["RecallIn"]["properties"]["reminisce"];
    assert_eq!(field["pattern"], "^(auto|never|always)$", "{field}");
    assert!(field["description"].as_str().unwrap().contains("archive"), "{field}");
    // The hit is the memory (flattened) with its scores, `reminisced` among them.
    let hit = &schemas["RecallHitOut"]["allOf"][1];
    assert_eq!(hit["properties"]["reminisced"]["type"], "boolean", "{hit}");
    assert!(hit["required"].as_array().unwrap().contains(&json!("reminisced")), "{hit}");
    assert!(schemas["RecallOut"]["required"].as_array().unwrap().contains(&json!("reminiscence")));
    for name in ["mode", "probed", "consulted", "archived_hits", "active_best", "active_bar", "archived_best", "margin"]
    {
        assert!(schemas["ReminiscenceOut"]["properties"][name].is_object(), "{name}: {}", schemas["ReminiscenceOut"]);
    }
    assert_eq!(schemas["CitedOut"]["properties"]["reminisced"]["type"], "boolean");
}

#[tokio::test]
async fn the_mcp_recall_tool_takes_reminisce_and_says_what_came_from_the_archive() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let id = ana_with_an_archived_fact(&app).await;
    let mut s = McpSession::open(&app, None, Some("ana")).await;
    let tools = s.rpc("tools/list", json!({})).await;
    let recall_tool =
        tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "recall").unwrap().clone();
    let property = &recall_tool["inputSchema"]["properties"]["reminisce"];
    assert_eq!(property["pattern"], "^(auto|never|always)$", "{recall_tool}");
    for bad in [json!("sometimes"), json!(""), json!("x".repeat(5_000))] {
        let (err, out) = s.tool("recall", json!({ "query": QUESTION, "reminisce": bad })).await;
        assert!(err && out.contains("reminisce") && out.len() < 600, "{out}");
    }
    let (err, out) = s.tool("recall", json!({ "query": QUESTION, "reminisce": 3 })).await;
    assert!(err, "{out}");
    let (err, out) = s.tool("recall", json!({ "query": "sister Lena Porto", "reminisce": "never" })).await;
    assert!(!err && !out.contains(&id), "{out}");
    let answer = s.rpc("tools/call", json!({ "name": "recall", "arguments": { "query": QUESTION } })).await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("id {id}, brought back from the archive\n")), "{text}");
    let structured = &answer["result"]["structuredContent"];
    assert_eq!(
        (structured["results"][0]["id"].as_str(), structured["results"][0]["reminisced"].as_bool()),
        (Some(id.as_str()), Some(true)),
        "{structured}"
    );
    assert_eq!(structured["reminiscence"]["consulted"], true);
}

#[tokio::test]
async fn chat_marks_the_memories_it_recalled_from_the_archive() {
    let stub =
        StubServer::scripted(vec![Reply::text("Lena lives in Porto [M1]."), Reply::text("Lena lives in Porto [M1].")]);
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
    let id = ana_with_an_archived_fact(&app).await;
    let (status, reply) =
        call(&app, "POST", "/v1/users/ana/chat", None, Some(json!({ "message": "Where does my sister Lena live?" })))
            .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let chip = reply["recalled"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id.as_str())
        .expect("recalled from the archive")
        .clone();
    assert_eq!(chip["reminisced"], true, "{chip}");
    assert!(
        reply["recalled"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["id"] != id.as_str())
            .all(|c| c["reminisced"] == false)
    );
    let used = &reply["used"][0];
    assert_eq!((used["id"].as_str(), used["reminisced"].as_bool()), (Some(id.as_str()), Some(true)), "{reply}");
}
