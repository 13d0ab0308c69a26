//! Quota holds: quota reserved at checkout for a while, then confirmed into
//! a redemption or released (docs/quotas.md, "Holds").
//!
//! A hold is a redemption planned now and recorded later: it charges its
//! quotas when placed, exactly as a redeem would (so a hold and a redeem
//! racing for the last unit cannot both win), and its charges count until
//! it expires. Confirming it records the planned redemption without
//! charging again; releasing it, or letting it expire, gives the charges
//! back. Expiry needs no sweeper: every check and every read counts only
//! the holds live at its own instant.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::exchange::{ActionTx, QuotaCharge, Redemption, TxStatus};
use crate::string_enum;

/// The longest a hold may last: one day, in seconds.
pub const MAX_HOLD_TTL_SECONDS: i64 = 86_400;

string_enum! {
    /// Where a hold stands.
    pub enum HoldStatus {
        /// Reserving its quota until `expiresAt`.
        Held = "HELD",
        /// Turned into the redemption `redemptionId`.
        Confirmed = "CONFIRMED",
        /// Given back before it expired.
        Released = "RELEASED",
        /// Not confirmed in time: its quota is no longer reserved.
        Expired = "EXPIRED",
    }
}

/// A quota hold; also the response of placing, reading and releasing one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// Hold id (to confirm or release it).
    pub id: Uuid,
    /// Project.
    pub project_id: String,
    /// `HELD`, `CONFIRMED`, `RELEASED` or `EXPIRED` (a `HELD` hold past
    /// `expiresAt` reads as `EXPIRED`).
    pub status: HoldStatus,
    /// The id the redemption gets when the hold is confirmed.
    pub redemption_id: Uuid,
    /// Campaign id.
    pub campaign_id: Uuid,
    /// Campaign reference code.
    pub campaign_code: String,
    /// The campaign version the request was evaluated against.
    pub campaign_version: i64,
    /// The request's `attribute.userId`, when a string or number.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Channel of the request.
    #[serde(default)]
    pub channel: Option<String>,
    /// The benefits the redemption will record.
    pub action_txs: Vec<ActionTx>,
    /// What the hold charged to which quota, counted while it is `HELD`
    /// and kept by the redemption it is confirmed into.
    pub quotas: Vec<QuotaCharge>,
    /// The code of the campaign's code pool the hold reserves one use of
    /// (normalized), kept by the redemption it is confirmed into; `None`
    /// for a campaign without a pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// When placed.
    pub created_date: DateTime<Utc>,
    /// Until when it reserves its quota (exclusive).
    pub expires_at: DateTime<Utc>,
    /// When confirmed or released.
    #[serde(default)]
    pub ended_date: Option<DateTime<Utc>>,
}

impl Hold {
    /// The hold as read at `now`: `EXPIRED` once a `HELD` hold reaches its
    /// expiry.
    #[must_use]
    pub fn at(mut self, now: DateTime<Utc>) -> Hold {
        if self.status == HoldStatus::Held && self.expires_at <= now {
            self.status = HoldStatus::Expired;
        }
        self
    }

    /// Whether the hold reserves its quota at `now`.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.status == HoldStatus::Held && now < self.expires_at
    }

    /// The redemption confirming the hold at `at` records: the planned
    /// one, dated `at`, with the hold's charges.
    pub fn redemption(&self, at: DateTime<Utc>) -> Redemption {
        Redemption {
            id: self.redemption_id,
            project_id: self.project_id.clone(),
            campaign_id: self.campaign_id,
            campaign_code: self.campaign_code.clone(),
            campaign_version: self.campaign_version,
            status: TxStatus::Complete,
            user_id: self.user_id.clone(),
            channel: self.channel.clone(),
            idempotency_key: None,
            request_fingerprint: None,
            action_txs: self.action_txs.clone(),
            quotas: self.quotas.clone(),
            code: self.code.clone(),
            created_date: at,
            cancelled_date: None,
        }
    }
}
