//! A scripted OpenAI-compatible chat server on 127.0.0.1 for protocol tests (feature
//! `stub`): it binds port 0, records every request (path, authorization, JSON body), and
//! answers each with what a responder returns. One thread, one request per connection
//! (`Connection: close`); it stops when dropped.
//!
//! It is a test double, not a server: no keep-alive, no chunked bodies, no TLS.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the stub received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// e.g. `POST /v1/chat/completions`.
    pub request_line: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
}

impl Recorded {
    /// The `(role, content)` of each message in the body.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|m| {
                        (
                            m["role"].as_str().unwrap_or_default().to_owned(),
                            m["content"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// All message contents joined, for `contains` checks.
    pub fn prompt_text(&self) -> String {
        self.messages().into_iter().map(|(_, content)| content).collect::<Vec<_>>().join("\n")
    }

    /// The system message (empty if none).
    pub fn system(&self) -> String {
        self.messages().into_iter().find(|(role, _)| role == "system").map(|(_, c)| c).unwrap_or_default()
    }
}

/// What the stub answers.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body, sent as is.
    pub body: String,
}

impl Reply {
    /// A 200 chat completion whose reply is `content`.
    pub fn text(content: &str) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-stub", "object": "chat.completion", "model": "stub",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
            "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 }
        });
        Self { status: 200, headers: Vec::new(), body: body.to_string() }
    }

    /// A 200 streamed chat completion (server-sent events) whose reply is `pieces` joined,
    /// one chunk per piece, then `[DONE]`.
    pub fn stream(pieces: &[&str]) -> Self {
        let mut body = String::new();
        for piece in pieces {
            let chunk = serde_json::json!({ "id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": "stub", "choices": [{ "index": 0, "delta": { "content": piece }, "finish_reason": null }] });
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        let last = serde_json::json!({ "id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": "stub", "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] });
        body.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
        Self { status: 200, headers: vec![("Content-Type".into(), "text/event-stream".into())], body }
    }

    /// Any status with an OpenAI-style error body.
    pub fn error(status: u16, message: &str) -> Self {
        Self { status, headers: Vec::new(), body: serde_json::json!({ "error": { "message": message } }).to_string() }
    }

    /// A raw body with a status (for malformed answers).
    pub fn raw(status: u16, body: &str) -> Self {
        Self { status, headers: Vec::new(), body: body.to_owned() }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

type Responder = Box<dyn FnMut(&Recorded) -> Reply + Send>;

/// The running stub. See the module docs.
pub struct StubServer {
    base_url: String,
    address: std::net::SocketAddr,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StubServer").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl StubServer {
    /// Answers the n-th request with `replies[n]`, and with a 500 once they run out.
    pub fn scripted(replies: Vec<Reply>) -> Self {
        let mut replies = replies.into_iter();
        Self::with(move |_| replies.next().unwrap_or_else(|| Reply::error(500, "the stub's script ran out")))
    }

    /// Answers each request with `responder(request)`.
    pub fn with(responder: impl FnMut(&Recorded) -> Reply + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("the stub binds 127.0.0.1:0");
        let address = listener.local_addr().expect("the stub has an address");
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (recorded, stop) = (recorded.clone(), stop.clone());
            let mut responder: Responder = Box::new(responder);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = serve(stream, &recorded, &mut responder);
                }
            })
        };
        Self { base_url: format!("http://{address}/v1"), address, recorded, stop, thread: Some(thread) }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many requests so far.
    pub fn count(&self) -> usize {
        self.recorded.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, recorded: &Mutex<Vec<Recorded>>, responder: &mut Responder) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    if request_line.trim().is_empty() {
        return Ok(());
    }
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut raw = vec![0u8; length];
    reader.read_exact(&mut raw)?;
    let request = Recorded {
        request_line: request_line.trim_end().to_owned(),
        authorization,
        body: serde_json::from_slice(&raw).unwrap_or(serde_json::Value::Null),
    };
    let reply = responder(&request);
    recorded.lock().unwrap_or_else(|e| e.into_inner()).push(request);
    let mut head =
        format!("HTTP/1.1 {} Stub\r\nContent-Length: {}\r\nConnection: close\r\n", reply.status, reply.body.len());
    if !reply.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = reader.into_inner();
    stream.write_all(head.as_bytes())?;
    stream.write_all(reply.body.as_bytes())?;
    stream.flush()
}
