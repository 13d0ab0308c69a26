//! "Try it here" for administrators: what a request would get, why each
//! other campaign would not fire, and the quota keys a redeem would charge
//! with what each has left. A child of the service module: it reads the
//! service's snapshot and store like search does, and writes nothing.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use super::CampaignService;
use crate::core::campaign::{
    ActionMatch, Campaign, CampaignInput, CampaignRef, Explanation, RedeemRequest, SearchRequest,
};
use crate::core::engine::stacking;
use crate::core::engine::validate::{build, Stamp};
use crate::store::{CampaignStore, RedemptionStore};
use crate::Result;

/// What a request would get, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// The instant evaluated.
    pub at: DateTime<Utc>,
    /// The campaigns that fire, in priority order.
    pub hits: Vec<PreviewHit>,
    /// Why each other campaign does not (running ones; and, when one
    /// campaign was asked for, also why it is not running).
    pub misses: Vec<Explanation>,
}

/// A campaign that fires.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewHit {
    /// The campaign.
    pub campaign: CampaignRef,
    /// Its benefits, formulas evaluated.
    pub actions: Vec<ActionMatch>,
    /// The charges a redeem of it would make, with each key's usage.
    pub quotas: Vec<PreviewQuota>,
    /// Why a redeem of every benefit would be refused, when it would
    /// (an `OR` rule needs a choice; a quota key cannot be built).
    pub redeem_error: Option<String>,
    /// Whether a quota is used up for this request: search leaves the
    /// campaign out.
    pub exhausted: bool,
    /// Why search leaves the campaign out for another's stacking rules,
    /// among the campaigns previewed that are not `exhausted` (so only when
    /// every campaign is previewed, not one asked for alone).
    pub suppressed: Option<Explanation>,
}

/// One quota key a redeem would charge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewQuota {
    /// The rendered key.
    pub key: String,
    /// What the redeem would add.
    pub amount: Decimal,
    /// The limit.
    pub limit: Decimal,
    /// Used so far (every campaign sharing the key).
    pub used: Decimal,
    /// `limit − used`, never below zero.
    pub remaining: Decimal,
    /// Whether the charge fits.
    pub fits: bool,
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// Judges a campaign input with the validator of
    /// [`create_campaign`](Self::create_campaign), saving nothing.
    pub fn check_campaign(&self, project: &str, input: CampaignInput) -> Result<()> {
        let stamp = Stamp {
            project,
            actor: "",
            now: self.clock.now(),
        };
        build(input, None, &stamp).map(|_| ())
    }

    /// What `request` would get at `at` (default now): the firing campaigns
    /// with their benefits and quota charges (usage read fresh from the
    /// store), and why each other running campaign does not fire. With
    /// `only`, just that campaign (by refCode), and also why it is not
    /// running if it is not.
    pub async fn preview(
        &self,
        project: &str,
        request: &SearchRequest,
        at: Option<DateTime<Utc>>,
        only: Option<&str>,
    ) -> Result<Preview> {
        let now = at.unwrap_or_else(|| self.clock.now());
        let snapshot = self
            .snapshots
            .get(&*self.store, project, self.zones.of(project))
            .await?;
        let engine = &snapshot.engine;
        let outcome = engine.search(request, now, true)?;
        let wanted = |code: &str| only.is_none_or(|o| o == code);
        let mut hits = Vec::new();
        let mut charged = Vec::new();
        for hit in outcome
            .hits
            .iter()
            .filter(|h| wanted(&h.campaign.campaign.ref_code))
        {
            let code = &hit.campaign.campaign.ref_code;
            let redeem = RedeemRequest {
                campaign_code: code.clone(),
                action_refs: None,
                channel: request.channel.clone(),
                attribute: request.attribute.clone(),
                cart: request.cart.clone(),
                idempotency_key: None,
                with_campaigns: Vec::new(),
                code: None,
            };
            let (charges, redeem_error) = match engine.plan_redeem(code, &redeem, now) {
                Ok(plan) => (plan.charges, None),
                Err(e) => (hit.charges.to_vec(), Some(e.message().to_owned())),
            };
            charged.extend(charges.iter().map(|c| c.key.clone()));
            hits.push((hit, charges, redeem_error));
        }
        charged.sort();
        charged.dedup();
        let usage = if charged.is_empty() {
            std::collections::HashMap::new()
        } else {
            self.store.quota_usage(project, &charged).await?
        };
        let mut hits: Vec<PreviewHit> = hits
            .into_iter()
            .map(|(hit, charges, redeem_error)| {
                let quotas: Vec<PreviewQuota> = charges
                    .into_iter()
                    .map(|c| {
                        let used = usage.get(&c.key).copied().unwrap_or_default();
                        PreviewQuota {
                            fits: used.checked_add(c.amount).is_some_and(|t| t <= c.limit),
                            remaining: (c.limit - used).max(Decimal::ZERO),
                            key: c.key,
                            amount: c.amount,
                            limit: c.limit,
                            used,
                        }
                    })
                    .collect();
                PreviewHit {
                    campaign: (*hit.campaign.wire).clone(),
                    actions: hit.action_matches().collect(),
                    exhausted: quotas.iter().any(|q| !q.fits),
                    quotas,
                    redeem_error,
                    suppressed: None,
                }
            })
            .collect();
        suppress(&mut hits, engine);
        let mut misses: Vec<Explanation> = outcome
            .explanations
            .into_iter()
            .filter(|x| wanted(&x.ref_code))
            .collect();
        if let Some(code) = only {
            let seen = misses.iter().any(|m| m.ref_code == code)
                || outcome
                    .hits
                    .iter()
                    .any(|h| h.campaign.campaign.ref_code == code);
            if let (false, Some(cc)) = (seen, engine.by_code(code)) {
                misses.push(not_running(&cc.campaign, now));
            }
        }
        Ok(Preview {
            at: now,
            hits,
            misses,
        })
    }
}

/// Why a campaign is not running at `now`.
fn not_running(c: &crate::core::campaign::Campaign, now: DateTime<Utc>) -> Explanation {
    let message = if *c.status_at(now) == crate::core::campaign::CampaignStatus::Enable {
        format!(
            "the campaign runs from {} to {}, not at {}",
            c.start_date.to_rfc3339(),
            c.end_date.to_rfc3339(),
            now.to_rfc3339()
        )
    } else if c.status_schedule.is_empty() {
        format!("the campaign is {}: it never runs", c.status)
    } else {
        format!(
            "the campaign's status at {} is {} (statusSchedule)",
            now.to_rfc3339(),
            c.status_at(now)
        )
    };
    Explanation {
        campaign_id: c.id,
        ref_code: c.ref_code.clone(),
        reason: "not_running".to_owned(),
        rule_id: None,
        field: None,
        attribute: None,
        op: None,
        expected: None,
        actual: None,
        quota_key: None,
        suppressed_by: None,
        message,
    }
}

/// Marks the hits that search would leave out for another campaign's
/// stacking rules, resolved as search does: among the hits whose quotas fit.
fn suppress(hits: &mut [PreviewHit], engine: &crate::core::engine::Engine) {
    let live: Vec<usize> = (0..hits.len()).filter(|&i| !hits[i].exhausted).collect();
    let Some(campaigns) = live
        .iter()
        .map(|&i| {
            engine
                .by_code(&hits[i].campaign.ref_code)
                .map(|cc| &cc.campaign)
        })
        .collect::<Option<Vec<&Campaign>>>()
    else {
        return;
    };
    for (k, verdict) in stacking::resolve(&campaigns).into_iter().enumerate() {
        if let Some((why, by)) = verdict {
            hits[live[k]].suppressed =
                Some(stacking::explanation(campaigns[k], campaigns[by], why));
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use crate::core::campaign::Campaign;

    #[test]
    fn not_running_names_the_scheduled_status() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let c: Campaign = serde_json::from_value(json!({
            "id": "00000000-0000-4000-8000-000000000001", "name": "n", "description": null,
            "imageUrl": null, "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "refCode": "S", "status": "ENABLE", "priority": 1, "channel": null,
            "statusSchedule": [{"at": "2026-06-01T00:00:00Z", "status": "DISABLE"}],
            "quotas": [], "rules": [], "projectId": "p", "version": 1,
            "createdBy": "a", "lastModifiedBy": "a",
            "createdDate": "2026-01-01T00:00:00Z", "lastModifiedDate": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        // (instant, message)
        let cases = [
            (
                "2026-06-01T00:00:00Z",
                "the campaign's status at 2026-06-01T00:00:00+00:00 is DISABLE (statusSchedule)",
            ),
            (
                "2027-02-01T00:00:00Z",
                "the campaign's status at 2027-02-01T00:00:00+00:00 is DISABLE (statusSchedule)",
            ),
        ];
        for (at, want) in cases {
            assert_eq!(super::not_running(&c, t(at)).message, want, "{at}");
        }
        let mut ended = c.clone();
        ended.status_schedule.clear();
        assert!(super::not_running(&ended, t("2027-02-01T00:00:00Z"))
            .message
            .starts_with("the campaign runs from"));
    }
}
