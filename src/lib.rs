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
#![forbid(unsafe_code)]

pub mod campaign;
pub mod clock;
pub mod consent;
pub mod error;
pub mod store;
pub mod wire;

pub use clock::{Clock, ManualClock, SystemClock};
pub use consent::ConsentService;
pub use error::{Error, ErrorKind, FieldError, Result};
