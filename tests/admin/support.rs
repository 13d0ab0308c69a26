//! A console over a memory store, and a cookie-keeping client that sends
//! requests straight to its router.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use accord::admin::{self, Admin};
use accord::campaign::CampaignInput;
use accord::http::{router, Api, Auth, Claims};
use accord::store::memory::MemoryStore;
use accord::ManualClock;
use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use chrono::{DateTime, TimeZone, Utc};
use tower::ServiceExt;

/// The HS256 secret of the test consoles.
pub const SECRET: &str = "admin-test-secret-admin-test-secret!";
/// The project of the tests.
pub const P: &str = "shop";

/// 2026-06-15T10:00:00Z.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

/// An HS256 token for `sub` with `scopes` on `projects`, valid `ttl`.
pub fn token_for(sub: &str, scopes: &[&str], projects: &[&str], ttl: Duration) -> String {
    let mut c = Claims::all_scopes(sub, projects, ttl);
    c.scope = scopes.join(" ");
    c.sign_hs256(SECRET.as_bytes()).unwrap()
}

/// A token with `scopes` on project `shop`, valid an hour.
pub fn token(scopes: &[&str]) -> String {
    token_for("alice", scopes, &[P], Duration::from_secs(3600))
}

/// The API and the console over one memory store.
pub struct App {
    pub router: Router,
    pub admin: Admin<MemoryStore>,
    pub api: Api<MemoryStore>,
    pub clock: Arc<ManualClock>,
}

pub fn app() -> App {
    let clock = Arc::new(ManualClock::new(t0()));
    let store = Arc::new(MemoryStore::new());
    let auth = Auth::hs256(SECRET).unwrap();
    let api = Api::new(store, clock.clone(), auth.clone())
        .with_pseudonym_key(accord::consent::erasure::PseudonymKey::new(&[42; 32]).unwrap());
    let admin = Admin::new(Arc::clone(api.campaigns()), Arc::clone(api.consent()), auth);
    let router = router(api.clone()).merge(admin::router(admin.clone()));
    App {
        router,
        admin,
        api,
        clock,
    }
}

impl App {
    /// Creates a campaign through the service.
    pub async fn campaign(&self, json: serde_json::Value) -> accord::campaign::Campaign {
        let input: CampaignInput = serde_json::from_value(json).unwrap();
        self.api
            .campaigns()
            .create_campaign(P, input, "seed")
            .await
            .unwrap()
    }
}

/// A campaign body that fires for every request.
pub fn simple(name: &str, code: &str) -> serde_json::Value {
    serde_json::json!({
        "name": name, "refCode": code,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "rules": [{"name": "always", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": [{"attribute": "amount", "value": "10"}]}]}]
    })
}

/// A response, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    /// The value of the first `name="csrf"` hidden input.
    pub fn csrf(&self) -> String {
        hidden(&self.body, "csrf").expect("the page has a CSRF field")
    }

    /// Where a redirect goes.
    pub fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap())
            .unwrap_or_default()
    }
}

/// The value of the first hidden input named `name`.
pub fn hidden(body: &str, name: &str) -> Option<String> {
    let at = body.find(&format!("name=\"{name}\" value=\""))?;
    let rest = &body[at + name.len() + 15..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// A client with a cookie jar, talking to the router in-process.
pub struct Client {
    pub router: Router,
    pub cookies: HashMap<String, String>,
}

impl Client {
    pub fn new(app: &App) -> Self {
        Client {
            router: app.router.clone(),
            cookies: HashMap::new(),
        }
    }

    async fn send(&mut self, req: Request<Body>) -> Page {
        let res = self.router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        for v in headers.get_all(header::SET_COOKIE) {
            let v = v.to_str().unwrap();
            let pair = v.split(';').next().unwrap();
            let (k, val) = pair.split_once('=').unwrap();
            if v.contains("Max-Age=0") {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_owned(), val.to_owned());
            }
        }
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        Page {
            status,
            headers,
            body: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let req = Request::get(path)
            .header(header::COOKIE, self.cookie_header())
            .body(Body::empty())
            .unwrap();
        self.send(req).await
    }

    /// Posts a form (the pairs as given: add `csrf` yourself).
    pub async fn post(&mut self, path: &str, pairs: &[(&str, &str)]) -> Page {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        let req = Request::post(path)
            .header(header::COOKIE, self.cookie_header())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        self.send(req).await
    }

    /// Signs in with `token`; panics unless it works.
    pub async fn sign_in(&mut self, token: &str) {
        let page = self.get("/admin/signin").await;
        let csrf = page.csrf();
        let done = self
            .post(
                "/admin/signin",
                &[("csrf", &csrf), ("token", token), ("offset", "+00:00")],
            )
            .await;
        assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
        assert!(self.cookies.contains_key("accord_admin"));
    }

    /// The CSRF token of the session, read from the page at `path`.
    pub async fn csrf_on(&mut self, path: &str) -> String {
        let page = self.get(path).await;
        hidden(&page.body, "csrf").unwrap_or_else(|| panic!("no csrf on {path}: {}", page.body))
    }
}

/// The fields a browser would submit from the form whose opening tag holds
/// `marker` in `html`, with
/// `op=save`.
pub fn submitted(html: &str, marker: &str) -> Vec<(String, String)> {
    let unescape = |s: &str| {
        s.replace("&#34;", "\"")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&#60;", "<")
            .replace("&lt;", "<")
            .replace("&#62;", ">")
            .replace("&gt;", ">")
            .replace("&#38;", "&")
            .replace("&amp;", "&")
    };
    let start = html.find(marker).expect("the form");
    let form = &html[start..start + html[start..].find("</form>").unwrap()];
    let attr = |tag: &str, name: &str| {
        regex::Regex::new(&format!(r#"\b{name}="([^"]*)""#))
            .unwrap()
            .captures(tag)
            .map(|c| unescape(&c[1]))
    };
    let mut out = Vec::new();
    let inputs = regex::Regex::new(r"<input ([^>]*)>").unwrap();
    for c in inputs.captures_iter(form) {
        let tag = &c[1];
        let Some(name) = attr(tag, "name") else {
            continue;
        };
        let kind = attr(tag, "type").unwrap_or_default();
        if kind == "checkbox" {
            if tag.contains(" checked") {
                out.push((name, "on".to_owned()));
            }
        } else {
            out.push((name, attr(tag, "value").unwrap_or_default()));
        }
    }
    let selects =
        regex::Regex::new(r#"(?s)<select [^>]*name="([^"]+)"[^>]*>(.*?)</select>"#).unwrap();
    let selected = regex::Regex::new(r#"<option value="([^"]*)"[^>]*selected"#).unwrap();
    for c in selects.captures_iter(form) {
        let value = selected
            .captures(&c[2])
            .map(|s| unescape(&s[1]))
            .unwrap_or_default();
        out.push((c[1].to_owned(), value));
    }
    let areas =
        regex::Regex::new(r#"(?s)<textarea [^>]*name="([^"]+)"[^>]*>(.*?)</textarea>"#).unwrap();
    for c in areas.captures_iter(form) {
        out.push((c[1].to_owned(), unescape(&c[2])));
    }
    out.push(("op".to_owned(), "save".to_owned()));
    out
}
