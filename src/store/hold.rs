//! Quota holds and the usage of quota counters at an instant.

use std::future::Future;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::CodeRefusal;
use crate::core::campaign::{Hold, QuotaWindow, Redemption};
use crate::Result;

/// One counter a quota limits: a key, and the window when the quota rolls
/// (a rolling quota's usage is the sum of its charges in the window).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Counter {
    /// The rendered key.
    pub key: String,
    /// The rolling window; `None`: a calendar quota.
    pub window: Option<QuotaWindow>,
}

/// The usage of a counter at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterUsage {
    /// What counts against the limit: redemptions (within the window, for
    /// a rolling quota) and live holds.
    pub used: Decimal,
    /// The part of `used` that live holds reserve.
    pub held: Decimal,
}

/// What placing a hold did.
#[derive(Debug, Clone, PartialEq)]
pub enum HoldOutcome {
    /// Placed; every charge applied until the hold expires.
    Placed(Box<Hold>),
    /// The charge to `key` would exceed its limit: nothing was written.
    QuotaExceeded {
        /// The key that would exceed its limit.
        key: String,
        /// Its current usage.
        used: Decimal,
        /// Its limit.
        limit: Decimal,
    },
    /// The hold's code (or its absence) refused it: nothing was written.
    CodeRefused(CodeRefusal),
}

/// What confirming a hold did.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirmation {
    /// The hold's redemption, recorded now (`false`) or by an earlier
    /// confirmation (`true`: nothing changed).
    Confirmed(Redemption, bool),
    /// The hold had expired (nothing changed).
    Expired(Hold),
    /// The hold had been released (nothing changed).
    Released(Hold),
}

/// Quota holds: reservations that count toward quotas until they expire.
///
/// **Architecture invariant:** placing a hold checks and charges every
/// quota as a redeem does, in one atomic store call; a hold's charges count
/// exactly while `now < expiresAt` in every check and read, whether or not
/// anything has cleaned up expired holds.
pub trait HoldStore: Send + Sync {
    /// Atomically reserves one use of the hold's code, if it names one (as
    /// [`RedemptionStore::redeem`] takes one: an active code of the
    /// campaign with a use left at `hold.created_date`), applies every
    /// charge of `hold` (status `HELD`) only if each counter stays within
    /// its limit at `hold.created_date`, counting the redemptions and the
    /// holds live then, and records the hold — or writes nothing. The
    /// code's use counts toward its limit while the hold lives: a release
    /// gives it back, an expired hold's is given back by the next use of
    /// the code that needs it (or the sweep), a confirmation keeps it for
    /// the redemption.
    ///
    /// [`RedemptionStore::redeem`]: super::RedemptionStore::redeem
    fn place_hold(&self, hold: &Hold) -> impl Future<Output = Result<HoldOutcome>> + Send;

    /// Atomically turns a live hold into its redemption (dated `at`),
    /// keeping its charges and its code's use without taking them again. A hold confirmed before
    /// gives back its redemption; an expired or released one changes
    /// nothing. `None` when there is no such hold.
    fn confirm_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Confirmation>>> + Send;

    /// Atomically releases a hold: its charges (and its code's use) are
    /// given back and it
    /// becomes `RELEASED`. A confirmed or released hold is returned
    /// unchanged. `None` when there is no such hold.
    fn release_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Hold>>> + Send;

    /// One hold, as stored (a `HELD` hold past its expiry is read as
    /// expired by [`Hold::at`]).
    fn hold(&self, project: &str, id: Uuid) -> impl Future<Output = Result<Option<Hold>>> + Send;

    /// The holds of a campaign live at `at`, soonest expiry first, at most
    /// `limit`.
    fn live_holds(
        &self,
        project: &str,
        campaign_id: Uuid,
        at: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Hold>>> + Send;

    /// Cleans up what expired by `at`: gives back the charges of expired
    /// holds still counted in calendar usage and the code uses they
    /// reserved, and deletes the rolling charges no window counts any
    /// more. Quota reads and every check are exact without it (a code's
    /// listed `used` counts an expired hold's use until the code is next
    /// used or swept); it only keeps the tables small. Returns the rows
    /// removed.
    fn sweep_quota_marks(
        &self,
        project: &str,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64>> + Send;
}
