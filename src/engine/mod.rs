//! The rule engine: campaigns compiled into an immutable snapshot, searched
//! and planned for redeem. Pure: no I/O, time passed in.
//!
//! **Architecture invariant:** the engine never re-checks a campaign it
//! compiled. [`CompiledCampaign::compile`] is the validation of a
//! campaign's rules and quotas; once it succeeds, evaluation cannot fail on
//! the campaign, only on the request (a formula naming a missing attribute).

mod benefit;
mod compile;
mod eval;
mod redeem;
mod request;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use benefit::RESERVED_NAMES;
pub use compile::CompiledCampaign;
pub use redeem::{plan_redeem, PlannedRedemption};
pub use request::{check_limits, Prepared};

use crate::campaign::{
    ActionMatch, CampaignRef, Explanation, QuotaCharge, RuleRef, SearchRequest, ThenOperator,
};
use crate::Result;
use eval::{explain, explanation, rule_valid_at, Evaluator};

/// An immutable snapshot of a project's campaigns, compiled.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    /// Sorted by (priority, refCode): the order of search results.
    campaigns: Vec<Arc<CompiledCampaign>>,
    by_code: HashMap<String, usize>,
}

/// A campaign that fired in a search.
#[derive(Debug, Clone)]
pub struct CampaignHit<'e> {
    /// The campaign.
    pub campaign: &'e CompiledCampaign,
    /// Its matched benefits, in rule then benefit order.
    pub actions: Vec<ActionMatch>,
    /// The charges a redemption of every matched benefit would make, for
    /// the read-only quota check of search; charges whose key cannot be
    /// built from this request are left out.
    pub charges: Vec<QuotaCharge>,
}

/// The pure part of a search.
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome<'e> {
    /// Campaigns that fired, in priority order.
    pub hits: Vec<CampaignHit<'e>>,
    /// With `explain`: why each running campaign that did not fire failed.
    pub explanations: Vec<Explanation>,
}

impl Engine {
    /// A snapshot of compiled campaigns.
    pub fn new(campaigns: impl IntoIterator<Item = Arc<CompiledCampaign>>) -> Engine {
        let mut campaigns: Vec<Arc<CompiledCampaign>> = campaigns.into_iter().collect();
        campaigns.sort_by(|a, b| {
            (a.campaign.priority, &a.campaign.ref_code)
                .cmp(&(b.campaign.priority, &b.campaign.ref_code))
        });
        let by_code = campaigns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.campaign.ref_code.clone(), i))
            .collect();
        Engine { campaigns, by_code }
    }

    /// Number of campaigns in the snapshot.
    pub fn len(&self) -> usize {
        self.campaigns.len()
    }

    /// Whether the snapshot holds no campaign.
    pub fn is_empty(&self) -> bool {
        self.campaigns.is_empty()
    }

    /// The compiled campaigns, in priority order.
    pub fn campaigns(&self) -> &[Arc<CompiledCampaign>] {
        &self.campaigns
    }

    /// A campaign by reference code.
    pub fn by_code(&self, ref_code: &str) -> Option<&Arc<CompiledCampaign>> {
        self.by_code.get(ref_code).map(|&i| &self.campaigns[i])
    }

    /// Which benefits of which running campaigns apply to `request` at `now`.
    pub fn search(
        &self,
        request: &SearchRequest,
        now: DateTime<Utc>,
        explain_misses: bool,
    ) -> Result<SearchOutcome<'_>> {
        let prepared = Prepared::new(request)?;
        let mut ev = Evaluator::default();
        let mut out = SearchOutcome::default();
        for cc in &self.campaigns {
            if !cc.campaign.is_running(now) {
                continue;
            }
            if let Some(channel) = &cc.campaign.channel {
                if request.channel.as_ref() != Some(channel) {
                    if explain_misses {
                        out.explanations.push(explanation(
                            cc,
                            "channel_mismatch",
                            format!("the campaign runs on channel {channel:?} only"),
                        ));
                    }
                    continue;
                }
            }
            match evaluate_campaign(cc, &prepared, now, &mut ev) {
                Ok(hit) => out.hits.push(hit),
                Err(miss) => {
                    if explain_misses {
                        out.explanations
                            .push(miss.map_or_else(|| explain(cc, &prepared, now), |b| *b));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Evaluates one running campaign. `Err(None)`: no rule fired (explain
/// separately, on demand); `Err(Some(e))`: rules fired but every action
/// was dropped, with why.
fn evaluate_campaign<'e>(
    cc: &'e CompiledCampaign,
    req: &Prepared<'_>,
    now: DateTime<Utc>,
    ev: &mut Evaluator,
) -> std::result::Result<CampaignHit<'e>, Option<Box<Explanation>>> {
    let mut actions = Vec::new();
    let mut dropped = None;
    for (r, rule) in cc.rules.iter().enumerate() {
        let source = &cc.campaign.rules[r];
        if !rule_valid_at(source, now) {
            continue;
        }
        let Some(held) = ev.rule(rule, req) else {
            continue;
        };
        let item = held.0.map(|i| &req.items[i]);
        for (b, benefit) in rule.benefits.iter().enumerate() {
            match benefit::evaluate(
                benefit,
                &format!("rules[{r}].then[{b}]"),
                item,
                cc,
                req,
                now,
            ) {
                Ok(then) => actions.push(ActionMatch {
                    rule: RuleRef {
                        id: source.id.clone(),
                        name: source.name.clone(),
                        then_operator: source.then_operator.clone(),
                    },
                    campaign: campaign_ref(cc),
                    action: then,
                }),
                // A benefit that cannot be evaluated for this request is
                // dropped from search; redeem of it fails with the same error.
                Err(e) => {
                    dropped.get_or_insert_with(|| {
                        Box::new(Explanation {
                            rule_id: Some(source.id.clone()),
                            field: e.fields().first().map(|f| f.field.clone()),
                            ..explanation(cc, "formula_failed", e.message().to_owned())
                        })
                    });
                }
            }
        }
    }
    if actions.is_empty() {
        return Err(dropped);
    }
    // Quota keys for the read-only check, as a redemption of everything
    // matched would build them; a key this request cannot build is skipped.
    let benefits: Vec<_> = actions.iter().map(|a| a.action.clone()).collect();
    let charges = benefit::merge(
        (0..cc.quotas.len())
            .filter_map(|q| benefit::charge(cc, q, &benefits, req, now).ok())
            .collect(),
    );
    Ok(CampaignHit {
        campaign: cc,
        actions,
        charges,
    })
}

fn campaign_ref(cc: &CompiledCampaign) -> CampaignRef {
    let c = &cc.campaign;
    CampaignRef {
        id: c.id,
        name: c.name.clone(),
        start_date: c.start_date,
        end_date: c.end_date,
        ref_code: c.ref_code.clone(),
        image_url: c.image_url.clone(),
    }
}

/// Whether a rule is an `OR` rule (the client chooses among its benefits).
fn is_or(op: &ThenOperator) -> bool {
    *op == ThenOperator::Or
}

#[cfg(test)]
mod tests;
