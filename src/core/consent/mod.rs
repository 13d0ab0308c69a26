//! The consent side: privacy notices, consents, consent acceptances,
//! purposes, and the content store that holds them.
//!
//! - [`model`]: domain and wire types (serde names as in the spec).
//! - [`content`]: content types, versioned records, envelopes.
//! - [`query`]: content-store list queries and their exact semantics.
//! - [`validate`]: typed validation problems with stable codes.
//! - [`integrity`]: what a write may do to consent evidence, whichever way
//!   it comes in.
//! - [`rules`]: the pure consent rules (to-accept with reasons, purpose
//!   flags, expiry, state at an instant).
//! - [`check`]: the report of stored records that break the rules.
//! - [`ConsentService`](crate::service::consent::ConsentService), over any
//!   [`ConsentStore`](crate::store::ConsentStore), is in the service layer.
//!
//! `docs/consent.md` states the consent rules for users in one place; this
//! summary follows it.
//!
//! # Decisions
//!
//! The specification leaves many points open; `DESIGN.md` decides most of
//! them, and this crate decides the rest as follows.
//!
//! **Storage model.** Privacy notices, consents, consent acceptances and
//! the purpose catalogue are all content-store records (types
//! `svc-privacy-notice-v1`, `svc-consent-v1`, `svc-consent-acceptance-v1`,
//! `svc-purpose-v1`). The application-facing "accept consent" creates an
//! acceptance record, so the content store lists it (endpoint 8), and a
//! withdrawal written through the content store (endpoint 14) is what
//! to-accept and the purpose options read: both views are one set of
//! records. Purpose acceptances and withdrawals are an append-only log of
//! [`PurposeEvent`]s.
//!
//! **Nothing is overwritten.** Every content write appends a version; a
//! replace never destroys the previous one ([`ConsentService::content_versions`]).
//! History is append-only; [`ConsentService::history`] lists a subject's
//! records in the order recorded, [`ConsentService::state_at`] answers what
//! they had agreed to at any instant.
//!
//! **Time.** Records are ordered by the time the service recorded them and
//! the store's `seq`, never by client-written dates (see [`rules`]).
//! Timestamps are accepted with any offset and returned in UTC with `Z`;
//! inside content `data` they are normalised to a fixed width
//! (`2026-01-01T00:00:00.000000Z`, [`format_time`]) so that text order is
//! time order on every store, and list filters on them compare instants.
//!
//! **Consents.** `status` is `DRAFT`, `PUBLISHED` or `ARCHIVED`; `ACCEPTED`
//! and `WITHDRAWN` are rejected (422 `invalid_enum`) with a message saying
//! they belong to acceptances. A consent is *offered* when it is
//! `PUBLISHED` and so is its privacy notice. `lifespan` is whole days (0
//! to 36 500); absent or 0 never expires (`expiredDate` null). A consent
//! must list at least one purpose, without duplicates, and name an existing
//! privacy notice (422 `unknown_privacy_notice`). `ref1`–`ref3` are
//! optional free strings, returned as sent. Revisions of consents and
//! notices start at 1 and never decrease; a consent's purposes,
//! application and notice change only with a new revision
//! ([`integrity::consent_update`]).
//!
//! **Acceptances are evidence** ([`integrity`]). Through either way in, an
//! acceptance needs an offered consent of the application it names and only
//! that consent's purposes. The server owns `consentRevision`,
//! `privacyNoticeId`, `privacyNoticeRevision` (those in force; a differing
//! client value is 422 `evidence_mismatch`), `receivedDate` (its clock) and
//! `withdrawalDate`; a client-written `acceptanceDate` lies within the
//! clock skew of now and of the revision, and `expiredDate` is
//! `acceptanceDate` + lifespan. An acceptance is created `ACCEPTED` and
//! only moves to `WITHDRAWN`; an edit changes `status` that way and
//! `note`, and keeps every other attribute (422 `immutable` when the body
//! differs) — the exception to "a PUT nulls what its body leaves out", so
//! that an edit cannot erase evidence and a `GET` shows what is enforced.
//!
//! **to-accept** lists each offered consent of the application unless the
//! subject has an acceptance, naming that application, that is `ACCEPTED`,
//! not expired, and pins the consent's current revision and its notice's
//! current revision; each entry has a [`Reason`]: `NEW` (never accepted),
//! else from the acceptance whose status changed last: `WITHDRAWN`,
//! `NEW_REVISION` (another consent revision), `NEW_NOTICE_REVISION`
//! (another notice revision), `EXPIRED`.
//!
//! **Purpose flags**: the latest event for (subject, application, purpose)
//! — a purpose acceptance or withdrawal, or a status change of an
//! acceptance (of any consent of the application, naming that application)
//! that lists the purpose — decides: accepted and not expired. Withdrawing
//! an acceptance through the content store therefore withdraws its
//! purposes. The options list the purposes of offered consents; a purpose
//! acceptance needs one and expires by the lifespan of the first (in
//! creation order) listing the code; withdrawing is always possible,
//! idempotent, and allowed for purposes of consents of any status
//! (withdrawal must be as easy as giving).
//!
//! **Purpose catalogue**: `svc-purpose-v1` entries (`code`, `nameEn`,
//! `nameTh`) name purposes; when several share a code, the most recently
//! modified wins; no entry gives empty strings.
//!
//! **Content store.** `POST` creates, `PUT` replaces the whole `data`
//! (attributes of the current version missing from the body become `null`,
//! except an acceptance's evidence; required ones missing are 422, each
//! listed as `data.<attr>`); the forms and required fields are the spec's
//! tables ([`validate`]). Unknown type: 404 `content_type_not_found`;
//! unknown id: 404 `content_not_found`. Lists: see [`query`] — exact
//! filters (contains for arrays; numbers by value, booleans as
//! `true`/`false`, timestamps as instants), AND-ed; zero-based `page`;
//! `size` 1–1000 (default 20; else 400 `invalid_page_size`); multi-key sort
//! with nulls last; unknown parameters are 400. Envelopes: `contentType`
//! has `id` = `alias` = the type name, `name` a human name, `searchEngine`
//! null. Every input has a byte limit ([`crate::core::limits`]).
//!
//! **Errors**: validation is 422 with every problem, each with a field path
//! and a stable code ([`validate`], [`integrity`]); not found is 404 with
//! `consent_not_found`, `privacy_notice_not_found`, `purpose_not_found`,
//! `content_not_found`, `content_type_not_found`. The crate does not log:
//! what to log about personal data is the HTTP layer's decision.
//!
//! **Concurrency.** Each store call is atomic. A replace is appended only
//! if the current version is still the one validated; one that names no
//! version is validated again on the newer version and appended after it
//! (last writer wins, both kept), one that names a version
//! ([`ConsentService::replace_content_if`]) gets 409 `stale_version`.
//! Acceptances and purpose events are single appends; the dates a
//! withdrawal copies from the grant it ends are read just before
//! (informational — the flags come from the event order).
//!
//! **Records from before these rules** are reported by
//! [`ConsentService::check_records`], never rewritten.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use accord::consent::{AcceptConsentRequest, ConsentService};
//! use accord::store::memory::MemoryStore;
//! use accord::SystemClock;
//! use serde_json::json;
//!
//! # pollster::block_on(async {
//! let svc = ConsentService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
//! let notice = svc.create_content("demo", "svc-privacy-notice-v1",
//!     json!({"name": "Privacy", "revision": 1, "status": "PUBLISHED"}), "admin").await?;
//! let consent = svc.create_content("demo", "svc-consent-v1", json!({
//!     "name": "Marketing", "application": "shop", "purposes": ["email", "sms"],
//!     "lifespan": 365, "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"
//! }), "admin").await?;
//! assert_eq!(svc.to_accept("demo", "shop", "user-1").await?.len(), 1);
//!
//! svc.accept_consent("demo", AcceptConsentRequest {
//!     app: Some("shop".into()), data_subject: Some("user-1".into()),
//!     consent_id: Some(consent.id.clone()), purposes: Some(vec!["email".into()]),
//!     user_agent: Some("ua".into()), country: Some("TH".into()), local_ip: Some("10.0.0.1".into()),
//!     os_version: Some("17".into()), model: Some("phone".into()),
//!     device_fingerprint_id: Some("fp".into()), note: None,
//! }, "app-backend").await?;
//! assert!(svc.to_accept("demo", "shop", "user-1").await?.is_empty());
//! let options = svc.purpose_options("demo", "shop", "user-1").await?;
//! assert_eq!(options.iter().map(|o| o.accepted).collect::<Vec<_>>(), [true, false]);
//! # Ok::<(), accord::Error>(())
//! # }).unwrap();
//! ```

pub mod check;
pub mod content;
pub mod erasure;
pub mod evidence;
pub mod integrity;
pub mod ledger;
pub mod model;
pub mod query;
pub mod receipt;
pub mod rules;
pub mod validate;

pub use content::{
    format_time, ContentRecord, ContentType, ContentTypeInfo, ContentTypeRef, ContentWrite,
    Envelope, ReducedEnvelope,
};
pub use model::*;
pub use query::{ContentFilter, ContentQuery, ContentSort};
