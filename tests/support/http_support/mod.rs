//! Helpers of the HTTP tests: the router bound to an ephemeral port on
//! 127.0.0.1 (a real TCP socket), a reqwest client, tokens.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use accord::http::{router, scope, serve, Api, Auth, Claims, HttpStore, ServeConfig};
use accord::store::memory::MemoryStore;
use accord::ManualClock;
use chrono::{DateTime, TimeZone, Utc};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;

/// The HS256 secret of the test servers.
pub const SECRET: &str = "test-secret-test-secret-test-secret!";
/// The project of most tests.
pub const P: &str = "shop";

/// 2026-06-15T10:00:00Z, inside every fixture's period.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

pub struct Server {
    pub base: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub store: Arc<MemoryStore>,
    /// A token with every scope for project `shop`.
    pub admin: String,
}

/// Starts the router over a memory store with HS256 auth.
pub async fn start() -> Server {
    start_with(Auth::hs256(SECRET).unwrap()).await
}

/// Starts the router over a memory store with `auth`.
pub async fn start_with(auth: Auth) -> Server {
    let clock = Arc::new(ManualClock::new(t0()));
    let store = Arc::new(MemoryStore::new());
    let api = Api::new(store.clone(), clock.clone(), auth);
    serve_api(api, clock, store).await
}

/// Serves `api` (built over `clock` and `store`) on a free loopback port.
pub async fn serve_api(
    api: Api<MemoryStore>,
    clock: Arc<ManualClock>,
    store: Arc<MemoryStore>,
) -> Server {
    let (base, client) = listen(api).await;
    Server {
        base,
        client,
        clock,
        store,
        admin: token(scope::ALL, &[P]),
    }
}

/// Serves `api` on a free loopback port (with `accord::http::serve`, as
/// `accord serve` does): its base URL, and a client.
pub async fn listen<S: HttpStore>(api: Api<S>) -> (String, reqwest::Client) {
    listen_with(api, ServeConfig::default()).await
}

/// [`listen`] with the serving bounds of `config`.
pub async fn listen_with<S: HttpStore>(
    api: Api<S>,
    config: ServeConfig,
) -> (String, reqwest::Client) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        serve(listener, router(api), config, std::future::pending())
            .await
            .unwrap();
    });
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    (format!("http://{addr}"), client)
}

/// An HS256 token signed with [`SECRET`], valid for an hour.
pub fn token(scopes: &[&str], projects: &[&str]) -> String {
    claims(scopes, projects)
        .sign_hs256(SECRET.as_bytes())
        .unwrap()
}

pub fn claims(scopes: &[&str], projects: &[&str]) -> Claims {
    Claims {
        sub: "tester".to_owned(),
        exp: Utc::now().timestamp() + 3600,
        scope: scopes.join(" "),
        projects: projects.iter().map(|p| (*p).to_owned()).collect(),
    }
}

/// A campaign fixture of `tests/data/campaigns/<name>.json`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/data/campaigns/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `/campaign/api/projects/shop{rest}`.
    pub fn campaign_url(&self, rest: &str) -> String {
        self.url(&format!("/campaign/api/projects/{P}{rest}"))
    }

    /// `/bff/api/consent/projects/shop{rest}`.
    pub fn bff(&self, rest: &str) -> String {
        self.url(&format!("/bff/api/consent/projects/{P}{rest}"))
    }

    /// `/cms/api/projects/shop/c/{rest}`.
    pub fn cms(&self, rest: &str) -> String {
        self.url(&format!("/cms/api/projects/{P}/c/{rest}"))
    }

    /// POST `body` to `url` with the admin token: status and body.
    pub async fn post_json(&self, url: &str, body: Value) -> (u16, Value) {
        parts(
            self.req(Method::POST, url)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// GET `url` with the admin token: status and body.
    pub async fn get_json(&self, url: &str) -> (u16, Value) {
        parts(self.req(Method::GET, url).send().await.unwrap()).await
    }

    /// A request with the admin token.
    pub fn req(&self, method: Method, url: &str) -> RequestBuilder {
        self.client.request(method, url).bearer_auth(&self.admin)
    }

    /// Creates a fixture campaign; returns its JSON.
    pub async fn create(&self, name: &str) -> Value {
        let res = self
            .req(Method::POST, &self.campaign_url("/campaigns"))
            .json(&fixture(name))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "create {name}");
        res.json().await.unwrap()
    }
}

/// Status and JSON body of a response (`Null` for an empty body).
pub async fn parts(res: Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let bytes = res.bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{status}: not JSON ({e}): {:?}",
                String::from_utf8_lossy(&bytes)
            )
        })
    };
    (status, body)
}

/// Asserts a problem+json response with `status` and `code`; returns it.
pub async fn problem(res: Response, status: u16, code: &str) -> Value {
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let (got, body) = parts(res).await;
    assert_eq!(
        (got, body["code"].as_str()),
        (status, Some(code)),
        "problem: {body}"
    );
    assert_eq!(ct.as_deref(), Some("application/problem+json"));
    assert_eq!(body["status"], status);
    assert_eq!(body["type"], format!("urn:accord:problem:{code}"));
    assert!(body["title"].is_string() && body["detail"].is_string());
    assert!(body["errors"].is_array());
    body
}

/// The router over any store, in a project of its own, with a manual
/// clock and a token of every scope for that project.
pub struct Served<S> {
    pub base: String,
    pub client: reqwest::Client,
    pub token: String,
    pub project: String,
    pub api: Api<S>,
    pub clock: Arc<ManualClock>,
}

/// Serves the router over `store` (HS256 auth, the clock at `at`) in a new
/// project.
pub async fn serve_store<S: HttpStore>(store: Arc<S>, at: DateTime<Utc>) -> Served<S> {
    let clock = Arc::new(ManualClock::new(at));
    let api = Api::new(store, clock.clone(), Auth::hs256(SECRET).unwrap());
    let project = format!("p-{}", uuid::Uuid::new_v4());
    serve_api_in(api, clock, &project).await
}

/// Serves `api` (built over `clock`) for `project`.
pub async fn serve_api_in<S: HttpStore>(
    api: Api<S>,
    clock: Arc<ManualClock>,
    project: &str,
) -> Served<S> {
    let (base, client) = listen(api.clone()).await;
    Served {
        base,
        client,
        token: token(scope::ALL, &[project]),
        project: project.to_owned(),
        api,
        clock,
    }
}

impl<S> Served<S> {
    /// `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `/cms/api/projects/<project>/c/{rest}`.
    pub fn cms(&self, rest: &str) -> String {
        self.url(&format!("/cms/api/projects/{}/c/{rest}", self.project))
    }

    /// `/bff/api/consent/projects/<project>{rest}`.
    pub fn bff(&self, rest: &str) -> String {
        self.url(&format!("/bff/api/consent/projects/{}{rest}", self.project))
    }

    /// `/consent/api/projects/<project>{rest}`.
    pub fn consent(&self, rest: &str) -> String {
        self.url(&format!("/consent/api/projects/{}{rest}", self.project))
    }

    /// GET `url` with the token: status and body.
    pub async fn fetch(&self, url: &str) -> (u16, Value) {
        parts(
            self.client
                .get(url)
                .bearer_auth(&self.token)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// `method` `url` with the token and a JSON body: status and body.
    pub async fn send(&self, method: Method, url: &str, body: Value) -> (u16, Value) {
        parts(
            self.client
                .request(method, url)
                .bearer_auth(&self.token)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}
