//! Slow clients on a real loopback socket: trickled heads and bodies, idle keep-alive
//! connections, and a trickling client during shutdown each lose their connection under
//! the configured timeouts (short ones here). The generous outer bounds only keep a
//! regression from hanging the suite; before the timeouts existed each case stayed open
//! for as long as the client kept trickling. A client that stops reading a large export
//! loses its connection under the write timeout.

use std::time::Duration;

use membank_server::{AuthMode, Timeouts};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::TestServer;

const SHORT: Timeouts = Timeouts {
    header: Duration::from_millis(600),
    body: Duration::from_millis(600),
    write: Duration::from_millis(600),
    shutdown: Duration::from_millis(600),
};

/// How long the client goes on trickling: far beyond every timeout above.
const TRICKLE_FOR: Duration = Duration::from_secs(30);

struct Running {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), membank_server::ServeError>>,
}

async fn start() -> Running {
    start_with(SHORT).await
}

async fn start_with(timeouts: Timeouts) -> Running {
    let server = TestServer::with(AuthMode::LoopbackOpen, |c| c.timeouts = timeouts);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));
    Running { addr, stop, handle }
}

/// Sends `bytes` one at a time, 100 ms apart, until the server closes the connection;
/// whether it did (a write or read failed, or the peer closed) before `TRICKLE_FOR`.
async fn trickle_until_closed(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    let deadline = tokio::time::Instant::now() + TRICKLE_FOR;
    let mut buf = [0u8; 4096];
    for byte in bytes.iter().cycle() {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        if stream.write_all(&[*byte]).await.is_err() {
            return true;
        }
        // A response or a close may arrive between bytes.
        match tokio::time::timeout(Duration::from_millis(100), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) | Err(_) => {}
        }
    }
    unreachable!()
}

/// Reads until the server closes; whether it did before `TRICKLE_FOR`, and what it sent.
async fn read_until_closed(stream: &mut TcpStream) -> (bool, String) {
    let mut got = Vec::new();
    let closed = tokio::time::timeout(TRICKLE_FOR, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (closed, String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn a_trickled_head_loses_its_connection() {
    let server = start().await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    assert!(trickle_until_closed(&mut stream, b"X-Slow: aaaaaaaa\r\n").await, "a trickled head was kept open");
    let _ = server.stop.send(());
    server.handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_trickled_body_is_refused_and_its_connection_closed() {
    let server = start().await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"POST /v1/users/a/notes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n{\"text\":\"",
        )
        .await
        .unwrap();
    assert!(trickle_until_closed(&mut stream, b"a").await, "a trickled body was kept open");
    let (_, got) = read_until_closed(&mut stream).await;
    assert!(got.is_empty() || got.starts_with("HTTP/1.1 400"), "{got}");
    let _ = server.stop.send(());
    server.handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_its_response() {
    let server = start().await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let (closed, got) = read_until_closed(&mut stream).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(closed, "an idle keep-alive connection stayed open");
    let _ = server.stop.send(());
    server.handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_trickling_client_cannot_hold_shutdown() {
    // A head timeout far longer than the trickle, so only the shutdown deadline can end it.
    let server = start_with(Timeouts { header: Duration::from_secs(600), ..SHORT }).await;
    let addr = server.addr;
    let trickler = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        trickle_until_closed(&mut stream, b"X-Slow: a\r\n").await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = server.stop.send(());
    let stopped = tokio::time::timeout(TRICKLE_FOR, server.handle).await;
    assert!(stopped.is_ok(), "shutdown waited on a trickling client");
    stopped.unwrap().unwrap().unwrap();
    assert!(trickler.await.unwrap(), "the trickling client's connection was not dropped");
}

#[tokio::test]
async fn a_client_that_stops_reading_an_export_loses_its_connection() {
    use membank_engine::core::{Kind, Memory, Scope, TenantId, UserId};
    use membank_store::{NewMemory, Store};
    // The head and idle timeouts far longer than the test, so only the write timeout can
    // close the connection.
    let server = TestServer::with(AuthMode::LoopbackOpen, |c| {
        c.timeouts = Timeouts { header: Duration::from_secs(600), ..SHORT };
    });
    let scope = Scope::user(TenantId::new("default").unwrap(), UserId::new("big").unwrap());
    let at = chrono::Utc::now() - chrono::Duration::days(1);
    server.store.ensure_user(&scope.tenant, &scope.user, at).unwrap();
    let text = "the export of this user is far larger than any socket buffer ".repeat(130);
    let batch = (0..600)
        .map(|i| NewMemory {
            memory: Memory::fixture(&scope, Kind::Note, format!("{i} {text}"), at + chrono::Duration::seconds(i)),
            embedding: None,
        })
        .collect();
    server.store.insert_many(batch).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));

    // A small receive window, and no reading: the server's writes stall almost at once.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream.write_all(b"GET /v1/users/big/export HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (closed, got) = read_until_closed(&mut stream).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{}", &got[..got.len().min(200)]);
    assert!(closed, "a client that stopped reading kept its connection");
    // The export (about 4.7 MB) was cut off, not delivered: its last chunk never came.
    assert!(got.len() < 4_000_000 && !got.ends_with("0\r\n\r\n"), "{} bytes arrived", got.len());
    let _ = stop.send(());
    tokio::time::timeout(TRICKLE_FOR, handle).await.expect("shutdown waited").unwrap().unwrap();
}
