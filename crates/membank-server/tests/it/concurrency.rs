//! The real server on a loopback socket: 200 concurrent clients doing remember and recall
//! on overlapping users lose no strength increment, see no error, and leave a database
//! that passes its integrity check; and graceful shutdown lets in-flight requests finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use membank_server::AuthMode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_clients_lose_no_strength_increment() {
    // Every recall strengthens (not only a memory's first of the day), so a lost update shows.
    let forgetting = membank_engine::core::forgetting::ForgettingPolicy { spaced_recall: false, ..Default::default() };
    let server = TestServer::with_engine(
        AuthMode::Keys,
        Arc::new(membank_engine::core::SystemClock),
        membank_engine::EngineConfig { forgetting, ..Default::default() },
        |_| {},
    );
    let key = server.key("acme", None, false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap();
    // Strengthening recalls that returned each id, counted from the answers.
    let strengthened: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let topics = ["coffee", "hiking", "violin", "sushi", "tennis"];
    let mut tasks = Vec::new();
    for client in 0..200usize {
        let (http, key, strengthened) = (http.clone(), key.clone(), strengthened.clone());
        let base = format!("http://{addr}/v1/users/user{}", client % 10);
        tasks.push(tokio::spawn(async move {
            for round in 0..2 {
                let topic = topics[(client + round) % topics.len()];
                let r = http
                    .post(format!("{base}/turns"))
                    .bearer_auth(&key)
                    .json(&json!({ "user_text": format!("I love {topic} (client {client} round {round})") }))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
                let r = http
                    .post(format!("{base}/recall"))
                    .bearer_auth(&key)
                    .json(&json!({ "query": format!("love {topic}"), "k": 5 }))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                let body: Value = r.json().await.unwrap();
                if body["strengthened"] == true {
                    let mut counts = strengthened.lock().unwrap();
                    for hit in body["results"].as_array().unwrap() {
                        *counts.entry(hit["id"].as_str().unwrap().to_string()).or_default() += 1;
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let counts = strengthened.lock().unwrap().clone();
    let mut checked = 0;
    for user in 0..10 {
        let r = http
            .get(format!("http://{addr}/v1/users/user{user}/memories?limit=1000"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        let body: Value = r.json().await.unwrap();
        for memory in body["memories"].as_array().unwrap() {
            let n = counts.get(memory["id"].as_str().unwrap()).copied().unwrap_or(0);
            assert_eq!(memory["strength"].as_f64().unwrap(), 1.0 + n as f64, "lost increment on {}", memory["id"]);
            assert_eq!(memory["recall_count"].as_u64().unwrap(), n as u64);
            checked += 1;
        }
    }
    assert_eq!(checked, 400);
    assert!(counts.values().sum::<u32>() > 400, "recalls overlapped: {counts:?}");
    let _ = stop.send(());
    handle.await.unwrap().unwrap();
    assert_eq!(server.store.integrity_check().unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_request_in_flight() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));
    let body = json!({ "user_text": "said just before shutdown" }).to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/users/alice/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..5]).await.unwrap();
    // Let the server start reading this request, then ask it to stop.
    tokio::task::yield_now().await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let _ = stop.send(());
    stream.write_all(&body.as_bytes()[5..]).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    handle.await.unwrap().unwrap();
    // The acknowledged write is there after the server is gone.
    drop(server.state);
    let list = membank_engine::Store::list(
        server.store.as_ref(),
        &membank_engine::core::Scope::user(
            membank_engine::core::TenantId::new("default").unwrap(),
            membank_engine::core::UserId::new("alice").unwrap(),
        ),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(list.len(), 1);
}
