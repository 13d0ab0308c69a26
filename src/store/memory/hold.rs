//! Rolling windows and quota holds in memory: the reference model of the
//! SQL stores' `quota_mark` and `quota_hold` tables.
//!
//! A *mark* is a charge that counts for a time, kept per counter (project,
//! key, window in seconds: 0 for a calendar quota) and owner (the
//! redemption or hold that made it):
//!
//! - a rolling quota's charges are marks only: its usage is the sum of the
//!   marks that count at the instant asked (`at < until`, and a hold's mark
//!   only while `at < expires`);
//! - a calendar quota's charge by a hold is added to the key's usage, as a
//!   redeem's is, and marked with the hold's expiry; once expired, the mark
//!   is given back by the next charge of the key (under the same lock), and
//!   every read subtracts the marks expired at its instant, so nothing
//!   depends on when (or whether) that happens.

use std::collections::btree_map::Entry;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::campaign::{Mark, State};
use super::{lock, MemoryStore};
use crate::core::campaign::{Hold, HoldStatus, QuotaCharge, QuotaWindow, Redemption};
use crate::store::{Confirmation, CounterUsage, HoldOutcome, HoldStore};
use crate::Result;

fn seconds(window: Option<QuotaWindow>) -> i64 {
    window.map_or(0, QuotaWindow::seconds)
}

fn counter(project: &str, c: &QuotaCharge) -> (String, String, i64) {
    (project.to_owned(), c.key.clone(), seconds(c.window))
}

impl State {
    /// Gives back the calendar charges to `key` of holds expired at `at`.
    fn sweep_key(&mut self, project: &str, key: &str, at: DateTime<Utc>) {
        let id = (project.to_owned(), key.to_owned(), 0);
        let Some(marks) = self.marks.get_mut(&id) else {
            return;
        };
        let mut back = Decimal::ZERO;
        marks.retain(|_, m| {
            let expired = m.expires.is_some_and(|e| e <= at);
            if expired {
                back += m.amount;
            }
            !expired
        });
        if marks.is_empty() {
            self.marks.remove(&id);
        }
        if let Some(used) = self.usage.get_mut(&(project.to_owned(), key.to_owned())) {
            *used -= back;
        }
    }

    /// The usage of a counter at `at`.
    pub(super) fn counter_usage(
        &self,
        project: &str,
        key: &str,
        window: Option<QuotaWindow>,
        at: DateTime<Utc>,
    ) -> CounterUsage {
        // No rolling quota or hold anywhere (the common case): no owned
        // lookup key to build, for each of the keys a search reads.
        let marks = if self.marks.is_empty() {
            None
        } else {
            self.marks
                .get(&(project.to_owned(), key.to_owned(), seconds(window)))
        };
        let marks = marks.into_iter().flat_map(HashMap::values);
        let mut out = CounterUsage::default();
        if window.is_some() {
            for m in marks.filter(|m| m.counts(at)) {
                out.used += m.amount;
                if m.expires.is_some() {
                    out.held += m.amount;
                }
            }
        } else {
            out.used = self
                .usage
                .get(&(project.to_owned(), key.to_owned()))
                .copied()
                .unwrap_or_default();
            for m in marks {
                if m.counts(at) {
                    out.held += m.amount;
                } else {
                    out.used -= m.amount;
                }
            }
        }
        out
    }

    /// Checks every charge at `at` and, only if all stay within their
    /// limits, applies them for `owner` (a hold's until `expires`). The
    /// first charge that would not: its key, usage and limit.
    pub(super) fn charge_all(
        &mut self,
        project: &str,
        charges: &[QuotaCharge],
        owner: Uuid,
        at: DateTime<Utc>,
        expires: Option<DateTime<Utc>>,
    ) -> Option<(String, Decimal, Decimal)> {
        for c in charges {
            if c.window.is_none() {
                self.sweep_key(project, &c.key, at);
            }
            let used = self.counter_usage(project, &c.key, c.window, at).used;
            // A sum beyond Decimal's range is beyond any limit.
            if used
                .checked_add(c.amount)
                .is_none_or(|total| total > c.limit)
            {
                return Some((c.key.clone(), used, c.limit));
            }
        }
        for c in charges {
            let usage = match self.usage.entry((project.to_owned(), c.key.clone())) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    self.charged_order
                        .entry(project.to_owned())
                        .or_default()
                        .push(c.key.clone());
                    e.insert(Decimal::ZERO)
                }
            };
            if c.window.is_none() {
                *usage += c.amount;
            }
            if c.window.is_some() || expires.is_some() {
                let mark = Mark {
                    amount: c.amount,
                    until: c.window.map(|w| w.until(at)),
                    expires,
                };
                self.marks
                    .entry(counter(project, c))
                    .or_default()
                    .insert(owner, mark);
            }
        }
        None
    }

    /// Gives back the charges `owner` made (a cancelled redemption, a
    /// released hold): a calendar charge is subtracted from the usage
    /// unless it is a hold's that expired (already not counted), a
    /// rolling one's mark removed.
    pub(super) fn give_back(&mut self, project: &str, charges: &[QuotaCharge], owner: Uuid) {
        for c in charges {
            let id = counter(project, c);
            let mark = self.marks.get_mut(&id).and_then(|m| m.remove(&owner));
            if self.marks.get(&id).is_some_and(HashMap::is_empty) {
                self.marks.remove(&id);
            }
            if c.window.is_some() {
                continue;
            }
            // A hold's charge is in the usage only while its mark is (the
            // sweep gives it back with the mark).
            let held = mark.is_some();
            let redeemed = !self.holds.contains_key(&(project.to_owned(), owner));
            if held || redeemed {
                if let Some(used) = self.usage.get_mut(&(project.to_owned(), c.key.clone())) {
                    *used -= c.amount;
                }
            }
        }
    }

    fn record(&mut self, r: Redemption) {
        let i = self.redemptions.len();
        self.by_id.insert((r.project_id.clone(), r.id), i);
        self.redemptions.push(r);
    }
}

impl HoldStore for MemoryStore {
    async fn place_hold(&self, hold: &Hold) -> Result<HoldOutcome> {
        let mut s = lock(&self.campaigns);
        let project = hold.project_id.as_str();
        if let Some(code) = &hold.code {
            if let Some(refusal) = s
                .codes
                .check(project, hold.campaign_id, code, hold.created_date)
            {
                return Ok(HoldOutcome::CodeRefused(refusal));
            }
        }
        if let Some((key, used, limit)) = s.charge_all(
            &hold.project_id,
            &hold.quotas,
            hold.id,
            hold.created_date,
            Some(hold.expires_at),
        ) {
            return Ok(HoldOutcome::QuotaExceeded { key, used, limit });
        }
        if let Some(code) = &hold.code {
            s.codes.reserve(project, hold.id, code, hold.expires_at);
        }
        s.holds
            .insert((hold.project_id.clone(), hold.id), hold.clone());
        Ok(HoldOutcome::Placed(Box::new(hold.clone())))
    }

    async fn confirm_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Confirmation>> {
        let mut s = lock(&self.campaigns);
        let Some(hold) = s.holds.get(&(project.to_owned(), id)).cloned() else {
            return Ok(None);
        };
        match hold.status {
            HoldStatus::Confirmed => {
                let r = s.by_id.get(&(project.to_owned(), hold.redemption_id));
                return Ok(r.map(|&i| Confirmation::Confirmed(s.redemptions[i].clone(), true)));
            }
            HoldStatus::Released => return Ok(Some(Confirmation::Released(hold))),
            _ if !hold.is_live(at) => return Ok(Some(Confirmation::Expired(hold))),
            _ => {}
        }
        // A calendar mark swept by a charge that saw the hold expired
        // (another clock) has been given back: the hold is expired.
        let swept = hold.quotas.iter().any(|c| {
            !s.marks
                .get(&counter(project, c))
                .is_some_and(|m| m.contains_key(&id))
        });
        // So with the code's use, given back by a use of the code that saw
        // the hold expired.
        if swept || (hold.code.is_some() && s.codes.unreserve(project, id).is_none()) {
            return Ok(Some(Confirmation::Expired(hold)));
        }
        let redemption = hold.redemption(at);
        for c in &hold.quotas {
            let marks = s.marks.entry(counter(project, c)).or_default();
            let mark = marks.remove(&id);
            if let (Some(mut mark), Some(_)) = (mark, c.window) {
                mark.expires = None;
                marks.insert(redemption.id, mark);
            }
            if marks.is_empty() {
                s.marks.remove(&counter(project, c));
            }
        }
        s.record(redemption.clone());
        let stored = s
            .holds
            .get_mut(&(project.to_owned(), id))
            .expect("read above under the same lock");
        stored.status = HoldStatus::Confirmed;
        stored.ended_date = Some(at);
        lock(&self.outbox).append(crate::core::outbox::OutboxEvent::for_redemption(
            &redemption,
        ));
        Ok(Some(Confirmation::Confirmed(redemption, false)))
    }

    async fn release_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Hold>> {
        let mut s = lock(&self.campaigns);
        let Some(hold) = s.holds.get(&(project.to_owned(), id)).cloned() else {
            return Ok(None);
        };
        if hold.status != HoldStatus::Held {
            return Ok(Some(hold));
        }
        if let Some(code) = s.codes.unreserve(project, id) {
            s.codes.use_code(project, &code, -1);
        }
        s.give_back(project, &hold.quotas, id);
        let stored = s
            .holds
            .get_mut(&(project.to_owned(), id))
            .expect("read above under the same lock");
        stored.status = HoldStatus::Released;
        stored.ended_date = Some(at);
        Ok(Some(stored.clone()))
    }

    async fn hold(&self, project: &str, id: Uuid) -> Result<Option<Hold>> {
        Ok(lock(&self.campaigns)
            .holds
            .get(&(project.to_owned(), id))
            .cloned())
    }

    async fn live_holds(
        &self,
        project: &str,
        campaign_id: Uuid,
        at: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Hold>> {
        let s = lock(&self.campaigns);
        let mut live: Vec<Hold> = s
            .holds
            .values()
            .filter(|h| h.project_id == project && h.campaign_id == campaign_id && h.is_live(at))
            .cloned()
            .collect();
        live.sort_by(|a, b| a.expires_at.cmp(&b.expires_at).then(a.id.cmp(&b.id)));
        live.truncate(limit as usize);
        Ok(live)
    }

    async fn sweep_quota_marks(&self, project: &str, at: DateTime<Utc>) -> Result<u64> {
        let mut s = lock(&self.campaigns);
        let keys: Vec<String> = s
            .marks
            .keys()
            .filter(|(p, _, w)| p == project && *w == 0)
            .map(|(_, k, _)| k.clone())
            .collect();
        let before: usize = s.marks.values().map(HashMap::len).sum();
        for key in keys {
            s.sweep_key(project, &key, at);
        }
        s.codes.sweep(project, at);
        s.marks.retain(|(p, _, w), marks| {
            if p == project && *w > 0 {
                // A live hold's mark stays (its hold may still be
                // confirmed), even when its window has passed.
                marks.retain(|_, m| match m.expires {
                    Some(e) => at < e,
                    None => m.until.is_none_or(|u| at < u),
                });
            }
            !marks.is_empty()
        });
        let after: usize = s.marks.values().map(HashMap::len).sum();
        Ok((before - after) as u64)
    }
}
