//! The rule engine: campaigns compiled into an immutable snapshot, searched
//! and planned for redeem. Pure: no I/O, time passed in.
//!
//! A search has two steps. [`Engine::matches`] decides which campaigns
//! fire: the index (counting pass and dense filters, see `index`) names
//! the candidate rules, and only those that the index cannot vouch for are
//! evaluated. [`Matches::outcome`] then evaluates the fired rules' benefits
//! and builds the quota keys a redemption would charge. [`Engine::search`]
//! is both; the benchmarks time them apart, because matching is the work
//! other rule engines do, and benefit evaluation grows with the number of
//! matches, not of campaigns.
//!
//! **Architecture invariant:** the engine never re-checks a campaign it
//! compiled. [`CompiledCampaign::compile`] is the validation of a
//! campaign's rules and quotas; once it succeeds, evaluation cannot fail on
//! the campaign, only on the request (a formula naming a missing attribute).

mod benefit;
mod compile;
mod eval;
mod index;
pub mod money;
mod parsed;
mod plan;
mod redeem;
mod request;
pub mod stacking;
pub(crate) mod validate;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use smallvec::SmallVec;

pub use benefit::{calendar, RESERVED_NAMES};
pub use compile::CompiledCampaign;
pub use parsed::ParsedRedeem;
pub use redeem::PlannedRedemption;
pub use request::{check_limits, Prepared};

use crate::core::campaign::{
    ActionMatch, Explanation, QuotaCharge, RedeemRequest, Rule, RuleRef, SearchRequest, Then,
    ThenOperator,
};
use crate::ErrorCode;
use crate::Result;
use eval::{explain, explanation, Evaluator};
use index::Index;
use plan::{CampaignMeta, RulePlan, Symbols};

/// An immutable snapshot of a project's campaigns, compiled and indexed.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    /// Sorted by (priority, refCode): the order of search results.
    campaigns: Vec<Arc<CompiledCampaign>>,
    /// Per campaign: what matching reads of it.
    meta: Vec<CampaignMeta>,
    /// Every rule of every campaign, in campaign then rule order.
    rules: Vec<RulePlan>,
    /// Per rule, what matching reads of every candidate, packed small.
    hot: Vec<RuleHot>,
    /// The rules of campaign `c` are `rules[first_rule[c]..first_rule[c + 1]]`.
    first_rule: Vec<usize>,
    symbols: Symbols,
    index: Index,
    by_code: HashMap<String, usize>,
}

/// A campaign that fired in a search.
///
/// It borrows the snapshot: a search that matches a thousand campaigns
/// copies none of their rules or static benefits; [`ActionHit::to_match`]
/// builds the owned wire form for the hits a response keeps. Up to two
/// benefits and one charge are held inline ([`HitActions`],
/// [`HitCharges`]): such a hit allocates nothing of its own.
#[derive(Debug, Clone)]
pub struct CampaignHit<'e> {
    /// The campaign.
    pub campaign: &'e CompiledCampaign,
    /// Its matched benefits, in rule then benefit order.
    pub actions: HitActions<'e>,
    /// The charges a redemption of every matched benefit would make, for
    /// the read-only quota check of search; charges whose key cannot be
    /// built from this request are left out.
    pub charges: HitCharges,
}

/// The matched benefits of a [`CampaignHit`]: two inline.
pub type HitActions<'e> = SmallVec<[ActionHit<'e>; 2]>;

/// The quota charges of a [`CampaignHit`]: one inline.
pub type HitCharges = SmallVec<[QuotaCharge; 1]>;

/// One matched benefit of a search, borrowing the snapshot.
#[derive(Debug, Clone)]
pub struct ActionHit<'e> {
    /// The rule that fired.
    pub rule: &'e Rule,
    /// The benefit: the snapshot's own when static, else with formulas
    /// evaluated and placeholders substituted for this request.
    pub action: Arc<Then>,
    /// The rule's wire form, prepared when the campaign was compiled.
    wire: &'e Arc<RuleRef>,
}

/// The benefit, so that quota charges read matched benefits in place.
impl std::borrow::Borrow<Then> for ActionHit<'_> {
    fn borrow(&self) -> &Then {
        &self.action
    }
}

impl ActionHit<'_> {
    /// The wire form, as the search response shows it: its parts shared
    /// with the snapshot, nothing copied.
    pub fn to_match(&self, campaign: &CompiledCampaign) -> ActionMatch {
        ActionMatch {
            rule: Arc::clone(self.wire),
            campaign: Arc::clone(&campaign.wire),
            action: Arc::clone(&self.action),
        }
    }
}

impl CampaignHit<'_> {
    /// The matched benefits in wire form.
    pub fn action_matches(&self) -> impl Iterator<Item = ActionMatch> + '_ {
        self.actions.iter().map(|a| a.to_match(self.campaign))
    }
}

/// The pure part of a search.
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome<'e> {
    /// Campaigns that fired, in priority order.
    pub hits: Vec<CampaignHit<'e>>,
    /// With `explain`: why each running campaign that did not fire failed.
    pub explanations: Vec<Explanation>,
}

/// Which campaigns a request fires, and by which rules: the matching half
/// of a search, before any benefit or quota key is evaluated.
///
/// Matching is what rule engines compare on: it decides *which* campaigns
/// apply. [`outcome`](Self::outcome) then evaluates the fired rules'
/// benefits (formulas, `${name}` text) and the quota keys a redemption would
/// charge, for the response.
#[derive(Debug)]
pub struct Matches<'e, 'r> {
    engine: &'e Engine,
    req: Prepared<'r>,
    now: DateTime<Utc>,
    /// Fired campaigns, in priority order.
    campaigns: Vec<FiredCampaign>,
    /// Their fired rules: those of `campaigns[i]` end at `campaigns[i].end`.
    rules: Vec<FiredRule>,
}

/// What matching reads of every candidate rule: a candidate that is exact
/// and has no validity window fires on these eight bytes alone.
#[derive(Debug, Clone, Copy)]
struct RuleHot {
    campaign: u32,
    exact: bool,
    /// Whether the rule has a `validFrom` or `validTo`.
    windowed: bool,
}

#[derive(Debug, Clone, Copy)]
struct FiredCampaign {
    campaign: u32,
    end: u32,
}

#[derive(Debug, Clone, Copy)]
struct FiredRule {
    /// Index in [`Engine::rules`].
    plan: u32,
    held: eval::Held,
}

impl<'e> Matches<'e, '_> {
    /// Number of campaigns fired.
    pub fn len(&self) -> usize {
        self.campaigns.len()
    }

    /// Whether no campaign fired.
    pub fn is_empty(&self) -> bool {
        self.campaigns.is_empty()
    }

    /// The fired campaigns, in priority order.
    pub fn campaigns(&self) -> impl Iterator<Item = &'e CompiledCampaign> + '_ {
        let engine = self.engine;
        self.campaigns
            .iter()
            .map(move |f| &*engine.campaigns[f.campaign as usize])
    }

    /// Finishes the search: evaluates the benefits of the fired rules and
    /// the quota charges of each campaign. A campaign whose every benefit
    /// fails to evaluate for this request is left out. With
    /// `explain_misses`, explains every running campaign that did not fire.
    pub fn outcome(self, explain_misses: bool) -> SearchOutcome<'e> {
        let Matches {
            engine,
            req,
            now,
            campaigns,
            rules,
        } = self;
        let mut out = SearchOutcome {
            hits: Vec::with_capacity(campaigns.len()),
            explanations: Vec::new(),
        };
        let mut dropped: HashMap<usize, Box<Explanation>> = HashMap::new();
        let mut fired = vec![false; if explain_misses { engine.len() } else { 0 }];
        let mut start = 0;
        for f in &campaigns {
            let c = f.campaign as usize;
            let cc = &engine.campaigns[c];
            let fired_rules = &rules[start..f.end as usize];
            start = f.end as usize;
            let fired_rules = fired_rules
                .iter()
                .map(|r| (&engine.rules[r.plan as usize], r.held));
            match evaluate_campaign(cc, fired_rules, &req, now) {
                Ok(hit) => {
                    if explain_misses {
                        fired[c] = true;
                    }
                    out.hits.push(hit);
                }
                Err(Some(why)) => {
                    dropped.insert(c, why);
                }
                Err(None) => {}
            }
        }
        if explain_misses {
            for (c, cc) in engine.campaigns.iter().enumerate() {
                if fired[c] || !cc.campaign.is_running(now) {
                    continue;
                }
                let why = if let Some(channel) = cc
                    .campaign
                    .channel
                    .as_ref()
                    .filter(|_| !channel_ok(cc, &req))
                {
                    explanation(
                        cc,
                        "channel_mismatch",
                        format!("the campaign runs on channel {channel:?} only"),
                    )
                } else if let Some(why) = dropped.remove(&c) {
                    *why
                } else {
                    explain(cc, &engine.rules[engine.rules_of(c)], &req, now)
                };
                out.explanations.push(why);
            }
        }
        out
    }
}

impl Engine {
    /// Builds a snapshot: orders the campaigns, resolves attribute names to
    /// slots and indexes the rules.
    pub fn new(campaigns: impl IntoIterator<Item = Arc<CompiledCampaign>>) -> Engine {
        let mut campaigns: Vec<Arc<CompiledCampaign>> = campaigns.into_iter().collect();
        campaigns.sort_by(|a, b| {
            (a.campaign.priority, &a.campaign.ref_code)
                .cmp(&(b.campaign.priority, &b.campaign.ref_code))
        });
        let mut symbols = Symbols::default();
        let mut rules = plan::build(&campaigns, &mut symbols);
        let mut first_rule = Vec::with_capacity(campaigns.len() + 1);
        let mut next = 0;
        for cc in &campaigns {
            first_rule.push(next);
            next += cc.rules.len();
        }
        first_rule.push(next);
        let channels: Vec<Option<&str>> = campaigns
            .iter()
            .map(|c| c.campaign.channel.as_deref())
            .collect();
        let index = Index::build(&mut rules, &channels, symbols.len());
        let hot = rules
            .iter()
            .map(|r| RuleHot {
                campaign: r.campaign,
                exact: r.exact,
                windowed: r.valid_from.is_some() || r.valid_to.is_some(),
            })
            .collect();
        let by_code = campaigns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.campaign.ref_code.clone(), i))
            .collect();
        Engine {
            hot,
            meta: campaigns.iter().map(|c| CampaignMeta::of(c)).collect(),
            campaigns,
            rules,
            first_rule,
            symbols,
            index,
            by_code,
        }
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

    fn rules_of(&self, c: usize) -> Range<usize> {
        self.first_rule[c]..self.first_rule[c + 1]
    }

    /// Prepares a request for this snapshot.
    pub fn prepare<'r>(&self, request: &'r SearchRequest) -> Result<Prepared<'r>> {
        Prepared::new(request.into(), &self.symbols)
    }

    /// Which benefits of which running campaigns apply to `request` at
    /// `now`, touching only the rules the index says the request can satisfy:
    /// [`matches`](Self::matches), then [`Matches::outcome`].
    pub fn search(
        &self,
        request: &SearchRequest,
        now: DateTime<Utc>,
        explain_misses: bool,
    ) -> Result<SearchOutcome<'_>> {
        Ok(self.matches(request, now)?.outcome(explain_misses))
    }

    /// The matching half of a search: which running campaigns `request`
    /// fires at `now`, and by which rules, without evaluating a benefit or
    /// a quota key. [`Matches::outcome`] finishes the search.
    pub fn matches<'r>(
        &self,
        request: &'r SearchRequest,
        now: DateTime<Utc>,
    ) -> Result<Matches<'_, 'r>> {
        let req = self.prepare(request)?;
        let candidates = self.index.candidates(&req);
        Ok(self.match_rules(req, &candidates.rules, candidates.exact, now))
    }

    /// The same as [`search`](Self::search), evaluating every rule one by
    /// one: the reference the index is checked against.
    pub fn search_unindexed(
        &self,
        request: &SearchRequest,
        now: DateTime<Utc>,
        explain_misses: bool,
    ) -> Result<SearchOutcome<'_>> {
        let req = self.prepare(request)?;
        let all: Vec<u32> =
            (0..u32::try_from(self.rules.len()).expect("fewer than 2^32 rules")).collect();
        Ok(self
            .match_rules(req, &all, false, now)
            .outcome(explain_misses))
    }

    /// Evaluates the `candidates` rules (sorted) of running campaigns.
    /// `indexed`: the candidates come from the index and it vouches for
    /// exact rules, which then need no evaluation.
    fn match_rules<'r>(
        &self,
        req: Prepared<'r>,
        candidates: &[u32],
        indexed: bool,
        now: DateTime<Utc>,
    ) -> Matches<'_, 'r> {
        let mut ev = Evaluator::default();
        let mut campaigns: Vec<FiredCampaign> = Vec::with_capacity(candidates.len());
        let mut rules = Vec::with_capacity(candidates.len());
        // The campaign of the previous candidate, and whether it may fire.
        let mut current: Option<(u32, bool)> = None;
        for &r in candidates {
            let hot = self.hot[r as usize];
            let c = hot.campaign;
            let open = match current {
                Some((prev, open)) if prev == c => open,
                _ => {
                    // Only the compact metadata: the campaign itself is read
                    // only if it fires (or has a channel).
                    let meta = &self.meta[c as usize];
                    let open = meta.is_running(now)
                        && (!meta.has_channel || channel_ok(&self.campaigns[c as usize], &req));
                    current = Some((c, open));
                    open
                }
            };
            if !open {
                continue;
            }
            if hot.windowed && !self.rules[r as usize].valid_at(now) {
                continue;
            }
            let held = if indexed && hot.exact {
                // Exact rules have no item condition, so no matched item.
                eval::Held(None)
            } else {
                let Some(held) = ev.rule(&self.rules[r as usize], &req, indexed) else {
                    continue;
                };
                held
            };
            rules.push(FiredRule { plan: r, held });
            let end = u32::try_from(rules.len()).expect("fewer than 2^32 rules");
            match campaigns.last_mut() {
                Some(last) if last.campaign == c => last.end = end,
                _ => campaigns.push(FiredCampaign { campaign: c, end }),
            }
        }
        Matches {
            engine: self,
            req,
            now,
            campaigns,
            rules,
        }
    }

    /// Re-evaluates campaign `ref_code` against a redeem request at `now`
    /// and plans the redemption (see [`PlannedRedemption`]).
    pub fn plan_redeem(
        &self,
        ref_code: &str,
        request: &RedeemRequest,
        now: DateTime<Utc>,
    ) -> Result<PlannedRedemption> {
        self.plan_parsed(ref_code, &ParsedRedeem::parse(request)?, now)
    }

    /// [`plan_redeem`](Self::plan_redeem) of a request parsed already: it
    /// is evaluated in place, not checked again.
    pub fn plan_parsed(
        &self,
        ref_code: &str,
        request: &ParsedRedeem<'_>,
        now: DateTime<Utc>,
    ) -> Result<PlannedRedemption> {
        let c = *self.by_code.get(ref_code).ok_or_else(|| {
            crate::Error::new(
                ErrorCode::CampaignNotFound,
                format!("no campaign with refCode {ref_code:?}"),
            )
        })?;
        let req = Prepared::checked(request.view(), &self.symbols);
        redeem::plan(
            &self.campaigns[c],
            &self.rules[self.rules_of(c)],
            &req,
            request.request(),
            now,
        )
    }
}

/// Whether the request may see the campaign: a campaign with a channel runs
/// only for requests of that channel.
fn channel_ok(cc: &CompiledCampaign, req: &Prepared<'_>) -> bool {
    match &cc.campaign.channel {
        None => true,
        Some(channel) => req.channel().is_some_and(|f| f.text() == channel),
    }
}

/// Evaluates the benefits of the fired rules of one campaign, each with
/// its matched item. `Err(None)`: no benefit (explained separately, on
/// demand); `Err(Some(e))`: every benefit was dropped, with why.
fn evaluate_campaign<'e, 'p>(
    cc: &'e CompiledCampaign,
    fired: impl Iterator<Item = (&'p RulePlan, eval::Held)>,
    req: &Prepared<'_>,
    now: DateTime<Utc>,
) -> std::result::Result<CampaignHit<'e>, Option<Box<Explanation>>> {
    let mut actions = HitActions::new();
    let mut dropped = None;
    for (rule, held) in fired {
        let r = rule.rule as usize;
        let source = &cc.campaign.rules[r];
        for (b, benefit) in cc.rules[r].benefits.iter().enumerate() {
            match benefit::evaluate(benefit, (r, b), held.0, cc, req, now) {
                Ok(then) => actions.push(ActionHit {
                    rule: source,
                    action: then,
                    wire: &cc.rules[r].wire,
                }),
                // A benefit that cannot be evaluated for this request is
                // dropped from search; redeem of it fails with the same error.
                Err(e) => {
                    let reason = if money::CODES.contains(&e.code()) {
                        e.code()
                    } else {
                        "formula_failed"
                    };
                    dropped.get_or_insert_with(|| {
                        Box::new(Explanation {
                            rule_id: Some(source.id.clone()),
                            field: e.fields().first().map(|f| f.field.clone()),
                            ..explanation(cc, reason, e.message().to_owned())
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
    let charges = match cc.quotas.len() {
        0 => HitCharges::new(),
        // One charge: nothing to merge.
        1 => benefit::charge(cc, 0, &actions, req, now)
            .ok()
            .into_iter()
            .collect(),
        n => match benefit::merge(
            (0..n)
                .filter_map(|q| benefit::charge(cc, q, &actions, req, now).ok())
                .collect(),
        ) {
            Ok(charges) => HitCharges::from_vec(charges),
            // No redemption could charge these quotas: redeem fails alike.
            Err(e) => {
                return Err(Some(Box::new(explanation(
                    cc,
                    "invalid_quota_amount",
                    e.message().to_owned(),
                ))))
            }
        },
    };
    Ok(CampaignHit {
        campaign: cc,
        actions,
        charges,
    })
}

/// Whether a rule is an `OR` rule (the client chooses among its benefits).
fn is_or(op: &ThenOperator) -> bool {
    *op == ThenOperator::Or
}

#[cfg(test)]
mod calendar_tests;
#[cfg(test)]
mod tests;
