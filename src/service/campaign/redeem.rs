//! Redeem, cancel and the redemptions: a request parsed once, planned from
//! the compiled snapshot and checked by the store in its transaction, or
//! planned from the stored campaign (two store calls).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::snapshots::Snapshot;
use super::{campaign_not_found, combine, usage, CampaignService};
use crate::core::campaign::{Campaign, RedeemRequest, Redemption, TxStatus};
use crate::core::engine::{CompiledCampaign, Engine, ParsedRedeem, PlannedRedemption};
use crate::core::error::{ErrorCode, ErrorKind};
use crate::core::limits::MAX_REF_CODE_LEN;
use crate::store::{
    check_page_size, CampaignStore, CodeRefusal, Page, RedeemOutcome, RedemptionPlan,
    RedemptionQuery, RedemptionStore,
};
use crate::{Error, Result};

/// The result of a redeem.
#[derive(Debug, Clone, PartialEq)]
pub struct RedeemResult {
    /// The recorded redemption (the stored one, on replay).
    pub redemption: Redemption,
    /// Whether this was a replay of an idempotency key: nothing was charged.
    pub replayed: bool,
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
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
    /// A redeem of one campaign by its refCode, without a code or
    /// `withCampaigns`, whose campaign is in the project's snapshot, is
    /// planned from the snapshot and recorded in one store call: the
    /// transaction checks that the campaign is still stored in that version
    /// (and has no code pool) before it writes anything. When it is not,
    /// and for every other redeem, two store calls: the campaign and those
    /// of `withCampaigns` in one read, then the redemption in one
    /// transaction. Either transaction also finds a replay of the
    /// idempotency key. Only when the redeem fails before its transaction
    /// (the campaign has ended or changed since, say) is the key looked up
    /// (unless the store is unavailable): a replay returns what was
    /// recorded whatever happened since.
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
        let fingerprint = fingerprint.as_deref();
        if let Some(plan) = self
            .plan_from_snapshot(project, request, fingerprint)
            .await?
        {
            match self.record(project, &plan).await? {
                // Edited or deleted since the snapshot: plan from the store.
                RedeemOutcome::CampaignChanged => {}
                outcome => return answer(outcome, *request, fingerprint),
            }
        }
        let planned = self.plan_redeem(project, request, fingerprint).await;
        let plan = match (planned, request.idempotency_key()) {
            (Ok(plan), _) => plan,
            // A store that cannot be reached now cannot answer the replay
            // either: answer at once rather than wait for it twice.
            (Err(e), Some(key)) if e.kind() != ErrorKind::Unavailable => {
                return match self.store.redemption_by_key(project, key).await {
                    Ok(Some(stored)) => replay(stored, *request, fingerprint),
                    _ => Err(e),
                }
            }
            (Err(e), _) => return Err(e),
        };
        answer(self.record(project, &plan).await?, *request, fingerprint)
    }

    /// Records `plan` (one store call).
    async fn record(&self, project: &str, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        let outcome = self.store.redeem(plan).await;
        // Whatever the outcome (an error may come after the commit), what
        // search kept of these keys may be out of date now.
        self.usage
            .forget(project, plan.redemption.quotas.iter().map(usage::cache_key));
        outcome
    }

    /// A plan made from the project's compiled snapshot, without reading
    /// the campaign, for a redeem that names one campaign by its refCode,
    /// with no code and no `withCampaigns`: the store checks in its
    /// transaction that the campaign is still stored in the version planned
    /// from and has no code pool ([`RedemptionPlan::verify_campaign`]).
    /// `None` when the snapshot cannot plan it — the campaign is not in it,
    /// or planning fails: the redeem then reads the campaign, so that what
    /// it answers, an error included, comes from the stored campaign. An
    /// error when the store cannot be reached: the read would wait as long
    /// again.
    async fn plan_from_snapshot(
        &self,
        project: &str,
        request: &ParsedRedeem<'_>,
        fingerprint: Option<&str>,
    ) -> Result<Option<RedemptionPlan>> {
        if request.code().is_some() || !request.with_campaigns().is_empty() {
            return Ok(None);
        }
        let zone = self.zones.of(project);
        let snapshot = match self.snapshots.get(&*self.store, project, zone).await {
            Ok(snapshot) => snapshot,
            Err(e) if e.kind() == ErrorKind::Unavailable => return Err(e),
            Err(_) => return Ok(None),
        };
        let code = request.campaign_code();
        let Some(compiled) = snapshot.engine.by_code(code) else {
            return Ok(None);
        };
        let now = self.clock.now();
        let Ok(plan) = snapshot.engine.plan_parsed(code, request, now) else {
            return Ok(None);
        };
        let mut plan = plan_of(
            project,
            &compiled.campaign,
            plan,
            now,
            *request,
            fingerprint,
        );
        plan.verify_campaign = true;
        Ok(Some(plan))
    }

    /// Reads the campaign (and those it is applied with) in one store call,
    /// checks the combination and plans the redemption: everything of a
    /// redeem before its transaction.
    pub(super) async fn plan_redeem(
        &self,
        project: &str,
        request: &ParsedRedeem<'_>,
        fingerprint: Option<&str>,
    ) -> Result<RedemptionPlan> {
        let (campaign, plan, now) = self.evaluate(project, request).await?;
        Ok(plan_of(
            project,
            &campaign,
            plan,
            now,
            *request,
            fingerprint,
        ))
    }

    /// Reads the campaign and those it is applied with (one store call),
    /// checks the combination and plans what a redemption of `request`
    /// records now: the campaign, the plan and the instant. What redeem and
    /// a hold share.
    pub(super) async fn evaluate(
        &self,
        project: &str,
        request: &ParsedRedeem<'_>,
    ) -> Result<(Campaign, PlannedRedemption, DateTime<Utc>)> {
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
        let named = self.store.campaigns_by_code(project, &codes).await?;
        let at = named
            .iter()
            .position(|c| c.campaign.ref_code == code)
            .ok_or_else(|| campaign_not_found(format_args!("with refCode {code:?}")))?;
        // A campaign with a code pool is redeemed (or held) with one of its
        // codes; the store checks a named code in its transaction.
        if named[at].code_pool && pool_code.is_none() {
            return Err(super::codes::refused(&CodeRefusal::Required));
        }
        let mut found: Vec<Campaign> = named.into_iter().map(|n| n.campaign).collect();
        let engine = self.engine_for(project, &found[at])?;
        combine::check_combination(&found[at], request.with_campaigns(), &found)?;
        let now = self.clock.now();
        let plan = engine.engine.plan_parsed(code, request, now)?;
        Ok((found.swap_remove(at), plan, now))
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

/// What a redemption of `campaign` by `request`, planned at `now`,
/// records (not checked against the stored campaign).
fn plan_of(
    project: &str,
    campaign: &Campaign,
    plan: PlannedRedemption,
    now: DateTime<Utc>,
    request: ParsedRedeem<'_>,
    fingerprint: Option<&str>,
) -> RedemptionPlan {
    let r = request.request();
    RedemptionPlan::new(Redemption {
        id: Uuid::now_v7(),
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
        code: request.code(),
        created_date: now,
        cancelled_date: None,
    })
}

/// The answer to a redeem whose store call gave `outcome`.
fn answer(
    outcome: RedeemOutcome,
    request: ParsedRedeem<'_>,
    fingerprint: Option<&str>,
) -> Result<RedeemResult> {
    match outcome {
        RedeemOutcome::Recorded(r) => Ok(RedeemResult {
            redemption: r,
            replayed: false,
        }),
        RedeemOutcome::Replayed(r) => replay(r, request, fingerprint),
        RedeemOutcome::QuotaExceeded { key, used, limit } => Err(Error::new(
            ErrorCode::QuotaExceeded,
            format!("quota {key:?} is exhausted: {used} of {limit} used"),
        )),
        RedeemOutcome::CodeRefused(why) => Err(super::codes::refused(&why)),
        // Only a plan that asks for the check gets this answer, and such a
        // plan is made again from the stored campaign instead.
        RedeemOutcome::CampaignChanged => Err(Error::internal(
            "the store checked the campaign of a plan that did not ask for it",
        )),
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
    request: ParsedRedeem<'_>,
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
