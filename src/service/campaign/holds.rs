//! Quota holds: reserve a redeem's quota at checkout, confirm it on
//! payment, release it on abandon (docs/quotas.md, "Holds").
//!
//! Placing a hold evaluates the campaign exactly as redeem does (the
//! same checks, the same benefits and quota charges) and charges the
//! quotas until the hold expires; the store call is atomic, so holds and
//! redeems racing for the last units never oversell. Confirming records
//! the planned redemption without evaluating or charging again.

use chrono::Duration;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{usage, CampaignService, RedeemResult};
use crate::core::campaign::{Hold, HoldStatus, RedeemRequest, MAX_HOLD_TTL_SECONDS};
use crate::core::engine::ParsedRedeem;
use crate::core::error::ErrorCode;
use crate::store::{CampaignStore, Confirmation, HoldOutcome, HoldStore, RedemptionStore};
use crate::{Error, Result};

/// How long a hold lasts when the request names no `ttl`: 15 minutes.
pub const DEFAULT_HOLD_TTL_SECONDS: i64 = 900;

/// Live holds listed per campaign in the quota view at most.
pub const MAX_LIVE_HOLDS_LISTED: u32 = 100;

/// A hold request: the redeem body, and how long to hold.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HoldRequest {
    /// The redeem the hold reserves for (`idempotencyKey` aside: a hold is
    /// confirmed by its id).
    #[serde(flatten)]
    pub redeem: RedeemRequest,
    /// Seconds the hold lasts: a whole number from 1 to 86400; absent: 900.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "http", schema(value_type = Option<i64>, example = 600))]
    pub ttl: Option<Value>,
}

fn hold_not_found(id: Uuid) -> Error {
    Error::new(
        ErrorCode::HoldNotFound,
        format!("no hold {id} in this project"),
    )
}

/// The hold's lifetime in seconds, or why not.
fn ttl_seconds(ttl: Option<&Value>) -> Result<i64> {
    let Some(ttl) = ttl else {
        return Ok(DEFAULT_HOLD_TTL_SECONDS);
    };
    ttl.as_i64()
        .filter(|s| (1..=MAX_HOLD_TTL_SECONDS).contains(s))
        .ok_or_else(|| {
            Error::invalid_field(
                "ttl",
                ErrorCode::InvalidHoldTtl,
                format!(
                    "ttl is a whole number of seconds from 1 to {MAX_HOLD_TTL_SECONDS}, not {ttl}"
                ),
            )
        })
}

impl<S: CampaignStore + RedemptionStore + HoldStore> CampaignService<S> {
    /// Places a hold: evaluates the redeem as [`redeem`](Self::redeem)
    /// would and charges its quotas until the hold expires, in one atomic
    /// store call (409 `quota_exceeded` when a quota has no room, nothing
    /// written). A campaign with a code pool is held with one of its codes
    /// (refused as redeem refuses it), and the hold reserves one use of
    /// the code, which its confirmation keeps.
    pub async fn place_hold(&self, project: &str, request: &HoldRequest) -> Result<Hold> {
        crate::core::limits::check_project_id(project)?;
        let redeem = &request.redeem;
        if redeem.idempotency_key.is_some() {
            return Err(Error::invalid_field(
                "idempotencyKey",
                ErrorCode::InvalidIdempotencyKey,
                "a hold takes no idempotency key: it is confirmed by its id, as often as needed",
            ));
        }
        let parsed = ParsedRedeem::parse(redeem)?;
        let ttl = ttl_seconds(request.ttl.as_ref())?;
        // The same plan redeem makes: the same checks, benefits and charges.
        let planned = self.plan_redeem(project, &parsed, None).await?.redemption;
        let hold = Hold {
            id: Uuid::new_v4(),
            project_id: planned.project_id,
            status: HoldStatus::Held,
            redemption_id: planned.id,
            campaign_id: planned.campaign_id,
            campaign_code: planned.campaign_code,
            campaign_version: planned.campaign_version,
            user_id: planned.user_id,
            channel: planned.channel,
            action_txs: planned.action_txs,
            quotas: planned.quotas,
            code: planned.code,
            created_date: planned.created_date,
            expires_at: planned.created_date + Duration::seconds(ttl),
            ended_date: None,
        };
        let outcome = self.store.place_hold(&hold).await;
        self.usage
            .forget(project, hold.quotas.iter().map(usage::cache_key));
        match outcome? {
            HoldOutcome::Placed(h) => Ok(*h),
            HoldOutcome::QuotaExceeded { key, used, limit } => Err(Error::new(
                ErrorCode::QuotaExceeded,
                format!("quota {key:?} is exhausted: {used} of {limit} used"),
            )),
            HoldOutcome::CodeRefused(why) => Err(super::codes::refused(&why)),
        }
    }

    /// Confirms a hold: records its redemption (dated now) with the
    /// charges the hold made, charging nothing again. Confirming a
    /// confirmed hold returns the same redemption (`replayed`); an expired
    /// hold is 409 `hold_expired`, a released one 409 `hold_released`.
    pub async fn confirm_hold(&self, project: &str, id: Uuid) -> Result<RedeemResult> {
        let now = self.clock.now();
        match self.store.confirm_hold(project, id, now).await? {
            None => Err(hold_not_found(id)),
            Some(Confirmation::Confirmed(redemption, replayed)) => Ok(RedeemResult {
                redemption,
                replayed,
            }),
            Some(Confirmation::Expired(h)) => Err(Error::new(
                ErrorCode::HoldExpired,
                format!(
                    "hold {id} expired at {}: its quota is no longer reserved",
                    h.expires_at.to_rfc3339()
                ),
            )),
            Some(Confirmation::Released(_)) => Err(Error::new(
                ErrorCode::HoldReleased,
                format!("hold {id} was released"),
            )),
        }
    }

    /// Releases a hold: its quota is given back at once. Releasing a
    /// released, expired or confirmed hold changes nothing (a confirmed
    /// hold's redemption is cancelled with
    /// [`cancel_redemption`](Self::cancel_redemption)).
    pub async fn release_hold(&self, project: &str, id: Uuid) -> Result<Hold> {
        let now = self.clock.now();
        let released = self.store.release_hold(project, id, now).await;
        match &released {
            Ok(Some(h)) => self
                .usage
                .forget(project, h.quotas.iter().map(usage::cache_key)),
            Ok(None) => {}
            Err(_) => self.usage.forget_project(project),
        }
        Ok(released?.ok_or_else(|| hold_not_found(id))?.at(now))
    }

    /// One hold, as it stands now.
    pub async fn hold(&self, project: &str, id: Uuid) -> Result<Hold> {
        let now = self.clock.now();
        Ok(self
            .store
            .hold(project, id)
            .await?
            .ok_or_else(|| hold_not_found(id))?
            .at(now))
    }

    /// The live holds of a campaign, soonest expiry first (at most
    /// [`MAX_LIVE_HOLDS_LISTED`]).
    pub async fn live_holds(&self, project: &str, campaign_id: Uuid) -> Result<Vec<Hold>> {
        let now = self.clock.now();
        self.store
            .live_holds(project, campaign_id, now, MAX_LIVE_HOLDS_LISTED)
            .await
    }

    /// Cleans up expired holds' charges and rolling charges no window
    /// counts any more (see [`HoldStore::sweep_quota_marks`]); checks and
    /// reads are exact without it.
    pub async fn sweep_quota_marks(&self, project: &str) -> Result<u64> {
        let now = self.clock.now();
        let removed = self.store.sweep_quota_marks(project, now).await;
        self.usage.forget_project(project);
        removed
    }
}
