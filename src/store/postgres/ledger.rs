//! The consent ledger in PostgreSQL (see
//! `migrations/postgres/0050_consent_ledger.sql`): entries are appended
//! inside the caller's transaction after locking the project's head row,
//! so appends to one project's ledger are serialized and gapless.

use sqlx::PgConnection;

use super::PostgresStore;
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
/// the caller's transaction (which then holds the head's row lock until it
/// ends).
pub(super) async fn append(conn: &mut PgConnection, entry: &Unsealed) -> Result<()> {
    sqlx::query(
        "INSERT INTO consent_ledger_head (project_id, position, hash) VALUES ($1, 0, '') \
         ON CONFLICT (project_id) DO NOTHING",
    )
    .bind(&entry.project_id)
    .execute(&mut *conn)
    .await
    .map_err(db_error)?;
    let (position, hash): (i64, String) = sqlx::query_as(
        "SELECT position, hash FROM consent_ledger_head WHERE project_id = $1 FOR UPDATE",
    )
    .bind(&entry.project_id)
    .fetch_one(&mut *conn)
    .await
    .map_err(db_error)?;
    let sealed = entry.seal((position > 0).then_some((position, hash.as_str())));
    sqlx::query(
        "INSERT INTO consent_ledger (project_id, position, record_id, entry, salt) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&entry.project_id)
    .bind(sealed.position)
    .bind(&entry.record_id)
    .bind(&sealed.text)
    .bind(&entry.salt)
    .execute(&mut *conn)
    .await
    .map_err(db_error)?;
    sqlx::query("UPDATE consent_ledger_head SET position = $2, hash = $3 WHERE project_id = $1")
        .bind(&entry.project_id)
        .bind(sealed.position)
        .bind(&sealed.hash)
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

store_calls!(impl LedgerStore for PostgresStore);

/// The calls of [`LedgerStore`], which `store_calls!` wraps.
impl PostgresStore {
    async fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEntry>> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT position, entry FROM consent_ledger \
             WHERE project_id = $1 AND position > $2 ORDER BY position LIMIT $3",
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
             WHERE project_id = $1 AND record_id = $2 ORDER BY position",
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
        let row: Option<(i64, String)> = sqlx::query_as(
            "SELECT position, hash FROM consent_ledger_head WHERE project_id = $1 AND position > 0",
        )
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
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let conn = &mut *tx;
        let mut counts = ErasureCounts::default();
        let mut ids: BTreeSet<String> = BTreeSet::new();
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT id, version, data::text FROM content_version WHERE project_id = $1 AND content_type = $2 AND data ->> 'dataSubject' = $3 AND jsonb_typeof(data -> 'dataSubject') = 'string'",
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
                "UPDATE content_version SET data = $1::jsonb WHERE project_id = $2 AND content_type = $3 AND id = $4 AND version = $5",
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
            "UPDATE purpose_event SET data_subject = $1 WHERE project_id = $2 AND data_subject = $3 RETURNING id",
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
                "UPDATE consent_ledger SET salt = NULL WHERE project_id = $1 AND record_id = $2 AND salt IS NOT NULL",
            )
            .bind(project)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_error)?
            .rows_affected();
        }
        tx.commit().await.map_err(db_error)?;
        Ok(counts)
    }
}
