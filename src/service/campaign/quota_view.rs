//! The quota view of a campaign: every stored key that can refuse its
//! redeems, with the usage of every campaign sharing it, paged by key.
//!
//! A quota's key template, with the names the campaign fixes rendered in
//! place (`campaignCode`, `campaignId`, the campaign's `channel`, the
//! current `day`, `month`, `year`, `week`), describes exactly the keys it
//! can charge ([`KeyPattern`]). A fixed key is listed even when nobody
//! charged it; a key that depends on the request (`${userId}`) is found by
//! a range scan of the stored keys under the template's literal prefix
//! ([`RedemptionStore::quota_usage_by_prefix`]), and kept when the pattern
//! matches it, whichever campaign charged it.

use std::collections::BTreeMap;

use chrono_tz::Tz;
use rust_decimal::Decimal;
use uuid::Uuid;

use super::{campaign_not_found, CampaignService};
use crate::core::campaign::{Campaign, QuotaUsage, QuotaWindow};
use crate::core::engine::calendar;
use crate::core::error::Result;
use crate::core::template::{KeyPattern, Template};
use crate::store::{check_page_size, CampaignStore, Counter, RedemptionStore};

/// Keys per page of the quota view when the caller names no size (at most
/// [`MAX_PAGE_SIZE`](crate::store::MAX_PAGE_SIZE)).
pub const DEFAULT_QUOTA_PAGE_SIZE: u32 = 100;

/// Which page of a campaign's quota view to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaUsageQuery {
    /// Only keys after this one (bytewise order): the `next` of the
    /// previous page.
    pub after: Option<String>,
    /// At most this many keys (1 to [`MAX_PAGE_SIZE`](crate::store::MAX_PAGE_SIZE)).
    pub size: u32,
    /// Instead of the keys that can refuse a redeem, the stored keys the
    /// campaign's quotas rendered before values were escaped that they no
    /// longer render ([`Template::plain_key_pattern`]): usage an earlier
    /// version of Accord counted that limits nothing now
    /// (docs/quotas.md, "Keys rendered before this encoding").
    pub legacy: bool,
}

impl Default for QuotaUsageQuery {
    fn default() -> Self {
        QuotaUsageQuery {
            after: None,
            size: DEFAULT_QUOTA_PAGE_SIZE,
            legacy: false,
        }
    }
}

/// A page of a campaign's quota view.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaUsagePage {
    /// The keys, sorted bytewise.
    pub items: Vec<QuotaUsage>,
    /// Where the next page starts (its [`QuotaUsageQuery::after`]); `None`
    /// on the last page. A page may hold fewer than `size` keys — even
    /// none — and still have a next one: each page reads a bounded number
    /// of stored keys, and keys under a template's prefix that it cannot
    /// render are left out.
    pub next: Option<String>,
}

/// A quota of the campaign: the keys it can charge and its limit.
struct QuotaKeys {
    pattern: KeyPattern,
    plain: KeyPattern,
    limit: Decimal,
    window: Option<QuotaWindow>,
}

impl QuotaKeys {
    /// The pattern whose keys the page lists.
    fn listed(&self, legacy: bool) -> &KeyPattern {
        if legacy {
            &self.plain
        } else {
            &self.pattern
        }
    }
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// A page of the quota keys that can refuse a campaign's redeems, with
    /// their usage by every campaign sharing them, sorted by key: every
    /// key its quotas can render now, with the names the campaign fixes
    /// (`campaignCode`, `campaignId`, its `channel`, the current date in
    /// its time zone) in place and any value for the names a request
    /// gives (`${userId}`) — a fixed key even if nobody charged it (used
    /// `0`), the others once some campaign charged them. `limit` is the
    /// smallest limit of the campaign's quotas that can render the key. A
    /// key is a project-wide label: a quota without `${campaignCode}`
    /// counts with every campaign that renders the same key
    /// (docs/quotas.md).
    pub async fn quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
        query: &QuotaUsageQuery,
    ) -> Result<QuotaUsagePage> {
        check_page_size(query.size)?;
        let Some(campaign) = self.store.campaign(project, campaign_id).await? else {
            return Err(campaign_not_found(campaign_id));
        };
        let zone = campaign
            .time_zone
            .as_deref()
            .and_then(|name| name.parse::<Tz>().ok())
            .unwrap_or_else(|| self.zones.of(project));
        let now = self.clock.now();
        let quotas = quota_keys(&campaign, now, zone);
        let legacy = query.legacy;
        let after = query.after.as_deref();
        let size = query.size as usize;

        // One range scan per prefix not already covered by a shorter one.
        let mut prefixes: Vec<&str> = quotas
            .iter()
            .filter(|q| q.listed(legacy).fixed().is_none())
            .map(|q| q.listed(legacy).prefix())
            .collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let mut scans: Vec<&str> = Vec::new();
        for prefix in prefixes {
            if !scans.iter().any(|s| prefix.starts_with(s)) {
                scans.push(prefix);
            }
        }
        let mut found: BTreeMap<String, Decimal> = BTreeMap::new();
        // The smallest last key of a scan that filled its page: what lies
        // beyond is not known yet, so this page ends there.
        let mut horizon: Option<String> = None;
        for prefix in scans {
            let rows = self
                .store
                .quota_usage_by_prefix(project, prefix, after, query.size)
                .await?;
            if rows.len() >= size {
                if let Some((last, _)) = rows.last() {
                    if horizon.as_ref().is_none_or(|h| last < h) {
                        horizon = Some(last.clone());
                    }
                }
            }
            found.extend(rows);
        }
        let within = |key: &str| {
            after.is_none_or(|a| key > a) && horizon.as_deref().is_none_or(|h| key <= h)
        };
        // Fixed keys are listed even when nobody charged them, but a legacy
        // key only when it holds usage.
        let fixed: Vec<String> = quotas
            .iter()
            .filter(|_| !legacy)
            .filter_map(|q| q.pattern.fixed())
            .filter(|k| within(k) && !found.contains_key(*k))
            .map(str::to_owned)
            .collect();
        for key in fixed {
            found.insert(key, Decimal::ZERO);
        }
        // Per key, one counter per window of the quotas that render it
        // (calendar first), with the smallest limit of those quotas.
        let mut keys: Vec<(String, Decimal, Vec<(Option<QuotaWindow>, Decimal)>)> = found
            .into_iter()
            .filter(|(key, _)| within(key))
            .filter(|(key, _)| !legacy || !quotas.iter().any(|q| q.pattern.matches(key)))
            .filter_map(|(key, used)| {
                let mut counters: BTreeMap<Option<QuotaWindow>, Decimal> = BTreeMap::new();
                for q in quotas.iter().filter(|q| q.listed(legacy).matches(&key)) {
                    let window = if legacy { None } else { q.window };
                    let limit = counters.entry(window).or_insert(q.limit);
                    *limit = (*limit).min(q.limit);
                }
                (!counters.is_empty()).then(|| (key, used, counters.into_iter().collect()))
            })
            .take(size + 1)
            .collect();
        let next = if keys.len() > size {
            keys.truncate(size);
            keys.last().map(|(key, _, _)| key.clone())
        } else {
            horizon
        };
        let mut items: Vec<QuotaUsage> = Vec::new();
        for (key, used, counters) in keys {
            for (window, limit) in counters {
                items.push(QuotaUsage {
                    key: key.clone(),
                    used,
                    limit: Some(limit),
                    window,
                    held: None,
                });
            }
        }
        // The usage at this instant: live holds in, expired ones out, and
        // a rolling counter's charges in its window. (Legacy keys show
        // their stored usage, which no quota checks any more.)
        if !legacy && !items.is_empty() {
            let counters: Vec<Counter> = items
                .iter()
                .map(|u| Counter {
                    key: u.key.clone(),
                    window: u.window,
                })
                .collect();
            let usage = self.store.counter_usage(project, &counters, now).await?;
            for (item, usage) in items.iter_mut().zip(usage) {
                item.used = usage.used;
                item.held = (!usage.held.is_zero()).then_some(usage.held);
            }
        }
        Ok(QuotaUsagePage { items, next })
    }
}

/// The keys each quota of `campaign` can charge at `now`: the names the
/// campaign fixes rendered as a redeem renders them
/// (`engine::benefit::reserved`), every other name open.
fn quota_keys(campaign: &Campaign, now: chrono::DateTime<chrono::Utc>, zone: Tz) -> Vec<QuotaKeys> {
    use std::borrow::Cow;
    campaign
        .quotas
        .iter()
        .filter_map(|quota| {
            let template = Template::parse(&quota.key).ok()?;
            let known = |name: &str| {
                Some(match name {
                    "campaignCode" => Cow::Borrowed(campaign.ref_code.as_str()),
                    "campaignId" => Cow::Owned(campaign.id.to_string()),
                    "channel" => Cow::Borrowed(campaign.channel.as_deref()?),
                    "day" | "month" | "year" | "week" => Cow::Owned(calendar(name, now, zone)?),
                    _ => return None,
                })
            };
            Some(QuotaKeys {
                pattern: template.key_pattern(&known),
                plain: template.plain_key_pattern(&known),
                limit: quota.value,
                window: quota.window.as_deref().and_then(|w| w.parse().ok()),
            })
        })
        .collect()
}
