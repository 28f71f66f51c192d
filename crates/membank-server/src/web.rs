//! The web app, served from the binary itself: `GET /` is its page and `/assets/…` its
//! scripts, styles and the vendored chart library, all embedded at compile time from
//! `crates/membank-server/web/app/` (plain files, no build step: see ARCHITECTURE.md).
//!
//! Each asset is served twice: under its plain name (`/assets/app.js`, revalidated with
//! its ETag) and under a name carrying its content hash (`/assets/app.3f2a…9c.js`, cached
//! for a year as immutable). The page is rewritten once at startup to use the hashed
//! names, so a new binary's page never runs an old cached script. Text assets are
//! gzip-compressed once, at first use, and sent compressed to clients that accept it.
//!
//! Every response carries a strict Content-Security-Policy: scripts, styles and requests
//! only from this origin, no inline script, no inline style attribute, no framing. The
//! app talks to the server only through the public REST API, with the key the person
//! typed kept in the tab's session storage.

use std::collections::HashMap;
use std::io::Write;
use std::sync::OnceLock;

use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

static FILES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/web/app");

/// The policy every page and asset is sent with.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// One file ready to send.
struct Asset {
    content_type: &'static str,
    body: Vec<u8>,
    /// The gzip form, for text worth compressing.
    gzip: Option<Vec<u8>>,
    /// A strong ETag: the content hash in quotes.
    etag: String,
    /// Whether this name carries the content hash (cached forever).
    immutable: bool,
}

struct Assets {
    index: Asset,
    /// By path under `/assets/`: plain and hashed names.
    by_path: HashMap<String, Asset>,
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        _ => "text/plain; charset=utf-8",
    }
}

fn hex_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `vendor/uPlot.min.css` with hash `h` → `vendor/uPlot.min.h.css`.
fn hashed_name(path: &str, hash: &str) -> String {
    match path.rsplit_once('.') {
        Some((stem, ext)) if !stem.ends_with('/') && !stem.is_empty() => format!("{stem}.{hash}.{ext}"),
        _ => format!("{path}.{hash}"),
    }
}

fn gzip(body: &[u8], content_type: &str) -> Option<Vec<u8>> {
    let text =
        content_type.starts_with("text/") || content_type == "application/json" || content_type == "image/svg+xml";
    if !text || body.len() < 1024 {
        return None;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(body).ok()?;
    let compressed = encoder.finish().ok()?;
    (compressed.len() < body.len()).then_some(compressed)
}

fn asset(path: &str, body: Vec<u8>, immutable: bool) -> Asset {
    let content_type = content_type(path);
    let etag = format!("\"{}\"", hex_hash(&body));
    Asset { content_type, gzip: gzip(&body, content_type), body, etag, immutable }
}

fn files(dir: &'static Dir<'static>, out: &mut Vec<(&'static str, &'static [u8])>) {
    for file in dir.files() {
        if let Some(path) = file.path().to_str() {
            out.push((path, file.contents()));
        }
    }
    for sub in dir.dirs() {
        files(sub, out);
    }
}

fn build() -> Assets {
    let mut all = Vec::new();
    files(&FILES, &mut all);
    let mut by_path = HashMap::new();
    let mut index_html =
        String::from("<!doctype html><title>membank</title><p>The web app was built without its page.</p>");
    let mut renames = Vec::new();
    for (path, contents) in all {
        if path == "index.html" {
            index_html = String::from_utf8_lossy(contents).into_owned();
            continue;
        }
        let hashed = hashed_name(path, &hex_hash(contents));
        renames.push((format!("/assets/{path}\""), format!("/assets/{hashed}\"")));
        by_path.insert(hashed, asset(path, contents.to_vec(), true));
        by_path.insert(path.to_string(), asset(path, contents.to_vec(), false));
    }
    // References in the page end with a quote (`src="/assets/app.js"`), so one name is
    // never a prefix of another's replacement.
    for (plain, hashed) in renames {
        index_html = index_html.replace(&plain, &hashed);
    }
    Assets { index: asset("index.html", index_html.into_bytes(), false), by_path }
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(build)
}

/// The security headers of every web response.
fn secure(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

fn accepts_gzip(request: &HeaderMap) -> bool {
    request.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused =
                parts.any(|p| matches!(p.trim().replace(' ', "").as_str(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        },
    )
}

fn send(asset: &Asset, request: &HeaderMap) -> Response {
    let not_modified = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            tag.trim() == asset.etag || tag.trim() == "*" || tag.trim().strip_prefix("W/") == Some(asset.etag.as_str())
        });
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        match (&asset.gzip, accepts_gzip(request)) {
            (Some(gzip), true) => {
                let mut response = Response::new(Body::from(gzip.clone()));
                response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                response
            }
            _ => Response::new(Body::from(asset.body.clone())),
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    if let Ok(etag) = HeaderValue::from_str(&asset.etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if asset.immutable { "public, max-age=31536000, immutable" } else { "no-cache" }),
    );
    if asset.gzip.is_some() {
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    secure(headers);
    response
}

/// `GET /`: the app's page.
pub async fn index(request: HeaderMap) -> Response {
    send(&assets().index, &request)
}

/// `GET /favicon.ico`: the app's icon, for clients that ask the root for it whatever the
/// page names (a browser's first request, a bookmark), so none of them logs a 404.
pub async fn favicon(request: HeaderMap) -> Response {
    match assets().by_path.get("favicon.svg") {
        Some(asset) => send(asset, &request),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// `GET /assets/{*path}`: a script, style or vendored file of the app.
pub async fn file(Path(path): Path<String>, request: HeaderMap) -> Response {
    match assets().by_path.get(&path) {
        Some(asset) => send(asset, &request),
        None => {
            let mut response = ApiError::NotFound("no such asset of the web app".into()).into_response();
            secure(response.headers_mut());
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names_keep_the_extension() {
        assert_eq!(hashed_name("app.js", "ab12"), "app.ab12.js");
        assert_eq!(hashed_name("vendor/uPlot.min.css", "ab12"), "vendor/uPlot.min.ab12.css");
        assert_eq!(hashed_name("vendor/LICENSE", "ab12"), "vendor/LICENSE.ab12");
        assert_eq!(hashed_name(".hidden", "ab12"), ".hidden.ab12");
    }

    #[test]
    fn gzip_is_offered_only_when_accepted() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
            accepts_gzip(&headers)
        };
        assert!(with("gzip, deflate, br"));
        assert!(with("br;q=1.0, gzip;q=0.8"));
        assert!(with("*"));
        assert!(!with("gzip;q=0"));
        assert!(!with("br, deflate"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn every_reference_in_the_page_is_hashed_and_served() {
        let assets = assets();
        let page = String::from_utf8(assets.index.body.clone()).unwrap();
        let mut references = 0;
        for part in page.split("\"/assets/").skip(1) {
            let name = part.split('"').next().unwrap();
            let asset = assets
                .by_path
                .get(name)
                .unwrap_or_else(|| panic!("the page refers to /assets/{name}, which is not served"));
            assert!(asset.immutable, "/assets/{name} is referenced without its hash");
            references += 1;
        }
        assert!(references >= 2, "the page loads its script and style from /assets/: {page}");
        assert!(
            !page.contains("<script>") && !page.contains("onclick") && !page.contains("style=\""),
            "the page has inline script or style, which the CSP refuses"
        );
    }
}
