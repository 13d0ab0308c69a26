//! Webhook endpoints, their deliveries and attempts, the signature and the
//! retry schedule: the pure half of sending events out.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

use super::EventType;
use crate::core::error::{ErrorCode, FieldError};
use crate::{Error, Result};

/// Most endpoints of one project.
pub const MAX_ENDPOINTS: usize = 50;
/// Longest endpoint URL, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Longest error text kept of a failed attempt, in characters.
pub const MAX_ERROR_CHARS: usize = 500;

/// Where events of a project are posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Endpoint id.
    pub id: Uuid,
    /// Project.
    pub project_id: String,
    /// `http://` or `https://` URL the events are posted to.
    pub url: String,
    /// The signing secret (`whsec_` and 64 hex digits), shown once, on
    /// creation.
    pub secret: String,
    /// The event types sent; empty: every type.
    pub event_types: Vec<EventType>,
    /// Whether events are sent: a disabled endpoint gets no new delivery
    /// and its pending ones wait until it is enabled again.
    pub enabled: bool,
    /// Free text for operators.
    pub description: Option<String>,
    /// Created when.
    pub created_date: DateTime<Utc>,
    /// Last changed when.
    pub last_modified_date: DateTime<Utc>,
}

impl Endpoint {
    /// Whether the endpoint takes events of type `t`.
    pub fn takes(&self, t: &EventType) -> bool {
        self.enabled && (self.event_types.is_empty() || self.event_types.contains(t))
    }

    /// The filter as stored: `,type,type,` (empty: every type), so that a
    /// store tests a type with one `LIKE '%,type,%'`.
    pub fn filter_text(&self) -> String {
        if self.event_types.is_empty() {
            return String::new();
        }
        let mut s = String::from(",");
        for t in &self.event_types {
            s.push_str(t.as_str());
            s.push(',');
        }
        s
    }

    /// The filter read back from [`filter_text`](Self::filter_text).
    pub fn filter_from_text(text: &str) -> Vec<EventType> {
        text.split(',')
            .filter(|t| !t.is_empty())
            .map(EventType::parse)
            .collect()
    }
}

/// A new secret from 32 random bytes (two UUID v4, from the operating
/// system's generator).
pub fn new_secret() -> String {
    let mut s = String::from("whsec_");
    for id in [Uuid::new_v4(), Uuid::new_v4()] {
        s.push_str(&id.simple().to_string());
    }
    s
}

/// Checks what a caller sets on an endpoint: the URL, the event types and
/// the description; every problem is reported.
pub fn validate(url: &str, event_types: &[EventType], description: Option<&str>) -> Result<()> {
    let mut problems = Vec::new();
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    let host_ok = url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .is_some_and(|h| !h.is_empty() && !h.contains(char::is_whitespace));
    if !scheme_ok || !host_ok || url.len() > MAX_URL_BYTES || url.contains(char::is_whitespace) {
        problems.push(FieldError::new(
            "url",
            ErrorCode::Invalid,
            format!(
                "must be an http:// or https:// URL with a host, at most {MAX_URL_BYTES} bytes"
            ),
        ));
    }
    for (i, t) in event_types.iter().enumerate() {
        if !t.is_known() {
            problems.push(FieldError::new(
                format!("eventTypes[{i}]"),
                ErrorCode::InvalidEnum,
                format!(
                    "unknown event type {:?}; known: {}",
                    t.as_str(),
                    EventType::expected()
                ),
            ));
        }
    }
    if description.is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        problems.push(FieldError::new(
            "description",
            ErrorCode::TooLong,
            format!("at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::validation(problems))
    }
}

crate::string_enum! {
    /// Where a delivery stands.
    pub enum DeliveryState {
        /// Not delivered yet: due at `nextAttemptAt`.
        Pending = "PENDING",
        /// A 2xx answered.
        Delivered = "DELIVERED",
        /// Every retry failed: no more attempts unless redelivered.
        Dead = "DEAD",
    }
}

/// One event to one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The event.
    pub event_id: Uuid,
    /// The endpoint.
    pub endpoint_id: Uuid,
    /// Project.
    pub project_id: String,
    /// The event's type.
    pub event_type: EventType,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made (counting every redelivery).
    pub attempts: i32,
    /// Failed attempts since it was created or last redelivered.
    pub failures: i32,
    /// When the next attempt is due (pending only).
    pub next_at: Option<DateTime<Utc>>,
    /// Created (or last redelivered) when: the start of its retry window.
    pub since: DateTime<Utc>,
    /// When a 2xx answered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// The HTTP status of the last attempt (none: no answer).
    pub last_status: Option<i32>,
    /// What went wrong in the last attempt.
    pub last_error: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt of the delivery, then counting.
    pub attempt: i32,
    /// When it started.
    pub at: DateTime<Utc>,
    /// The HTTP status (none: no answer).
    pub status: Option<i32>,
    /// What went wrong (none: a 2xx).
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
}

/// A delivery claimed by a worker, with what it needs to send it.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The delivery (its `attempts` counts this attempt: the claim's fence).
    pub delivery: Delivery,
    /// The event.
    pub event: super::OutboxEvent,
    /// The endpoint's URL.
    pub url: String,
    /// The endpoint's secret.
    pub secret: String,
}

/// What an attempt leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Delivered.
    Delivered,
    /// Try again at this time.
    RetryAt(DateTime<Utc>),
    /// No more attempts.
    Dead,
}

/// The retry schedule: attempt n (from 1) failing waits
/// `min(base · 2^(n−1), max_delay)`, less up to 20 % jitter, before the
/// next; a delivery is dead after `max_attempts` failures or once
/// `max_age` has passed since it was created or redelivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first delay.
    pub base: Duration,
    /// The longest delay.
    pub max_delay: Duration,
    /// Failures before a delivery is dead.
    pub max_attempts: i32,
    /// Age after which a failing delivery is dead.
    pub max_age: Duration,
}

impl Default for RetryPolicy {
    /// 30 s, 1 min, 2 min, … up to 1 h between attempts; dead after 12
    /// failures or 3 days.
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(30),
            max_delay: Duration::from_secs(3600),
            max_attempts: 12,
            max_age: Duration::from_secs(3 * 24 * 3600),
        }
    }
}

impl RetryPolicy {
    /// The delay after failure number `failures` (from 1) of a delivery,
    /// with jitter drawn from `seed` (the same seed, the same delay).
    pub fn delay(&self, failures: i32, seed: u64) -> Duration {
        let exp = u32::try_from(failures.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        let full = self
            .base
            .saturating_mul(1u32 << exp.min(20))
            .min(self.max_delay);
        // Up to a fifth off, so that deliveries failing together spread.
        let off = u128::from(seed % 1000) * full.as_nanos() / 5000;
        full.saturating_sub(Duration::from_nanos(u64::try_from(off).unwrap_or(0)))
    }

    /// What follows a failed attempt of `d` (whose `failures` already
    /// counts it) at `now`.
    pub fn after_failure(&self, d: &Delivery, now: DateTime<Utc>) -> Next {
        let age = (now - d.since).to_std().unwrap_or_default();
        if d.failures >= self.max_attempts || age >= self.max_age {
            return Next::Dead;
        }
        // The low halves of the two ids (their random bits), mixed with the
        // attempt.
        let low = |id: uuid::Uuid| id.as_u64_pair().1;
        let seed = low(d.event_id)
            ^ low(d.endpoint_id)
            ^ u64::try_from(d.attempts)
                .unwrap_or(0)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let delay = chrono::Duration::from_std(self.delay(d.failures, seed))
            .unwrap_or(chrono::Duration::MAX);
        Next::RetryAt(now + delay)
    }
}

/// The `Accord-Signature` header of a body sent at `unix_seconds`:
/// `t=<unix>,v1=<hex HMAC-SHA256 of "<unix>.<body>" keyed by the secret>`.
pub fn signature(secret: &str, unix_seconds: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(64);
    for b in tag {
        let _ = write!(hex, "{b:02x}");
    }
    format!("t={unix_seconds},v1={hex}")
}

/// Whether `header` is a valid signature of `body` with `secret`, made at
/// most `tolerance_seconds` from `now_unix` (what a receiver checks).
pub fn verify(
    secret: &str,
    header: &str,
    body: &[u8],
    now_unix: i64,
    tolerance_seconds: i64,
) -> bool {
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => v1.push(v),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    if (now_unix - t).abs() > tolerance_seconds {
        return false;
    }
    let expected = signature(secret, t, body);
    let expected = expected.rsplit_once("v1=").map_or("", |(_, h)| h);
    v1.iter()
        .any(|h| constant_time_eq(h.as_bytes(), expected.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A failed attempt's error text, cut to [`MAX_ERROR_CHARS`].
pub fn error_text(e: &str) -> String {
    e.chars().take(MAX_ERROR_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify() {
        let s = signature("whsec_x", 1_700_000_000, b"{\"a\":1}");
        assert!(s.starts_with("t=1700000000,v1="));
        assert_eq!(s.len(), "t=1700000000,v1=".len() + 64);
        assert!(verify("whsec_x", &s, b"{\"a\":1}", 1_700_000_100, 300));
        assert!(!verify("whsec_y", &s, b"{\"a\":1}", 1_700_000_100, 300));
        assert!(!verify("whsec_x", &s, b"{\"a\":2}", 1_700_000_100, 300));
        assert!(!verify("whsec_x", &s, b"{\"a\":1}", 1_700_001_000, 300));
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, 0), Duration::from_secs(30));
        assert_eq!(p.delay(2, 0), Duration::from_secs(60));
        assert_eq!(p.delay(3, 0), Duration::from_secs(120));
        assert_eq!(p.delay(30, 0), Duration::from_secs(3600));
        let jittered = p.delay(2, 999);
        assert!(jittered < Duration::from_secs(60) && jittered >= Duration::from_secs(48));
    }

    #[test]
    fn filters_round_trip() {
        let e = Endpoint {
            id: Uuid::nil(),
            project_id: "p".into(),
            url: "https://x.example/h".into(),
            secret: new_secret(),
            event_types: vec![EventType::RedemptionCreated, EventType::ConsentErased],
            enabled: true,
            description: None,
            created_date: Utc::now(),
            last_modified_date: Utc::now(),
        };
        assert_eq!(e.filter_text(), ",redemption.created,consent.erased,");
        assert_eq!(Endpoint::filter_from_text(&e.filter_text()), e.event_types);
        assert!(e.takes(&EventType::ConsentErased));
        assert!(!e.takes(&EventType::ConsentAccepted));
        assert_eq!(e.secret.len(), 6 + 64);
        assert!(validate("ftp://x", &[EventType::parse("nope")], None).is_err());
        assert!(validate("https://x.example/h", &[], None).is_ok());
    }
}
