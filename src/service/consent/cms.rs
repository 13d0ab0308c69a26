//! The content-store operations of [`ConsentService`] (endpoints 7 to 14
//! and the purpose catalogue).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::ConsentService;
use crate::core::consent::content::{ContentRecord, ContentType, ContentWrite};
use crate::core::consent::integrity::{self, InForce};
use crate::core::consent::model::{Consent, PrivacyNotice};
use crate::core::consent::query::ContentQuery;
use crate::core::consent::validate::{self, Form};
use crate::core::error::Problems;
use crate::store::{ConsentStore, Page};
use crate::{Error, ErrorCode, ErrorKind, Result};

/// How often a replace that names no version is tried when other writers
/// keep appending between its read and its append. Each failed attempt
/// means another writer succeeded, so this bounds only a long burst of
/// writes to one record; past it the caller gets 503 and may retry.
const REPLACE_ATTEMPTS: usize = 64;

impl<S: ConsentStore> ConsentService<S> {
    /// Endpoints 9, 11, 13 (and the purpose catalogue): creates a content
    /// record from its `data`. Unknown type: 404 `content_type_not_found`.
    /// Invalid data: 422 listing every problem (see [`validate`]).
    ///
    /// Consents must name an existing privacy notice. An acceptance obeys
    /// the rules of the application-facing "accept consent" and gets the
    /// evidence the server owns ([`integrity::acceptance_create`]).
    pub async fn create_content(
        &self,
        project: &str,
        content_type: &str,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        crate::core::limits::check_project_id(project)?;
        let t = ContentType::from_path(content_type)?;
        self.create_with_id(project, t, Uuid::new_v4().to_string(), &data, actor)
            .await
    }

    /// Saves `data` as record `id` of `content_type` (a privacy notice, a
    /// consent or a purpose) exported from another database: created with
    /// that id if absent, replaced (a new version, under the integrity
    /// rules of [`replace_content`](Self::replace_content)) if its data
    /// differs, left alone if the same. Acceptances are not imported: they
    /// are evidence of what a person did where it was recorded (400
    /// `import_not_supported`).
    pub async fn import_content(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        data: Value,
        actor: &str,
    ) -> Result<crate::service::campaign::Imported> {
        use crate::service::campaign::Imported;
        crate::core::limits::check_project_id(project)?;
        let t = ContentType::from_path(content_type)?;
        if t == ContentType::ConsentAcceptance {
            return Err(Error::new(
                ErrorCode::ImportNotSupported,
                "acceptances are not imported: they stay where they were recorded",
            ));
        }
        if id.trim().is_empty() || id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            return Err(Error::new(
                ErrorCode::InvalidContentId,
                format!(
                    "a content id is 1 to {} bytes",
                    crate::core::limits::MAX_CONTENT_ID_LEN
                ),
            ));
        }
        match self.store.content(project, t, id).await? {
            Some(current) if Value::Object(current.data.clone()) == data => Ok(Imported::Unchanged),
            Some(_) => {
                self.replace(project, content_type, id, None, data, actor)
                    .await?;
                Ok(Imported::Updated)
            }
            None => {
                self.create_with_id(project, t, id.to_owned(), &data, actor)
                    .await?;
                Ok(Imported::Created)
            }
        }
    }

    async fn create_with_id(
        &self,
        project: &str,
        t: ContentType,
        id: String,
        data: &Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        let (mut data, mut problems) = validate::content_data(t, Form::Create, data);
        let now = self.clock.now();
        match t {
            ContentType::Consent => {
                self.check_notice_ref(project, &data, &mut problems).await?;
                self.check_form_screen(project, &data, "data.formScreen", &mut problems)
                    .await?;
            }
            ContentType::ConsentAcceptance => {
                self.check_new_acceptance(project, &mut data, now, &mut problems)
                    .await?;
            }
            ContentType::PrivacyNotice | ContentType::Purpose => {}
        }
        problems.into_result()?;
        self.store
            .insert_content(&ContentWrite {
                project_id: project.to_owned(),
                content_type: t,
                id,
                data,
                actor: actor.to_owned(),
                at: now,
            })
            .await
    }

    /// Endpoints 10, 12, 14: replaces the whole `data` of a record by
    /// appending a new version (the old ones stay, see
    /// [`content_versions`](Self::content_versions)). Attributes of the
    /// current version missing from the body become `null`; required ones
    /// missing are a 422. For the acceptance-update response, use
    /// [`ContentRecord::reduced_envelope`].
    ///
    /// The caller names no version, so the last writer wins: a write that
    /// another one overtook between its read and its append is validated
    /// again against the newer version and appended after it (both stay in
    /// the history); after 64 such rounds in a row the
    /// answer is [`Unavailable`](ErrorKind::Unavailable) `write_contention`
    /// (retry). To refuse instead, use
    /// [`replace_content_if`](Self::replace_content_if).
    ///
    /// The integrity rules apply ([`integrity`]): an acceptance only moves
    /// `ACCEPTED` → `WITHDRAWN`, its evidence is kept and cannot change (422
    /// `invalid_transition`, `immutable`); revisions of consents and notices
    /// do not decrease, and a consent's purposes, application and notice
    /// change only with a new revision (422 `revision_decreased`,
    /// `revision_required`).
    pub async fn replace_content(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        crate::core::limits::check_project_id(project)?;
        self.replace(project, content_type, id, None, data, actor)
            .await
    }

    /// As [`replace_content`](Self::replace_content), only if the record's
    /// current version is `expected_version` (an HTTP `If-Match`); else 409
    /// `stale_version`, and nothing is written.
    pub async fn replace_content_if(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        expected_version: i64,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        crate::core::limits::check_project_id(project)?;
        self.replace(
            project,
            content_type,
            id,
            Some(expected_version),
            data,
            actor,
        )
        .await
    }

    async fn replace(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        expected: Option<i64>,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        let t = ContentType::from_path(content_type)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let current = self.content(project, content_type, id).await?;
            if let Some(expected) = expected {
                if current.version != expected {
                    return Err(stale_version(current.version, expected));
                }
            }
            let now = self.clock.now();
            let (body, mut problems) = validate::content_data(t, Form::Update, &data);
            let new = self
                .next_data(project, t, &body, &current, now, &mut problems)
                .await?;
            problems.into_result()?;
            let write = ContentWrite {
                project_id: project.to_owned(),
                content_type: t,
                id: id.to_owned(),
                data: new,
                actor: actor.to_owned(),
                at: now,
            };
            match self.store.replace_content(&write, current.version).await {
                Err(e) if e.kind() == ErrorKind::Conflict && expected.is_none() => {
                    if attempt >= REPLACE_ATTEMPTS {
                        return Err(Error::new(
                            ErrorCode::WriteContention,
                            "too many concurrent writes to this record; retry",
                        ));
                    }
                }
                other => return other,
            }
        }
    }

    /// The `data` of the version after `current`, from a validated update
    /// `body`, with the store-dependent and integrity problems added.
    async fn next_data(
        &self,
        project: &str,
        t: ContentType,
        body: &Map<String, Value>,
        current: &ContentRecord,
        now: DateTime<Utc>,
        problems: &mut Problems,
    ) -> Result<Map<String, Value>> {
        if t == ContentType::ConsentAcceptance {
            return Ok(integrity::acceptance_update(
                body,
                &current.data,
                now,
                problems,
            ));
        }
        match t {
            ContentType::Consent => {
                self.check_notice_ref(project, body, problems).await?;
                self.check_form_screen(project, body, "data.formScreen", problems)
                    .await?;
                integrity::consent_update(body, &current.data, problems);
            }
            ContentType::PrivacyNotice => integrity::notice_update(body, &current.data, problems),
            ContentType::ConsentAcceptance | ContentType::Purpose => {}
        }
        let mut new = body.clone();
        for k in current.data.keys() {
            new.entry(k.clone()).or_insert(Value::Null);
        }
        Ok(new)
    }

    /// A consent's `privacyNoticeRef` names an existing notice.
    async fn check_notice_ref(
        &self,
        project: &str,
        data: &Map<String, Value>,
        problems: &mut Problems,
    ) -> Result<()> {
        let Some(notice) = data.get("privacyNoticeRef").and_then(Value::as_str) else {
            return Ok(());
        };
        if notice.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            return Ok(()); // already reported as too long
        }
        let found = self
            .store
            .content(project, ContentType::PrivacyNotice, notice)
            .await?;
        if found.is_none() {
            problems.push(
                "data.privacyNoticeRef",
                ErrorCode::UnknownPrivacyNotice,
                format!("there is no privacy notice {notice:?} in this project"),
            );
        }
        Ok(())
    }

    /// The rules of a new acceptance that need the store: its consent as
    /// in force now, and that consent's notice.
    async fn check_new_acceptance(
        &self,
        project: &str,
        data: &mut Map<String, Value>,
        now: DateTime<Utc>,
        problems: &mut Problems,
    ) -> Result<()> {
        let Some(consent_id) = data
            .get("consentId")
            .and_then(Value::as_str)
            .filter(|id| id.len() <= crate::core::limits::MAX_CONTENT_ID_LEN)
            .map(str::to_owned)
        else {
            return Ok(());
        };
        let versions = self
            .store
            .content_versions(project, ContentType::Consent, &consent_id)
            .await?;
        let notice_id = versions
            .last()
            .map(|r| Consent::from_record(r).privacy_notice_ref)
            .unwrap_or_default();
        let notice = self
            .store
            .content(project, ContentType::PrivacyNotice, &notice_id)
            .await?
            .map(|r| PrivacyNotice::from_record(&r));
        if let Some(consent) = versions.last() {
            let sent = data.get("formScreen").and_then(Value::as_str);
            match self
                .pinned_screen(project, sent, &consent.data, "data.formScreen")
                .await
            {
                Ok(Some(screen)) => {
                    data.insert("formScreen".to_owned(), screen.into());
                }
                Ok(None) => {}
                Err(e) if e.error_code() == ErrorCode::UnknownFile => {
                    for f in e.fields() {
                        problems.push(f.field.clone(), f.code, f.message.clone());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        match InForce::from_versions(&versions, notice) {
            Some(in_force) => integrity::acceptance_create(data, &in_force, now, problems),
            None => problems.push(
                "data.consentId",
                ErrorCode::UnknownConsent,
                format!("there is no consent {consent_id:?} in this project"),
            ),
        }
        Ok(())
    }

    /// The current version of a record. Unknown type: 404
    /// `content_type_not_found`; unknown id: 404 `content_not_found`.
    pub async fn content(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
    ) -> Result<ContentRecord> {
        let t = ContentType::from_path(content_type)?;
        if id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            // No record has such an id (the service chooses ids).
            return Err(content_not_found(t, id));
        }
        self.store
            .content(project, t, id)
            .await?
            .ok_or_else(|| content_not_found(t, id))
    }

    /// Endpoints 7, 8: a page of current records, filtered and sorted (see
    /// [`crate::core::consent::query`]).
    pub async fn list_content(
        &self,
        project: &str,
        content_type: &str,
        query: &ContentQuery,
    ) -> Result<Page<ContentRecord>> {
        let t = ContentType::from_path(content_type)?;
        query.check()?;
        self.store.list_content(project, t, query).await
    }

    /// Every version of a record, oldest first. Unknown id: 404
    /// `content_not_found`.
    pub async fn content_versions(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
    ) -> Result<Vec<ContentRecord>> {
        let t = ContentType::from_path(content_type)?;
        if id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            return Err(content_not_found(t, id));
        }
        let versions = self.store.content_versions(project, t, id).await?;
        if versions.is_empty() {
            return Err(content_not_found(t, id));
        }
        Ok(versions)
    }
}

pub(super) fn content_not_found(t: ContentType, id: &str) -> Error {
    let shown = if id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
        format!("of {} bytes", id.len())
    } else {
        format!("{id:?}")
    };
    Error::new(
        ErrorCode::ContentNotFound,
        format!("there is no {t} with id {shown} in this project"),
    )
}

fn stale_version(stored: i64, expected: i64) -> Error {
    Error::new(
        ErrorCode::StaleVersion,
        format!("the record is at version {stored}, not {expected}; read it again and repeat the change"),
    )
}
