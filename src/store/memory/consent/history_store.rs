//! [`HistoryStore`] of the memory store: a subject's history, the
//! acceptances past their lifespan, and the retention purge.

use chrono::{DateTime, Utc};

use super::super::lock;
use super::MemoryStore;
use crate::core::consent::erasure::{self, ErasureCounts};
use crate::core::consent::evidence::{EventKind, HistoryQuery, SubjectEvent};
use crate::core::consent::history::{ExpiredAcceptance, HistoryRow};
use crate::core::consent::ContentType;
use crate::store::{HistoryStore, Page};
use crate::Result;

impl HistoryStore for MemoryStore {
    async fn subject_history(
        &self,
        project: &str,
        subject: &str,
        query: &HistoryQuery,
        now: DateTime<Utc>,
    ) -> Result<Page<SubjectEvent>> {
        let s = lock(&self.consent);
        Ok(match s.project(project) {
            Some(p) => p.history.page(subject, query, now),
            None => query.page_of(Vec::new()),
        })
    }

    async fn expired_acceptances(
        &self,
        project: &str,
        now: DateTime<Utc>,
        page: u32,
        size: u32,
    ) -> Result<Page<ExpiredAcceptance>> {
        let s = lock(&self.consent);
        let Some(p) = s.project(project) else {
            return Ok(Page::slice(Vec::new(), page, size));
        };
        let mut rows: Vec<HistoryRow> = p
            .acceptance_rows()
            .flat_map(|(_, rows)| rows)
            .filter(|r| r.event.kind == EventKind::Expired && r.visible_at(now))
            .collect();
        drop(s);
        rows.sort_by_key(|r| (r.event.at, r.ord));
        let all = rows
            .iter()
            .filter_map(|r| ExpiredAcceptance::of(&r.subject, &r.event))
            .collect();
        Ok(Page::slice(all, page, size))
    }

    async fn ended_acceptances(
        &self,
        project: &str,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<(String, String)>> {
        let s = lock(&self.consent);
        let Some(p) = s.project(project) else {
            return Ok(Vec::new());
        };
        Ok(p.acceptance_rows()
            .filter_map(|(id, rows)| {
                let ended = rows.iter().any(|r| {
                    matches!(r.event.kind, EventKind::Expired | EventKind::Withdrawn)
                        && r.event.at < before
                });
                let subject = rows.first()?.subject.clone();
                (ended && !erasure::is_pseudonym(&subject)).then(|| (id.to_owned(), subject))
            })
            .take(limit as usize)
            .collect())
    }

    async fn purge_acceptance(
        &self,
        project: &str,
        id: &str,
        pseudonym: &str,
    ) -> Result<ErasureCounts> {
        let mut s = lock(&self.consent);
        let mut counts = ErasureCounts::default();
        let Some(p) = s.projects.get_mut(project) else {
            return Ok(counts);
        };
        let key = (ContentType::ConsentAcceptance, id.to_owned());
        for v in p.content.get_mut(&key).into_iter().flatten() {
            let erased = erasure::erase_acceptance(&v.data, pseudonym);
            if erased != v.data {
                v.data = erased;
                counts.acceptance_versions += 1;
            }
        }
        counts.ledger_salts += p.forget_salts(id);
        p.refresh_acceptance(id);
        Ok(counts)
    }
}
