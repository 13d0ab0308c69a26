//! `CampaignService`: campaign administration, search and redeem over a store.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::snapshots::{Snapshot, Snapshots, DEFAULT_REFRESH};
use super::usage::{self, UsageCache};
use crate::core::campaign::model::{
    Campaign, CampaignInput, Explanation, RedeemRequest, Redemption, SearchRequest, SearchResponse,
    TxStatus,
};
use crate::core::campaign::zones::TimeZones;
use crate::core::clock::Clock;
use crate::core::engine::validate::{build, Stamp};
use crate::core::engine::{self, stacking, CompiledCampaign, Engine, ParsedRedeem};
use crate::core::error::ErrorCode;
use crate::core::limits::{MAX_CAMPAIGNS_PER_PROJECT, MAX_REF_CODE_LEN};
use crate::store::{
    check_page_size, CampaignQuery, CampaignStore, Counter, Page, RedeemOutcome, RedemptionPlan,
    RedemptionQuery, RedemptionStore,
};
use crate::{Error, Result};

#[path = "codes.rs"]
mod codes;
#[path = "combine.rs"]
mod combine;
#[path = "holds.rs"]
mod holds;
#[path = "preview.rs"]
mod preview;
#[path = "quota_view.rs"]
mod quota_view;
#[path = "revisions.rs"]
mod revisions;
#[path = "transfer.rs"]
mod transfer;
pub use codes::{CodeInfo, MAX_HTTP_GENERATE};
pub use holds::{HoldRequest, DEFAULT_HOLD_TTL_SECONDS, MAX_LIVE_HOLDS_LISTED};
pub use preview::{Preview, PreviewHit, PreviewQuota};
pub use quota_view::{QuotaUsagePage, QuotaUsageQuery, DEFAULT_QUOTA_PAGE_SIZE};
pub use transfer::Imported;

/// Options of a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// Add, per running campaign that did not fire, why.
    pub explain: bool,
    /// Evaluate at this instant instead of now (an administrator previewing
    /// what will apply at a future moment).
    pub at: Option<DateTime<Utc>>,
}

/// The result of a redeem.
#[derive(Debug, Clone, PartialEq)]
pub struct RedeemResult {
    /// The recorded redemption (the stored one, on replay).
    pub redemption: Redemption,
    /// Whether this was a replay of an idempotency key: nothing was charged.
    pub replayed: bool,
}

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

    /// Creates a campaign (version 1). `actor` becomes `createdBy`.
    pub async fn create_campaign(
        &self,
        project: &str,
        input: CampaignInput,
        actor: &str,
    ) -> Result<Campaign> {
        crate::core::limits::check_project_id(project)?;
        let now = self.clock.now();
        let (campaign, _) = build(
            input,
            None,
            &Stamp {
                project,
                actor,
                now,
            },
        )?;
        self.store
            .insert_campaign_within(&campaign, self.max_campaigns)
            .await?;
        self.snapshots.invalidate(project);
        Ok(campaign)
    }

    /// Replaces a campaign; its version increases by one. When the input
    /// names a `version`, it must be the stored one (else `stale_version`).
    pub async fn update_campaign(
        &self,
        project: &str,
        id: Uuid,
        input: CampaignInput,
        actor: &str,
    ) -> Result<Campaign> {
        crate::core::limits::check_project_id(project)?;
        let existing = self
            .store
            .campaign(project, id)
            .await?
            .ok_or_else(|| campaign_not_found(id))?;
        if let Some(v) = input.version {
            if v != existing.version {
                return Err(Error::new(
                    ErrorCode::StaleVersion,
                    format!("the campaign is at version {}, not {v}; reload it and apply the change again", existing.version),
                ));
            }
        }
        let now = self.clock.now();
        let (campaign, _) = build(
            input,
            Some(&existing),
            &Stamp {
                project,
                actor,
                now,
            },
        )?;
        self.store
            .update_campaign(&campaign, existing.version)
            .await?;
        self.snapshots.invalidate(project);
        Ok(campaign)
    }

    /// Deletes a campaign. Its redemptions and quota usage stay.
    pub async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<()> {
        if !self.store.delete_campaign(project, id).await? {
            return Err(campaign_not_found(id));
        }
        self.snapshots.invalidate(project);
        Ok(())
    }

    /// One campaign, with `active` computed now.
    pub async fn campaign(&self, project: &str, id: Uuid) -> Result<Campaign> {
        let c = self
            .store
            .campaign(project, id)
            .await?
            .ok_or_else(|| campaign_not_found(id))?;
        Ok(c.with_active(self.clock.now()))
    }

    /// A page of campaigns, with `active` computed now.
    pub async fn list_campaigns(
        &self,
        project: &str,
        query: &CampaignQuery,
    ) -> Result<Page<Campaign>> {
        check_page_size(query.size)?;
        let now = self.clock.now();
        Ok(self
            .store
            .list_campaigns(project, query)
            .await?
            .map(|c| c.with_active(now)))
    }

    /// Which benefits apply to this request: one entry per benefit of every
    /// firing rule of every running campaign, in priority order, leaving out
    /// campaigns whose quotas are already used up for this request.
    pub async fn search(
        &self,
        project: &str,
        request: &SearchRequest,
        options: &SearchOptions,
    ) -> Result<SearchResponse> {
        let now = options.at.unwrap_or_else(|| self.clock.now());
        let snapshot = self
            .snapshots
            .get(&*self.store, project, self.zones.of(project))
            .await?;
        let outcome = snapshot.engine.search(request, now, options.explain)?;
        let usage = self
            .quota_usage_for_search(project, &outcome.hits, now)
            .await?;
        let mut actions = Vec::new();
        let mut explanations = outcome.explanations;
        let mut kept = Vec::with_capacity(outcome.hits.len());
        let mut usage = usage.into_iter();
        for hit in outcome.hits {
            let exhausted = hit
                .charges
                .iter()
                .zip(usage.by_ref().take(hit.charges.len()))
                // A sum beyond Decimal's range is beyond any limit.
                .find(|(c, used)| {
                    used.checked_add(c.amount)
                        .is_none_or(|total| total > c.limit)
                });
            match exhausted {
                None => kept.push(hit),
                Some((c, used)) if options.explain => explanations.push(Explanation {
                    campaign_id: hit.campaign.campaign.id,
                    ref_code: hit.campaign.campaign.ref_code.clone(),
                    reason: "quota_exhausted".to_owned(),
                    rule_id: None,
                    field: None,
                    attribute: None,
                    op: None,
                    expected: None,
                    actual: None,
                    quota_key: Some(c.key.clone()),
                    suppressed_by: None,
                    message: format!("quota {:?} is used up: {used} of {}", c.key, c.limit),
                }),
                Some(_) => {}
            }
        }
        // Campaigns left out by their quotas suppress nothing.
        let campaigns: Vec<&Campaign> = kept.iter().map(|h| &h.campaign.campaign).collect();
        actions.reserve(kept.iter().map(|h| h.actions.len()).sum());
        for ((hit, verdict), c) in kept
            .iter()
            .zip(stacking::resolve(&campaigns))
            .zip(&campaigns)
        {
            match verdict {
                None => actions.extend(hit.action_matches()),
                Some((why, by)) if options.explain => {
                    explanations.push(stacking::explanation(c, campaigns[by], why));
                }
                Some(_) => {}
            }
        }
        Ok(SearchResponse {
            attribute: request.attribute.clone(),
            actions,
            explain: options.explain.then_some(explanations),
        })
    }

    /// The usage of every charge of `hits`, in order (a key never charged:
    /// zero), from what this service read within the refresh interval, the
    /// rest from the store in one read.
    async fn quota_usage_for_search(
        &self,
        project: &str,
        hits: &[engine::CampaignHit<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<Decimal>> {
        let keys: Vec<Cow<'_, str>> = hits
            .iter()
            .flat_map(|h| h.charges.iter().map(usage::cache_key))
            .collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let refs: Vec<&str> = keys.iter().map(AsRef::as_ref).collect();
        let lookup = self.usage.lookup(project, &refs);
        let mut used = lookup.used;
        if !lookup.missing.is_empty() {
            let read_at = Instant::now();
            let counters: Vec<Counter> = lookup
                .missing
                .iter()
                .map(|k| usage::counter_of(k))
                .collect();
            let read: HashMap<String, Decimal> = lookup
                .missing
                .iter()
                .cloned()
                .zip(self.store.counter_usage(project, &counters, now).await?)
                .map(|(k, u)| (k, u.used))
                .collect();
            for (u, key) in used.iter_mut().zip(&refs) {
                if u.is_none() {
                    *u = Some(read.get(*key).copied().unwrap_or_default());
                }
            }
            self.usage
                .keep(project, lookup.missing, &read, lookup.generation, read_at);
        }
        Ok(used.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Redeems a campaign: re-evaluates it against the request, then charges
    /// every quota and records the redemption in one atomic store call.
    pub async fn redeem(&self, project: &str, request: &RedeemRequest) -> Result<RedeemResult> {
        crate::core::limits::check_project_id(project)?;
        self.redeem_once(project, &ParsedRedeem::parse(request)?)
            .await
    }

    /// [`redeem`](Self::redeem) of a request parsed already (the HTTP
    /// adapter parses at its edge).
    ///
    /// Two store calls: the campaign and those of `withCampaigns` in one
    /// read, then the redemption in one transaction, which also finds a
    /// replay of the idempotency key. Only when the redeem fails before its
    /// transaction (the campaign has ended or changed since, say) is the key
    /// looked up: a replay returns what was recorded whatever happened
    /// since.
    pub async fn redeem_parsed(
        &self,
        project: &str,
        request: &ParsedRedeem<'_>,
    ) -> Result<RedeemResult> {
        crate::core::limits::check_project_id(project)?;
        self.redeem_once(project, request).await
    }

    async fn redeem_once(&self, project: &str, request: &ParsedRedeem<'_>) -> Result<RedeemResult> {
        let fingerprint = request.idempotency_key().map(|_| request.fingerprint());
        let planned = self
            .plan_redeem(project, request, fingerprint.as_deref())
            .await;
        let plan = match (planned, request.idempotency_key()) {
            (Ok(plan), _) => plan,
            (Err(e), Some(key)) => {
                return match self.store.redemption_by_key(project, key).await {
                    Ok(Some(stored)) => replay(stored, request, fingerprint.as_deref()),
                    _ => Err(e),
                }
            }
            (Err(e), None) => return Err(e),
        };
        let outcome = self.store.redeem(&plan).await;
        // Whatever the outcome (an error may come after the commit), what
        // search kept of these keys may be out of date now.
        self.usage
            .forget(project, plan.redemption.quotas.iter().map(usage::cache_key));
        match outcome? {
            RedeemOutcome::Recorded(r) => Ok(RedeemResult {
                redemption: r,
                replayed: false,
            }),
            RedeemOutcome::Replayed(r) => replay(r, request, fingerprint.as_deref()),
            RedeemOutcome::QuotaExceeded { key, used, limit } => Err(Error::new(
                ErrorCode::QuotaExceeded,
                format!("quota {key:?} is exhausted: {used} of {limit} used"),
            )),
            RedeemOutcome::CodeRefused(why) => Err(codes::refused(&why)),
        }
    }

    /// Reads the campaign (and those it is applied with) in one store call,
    /// checks the combination and plans the redemption: everything of a
    /// redeem before its transaction.
    async fn plan_redeem(
        &self,
        project: &str,
        request: &ParsedRedeem<'_>,
        fingerprint: Option<&str>,
    ) -> Result<RedemptionPlan> {
        let pool_code = request.code();
        let named_by_code;
        let code = match &pool_code {
            // The code names its campaign.
            Some(pool_code) if request.campaign_code().trim().is_empty() => {
                named_by_code = self.campaign_of_code(project, pool_code).await?.ref_code;
                named_by_code.as_str()
            }
            _ => request.campaign_code(),
        };
        let mut codes = Vec::with_capacity(1 + request.with_campaigns().len());
        codes.push(code);
        codes.extend(
            request
                .with_campaigns()
                .iter()
                .map(String::as_str)
                // Longer than any refCode: unknown, no need to ask.
                .filter(|c| c.len() <= MAX_REF_CODE_LEN),
        );
        let found = self.store.campaigns_by_code(project, &codes).await?;
        let campaign = found
            .iter()
            .find(|c| c.ref_code == code)
            .ok_or_else(|| campaign_not_found(format_args!("with refCode {code:?}")))?;
        let engine = self.engine_for(project, campaign)?;
        combine::check_combination(campaign, request.with_campaigns(), &found)?;
        let now = self.clock.now();
        let plan = engine.engine.plan_parsed(code, request, now)?;
        let r = request.request();
        Ok(RedemptionPlan {
            redemption: Redemption {
                id: Uuid::new_v4(),
                project_id: project.to_owned(),
                campaign_id: campaign.id,
                campaign_code: campaign.ref_code.clone(),
                campaign_version: campaign.version,
                status: TxStatus::Complete,
                user_id: r.attribute.get("userId").and_then(engine_scalar_text),
                channel: r.channel.clone(),
                idempotency_key: r.idempotency_key.clone(),
                request_fingerprint: fingerprint.map(str::to_owned),
                action_txs: plan.action_txs,
                quotas: plan.charges,
                code: pool_code,
                created_date: now,
                cancelled_date: None,
            },
        })
    }

    /// An engine holding the stored campaign: the project's snapshot as this
    /// service keeps it when it holds this very version (no store call),
    /// else one compiled now for this campaign only (redeem always
    /// evaluates the campaign as it is stored).
    fn engine_for(&self, project: &str, campaign: &Campaign) -> Result<Arc<Snapshot>> {
        if let Some(snapshot) = self.snapshots.peek(project) {
            if let Some(cc) = snapshot.engine.by_code(&campaign.ref_code) {
                if cc.campaign.id == campaign.id && cc.campaign.version == campaign.version {
                    return Ok(snapshot);
                }
            }
        }
        let compiled = CompiledCampaign::compile(campaign).map_err(|fields| {
            Error::internal(format!(
                "stored campaign {} does not compile: {fields:?}",
                campaign.id
            ))
        })?;
        Ok(Arc::new(Snapshot {
            version: -1,
            engine: Engine::new([Arc::new(compiled.in_zone(self.zones.of(project)))]),
        }))
    }

    /// Cancels a redemption: its transactions become `CANCELLED` and its
    /// quota charges are given back. Cancelling twice changes nothing.
    pub async fn cancel_redemption(&self, project: &str, id: Uuid) -> Result<Redemption> {
        let cancelled = self
            .store
            .cancel_redemption(project, id, self.clock.now())
            .await;
        match &cancelled {
            Ok(Some(r)) => self
                .usage
                .forget(project, r.quotas.iter().map(usage::cache_key)),
            Ok(None) => {}
            // The keys are unknown, and the error may come after the commit.
            Err(_) => self.usage.forget_project(project),
        }
        cancelled?.ok_or_else(|| {
            Error::new(
                ErrorCode::RedemptionNotFound,
                format!("no redemption {id} in this project"),
            )
        })
    }

    /// One redemption.
    pub async fn redemption(&self, project: &str, id: Uuid) -> Result<Redemption> {
        self.store.redemption(project, id).await?.ok_or_else(|| {
            Error::new(
                ErrorCode::RedemptionNotFound,
                format!("no redemption {id} in this project"),
            )
        })
    }

    /// A page of redemptions, newest first.
    pub async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        check_page_size(query.size)?;
        self.store.list_redemptions(project, query).await
    }
}

fn engine_scalar_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The stored redemption of an idempotency key, if it was recorded for the
/// same request (the same fingerprint; for a redemption recorded without
/// one, the same campaign); a key reused for another request is a client
/// bug: 422 `idempotency_key_reused`.
fn replay(
    stored: Redemption,
    request: &ParsedRedeem<'_>,
    fingerprint: Option<&str>,
) -> Result<RedeemResult> {
    let same = match &stored.request_fingerprint {
        Some(f) => Some(f.as_str()) == fingerprint,
        None => stored.campaign_code == request.campaign_code(),
    };
    if !same {
        return Err(Error::new(
            ErrorCode::IdempotencyKeyReused,
            "this idempotency key was used for another request; use a new key for another redemption",
        ).with_fields(vec![crate::FieldError::new(
            "idempotencyKey",
            ErrorCode::IdempotencyKeyReused,
            "this idempotency key was used for another request",
        )]));
    }
    // A redeem by code alone names its campaign through the code, which the
    // fingerprint covers.
    if !request.campaign_code().is_empty() && stored.campaign_code != request.campaign_code() {
        return Err(Error::new(
            ErrorCode::IdempotencyKeyReused,
            format!(
                "this idempotency key was used for campaign {:?}; use a new key for another redemption",
                stored.campaign_code
            ),
        ));
    }
    Ok(RedeemResult {
        redemption: stored,
        replayed: true,
    })
}

#[cfg(all(test, feature = "memory"))]
// Helpers of the tests unwrap like the tests do.
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;
    use crate::core::clock::{ManualClock, SystemClock};
    use crate::store::memory::MemoryStore;
    use crate::testkit::counting::Counting;

    #[test]
    fn usage_plus_charge_beyond_decimal_is_exhausted_not_a_panic() {
        // Usage at Decimal::MAX plus any charge overflows: search and the
        // memory store must see the quota as used up. (Found by fuzzing.)
        let now = Utc.with_ymd_and_hms(2026, 6, 15, 0, 0, 0).unwrap();
        let service = CampaignService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(ManualClock::new(now)),
        );
        let max = "79228162514264337593543950335";
        let input: CampaignInput = serde_json::from_value(json!({
            "name": "big", "refCode": "BIG",
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "quotas": [{"key": "k", "value": max, "valueField": "n"}],
            "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                       "then": [{"action": "DISCOUNT", "data": []}]}]
        }))
        .unwrap();
        pollster::block_on(service.create_campaign("p", input, "t")).unwrap();
        let redeem = |n: &str| {
            let req: RedeemRequest =
                serde_json::from_value(json!({"campaignCode": "BIG", "attribute": {"n": n}}))
                    .unwrap();
            pollster::block_on(service.redeem("p", &req))
        };
        redeem(max).unwrap();
        assert_eq!(redeem("1").unwrap_err().code(), "quota_exceeded");
        let search: SearchRequest =
            serde_json::from_value(json!({"attribute": {"n": "1"}})).unwrap();
        let found =
            pollster::block_on(service.search("p", &search, &SearchOptions::default())).unwrap();
        assert!(found.actions.is_empty(), "a used-up quota was offered");
    }

    /// One campaign, offered to any request, once per user.
    fn once_per_user(service: &CampaignService<Counting>) {
        let input: CampaignInput = serde_json::from_value(json!({
            "name": "once", "refCode": "ONCE",
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}-${userId}", "value": 1}],
            "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                       "then": [{"action": "DISCOUNT", "data": []}]}]
        }))
        .unwrap();
        pollster::block_on(service.create_campaign("p", input, "t")).unwrap();
    }

    fn offered(service: &CampaignService<Counting>, user: &str) -> bool {
        let req: SearchRequest =
            serde_json::from_value(json!({"attribute": {"userId": user}})).unwrap();
        let found =
            pollster::block_on(service.search("p", &req, &SearchOptions::default())).unwrap();
        !found.actions.is_empty()
    }

    fn redeem_once(service: &CampaignService<Counting>, user: &str) -> Redemption {
        let req: RedeemRequest =
            serde_json::from_value(json!({"campaignCode": "ONCE", "attribute": {"userId": user}}))
                .unwrap();
        pollster::block_on(service.redeem("p", &req))
            .unwrap()
            .redemption
    }

    fn usage_reads(store: &Counting) -> usize {
        Counting::count(&store.quota_usage)
    }

    #[test]
    fn search_reuses_quota_usage_and_sees_its_own_redeem_and_cancel_at_once() {
        let store = Arc::new(Counting::default());
        let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
            .with_refresh_interval(Duration::from_secs(3600));
        once_per_user(&service);
        assert!(offered(&service, "u1"));
        assert!(offered(&service, "u1"));
        assert_eq!(
            usage_reads(&store),
            1,
            "the second search read the store again"
        );
        let r = redeem_once(&service, "u1");
        assert!(
            !offered(&service, "u1"),
            "a search after the redeem offered its quota again"
        );
        assert_eq!(usage_reads(&store), 2);
        // Other users' keys were not touched.
        assert!(offered(&service, "u2"));
        pollster::block_on(service.cancel_redemption("p", r.id)).unwrap();
        assert!(
            offered(&service, "u1"),
            "a search after the cancel did not see it"
        );
        assert_eq!(usage_reads(&store), 4);
    }

    #[test]
    fn another_services_redeem_is_seen_within_the_refresh_interval() {
        let store = Arc::new(Counting::default());
        let refresh = Duration::from_millis(300);
        let a = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
            .with_refresh_interval(refresh);
        let b = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
            .with_refresh_interval(refresh);
        once_per_user(&a);
        let read = Instant::now();
        assert!(offered(&b, "u1"));
        redeem_once(&a, "u1");
        let still = offered(&b, "u1");
        if read.elapsed() < refresh {
            assert!(still, "b read the store again within its refresh interval");
        }
        let start = Instant::now();
        while offered(&b, "u1") {
            assert!(
                start.elapsed() < refresh + Duration::from_secs(2),
                "b never saw a's redeem"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Redeem itself never trusted b's view.
        let req: RedeemRequest =
            serde_json::from_value(json!({"campaignCode": "ONCE", "attribute": {"userId": "u1"}}))
                .unwrap();
        let err = pollster::block_on(b.redeem("p", &req)).unwrap_err();
        assert_eq!(err.code(), "quota_exceeded");
    }

    #[test]
    fn a_refresh_interval_of_zero_reads_usage_on_every_search() {
        let store = Arc::new(Counting::default());
        let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
            .with_refresh_interval(Duration::ZERO);
        once_per_user(&service);
        for _ in 0..3 {
            assert!(offered(&service, "u1"));
        }
        assert_eq!(usage_reads(&store), 3);
    }
}
