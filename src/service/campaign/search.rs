//! Search: the compiled snapshot's hits, less the campaigns whose quotas
//! are used up for the request, less those the stacking rules suppress.

use std::borrow::Cow;
use std::time::Instant;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use super::{usage, CampaignService};
use crate::core::campaign::{Campaign, Explanation, SearchRequest, SearchResponse};
use crate::core::engine::{self, stacking};
use crate::store::{CampaignStore, Counter, RedemptionStore};
use crate::Result;

/// Options of a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// Add, per running campaign that did not fire, why.
    pub explain: bool,
    /// Evaluate at this instant instead of now (an administrator previewing
    /// what will apply at a future moment).
    pub at: Option<DateTime<Utc>>,
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
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
        let mut missing = lookup.missing;
        if !missing.is_empty() {
            self.drop_keys_never_charged(project, &mut missing).await?;
        }
        // Keys dropped here were never charged: zero, as `None` ends.
        if !missing.is_empty() {
            let read_at = Instant::now();
            // Where each key not found here is among the keys to read
            // (sorted, each once), found before those keys move into the
            // store's counters: no key is copied again.
            let at: Vec<Option<usize>> = refs
                .iter()
                .zip(&used)
                .map(|(key, u)| match u {
                    Some(_) => None,
                    None => missing.binary_search_by(|m| m.as_str().cmp(key)).ok(),
                })
                .collect();
            let counters: Vec<Counter> = missing.into_iter().map(usage::into_counter).collect();
            let read = self.store.counter_usage(project, &counters, now).await?;
            let used_at = |i: usize| read.get(i).map_or(Decimal::ZERO, |r| r.used);
            for (u, i) in used.iter_mut().zip(at) {
                if u.is_none() {
                    *u = Some(i.map_or(Decimal::ZERO, used_at));
                }
            }
            let entries = counters
                .into_iter()
                .enumerate()
                .map(|(i, c)| (usage::into_cache_key(c), used_at(i)))
                .collect();
            self.usage
                .keep(project, entries, lookup.generation, read_at);
        }
        Ok(used.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Drops from `missing` the keys never charged, by the view of charged
    /// keys (`charged.rs`), bringing it up to date first when it is not
    /// and no other search is. Left as it is when there is no fresh view.
    /// The store's error, when the update fails: the usage read would meet
    /// it too, after as long a wait.
    async fn drop_keys_never_charged(
        &self,
        project: &str,
        missing: &mut Vec<String>,
    ) -> Result<()> {
        let view = &self.usage.charged;
        if view.retain_charged(project, missing) {
            return Ok(());
        }
        let Some(update) = view.claim_update(project) else {
            return Ok(());
        };
        match self.store.charged_keys(project, update.after).await {
            Ok(answer) => {
                view.apply(project, update, &answer);
                view.retain_charged(project, missing);
                Ok(())
            }
            Err(e) => {
                view.failed(project);
                Err(e)
            }
        }
    }
}
