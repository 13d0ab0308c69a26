//! The consent ledger in SQLite (see `migrations/sqlite/0050_consent_ledger.sql`):
//! entries are appended inside the caller's `BEGIN IMMEDIATE` transaction,
//! which already holds the database's write lock, so reading the head and
//! appending after it cannot race.

use sqlx::SqliteConnection;

use super::SqliteStore;
use std::collections::BTreeSet;

use crate::core::consent::erasure::{self, ErasureCounts};
use crate::core::consent::ledger::{LedgerHead, Unsealed};
use crate::core::consent::ContentType;
use crate::store::sql::calls::store_calls;
use crate::store::sql::content::{data_from_json, data_json};
use crate::store::sql::db_error;
use crate::store::{LedgerStore, StoredEntry};
use crate::Result;

/// Appends `entry` to its project's ledger and advances the head, inside
/// the caller's write transaction.
pub(super) async fn append(conn: &mut SqliteConnection, entry: &Unsealed) -> Result<()> {
    let head: Option<(i64, String)> =
        sqlx::query_as("SELECT position, hash FROM consent_ledger_head WHERE project_id = ?")
            .bind(&entry.project_id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_error)?;
    let sealed = entry.seal(head.as_ref().map(|(p, h)| (*p, h.as_str())));
    sqlx::query(
        "INSERT INTO consent_ledger (project_id, position, record_id, entry, salt) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(&entry.project_id)
    .bind(sealed.position)
    .bind(&entry.record_id)
    .bind(&sealed.text)
    .bind(&entry.salt)
    .execute(&mut *conn)
    .await
    .map_err(db_error)?;
    sqlx::query(
        "INSERT INTO consent_ledger_head (project_id, position, hash) VALUES (?, ?, ?) \
         ON CONFLICT (project_id) DO UPDATE SET position = excluded.position, hash = excluded.hash",
    )
    .bind(&entry.project_id)
    .bind(sealed.position)
    .bind(&sealed.hash)
    .execute(&mut *conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

store_calls!(impl LedgerStore for SqliteStore);

/// The calls of [`LedgerStore`], which `store_calls!` wraps.
impl SqliteStore {
    async fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEntry>> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT position, entry FROM consent_ledger \
             WHERE project_id = ? AND position > ? ORDER BY position LIMIT ?",
        )
        .bind(project)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(position, text)| StoredEntry { position, text })
            .collect())
    }

    async fn ledger_entries_of(&self, project: &str, record_id: &str) -> Result<Vec<StoredEntry>> {
        // consent_ledger_record_idx, then the few rows of the record.
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT position, entry FROM consent_ledger \
             WHERE project_id = ? AND record_id = ? ORDER BY position",
        )
        .bind(project)
        .bind(record_id)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(position, text)| StoredEntry { position, text })
            .collect())
    }

    async fn ledger_head(&self, project: &str) -> Result<Option<LedgerHead>> {
        let row: Option<(i64, String)> =
            sqlx::query_as("SELECT position, hash FROM consent_ledger_head WHERE project_id = ?")
                .bind(project)
                .fetch_optional(self.pool())
                .await
                .map_err(db_error)?;
        Ok(row.map(|(position, hash)| LedgerHead { position, hash }))
    }
    async fn erase_subject(
        &self,
        project: &str,
        subject: &str,
        pseudonym: &str,
    ) -> Result<ErasureCounts> {
        let mut w = self.write().await?;
        let conn = &mut *w.tx;
        let mut counts = ErasureCounts::default();
        let mut ids: BTreeSet<String> = BTreeSet::new();
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT id, version, data FROM content_version WHERE project_id = ? AND content_type = ? AND json_extract(data, '$.dataSubject') = ? AND json_type(data, '$.dataSubject') = 'text'",
        )
        .bind(project)
        .bind(ContentType::ConsentAcceptance.as_str())
        .bind(subject)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_error)?;
        for (id, version, data) in rows {
            let erased = erasure::erase_acceptance(&data_from_json(&data)?, pseudonym);
            sqlx::query(
                "UPDATE content_version SET data = ? WHERE project_id = ? AND content_type = ? AND id = ? AND version = ?",
            )
            .bind(data_json(&erased)?)
            .bind(project)
            .bind(ContentType::ConsentAcceptance.as_str())
            .bind(&id)
            .bind(version)
            .execute(&mut *conn)
            .await
            .map_err(db_error)?;
            counts.acceptance_versions += 1;
            ids.insert(id);
        }
        let events: Vec<String> = sqlx::query_scalar(
            "UPDATE purpose_event SET data_subject = ? WHERE project_id = ? AND data_subject = ? RETURNING id",
        )
        .bind(pseudonym)
        .bind(project)
        .bind(subject)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_error)?;
        counts.purpose_events = events.len() as u64;
        ids.extend(events);
        for id in &ids {
            counts.ledger_salts += sqlx::query(
                "UPDATE consent_ledger SET salt = NULL WHERE project_id = ? AND record_id = ? AND salt IS NOT NULL",
            )
            .bind(project)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_error)?
            .rows_affected();
        }
        w.commit().await?;
        Ok(counts)
    }
}
