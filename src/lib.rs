//! # Accord
//!
//! An embeddable consent-and-promotions engine.
//!
//! - **Consent**: privacy notices, consents with purposes and lifespans,
//!   acceptances with device context, purpose accept/withdraw, and a content
//!   store — what a controller needs to prove consent under GDPR Art. 7(1)
//!   and Thailand's PDPA s.19. Entry point: [`ConsentService`]; decisions
//!   and an example in [`consent`].
//! - **Campaigns**: promotion rules (conditions on the cart, its items and
//!   custom attributes; benefits that may be formulas), search (which
//!   benefits apply to this cart) and redeem (record it, within quotas that
//!   never oversell).
//!
//! The crate is layered: a pure core (domain types, validation, the
//! condition evaluator, the formula interpreter, templating, the compiled
//! rule engine, the consent rules) that does no I/O; store traits; services
//! that orchestrate clock, store and core; and adapters behind features.
//! See `ARCHITECTURE.md`.
//!
//! # Search and redeem
//!
//! Evaluation is synchronous and pure; storage is async. A synchronous host
//! blocks on the service call at the edge (here with `pollster`), and
//! nowhere else.
//!
//! ```
//! use std::sync::Arc;
//! use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
//! use accord::store::memory::MemoryStore;
//! use accord::{CampaignService, SystemClock};
//! use serde_json::json;
//!
//! let service = CampaignService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
//! let campaign: CampaignInput = serde_json::from_value(json!({
//!     "name": "10% off carts over 1,000", "refCode": "CART10",
//!     "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
//!     "quotas": [{"key": "${campaignCode}-${userId}", "value": 1}],
//!     "rules": [{
//!         "name": "cart over 1,000",
//!         "when": [{"match": "ALL", "conditions": [
//!             {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000", "valueType": "NUMBER"}
//!         ]}],
//!         "thenOperator": "AND",
//!         "then": [{"action": "CART_DISCOUNT", "data": [
//!             {"attribute": "amount", "value": "floor(${totalPrice} * 0.1)", "isFormula": true}
//!         ]}]
//!     }]
//! }))?;
//! pollster::block_on(service.create_campaign("shop", campaign, "admin"))?;
//!
//! let cart = json!({"attribute": {"userId": "u1"}, "cart": {"totalPrice": "1250.00", "currency": "THB"}});
//! let search: SearchRequest = serde_json::from_value(cart.clone())?;
//! let found = pollster::block_on(service.search("shop", &search, &SearchOptions::default()))?;
//! assert_eq!(found.actions[0].action.data[0].value, "125");
//!
//! let mut redeem: RedeemRequest = serde_json::from_value(cart)?;
//! redeem.campaign_code = "CART10".into();
//! let done = pollster::block_on(service.redeem("shop", &redeem))?;
//! assert_eq!(done.redemption.action_txs[0].status.as_str(), "COMPLETE");
//! // The per-user quota of 1 is used up: a second redeem is refused, nothing recorded.
//! let again = pollster::block_on(service.redeem("shop", &redeem)).unwrap_err();
//! assert_eq!(again.code(), "quota_exceeded");
//! // And search, through the same service, no longer offers it.
//! let after = pollster::block_on(service.search("shop", &search, &SearchOptions::default()))?;
//! assert!(after.actions.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Search keeps what it reads from the store — the compiled catalogue and
//! the usage of the quotas its hits would charge — for the refresh interval
//! ([`campaign::DEFAULT_REFRESH`], 500 ms): a write through the same service
//! (campaign save, redeem, cancel) is seen by the next search at once; one
//! made by another process sharing the database, within the interval.
//! Redeem never relies on it: it re-evaluates the stored campaign and checks
//! and charges every quota atomically in the store. See [`CampaignService`].
//!
//! # Accepting a consent
//!
//! ```
//! use std::sync::Arc;
//! use accord::consent::AcceptConsentRequest;
//! use accord::store::memory::MemoryStore;
//! use accord::{ConsentService, SystemClock};
//! use serde_json::json;
//!
//! let consent = ConsentService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
//! use pollster::block_on as block;
//! let notice = block(consent.create_content("shop", "svc-privacy-notice-v1",
//!     json!({"name": "Privacy notice", "revision": 1, "status": "PUBLISHED"}), "admin"))?;
//! let marketing = block(consent.create_content("shop", "svc-consent-v1", json!({
//!     "name": "Marketing", "application": "web", "purposes": ["email", "sms"],
//!     "lifespan": 365, "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"
//! }), "admin"))?;
//!
//! // The subject has it to accept, and accepts it for e-mail only.
//! assert_eq!(block(consent.to_accept("shop", "web", "user-1"))?.len(), 1);
//! let accepted = block(consent.accept_consent("shop", AcceptConsentRequest {
//!     app: Some("web".into()), data_subject: Some("user-1".into()),
//!     consent_id: Some(marketing.id.clone()), purposes: Some(vec!["email".into()]),
//!     user_agent: Some("Mozilla/5.0".into()), country: Some("TH".into()),
//!     local_ip: Some("10.0.0.1".into()), os_version: Some("17".into()),
//!     model: Some("iPhone".into()), device_fingerprint_id: Some("fp-1".into()), note: None, ..Default::default()
//! }, "user-1"))?;
//! assert_eq!(accepted.status.as_str(), "ACCEPTED");
//! assert!(block(consent.to_accept("shop", "web", "user-1"))?.is_empty());
//! let flags: Vec<(String, bool)> = block(consent.purpose_options("shop", "web", "user-1"))?
//!     .into_iter().map(|p| (p.code, p.accepted)).collect();
//! assert_eq!(flags, [("email".to_string(), true), ("sms".to_string(), false)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! | Feature | What it adds |
//! |---|---|
//! | `memory` (default) | [`store::memory::MemoryStore`], the reference store |
//! | `sqlite` (default) | a store on a SQLite file (the server's embedded default) |
//! | `postgres` (default) | a store on PostgreSQL, for many server instances sharing one database |
//! | `http` (default) | `accord::http`: an axum router exposing the wire API, with JWT auth and OpenAPI |
//! | `jwks-url` (default, with `cli`) | `accord::http::auth::jwks::JwksUrl`: token keys fetched from an identity provider's JWKS URL and kept current (an HTTPS client: rustls on ring) |
//! | `otel` | `accord::http::otel`: OpenTelemetry spans of requests, searches and redeems, exported by `accord serve --otlp-endpoint` |
//! | `admin` (default) | `accord::admin`: the admin console, a server-rendered web interface at `/admin/` |
//! | `cli` (default) | the `accord` command (`serve`, `migrate`, `token`) and `accord::cli` |
//! | `testkit` | test support for `fuzz/` and the fuzz regressions (hidden `accord::fuzzing`); not for production |
//!
//! The defaults include what the `accord` command needs, so that
//! `cargo run --release` runs the server with no flags. A program that wants the core alone depends on
//! `accord = { default-features = false, features = ["memory"] }`.
#![forbid(unsafe_code)]
// No unwrap on caller data: the library uses `expect` naming the invariant.
// (Scoped to the library; tests, examples and benches may unwrap.)
#![deny(clippy::unwrap_used)]

// The layers, bottom to top (ARCHITECTURE.md): each module's doc says what
// it owns and what it may import; `tests/layers.rs` checks the imports.
mod adapter;
mod core;
mod service;
pub mod store;
#[cfg(any(test, feature = "testkit"))]
mod testkit;

// The public API: the paths users know, re-exported from the layers.
pub use crate::core::{clock, condition, engine, error, formula, hash, limits, template, wire};
#[cfg(feature = "admin")]
pub use adapter::admin;
#[cfg(feature = "cli")]
pub use adapter::cli;
#[cfg(feature = "http")]
pub use adapter::http;
#[cfg(feature = "testkit")]
#[doc(hidden)]
pub use testkit::fuzzing;

pub mod campaign {
    //! The campaign side: domain types, validation and the service.
    //!
    //! See [`CampaignService`] for the operations and the crate's `DESIGN`
    //! decisions they implement.
    pub use crate::core::campaign::*;
    pub use crate::service::campaign::{
        CampaignService, CodeExport, CodeInfo, Imported, Preview, PreviewHit, PreviewQuota,
        QuotaUsagePage, QuotaUsageQuery, RedeemResult, SearchOptions, DEFAULT_QUOTA_PAGE_SIZE,
        DEFAULT_REFRESH, MAX_HTTP_GENERATE,
    };
    pub use crate::service::campaign::{
        HoldRequest, DEFAULT_HOLD_TTL_SECONDS, MAX_LIVE_HOLDS_LISTED,
    };
}

pub mod consent {
    #![doc = include_str!("core/consent/decisions.md")]
    pub use crate::core::consent::*;
    pub use crate::service::consent::{
        self as service, ConsentService, ReceiptSource, SubjectExport,
    };
}

/// Events out: the transactional outbox, webhook endpoints and their
/// deliveries (`docs/events.md`).
pub mod outbox {
    pub use crate::core::outbox::*;
    pub use crate::service::outbox::{
        EndpointInput, OutboxService, SendOutcome, Sender, WorkerSettings,
    };
}

pub use crate::core::clock::{Clock, ManualClock, SystemClock};
pub use crate::core::error::{Error, ErrorCode, ErrorKind, FieldError, Result};
pub use crate::service::campaign::CampaignService;
pub use crate::service::consent::ConsentService;
