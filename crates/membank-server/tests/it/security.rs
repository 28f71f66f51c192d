//! Findings of the security review (issue 10), one test each: DNS rebinding against the
//! loopback no-auth mode, metrics labels an unauthenticated client could grow, and failed
//! authentication limited per client address before the database is asked.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use membank_server::AuthMode;
use serde_json::{Value, json};

use crate::support::*;

fn with_headers(method: &str, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Request<Body> {
    let mut req = request(method, path, None, body);
    for (name, value) in headers {
        req.headers_mut().insert(axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn no_auth_rest_answers_only_loopback_host_names_and_its_own_origin() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let note = json!({ "text": "Alice's bank PIN is 1234" });

    // A page of attacker.example whose name was rebound to 127.0.0.1 sends its own Host.
    for host in ["attacker.example:8787", "attacker.example", "127.0.0.1.nip.io:8787", "localhost.attacker.example"] {
        let stored = send(&app, with_headers("POST", "/v1/users/alice/notes", &[("host", host)], Some(&note))).await;
        assert_error(&stored, StatusCode::FORBIDDEN, "forbidden");
        let export = send(&app, with_headers("GET", "/v1/users/alice/export", &[("host", host)], None)).await;
        assert_error(&export, StatusCode::FORBIDDEN, "forbidden");
        let mcp = send(&app, with_headers("POST", "/mcp", &[("host", host)], Some(&json!({})))).await;
        assert_eq!(mcp.0, StatusCode::FORBIDDEN, "{host}: {}", mcp.1);
    }
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 0, "nothing was stored through a foreign host");

    // The loopback names, with or without a port, are the server's own.
    for host in ["localhost:8787", "127.0.0.1:8787", "[::1]:8787", "LOCALHOST:8787", "localhost", "127.0.0.1"] {
        let stored = send(&app, with_headers("POST", "/v1/users/alice/notes", &[("host", host)], Some(&note))).await;
        assert_eq!(stored.0, StatusCode::CREATED, "{host}: {}", stored.1);
    }

    // A browser's Origin must be the server's own (same scheme, host and port as Host).
    let own = send(
        &app,
        with_headers(
            "POST",
            "/v1/users/alice/notes",
            &[("host", "localhost:8787"), ("origin", "http://localhost:8787")],
            Some(&note),
        ),
    )
    .await;
    assert_eq!(own.0, StatusCode::CREATED, "{}", own.1);
    for origin in [
        "http://attacker.example:8787",
        "http://localhost:3000",
        "https://localhost:8787",
        "null",
        "http://127.0.0.1:8787",
    ] {
        let refused = send(
            &app,
            with_headers(
                "POST",
                "/v1/users/alice/notes",
                &[("host", "localhost:8787"), ("origin", origin)],
                Some(&note),
            ),
        )
        .await;
        assert_error(&refused, StatusCode::FORBIDDEN, "forbidden");
        let export = send(
            &app,
            with_headers("GET", "/v1/users/alice/export", &[("host", "localhost:8787"), ("origin", origin)], None),
        )
        .await;
        assert_error(&export, StatusCode::FORBIDDEN, "forbidden");
    }

    // With keys the key is the guard: a proxy's host name is fine.
    let keyed = TestServer::new(AuthMode::Keys);
    let key = keyed.key("acme", None, false);
    let mut req = request("POST", "/v1/users/alice/notes", Some(&key), Some(&note));
    req.headers_mut().insert("host", "memory.example.com".parse().unwrap());
    assert_eq!(send(&keyed.router(), req).await.0, StatusCode::CREATED);
}

/// The label values of one metric family in `/metrics`.
fn label_values(metrics: &str, family: &str, label: &str) -> std::collections::BTreeSet<String> {
    metrics
        .lines()
        .filter(|l| l.starts_with(family))
        .filter_map(|l| l.split(&format!("{label}=\"")).nth(1).map(|rest| rest.split('"').next().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn metrics_labels_come_from_fixed_sets_whatever_clients_send() {
    for auth in [AuthMode::Keys, AuthMode::LoopbackOpen] {
        let server = TestServer::new(auth);
        let app = server.router();
        let (_, _) = call(&app, "GET", "/healthz", None, None).await;
        let before = send_text(&app, request("GET", "/metrics", None, None)).await;
        let padding = "A".repeat(2048);
        for i in 0..300 {
            let method = format!("X{i}{padding}");
            let paths = [format!("/v1/users/u{i}/notes"), format!("/no/such/route/{i}"), "/healthz".to_string()];
            let req = Request::builder()
                .method(method.as_str())
                .uri(paths[i % 3].as_str())
                .header("host", "127.0.0.1")
                .body(Body::empty())
                .unwrap();
            let response = send(&app, req).await;
            assert!(response.0.is_client_error(), "{}", response.0);
        }
        let after = send_text(&app, request("GET", "/metrics", None, None)).await;
        let methods = label_values(&after, "membank_http_requests_total", "method");
        let known: std::collections::BTreeSet<String> =
            ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert!(
            methods.is_subset(&known),
            "{auth:?}: {} method labels outside the fixed set",
            methods.difference(&known).count()
        );
        assert!(methods.contains("other"));
        let routes = label_values(&after, "membank_http_requests_total", "route");
        assert!(routes.iter().all(|r| r.starts_with('/') || r == "unmatched"), "{routes:?}");
        assert!(!routes.iter().any(|r| r.contains("/no/such")), "{routes:?}");
        // 300 made-up requests add a handful of series, not 300.
        assert!(
            after.len() < before.len() + 16 * 1024,
            "{auth:?}: /metrics grew from {} to {} bytes",
            before.len(),
            after.len()
        );
    }
}

async fn send_text(app: &axum::Router, req: Request<Body>) -> String {
    use tower::ServiceExt;
    let response = app.clone().oneshot(req).await.unwrap();
    String::from_utf8(axum::body::to_bytes(response.into_body(), 64 << 20).await.unwrap().to_vec()).unwrap()
}

fn from(addr: &str, mut req: Request<Body>) -> Request<Body> {
    req.extensions_mut().insert(ConnectInfo(addr.parse::<SocketAddr>().unwrap()));
    req
}

#[tokio::test]
async fn failed_authentication_is_limited_per_client_address_and_good_keys_still_pass() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let key = server.key("acme", None, false);
    let attacker = "203.0.113.7:40000";
    let mut unauthorized = 0;
    let mut limited = None;
    for i in 0..300 {
        // A fresh source port per request, as a new connection has: the address is the IP.
        let port = 40000 + i;
        let response = send(
            &app,
            from(
                &format!("203.0.113.7:{port}"),
                request("GET", "/v1/users/a/memories", Some(&format!("mbk_{i:016x}_guess")), None),
            ),
        )
        .await;
        match response.0 {
            StatusCode::UNAUTHORIZED => unauthorized += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert_error(&response, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
                limited.get_or_insert(i);
            }
            other => panic!("unexpected {other}: {}", response.1),
        }
    }
    assert!(limited.is_some(), "300 bad keys from one address were never limited");
    assert!(unauthorized <= 25, "{unauthorized} bad keys were looked up");
    // The 429 says when to come back.
    let response = {
        use tower::ServiceExt;
        app.clone()
            .oneshot(from(attacker, request("GET", "/v1/users/a/memories", Some("mbk_0_x"), None)))
            .await
            .unwrap()
    };
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    // Failures are throttled, not successes: a valid key from the same address (another
    // person behind the same NAT or proxy) still goes through, every time.
    for _ in 0..6 {
        let (status, body) = send(&app, from(attacker, request("GET", "/v1/users/a/memories", Some(&key), None))).await;
        assert_eq!(status, StatusCode::OK, "a good key was locked out: {body}");
    }
    // ... and the next bad key from there is still refused as limited.
    assert_error(
        &send(&app, from(attacker, request("GET", "/v1/users/a/memories", Some("mbk_1_x"), None))).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    );
    // Other addresses are not affected.
    let (status, body) =
        send(&app, from("198.51.100.1:5000", request("GET", "/v1/users/a/memories", Some(&key), None))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_error(
        &send(&app, from("198.51.100.2:5000", request("GET", "/v1/users/a/memories", Some("mbk_0_wrong"), None))).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // In-process callers without a socket address share one bucket, so they are limited too.
    let mut refused = false;
    for _ in 0..100 {
        if call(&app, "GET", "/v1/users/a/memories", Some("mbk_0_wrong"), None).await.0 == StatusCode::TOO_MANY_REQUESTS
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "callers without an address were never limited");
}

#[tokio::test]
async fn x_forwarded_for_names_the_client_only_behind_a_trusted_proxy() {
    let guess = |i: usize, forwarded: &str| {
        let mut req =
            from("127.0.0.1:9000", request("GET", "/v1/users/a/memories", Some(&format!("mbk_{i}_guess")), None));
        req.headers_mut().insert("x-forwarded-for", forwarded.parse().unwrap());
        req
    };
    // Off by default: the header is ignored, so every client behind the proxy is one address.
    let server = TestServer::with(AuthMode::Keys, |c| {
        c.auth_failures = membank_server::AuthFailureLimit { burst: 3.0, per_minute: 1.0, max_addresses: 100 };
    });
    let app = server.router();
    for i in 0..5 {
        send(&app, guess(i, "203.0.113.7")).await;
    }
    assert_error(&send(&app, guess(9, "198.51.100.1")).await, StatusCode::TOO_MANY_REQUESTS, "rate_limited");

    // Trusted: each forwarded client has its own bucket, and a header the client wrote
    // itself (left of what the proxy appended) changes nothing.
    let server = TestServer::with(AuthMode::Keys, |c| {
        c.auth_failures = membank_server::AuthFailureLimit { burst: 3.0, per_minute: 1.0, max_addresses: 100 };
        c.trusted_proxies = membank_server::TrustedProxies::parse(&["127.0.0.0/8"]).unwrap();
    });
    let app = server.router();
    for i in 0..5 {
        send(&app, guess(i, &format!("10.{i}.0.1, 203.0.113.7"))).await;
    }
    assert_error(&send(&app, guess(9, "203.0.113.7")).await, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_error(&send(&app, guess(9, "198.51.100.1")).await, StatusCode::UNAUTHORIZED, "unauthorized");
    // The proxy itself, without the header, is its own client.
    let bare = from("127.0.0.1:9000", request("GET", "/v1/users/a/memories", Some("mbk_1_guess"), None));
    assert_error(&send(&app, bare).await, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn a_real_socket_limits_failed_authentication_by_the_peer_address() {
    let server = TestServer::new(AuthMode::Keys);
    let key = server.key("acme", None, false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(membank_server::serve(listener, server.state.clone(), async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/users/a/memories");
    let mut statuses = Vec::new();
    for i in 0..60 {
        // A new connection each time: limiting must not hang on the source port.
        let fresh = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        statuses.push(fresh.get(&url).bearer_auth(format!("mbk_{i}_guess")).send().await.unwrap().status().as_u16());
    }
    assert!(statuses.contains(&401) && statuses.contains(&429), "{statuses:?}");
    let last = client.get(&url).bearer_auth("mbk_61_guess").send().await.unwrap();
    assert_eq!(last.status().as_u16(), 429, "the loopback address is blocked for a while");
    assert!(last.headers().contains_key("retry-after"));
    for _ in 0..6 {
        let good = client.get(&url).bearer_auth(&key).send().await.unwrap();
        assert_eq!(good.status().as_u16(), 200, "a valid key from the blocked address was refused");
    }
    let _ = stop.send(());
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive_and_other_schemes_are_refused() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let key = server.key("acme", None, false);
    for value in [format!("Bearer {key}"), format!("bearer {key}"), format!("BEARER {key}"), format!("bEaReR   {key}")]
    {
        let response =
            send(&app, with_headers("GET", "/v1/users/a/memories", &[("authorization", value.as_str())], None)).await;
        assert_eq!(response.0, StatusCode::OK, "{value}: {}", response.1);
    }
    for value in [format!("Basic {key}"), format!("Bearer{key}"), "Bearer ".to_string(), key.clone()] {
        let response =
            send(&app, with_headers("GET", "/v1/users/a/memories", &[("authorization", value.as_str())], None)).await;
        assert_error(&response, StatusCode::UNAUTHORIZED, "unauthorized");
    }
}

/// A request with `name` sent twice.
fn twice(method: &str, path: &str, name: &str, values: [&str; 2], body: Option<&Value>) -> Request<Body> {
    let mut req = request(method, path, None, body);
    let name = axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
    req.headers_mut().remove(&name);
    for value in values {
        req.headers_mut().append(name.clone(), value.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn a_repeated_host_idempotency_key_or_authorization_is_refused_with_400() {
    let open = TestServer::new(AuthMode::LoopbackOpen);
    let app = open.router();
    let note = json!({ "text": "Alice's bank PIN is 1234" });
    // The first Host is loopback, the second is what a proxy might route by.
    let refused =
        send(&app, twice("POST", "/v1/users/alice/notes", "host", ["localhost:8787", "attacker.example"], Some(&note)))
            .await;
    assert_error(&refused, StatusCode::BAD_REQUEST, "bad_request");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("host"), "{}", refused.1);
    let refused =
        send(&app, twice("POST", "/v1/users/alice/notes", "idempotency-key", ["one", "two"], Some(&note))).await;
    assert_error(&refused, StatusCode::BAD_REQUEST, "bad_request");
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 0, "nothing was stored by a refused request");
    // Once each is fine.
    let stored =
        send(&app, twice("POST", "/v1/users/alice/notes", "idempotency-key", ["one", "one"], Some(&note))).await;
    assert_error(&stored, StatusCode::BAD_REQUEST, "bad_request");
    let stored =
        send(&app, with_headers("POST", "/v1/users/alice/notes", &[("idempotency-key", "one")], Some(&note))).await;
    assert_eq!(stored.0, StatusCode::CREATED, "{}", stored.1);

    let keyed = TestServer::new(AuthMode::Keys);
    let app = keyed.router();
    let key = keyed.key("acme", None, false);
    let (good, bad) = (format!("Bearer {key}"), "Bearer mbk_0_guess".to_string());
    let refused = send(&app, twice("GET", "/v1/users/a/memories", "authorization", [&bad, &good], None)).await;
    assert_error(&refused, StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test]
async fn rest_recall_and_list_say_whether_the_user_is_known() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let stored = call(&app, "POST", "/v1/users/alice/notes", None, Some(json!({ "text": "Alice keeps bees" }))).await;
    assert_eq!(stored.0, StatusCode::CREATED, "{}", stored.1);
    let (status, known) =
        call(&app, "POST", "/v1/users/alice/recall", None, Some(json!({ "query": "bees", "strengthen": false }))).await;
    assert_eq!(status, StatusCode::OK, "{known}");
    assert_eq!(known["user_known"], true);
    assert!(known["time_range"].is_null() && known["date_filter"].is_null(), "always present: {known}");
    let (status, unknown) =
        call(&app, "POST", "/v1/users/nobody/recall", None, Some(json!({ "query": "bees", "strengthen": false })))
            .await;
    assert_eq!(status, StatusCode::OK, "{unknown}");
    assert_eq!((unknown["user_known"].as_bool(), unknown["results"].as_array().map(Vec::len)), (Some(false), Some(0)));
    let (_, listed) = call(&app, "GET", "/v1/users/nobody/memories", None, None).await;
    assert_eq!(listed["user_known"], false, "{listed}");
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["user_known"], true, "{listed}");
}

#[tokio::test]
async fn times_outside_the_years_1_to_9999_are_refused_by_rest() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    for at in ["0000-01-01T00:00:00+23:59", "0000-06-01", "-0001-12-31T00:00:00Z"] {
        let refused =
            call(&app, "POST", "/v1/users/alice/notes", None, Some(json!({ "text": "old", "occurred_at": at }))).await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
    }
    let (_, listed) = call(&app, "GET", "/v1/users/alice/memories", None, None).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 0, "{listed}");
    let stored = call(
        &app,
        "POST",
        "/v1/users/alice/notes",
        None,
        Some(json!({ "text": "oldest", "occurred_at": "0001-01-01T00:00:00Z" })),
    )
    .await;
    assert_eq!(stored.0, StatusCode::CREATED, "{}", stored.1);
}

#[tokio::test]
async fn a_users_time_zone_is_read_and_set_over_rest_and_bare_dates_are_its_local_midnight() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    let missing = call(&app, "GET", "/v1/users/alice", None, None).await;
    assert_error(&missing, StatusCode::NOT_FOUND, "not_found");
    let (status, set) =
        call(&app, "PATCH", "/v1/users/alice", None, Some(json!({ "time_zone": "Asia/Shanghai" }))).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!((set["user"].as_str(), set["time_zone"].as_str()), (Some("alice"), Some("Asia/Shanghai")));
    let (status, got) = call(&app, "GET", "/v1/users/alice", None, None).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["time_zone"], "Asia/Shanghai");
    // A bare date is the person's local midnight: 2024-05-04 00:00 in Shanghai.
    let (status, stored) = call(
        &app,
        "POST",
        "/v1/users/alice/notes",
        None,
        Some(json!({ "text": "moved house", "occurred_at": "2024-05-04" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    assert_eq!(stored["occurred_at"], "2024-05-03T16:00:00.000Z", "{stored}");
    assert_eq!(stored["day"], "2024-05-04", "{stored}");
    // Bad settings are refused and change nothing.
    for body in [
        json!({ "time_zone": "Mars/Olympus" }),
        json!({ "time_zone": "" }),
        json!({ "time_zone": "x".repeat(10_000) }),
        json!({ "time_zone": 7 }),
        json!({ "zone": "UTC" }),
        json!({}),
    ] {
        let refused = call(&app, "PATCH", "/v1/users/alice", None, Some(body.clone())).await;
        assert!(refused.0.is_client_error(), "{body}: {} {}", refused.0, refused.1);
        assert!(refused.1["error"]["code"].is_string(), "{body}: {}", refused.1);
    }
    let not_json = send(
        &app,
        Request::builder()
            .method("PATCH")
            .uri("/v1/users/alice")
            .header("content-type", "application/json")
            .body(Body::from("{\"time_zone\":"))
            .unwrap(),
    )
    .await;
    assert!(not_json.0.is_client_error(), "{}", not_json.1);
    let (_, got) = call(&app, "GET", "/v1/users/alice", None, None).await;
    assert_eq!(got["time_zone"], "Asia/Shanghai");
    // A key bound to another user may neither read nor set it.
    let keyed = TestServer::new(AuthMode::Keys);
    let app = keyed.router();
    let bob = keyed.key("default", Some("bob"), false);
    let refused = call(&app, "PATCH", "/v1/users/alice", Some(&bob), Some(json!({ "time_zone": "UTC" }))).await;
    assert_error(&refused, StatusCode::FORBIDDEN, "forbidden");
    let refused = call(&app, "GET", "/v1/users/alice", Some(&bob), None).await;
    assert_error(&refused, StatusCode::FORBIDDEN, "forbidden");
}

#[tokio::test]
async fn the_import_key_is_reserved_in_rest_metadata() {
    let server = TestServer::new(AuthMode::LoopbackOpen);
    let app = server.router();
    for (path, body) in [
        ("/v1/users/alice/notes", json!({ "text": "a note", "metadata": { "import_key": "$[\"alice\"]" } })),
        ("/v1/users/alice/turns", json!({ "user_text": "hi", "metadata": { "import_key": "x" } })),
    ] {
        let refused = call(&app, "POST", path, None, Some(body)).await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "invalid_input");
        assert!(refused.1["error"]["message"].as_str().unwrap().contains("import_key"), "{}", refused.1);
    }
    let stored = call(
        &app,
        "POST",
        "/v1/users/alice/notes",
        None,
        Some(json!({ "text": "a note", "metadata": { "topic": "x" } })),
    )
    .await;
    assert_eq!(stored.0, StatusCode::CREATED, "{}", stored.1);
}
