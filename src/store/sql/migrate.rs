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

use sqlx::migrate::Migration;

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
