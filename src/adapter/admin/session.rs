//! Server-side sessions of the console, the CSRF tokens bound to them, and
//! one-time sign-in links.
//!
//! A session is created by signing in with a bearer token the API accepts
//! (verified by the same [`Auth`]); the browser only ever holds a random
//! session id in an `HttpOnly`, `SameSite=Strict` cookie. The session keeps
//! the token's verified [`Principal`] and ends at the token's `exp`, or on
//! sign-out. Sessions live in the memory of the process: several instances
//! behind one address need sticky routing (or each asks to sign in once).

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::{HeaderMap, HeaderValue};
use chrono::{DateTime, Duration, FixedOffset, Utc};

use crate::adapter::http::{Auth, Principal};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "accord_admin";
/// Name of the cookie holding the CSRF token of the sign-in forms, before
/// there is a session (double submit).
pub const SIGNIN_COOKIE: &str = "accord_admin_signin";
/// How long a one-time sign-in link works.
pub const LINK_TTL: Duration = Duration::minutes(10);
/// Most sessions kept at once; beyond it the one closest to expiry goes.
pub const MAX_SESSIONS: usize = 10_000;
/// Most one-time links outstanding at once.
const MAX_LINKS: usize = 100;

/// 32 random bytes from the operating system, hex-encoded: session ids,
/// CSRF tokens and link codes.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    // The OS generator fails only on a broken system; no session may be
    // made from predictable bytes, so that is a panic (caught per request).
    getrandom::fill(&mut bytes).expect("the operating system's random generator works");
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A one-shot message shown on the next page ("Campaign saved").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    /// The text.
    pub text: String,
    /// Whether it reports a failure.
    pub error: bool,
}

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// The verified claims of the token signed in with.
    pub principal: Principal,
    /// The token's expiry: the session ends then.
    pub expires: DateTime<Utc>,
    /// The CSRF token every state-changing form of the sign-in carries.
    pub csrf: String,
    /// The offset in which times are shown and entered.
    pub offset: FixedOffset,
    /// A message for the next page.
    pub flash: Option<Flash>,
}

/// The sessions of one console, by id.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a session; returns its id.
    pub fn create(&self, session: Session, now: DateTime<Utc>) -> String {
        let id = random_token();
        let mut map = self.lock();
        map.retain(|_, s| s.expires > now);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), session);
        id
    }

    /// The live session `id` (an expired one is removed).
    pub fn get(&self, id: &str, now: DateTime<Utc>) -> Option<Session> {
        let mut map = self.lock();
        let live = map.get(id).is_some_and(|s| s.expires > now);
        if !live {
            map.remove(id);
            return None;
        }
        map.get(id).cloned()
    }

    /// Takes the message left for the next page shown (a redirect shows
    /// no page, so it does not take it).
    pub fn take_flash(&self, id: &str) -> Option<Flash> {
        self.lock().get_mut(id).and_then(|s| s.flash.take())
    }

    /// Changes a live session.
    pub fn update(&self, id: &str, f: impl FnOnce(&mut Session)) {
        if let Some(s) = self.lock().get_mut(id) {
            f(s);
        }
    }

    /// Ends a session.
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Number of sessions kept (tests).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One-time sign-in links: a random code standing for a token, usable once
/// within [`LINK_TTL`].
#[derive(Debug, Default)]
pub struct Links {
    map: Mutex<HashMap<String, (String, DateTime<Utc>)>>,
}

impl Links {
    /// A new code for `token`, valid until `now + LINK_TTL`.
    pub fn issue(&self, token: &str, now: DateTime<Utc>) -> String {
        let code = random_token();
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.retain(|_, (_, until)| *until > now);
        if map.len() >= MAX_LINKS {
            map.clear();
        }
        map.insert(code.clone(), (token.to_owned(), now + LINK_TTL));
        code
    }

    /// The token of `code`, if it is live; the code is spent either way.
    pub fn redeem(&self, code: &str, now: DateTime<Utc>) -> Option<String> {
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (token, until) = map.remove(code)?;
        (until > now).then_some(token)
    }

    /// Whether `code` is live (without spending it).
    pub fn is_live(&self, code: &str, now: DateTime<Utc>) -> bool {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(code)
            .is_some_and(|(_, until)| *until > now)
    }
}

/// Verifies a pasted token with the API's verifier; returns the principal
/// and the token's expiry.
pub fn verify(auth: &Auth, token: &str) -> Result<(Principal, DateTime<Utc>), String> {
    let token = token.trim();
    let token = token
        .strip_prefix("Bearer ")
        .or_else(|| token.strip_prefix("bearer "))
        .unwrap_or(token)
        .trim();
    if token.is_empty() {
        return Err("paste a token".to_owned());
    }
    let header = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the token has characters a token cannot have".to_owned())?;
    let exp = expiry(token);
    let principal = auth.authenticate(Some(&header)).map_err(|_| {
        if exp.is_some_and(|e| e < Utc::now()) {
            "the token has expired".to_owned()
        } else {
            "this server does not accept the token: its signature, algorithm or claims (sub, exp) do not match".to_owned()
        }
    })?;
    let exp = exp.ok_or_else(|| "the token has no readable exp".to_owned())?;
    Ok((principal, exp))
}

/// The `exp` claim of a token, read without checking the signature: only
/// to end the session of a token [`Auth::authenticate`] accepted, or to say
/// why it refused one.
fn expiry(token: &str) -> Option<DateTime<Utc>> {
    #[derive(serde::Deserialize)]
    struct Exp {
        exp: i64,
    }
    let mut v = jsonwebtoken::Validation::default();
    v.insecure_disable_signature_validation();
    v.validate_exp = false;
    v.required_spec_claims.clear();
    let key = jsonwebtoken::DecodingKey::from_secret(&[]);
    let data = jsonwebtoken::decode::<Exp>(token, &key, &v).ok()?;
    DateTime::from_timestamp(data.claims.exp, 0)
}

/// The value of cookie `name` in the request headers.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, path `/admin`,
/// `Secure` when served over TLS. `max_age` zero deletes the cookie.
pub fn set_cookie(name: &str, value: &str, max_age: i64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let v = format!(
        "{name}={value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        max_age.max(0)
    );
    HeaderValue::from_str(&v).expect("cookie names and hex values are valid header text")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(expires: DateTime<Utc>) -> Session {
        Session {
            principal: Principal {
                sub: "u".into(),
                scopes: std::collections::BTreeSet::new(),
                projects: None,
            },
            expires,
            csrf: random_token(),
            offset: FixedOffset::east_opt(0).expect("zero offset"),
            flash: Some(Flash {
                text: "hi".into(),
                error: false,
            }),
        }
    }

    #[test]
    fn a_session_ends_at_expiry_and_its_flash_shows_once() {
        let s = Sessions::default();
        let now = Utc::now();
        let id = s.create(session(now + Duration::minutes(5)), now);
        assert_eq!(id.len(), 64);
        assert!(s.get(&id, now).expect("live").flash.is_some());
        assert!(s.take_flash(&id).is_some());
        assert!(s.take_flash(&id).is_none(), "a flash showed twice");
        assert!(s.get(&id, now + Duration::minutes(5)).is_none());
        assert!(s.is_empty(), "an expired session was kept");
    }

    #[test]
    fn a_link_works_once_and_not_after_its_time() {
        let l = Links::default();
        let now = Utc::now();
        let code = l.issue("tok", now);
        assert_eq!(l.redeem(&code, now).as_deref(), Some("tok"));
        assert_eq!(l.redeem(&code, now), None, "a link worked twice");
        let late = l.issue("tok", now);
        assert_eq!(l.redeem(&late, now + LINK_TTL), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }

    #[test]
    fn cookies_are_read_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::COOKIE,
            HeaderValue::from_static("x_accord_admin=1; accord_admin=abc"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "nope"), None);
    }
}
