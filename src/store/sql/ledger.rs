//! The consent ledger, for every SQL dialect (see
//! `migrations/*/0050_consent_ledger.sql`): entries are appended inside
//! the caller's write transaction after locking the project's head row
//! (PostgreSQL; SQLite's write transaction already holds the database's
//! write lock), so appends to one project's ledger are serialized and
//! gapless.

use std::collections::BTreeSet;

use super::content::{data_from_json, data_json};
use super::dialect::{acquire, execute, retry, row, rows, Abort, Conn, Dialect};
use super::query::{Json, Sql, SqlRow};
use crate::core::consent::erasure::{self, ErasureCounts};
use crate::core::consent::ledger::{LedgerHead, Unsealed};
use crate::core::consent::receipt::EntryRef;
use crate::core::consent::ContentType;
use crate::core::outbox::OutboxEvent;
use crate::store::outbox::erasure_time;
use crate::store::StoredEntry;
use crate::Result;

/// Appends `entry` to its project's ledger and advances the head, inside
/// the caller's write transaction (which then holds the head's row lock
/// until it ends); returns what a receipt needs of the entry. A project's
/// head row starts at position 0.
///
/// Two statements where a `WITH` may write (PostgreSQL), three in SQLite:
/// the head is created if missing, locked and read in one upsert (its
/// `DO UPDATE` changes nothing but takes the row lock, which `DO NOTHING`
/// would not, and returns the row either way); then the entry is inserted
/// and the head advanced.
pub(crate) async fn append<D: Dialect>(
    conn: &mut Conn<D>,
    entry: &Unsealed,
) -> Result<EntryRef, Abort> {
    const INSERT: &str =
        "INSERT INTO consent_ledger (project_id, position, record_id, entry, salt) \
         VALUES ($1, $2, $3, $4, $5)";
    const ADVANCE: &str =
        "UPDATE consent_ledger_head SET position = $2, hash = $6 WHERE project_id = $1";
    let lock = Sql::new(
        "INSERT INTO consent_ledger_head (project_id, position, hash) VALUES ($1, 0, '') \
         ON CONFLICT (project_id) DO UPDATE SET position = consent_ledger_head.position \
         RETURNING position, hash",
    )
    .bind(&entry.project_id);
    let head = row::<D>(conn, &lock)
        .await?
        .ok_or_else(|| super::corrupt("consent_ledger_head", "no row returned"))?;
    let (position, hash): (i64, String) = (head.col("position")?, head.col("hash")?);
    let sealed = entry.seal((position > 0).then_some((position, hash.as_str())));
    if D::WRITING_WITH {
        let both = Sql::new(format!("WITH appended AS ({INSERT}) {ADVANCE}"))
            .bind(&entry.project_id)
            .bind(sealed.position)
            .bind(&entry.record_id)
            .bind(&sealed.text)
            .bind(&entry.salt)
            .bind(&sealed.hash);
        execute::<D>(conn, &both).await?;
    } else {
        // Each statement binds only the parameters it names.
        let insert = Sql::new(INSERT)
            .bind(&entry.project_id)
            .bind(sealed.position)
            .bind(&entry.record_id)
            .bind(&sealed.text)
            .bind(&entry.salt);
        execute::<D>(conn, &insert).await?;
        let advance = Sql::new(ADVANCE.replace("$6", "$3"))
            .bind(&entry.project_id)
            .bind(sealed.position)
            .bind(&sealed.hash);
        execute::<D>(conn, &advance).await?;
    }
    Ok(entry.reference(&sealed))
}

/// [`LedgerStore::ledger_entries`](crate::store::LedgerStore::ledger_entries).
pub(crate) async fn ledger_entries<D: Dialect>(
    db: &D,
    project: &str,
    after: i64,
    limit: u32,
) -> Result<Vec<StoredEntry>> {
    let sql = Sql::new(
        "SELECT position, entry FROM consent_ledger \
         WHERE project_id = $1 AND position > $2 ORDER BY position LIMIT $3",
    )
    .bind(project)
    .bind(after)
    .bind(i64::from(limit));
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|row| {
                Ok(StoredEntry {
                    position: row.col("position")?,
                    text: row.col("entry")?,
                })
            })
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}

/// [`LedgerStore::ledger_entries_of`](crate::store::LedgerStore::ledger_entries_of):
/// `consent_ledger_record_idx`, then the few rows of the record sorted.
/// (Ordered by the bare column, SQLite's planner walks the primary key,
/// every entry of the project, to skip that sort.)
pub(crate) async fn ledger_entries_of<D: Dialect>(
    db: &D,
    project: &str,
    record_id: &str,
) -> Result<Vec<StoredEntry>> {
    let sql = Sql::new(format!(
        "SELECT position, entry FROM consent_ledger \
         WHERE project_id = $1 AND record_id = $2 ORDER BY {}position",
        D::NOT_BY_INDEX
    ))
    .bind(project)
    .bind(record_id);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|row| {
                Ok(StoredEntry {
                    position: row.col("position")?,
                    text: row.col("entry")?,
                })
            })
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}

/// [`LedgerStore::ledger_head`](crate::store::LedgerStore::ledger_head).
pub(crate) async fn ledger_head<D: Dialect>(db: &D, project: &str) -> Result<Option<LedgerHead>> {
    let sql = Sql::new(
        "SELECT position, hash FROM consent_ledger_head WHERE project_id = $1 AND position > 0",
    )
    .bind(project);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        match row::<D>(&mut conn, &sql).await? {
            Some(row) => Ok(Some(LedgerHead {
                position: row.col("position")?,
                hash: row.col("hash")?,
            })),
            None => Ok(None),
        }
    })
    .await
}

async fn try_erase<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
    pseudonym: &str,
) -> Result<ErasureCounts, Abort> {
    let mut tx = db.begin_write().await?;
    let mut counts = ErasureCounts::default();
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let mut acceptance_ids: BTreeSet<String> = BTreeSet::new();
    let acceptances = Sql::new(format!(
        "SELECT id, version, data FROM content_version \
         WHERE project_id = $1 AND content_type = $2 AND {} = $3 AND {}",
        D::json_text("data", "dataSubject"),
        D::json_is_string("data", "dataSubject"),
    ))
    .bind(project)
    .bind(ContentType::ConsentAcceptance.as_str())
    .bind(subject);
    for row in rows::<D>(tx.conn(), &acceptances).await? {
        let id: String = row.col("id")?;
        let data = data_from_json(&row.col::<Json<String>>("data")?.0)?;
        let erased = erasure::erase_acceptance(&data, pseudonym);
        let update = Sql::new(
            "UPDATE content_version SET data = $1 \
             WHERE project_id = $2 AND content_type = $3 AND id = $4 AND version = $5",
        )
        .bind(Json(data_json(&erased)?))
        .bind(project)
        .bind(ContentType::ConsentAcceptance.as_str())
        .bind(&id)
        .bind(row.col::<i64>("version")?);
        execute::<D>(tx.conn(), &update).await?;
        counts.acceptance_versions += 1;
        acceptance_ids.insert(id.clone());
        ids.insert(id);
    }
    let events = Sql::new(
        "UPDATE purpose_event SET data_subject = $1 \
         WHERE project_id = $2 AND data_subject = $3 RETURNING id",
    )
    .bind(pseudonym)
    .bind(project)
    .bind(subject);
    let events = rows::<D>(tx.conn(), &events).await?;
    counts.purpose_events = events.len() as u64;
    for row in &events {
        ids.insert(row.col("id")?);
    }
    for id in &ids {
        let forget = Sql::new(
            "UPDATE consent_ledger SET salt = NULL \
             WHERE project_id = $1 AND record_id = $2 AND salt IS NOT NULL",
        )
        .bind(project)
        .bind(id);
        counts.ledger_salts += execute::<D>(tx.conn(), &forget).await?;
    }
    super::history::after_erasure::<D>(tx.conn(), project, &acceptance_ids, subject, pseudonym)
        .await?;
    super::outbox::erase::<D>(tx.conn(), project, subject, pseudonym).await?;
    if !ids.is_empty() {
        let event = OutboxEvent::for_erasure(project, pseudonym, erasure_time());
        super::outbox::append::<D>(tx.conn(), &event).await?;
    }
    tx.commit().await?;
    Ok(counts)
}

/// [`LedgerStore::erase_subject`](crate::store::LedgerStore::erase_subject).
pub(crate) async fn erase_subject<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
    pseudonym: &str,
) -> Result<ErasureCounts> {
    retry::<D, _, _, _>(|| try_erase(db, project, subject, pseudonym)).await
}
