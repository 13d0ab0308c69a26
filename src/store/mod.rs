//! What the services need from storage.
//!
//! The traits are small and split by role ([`CampaignStore`],
//! [`RedemptionStore`], [`ContentStore`], [`ConsentLedger`], [`FileStore`]); a
//! backend implements all of them and so satisfies [`Store`]. They are
//! `async` (native `async fn` in traits, futures `Send`), dispatched
//! statically: `CampaignService<S: CampaignStore + RedemptionStore>`.
//!
//! **Architecture invariant:** a redemption — idempotency check, every quota
//! increment, and the transaction record — is ONE store call
//! ([`RedemptionStore::redeem`]), atomic in the database. Nothing above the
//! store reads a quota and then writes it.
//!
//! **Architecture invariant:** consent history is append-only — a content
//! write appends a version, purpose events are only appended — and every
//! append gets the next `seq` of one store-wide order
//! ([`ContentStore`], [`ConsentLedger`]).
//!
//! Backends: [`memory::MemoryStore`] (feature `memory`, the reference model
//! every other store is tested against), `sqlite::SqliteStore` (feature
//! `sqlite`: one file, several processes) and `postgres::PostgresStore`
//! (feature `postgres`: many server processes on one database). Their
//! schemas are versioned migrations under `migrations/`, run on open.
//!
//! **Architecture invariant:** driver error types never cross this boundary;
//! backends map them to [`Error`](crate::Error) with
//! [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) (retry) or
//! [`ErrorKind::Internal`](crate::ErrorKind::Internal).

mod campaign;
mod codes;
mod consent;
mod file;
mod hold;
pub(crate) mod outbox;
mod ping;

pub use hold::{Confirmation, Counter, CounterUsage, HoldOutcome, HoldStore};
pub use ping::Ping;

pub use codes::{CodeBatch, CodeSource, CodeStore, Progress, CODE_INSERT_BATCH};

pub use consent::{
    ConsentLedger, ConsentStore, ContentStore, HistoryStore, LedgerStore, StoredEntry,
};
pub use file::FileStore;
pub use outbox::OutboxStore;

pub use crate::core::page::{
    check_page_size, Page, SortDirection, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
};
pub use campaign::prefix_end;
pub use campaign::{
    CampaignQuery, CampaignSort, CampaignStore, ChargedKeys, CodeRefusal, NamedCampaign, Period,
    RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore, CHARGED_KEYS_MARGIN,
};

#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;
/// The database calls and statements this thread sent so far (SQL stores;
/// test support, feature `testkit`): see the round-trip tests of redeem.
#[cfg(all(feature = "testkit", any(feature = "sqlite", feature = "postgres")))]
#[doc(hidden)]
pub use sql::dialect::sent::counts as sql_sent;

/// Every storage role: what one backend provides to both services.
pub trait Store:
    CampaignStore + RedemptionStore + HoldStore + CodeStore + ConsentStore + OutboxStore + 'static
{
}

impl<
        T: CampaignStore
            + RedemptionStore
            + HoldStore
            + CodeStore
            + ConsentStore
            + OutboxStore
            + 'static,
    > Store for T
{
}

/// Whether the stores append the ledger entries of acceptances: always,
/// except when a benchmark has turned them off ([`set_ledger_for_bench`],
/// feature `testkit`) to measure the same acceptance without its entry.
#[cfg(any(feature = "memory", feature = "sqlite", feature = "postgres"))]
pub(crate) mod ledger_switch {
    #[cfg(feature = "testkit")]
    static OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Whether acceptances get their ledger entries.
    #[inline]
    pub(crate) fn on() -> bool {
        #[cfg(feature = "testkit")]
        return !OFF.load(std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(feature = "testkit"))]
        true
    }

    /// Turns the ledger entries of acceptances on or off, process-wide.
    #[cfg(feature = "testkit")]
    pub fn set(on: bool) {
        OFF.store(!on, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Test support, not for production (feature `testkit`): turns the ledger
/// entries of acceptances off (`false`) or back on, process-wide, so that
/// `benches/evidence.rs` can measure an acceptance without its entry. A
/// store with the ledger off breaks the ledger's guarantee.
#[cfg(feature = "testkit")]
#[doc(hidden)]
pub use ledger_switch::set as set_ledger_for_bench;
