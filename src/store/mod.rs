//! What the services need from storage.
//!
//! The traits are small and split by role ([`CampaignStore`],
//! [`RedemptionStore`], [`ContentStore`], [`ConsentLedger`]); a
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
mod consent;
mod ping;

pub use ping::Ping;

pub use consent::{ConsentLedger, ConsentStore, ContentStore, LedgerStore, StoredEntry};

pub use campaign::{
    CampaignQuery, CampaignSort, CampaignStore, Period, RedeemOutcome, RedemptionPlan,
    RedemptionQuery, RedemptionStore, SortDirection,
};

#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// Every storage role: what one backend provides to both services.
pub trait Store: CampaignStore + RedemptionStore + ConsentStore + 'static {}

impl<T: CampaignStore + RedemptionStore + ConsentStore + 'static> Store for T {}

use crate::ErrorCode;
use serde::{Deserialize, Serialize};

/// Default page size of every list.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// Largest page size a list accepts.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    /// The items of the page.
    pub items: Vec<T>,
    /// Zero-based page number.
    pub page: u32,
    /// Page size asked for.
    pub size: u32,
    /// Number of items over all pages.
    pub total: u64,
}

impl<T> Page<T> {
    /// Pages a fully materialised, already sorted list (memory store).
    pub fn slice(all: Vec<T>, page: u32, size: u32) -> Page<T> {
        let total = all.len() as u64;
        let start = usize::try_from(u64::from(page) * u64::from(size)).unwrap_or(usize::MAX);
        let items = all.into_iter().skip(start).take(size as usize).collect();
        Page {
            items,
            page,
            size,
            total,
        }
    }

    /// Maps the items.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            page: self.page,
            size: self.size,
            total: self.total,
        }
    }
}

/// Checks a page size: 1 to [`MAX_PAGE_SIZE`].
pub fn check_page_size(size: u32) -> crate::Result<()> {
    if size == 0 || size > MAX_PAGE_SIZE {
        return Err(crate::Error::new(
            ErrorCode::InvalidPageSize,
            format!("size must be between 1 and {MAX_PAGE_SIZE}, got {size}"),
        ));
    }
    Ok(())
}
