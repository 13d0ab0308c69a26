//! [`ConsentService`]: orchestrates clock, store and the pure rules.

mod cms;
mod evidence;
mod files;
mod receipts;

pub use evidence::SubjectExport;
pub use receipts::ReceiptSource;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::core::clock::Clock;
use crate::core::consent::check::{self, Finding, Histories};
use crate::core::consent::content::{format_time, ContentRecord, ContentType, ContentWrite};
use crate::core::consent::erasure::PseudonymKey;
use crate::core::consent::integrity;
use crate::core::consent::model::{
    AcceptConsentRequest, AcceptanceStatus, Consent, ConsentAcceptance, HistoryEntry, NoticeStatus,
    PrivacyNotice, PurposeAcceptance, PurposeEvent, PurposeName, PurposeOption, PurposeRequest,
    SubjectState, ToAccept,
};
use crate::core::consent::query::ContentQuery;
use crate::core::consent::receipt::EntryRef;
use crate::core::consent::rules::{self, AcceptanceVersion};
use crate::core::consent::validate;
use crate::core::error::ErrorCode;
use crate::core::error::Problems;
use crate::store::ConsentStore;
use crate::{Error, Result};

/// The consent service: the API a Rust program links against (the `http`
/// adapter maps each method to an endpoint).
pub struct ConsentService<S> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    pseudonym_key: Option<Arc<PseudonymKey>>,
    retention: Option<chrono::Duration>,
}

impl<S> Clone for ConsentService<S> {
    fn clone(&self) -> Self {
        ConsentService {
            store: Arc::clone(&self.store),
            clock: Arc::clone(&self.clock),
            pseudonym_key: self.pseudonym_key.clone(),
            retention: self.retention,
        }
    }
}

impl<S> std::fmt::Debug for ConsentService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsentService").finish_non_exhaustive()
    }
}

/// A request field as sent. Values are never trimmed: the subject `" u1"`
/// of an acceptance must be the subject `" u1"` of a later to-accept.
fn text(v: Option<&String>) -> String {
    v.cloned().unwrap_or_default()
}

fn consent_not_found(id: &str) -> Error {
    Error::new(
        ErrorCode::ConsentNotFound,
        format!("there is no consent {id:?} in this project"),
    )
}

impl<S: ConsentStore> ConsentService<S> {
    /// A service over `store`, taking "now" from `clock`.
    pub fn new(store: Arc<S>, clock: Arc<dyn Clock>) -> Self {
        ConsentService {
            store,
            clock,
            pseudonym_key: None,
            retention: None,
        }
    }

    /// The service with a retention period: how long an acceptance's
    /// personal data is kept after it ended (withdrawn or expired); see
    /// [`purge_retention`](Self::purge_retention).
    #[must_use]
    pub fn with_retention(mut self, retention: chrono::Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// The service with the key of erasure's pseudonyms
    /// ([`erase_subject`](Self::erase_subject)); without one, erasure is
    /// refused.
    #[must_use]
    pub fn with_pseudonym_key(mut self, key: PseudonymKey) -> Self {
        self.pseudonym_key = Some(Arc::new(key));
        self
    }

    /// Now, by the service's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The store.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    async fn consents_of_app(&self, project: &str, app: &str) -> Result<Vec<Consent>> {
        let records = self.store.consents_of_app(project, app).await?;
        Ok(records.iter().map(Consent::from_record).collect())
    }

    /// The privacy notices the consents reference (each once).
    async fn notices_of(&self, project: &str, consents: &[Consent]) -> Result<Vec<PrivacyNotice>> {
        let mut ids: Vec<&str> = consents
            .iter()
            .map(|c| c.privacy_notice_ref.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(r) = self
                .store
                .content(project, ContentType::PrivacyNotice, id)
                .await?
            {
                out.push(PrivacyNotice::from_record(&r));
            }
        }
        Ok(out)
    }

    async fn acceptance_versions(
        &self,
        project: &str,
        subject: &str,
    ) -> Result<Vec<AcceptanceVersion>> {
        let records = self.store.acceptance_versions(project, subject).await?;
        Ok(records.iter().map(AcceptanceVersion::from_record).collect())
    }

    /// Endpoint 1: the offered consents of `app` (`PUBLISHED`, with a
    /// `PUBLISHED` privacy notice) that `data_subject` still has to accept,
    /// each with its [`Reason`](crate::core::consent::Reason).
    pub async fn to_accept(
        &self,
        project: &str,
        app: &str,
        data_subject: &str,
    ) -> Result<Vec<ToAccept>> {
        validate::subject_query(app, data_subject).into_result()?;
        let consents = self.consents_of_app(project, app).await?;
        let notices = self.notices_of(project, &consents).await?;
        let versions = self.acceptance_versions(project, data_subject).await?;
        let now = self.clock.now();
        let acceptances = rules::acceptances_at(&versions, now);
        Ok(rules::to_accept(&consents, &notices, &acceptances, now))
    }

    /// Endpoint 2: one `PUBLISHED` privacy notice. Unknown id, or a notice
    /// that is not `PUBLISHED` (a draft is not shown to data subjects, a
    /// retired notice no longer applies; the content store still serves
    /// both): [`NotFound`](crate::ErrorKind::NotFound)
    /// `privacy_notice_not_found`.
    pub async fn privacy_notice(&self, project: &str, id: &str) -> Result<PrivacyNotice> {
        let found = if id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            None
        } else {
            self.store
                .content(project, ContentType::PrivacyNotice, id)
                .await?
                .map(|r| PrivacyNotice::from_record(&r))
        };
        match found {
            Some(n) if n.status == NoticeStatus::Published => Ok(n),
            _ => Err(Error::new(
                ErrorCode::PrivacyNoticeNotFound,
                format!("there is no published privacy notice {id:?} in this project"),
            )),
        }
    }

    /// Endpoint 3: records an acceptance as a `svc-consent-acceptance-v1`
    /// content record (so the content store lists it), pinning the consent
    /// revision and the privacy notice id and revision shown.
    ///
    /// Errors: missing or too long fields (422 `required`, `too_long`, all
    /// listed); unknown consent (404 `consent_not_found`); a consent that is
    /// not `PUBLISHED` (422 `consent_not_published`), whose privacy notice
    /// is not `PUBLISHED` (422 `privacy_notice_not_published`) or of
    /// another application (422 `consent_not_in_app`); purposes outside the
    /// consent's (422, each `unknown_purpose`).
    pub fn accept_consent<'a>(
        &'a self,
        project: &'a str,
        req: AcceptConsentRequest,
        actor: &'a str,
    ) -> impl Future<Output = Result<ConsentAcceptance>> + Send + 'a {
        // The request moves into the write's future at once: this future
        // holds that one and nothing else.
        let accepted = self.accept_consent_with_entry(project, req, actor);
        async move { Ok(ConsentAcceptance::from_record(&accepted.await?.0)) }
    }

    /// [`accept_consent`](Self::accept_consent), returning the stored
    /// record and what a receipt needs of its ledger entry
    /// ([`receipt::for_acceptance`](crate::core::consent::receipt::for_acceptance)),
    /// as the store's write handed it back: a receipt of the new
    /// acceptance reads nothing back. (`None` only from a store that does
    /// not hand entries back; [`acceptance_with_entry`](Self::acceptance_with_entry)
    /// then reads it.)
    pub async fn accept_consent_with_entry(
        &self,
        project: &str,
        req: AcceptConsentRequest,
        actor: &str,
    ) -> Result<(ContentRecord, Option<EntryRef>)> {
        crate::core::limits::check_project_id(project)?;
        validate::accept_consent(&req).into_result()?;
        let app = text(req.app.as_ref());
        let consent_id = text(req.consent_id.as_ref());
        let record = self
            .store
            .content(project, ContentType::Consent, &consent_id)
            .await?
            .ok_or_else(|| consent_not_found(&consent_id))?;
        let consent = Consent::from_record(&record);
        let notice = self
            .store
            .content(
                project,
                ContentType::PrivacyNotice,
                &consent.privacy_notice_ref,
            )
            .await?
            .map(|r| PrivacyNotice::from_record(&r));
        if let Some((code, message)) = integrity::not_offered(&consent, notice.as_ref()) {
            return Err(Error::invalid_field("consentId", code, message));
        }
        if consent.application != app {
            return Err(Error::invalid_field(
                "consentId",
                ErrorCode::ConsentNotInApp,
                format!("consent {consent_id:?} does not belong to application {app:?}"),
            ));
        }
        let (language, screen) = self
            .shown(project, &req, &record.data, notice.as_ref())
            .await?;
        let purposes = match req.purposes {
            None => consent.purposes.clone(),
            Some(asked) => {
                let mut p = Problems::new();
                integrity::unknown_purposes(
                    &consent,
                    asked.iter().map(String::as_str),
                    "purposes",
                    &mut p,
                );
                p.into_result()?;
                asked
            }
        };
        let now = self.clock.now();
        let expired = rules::expiry(now, consent.lifespan);
        let mut data = Map::new();
        let mut put = |k: &str, v: Value| {
            data.insert(k.to_owned(), v);
        };
        put("dataSubject", text(req.data_subject.as_ref()).into());
        put("consentId", consent_id.into());
        put("consentApplication", app.into());
        put("acceptanceDate", format_time(now).into());
        put("withdrawalDate", "".into());
        put("status", AcceptanceStatus::Accepted.as_str().into());
        put("purposes", purposes.into());
        put("expiredDate", expired.map(format_time).into());
        put("userAgent", text(req.user_agent.as_ref()).into());
        put("country", text(req.country.as_ref()).into());
        put("localIp", text(req.local_ip.as_ref()).into());
        put("osVersion", text(req.os_version.as_ref()).into());
        put("model", text(req.model.as_ref()).into());
        put(
            "deviceFingerprintId",
            text(req.device_fingerprint_id.as_ref()).into(),
        );
        put("note", req.note.unwrap_or_default().into());
        put("consentRevision", consent.revision.into());
        put("privacyNoticeId", consent.privacy_notice_ref.clone().into());
        put("privacyNoticeRevision", notice.map(|n| n.revision).into());
        put("language", language.into());
        if let Some(screen) = screen {
            put("formScreen", screen.into());
        }
        put("receivedDate", format_time(now).into());
        let write = ContentWrite {
            project_id: project.to_owned(),
            content_type: ContentType::ConsentAcceptance,
            id: Uuid::new_v4().to_string(),
            data,
            actor: actor.to_owned(),
            at: now,
        };
        // Boxed: a SQL store's write future (its whole transaction) would
        // otherwise sit inside every caller's future.
        Box::pin(self.store.insert_content_with_entry(&write)).await
    }

    /// What an acceptance records of what was shown: the language of the
    /// text (the request's, else the notice's) and the screen (the
    /// request's, which must be a file of the project, else the consent's).
    async fn shown(
        &self,
        project: &str,
        req: &AcceptConsentRequest,
        consent: &Map<String, Value>,
        notice: Option<&PrivacyNotice>,
    ) -> Result<(String, Option<String>)> {
        let language = req
            .language
            .clone()
            .unwrap_or_else(|| notice.map_or("und", PrivacyNotice::language).to_owned());
        let screen = self
            .pinned_screen(project, req.form_screen.as_deref(), consent, "formScreen")
            .await?;
        Ok((language, screen))
    }

    /// Endpoint 4: one option per purpose code of each offered consent of
    /// `app`, with the subject's flag and the catalogue names.
    pub async fn purpose_options(
        &self,
        project: &str,
        app: &str,
        data_subject: &str,
    ) -> Result<Vec<PurposeOption>> {
        validate::subject_query(app, data_subject).into_result()?;
        let consents = self.consents_of_app(project, app).await?;
        let notices = self.notices_of(project, &consents).await?;
        let versions = self.acceptance_versions(project, data_subject).await?;
        let events = self
            .store
            .purpose_events(project, data_subject, Some(app))
            .await?;
        let mut codes: Vec<String> = consents
            .iter()
            .filter(|c| integrity::is_offered(c, rules::notice_of(c, &notices)))
            .flat_map(|c| c.purposes.iter().cloned())
            .collect();
        codes.sort();
        codes.dedup();
        let names: Vec<PurposeName> = if codes.is_empty() {
            Vec::new()
        } else {
            let records = self.store.purpose_names(project, &codes).await?;
            records.iter().map(PurposeName::from_record).collect()
        };
        let now = self.clock.now();
        let acceptances = rules::acceptances_at(&versions, now);
        Ok(rules::purpose_options(
            app,
            &consents,
            &notices,
            &acceptances,
            &events,
            &names,
            now,
        ))
    }

    /// Endpoint 5: records a purpose acceptance. The code must be a purpose
    /// of an offered consent of `app` (else 404 `purpose_not_found`); the
    /// first such consent's lifespan sets the expiry.
    pub async fn accept_purpose(
        &self,
        project: &str,
        req: PurposeRequest,
    ) -> Result<PurposeAcceptance> {
        crate::core::limits::check_project_id(project)?;
        validate::purpose_request(&req).into_result()?;
        let (app, subject, code) = (
            text(req.app.as_ref()),
            text(req.data_subject.as_ref()),
            text(req.purpose_code.as_ref()),
        );
        let consents = self.consents_of_app(project, &app).await?;
        let notices = self.notices_of(project, &consents).await?;
        let owner = rules::owning_consent(&consents, &notices, &code).ok_or_else(|| {
            Error::new(
                ErrorCode::PurposeNotFound,
                format!("{code:?} is not a purpose of an offered consent of application {app:?}"),
            )
        })?;
        let now = self.clock.now();
        let event = PurposeEvent {
            id: Uuid::new_v4().to_string(),
            project_id: project.to_owned(),
            data_subject: subject,
            app,
            purpose_code: code,
            status: AcceptanceStatus::Accepted,
            consent_id: Some(owner.id.clone()),
            acceptance_date: Some(now),
            expired_date: rules::expiry(now, owner.lifespan),
            withdrawal_date: None,
            recorded_at: now,
            seq: 0,
        };
        let stored = self.store.append_purpose_event(&event).await?;
        Ok(PurposeAcceptance::from(&stored))
    }

    /// Endpoint 6: records a purpose withdrawal — always, even without a
    /// prior acceptance (idempotent). It carries the acceptance and expiry
    /// dates of the latest grant it ends (`null` when none). The code must
    /// be a purpose of some consent of `app`, of any status (else 404
    /// `purpose_not_found`): a retired consent's purposes can still be
    /// withdrawn.
    pub async fn withdraw_purpose(
        &self,
        project: &str,
        req: PurposeRequest,
    ) -> Result<PurposeAcceptance> {
        crate::core::limits::check_project_id(project)?;
        validate::purpose_request(&req).into_result()?;
        let (app, subject, code) = (
            text(req.app.as_ref()),
            text(req.data_subject.as_ref()),
            text(req.purpose_code.as_ref()),
        );
        let consents = self.consents_of_app(project, &app).await?;
        if !consents.iter().any(|c| c.purposes.contains(&code)) {
            return Err(Error::new(
                ErrorCode::PurposeNotFound,
                format!("{code:?} is not a purpose of a consent of application {app:?}"),
            ));
        }
        let versions = self.acceptance_versions(project, &subject).await?;
        let events = self
            .store
            .purpose_events(project, &subject, Some(&app))
            .await?;
        let now = self.clock.now();
        let acceptances = rules::acceptances_at(&versions, now);
        let ids: HashSet<&str> = consents.iter().map(|c| c.id.as_str()).collect();
        let timeline = rules::purpose_timeline(&app, &code, &ids, &acceptances, &events, now);
        let grant = rules::latest_grant(&timeline);
        let event = PurposeEvent {
            id: Uuid::new_v4().to_string(),
            project_id: project.to_owned(),
            data_subject: subject.clone(),
            app: app.clone(),
            purpose_code: code.clone(),
            status: AcceptanceStatus::Withdrawn,
            consent_id: None,
            acceptance_date: grant.map(|g| g.acceptance_date.unwrap_or(g.at)),
            expired_date: grant.and_then(|g| g.expired_date),
            withdrawal_date: Some(now),
            recorded_at: now,
            seq: 0,
        };
        let stored = self.store.append_purpose_event(&event).await?;
        Ok(PurposeAcceptance::from(&stored))
    }

    /// Every record of a subject — each version of their consent
    /// acceptances and each purpose event — in the order recorded (a data
    /// subject access request, machine-readable).
    pub async fn history(&self, project: &str, data_subject: &str) -> Result<Vec<HistoryEntry>> {
        let acceptances = self
            .store
            .acceptance_versions(project, data_subject)
            .await?;
        let events = self
            .store
            .purpose_events(project, data_subject, None)
            .await?;
        Ok(rules::history(acceptances, events))
    }

    /// Which consents (with revision) and purposes of `app` the subject had
    /// agreed to at `at`, from the records as they stood then (see
    /// [`rules::state_at`]).
    pub async fn state_at(
        &self,
        project: &str,
        data_subject: &str,
        app: &str,
        at: DateTime<Utc>,
    ) -> Result<SubjectState> {
        validate::subject_query(app, data_subject).into_result()?;
        let consents = self.consents_of_app(project, app).await?;
        let versions = self.acceptance_versions(project, data_subject).await?;
        let events = self
            .store
            .purpose_events(project, data_subject, Some(app))
            .await?;
        Ok(rules::state_at(
            app,
            data_subject,
            &consents,
            &versions,
            &events,
            crate::core::clock::truncate_micros(at),
        ))
    }

    /// The integrity check of a project's stored records ([`check`]): every
    /// version of every privacy notice, consent and acceptance that breaks
    /// a consent rule, for a migration report. Reads everything; changes
    /// nothing.
    pub async fn check_records(&self, project: &str) -> Result<Vec<Finding>> {
        let mut histories = Histories::default();
        for (t, into) in [
            (ContentType::PrivacyNotice, &mut histories.notices),
            (ContentType::Consent, &mut histories.consents),
            (ContentType::ConsentAcceptance, &mut histories.acceptances),
        ] {
            let mut page = 0;
            loop {
                let query = ContentQuery::default().with_page(page, crate::store::MAX_PAGE_SIZE);
                let records = self.store.list_content(project, t, &query).await?;
                for r in &records.items {
                    into.push(self.store.content_versions(project, t, &r.id).await?);
                }
                if records.items.len() < crate::store::MAX_PAGE_SIZE as usize {
                    break;
                }
                page += 1;
            }
        }
        Ok(check::check(&histories))
    }
}
