//! Accord's own migration history: the table `accord_migrations`, never
//! sqlx's `_sqlx_migrations`, so that a host application running its own
//! sqlx migrations on the same database (and schema) never sees Accord's
//! versions, nor Accord the host's.
//!
//! The migrations themselves are sqlx's (`sqlx::migrate!` embeds them and
//! their checksums); only the bookkeeping is ours. Each store applies the
//! pending ones in order, each in a transaction with its history row,
//! under a lock (PostgreSQL: an advisory lock; SQLite: the write lock of
//! one `BEGIN IMMEDIATE` transaction).
//!
//! **Databases migrated before the table existed** recorded Accord's
//! migrations in `_sqlx_migrations`. On its first run the runner moves
//! those rows — the ones whose version and checksum are exactly Accord's —
//! into `accord_migrations`, and deletes them from `_sqlx_migrations` (a
//! host's sqlx migrator would otherwise find versions it does not know).
//! The host's own rows are left alone.

use sqlx::migrate::{Migration, Migrator};
use sqlx::Connection as _;

use super::db_error;
use super::dialect::{Abort, Conn, Dialect};
use super::query::{Sql, SqlRow};
use crate::{Error, Result};

/// The up migrations of `migrator`, in version order.
pub(crate) fn ups(migrator: &sqlx::migrate::Migrator) -> Vec<&Migration> {
    let mut ups: Vec<&Migration> = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .collect();
    ups.sort_by_key(|m| m.version);
    ups
}

/// What to do about the applied history `applied` (version, checksum):
/// the migrations still to apply, or an error if an applied one was
/// changed since, or is unknown to this build (a newer Accord migrated
/// the database).
pub(crate) fn pending<'m>(
    ups: &[&'m Migration],
    applied: &[(i64, Vec<u8>)],
) -> Result<Vec<&'m Migration>> {
    for (version, checksum) in applied {
        match ups.iter().find(|m| m.version == *version) {
            Some(m) if m.checksum.as_ref() == checksum.as_slice() => {}
            Some(m) => {
                return Err(Error::internal(format!(
                    "migration {} ({}) was applied with other contents than this build's",
                    m.version, m.description
                )))
            }
            None => {
                return Err(Error::internal(format!(
                    "the database has migration {version}, which this build does not know (a newer Accord migrated it)"
                )))
            }
        }
    }
    Ok(ups
        .iter()
        .copied()
        .filter(|m| !applied.iter().any(|(v, _)| *v == m.version))
        .collect())
}

/// Whether the database has a table `name` (in the search path).
async fn has_table<D: Dialect>(conn: &mut Conn<D>, name: &str) -> Result<bool> {
    let sql = Sql::new(D::HAS_TABLE).bind(name);
    Ok(D::fetch_optional(conn, &sql)
        .await
        .map_err(db_error::<D>)?
        .is_some())
}

/// Writes the history row of `m` unless there is one.
async fn record<D: Dialect>(conn: &mut Conn<D>, m: &Migration) -> Result<()> {
    let sql = Sql::new(
        "INSERT INTO accord_migrations (version, description, checksum) VALUES ($1, $2, $3) \
         ON CONFLICT (version) DO NOTHING",
    )
    .bind(m.version)
    .bind(&*m.description)
    .bind(&*m.checksum);
    D::execute(conn, &sql).await.map_err(db_error::<D>)?;
    Ok(())
}

/// The (version, checksum) rows of history table `table`.
async fn history<D: Dialect>(conn: &mut Conn<D>, table: &str) -> Result<Vec<(i64, Vec<u8>)>> {
    let sql = Sql::new(format!(
        "SELECT version, checksum FROM {table} ORDER BY version"
    ));
    D::fetch_all(conn, &sql)
        .await
        .map_err(db_error::<D>)?
        .iter()
        .map(|row| Ok((row.col("version")?, row.col("checksum")?)))
        .collect()
}

/// Applies the pending migrations of `migrator` on `conn`, which the
/// caller holds under the dialect's migration lock: the history table,
/// rows adopted from `_sqlx_migrations`, then each pending migration in a
/// transaction with its history row (a savepoint, when the caller's lock
/// is a transaction itself).
pub(crate) async fn apply<D: Dialect>(conn: &mut Conn<D>, migrator: &Migrator) -> Result<()> {
    D::execute_script(conn, D::MIGRATION_HISTORY)
        .await
        .map_err(db_error::<D>)?;
    let ups = ups(migrator);
    if has_table::<D>(conn, "_sqlx_migrations").await? {
        // Accord's rows (same version and checksum) move, in one
        // transaction.
        let mut tx = conn.begin().await.map_err(db_error::<D>)?;
        let mut moved = 0;
        for m in &ups {
            let sql = Sql::new(
                "DELETE FROM _sqlx_migrations WHERE version = $1 AND checksum = $2 AND success",
            )
            .bind(m.version)
            .bind(&*m.checksum);
            if D::execute(&mut tx, &sql).await.map_err(db_error::<D>)? > 0 {
                record::<D>(&mut tx, m).await?;
                moved += 1;
            }
        }
        tx.commit().await.map_err(db_error::<D>)?;
        if moved > 0 {
            tracing::info!(
                moved,
                "moved Accord's migration history from _sqlx_migrations to accord_migrations"
            );
        }
    }
    let applied = history::<D>(conn, "accord_migrations").await?;
    for m in pending(&ups, &applied)? {
        let mut tx = conn.begin().await.map_err(db_error::<D>)?;
        D::execute_script(&mut tx, &m.sql)
            .await
            .map_err(db_error::<D>)?;
        record::<D>(&mut tx, m).await?;
        tx.commit().await.map_err(db_error::<D>)?;
        tracing::info!(version = m.version, description = %m.description, "applied a migration");
    }
    // A database that held consent records before the history table
    // existed gets its history once, in one transaction.
    let mut tx = conn.begin().await.map_err(db_error::<D>)?;
    super::history::backfill::<D>(&mut tx)
        .await
        .map_err(Abort::into_error::<D>)?;
    tx.commit().await.map_err(db_error::<D>)?;
    Ok(())
}

/// The versions of the migrations of `migrator` not applied yet, without
/// applying any (the rows `_sqlx_migrations` holds for Accord count as
/// applied).
pub(crate) async fn pending_versions<D: Dialect>(
    conn: &mut Conn<D>,
    migrator: &Migrator,
) -> Result<Vec<i64>> {
    let ups = ups(migrator);
    let mut applied: Vec<(i64, Vec<u8>)> = Vec::new();
    for table in ["accord_migrations", "_sqlx_migrations"] {
        if !has_table::<D>(conn, table).await? {
            continue;
        }
        applied.extend(
            history::<D>(conn, table)
                .await?
                .into_iter()
                .filter(|(v, c)| {
                    table == "accord_migrations"
                        || ups
                            .iter()
                            .any(|m| m.version == *v && m.checksum.as_ref() == c.as_slice())
                }),
        );
    }
    Ok(pending(&ups, &applied)?.iter().map(|m| m.version).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn m(version: i64, sql: &'static str) -> Migration {
        Migration::new(
            version,
            Cow::Borrowed("m"),
            sqlx::migrate::MigrationType::Simple,
            Cow::Borrowed(sql),
            false,
        )
    }

    #[test]
    fn pending_is_what_is_not_applied_and_changes_are_refused() {
        let (a, b) = (
            m(1, "CREATE TABLE a (x INT)"),
            m(2, "CREATE TABLE b (x INT)"),
        );
        let ups = vec![&a, &b];
        let none = pending(&ups, &[]).unwrap();
        assert_eq!(none.iter().map(|m| m.version).collect::<Vec<_>>(), [1, 2]);
        let one = pending(&ups, &[(1, a.checksum.to_vec())]).unwrap();
        assert_eq!(one.iter().map(|m| m.version).collect::<Vec<_>>(), [2]);
        assert!(pending(&ups, &[(1, b.checksum.to_vec())]).is_err());
        assert!(pending(&ups, &[(9, vec![])]).is_err());
    }
}
