//! Opening the store of `--database-url` (every subcommand that needs a
//! database), the PostgreSQL pool flags, and random secrets.

use std::sync::Arc;
use std::time::Duration;

use super::{parse_duration, BoxError};
use crate::store::memory::MemoryStore;
use crate::store::postgres::{PostgresOptions, PostgresStore};
use crate::store::sqlite::SqliteStore;

/// The PostgreSQL pool (`accord::store::postgres::PostgresOptions`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PoolFlags {
    /// PostgreSQL: connections of the pool (default 10).
    #[arg(long, env = "ACCORD_PG_MAX_CONNECTIONS")]
    pub pg_max_connections: Option<u32>,
    /// PostgreSQL: how long a call waits for a connection before a 503
    /// (default 3s).
    #[arg(long, env = "ACCORD_PG_ACQUIRE_TIMEOUT", value_parser = parse_duration)]
    pub pg_acquire_timeout: Option<Duration>,
    /// PostgreSQL: the server's statement_timeout (default 3500ms, written
    /// in whole seconds here).
    #[arg(long, env = "ACCORD_PG_STATEMENT_TIMEOUT", value_parser = parse_duration)]
    pub pg_statement_timeout: Option<Duration>,
    /// PostgreSQL: groups of concurrent redeems committed side by side
    /// (default 4; see docs/operations.md)
    #[arg(long, env = "ACCORD_PG_GROUP_LEADERS", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub pg_group_leaders: Option<u16>,
}

impl PoolFlags {
    /// The pool options: the flags given, defaults for the others.
    pub fn options(&self, migrate: bool) -> PostgresOptions {
        let mut options = PostgresOptions::default();
        if let Some(n) = self.pg_max_connections {
            options.max_connections = n;
        }
        if let Some(t) = self.pg_acquire_timeout {
            options.acquire_timeout = t;
        }
        if let Some(t) = self.pg_statement_timeout {
            options.statement_timeout = t;
        }
        if let Some(n) = self.pg_group_leaders {
            options.group_leaders = usize::from(n);
        }
        options.migrate = migrate;
        options
    }
}

/// A store opened from a database URL.
pub(super) enum Opened {
    Memory(Arc<MemoryStore>),
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl Opened {
    /// Opens the store of `url`, migrating it if `migrate`.
    pub(super) async fn open(url: &str, pool: &PoolFlags, migrate: bool) -> Result<Self, BoxError> {
        if url.starts_with("memory:") {
            Ok(Opened::Memory(Arc::new(MemoryStore::new())))
        } else if url.starts_with("sqlite:") {
            let store = if migrate {
                SqliteStore::open(url).await?
            } else {
                SqliteStore::open_unmigrated(url).await?
            };
            Ok(Opened::Sqlite(Arc::new(store)))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let store = PostgresStore::connect_with(url, &pool.options(migrate)).await?;
            // A diagnostic: a server that cannot say does not stop the start.
            if let Ok(false) = store.autovacuum().await {
                tracing::warn!(
                    target: "accord::store",
                    "PostgreSQL's autovacuum is off: run VACUUM ANALYZE on Accord's tables \
                     regularly, or the planner takes growing tables for empty \
                     (docs/operations.md, \"PostgreSQL statistics\")"
                );
            }
            Ok(Opened::Postgres(Arc::new(store)))
        } else {
            Err(format!(
                "unsupported database URL {url:?}: use sqlite://FILE, postgres://… or memory:"
            )
            .into())
        }
    }

    /// The value kept under `name`, `value` stored first if none; `None`
    /// for the memory store (nothing is kept).
    pub(super) async fn setting_or_insert(
        &self,
        name: &str,
        value: &str,
    ) -> crate::Result<Option<String>> {
        match self {
            Opened::Memory(_) => Ok(None),
            Opened::Sqlite(s) => s.setting_or_insert(name, value).await.map(Some),
            Opened::Postgres(s) => s.setting_or_insert(name, value).await.map(Some),
        }
    }

    /// The value kept under `name`, if any.
    pub(super) async fn setting(&self, name: &str) -> crate::Result<Option<String>> {
        match self {
            Opened::Memory(_) => Ok(None),
            Opened::Sqlite(s) => s.setting(name).await,
            Opened::Postgres(s) => s.setting(name).await,
        }
    }
}

/// 32 random bytes in hex.
pub(super) fn random_secret() -> Result<String, BoxError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
    Ok(bytes.iter().fold(String::new(), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::PoolFlags;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        pool: PoolFlags,
    }

    #[test]
    fn group_leaders_flag_sets_the_option_within_its_range() {
        let default = Flags::try_parse_from(["accord"]).unwrap();
        assert_eq!(
            default.pool.options(true).group_leaders,
            crate::store::postgres::GROUP_LEADERS
        );
        let one = Flags::try_parse_from(["accord", "--pg-group-leaders", "1"]).unwrap();
        assert_eq!(one.pool.options(true).group_leaders, 1);
        for out in ["0", "65", "x"] {
            let err = Flags::try_parse_from(["accord", "--pg-group-leaders", out]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{out}");
        }
    }
}
