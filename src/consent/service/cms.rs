//! The content-store operations of [`ConsentService`] (endpoints 7 to 14
//! and the purpose catalogue).

use serde_json::{Map, Value};
use uuid::Uuid;

use super::ConsentService;
use crate::consent::content::{ContentRecord, ContentType, ContentWrite};
use crate::consent::model::{Consent, PrivacyNotice};
use crate::consent::query::ContentQuery;
use crate::consent::validate::{self, Form};
use crate::error::Problems;
use crate::store::{ConsentStore, Page};
use crate::{Error, ErrorKind, Result};

/// How often a content replace is retried when another write got in
/// between reading the current version and appending the next.
const REPLACE_ATTEMPTS: usize = 3;

impl<S: ConsentStore> ConsentService<S> {
    /// Endpoints 9, 11, 13 (and the purpose catalogue): creates a content
    /// record from its `data`. Unknown type: 404 `content_type_not_found`.
    /// Invalid data: 422 listing every problem (see [`validate`]).
    ///
    /// Consents must name an existing privacy notice; acceptances an
    /// existing consent and only its purposes. An acceptance written without
    /// the pins gets them from the consent and notice as they are now.
    pub async fn create_content(
        &self,
        project: &str,
        content_type: &str,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        let t = ContentType::from_path(content_type)?;
        let (mut data, mut problems) = validate::content_data(t, Form::Create, &data);
        self.check_references(project, t, &mut data, None, &mut problems)
            .await?;
        problems.into_result()?;
        self.store
            .insert_content(&ContentWrite {
                project_id: project.to_owned(),
                content_type: t,
                id: Uuid::new_v4().to_string(),
                data,
                actor: actor.to_owned(),
                at: self.clock.now(),
            })
            .await
    }

    /// Endpoints 10, 12, 14: replaces the whole `data` of a record by
    /// appending a new version (the old ones stay, see
    /// [`content_versions`](Self::content_versions)). Attributes of the
    /// current version missing from the body become `null`; required ones
    /// missing are a 422. An acceptance keeps its `dataSubject` and
    /// `consentId` (422 `immutable`). For the acceptance-update response,
    /// use [`ContentRecord::reduced_envelope`].
    pub async fn replace_content(
        &self,
        project: &str,
        content_type: &str,
        id: &str,
        data: Value,
        actor: &str,
    ) -> Result<ContentRecord> {
        let t = ContentType::from_path(content_type)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let current = self.content(project, content_type, id).await?;
            let (mut new, mut problems) = validate::content_data(t, Form::Update, &data);
            self.check_references(project, t, &mut new, Some(&current), &mut problems)
                .await?;
            problems.into_result()?;
            for k in current.data.keys() {
                new.entry(k.clone()).or_insert(Value::Null);
            }
            let write = ContentWrite {
                project_id: project.to_owned(),
                content_type: t,
                id: id.to_owned(),
                data: new,
                actor: actor.to_owned(),
                at: self.clock.now(),
            };
            match self.store.replace_content(&write, current.version).await {
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < REPLACE_ATTEMPTS => {}
                other => return other,
            }
        }
    }

    /// Store-dependent checks of a content write, added to `problems`.
    async fn check_references(
        &self,
        project: &str,
        t: ContentType,
        data: &mut Map<String, Value>,
        current: Option<&ContentRecord>,
        problems: &mut Problems,
    ) -> Result<()> {
        let str_of = |data: &Map<String, Value>, k: &str| {
            data.get(k).and_then(Value::as_str).map(str::to_owned)
        };
        match t {
            ContentType::Consent => {
                if let Some(notice) = str_of(data, "privacyNoticeRef") {
                    let found = self
                        .store
                        .content(project, ContentType::PrivacyNotice, &notice)
                        .await?;
                    if found.is_none() {
                        problems.push(
                            "data.privacyNoticeRef",
                            "unknown_privacy_notice",
                            format!("there is no privacy notice {notice:?} in this project"),
                        );
                    }
                }
            }
            ContentType::ConsentAcceptance => {
                if let Some(current) = current {
                    for k in ["dataSubject", "consentId"] {
                        let (was, now) = (current.str(k), data.get(k).and_then(Value::as_str));
                        if now.is_some() && was != now {
                            problems.push(
                                format!("data.{k}"),
                                "immutable",
                                format!("an acceptance's {k} cannot change (it was {was:?})"),
                            );
                        }
                    }
                }
                let Some(consent_id) = str_of(data, "consentId") else {
                    return Ok(());
                };
                let Some(record) = self
                    .store
                    .content(project, ContentType::Consent, &consent_id)
                    .await?
                else {
                    problems.push(
                        "data.consentId",
                        "unknown_consent",
                        format!("there is no consent {consent_id:?} in this project"),
                    );
                    return Ok(());
                };
                let consent = Consent::from_record(&record);
                if let Some(Value::Array(codes)) = data.get("purposes") {
                    for (i, code) in codes.iter().enumerate() {
                        if code
                            .as_str()
                            .is_some_and(|c| !consent.purposes.iter().any(|p| p == c))
                        {
                            problems.push(
                                format!("data.purposes[{i}]"),
                                "unknown_purpose",
                                format!("{code} is not a purpose of consent {consent_id:?}"),
                            );
                        }
                    }
                }
                if current.is_none() {
                    self.pin(project, &consent, data).await?;
                }
            }
            ContentType::PrivacyNotice | ContentType::Purpose => {}
        }
        Ok(())
    }

    /// Fills the pins an acceptance was created without.
    async fn pin(
        &self,
        project: &str,
        consent: &Consent,
        data: &mut Map<String, Value>,
    ) -> Result<()> {
        let missing = |data: &Map<String, Value>, k: &str| data.get(k).is_none_or(Value::is_null);
        if missing(data, "consentRevision") {
            data.insert("consentRevision".into(), consent.revision.into());
        }
        if missing(data, "privacyNoticeId") {
            data.insert(
                "privacyNoticeId".into(),
                consent.privacy_notice_ref.clone().into(),
            );
        }
        if missing(data, "privacyNoticeRevision") {
            let notice_id = data
                .get("privacyNoticeId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let revision = self
                .store
                .content(project, ContentType::PrivacyNotice, &notice_id)
                .await?
                .map(|r| PrivacyNotice::from_record(&r).revision);
            data.insert("privacyNoticeRevision".into(), revision.into());
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
        self.store
            .content(project, t, id)
            .await?
            .ok_or_else(|| content_not_found(t, id))
    }

    /// Endpoints 7, 8: a page of current records, filtered and sorted (see
    /// [`crate::consent::query`]).
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
        let versions = self.store.content_versions(project, t, id).await?;
        if versions.is_empty() {
            return Err(content_not_found(t, id));
        }
        Ok(versions)
    }
}

fn content_not_found(t: ContentType, id: &str) -> Error {
    Error::not_found(
        "content_not_found",
        format!("there is no {t} with id {id:?} in this project"),
    )
}
