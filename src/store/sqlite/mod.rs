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
//! throughput. The queue is bounded like the lock: a writer that waits on
//! it longer than the busy timeout fails as
//! [`Unavailable`](crate::ErrorKind::Unavailable).
//!
//! **A caller going away never cuts a write.** Every write runs as a task
//! of its own, to completion (`crate::store::sql::calls`): a transaction is
//! never dropped halfway because an HTTP client closed its connection.
//! And a pooled connection of a file database is checked when it comes
//! back to the pool: one still inside a transaction — which would keep
//! SQLite's write lock, and make the next `BEGIN` on it fail — is closed
//! (closing rolls back), never handed out again.
//!
//! Readiness ([`Ping`](crate::store::Ping)) takes the write lock and lets
//! go of it: a store whose lock is held elsewhere is reported not ready,
//! although it still answers reads.
//!
//! The consent half keeps every content version and purpose event
//! (append-only), numbered by one `seq` counter bumped in the same
//! transaction; content lists filter, sort and page in SQL.
//!
//! The statements are the shared SQL implementation's
//! (`crate::store::sql`); what is SQLite's own — column types, the
//! quota guard, JSON access, error codes — is in `dialect.rs`.

mod dialect;

// Every store role, and the methods every SQL store has, from the shared
// implementation (`crate::store::sql`).
crate::store::sql::calls::store_calls!(SqliteStore);

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, SqliteConnection};
use tokio::sync::Mutex;

use super::sql::calls::detached;
use super::sql::dialect::{Abort, Dialect as _};
use super::sql::queue::RedeemQueue;
use super::sql::{db_error, migrate};
use crate::{Error, Result};

/// The schema, embedded at compile time from `migrations/sqlite`.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a statement waits for another process's write lock before the
/// call fails with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a readiness probe waits for the write lock before it reports
/// the store not ready.
const READY_TIMEOUT: Duration = Duration::from_secs(1);

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
    /// Redeems waiting to be committed in a group (see the module docs).
    redeems: RedeemQueue,
}

// Every storage role, checked when the crate compiles.
const _: () = {
    const fn provides_every_role<S: crate::store::Store>() {}
    provides_every_role::<SqliteStore>();
};

impl SqliteStore {
    /// Opens (creating it if missing) and migrates the database at
    /// `path_or_url`: a file path (`accord.db`, `/var/lib/accord/accord.db`)
    /// or a `sqlite:` URL (`sqlite://accord.db`, `sqlite:///abs/path.db`,
    /// `sqlite://accord.db?mode=rwc`). For a database in memory use
    /// [`open_in_memory`](SqliteStore::open_in_memory).
    pub async fn open(path_or_url: &str) -> Result<SqliteStore> {
        let store = SqliteStore::open_unmigrated(path_or_url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// [`open`](Self::open) without migrating: for a deploy step that
    /// checks or applies the migrations itself
    /// ([`pending_migrations`](Self::pending_migrations),
    /// [`migrate`](Self::migrate)).
    pub async fn open_unmigrated(path_or_url: &str) -> Result<SqliteStore> {
        let options = if path_or_url.starts_with("sqlite:") {
            SqliteConnectOptions::from_str(path_or_url).map_err(db_error::<SqliteStore>)?
        } else {
            SqliteConnectOptions::new().filename(path_or_url)
        };
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = pool_options()
            .max_connections(POOL_SIZE)
            .connect_with(options)
            .await
            .map_err(db_error::<SqliteStore>)?;
        Ok(SqliteStore::unmigrated(pool))
    }

    /// A fresh private database in memory, for tests and short-lived
    /// embedding: gone when the store (and every clone) is dropped.
    pub async fn open_in_memory() -> Result<SqliteStore> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(db_error::<SqliteStore>)?
            .foreign_keys(true);
        // One connection that never closes: each in-memory connection would
        // otherwise be its own database, and closing the last one drops it.
        // (So no `pool_options` here: closing a connection found inside a
        // transaction would drop the database. Writes run detached from
        // their callers, so no transaction is left open to find.)
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(db_error::<SqliteStore>)?;
        SqliteStore::migrated(pool).await
    }

    async fn migrated(pool: SqlitePool) -> Result<SqliteStore> {
        let store = SqliteStore::unmigrated(pool);
        store.migrate().await?;
        Ok(store)
    }

    fn unmigrated(pool: SqlitePool) -> SqliteStore {
        SqliteStore {
            pool,
            write_gate: Arc::new(Mutex::new(())),
            redeems: RedeemQueue::default(),
        }
    }

    /// Applies the pending migrations. Accord records them in its own
    /// table, `accord_migrations`, never in sqlx's `_sqlx_migrations`; rows
    /// an older Accord left in `_sqlx_migrations` are moved over on the
    /// first run.
    ///
    /// SQLite has no migration lock: the migrations run inside one
    /// `BEGIN IMMEDIATE` transaction, which holds the file's write lock, so
    /// processes opening a new file at the same moment migrate one after
    /// the other, and the later ones find every migration applied.
    pub async fn migrate(&self) -> Result<()> {
        let mut conn = self.pool.acquire().await.map_err(db_error::<SqliteStore>)?;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_error::<SqliteStore>)?;
        migrate::apply::<SqliteStore>(&mut tx, &MIGRATOR).await?;
        tx.commit().await.map_err(db_error::<SqliteStore>)
    }

    /// Runs a read (in place: a dropped read loses nothing). See
    /// `crate::store::sql::calls`.
    async fn read_call<T>(&self, read: impl Future<Output = Result<T>>) -> Result<T> {
        read.await
    }

    /// Runs a write to completion as a task of its own; the caller waits
    /// for it. The write is bounded by the store's own timeouts: the queue
    /// of this process's writers and SQLite's busy timeout. See
    /// `crate::store::sql::calls`.
    async fn write_call<T, F, Fut>(&self, write: F) -> Result<T>
    where
        F: FnOnce(SqliteStore) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        detached(write(self.clone()), None).await
    }

    /// Whether a write could start now: takes this process's write queue
    /// and SQLite's write lock, and lets go of both. Not ready when that
    /// takes longer than [`READY_TIMEOUT`]; the probe itself goes on in
    /// the background until the lock or the busy timeout.
    pub(crate) async fn check_writable(&self) -> Result<()> {
        let probe = self.write_call(|s| async move {
            let w = s
                .begin_write()
                .await
                .map_err(Abort::into_error::<SqliteStore>)?;
            w.rollback().await.map_err(Abort::into_error::<SqliteStore>)
        });
        match tokio::time::timeout(READY_TIMEOUT, probe).await {
            Ok(result) => result,
            Err(_) => Err(Error::unavailable(format!(
                "the write lock was not available within {} ms",
                READY_TIMEOUT.as_millis()
            ))),
        }
    }
}

/// The pool settings of every SQLite store: a connection that comes back
/// to the pool inside a transaction nobody owns any more is closed, not
/// reused (see the module docs). The check runs after a ping, which runs
/// after any rollback the driver queued when a transaction was dropped, so
/// only a transaction that really stayed open is caught.
///
/// A connection is checked when it comes back (`after_release`), so it is
/// not pinged again when taken: a ping is a hop to the connection's thread
/// and back, as long as a short read.
fn pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .test_before_acquire(false)
        .after_release(|conn, _| Box::pin(async move { released_clean(conn).await }))
        .before_acquire(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
}

/// Whether a connection back in the pool may be reused: it answers and is
/// outside any transaction.
async fn released_clean(conn: &mut SqliteConnection) -> std::result::Result<bool, sqlx::Error> {
    conn.ping().await?;
    let clean = !conn.is_in_transaction();
    if !clean {
        tracing::warn!(
            target: "accord::store",
            "a pooled SQLite connection came back inside a transaction: closed (rolled back)"
        );
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::CampaignStore;

    /// A connection released inside a transaction that holds the write
    /// lock (what a write cut midway used to leave behind) is closed, so
    /// the lock is free again and later writes neither wait for it nor
    /// find a connection at the wrong transaction depth.
    #[tokio::test]
    async fn a_connection_released_inside_a_transaction_is_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("a.db").to_str().unwrap())
            .await
            .unwrap();
        for _ in 0..3 {
            let mut conn = store.pool().acquire().await.unwrap();
            let tx = conn.begin_with("BEGIN IMMEDIATE").await.unwrap();
            // The transaction's owner disappears without a rollback.
            std::mem::forget(tx);
            assert!(conn.is_in_transaction());
            drop(conn);
        }
        let began = std::time::Instant::now();
        for _ in 0..(2 * POOL_SIZE) {
            let started = std::time::Instant::now();
            assert!(!store.delete_campaign("p", uuid::Uuid::nil()).await.unwrap());
            assert!(store.all_campaigns("p").await.unwrap().is_empty());
            store.check_writable().await.unwrap();
            assert!(started.elapsed() < Duration::from_secs(1));
        }
        assert!(began.elapsed() < Duration::from_secs(2));
    }
}
