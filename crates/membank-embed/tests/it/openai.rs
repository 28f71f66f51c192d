//! The OpenAI-compatible client against a stub HTTP server on 127.0.0.1 (port 0, one thread,
//! a bounded number of connections): order, normalisation, request shape, and each kind of
//! failure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use membank_embed::{EmbedError, Embedder, OpenAiConfig, OpenAiEmbedder};

/// A request as the stub saw it.
#[derive(Debug)]
struct Seen {
    request_line: String,
    authorization: Option<String>,
    body: serde_json::Value,
}

/// Serves `responses` (status, body) to successive connections, then stops. Returns the
/// base URL, a receiver of what was requested, and the thread.
fn stub(responses: Vec<(u16, String)>) -> (String, mpsc::Receiver<Seen>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (sender, receiver) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        for (status, body) in responses {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            reader.read_line(&mut request_line).expect("request line");
            let (mut length, mut authorization) = (0usize, None);
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("header");
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').expect("header has a colon");
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().expect("length"),
                    "authorization" => authorization = Some(value.trim().to_owned()),
                    _ => {}
                }
            }
            let mut raw = vec![0u8; length];
            reader.read_exact(&mut raw).expect("body");
            let parsed = serde_json::from_slice(&raw).unwrap_or(serde_json::Value::Null);
            let _ = sender.send(Seen { request_line: request_line.trim_end().to_owned(), authorization, body: parsed });
            let mut stream = reader.into_inner();
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(reply.as_bytes()).expect("reply");
        }
    });
    (base_url, receiver, handle)
}

fn config(base_url: &str, dim: Option<usize>) -> OpenAiConfig {
    OpenAiConfig {
        base_url: base_url.to_owned(),
        model: "nomic-embed-text".to_owned(),
        api_key: Some("sk-test".to_owned()),
        timeout: Duration::from_secs(10),
        dim,
    }
}

#[test]
fn vectors_come_back_in_input_order_and_normalised() {
    let body = r#"{"object":"list","data":[
        {"object":"embedding","index":1,"embedding":[0.0,3.0,4.0]},
        {"object":"embedding","index":0,"embedding":[2.0,0.0,0.0]}],
        "model":"nomic-embed-text","usage":{"prompt_tokens":4,"total_tokens":4}}"#;
    let (base_url, seen, server) = stub(vec![(200, body.to_owned())]);
    let embedder = OpenAiEmbedder::new(config(&base_url, Some(3))).expect("no probe needed");
    assert_eq!(embedder.model_id(), "openai-compat/nomic-embed-text");
    assert_eq!(embedder.dim(), 3);
    let vectors = embedder.embed(&["first", ""]).expect("embeddings");
    assert_eq!(vectors, vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.6, 0.8]]);

    let request = seen.recv().expect("one request");
    assert_eq!(request.request_line, "POST /v1/embeddings HTTP/1.1");
    assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(request.body["model"], "nomic-embed-text");
    assert_eq!(request.body["input"], serde_json::json!(["first", " "]));
    server.join().expect("stub ends");
}

#[test]
fn the_dimension_is_probed_when_not_configured() {
    let body = r#"{"data":[{"index":0,"embedding":[1.0,1.0,1.0,1.0,1.0]}]}"#;
    let (base_url, _seen, server) = stub(vec![(200, body.to_owned())]);
    let embedder = OpenAiEmbedder::new(config(&base_url, None)).expect("probe");
    assert_eq!(embedder.dim(), 5);
    server.join().expect("stub ends");
}

fn failure(status: u16, body: &str, dim: Option<usize>) -> EmbedError {
    let (base_url, _seen, server) = stub(vec![(status, body.to_owned())]);
    let embedder = OpenAiEmbedder::new(config(&base_url, dim.or(Some(3)))).expect("no probe");
    let error = embedder.embed(&["hello"]).expect_err("must fail");
    server.join().expect("stub ends");
    error
}

#[test]
fn unauthorized_says_so() {
    let error =
        failure(401, r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#, None);
    match &error {
        EmbedError::RemoteStatus { status: 401, message, .. } => {
            assert!(message.contains("API key") && message.contains("Incorrect API key provided"), "{message}");
        }
        other => panic!("expected RemoteStatus 401, got {other:?}"),
    }
}

#[test]
fn unknown_model_says_so() {
    let error = failure(404, r#"{"error":"model \"nomic-embed-text\" not found, try pulling it first"}"#, None);
    match &error {
        EmbedError::RemoteStatus { status: 404, message, .. } => {
            assert!(message.contains("nomic-embed-text") && message.contains("not found"), "{message}");
        }
        other => panic!("expected RemoteStatus 404, got {other:?}"),
    }
}

#[test]
fn malformed_answers_are_reported() {
    for body in [
        "this is not json",
        r#"{"data": "nope"}"#,
        r#"{"data": []}"#,
        r#"{"data":[{"index":5,"embedding":[1.0,0.0,0.0]}]}"#,
    ] {
        let error = failure(200, body, None);
        assert!(matches!(error, EmbedError::RemoteMalformed { .. }), "{body}: {error:?}");
    }
}

#[test]
fn a_wrong_dimension_is_reported() {
    let error = failure(200, r#"{"data":[{"index":0,"embedding":[1.0,0.0,0.0,0.0]}]}"#, Some(3));
    match error {
        EmbedError::DimensionMismatch { expected: 3, actual: 4, .. } => {}
        other => panic!("expected DimensionMismatch, got {other:?}"),
    }
}

#[test]
fn an_unreachable_endpoint_is_reported() {
    // Bind and drop: the port is then (almost certainly) closed.
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let embedder = OpenAiEmbedder::new(config(&format!("http://127.0.0.1:{port}/v1"), Some(3))).expect("no probe");
    let error = embedder.embed(&["hello"]).expect_err("nothing listens");
    assert!(matches!(error, EmbedError::RemoteUnreachable { .. }), "{error:?}");
    assert!(matches!(OpenAiEmbedder::new(config("localhost:11434/v1", Some(3))), Err(EmbedError::Remote(_))));
}
