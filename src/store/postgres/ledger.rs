//! The consent ledger in PostgreSQL (see
//! `migrations/postgres/0050_consent_ledger.sql`): entries are appended
//! inside the caller's transaction after locking the project's head row,
//! so appends to one project's ledger are serialized and gapless.

use sqlx::PgConnection;

use super::PostgresStore;
use crate::consent::ledger::{LedgerHead, Unsealed};
use crate::store::sql::calls::store_calls;
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
}
