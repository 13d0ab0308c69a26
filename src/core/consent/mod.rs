//! The consent side's pure half: privacy notices, consents, consent
//! acceptances, purposes and the content store's records, their validation,
//! rules, evidence and ledger. [`ConsentService`](crate::service::consent::ConsentService)
//! runs them over a store.
//!
//! The decisions this crate takes where the specification leaves points
//! open are in `decisions.md` beside this file, the documentation of the
//! public `accord::consent`.

pub mod canonical;
pub mod check;
pub mod content;
pub mod erasure;
pub mod evidence;
pub mod file;
pub mod history;
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
