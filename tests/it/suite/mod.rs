//! Store behaviour suites: one body of tests, run against every store.
//!
//! The memory store is the reference model; every other store must pass the
//! same suites, run by one runner file per store (`tests/it/store_memory.rs`,
//! `tests/it/store_sqlite.rs`, `tests/it/store_postgres.rs`). Each test isolates
//! itself in its own random project id, so one database serves the whole
//! suite and the tests run in parallel.
//!
//! # The campaign-store suite
//!
//! A runner declares `mod suite;`, writes a fixture that opens a fresh store
//! (or returns `None`, after saying why, to skip), and expands the macro:
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
//! `workers` spawns this test binary again as separate OS processes, for
//! the guarantees that must hold across processes.
//!
//! # The consent suite
//!
//! The same fixture shape; the runners expand it inside a module, because
//! some behaviour names (`list_filters`) are shared with the campaign suite:
//!
//! ```ignore
//! mod consent {
//!     crate::suite::consent::consent_suite!(super::fixture);
//! }
//! ```
//!
//! The macros expand to one `#[tokio::test]` per behaviour (named after the
//! `pub async fn` it calls), so a failure names the behaviour.

// Each runner uses a different part of the helpers. The helpers are test
// code (clippy's allow-unwrap-in-tests only reaches `#[test]` functions):
// a failed unwrap is a failed test, with the error in the message.
#![allow(dead_code, unused_imports, unused_macros, clippy::unwrap_used)]
#![allow(clippy::too_many_lines)] // a behaviour reads best as one story

pub mod campaign_store;
pub mod cases;
pub mod code_pools;
pub mod consent;
pub mod hold_codes;
pub mod holds;
pub mod outbox;
pub mod promotions;
pub mod quota_view;
pub mod services;
pub mod usage_reads;
pub mod workers;

/// Whatever a fixture must keep alive while its store is in use (a
/// temporary directory, …).
pub type Guard = Box<dyn std::any::Any + Send>;

/// One test per behaviour `$module::$behaviour(store)`, on `$fixture`'s
/// store: what each behaviour module's `…_tests!` macro expands to.
macro_rules! behaviour_tests {
    ($module:ident, $fixture:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::$module::$behaviour(store).await;
            }
        )+
    };
}
pub(crate) use behaviour_tests;

/// A new project and a campaign service over `store` (system clock).
pub fn campaign_service<S: accord::store::Store>(
    store: &std::sync::Arc<S>,
) -> (String, accord::CampaignService<S>) {
    let service = accord::CampaignService::new(
        std::sync::Arc::clone(store),
        std::sync::Arc::new(accord::SystemClock),
    );
    (uuid::Uuid::new_v4().to_string(), service)
}
