//! The evidence reads of [`ConsentService`]: a subject's history as
//! events, their state at an instant in every application, and the
//! revision history of notices and consents.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::ConsentService;
use crate::core::consent::content::{get_string, ContentRecord, ContentType};
use crate::core::consent::erasure::{self, ErasureReport};
use crate::core::consent::evidence::{self, HistoryQuery, SubjectEvent, Versions};
use crate::core::consent::history::{ExpiredAcceptance, PurgeReport};
use crate::core::consent::ledger::{self, LedgerHead, LedgerReport};
use crate::core::consent::model::{PurposeEvent, SubjectState};
use crate::core::consent::validate;
use crate::store::{ConsentStore, Page, StoredEntry, MAX_PAGE_SIZE};
use crate::{Error, ErrorCode, Result};

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
            return Err(Error::new(
                ErrorCode::InvalidPageSize,
                format!("size must be between 1 and {MAX_PAGE_SIZE}"),
            ));
        }
        let now = self.clock.now();
        self.store
            .subject_history(project, data_subject, query, now)
            .await
    }

    /// Acceptances of the project past their lifespan now (their
    /// `expiredDate` passed while they were accepted), oldest expiry first:
    /// the candidates of a retention review.
    pub async fn expired_acceptances(
        &self,
        project: &str,
        page: u32,
        size: u32,
    ) -> Result<Page<ExpiredAcceptance>> {
        crate::core::limits::check_project_id(project)?;
        if size == 0 || size > MAX_PAGE_SIZE {
            return Err(Error::new(
                ErrorCode::InvalidPageSize,
                format!("size must be between 1 and {MAX_PAGE_SIZE}"),
            ));
        }
        let now = self.clock.now();
        self.store
            .expired_acceptances(project, now, page, size)
            .await
    }

    /// Purges the personal data of the project's acceptances that ended —
    /// withdrawn, or expired while accepted — longer ago than the
    /// configured retention ([`with_retention`](Self::with_retention)):
    /// each is rewritten as erasure rewrites a subject's acceptances
    /// (identifier → keyed pseudonym, device context and note emptied,
    /// ledger salts deleted), one acceptance per transaction; the ledger
    /// is untouched and still verifies. Without a retention: 409
    /// `retention_not_configured`; without a pseudonym key: 409
    /// `erasure_not_configured`. Running it again purges only what ended
    /// since.
    pub async fn purge_retention(&self, project: &str) -> Result<PurgeReport> {
        const BATCH: u32 = 500;
        crate::core::limits::check_project_id(project)?;
        let retention = self.retention.ok_or_else(|| {
            Error::new(
                ErrorCode::RetentionNotConfigured,
                "a purge needs a retention period in the server's configuration",
            )
        })?;
        let key = self.pseudonym_key.as_ref().ok_or_else(|| {
            Error::new(
                ErrorCode::ErasureNotConfigured,
                "a purge needs a pseudonym key in the server's configuration",
            )
        })?;
        let before = self.clock.now() - retention;
        let mut report = PurgeReport {
            ended_before: before,
            retention_days: retention.num_days(),
            acceptances: 0,
            erased: erasure::ErasureCounts::default(),
        };
        let mut done = BTreeSet::new();
        loop {
            let batch = self.store.ended_acceptances(project, before, BATCH).await?;
            let fresh: Vec<(String, String)> = batch
                .into_iter()
                .filter(|(id, _)| !done.contains(id))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for (id, subject) in fresh {
                let pseudonym = key.pseudonym(project, &subject);
                let c = self
                    .store
                    .purge_acceptance(project, &id, &pseudonym)
                    .await?;
                report.acceptances += 1;
                report.erased.acceptance_versions += c.acceptance_versions;
                report.erased.ledger_salts += c.ledger_salts;
                done.insert(id);
            }
        }
        Ok(report)
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
                Error::new(
                    ErrorCode::ContentNotFound,
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

    /// Everything held about a data subject in a project, as one document
    /// (GDPR Art. 15 and 20, PDPA s.30 and 31): every version of their
    /// acceptances, their purpose events, their history as events, their
    /// state now in each application, and every version of the consents
    /// and privacy notices their acceptances name (what they were shown).
    pub async fn export_subject(&self, project: &str, data_subject: &str) -> Result<SubjectExport> {
        check_subject(data_subject)?;
        let acceptances = self
            .store
            .acceptance_versions(project, data_subject)
            .await?;
        let purpose_events = self
            .store
            .purpose_events(project, data_subject, None)
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
        let history =
            evidence::subject_events(&acceptances, &purpose_events, &consents, &notices, now);
        let state = self.subject_state(project, data_subject, None, now).await?;
        Ok(SubjectExport {
            format: SubjectExport::FORMAT.to_owned(),
            project_id: project.to_owned(),
            data_subject: data_subject.to_owned(),
            exported_at: now,
            acceptances,
            purpose_events,
            history,
            state,
            consents: consents.into_values().flatten().collect(),
            privacy_notices: notices.into_values().flatten().collect(),
        })
    }

    /// Erases a data subject in a project (GDPR Art. 17, PDPA s.33): their
    /// identifier becomes a keyed pseudonym, the device context and notes
    /// are emptied, the proof that consent existed is kept
    /// ([`erasure`]); the ledger stays valid. Erasing a pseudonym changes
    /// nothing. Without a key ([`with_pseudonym_key`](Self::with_pseudonym_key)):
    /// [`Conflict`](crate::ErrorKind::Conflict) `erasure_not_configured`.
    pub async fn erase_subject(&self, project: &str, data_subject: &str) -> Result<ErasureReport> {
        check_subject(data_subject)?;
        let key = self.pseudonym_key.as_ref().ok_or_else(|| {
            Error::new(
                ErrorCode::ErasureNotConfigured,
                "erasure needs a pseudonym key in the server's configuration",
            )
        })?;
        if erasure::is_pseudonym(data_subject) {
            return Ok(ErasureReport::new(
                data_subject.to_owned(),
                erasure::ErasureCounts::default(),
            ));
        }
        let pseudonym = key.pseudonym(project, data_subject);
        let counts = self
            .store
            .erase_subject(project, data_subject, &pseudonym)
            .await?;
        Ok(ErasureReport::new(pseudonym, counts))
    }
}

/// Everything held about one data subject in one project
/// ([`ConsentService::export_subject`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubjectExport {
    /// `accord-subject-export/1`.
    pub format: String,
    /// The project.
    pub project_id: String,
    /// The subject.
    pub data_subject: String,
    /// When the export was made.
    pub exported_at: DateTime<Utc>,
    /// Every version of every acceptance of the subject, in store order.
    #[cfg_attr(feature = "http", schema(value_type = Vec<Object>))]
    pub acceptances: Vec<ContentRecord>,
    /// Every purpose acceptance and withdrawal of the subject.
    #[cfg_attr(feature = "http", schema(value_type = Vec<Object>))]
    pub purpose_events: Vec<PurposeEvent>,
    /// The history as events (as `subjects/history` shows it).
    pub history: Vec<SubjectEvent>,
    /// What the subject has agreed to now, per application.
    pub state: Vec<SubjectState>,
    /// Every version of the consents the acceptances name.
    #[cfg_attr(feature = "http", schema(value_type = Vec<Object>))]
    pub consents: Vec<ContentRecord>,
    /// Every version of the privacy notices the acceptances name.
    #[cfg_attr(feature = "http", schema(value_type = Vec<Object>))]
    pub privacy_notices: Vec<ContentRecord>,
}

impl SubjectExport {
    /// The value of `format`.
    pub const FORMAT: &'static str = "accord-subject-export/1";
}
