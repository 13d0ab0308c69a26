//! What receipts are built from: the record of an acceptance version or a
//! purpose event, and its ledger entry, each read through an index (the
//! ledger's record index, the versions' primary key).

use super::cms::content_not_found;
use super::ConsentService;
use crate::core::consent::content::{ContentRecord, ContentType};
use crate::core::consent::ledger;
use crate::store::{ConsentStore, StoredEntry};
use crate::{Error, ErrorCode, Result};

/// What the receipt of an id is built from
/// ([`ConsentService::receipt_source`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ReceiptSource {
    /// The ledger entry of a purpose event (its text), which holds all a
    /// receipt says of it.
    PurposeEvent(String),
    /// An acceptance version and the text of its ledger entry (`None`: a
    /// record from before the ledger).
    Acceptance(ContentRecord, Option<String>),
}

/// The entry of `kind` of version `version` of record `id` among its
/// entries.
fn entry_of(entries: Vec<StoredEntry>, kind: &str, id: &str, version: i64) -> Option<String> {
    entries
        .into_iter()
        .find(|e| ledger::entry_is_of(&e.text, kind, id, version))
        .map(|e| e.text)
}

impl<S: ConsentStore> ConsentService<S> {
    /// What the receipt of `id` is built from: the purpose event `id`'s
    /// entry when `id` is a purpose event (and `version` is `None` or 1),
    /// else acceptance `id`'s version `version` (the latest when `None`)
    /// and its entry. Two indexed reads at most: the record's ledger
    /// entries, then the acceptance version. Unknown acceptance or
    /// version: 404 `content_not_found`.
    pub async fn receipt_source(
        &self,
        project: &str,
        id: &str,
        version: Option<i64>,
    ) -> Result<ReceiptSource> {
        let entries = self.store.ledger_entries_of(project, id).await?;
        if version.is_none_or(|v| v == 1) {
            if let Some(text) = entries
                .iter()
                .find(|e| ledger::entry_is_of(&e.text, "purposeEvent", id, 1))
            {
                return Ok(ReceiptSource::PurposeEvent(text.text.clone()));
            }
        }
        let record = self.acceptance_version(project, id, version).await?;
        let entry = entry_of(entries, "consentAcceptance", &record.id, record.version);
        Ok(ReceiptSource::Acceptance(record, entry))
    }

    /// The acceptance version `version` (the latest when `None`) of
    /// acceptance `id`, and its ledger entry (`None` when the ledger has
    /// none: a record from before the ledger). Unknown acceptance or
    /// version: 404 `content_not_found`.
    pub async fn acceptance_with_entry(
        &self,
        project: &str,
        id: &str,
        version: Option<i64>,
    ) -> Result<(ContentRecord, Option<String>)> {
        let record = self.acceptance_version(project, id, version).await?;
        // The record's own entries, through the ledger's record index.
        let entries = self.store.ledger_entries_of(project, &record.id).await?;
        let entry = entry_of(entries, "consentAcceptance", &record.id, record.version);
        Ok((record, entry))
    }

    /// The ledger entry of purpose event `id` (`None` when `id` is not a
    /// purpose event with an entry): one lookup of the ledger's record
    /// index.
    pub async fn purpose_event_entry(&self, project: &str, id: &str) -> Result<Option<String>> {
        let entries = self.store.ledger_entries_of(project, id).await?;
        Ok(entry_of(entries, "purposeEvent", id, 1))
    }

    /// Version `version` of acceptance `id` (the latest when `None`: one
    /// row of the versions' primary key).
    async fn acceptance_version(
        &self,
        project: &str,
        id: &str,
        version: Option<i64>,
    ) -> Result<ContentRecord> {
        let t = ContentType::ConsentAcceptance;
        if id.len() > crate::core::limits::MAX_CONTENT_ID_LEN {
            return Err(content_not_found(t, id));
        }
        match version {
            None => self
                .store
                .content(project, t, id)
                .await?
                .ok_or_else(|| content_not_found(t, id)),
            Some(v) => {
                let versions = self.store.content_versions(project, t, id).await?;
                if versions.is_empty() {
                    return Err(content_not_found(t, id));
                }
                versions
                    .into_iter()
                    .find(|r| r.version == v)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::ContentNotFound,
                            format!("acceptance {id:?} has no such version"),
                        )
                    })
            }
        }
    }
}
