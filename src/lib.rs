//! # Accord
//!
//! An embeddable consent-and-promotions engine.
//!
//! - **Consent**: privacy notices, consents with purposes and lifespans,
//!   acceptances with device context, purpose accept/withdraw, and a content
//!   store — what a controller needs to prove consent under GDPR Art. 7(1)
//!   and Thailand's PDPA s.19.
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
#![forbid(unsafe_code)]
// No unwrap on caller data: the library uses `expect` naming the invariant.
// (Scoped to the library; tests, examples and benches may unwrap.)
#![deny(clippy::unwrap_used)]

pub mod campaign;
pub mod clock;
pub mod condition;
pub mod engine;
pub mod error;
pub mod formula;
pub mod hash;
pub mod limits;
pub mod store;
pub mod template;
pub mod wire;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, ErrorKind, FieldError, Result};
