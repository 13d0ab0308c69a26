//! The services: the campaign and consent use cases over the store traits.
//!
//! A service reads the clock and the store, asks the core for a decision
//! and writes it back through the store in one call. It may import from
//! the core and from the store traits ([`crate::store`]); never from the
//! adapters.

pub mod campaign;
pub mod consent;
pub mod outbox;
