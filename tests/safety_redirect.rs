//! Credentials never follow a redirect to another origin: two loopback servers on different ports,
//! the first redirecting to the second, and the second must never see the credential.

mod support;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use secrecy::SecretString;
use sitrep::config::ResolvedAuth;
use sitrep::integrations::transport::{Endpoint, LiveTransport, Request, Transport};
use std::sync::{Arc, Mutex};

const KEY: &str = "x-api-key-canary-0b5e77";
const TOKEN: &str = "bearer-canary-3c9d11";
const PASSWORD: &str = "basic-canary-7a2f40";

type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// A server that records the headers of every request and answers 200.
async fn sink(seen: Seen) -> support::Server {
    let router = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let seen = seen.clone();
        async move {
            if let Ok(mut s) = seen.lock() {
                s.push((uri.to_string(), headers));
            }
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                "{\"ok\":true}",
            )
        }
    });
    support::serve(router).await
}

/// A server that records headers and redirects `/hop?to=URL` to `URL` with `status`.
async fn redirector(seen: Seen, status: StatusCode) -> support::Server {
    let router = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let seen = seen.clone();
        async move {
            if let Ok(mut s) = seen.lock() {
                s.push((uri.to_string(), headers));
            }
            let to = uri
                .query()
                .and_then(|q| q.strip_prefix("to="))
                .unwrap_or("/");
            let to = to.replace("%3A", ":").replace("%2F", "/");
            let resp: Response = (status, [(header::LOCATION, to)], "").into_response();
            resp
        }
    });
    support::serve(router).await
}

fn credentials_in(headers: &HeaderMap) -> Vec<String> {
    let mut found = Vec::new();
    for (name, value) in headers {
        let v = String::from_utf8_lossy(value.as_bytes()).to_string();
        if v.contains(KEY) || v.contains(TOKEN) || name == header::AUTHORIZATION {
            found.push(format!("{name}: {v}"));
        }
    }
    found
}

async fn exchange(auth: ResolvedAuth, status: StatusCode, cross_origin: bool) -> (Seen, Seen) {
    let first_seen: Seen = Arc::default();
    let second_seen: Seen = Arc::default();
    let first = redirector(first_seen.clone(), status).await;
    let second = sink(second_seen.clone()).await;
    let target = if cross_origin {
        format!("{}/landing", second.url)
    } else {
        // A relative Location stays on the first server, which keeps redirecting.
        "/same".to_string()
    };
    let mut ep = Endpoint::new(&first.url).auth(Some(auth));
    ep.headers
        .push(("Cookie".into(), format!("session={TOKEN}")));
    let transport = LiveTransport::new()
        .expect("client")
        .with_endpoint("prometheus", ep);
    let req = Request::get("prometheus", "/hop").query("to", target);
    let resp = transport.send(&req).await;
    if cross_origin {
        let resp = resp.expect("the redirect is followed");
        assert_eq!(resp.status, 200, "the second server answered");
    }
    drop((first, second));
    (first_seen, second_seen)
}

#[tokio::test]
async fn custom_auth_header_is_not_sent_to_another_origin() {
    for status in [
        StatusCode::FOUND,
        StatusCode::MOVED_PERMANENTLY,
        StatusCode::SEE_OTHER,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ] {
        let auth = ResolvedAuth::Header {
            name: "X-Api-Key".into(),
            value: SecretString::from(KEY.to_string()),
        };
        let (first, second) = exchange(auth, status, true).await;
        let first = first.lock().expect("lock");
        let second = second.lock().expect("lock");
        assert_eq!(first.len(), 1, "{status}: the first server was asked once");
        assert_eq!(
            first[0].1.get("x-api-key").and_then(|v| v.to_str().ok()),
            Some(KEY),
            "{status}: the configured origin gets the key"
        );
        assert_eq!(second.len(), 1, "{status}: the redirect was followed");
        let leaked = credentials_in(&second[0].1);
        assert!(
            leaked.is_empty(),
            "{status}: leaked to the other origin: {leaked:?}"
        );
        assert!(
            second[0].1.get(header::COOKIE).is_none(),
            "{status}: cookie leaked"
        );
    }
}

#[tokio::test]
async fn authorization_is_not_sent_to_another_origin() {
    for auth in [
        ResolvedAuth::Bearer(SecretString::from(TOKEN.to_string())),
        ResolvedAuth::Basic {
            username: "ops".into(),
            password: SecretString::from(PASSWORD.to_string()),
        },
    ] {
        let (first, second) = exchange(auth, StatusCode::TEMPORARY_REDIRECT, true).await;
        let first = first.lock().expect("lock");
        let second = second.lock().expect("lock");
        assert!(first[0].1.get(header::AUTHORIZATION).is_some());
        assert_eq!(second.len(), 1);
        let leaked = credentials_in(&second[0].1);
        assert!(leaked.is_empty(), "leaked to the other origin: {leaked:?}");
    }
}

#[tokio::test]
async fn same_origin_redirect_keeps_the_credential() {
    let auth = ResolvedAuth::Header {
        name: "X-Api-Key".into(),
        value: SecretString::from(KEY.to_string()),
    };
    // The redirector sends /hop to /same, which redirects to / and so on until the limit: each hop
    // stays on the configured origin, so each carries the key, and the chain ends in a clear error.
    let (first, _second) = exchange(auth, StatusCode::FOUND, false).await;
    let first = first.lock().expect("lock");
    assert!(first.len() >= 2, "the same-origin redirect was followed");
    for (uri, headers) in first.iter() {
        assert_eq!(
            headers.get("x-api-key").and_then(|v| v.to_str().ok()),
            Some(KEY),
            "{uri}: a same-origin hop keeps the key"
        );
    }
}
