//! The campaign use cases: [`CampaignService`] (this file: the service
//! and its settings), by use case: `catalogue.rs` (create, update, delete,
//! read and list campaigns), `search.rs`, `redeem.rs` (redeem, cancel,
//! redemptions), `holds.rs` (quota holds), `revisions.rs` (campaign
//! revisions), `combine.rs` (redeem's
//! stacking check), `preview.rs`,
//! `quota_view.rs`, `transfer.rs` (export and import); its per-project
//! compiled snapshots (`snapshots.rs`) and its quota usage cache
//! (`usage.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::core::campaign::zones::TimeZones;
use crate::core::clock::Clock;
use crate::core::error::ErrorCode;
use crate::core::limits::MAX_CAMPAIGNS_PER_PROJECT;
use crate::store::{CampaignStore, RedemptionStore};
use crate::Error;
use snapshots::Snapshots;
use usage::UsageCache;

mod catalogue;
mod charged;
mod codes;
mod combine;
mod holds;
mod preview;
mod quota_view;
mod redeem;
mod revisions;
mod search;
mod snapshots;
#[cfg(all(test, feature = "memory"))]
mod tests;
mod transfer;
mod usage;

pub use codes::{CodeExport, CodeInfo, MAX_HTTP_GENERATE};
pub use holds::{HoldRequest, DEFAULT_HOLD_TTL_SECONDS, MAX_LIVE_HOLDS_LISTED};
pub use preview::{Preview, PreviewHit, PreviewQuota};
pub use quota_view::{QuotaUsagePage, QuotaUsageQuery, DEFAULT_QUOTA_PAGE_SIZE};
pub use redeem::RedeemResult;
pub use search::SearchOptions;
pub use snapshots::DEFAULT_REFRESH;
pub use transfer::Imported;

/// Campaign administration, search and redeem.
///
/// Holds a per-project compiled snapshot of the campaigns (see
/// [`SearchOptions`] and the module docs of the engine), refreshed when the
/// store's catalog changes.
///
/// # What a service keeps, and for how long
///
/// Search reads two things from the store: the catalog (compiled into a
/// snapshot) and the usage of the quotas its hits would charge (campaigns
/// whose quotas are used up for the request are left out: a read-only
/// check, nothing reserved). The service keeps both for the refresh
/// interval ([`DEFAULT_REFRESH`], 500 ms; see
/// [`with_refresh_interval`](Self::with_refresh_interval)):
///
/// - a write through this service (campaign create, update, delete; a
///   redeem or cancel) is seen by every search that starts after it
///   returns: read your writes;
/// - a write by another process sharing the database, or another service
///   over the same store, is seen by search within the refresh interval;
/// - redeem never uses what search kept: it re-evaluates the stored
///   campaign and checks and charges every quota in one atomic store call.
///   So a campaign search offered may still be refused by redeem with
///   `quota_exceeded` — as it always could be, since search reserves
///   nothing.
///
/// A refresh interval of zero reads both from the store on every search.
pub struct CampaignService<S> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    snapshots: Snapshots,
    usage: UsageCache,
    max_campaigns: u64,
    zones: TimeZones,
}

impl<S> std::fmt::Debug for CampaignService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CampaignService").finish_non_exhaustive()
    }
}

fn campaign_not_found(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::CampaignNotFound,
        format!("no campaign {what} in this project"),
    )
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// A service over `store`, reading time from `clock`.
    pub fn new(store: Arc<S>, clock: Arc<dyn Clock>) -> Self {
        CampaignService {
            store,
            clock,
            snapshots: Snapshots::new(DEFAULT_REFRESH),
            usage: UsageCache::new(DEFAULT_REFRESH),
            max_campaigns: MAX_CAMPAIGNS_PER_PROJECT,
            zones: TimeZones::default(),
        }
    }
    /// Sets the time zone of each project (default: UTC for all): where a
    /// campaign without its own `timeZone` rolls `${day}`, `${month}`,
    /// `${year}` and `${week}` over.
    #[must_use]
    pub fn with_time_zones(mut self, zones: TimeZones) -> Self {
        self.zones = zones;
        self
    }
    /// Sets how many campaigns one project may hold (default
    /// [`MAX_CAMPAIGNS_PER_PROJECT`]); a create beyond it is refused with
    /// [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded), code
    /// `too_many_campaigns`. The store counts and inserts in one atomic step
    /// ([`CampaignStore::insert_campaign_within`]), so racing creates, from
    /// one process or many, never take a project past the limit.
    #[must_use]
    pub fn with_max_campaigns(mut self, max: u64) -> Self {
        self.max_campaigns = max;
        self
    }
    /// Sets how long a compiled snapshot is trusted before the store is
    /// asked whether another process changed the campaigns, and how long
    /// search trusts the quota usage it read (see the type's docs; default
    /// [`DEFAULT_REFRESH`]; zero: ask the store on every search).
    #[must_use]
    pub fn with_refresh_interval(mut self, refresh: Duration) -> Self {
        self.snapshots = Snapshots::new(refresh);
        self.usage = UsageCache::new(refresh);
        self
    }
    /// The store.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }
    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}
