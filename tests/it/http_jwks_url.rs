//! A JWKS fetched from a URL: a local identity provider (axum on a free
//! loopback port) serves a key set that the tests change under a running
//! server — a key rotated in and out, a broken answer, a flood of made-up
//! `kid`s — with no restart.
#![cfg(feature = "jwks-url")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accord::http::auth::jwks::JwksUrl;
use accord::http::scope;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::http_support::{claims, start_with, Server, P};

const BEFORE: &str = include_str!("../data/jwt/jwks_before.json");
const AFTER: &str = include_str!("../data/jwt/jwks_after.json");

/// What the identity provider answers, and how often it was asked.
#[derive(Default)]
struct Idp {
    answer: Mutex<(u16, String)>,
    hits: AtomicUsize,
}

impl Idp {
    fn serve(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_owned());
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn jwks(State(idp): State<Arc<Idp>>) -> impl IntoResponse {
    idp.hits.fetch_add(1, Ordering::SeqCst);
    let (status, body) = idp.answer.lock().unwrap().clone();
    (
        StatusCode::from_u16(status).unwrap(),
        [
            (header::CONTENT_TYPE, "application/jwk-set+json"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
}

/// Starts an identity provider serving `body`: it and its JWKS URL.
async fn idp(body: &str) -> (Arc<Idp>, String) {
    let idp = Arc::new(Idp::default());
    idp.serve(200, body);
    let app = axum::Router::new()
        .route("/.well-known/jwks.json", axum::routing::get(jwks))
        .with_state(Arc::clone(&idp));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (idp, url)
}

/// The union of two key sets (a new key published beside the old one).
fn both(a: &str, b: &str) -> String {
    let mut keys: Vec<Value> = Vec::new();
    for set in [a, b] {
        let set: Value = serde_json::from_str(set).unwrap();
        for key in set["keys"].as_array().unwrap() {
            if !keys.iter().any(|k| k["kid"] == key["kid"]) {
                keys.push(key.clone());
            }
        }
    }
    json!({ "keys": keys }).to_string()
}

fn rsa1() -> EncodingKey {
    EncodingKey::from_rsa_pem(include_bytes!("../data/jwt/rsa_private.pem")).unwrap()
}

fn rsa2() -> EncodingKey {
    EncodingKey::from_rsa_pem(include_bytes!("../data/jwt/rsa2_private.pem")).unwrap()
}

/// An RS256 token with every scope on project `shop`, naming `kid`.
fn token(key: &EncodingKey, kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims(scope::ALL, &[P]), key).unwrap()
}

async fn status(s: &Server, token: &str) -> u16 {
    s.client
        .post(s.campaign_url("/search"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Polls until `token` gets `want`, for at most 10 seconds.
async fn until(s: &Server, token: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(s, token).await != want {
        assert!(Instant::now() < deadline, "never answered {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The scheduled refresh follows a rotation: the new key is published
/// beside the old one, then the old one is removed.
#[tokio::test(flavor = "multi_thread")]
async fn scheduled_refreshes_follow_a_rotation() {
    let (idp, url) = idp(BEFORE).await;
    let auth = JwksUrl::new(&url)
        .refresh_every(Duration::from_secs(1))
        .unknown_kid_interval(Duration::from_secs(3600))
        .start()
        .await
        .unwrap();
    let s = start_with(auth).await;
    let old = token(&rsa1(), "rsa-1");
    let new = token(&rsa2(), "rsa-2");
    assert_eq!(status(&s, &old).await, 200);
    assert_eq!(status(&s, &new).await, 401);

    idp.serve(200, &both(BEFORE, AFTER));
    until(&s, &new, 200).await;
    assert_eq!(status(&s, &old).await, 200);

    idp.serve(200, AFTER);
    until(&s, &old, 401).await;
    assert_eq!(status(&s, &new).await, 200);
}

/// A token naming a key the set lacks has the set fetched again — so a
/// key rotated in is accepted at once — but at most once per interval,
/// however many such tokens come.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_kid_fetches_the_set_again_at_most_once_per_interval() {
    let (idp, url) = idp(BEFORE).await;
    let interval = Duration::from_millis(500);
    let auth = JwksUrl::new(&url)
        .refresh_every(Duration::from_secs(3600))
        .unknown_kid_interval(interval)
        .start()
        .await
        .unwrap();
    let s = start_with(auth).await;
    assert_eq!(idp.hits(), 1);
    idp.serve(200, AFTER);
    tokio::time::sleep(interval).await;
    assert_eq!(status(&s, &token(&rsa2(), "rsa-2")).await, 200);
    assert_eq!(idp.hits(), 2);
    assert_eq!(status(&s, &token(&rsa1(), "rsa-1")).await, 401);

    // A flood of made-up kids: within the interval, no fetch at all; past
    // it, one.
    let flood = |s: &Server| {
        let key = rsa1();
        let tokens: Vec<String> = (0..40)
            .map(|i| token(&key, &format!("made-up-{i}")))
            .collect();
        let (client, url) = (s.client.clone(), s.campaign_url("/search"));
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for t in tokens {
                let (client, url) = (client.clone(), url.clone());
                tasks.spawn(async move {
                    let res = client.post(url).bearer_auth(t).json(&json!({}));
                    res.send().await.unwrap().status().as_u16()
                });
            }
            while let Some(code) = tasks.join_next().await {
                assert_eq!(code.unwrap(), 401);
            }
        }
    };
    flood(&s).await;
    assert!(idp.hits() <= 3, "{} fetches", idp.hits());
    tokio::time::sleep(interval).await;
    let before = idp.hits();
    flood(&s).await;
    assert_eq!(idp.hits(), before + 1);
}

/// The server does not start on a JWKS URL it cannot use, and says why;
/// once started, a broken answer keeps the keys it has.
#[tokio::test(flavor = "multi_thread")]
async fn unusable_answers_stop_the_start_and_keep_the_keys() {
    // Nothing listens on a port just released.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/jwks.json", l.local_addr().unwrap())
    };
    let err = JwksUrl::new(&closed)
        .timeout(Duration::from_secs(2))
        .start()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_jwt_key");
    assert!(
        err.message().contains(&closed) && err.message().contains("cannot fetch"),
        "{err}"
    );
    for bad in ["ftp://id.example/jwks", "not a url", ""] {
        let err = JwksUrl::new(bad).start().await.unwrap_err();
        assert!(err.message().contains("not an http"), "{err}");
    }
    let (idp, url) = idp("{\"keys\": [").await;
    for (code, body, why) in [
        (200, "{\"keys\": [", "not a JSON Web Key Set"),
        (200, "<html>sign in</html>", "not a JSON Web Key Set"),
        (200, r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#, "no RSA"),
        (503, BEFORE, "503"),
        (404, "", "404"),
    ] {
        idp.serve(code, body);
        let err = JwksUrl::new(&url).start().await.unwrap_err();
        assert!(
            err.message().contains(&url) && err.message().contains(why),
            "{why}: {err}"
        );
    }

    idp.serve(200, BEFORE);
    let auth = JwksUrl::new(&url)
        .refresh_every(Duration::from_secs(1))
        .unknown_kid_interval(Duration::ZERO)
        .start()
        .await
        .unwrap();
    let s = start_with(auth).await;
    let good = token(&rsa1(), "rsa-1");
    assert_eq!(status(&s, &good).await, 200);
    for (code, body) in [(200, "{\"keys\": ["), (500, ""), (200, "{\"keys\": []}")] {
        idp.serve(code, body);
        let hits = idp.hits();
        // An unknown kid fetches at once (interval zero); then the
        // scheduled refresh, within a second or so.
        assert_eq!(status(&s, &token(&rsa2(), "rsa-2")).await, 401);
        let deadline = Instant::now() + Duration::from_secs(10);
        while idp.hits() < hits + 2 {
            assert!(Instant::now() < deadline, "no refresh");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status(&s, &good).await, 200, "after {code} {body}");
    }
}
