//! The pure core: domain types of both halves, their validation, the
//! condition evaluator, the formula interpreter, templating, the compiled
//! rule engine and its index, the consent rules, evidence and ledger, the
//! wire helpers, the limits table and the error type every layer uses.
//!
//! It takes values and a time and returns decisions as data: no I/O, no
//! `async`, no store. It may import only from itself (and its external
//! dependencies listed as the core's in `Cargo.toml`); every other layer
//! may import from it. [`clock::SystemClock`] is the one item that reads
//! the outside world (the system time), kept here beside the [`clock::Clock`]
//! trait the services take.

pub mod campaign;
pub mod clock;
pub mod condition;
pub mod consent;
pub mod engine;
pub mod error;
pub mod formula;
pub mod hash;
pub mod limits;
pub mod outbox;
pub mod page;
pub mod template;
pub mod wire;
