//! Storage roles of the campaign side.

use std::collections::HashMap;
use std::future::Future;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::{Page, SortDirection};
use crate::core::campaign::codes::PromoCode;
use crate::core::campaign::{
    Campaign, CampaignRevision, CampaignStatus, QuotaCharge, QuotaUsage, Redemption,
};
use crate::Result;

/// A field campaigns can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignSort {
    /// `name`
    Name,
    /// `refCode`
    RefCode,
    /// `priority`
    Priority,
    /// `startDate`
    StartDate,
    /// `endDate`
    EndDate,
    /// `createdDate`
    CreatedDate,
    /// `lastModifiedDate`
    LastModifiedDate,
}

impl CampaignSort {
    /// Parses the wire name of a sort field.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "name" => CampaignSort::Name,
            "refCode" => CampaignSort::RefCode,
            "priority" => CampaignSort::Priority,
            "startDate" => CampaignSort::StartDate,
            "endDate" => CampaignSort::EndDate,
            "createdDate" => CampaignSort::CreatedDate,
            "lastModifiedDate" => CampaignSort::LastModifiedDate,
            _ => return None,
        })
    }
}

/// Where a campaign's running period stands at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// `startDate <= at < endDate` (whatever the status).
    Current,
    /// `at < startDate`.
    Scheduled,
    /// `endDate <= at`.
    Ended,
}

impl Period {
    /// Parses `current`, `scheduled` or `ended`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "current" => Period::Current,
            "scheduled" => Period::Scheduled,
            "ended" => Period::Ended,
            _ => return None,
        })
    }

    /// The name [`parse`](Self::parse) reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Current => "current",
            Period::Scheduled => "scheduled",
            Period::Ended => "ended",
        }
    }

    /// Where a period from `start` (inclusive) to `end` (exclusive) stands
    /// at `at`.
    pub fn of(start: DateTime<Utc>, end: DateTime<Utc>, at: DateTime<Utc>) -> Self {
        if at < start {
            Period::Scheduled
        } else if at < end {
            Period::Current
        } else {
            Period::Ended
        }
    }
}

/// A campaign list query.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignQuery {
    /// Case-insensitive partial match on name, groupName, refCode or
    /// status (`ENABLE`, `DISABLE`): the campaign list's one search box.
    pub q: Option<String>,
    /// Only campaigns with this status.
    pub status: Option<CampaignStatus>,
    /// Only campaigns of exactly this channel.
    pub channel: Option<String>,
    /// Only campaigns of exactly this groupName.
    pub group: Option<String>,
    /// Only campaigns whose period stands so at the instant given.
    pub period: Option<(Period, DateTime<Utc>)>,
    /// Zero-based page.
    pub page: u32,
    /// Page size (1 to 1000).
    pub size: u32,
    /// Sort keys, in order; ties broken by `refCode` then `id`.
    pub sort: Vec<(CampaignSort, SortDirection)>,
}

impl Default for CampaignQuery {
    fn default() -> Self {
        CampaignQuery {
            q: None,
            status: None,
            channel: None,
            group: None,
            period: None,
            page: 0,
            size: super::DEFAULT_PAGE_SIZE,
            sort: Vec::new(),
        }
    }
}

/// A redemption list query.
#[derive(Debug, Clone, PartialEq)]
pub struct RedemptionQuery {
    /// Only redemptions of this campaign code.
    pub campaign_code: Option<String>,
    /// Only redemptions of this user.
    pub user_id: Option<String>,
    /// Zero-based page.
    pub page: u32,
    /// Page size (1 to 1000).
    pub size: u32,
}

impl Default for RedemptionQuery {
    fn default() -> Self {
        RedemptionQuery {
            campaign_code: None,
            user_id: None,
            page: 0,
            size: super::DEFAULT_PAGE_SIZE,
        }
    }
}

/// Everything one redemption writes, decided by the pure core.
#[derive(Debug, Clone, PartialEq)]
pub struct RedemptionPlan {
    /// The record to store (status `COMPLETE`). Its `quotas` are the charges
    /// to apply, one per distinct key, sorted by key (the fixed order in
    /// which SQL stores lock them, so two redeems cannot deadlock).
    pub redemption: Redemption,
    /// Whether the store checks, in the redeem's transaction, that the
    /// campaign is still stored in the version the plan was made from
    /// (`redemption.campaign_version`) and, for a redeem without a code,
    /// has no code pool. A plan made from a compiled snapshot instead of a
    /// read of the campaign sets it: the store then answers
    /// [`RedeemOutcome::CampaignChanged`] or a
    /// [`CodeRefusal::Required`] refusal and writes nothing, instead of
    /// recording a redemption of a campaign that has changed since.
    pub verify_campaign: bool,
}

impl RedemptionPlan {
    /// The plan of `redemption`, recorded without checking its campaign
    /// (see [`verify_campaign`](Self::verify_campaign)).
    pub fn new(redemption: Redemption) -> RedemptionPlan {
        RedemptionPlan {
            redemption,
            verify_campaign: false,
        }
    }

    /// The charges of the plan.
    pub fn charges(&self) -> &[QuotaCharge] {
        &self.redemption.quotas
    }
}

/// What a redemption store call did.
#[derive(Debug, Clone, PartialEq)]
pub enum RedeemOutcome {
    /// Recorded; every charge applied.
    Recorded(Redemption),
    /// The idempotency key was already used: this is the stored redemption,
    /// nothing was charged.
    Replayed(Redemption),
    /// The charge to `key` would exceed its limit: nothing was written.
    QuotaExceeded {
        /// The key that would exceed its limit.
        key: String,
        /// Its current usage.
        used: Decimal,
        /// Its limit.
        limit: Decimal,
    },
    /// The plan's code (or its absence) refused the redemption: nothing
    /// was written.
    CodeRefused(CodeRefusal),
    /// A plan with [`verify_campaign`](RedemptionPlan::verify_campaign):
    /// the campaign is no longer stored in the version planned from (it
    /// was edited or deleted since). Nothing was written; plan again from
    /// the stored campaign.
    CampaignChanged,
}

/// A campaign a redeem names, as [`CampaignStore::campaigns_by_code`]
/// reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedCampaign {
    /// The campaign.
    pub campaign: Campaign,
    /// Whether it owns a code pool (at least one code, active or not): a
    /// redeem or hold of it must then name one of its codes.
    pub code_pool: bool,
}

/// Why a redemption's code was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRefusal {
    /// No code of the project has this normalized form.
    NotFound(String),
    /// The code belongs to another campaign.
    OtherCampaign(String),
    /// The code is deactivated.
    Inactive(String),
    /// The code was used `usage_limit` times.
    Exhausted {
        /// The normalized code.
        code: String,
        /// Its usage limit.
        limit: i64,
    },
    /// The request names no code, and the campaign has a code pool
    /// (decided by the service from [`NamedCampaign::code_pool`]).
    Required,
}

/// Campaign definitions.
pub trait CampaignStore: Send + Sync {
    /// Stores a new campaign. A campaign with the same `refCode` in the
    /// project: [`Conflict`](crate::ErrorKind::Conflict) `duplicate_ref_code`.
    fn insert_campaign(&self, campaign: &Campaign) -> impl Future<Output = Result<()>> + Send {
        self.insert_campaign_within(campaign, u64::MAX)
    }

    /// [`insert_campaign`](Self::insert_campaign), unless the project
    /// already holds `max` campaigns: then
    /// [`LimitExceeded`](crate::ErrorKind::LimitExceeded)
    /// `too_many_campaigns` and nothing is stored. The count and the insert
    /// are one atomic step, so concurrent creates, from one process or many,
    /// never take the project past `max`.
    fn insert_campaign_within(
        &self,
        campaign: &Campaign,
        max: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Replaces a campaign if its stored version is still `expected_version`
    /// (else `Conflict` `stale_version`; a missing campaign is
    /// [`NotFound`](crate::ErrorKind::NotFound) `campaign_not_found`).
    fn update_campaign(
        &self,
        campaign: &Campaign,
        expected_version: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes a campaign; whether it existed. Its redemptions and quota
    /// usage stay (they are the record of what was given).
    fn delete_campaign(&self, project: &str, id: Uuid)
        -> impl Future<Output = Result<bool>> + Send;

    /// One campaign by id.
    fn campaign(
        &self,
        project: &str,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<Campaign>>> + Send;

    /// One campaign by reference code.
    fn campaign_by_code(
        &self,
        project: &str,
        ref_code: &str,
    ) -> impl Future<Output = Result<Option<Campaign>>> + Send;

    /// The campaigns of these reference codes that exist, in any order,
    /// each with whether it owns a code pool: what a redeem reads (its
    /// campaign and those of `withCampaigns`), in one round trip where the
    /// store has a database.
    fn campaigns_by_code(
        &self,
        project: &str,
        ref_codes: &[&str],
    ) -> impl Future<Output = Result<Vec<NamedCampaign>>> + Send;

    /// A page of campaigns.
    fn list_campaigns(
        &self,
        project: &str,
        query: &CampaignQuery,
    ) -> impl Future<Output = Result<Page<Campaign>>> + Send;

    /// Every campaign of the project (to compile the engine snapshot).
    fn all_campaigns(&self, project: &str) -> impl Future<Output = Result<Vec<Campaign>>> + Send;

    /// A counter that changes whenever a campaign of the project is
    /// inserted, updated or deleted, by any process.
    fn catalog_version(&self, project: &str) -> impl Future<Output = Result<i64>> + Send;

    /// Number of campaigns in the project.
    fn count_campaigns(&self, project: &str) -> impl Future<Output = Result<u64>> + Send;

    /// A page of a campaign's revisions, newest first. Every insert and
    /// update writes the revision of the campaign it saves (number =
    /// `version`, by = `lastModifiedBy`, at = `lastModifiedDate`) in its own
    /// atomic step; a delete keeps them, and an insert under the id of a
    /// deleted campaign replaces them.
    fn campaign_revisions(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> impl Future<Output = Result<Page<CampaignRevision>>> + Send;

    /// One revision of a campaign.
    fn campaign_revision(
        &self,
        project: &str,
        campaign_id: Uuid,
        revision: i64,
    ) -> impl Future<Output = Result<Option<CampaignRevision>>> + Send;
}

/// Redemptions and quota usage.
pub trait RedemptionStore: Send + Sync {
    /// Atomically: if the plan's idempotency key was already recorded in the
    /// project, returns [`RedeemOutcome::Replayed`] with the stored record;
    /// else takes one use of the plan's code, if it names one (an active
    /// code of the campaign with a use left, counting the uses live holds
    /// reserve; a plan without a code takes none: the service refused it
    /// already when the campaign has a pool), applies every charge only if
    /// each key's usage stays within its limit, and records the redemption
    /// — or writes nothing.
    fn redeem(&self, plan: &RedemptionPlan) -> impl Future<Output = Result<RedeemOutcome>> + Send;

    /// Atomically marks a redemption and its transactions `CANCELLED` and
    /// gives its charges (and the use of its code) back. Cancelling a
    /// cancelled redemption changes nothing. `None` when there is no such redemption.
    fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Redemption>>> + Send;

    /// The code of the project's code pools with this normalized form (a
    /// redeem naming a code finds its campaign so).
    fn code(
        &self,
        project: &str,
        normalized: &str,
    ) -> impl Future<Output = Result<Option<PromoCode>>> + Send;

    /// The redemption recorded with an idempotency key, if any.
    fn redemption_by_key(
        &self,
        project: &str,
        idempotency_key: &str,
    ) -> impl Future<Output = Result<Option<Redemption>>> + Send;

    /// One redemption.
    fn redemption(
        &self,
        project: &str,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<Redemption>>> + Send;

    /// A page of redemptions, newest first.
    fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> impl Future<Output = Result<Page<Redemption>>> + Send;

    /// Current usage of each key (keys never charged are absent).
    fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> impl Future<Output = Result<HashMap<String, Decimal>>> + Send;

    /// The usage of each counter at `at`, in order: a calendar counter's
    /// redemptions and live holds (a hold past its expiry never counts,
    /// cleaned up or not); a rolling counter's charges made in the window
    /// ending at `at` (a charge made at `t` counts while
    /// `t <= at < t + window`), by redemptions and live holds.
    fn counter_usage(
        &self,
        project: &str,
        counters: &[super::Counter],
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<super::CounterUsage>>> + Send;

    /// The quota keys of `project` that have a usage record: every key a
    /// redeem or a hold ever charged (a record, once written, is never
    /// removed; a cancel takes its usage back to zero). With `after`
    /// `None`, every such key; with the cursor an earlier answer gave, at
    /// least every key whose record was committed after that answer began
    /// (some may come again). Search keeps these keys to answer a key that
    /// is not among them with zero usage, without a read.
    ///
    /// On the memory store and SQLite, whose writers take turns, the
    /// cursor is exact. PostgreSQL commits concurrent writers in any order:
    /// its cursor is its clock, a margin before the answer began, and a
    /// key inserted by a transaction that commits later than that margin
    /// after the insert may be missed (see
    /// [`CHARGED_KEYS_MARGIN`](crate::store::CHARGED_KEYS_MARGIN)).
    fn charged_keys(
        &self,
        project: &str,
        after: Option<i64>,
    ) -> impl Future<Output = Result<ChargedKeys>> + Send;

    /// Usage of the keys that begin with `prefix` and sort after `after`
    /// (when given), in bytewise key order, at most `limit` of them: one
    /// range scan of the key index, from `prefix` (or just after `after`)
    /// to [`prefix_end`]. Keys a cancel took back to zero are listed with
    /// usage `0`.
    fn quota_usage_by_prefix(
        &self,
        project: &str,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<(String, Decimal)>>> + Send;

    /// Usage of every key a campaign's redemptions ever charged, sorted by
    /// key; `limit` is the limit recorded with the campaign's latest charge
    /// of the key.
    fn campaign_quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
    ) -> impl Future<Output = Result<Vec<QuotaUsage>>> + Send;
}

/// An answer of [`RedemptionStore::charged_keys`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChargedKeys {
    /// The keys, in no particular order.
    pub keys: Vec<String>,
    /// What to ask with next time, for the keys charged since.
    pub cursor: i64,
}

/// How far before its answer PostgreSQL's [`RedemptionStore::charged_keys`]
/// cursor is set: a key whose charging transaction commits within this
/// long of its insert is found by the next call.
pub const CHARGED_KEYS_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The least string above every string that begins with `prefix`, in
/// bytewise (code point) order: `prefix` with its last character that is
/// not `char::MAX` raised by one and what follows it dropped. `None` when
/// no string is (an empty prefix, or one of `char::MAX` only).
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut end: Vec<char> = prefix.chars().collect();
    while let Some(last) = end.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            end.push(next);
            return Some(end.into_iter().collect());
        }
    }
    None
}

/// The error of a create beyond a project's campaign limit.
#[cfg(any(feature = "memory", feature = "sqlite", feature = "postgres"))]
pub(crate) fn too_many_campaigns(max: u64) -> crate::Error {
    crate::Error::new(
        crate::core::error::ErrorCode::TooManyCampaigns,
        format!("a project holds at most {max} campaigns"),
    )
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_ends() {
        // (prefix, end)
        let cases = [
            ("", None),
            ("SUMMER-", Some("SUMMER.")),
            ("a\u{D7FF}", Some("a\u{E000}")),
            ("a\u{10FFFF}", Some("b")),
            ("\u{10FFFF}\u{10FFFF}", None),
            ("é", Some("ê")),
        ];
        for (prefix, end) in cases {
            assert_eq!(prefix_end(prefix).as_deref(), end, "{prefix:?}");
        }
        // Every string that begins with the prefix sorts below the end.
        for key in ["SUMMER-", "SUMMER-\u{10FFFF}\u{10FFFF}", "SUMMER-zz"] {
            assert!(key < prefix_end("SUMMER-").unwrap().as_str());
        }
    }
}
