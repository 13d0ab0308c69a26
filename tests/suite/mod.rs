//! Store behaviour suites: one body of tests, run against every store.
//!
//! The memory store is the reference model; every other store must pass the
//! same suite. Each test isolates itself in its own random project id, so
//! one database may serve the whole suite (tests run in parallel).
//!
//! # Running the consent suite on a store
//!
//! In `tests/store_<name>.rs`:
//!
//! ```ignore
//! mod suite;
//!
//! // An expression (usually an `async` block) that yields an `Arc<S>` with
//! // `S: accord::store::ConsentStore + 'static`. It is evaluated once per
//! // test, inside the test's tokio runtime.
//! suite::consent::consent_suite!(async {
//!     std::sync::Arc::new(accord::store::sqlite::SqliteStore::connect("sqlite::memory:").await.expect("store"))
//! });
//! ```
//!
//! The macro expands to one `#[tokio::test]` per behaviour (named after the
//! `pub async fn` in [`consent`] it calls) plus a proptest, so a failure
//! names the behaviour. The functions can also be called directly with an
//! `Arc<S>`.
#![allow(dead_code, unused_macros)] // each test binary uses a part
#![allow(clippy::too_many_lines)] // a behaviour reads best as one story

pub mod consent;
