//! Content records and purpose events in memory: the reference model of
//! the consent store contract (see [`crate::store::ConsentStore`]).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::history::History;
use super::{lock, MemoryStore};
use crate::core::consent::erasure::{self, ErasureCounts};
use crate::core::consent::history::{self, HistoryRow};
use crate::core::consent::ledger::{self, LedgerHead, Unsealed};
use crate::core::consent::receipt::EntryRef;
use crate::core::consent::{ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent};
use crate::core::outbox::OutboxEvent;
use crate::store::ledger_switch;
use crate::store::{ConsentLedger, ContentStore, LedgerStore, Page, StoredEntry};
use crate::{Error, ErrorCode, Result};

mod history_store;

/// The consent half of the memory store.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The last `seq` assigned.
    seq: i64,
    /// Per project.
    projects: HashMap<String, Project>,
}

/// Every version of every record of a project, oldest first, by (type, id).
type Content = BTreeMap<(ContentType, String), Vec<ContentRecord>>;

#[derive(Debug, Default)]
struct Project {
    /// Every version of every record, oldest first, by (type, id).
    content: Content,
    /// Purpose events in append order.
    events: Vec<PurposeEvent>,
    /// The consent ledger, in position order.
    ledger: Vec<LedgerRow>,
    /// Its last entry.
    head: Option<LedgerHead>,
    /// Ledger entries (indexes into `ledger`) by record id.
    ledger_of: HashMap<String, Vec<usize>>,
    /// The subjects' histories as rows.
    history: History,
}

/// One ledger entry as kept: its text and the salt of its commitment
/// (`None` once erased); `Project::ledger_of` finds a record's entries.
#[derive(Debug)]
struct LedgerRow {
    position: i64,
    text: String,
    salt: Option<String>,
}

impl Project {
    /// Every record of a type, by id, with its versions (oldest first).
    fn of_type(&self, t: ContentType) -> impl Iterator<Item = (&str, &[ContentRecord])> {
        self.content
            .range((t, String::new())..)
            .take_while(move |((ty, _), _)| *ty == t)
            .map(|((_, id), versions)| (id.as_str(), versions.as_slice()))
    }

    /// Current versions of a type.
    fn current(&self, t: ContentType) -> impl Iterator<Item = &ContentRecord> {
        self.of_type(t).filter_map(|(_, versions)| versions.last())
    }
}

impl Project {
    /// Appends the ledger entry of a record appended in the same critical
    /// section.
    fn append_ledger(&mut self, entry: &Unsealed) -> EntryRef {
        let sealed = entry.seal(self.head.as_ref().map(|h| (h.position, h.hash.as_str())));
        let reference = entry.reference(&sealed);
        self.head = Some(LedgerHead {
            position: sealed.position,
            hash: sealed.hash,
        });
        self.ledger_of
            .entry(entry.record_id.clone())
            .or_default()
            .push(self.ledger.len());
        self.ledger.push(LedgerRow {
            position: sealed.position,
            text: sealed.text,
            salt: Some(entry.salt.clone()),
        });
        reference
    }

    /// Appends the ledger entry of acceptance version `record` (none for
    /// other content types).
    fn append_acceptance(&mut self, record: &ContentRecord) -> Option<EntryRef> {
        (record.content_type == ContentType::ConsentAcceptance && ledger_switch::on())
            .then(|| self.append_ledger(&ledger::for_acceptance(record, ledger::new_salt())))
    }

    /// The ledger entries of a record.
    fn ledger_rows_of(&self, record_id: &str) -> impl Iterator<Item = &LedgerRow> {
        self.ledger_of
            .get(record_id)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.ledger.get(i))
    }

    /// Forgets the salts of a record's ledger entries; how many it forgot.
    fn forget_salts(&mut self, record_id: &str) -> u64 {
        let mut n = 0;
        for &i in self.ledger_of.get(record_id).into_iter().flatten() {
            if let Some(row) = self.ledger.get_mut(i) {
                if row.salt.take().is_some() {
                    n += 1;
                }
            }
        }
        n
    }

    /// Each acceptance of the project, by id, with its history rows.
    fn acceptance_rows(&self) -> impl Iterator<Item = (&str, Vec<HistoryRow>)> {
        self.of_type(ContentType::ConsentAcceptance)
            .map(|(id, versions)| {
                let (consent, notice) = pinned(&self.content, versions);
                (id, history::acceptance_rows(versions, consent, notice))
            })
    }

    /// Recomputes the history rows of acceptance `id`.
    fn refresh_acceptance(&mut self, id: &str) {
        let versions = versions(
            &self.content,
            ContentType::ConsentAcceptance,
            Some(id.to_owned()),
        );
        let (consent, notice) = pinned(&self.content, versions);
        self.history
            .refresh_acceptance(id, versions, consent, notice);
    }

    /// Keeps the history after a content version was appended: an
    /// acceptance's rows are recomputed, and so are those of every
    /// acceptance pinning a consent or notice with a new version.
    fn after_content(&mut self, record: &ContentRecord) {
        match record.content_type {
            ContentType::ConsentAcceptance => self.refresh_acceptance(&record.id),
            t @ (ContentType::Consent | ContentType::PrivacyNotice) => {
                for id in self.history.pinned_by(t, &record.id) {
                    self.refresh_acceptance(&id);
                }
            }
            ContentType::Purpose => {}
        }
    }
}

/// Every version of record `id` of type `t` in `content`; none without an
/// id.
fn versions(content: &Content, t: ContentType, id: Option<String>) -> &[ContentRecord] {
    id.and_then(|id| content.get(&(t, id)))
        .map_or(&[], Vec::as_slice)
}

/// The versions of the consent and of the notice that an acceptance's
/// `versions` pin.
fn pinned<'a>(
    content: &'a Content,
    versions: &[ContentRecord],
) -> (&'a [ContentRecord], &'a [ContentRecord]) {
    let (consent, notice) = history::pinned_ids(versions);
    (
        self::versions(content, ContentType::Consent, consent),
        self::versions(content, ContentType::PrivacyNotice, notice),
    )
}

impl State {
    fn next_seq(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    fn project(&self, project: &str) -> Option<&Project> {
        self.projects.get(project)
    }
}

fn str_is(r: &ContentRecord, attribute: &str, value: &str) -> bool {
    r.data.get(attribute).and_then(Value::as_str) == Some(value)
}

impl MemoryStore {
    /// [`ContentStore::insert_content_with_entry`], in one critical
    /// section (nothing to await).
    fn insert(&self, write: &ContentWrite) -> Result<(ContentRecord, Option<EntryRef>)> {
        let mut s = lock(&self.consent);
        let key = (write.content_type, write.id.clone());
        let exists = s
            .project(&write.project_id)
            .is_some_and(|p| p.content.contains_key(&key));
        if exists {
            return Err(Error::new(
                ErrorCode::DuplicateContentId,
                "a content record with this id already exists",
            ));
        }
        let seq = s.next_seq();
        let record = ContentRecord {
            id: write.id.clone(),
            project_id: write.project_id.clone(),
            content_type: write.content_type,
            version: 1,
            seq,
            created_by: write.actor.clone(),
            last_modified_by: write.actor.clone(),
            created_date: write.at,
            last_modified_date: write.at,
            data: crate::core::wire::double_data(&write.data),
        };
        let p = s.projects.entry(write.project_id.clone()).or_default();
        p.content.insert(key, vec![record.clone()]);
        let entry = p.append_acceptance(&record);
        p.after_content(&record);
        if let Some(event) = OutboxEvent::for_acceptance(&record) {
            lock(&self.outbox).append(event);
        }
        Ok((record, entry))
    }
}

impl ContentStore for MemoryStore {
    async fn insert_content(&self, write: &ContentWrite) -> Result<ContentRecord> {
        Ok(self.insert(write)?.0)
    }

    async fn insert_content_with_entry(
        &self,
        write: &ContentWrite,
    ) -> Result<(ContentRecord, Option<EntryRef>)> {
        self.insert(write)
    }
    async fn replace_content(
        &self,
        write: &ContentWrite,
        expected_version: i64,
    ) -> Result<ContentRecord> {
        let mut s = lock(&self.consent);
        let key = (write.content_type, write.id.clone());
        let Some(current) = s
            .project(&write.project_id)
            .and_then(|p| p.content.get(&key))
            .and_then(|v| v.last())
        else {
            return Err(Error::new(
                ErrorCode::ContentNotFound,
                format!("there is no {} with id {:?}", write.content_type, write.id),
            ));
        };
        if current.version != expected_version {
            return Err(Error::new(
                ErrorCode::StaleVersion,
                format!(
                    "the record is at version {}, not {expected_version}",
                    current.version
                ),
            ));
        }
        let mut record = ContentRecord {
            version: current.version + 1,
            last_modified_by: write.actor.clone(),
            last_modified_date: write.at,
            data: crate::core::wire::double_data(&write.data),
            ..current.clone()
        };
        record.seq = s.next_seq();
        if let Some(p) = s.projects.get_mut(&write.project_id) {
            if let Some(versions) = p.content.get_mut(&key) {
                versions.push(record.clone());
            }
            p.append_acceptance(&record);
            p.after_content(&record);
        }
        if let Some(event) = OutboxEvent::for_acceptance(&record) {
            lock(&self.outbox).append(event);
        }
        Ok(record)
    }

    async fn content(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> Result<Option<ContentRecord>> {
        let s = lock(&self.consent);
        Ok(s.project(project)
            .and_then(|p| p.content.get(&(content_type, id.to_owned())))
            .and_then(|v| v.last())
            .cloned())
    }

    async fn content_versions(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> Result<Vec<ContentRecord>> {
        let s = lock(&self.consent);
        Ok(s.project(project)
            .and_then(|p| p.content.get(&(content_type, id.to_owned())))
            .cloned()
            .unwrap_or_default())
    }

    async fn list_content(
        &self,
        project: &str,
        content_type: ContentType,
        query: &ContentQuery,
    ) -> Result<Page<ContentRecord>> {
        let s = lock(&self.consent);
        let mut all: Vec<ContentRecord> = s
            .project(project)
            .map(|p| {
                p.current(content_type)
                    .filter(|r| query.matches(r))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        drop(s);
        all.sort_by(|a, b| query.compare(a, b));
        Ok(Page::slice(all, query.page, query.size))
    }
}

impl ConsentLedger for MemoryStore {
    async fn consents_of_app(&self, project: &str, app: &str) -> Result<Vec<ContentRecord>> {
        let s = lock(&self.consent);
        let mut all: Vec<ContentRecord> = s
            .project(project)
            .map(|p| {
                p.current(ContentType::Consent)
                    .filter(|r| str_is(r, "application", app))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        all.sort_by(|a, b| a.created_date.cmp(&b.created_date).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    async fn acceptance_versions(
        &self,
        project: &str,
        subject: &str,
    ) -> Result<Vec<ContentRecord>> {
        let s = lock(&self.consent);
        let mut all: Vec<ContentRecord> = s
            .project(project)
            .map(|p| {
                p.of_type(ContentType::ConsentAcceptance)
                    .flat_map(|(_, versions)| versions)
                    .filter(|r| str_is(r, "dataSubject", subject))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        all.sort_by_key(|r| r.seq);
        Ok(all)
    }

    async fn purpose_names(&self, project: &str, codes: &[String]) -> Result<Vec<ContentRecord>> {
        let s = lock(&self.consent);
        let mut all: Vec<ContentRecord> = s
            .project(project)
            .map(|p| {
                p.current(ContentType::Purpose)
                    .filter(|r| codes.iter().any(|c| str_is(r, "code", c)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        all.sort_by_key(|r| (r.last_modified_date, r.seq));
        Ok(all)
    }

    async fn append_purpose_event(&self, event: &PurposeEvent) -> Result<PurposeEvent> {
        let mut s = lock(&self.consent);
        let exists = s
            .project(&event.project_id)
            .is_some_and(|p| p.events.iter().any(|e| e.id == event.id));
        if exists {
            return Err(Error::new(
                ErrorCode::DuplicateEventId,
                "a purpose event with this id already exists",
            ));
        }
        let stored = PurposeEvent {
            seq: s.next_seq(),
            ..event.clone()
        };
        let p = s.projects.entry(event.project_id.clone()).or_default();
        p.events.push(stored.clone());
        p.history.add_purpose(&stored);
        p.append_ledger(&ledger::for_purpose_event(&stored, ledger::new_salt()));
        lock(&self.outbox).append(OutboxEvent::for_purpose_event(&stored));
        Ok(stored)
    }

    async fn purpose_events(
        &self,
        project: &str,
        subject: &str,
        app: Option<&str>,
    ) -> Result<Vec<PurposeEvent>> {
        let s = lock(&self.consent);
        Ok(s.project(project)
            .map(|p| {
                p.events
                    .iter()
                    .filter(|e| e.data_subject == subject)
                    .filter(|e| app.is_none_or(|a| e.app == a))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }
}

impl LedgerStore for MemoryStore {
    async fn ledger_entries_of(&self, project: &str, record_id: &str) -> Result<Vec<StoredEntry>> {
        let s = lock(&self.consent);
        Ok(s.project(project)
            .map(|p| {
                p.ledger_rows_of(record_id)
                    .map(|r| StoredEntry {
                        position: r.position,
                        text: r.text.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEntry>> {
        let s = lock(&self.consent);
        Ok(s.project(project)
            .map(|p| {
                let start = p.ledger.partition_point(|r| r.position <= after);
                p.ledger[start..]
                    .iter()
                    .take(limit as usize)
                    .map(|r| StoredEntry {
                        position: r.position,
                        text: r.text.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn ledger_head(&self, project: &str) -> Result<Option<LedgerHead>> {
        let s = lock(&self.consent);
        Ok(s.project(project).and_then(|p| p.head.clone()))
    }

    async fn erase_subject(
        &self,
        project: &str,
        subject: &str,
        pseudonym: &str,
    ) -> Result<ErasureCounts> {
        let mut s = lock(&self.consent);
        let mut counts = ErasureCounts::default();
        let Some(p) = s.projects.get_mut(project) else {
            return Ok(counts);
        };
        let mut ids = std::collections::BTreeSet::new();
        for ((t, id), versions) in &mut p.content {
            if *t != ContentType::ConsentAcceptance {
                continue;
            }
            for v in versions
                .iter_mut()
                .filter(|v| str_is(v, "dataSubject", subject))
            {
                v.data = erasure::erase_acceptance(&v.data, pseudonym);
                counts.acceptance_versions += 1;
                ids.insert(id.clone());
            }
        }
        for id in &ids {
            p.refresh_acceptance(id);
        }
        for e in p.events.iter_mut().filter(|e| e.data_subject == subject) {
            pseudonym.clone_into(&mut e.data_subject);
            counts.purpose_events += 1;
            ids.insert(e.id.clone());
        }
        p.history.rename_purposes(subject, pseudonym);
        for id in &ids {
            counts.ledger_salts += p.forget_salts(id);
        }
        let mut outbox = lock(&self.outbox);
        outbox.erase(project, subject, pseudonym);
        if !ids.is_empty() {
            outbox.append(OutboxEvent::for_erasure(
                project,
                pseudonym,
                crate::store::outbox::erasure_time(),
            ));
        }
        Ok(counts)
    }
}
