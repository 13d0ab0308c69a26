//! A data subject's history as rows in memory, kept as the SQL stores keep
//! their `consent_history` table (see [`crate::core::consent::history`]):
//! updated in the critical section of the write it comes from and paged in
//! the history's order without deriving every event again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use chrono::{DateTime, Utc};

use crate::core::consent::evidence::{HistoryQuery, SubjectEvent};
use crate::core::consent::history::{self, HistoryRow};
use crate::core::consent::{ContentRecord, ContentType, PurposeEvent};
use crate::store::Page;

/// The history's order (`at`, `derived`, `ord`), then the record and the
/// row's place among that record's rows, so that every key is unique.
type Key = (DateTime<Utc>, bool, i64, String, usize);

/// The rows of one project.
#[derive(Debug, Default)]
pub(super) struct History {
    /// Rows by data subject, in the history's order.
    by_subject: HashMap<String, BTreeMap<Key, HistoryRow>>,
    /// Where each acceptance's rows are, and what it pins.
    acceptances: HashMap<String, Kept>,
    /// Acceptances by the consent or notice they pin.
    pinning: HashMap<(ContentType, String), BTreeSet<String>>,
}

/// What is kept of one acceptance's rows.
#[derive(Debug, Default)]
struct Kept {
    /// Subject and key of each row.
    rows: Vec<(String, Key)>,
    /// The consent and notice it pins.
    pins: Vec<(ContentType, String)>,
}

fn lowest(at: DateTime<Utc>) -> Key {
    (at, false, i64::MIN, String::new(), 0)
}

impl History {
    /// Replaces the rows of acceptance `id`: `versions` every version of it,
    /// `consent` and `notice` the version histories of what it pins
    /// ([`history::pinned_ids`]).
    pub(super) fn refresh_acceptance(
        &mut self,
        id: &str,
        versions: &[ContentRecord],
        consent: &[ContentRecord],
        notice: &[ContentRecord],
    ) {
        if let Some(kept) = self.acceptances.remove(id) {
            for (subject, key) in kept.rows {
                if let Some(rows) = self.by_subject.get_mut(&subject) {
                    rows.remove(&key);
                    if rows.is_empty() {
                        self.by_subject.remove(&subject);
                    }
                }
            }
            for pin in kept.pins {
                if let Some(ids) = self.pinning.get_mut(&pin) {
                    ids.remove(id);
                    if ids.is_empty() {
                        self.pinning.remove(&pin);
                    }
                }
            }
        }
        let mut kept = Kept::default();
        let (consent_id, notice_id) = history::pinned_ids(versions);
        for pin in [
            consent_id.map(|c| (ContentType::Consent, c)),
            notice_id.map(|n| (ContentType::PrivacyNotice, n)),
        ]
        .into_iter()
        .flatten()
        {
            self.pinning
                .entry(pin.clone())
                .or_default()
                .insert(id.to_owned());
            kept.pins.push(pin);
        }
        for (i, row) in history::acceptance_rows(versions, consent, notice)
            .into_iter()
            .enumerate()
        {
            let key = (row.event.at, row.derived, row.ord, id.to_owned(), i);
            kept.rows.push((row.subject.clone(), key.clone()));
            self.by_subject
                .entry(row.subject.clone())
                .or_default()
                .insert(key, row);
        }
        if !kept.rows.is_empty() || !kept.pins.is_empty() {
            self.acceptances.insert(id.to_owned(), kept);
        }
    }

    /// The acceptances pinning consent or notice `id` (`t` says which).
    pub(super) fn pinned_by(&self, t: ContentType, id: &str) -> Vec<String> {
        self.pinning
            .get(&(t, id.to_owned()))
            .map(|ids| ids.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Adds the row of a purpose event.
    pub(super) fn add_purpose(&mut self, e: &PurposeEvent) {
        let row = history::purpose_row(e);
        let key = (row.event.at, row.derived, row.ord, e.id.clone(), 0);
        self.by_subject
            .entry(row.subject.clone())
            .or_default()
            .insert(key, row);
    }

    /// Moves the purpose event rows of `subject` to `pseudonym` (after an
    /// erasure rewrote the events).
    pub(super) fn rename_purposes(&mut self, subject: &str, pseudonym: &str) {
        let Some(rows) = self.by_subject.get_mut(subject) else {
            return;
        };
        let keys: Vec<Key> = rows
            .iter()
            .filter(|(_, r)| !r.of_acceptance)
            .map(|(k, _)| k.clone())
            .collect();
        let moved: Vec<(Key, HistoryRow)> = keys
            .into_iter()
            .filter_map(|k| rows.remove_entry(&k))
            .collect();
        if rows.is_empty() {
            self.by_subject.remove(subject);
        }
        let into = self.by_subject.entry(pseudonym.to_owned()).or_default();
        for (key, mut row) in moved {
            pseudonym.clone_into(&mut row.subject);
            into.insert(key, row);
        }
    }

    /// One page of a subject's history at `now`.
    pub(super) fn page(
        &self,
        subject: &str,
        query: &HistoryQuery,
        now: DateTime<Utc>,
    ) -> Page<SubjectEvent> {
        let skip = u64::from(query.page) * u64::from(query.size);
        let mut total = 0u64;
        let mut items = Vec::new();
        let backwards = matches!((query.from, query.to), (Some(f), Some(t)) if f > t);
        if let Some(rows) = self.by_subject.get(subject).filter(|_| !backwards) {
            let from = query
                .from
                .map_or(Bound::Unbounded, |f| Bound::Included(lowest(f)));
            let to = query
                .to
                .map_or(Bound::Unbounded, |t| Bound::Excluded(lowest(t)));
            for row in rows
                .range((from, to))
                .map(|(_, r)| r)
                .filter(|r| r.visible_at(now) && query.matches(&r.event))
            {
                if total >= skip && items.len() < query.size as usize {
                    items.push(row.event.clone());
                }
                total += 1;
            }
        }
        Page {
            items,
            page: query.page,
            size: query.size,
            total,
        }
    }
}
