//! The SQLite store (feature `sqlite`): the embedded default.
//!
//! One database file, opened in WAL mode (readers never block the writer)
//! with foreign keys on, `synchronous = FULL` (an acknowledged write
//! survives a power cut, not only a crash of the process) and a busy
//! timeout, and migrated on open. Several processes may share the file: every
//! write transaction starts with `BEGIN IMMEDIATE`, which takes SQLite's
//! single write lock up front (waiting up to the busy timeout for another
//! process to release it), so a read-check-write inside it is atomic across
//! processes — that is how the quota guard works here.
//!
//! Within one process, writers also queue on an async mutex before asking
//! SQLite for the lock: waiting on the mutex is a wake-up, where waiting in
//! SQLite's busy handler is a sleep-and-poll, so a busy process keeps its
//! throughput.
//!
//! The consent half keeps every content version and purpose event
//! (append-only), numbered by one `seq` counter bumped in the same
//! transaction; content lists filter, sort and page in SQL (see
//! `consent.rs`).

mod campaign;
mod consent;
mod redemption;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use tokio::sync::{Mutex, MutexGuard};

use super::sql::{db_error, migrate_error};
use crate::Result;

/// The schema, embedded at compile time from `migrations/sqlite`.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a statement waits for another process's write lock before the
/// call fails with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections of a file store's pool. SQLite runs each on its own thread;
/// writes are serialised anyway, so a few suffice for concurrent reads.
const POOL_SIZE: u32 = 4;

/// A store on a SQLite database. Cheap to clone: clones share the
/// connection pool.
///
/// ```no_run
/// # async fn demo() -> accord::Result<()> {
/// use accord::store::sqlite::SqliteStore;
/// let store = SqliteStore::open("accord.db").await?; // created and migrated if needed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Queue of this process's writers (see the module docs).
    write_gate: Arc<Mutex<()>>,
}

// Every storage role, checked when the crate compiles.
const _: () = {
    const fn provides_every_role<S: crate::store::Store>() {}
    provides_every_role::<SqliteStore>();
};

/// A write transaction: `BEGIN IMMEDIATE`, holding this process's write gate
/// until it is committed or dropped (dropping rolls back).
pub(crate) struct WriteTx<'a> {
    pub(crate) tx: Transaction<'static, Sqlite>,
    _gate: MutexGuard<'a, ()>,
}

impl WriteTx<'_> {
    /// Commits.
    pub(crate) async fn commit(self) -> Result<()> {
        self.tx.commit().await.map_err(db_error)
    }
}

impl SqliteStore {
    /// Opens (creating it if missing) and migrates the database at
    /// `path_or_url`: a file path (`accord.db`, `/var/lib/accord/accord.db`)
    /// or a `sqlite:` URL (`sqlite://accord.db`, `sqlite:///abs/path.db`,
    /// `sqlite://accord.db?mode=rwc`). For a database in memory use
    /// [`open_in_memory`](SqliteStore::open_in_memory).
    pub async fn open(path_or_url: &str) -> Result<SqliteStore> {
        let options = if path_or_url.starts_with("sqlite:") {
            SqliteConnectOptions::from_str(path_or_url).map_err(db_error)?
        } else {
            SqliteConnectOptions::new().filename(path_or_url)
        };
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(POOL_SIZE)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        SqliteStore::migrated(pool).await
    }

    /// A fresh private database in memory, for tests and short-lived
    /// embedding: gone when the store (and every clone) is dropped.
    pub async fn open_in_memory() -> Result<SqliteStore> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(db_error)?
            .foreign_keys(true);
        // One connection that never closes: each in-memory connection would
        // otherwise be its own database, and closing the last one drops it.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        SqliteStore::migrated(pool).await
    }

    async fn migrated(pool: SqlitePool) -> Result<SqliteStore> {
        // SQLite has no migration lock. When two processes open a new file
        // at the same moment, the loser's migration fails on the winner's
        // tables; by then they are in place, so one more run finds every
        // migration applied.
        if MIGRATOR.run(&pool).await.is_err() {
            MIGRATOR.run(&pool).await.map_err(migrate_error)?;
        }
        Ok(SqliteStore {
            pool,
            write_gate: Arc::new(Mutex::new(())),
        })
    }

    /// Closes every connection, waiting for them to finish (optional: a
    /// dropped store closes its connections too, without waiting).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Starts a write transaction (see the module docs).
    pub(crate) async fn write(&self) -> Result<WriteTx<'_>> {
        let gate = self.write_gate.lock().await;
        let tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_error)?;
        Ok(WriteTx { tx, _gate: gate })
    }

    /// Starts a read transaction: a consistent snapshot for the two
    /// statements of a list (its page and its total).
    pub(crate) async fn read(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool.begin().await.map_err(db_error)
    }

    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}
