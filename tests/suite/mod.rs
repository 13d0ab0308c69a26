//! Behaviour suites that every store must pass: written once, generic over
//! the store, and run by one runner file per store (`tests/store_memory.rs`,
//! `tests/store_sqlite.rs`, `tests/store_postgres.rs`).
//!
//! A runner declares `mod suite;`, writes a fixture that opens a fresh store
//! (or returns `None`, after saying why, to skip), and expands the suite's
//! test macro:
//!
//! ```ignore
//! mod suite;
//!
//! async fn fixture() -> Option<(Arc<MyStore>, suite::Guard)> {
//!     Some((Arc::new(MyStore::new()), Box::new(())))
//! }
//!
//! suite::campaign_store::campaign_store_tests!(fixture);
//! ```
//!
//! Every behaviour creates its own project ids, so the tests of one runner
//! run in parallel against one database without seeing each other.
//! `workers` spawns this test binary again as separate OS processes, for
//! the guarantees that must hold across processes.

// Each runner uses a different part of the helpers. The helpers are test
// code (clippy's allow-unwrap-in-tests only reaches `#[test]` functions):
// a failed unwrap is a failed test, with the error in the message.
#![allow(dead_code, unused_imports, unused_macros, clippy::unwrap_used)]

pub mod campaign_store;
pub mod workers;

/// Whatever a fixture must keep alive while its store is in use (a
/// temporary directory, …).
pub type Guard = Box<dyn std::any::Any + Send>;
