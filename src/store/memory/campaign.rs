//! Campaigns, redemptions and quota usage in memory.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::{lock, MemoryStore};
use crate::core::campaign::codes::PromoCode;
use crate::core::campaign::{Campaign, CampaignRevision, QuotaUsage, Redemption, TxStatus};
use crate::core::outbox::OutboxEvent;
use crate::store::campaign::too_many_campaigns;
use crate::store::{
    CampaignQuery, CampaignSort, CampaignStore, CodeRefusal, NamedCampaign, Page, Period,
    RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore, SortDirection,
};
use crate::{Error, ErrorCode, Result};

#[derive(Debug, Default)]
pub(super) struct State {
    /// Campaigns by (project, id).
    campaigns: HashMap<(String, Uuid), Campaign>,
    /// Catalog version per project.
    versions: HashMap<String, i64>,
    /// Revisions by (project, campaign id), oldest first; kept after the
    /// campaign is deleted.
    revisions: HashMap<(String, Uuid), Vec<CampaignRevision>>,
    /// Redemptions in insertion order.
    pub(super) redemptions: Vec<Redemption>,
    /// Index of a redemption by (project, id).
    pub(super) by_id: HashMap<(String, Uuid), usize>,
    /// Index of a redemption by (project, idempotency key).
    by_key: HashMap<(String, String), usize>,
    /// Quota usage by (project, key).
    pub(super) usage: BTreeMap<(String, String), Decimal>,
    /// Per project, its keys of `usage` in the order they were first
    /// charged: `charged_keys`' cursor is a position here.
    pub(super) charged_order: HashMap<String, Vec<String>>,
    /// The charges that count for a time (see `hold.rs`).
    pub(super) marks: Marks,
    /// Holds by (project, id).
    pub(super) holds: HashMap<(String, Uuid), crate::core::campaign::Hold>,
    /// Code pools.
    pub(super) codes: super::codes::Pools,
}

impl State {
    fn bump(&mut self, project: &str) {
        *self.versions.entry(project.to_owned()).or_default() += 1;
    }

    fn count(&self, project: &str) -> u64 {
        self.campaigns
            .values()
            .filter(|c| c.project_id == project)
            .count() as u64
    }

    fn code_taken(&self, campaign: &Campaign) -> bool {
        self.campaigns.values().any(|c| {
            c.project_id == campaign.project_id
                && c.ref_code == campaign.ref_code
                && c.id != campaign.id
        })
    }
}

fn duplicate_code(campaign: &Campaign) -> Error {
    Error::new(
        ErrorCode::DuplicateRefCode,
        format!(
            "a campaign with refCode {:?} already exists in this project",
            campaign.ref_code
        ),
    )
}

/// Case-insensitive partial match of the list query `q`.
pub(crate) fn matches_q(c: &Campaign, q: &str) -> bool {
    let q = q.to_lowercase();
    c.name.to_lowercase().contains(&q)
        || c.ref_code.to_lowercase().contains(&q)
        || c.group_name
            .as_deref()
            .is_some_and(|g| g.to_lowercase().contains(&q))
        || c.status.as_str().to_lowercase().contains(&q)
}

/// Whether a campaign passes every filter of a list query.
pub(crate) fn matches_query(c: &Campaign, query: &CampaignQuery) -> bool {
    query.status.as_ref().is_none_or(|st| &c.status == st)
        && query.q.as_deref().is_none_or(|q| matches_q(c, q))
        && query
            .channel
            .as_deref()
            .is_none_or(|ch| c.channel.as_deref() == Some(ch))
        && query
            .group
            .as_deref()
            .is_none_or(|g| c.group_name.as_deref() == Some(g))
        && query
            .period
            .is_none_or(|(p, at)| Period::of(c.start_date, c.end_date, at) == p)
}

/// The order of a campaign list: the query's keys, then `refCode`, then `id`.
pub(crate) fn compare(
    a: &Campaign,
    b: &Campaign,
    sort: &[(CampaignSort, SortDirection)],
) -> Ordering {
    for (field, dir) in sort {
        let ord = match field {
            CampaignSort::Name => a.name.cmp(&b.name),
            CampaignSort::RefCode => a.ref_code.cmp(&b.ref_code),
            CampaignSort::Priority => a.priority.cmp(&b.priority),
            CampaignSort::StartDate => a.start_date.cmp(&b.start_date),
            CampaignSort::EndDate => a.end_date.cmp(&b.end_date),
            CampaignSort::CreatedDate => a.created_date.cmp(&b.created_date),
            CampaignSort::LastModifiedDate => a.last_modified_date.cmp(&b.last_modified_date),
        };
        let ord = if *dir == SortDirection::Desc {
            ord.reverse()
        } else {
            ord
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.ref_code.cmp(&b.ref_code).then(a.id.cmp(&b.id))
}

impl CampaignStore for MemoryStore {
    async fn insert_campaign_within(&self, campaign: &Campaign, max: u64) -> Result<()> {
        let mut s = lock(&self.campaigns);
        if max != u64::MAX && s.count(&campaign.project_id) >= max {
            return Err(too_many_campaigns(max));
        }
        if s.code_taken(campaign) {
            return Err(duplicate_code(campaign));
        }
        let key = (campaign.project_id.clone(), campaign.id);
        if s.campaigns.contains_key(&key) {
            return Err(Error::new(
                ErrorCode::DuplicateId,
                "a campaign with this id already exists",
            ));
        }
        // `active` is computed at response time, never stored (as in SQL stores).
        s.campaigns.insert(
            key.clone(),
            Campaign {
                active: false,
                ..campaign.clone()
            },
        );
        // A new campaign starts a new history, even under a deleted one's id.
        s.revisions
            .insert(key, vec![CampaignRevision::of(campaign)]);
        s.bump(&campaign.project_id);
        Ok(())
    }

    async fn update_campaign(&self, campaign: &Campaign, expected_version: i64) -> Result<()> {
        let mut s = lock(&self.campaigns);
        let key = (campaign.project_id.clone(), campaign.id);
        let Some(stored) = s.campaigns.get(&key) else {
            return Err(Error::new(ErrorCode::CampaignNotFound, "no such campaign"));
        };
        if stored.version != expected_version {
            return Err(stale(stored.version, expected_version));
        }
        if s.code_taken(campaign) {
            return Err(duplicate_code(campaign));
        }
        // `active` is computed at response time, never stored (as in SQL stores).
        s.campaigns.insert(
            key.clone(),
            Campaign {
                active: false,
                ..campaign.clone()
            },
        );
        s.revisions
            .entry(key)
            .or_default()
            .push(CampaignRevision::of(campaign));
        s.bump(&campaign.project_id);
        Ok(())
    }

    async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<bool> {
        let mut s = lock(&self.campaigns);
        let existed = s.campaigns.remove(&(project.to_owned(), id)).is_some();
        if existed {
            s.bump(project);
        }
        Ok(existed)
    }

    async fn campaign(&self, project: &str, id: Uuid) -> Result<Option<Campaign>> {
        Ok(lock(&self.campaigns)
            .campaigns
            .get(&(project.to_owned(), id))
            .cloned())
    }

    async fn campaign_by_code(&self, project: &str, ref_code: &str) -> Result<Option<Campaign>> {
        let s = lock(&self.campaigns);
        Ok(s.campaigns
            .values()
            .find(|c| c.project_id == project && c.ref_code == ref_code)
            .cloned())
    }

    async fn campaigns_by_code(
        &self,
        project: &str,
        ref_codes: &[&str],
    ) -> Result<Vec<NamedCampaign>> {
        let s = lock(&self.campaigns);
        Ok(s.campaigns
            .values()
            .filter(|c| c.project_id == project && ref_codes.contains(&c.ref_code.as_str()))
            .map(|c| NamedCampaign {
                campaign: c.clone(),
                code_pool: s.codes.has_pool(project, c.id),
            })
            .collect())
    }

    async fn list_campaigns(&self, project: &str, query: &CampaignQuery) -> Result<Page<Campaign>> {
        let s = lock(&self.campaigns);
        let mut all: Vec<Campaign> = s
            .campaigns
            .values()
            .filter(|c| c.project_id == project && matches_query(c, query))
            .cloned()
            .collect();
        all.sort_by(|a, b| compare(a, b, &query.sort));
        Ok(Page::slice(all, query.page, query.size))
    }

    async fn all_campaigns(&self, project: &str) -> Result<Vec<Campaign>> {
        let s = lock(&self.campaigns);
        let mut all: Vec<Campaign> = s
            .campaigns
            .values()
            .filter(|c| c.project_id == project)
            .cloned()
            .collect();
        all.sort_by(|a, b| a.ref_code.cmp(&b.ref_code));
        Ok(all)
    }

    async fn catalog_version(&self, project: &str) -> Result<i64> {
        Ok(lock(&self.campaigns)
            .versions
            .get(project)
            .copied()
            .unwrap_or(0))
    }

    async fn count_campaigns(&self, project: &str) -> Result<u64> {
        Ok(lock(&self.campaigns).count(project))
    }

    async fn campaign_revisions(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<CampaignRevision>> {
        let s = lock(&self.campaigns);
        let all = s
            .revisions
            .get(&(project.to_owned(), campaign_id))
            .map(|r| r.iter().rev().cloned().collect())
            .unwrap_or_default();
        Ok(Page::slice(all, page, size))
    }

    async fn campaign_revision(
        &self,
        project: &str,
        campaign_id: Uuid,
        revision: i64,
    ) -> Result<Option<CampaignRevision>> {
        let s = lock(&self.campaigns);
        Ok(s.revisions
            .get(&(project.to_owned(), campaign_id))
            .and_then(|r| r.iter().find(|r| r.revision == revision))
            .cloned())
    }
}

pub(crate) fn stale(stored: i64, expected: i64) -> Error {
    Error::new(
        ErrorCode::StaleVersion,
        format!("the campaign is at version {stored}, not {expected}; reload it and apply the change again"),
    )
}

impl RedemptionStore for MemoryStore {
    async fn redeem(&self, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        let r = &plan.redemption;
        let mut s = lock(&self.campaigns);
        if let Some(key) = &r.idempotency_key {
            if let Some(&i) = s.by_key.get(&(r.project_id.clone(), key.clone())) {
                return Ok(RedeemOutcome::Replayed(s.redemptions[i].clone()));
            }
        }
        if plan.verify_campaign {
            let stored = s.campaigns.get(&(r.project_id.clone(), r.campaign_id));
            if stored.is_none_or(|c| c.version != r.campaign_version) {
                return Ok(RedeemOutcome::CampaignChanged);
            }
            if r.code.is_none() && s.codes.has_pool(&r.project_id, r.campaign_id) {
                return Ok(RedeemOutcome::CodeRefused(CodeRefusal::Required));
            }
        }
        if let Some(code) = &r.code {
            if let Some(refusal) = s
                .codes
                .check(&r.project_id, r.campaign_id, code, r.created_date)
            {
                return Ok(RedeemOutcome::CodeRefused(refusal));
            }
        }
        // Check every charge before applying any: all or nothing.
        if let Some((key, used, limit)) =
            s.charge_all(&r.project_id, &r.quotas, r.id, r.created_date, None)
        {
            return Ok(RedeemOutcome::QuotaExceeded { key, used, limit });
        }
        if let Some(code) = &r.code {
            s.codes.use_code(&r.project_id, code, 1);
        }
        let i = s.redemptions.len();
        s.redemptions.push(r.clone());
        s.by_id.insert((r.project_id.clone(), r.id), i);
        if let Some(key) = &r.idempotency_key {
            s.by_key.insert((r.project_id.clone(), key.clone()), i);
        }
        lock(&self.outbox).append(OutboxEvent::for_redemption(r));
        Ok(RedeemOutcome::Recorded(r.clone()))
    }

    async fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Redemption>> {
        let mut s = lock(&self.campaigns);
        let Some(&i) = s.by_id.get(&(project.to_owned(), id)) else {
            return Ok(None);
        };
        if s.redemptions[i].status == TxStatus::Cancelled {
            return Ok(Some(s.redemptions[i].clone()));
        }
        if let Some(code) = s.redemptions[i].code.clone() {
            s.codes.use_code(project, &code, -1);
        }
        let charges = s.redemptions[i].quotas.clone();
        s.give_back(project, &charges, id);
        let r = &mut s.redemptions[i];
        r.status = TxStatus::Cancelled;
        r.cancelled_date = Some(at);
        for tx in &mut r.action_txs {
            tx.status = TxStatus::Cancelled;
        }
        lock(&self.outbox).append(OutboxEvent::for_redemption(r));
        Ok(Some(r.clone()))
    }

    async fn code(&self, project: &str, normalized: &str) -> Result<Option<PromoCode>> {
        Ok(lock(&self.campaigns)
            .codes
            .get(project, normalized)
            .cloned())
    }

    async fn redemption_by_key(
        &self,
        project: &str,
        idempotency_key: &str,
    ) -> Result<Option<Redemption>> {
        let s = lock(&self.campaigns);
        Ok(s.by_key
            .get(&(project.to_owned(), idempotency_key.to_owned()))
            .map(|&i| s.redemptions[i].clone()))
    }

    async fn redemption(&self, project: &str, id: Uuid) -> Result<Option<Redemption>> {
        let s = lock(&self.campaigns);
        Ok(s.by_id
            .get(&(project.to_owned(), id))
            .map(|&i| s.redemptions[i].clone()))
    }

    async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        let s = lock(&self.campaigns);
        let mut all: Vec<Redemption> = s
            .redemptions
            .iter()
            .filter(|r| r.project_id == project)
            .filter(|r| {
                query
                    .campaign_code
                    .as_ref()
                    .is_none_or(|c| &r.campaign_code == c)
            })
            .filter(|r| {
                query
                    .user_id
                    .as_ref()
                    .is_none_or(|u| r.user_id.as_ref() == Some(u))
            })
            .cloned()
            .collect();
        // Newest first; ties by id so the order is total.
        all.sort_by(|a, b| b.created_date.cmp(&a.created_date).then(b.id.cmp(&a.id)));
        Ok(Page::slice(all, query.page, query.size))
    }

    async fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Decimal>> {
        let s = lock(&self.campaigns);
        Ok(keys
            .iter()
            .filter_map(|k| {
                s.usage
                    .get(&(project.to_owned(), k.clone()))
                    .map(|u| (k.clone(), *u))
            })
            .collect())
    }

    async fn counter_usage(
        &self,
        project: &str,
        counters: &[crate::store::Counter],
        at: DateTime<Utc>,
    ) -> Result<Vec<crate::store::CounterUsage>> {
        let s = lock(&self.campaigns);
        Ok(counters
            .iter()
            .map(|c| s.counter_usage(project, &c.key, c.window, at))
            .collect())
    }

    async fn charged_keys(
        &self,
        project: &str,
        after: Option<i64>,
    ) -> Result<crate::store::ChargedKeys> {
        let s = lock(&self.campaigns);
        let order = s.charged_order.get(project).map_or(&[][..], Vec::as_slice);
        let from = after.map_or(0, |a| usize::try_from(a).unwrap_or(0).min(order.len()));
        Ok(crate::store::ChargedKeys {
            keys: order[from..].to_vec(),
            cursor: i64::try_from(order.len()).unwrap_or(i64::MAX),
        })
    }

    async fn quota_usage_by_prefix(
        &self,
        project: &str,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, Decimal)>> {
        use std::ops::Bound;
        let s = lock(&self.campaigns);
        let start = match after {
            Some(after) if after >= prefix => {
                Bound::Excluded((project.to_owned(), after.to_owned()))
            }
            _ => Bound::Included((project.to_owned(), prefix.to_owned())),
        };
        Ok(s.usage
            .range((start, Bound::Unbounded))
            .take_while(|((p, key), _)| p == project && key.starts_with(prefix))
            .take(limit as usize)
            .map(|((_, key), used)| (key.clone(), *used))
            .collect())
    }

    async fn campaign_quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
    ) -> Result<Vec<QuotaUsage>> {
        let s = lock(&self.campaigns);
        // Latest limit per key: later redemptions overwrite earlier ones.
        let mut limits: HashMap<String, Decimal> = HashMap::new();
        for r in s
            .redemptions
            .iter()
            .filter(|r| r.project_id == project && r.campaign_id == campaign_id)
        {
            for c in &r.quotas {
                limits.insert(c.key.clone(), c.limit);
            }
        }
        let mut out: Vec<QuotaUsage> = limits
            .into_iter()
            .map(|(key, limit)| {
                let used = s
                    .usage
                    .get(&(project.to_owned(), key.clone()))
                    .copied()
                    .unwrap_or_default();
                QuotaUsage {
                    key,
                    used,
                    limit: Some(limit),
                    window: None,
                    held: None,
                }
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}

/// A charge that counts for a time: a rolling quota's, or a hold's (see
/// `hold.rs`).
#[derive(Debug, Clone)]
pub(super) struct Mark {
    pub(super) amount: Decimal,
    /// Rolling marks: when the charge stops counting.
    pub(super) until: Option<DateTime<Utc>>,
    /// Hold marks: when the hold expires; `None` once confirmed.
    pub(super) expires: Option<DateTime<Utc>>,
}

impl Mark {
    pub(super) fn counts(&self, at: DateTime<Utc>) -> bool {
        self.until.is_none_or(|u| at < u) && self.expires.is_none_or(|e| at < e)
    }
}

/// Marks by counter (project, key, window seconds), then owner.
pub(super) type Marks = BTreeMap<(String, String, i64), HashMap<Uuid, Mark>>;
