//! Scheduled status changes: a campaign's `status` as it stands at an
//! instant.
//!
//! A schedule is part of the campaign, not a job: the status in force at
//! `now` is computed from it on every search, redeem and response. A
//! campaign scheduled to stop at 12:00 therefore stops matching at 12:00
//! exactly, whether or not anything ran at that moment, on every process
//! that shares the store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::CampaignStatus;

/// Most status changes one campaign may schedule.
pub const MAX_STATUS_CHANGES: usize = 50;

/// One scheduled status change: from `at` on (inclusive), the campaign's
/// status is `status`, until the next change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StatusChange {
    /// When the change takes effect (inclusive).
    pub at: DateTime<Utc>,
    /// `ENABLE` or `DISABLE`.
    pub status: CampaignStatus,
}

/// The status in force at `now`: the status of the latest change at or
/// before `now`, else `base` (the campaign's `status`). `changes` need not
/// be sorted.
pub fn status_at<'a>(
    base: &'a CampaignStatus,
    changes: &'a [StatusChange],
    now: DateTime<Utc>,
) -> &'a CampaignStatus {
    changes
        .iter()
        .filter(|c| c.at <= now)
        .max_by_key(|c| c.at)
        .map_or(base, |c| &c.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn the_latest_change_at_or_before_now_wins() {
        let changes = [
            StatusChange {
                at: t("2026-03-01T12:00:00Z"),
                status: CampaignStatus::Disable,
            },
            StatusChange {
                at: t("2026-02-01T00:00:00Z"),
                status: CampaignStatus::Enable,
            },
        ];
        let base = CampaignStatus::Disable;
        // (instant, status in force)
        let cases = [
            ("2026-01-31T23:59:59.999999Z", CampaignStatus::Disable),
            ("2026-02-01T00:00:00Z", CampaignStatus::Enable),
            ("2026-03-01T11:59:59.999999Z", CampaignStatus::Enable),
            ("2026-03-01T12:00:00Z", CampaignStatus::Disable),
            ("2026-03-01T12:00:01Z", CampaignStatus::Disable),
        ];
        for (at, want) in cases {
            assert_eq!(status_at(&base, &changes, t(at)), &want, "{at}");
        }
        assert_eq!(
            status_at(&CampaignStatus::Enable, &[], t("2026-01-01T00:00:00Z")),
            &CampaignStatus::Enable
        );
    }
}
