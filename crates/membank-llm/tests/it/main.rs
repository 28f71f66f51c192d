//! The OpenAI-compatible chat client against the scripted stub server on 127.0.0.1: the
//! request's shape, the token budget, retries with backoff on 429/5xx, and a clear error
//! for each failure (unauthorised, model missing, context too long, unreachable,
//! malformed answer).

#![allow(missing_docs)]

use std::time::Duration;

use membank_llm::stub::{Reply, StubServer};
use membank_llm::{CompletionRequest, Llm, LlmError, Message, OpenAiChat, OpenAiChatConfig};

fn client(base_url: &str) -> OpenAiChat {
    let mut config = OpenAiChatConfig::new(base_url, "tiny-model");
    config.api_key = Some("sk-test".into());
    config.timeout = Duration::from_secs(20);
    // Retries still happen; the waits are just short so the suite stays fast.
    config.backoff = Duration::from_millis(1);
    config.max_backoff = Duration::from_millis(5);
    config.context_tokens = 2048;
    config.reply_tokens = 128;
    OpenAiChat::new(config).unwrap()
}

fn hello() -> CompletionRequest {
    CompletionRequest::new(vec![Message::system("You are terse."), Message::user("Say hi")])
}

#[test]
fn a_call_sends_model_messages_budget_and_key_and_returns_the_reply() {
    let stub = StubServer::scripted(vec![Reply::text("Hi!")]);
    let completion = client(stub.base_url()).complete(&hello()).unwrap();
    assert_eq!(completion.content, "Hi!");
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
    assert_eq!(completion.prompt_tokens, Some(10));
    let seen = stub.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(seen[0].body["model"], "tiny-model");
    assert_eq!(seen[0].body["max_tokens"], 128);
    assert_eq!(
        seen[0].messages(),
        vec![("system".to_owned(), "You are terse.".to_owned()), ("user".to_owned(), "Say hi".to_owned())]
    );
}

#[test]
fn rate_limits_and_server_errors_are_retried_then_succeed() {
    let stub = StubServer::scripted(vec![
        Reply::error(429, "slow down").with_header("Retry-After", "0"),
        Reply::error(503, "loading model"),
        Reply::text("finally"),
    ]);
    assert_eq!(client(stub.base_url()).complete(&hello()).unwrap().content, "finally");
    assert_eq!(stub.count(), 3);
}

#[test]
fn persistent_rate_limiting_gives_up_after_the_configured_retries() {
    let stub = StubServer::with(|_| Reply::error(429, "quota exceeded"));
    let err = client(stub.base_url()).complete(&hello()).unwrap_err();
    assert!(matches!(err, LlmError::RateLimited { attempts: 4, .. }), "{err:?}");
    assert!(err.to_string().contains("quota exceeded"), "{err}");
    assert_eq!(stub.count(), 4, "one attempt and three retries");
}

#[test]
fn a_refused_key_is_unauthorised_and_not_retried() {
    let stub = StubServer::with(|_| Reply::error(401, "Incorrect API key provided"));
    let err = client(stub.base_url()).complete(&hello()).unwrap_err();
    assert!(matches!(err, LlmError::Unauthorized { status: 401, .. }), "{err:?}");
    assert!(err.to_string().contains("MEMBANK_LLM_API_KEY"), "the error says how to fix it: {err}");
    assert_eq!(stub.count(), 1);
}

#[test]
fn an_unknown_model_is_model_missing() {
    let stub = StubServer::with(|_| Reply::error(404, "model \"tiny-model\" not found, try pulling it first"));
    let err = client(stub.base_url()).complete(&hello()).unwrap_err();
    assert!(matches!(&err, LlmError::ModelMissing { model, .. } if model == "tiny-model"), "{err:?}");
    assert!(err.to_string().contains("MEMBANK_LLM_MODEL"), "{err}");
    assert_eq!(stub.count(), 1);
}

#[test]
fn context_overflow_is_refused_before_sending_or_named_when_the_server_says_so() {
    let stub = StubServer::with(|_| Reply::error(400, "Requested tokens (5000) exceed context window of 2048"));
    let llm = client(stub.base_url());
    let long = CompletionRequest::new(vec![Message::user("word ".repeat(3000))]);
    let err = llm.complete(&long).unwrap_err();
    assert!(matches!(err, LlmError::ContextTooLong { estimated: Some(_), .. }), "{err:?}");
    assert_eq!(stub.count(), 0, "an oversized prompt is never sent");

    let err = llm.complete(&hello()).unwrap_err();
    assert!(matches!(err, LlmError::ContextTooLong { estimated: None, .. }), "{err:?}");
}

#[test]
fn nothing_listening_is_unreachable_at_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = client(&format!("http://127.0.0.1:{port}/v1")).complete(&hello()).unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("is the server running"), "{err}");
}

#[test]
fn malformed_answers_are_named() {
    for body in [
        "this is not json",
        r#"{"choices": []}"#,
        r#"{"choices": [{"message": {"role": "assistant"}}]}"#,
        r#"{"object": "list"}"#,
    ] {
        let stub = StubServer::scripted(vec![Reply::raw(200, body)]);
        let err = client(stub.base_url()).complete(&hello()).unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{body}: {err:?}");
    }
}

#[test]
fn a_base_url_without_scheme_is_refused() {
    let err = OpenAiChat::new(OpenAiChatConfig::new("localhost:11434/v1", "m")).unwrap_err();
    assert!(matches!(err, LlmError::BadUrl { .. }), "{err:?}");
}

#[test]
fn a_streamed_call_hands_over_each_piece_as_it_arrives_and_returns_the_whole_reply() {
    let stub = StubServer::scripted(vec![Reply::stream(&["You ", "mentioned ", "Paris [M1]."])]);
    let mut pieces = Vec::new();
    let completion =
        client(stub.base_url()).complete_streaming(&hello(), &mut |piece| pieces.push(piece.to_owned())).unwrap();
    assert_eq!(pieces, vec!["You ", "mentioned ", "Paris [M1]."]);
    assert_eq!(completion.content, "You mentioned Paris [M1].");
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
    assert_eq!(stub.requests()[0].body["stream"], true);
}

#[test]
fn a_server_that_ignores_stream_gives_one_piece() {
    let stub = StubServer::scripted(vec![Reply::text("all at once")]);
    let mut pieces = Vec::new();
    let completion =
        client(stub.base_url()).complete_streaming(&hello(), &mut |piece| pieces.push(piece.to_owned())).unwrap();
    assert_eq!((pieces, completion.content), (vec!["all at once".to_owned()], "all at once".to_owned()));
}

#[test]
fn a_streamed_call_is_retried_before_its_first_piece_and_fails_clearly_on_garbage() {
    let stub = StubServer::scripted(vec![Reply::error(503, "loading model"), Reply::stream(&["ok"])]);
    let completion = client(stub.base_url()).complete_streaming(&hello(), &mut |_| {}).unwrap();
    assert_eq!((completion.content.as_str(), stub.count()), ("ok", 2));

    let garbage = StubServer::scripted(vec![
        Reply::raw(200, "data: {not json\n\n").with_header("Content-Type", "text/event-stream"),
    ]);
    let err = client(garbage.base_url()).complete_streaming(&hello(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LlmError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("chunk"), "{err}");

    let refused = StubServer::scripted(vec![Reply::error(401, "bad key")]);
    let err = client(refused.base_url()).complete_streaming(&hello(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LlmError::Unauthorized { .. }), "{err:?}");
}
