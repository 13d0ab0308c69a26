//! Storage roles of the consent side.
//!
//! Two roles, combined in [`ConsentStore`]:
//!
//! - [`ContentStore`]: versioned content records of every content type
//!   (privacy notices, consents, consent acceptances, the purpose
//!   catalogue), with the list query of the content-store interface.
//! - [`ConsentLedger`]: the few indexed reads the consent rules need, and
//!   the append-only log of purpose events.
//!
//! # Contract for every backend
//!
//! - **Append-only.** A content write never changes a stored version: it
//!   appends version `n + 1`. Purpose events are only ever appended.
//! - **One order.** Every append (content version or purpose event) gets a
//!   `seq` strictly greater than every `seq` the store assigned before
//!   (one counter for both: a PostgreSQL sequence shared by both tables; in
//!   SQLite a one-row counter updated in the same transaction). The rules
//!   order records by (recorded time, `seq`).
//! - **Atomic writes are one call.** [`ContentStore::replace_content`]
//!   appends only if the current version is still the one the service
//!   validated against (`INSERT … SELECT … WHERE version = $expected`), so
//!   two concurrent PUTs cannot both build on the same version.
//! - **Lists in the database.** [`ContentStore::list_content`] filters,
//!   sorts and pages in the database with exactly the semantics documented
//!   in [`crate::core::consent::query`]; the memory store is the reference
//!   (`ContentQuery::matches` / `ContentQuery::compare`).
//! - **Indexed reads.** The [`ConsentLedger`] reads are by (project, type,
//!   one `data` attribute): suggested indexes, on the table of versions,
//!   `(project, type, (data->>'application'))` for consents,
//!   `(project, type, (data->>'dataSubject'))` for acceptances,
//!   `(project, type, (data->>'code'))` for the catalogue, and
//!   `(project, data_subject, app)` on purpose events.
//!
//! Attribute names reaching a store are checked by
//! [`ContentQuery::check`](crate::core::consent::ContentQuery::check) (letters,
//! digits and `_`).

use std::future::Future;

use chrono::{DateTime, Utc};

use super::Page;
use crate::core::consent::erasure::ErasureCounts;
use crate::core::consent::evidence::{HistoryQuery, SubjectEvent};
use crate::core::consent::history::ExpiredAcceptance;
use crate::core::consent::ledger::LedgerHead;
use crate::core::consent::receipt::EntryRef;
use crate::core::consent::{ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent};
use crate::Result;

/// Versioned content records.
pub trait ContentStore: Send + Sync {
    /// Appends version 1 of a new record: `created_by` = `last_modified_by`
    /// = `write.actor`, `created_date` = `last_modified_date` = `write.at`.
    /// An existing (project, type, id): [`Conflict`](crate::ErrorKind::Conflict)
    /// `duplicate_content_id`. Returns the stored version (with its `seq`).
    fn insert_content(
        &self,
        write: &ContentWrite,
    ) -> impl Future<Output = Result<ContentRecord>> + Send;

    /// [`insert_content`](Self::insert_content), also handing back what a
    /// receipt needs of the ledger entry the write appended in its
    /// transaction (an acceptance's), so that a receipt of a fresh
    /// acceptance reads nothing back. `None`: no entry (other content
    /// types), or a store that does not say (this default), whose entry
    /// the caller reads back.
    fn insert_content_with_entry(
        &self,
        write: &ContentWrite,
    ) -> impl Future<Output = Result<(ContentRecord, Option<EntryRef>)>> + Send {
        async move { Ok((self.insert_content(write).await?, None)) }
    }

    /// Appends version `expected_version + 1` with `write.data`, keeping
    /// `created_by`/`created_date` of the record, if its current version is
    /// still `expected_version`; else [`Conflict`](crate::ErrorKind::Conflict)
    /// `stale_version`. No such record: [`NotFound`](crate::ErrorKind::NotFound)
    /// `content_not_found`. Returns the new version.
    fn replace_content(
        &self,
        write: &ContentWrite,
        expected_version: i64,
    ) -> impl Future<Output = Result<ContentRecord>> + Send;

    /// The current (latest) version of a record.
    fn content(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> impl Future<Output = Result<Option<ContentRecord>>> + Send;

    /// Every version of a record, oldest first (empty when there is none).
    fn content_versions(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> impl Future<Output = Result<Vec<ContentRecord>>> + Send;

    /// A page of current versions of a type, filtered and sorted as
    /// [`crate::core::consent::query`] defines; `total` counts every match.
    fn list_content(
        &self,
        project: &str,
        content_type: ContentType,
        query: &ContentQuery,
    ) -> impl Future<Output = Result<Page<ContentRecord>>> + Send;
}

/// The reads the consent rules need, and the purpose-event log.
pub trait ConsentLedger: Send + Sync {
    /// Current versions of the consents whose `data.application` is `app`
    /// (any status), ordered by `createdDate` then `id`.
    fn consents_of_app(
        &self,
        project: &str,
        app: &str,
    ) -> impl Future<Output = Result<Vec<ContentRecord>>> + Send;

    /// Every version (not only the current ones) of every consent
    /// acceptance whose `data.dataSubject` is `subject`, ordered by `seq`.
    /// (The service keeps `dataSubject` of an acceptance unchanged across
    /// versions.)
    fn acceptance_versions(
        &self,
        project: &str,
        subject: &str,
    ) -> impl Future<Output = Result<Vec<ContentRecord>>> + Send;

    /// Current versions of the purpose-catalogue entries whose `data.code`
    /// is one of `codes`, ordered by `lastModifiedDate` then `seq`.
    fn purpose_names(
        &self,
        project: &str,
        codes: &[String],
    ) -> impl Future<Output = Result<Vec<ContentRecord>>> + Send;

    /// Appends a purpose event, assigning its `seq` (the value passed is
    /// ignored); returns it as stored. An existing event id in the project:
    /// [`Conflict`](crate::ErrorKind::Conflict) `duplicate_event_id`.
    fn append_purpose_event(
        &self,
        event: &PurposeEvent,
    ) -> impl Future<Output = Result<PurposeEvent>> + Send;

    /// The subject's purpose events — of `app` only when given — ordered by
    /// `seq`.
    fn purpose_events(
        &self,
        project: &str,
        subject: &str,
        app: Option<&str>,
    ) -> impl Future<Output = Result<Vec<PurposeEvent>>> + Send;
}

/// One stored entry of a project's consent ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// The position the store keeps it at.
    pub position: i64,
    /// The entry's text, exactly as stored.
    pub text: String,
}

/// The tamper-evident ledger of consent events ([`crate::core::consent::ledger`]).
///
/// Appending is not a call of its own: every store appends the entry of a
/// consent-acceptance version ([`ContentStore::insert_content`],
/// [`ContentStore::replace_content`]) and of a purpose event
/// ([`ConsentLedger::append_purpose_event`]) in the same transaction as the
/// record, and advances the project's [`LedgerHead`] with it.
pub trait LedgerStore: Send + Sync {
    /// Up to `limit` entries of the project after position `after`, in
    /// position order.
    fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<StoredEntry>>> + Send;

    /// Every entry about record `record_id` (an acceptance, one per
    /// version; a purpose event), in position order: one lookup of the
    /// ledger's record index, whatever the ledger's length.
    fn ledger_entries_of(
        &self,
        project: &str,
        record_id: &str,
    ) -> impl Future<Output = Result<Vec<StoredEntry>>> + Send;

    /// The project's last appended entry (`None`: no entry yet).
    fn ledger_head(&self, project: &str)
        -> impl Future<Output = Result<Option<LedgerHead>>> + Send;

    /// Erases a data subject, in one transaction: every version of their
    /// acceptances gets
    /// [`erase_acceptance`](crate::core::consent::erasure::erase_acceptance)`(data, pseudonym)`,
    /// their purpose events get `pseudonym` as subject, and the ledger
    /// entries of all those records lose their salt. The one exception to
    /// append-only: personal data must be removable (GDPR Art. 17), while
    /// the ledger — which never held it — is untouched.
    fn erase_subject(
        &self,
        project: &str,
        subject: &str,
        pseudonym: &str,
    ) -> impl Future<Output = Result<ErasureCounts>> + Send;
}

/// A data subject's history, paged in the store.
///
/// Every store keeps the events of
/// [`subject_events`](crate::core::consent::evidence::subject_events) so
/// that a page is one bounded read: the SQL stores keep one row per event
/// ([`crate::core::consent::history`]), written in the same transaction as
/// the records they come from (an acceptance version, a purpose event, a new
/// revision of a consent or notice, an erasure); the memory store, the
/// reference, derives them on each read.
pub trait HistoryStore: Send + Sync {
    /// The page of the subject's history `query` asks for, as
    /// `subject_events(…, now)` then
    /// [`HistoryQuery::page_of`](crate::core::consent::evidence::HistoryQuery::page_of)
    /// give it; `total` counts every matching event.
    fn subject_history(
        &self,
        project: &str,
        subject: &str,
        query: &HistoryQuery,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Page<SubjectEvent>>> + Send;

    /// Acceptances of the project past their lifespan at `now` — those
    /// whose history has an `EXPIRED` event at or before `now` — ordered by
    /// `expiredDate`, then as the history orders them; `total` counts them
    /// all.
    fn expired_acceptances(
        &self,
        project: &str,
        now: DateTime<Utc>,
        page: u32,
        size: u32,
    ) -> impl Future<Output = Result<Page<ExpiredAcceptance>>> + Send;

    /// Up to `limit` acceptances of the project (id and data subject, by
    /// id) that ended — withdrawn, or expired while accepted — before
    /// `before`, and whose subject is not a pseudonym yet: what a retention
    /// purge rewrites.
    fn ended_acceptances(
        &self,
        project: &str,
        before: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;

    /// Purges one acceptance, in one transaction: every version gets
    /// [`erase_acceptance`](crate::core::consent::erasure::erase_acceptance)`(data, pseudonym)`
    /// and its ledger entries lose their salt (as
    /// [`LedgerStore::erase_subject`] does for a whole subject); the
    /// ledger is untouched. Counts only what changed.
    fn purge_acceptance(
        &self,
        project: &str,
        id: &str,
        pseudonym: &str,
    ) -> impl Future<Output = Result<ErasureCounts>> + Send;
}

/// Everything the consent service needs from storage.
pub trait ConsentStore:
    ContentStore + ConsentLedger + LedgerStore + HistoryStore + super::FileStore
{
}

impl<T: ContentStore + ConsentLedger + LedgerStore + HistoryStore + super::FileStore> ConsentStore
    for T
{
}
