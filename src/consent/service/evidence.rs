//! The evidence reads of [`ConsentService`]: a subject's history as
//! events, their state at an instant in every application, and the
//! revision history of notices and consents.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::ConsentService;
use crate::consent::content::{get_string, ContentRecord, ContentType};
use crate::consent::evidence::{self, HistoryQuery, SubjectEvent, Versions};
use crate::consent::ledger::{self, LedgerHead, LedgerReport};
use crate::consent::model::SubjectState;
use crate::consent::validate;
use crate::store::{ConsentStore, Page, StoredEntry, MAX_PAGE_SIZE};
use crate::{Error, Result};

/// `dataSubject` is required and within its length limit (as on the
/// application-facing reads).
fn check_subject(data_subject: &str) -> Result<()> {
    validate::subject_query("-", data_subject).into_result()
}

impl<S: ConsentStore> ConsentService<S> {
    /// Every version of the records named by `ids` (each once), by id.
    async fn versions_of(
        &self,
        project: &str,
        t: ContentType,
        ids: BTreeSet<String>,
    ) -> Result<Versions> {
        let mut out = Versions::new();
        for id in ids {
            let versions = self.store.content_versions(project, t, &id).await?;
            out.insert(id, versions);
        }
        Ok(out)
    }

    /// A subject's history as events ([`evidence`]): every acceptance,
    /// withdrawal, edit, purpose acceptance and withdrawal, expiry and
    /// re-consent request, with the consent and notice revisions pinned
    /// and the device context, filtered and paged by `query`.
    pub async fn subject_history(
        &self,
        project: &str,
        data_subject: &str,
        query: &HistoryQuery,
    ) -> Result<Page<SubjectEvent>> {
        check_subject(data_subject)?;
        if query.size == 0 || query.size > MAX_PAGE_SIZE {
            return Err(Error::bad_request(
                "invalid_page_size",
                format!("size must be between 1 and {MAX_PAGE_SIZE}"),
            ));
        }
        let acceptances = self
            .store
            .acceptance_versions(project, data_subject)
            .await?;
        let purposes = self
            .store
            .purpose_events(project, data_subject, query.app.as_deref())
            .await?;
        let pinned = |key: &str| -> BTreeSet<String> {
            acceptances
                .iter()
                .filter_map(|r| get_string(&r.data, key))
                .collect()
        };
        let consents = self
            .versions_of(project, ContentType::Consent, pinned("consentId"))
            .await?;
        let notices = self
            .versions_of(
                project,
                ContentType::PrivacyNotice,
                pinned("privacyNoticeId"),
            )
            .await?;
        let now = self.clock.now();
        let events = evidence::subject_events(&acceptances, &purposes, &consents, &notices, now);
        Ok(query.page_of(events))
    }

    /// What the subject had agreed to at `at`, per consent and purpose
    /// ([`state_at`](Self::state_at)), in `app`, or in every application
    /// their records name (in name order) when `app` is `None`.
    pub async fn subject_state(
        &self,
        project: &str,
        data_subject: &str,
        app: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<Vec<SubjectState>> {
        check_subject(data_subject)?;
        let apps: BTreeSet<String> = if let Some(a) = app {
            std::iter::once(a.to_owned()).collect()
        } else {
            let mut apps: BTreeSet<String> = self
                .store
                .acceptance_versions(project, data_subject)
                .await?
                .iter()
                .filter_map(|r| {
                    get_string(&r.data, "consentApplication")
                        .or_else(|| get_string(&r.data, "application"))
                })
                .collect();
            apps.extend(
                self.store
                    .purpose_events(project, data_subject, None)
                    .await?
                    .into_iter()
                    .map(|e| e.app),
            );
            apps
        };
        let mut out = Vec::with_capacity(apps.len());
        for a in apps {
            out.push(self.state_at(project, data_subject, &a, at).await?);
        }
        Ok(out)
    }

    /// Version `version` of a record. Unknown type: 404
    /// `content_type_not_found`; unknown id or version: 404
    /// `content_not_found`.
    pub async fn content_version(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        version: i64,
    ) -> Result<ContentRecord> {
        let versions = self.content_versions(project, content_type, id).await?;
        versions
            .into_iter()
            .find(|r| r.version == version)
            .ok_or_else(|| {
                Error::not_found(
                    "content_not_found",
                    format!("record {id:?} has no version {version}"),
                )
            })
    }

    /// Up to `limit` entries of the project's consent ledger after position
    /// `after` (0: from the start), as stored, with the ledger's head.
    pub async fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> Result<(Vec<StoredEntry>, Option<LedgerHead>)> {
        // The head first: entries appended in between are then read too,
        // and the export is never shorter than its head says.
        let head = self.store.ledger_head(project).await?;
        let entries = self.store.ledger_entries(project, after, limit).await?;
        Ok((entries, head))
    }

    /// Checks the project's whole consent ledger against its head
    /// ([`ledger::verify`]): the first entry changed, removed or reordered.
    pub async fn verify_ledger(&self, project: &str) -> Result<LedgerReport> {
        const BATCH: u32 = 10_000;
        let head = self.store.ledger_head(project).await?;
        let mut texts = Vec::new();
        let mut after = 0;
        loop {
            let batch = self.store.ledger_entries(project, after, BATCH).await?;
            let Some(last) = batch.last() else { break };
            after = last.position;
            let full = batch.len() == BATCH as usize;
            texts.extend(batch.into_iter().map(|e| e.text));
            if !full {
                break;
            }
        }
        // Entries appended after the head was read are not its concern.
        if let Some(h) = &head {
            texts.truncate(usize::try_from(h.position).unwrap_or(usize::MAX));
        }
        let report = ledger::verify(texts.iter().map(String::as_str), head.as_ref());
        Ok(report)
    }
}
