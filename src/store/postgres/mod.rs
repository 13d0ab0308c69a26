//! The PostgreSQL store (feature `postgres`): many server processes sharing
//! one database.
//!
//! Every guarantee holds across processes because the database enforces it,
//! not the process: a quota charge is one guarded upsert
//! (`INSERT … ON CONFLICT … DO UPDATE … WHERE used + n <= limit RETURNING`),
//! an idempotency key is claimed by a unique index, a campaign update locks
//! its row, a content PUT appends version n + 1 only once (primary key), and
//! every consent append takes its `seq` from one sequence. Transactions run
//! at READ COMMITTED; one that the database aborts as a deadlock victim or a
//! serialization failure is run again, a few times, before the call fails
//! as [`Unavailable`](crate::ErrorKind::Unavailable).
//!
//! **Bounded waits.** Every call is bounded in time, so that a database
//! that stops answering — down, or behind a network that drops packets
//! without refusing them — turns every call into an
//! [`Unavailable`](crate::ErrorKind::Unavailable) error (HTTP 503) within
//! [`CALL_TIMEOUT`], and the store recovers by itself when the database
//! answers again:
//!
//! | Bound | Value | What it stops |
//! |---|---|---|
//! | acquire (and connect) | [`ACQUIRE_TIMEOUT`] | waiting for a connection, or for a new one while the database refuses or ignores connections |
//! | `statement_timeout` (server) | [`STATEMENT_TIMEOUT`] | a statement the database runs too long (lock waits included) |
//! | `idle_in_transaction_session_timeout` (server) | [`IDLE_IN_TRANSACTION_TIMEOUT`] | a transaction whose client vanished keeping its row locks |
//! | server TCP keepalive | 30 s idle, then 3 probes 10 s apart | the server holding a dead client's session |
//! | call | [`CALL_TIMEOUT`] | the caller waiting on a connection whose answers no longer arrive |
//! | write task | [`WRITE_LIMIT`] | a write's own task waiting on such a connection |
//! | release check | [`RELEASE_CHECK_TIMEOUT`] | a connection that stopped answering going back to the pool |
//!
//! The server settings are sent as startup options by
//! [`PostgresStore::connect`], unless the URL's `options` sets them (a
//! pool that cannot take startup options, such as PgBouncer's transaction
//! mode, can be configured by hand and passed to
//! [`PostgresStore::from_pool`]). sqlx exposes no client-side TCP
//! keepalive; the call and write bounds take its place.
//!
//! **A caller going away never cuts a write.** Every write runs as a task
//! of its own, to completion or to [`WRITE_LIMIT`]
//! (`crate::store::sql::calls`); a caller that stops waiting after
//! [`CALL_TIMEOUT`] gets `store_timeout` (the write may still commit: a
//! retry with the same idempotency key finds it). A pooled connection that
//! comes back inside a transaction, or does not answer a ping within
//! [`RELEASE_CHECK_TIMEOUT`], is closed, never handed out again.
//!
//! The statements are the shared SQL implementation's
//! (`crate::store::sql`); what is PostgreSQL's own — column types, the
//! guarded upsert, row locks, retries, JSON access, error codes — is in
//! `dialect.rs`.

mod dialect;

// Every store role, and the methods every SQL store has, from the shared
// implementation (`crate::store::sql`).
crate::store::sql::calls::store_calls!(PostgresStore);

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::Connection;

use super::sql::calls::{detached, read_timed_out};
use super::sql::queue::RedeemQueue;
use super::sql::{db_error, migrate};
use crate::{Error, Result};

/// The schema, embedded at compile time from `migrations/postgres`.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Connections of the pool [`PostgresStore::connect`] opens.
const POOL_SIZE: u32 = 10;

/// Leaders of groups of redeems at once (`crate::store::sql::group`) by
/// default: groups on different quota keys run side by side, each on a
/// connection of the pool; groups on one key wait for each other's row
/// lock. See [`PostgresOptions::group_leaders`].
pub const GROUP_LEADERS: usize = 4;

/// How long a call waits for a working connection — a free one, or a new
/// one while the database refuses connections — before failing as
/// [`Unavailable`](crate::ErrorKind::Unavailable). It bounds how long a
/// request hangs when the database is down: the client gets a 503 with
/// `Retry-After` after this long at most, not a stalled connection.
/// (sqlx retries a refused connection until this deadline.)
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// The server's `statement_timeout`: longest a statement may run, waits
/// for row locks included.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_millis(3500);

/// The server's `idle_in_transaction_session_timeout`: a session left
/// inside a transaction this long (its client vanished) is ended, and its
/// transaction rolled back, releasing its locks.
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest a caller waits for one call (a read, or the answer of a write):
/// then [`Unavailable`](crate::ErrorKind::Unavailable) `store_timeout`.
/// Longer than [`ACQUIRE_TIMEOUT`], so a database that refuses connections
/// is reported as such; short enough for a 503 within 5 s.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(4);

/// Longest a write's own task runs: past it, the write is abandoned (its
/// transaction rolls back, on the server by
/// [`IDLE_IN_TRANSACTION_TIMEOUT`] if the connection is gone).
pub const WRITE_LIMIT: Duration = Duration::from_secs(30);

/// Longest a connection coming back to the pool may take to answer a
/// ping before it is closed instead of reused.
pub const RELEASE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The server's TCP keepalive on our sessions (seconds): idle time, probe
/// interval, probes.
const SERVER_KEEPALIVE: (u32, u32, u32) = (30, 10, 3);

/// A store on a PostgreSQL database. Cheap to clone: clones share the
/// connection pool.
///
/// ```no_run
/// # async fn demo() -> accord::Result<()> {
/// use accord::store::postgres::PostgresStore;
/// let store = PostgresStore::connect("postgres://accord@db.internal/accord").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// Longest a caller waits for one call: [`CALL_TIMEOUT`], or longer
    /// when the pool's acquire timeout was configured longer.
    call_timeout: Duration,
    /// Redeems waiting to be committed in a group (see the module docs).
    redeems: RedeemQueue,
    /// Groups of redeems committed side by side, at most.
    group_leaders: usize,
}

/// How [`PostgresStore::connect_with`] sets up its pool. Build it from
/// [`Default`] and change fields:
///
/// ```
/// let mut options = accord::store::postgres::PostgresOptions::default();
/// options.max_connections = 32;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// Connections of the pool. Default 10.
    pub max_connections: u32,
    /// How long a call waits for a working connection before it fails as
    /// [`Unavailable`](crate::ErrorKind::Unavailable). Default
    /// [`ACQUIRE_TIMEOUT`]; a longer one also lengthens the call bound
    /// ([`CALL_TIMEOUT`]) to one second past it.
    pub acquire_timeout: Duration,
    /// The server's `statement_timeout` (unless the URL's `options` sets
    /// it). Default [`STATEMENT_TIMEOUT`].
    pub statement_timeout: Duration,
    /// Whether to apply pending migrations on connecting. Default `true`;
    /// without, run them first (`accord migrate`, or
    /// [`PostgresStore::migrate`]).
    pub migrate: bool,
    /// Groups of concurrent redeems committed side by side, each in a
    /// transaction on a connection of the pool (at least 1). Default
    /// [`GROUP_LEADERS`]. Fewer leaders make larger groups: where most
    /// redeems update one campaign-wide quota key, whose row each group
    /// locks in turn, one leader was faster on a database on the same
    /// host (`docs/benchmarks.md`); more leaders overlap the round trips
    /// to a distant database.
    pub group_leaders: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: POOL_SIZE,
            acquire_timeout: ACQUIRE_TIMEOUT,
            statement_timeout: STATEMENT_TIMEOUT,
            migrate: true,
            group_leaders: GROUP_LEADERS,
        }
    }
}

impl PostgresStore {
    /// Connects a pool of 10 connections to `url`
    /// (`postgres://user:password@host:5432/database`; libpq-style query
    /// parameters such as `sslmode` and `options` are understood) and
    /// migrates the database.
    ///
    /// The pool fails fast while the database is unreachable and recovers
    /// by itself when it is back (see the module docs for every bound).
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        PostgresStore::connect_with(url, &PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with the pool size, timeouts and
    /// migration of `options`.
    pub async fn connect_with(url: &str, options: &PostgresOptions) -> Result<PostgresStore> {
        let connect = PostgresStore::connect_options(url, options.statement_timeout)?;
        let pool = PostgresStore::pool_options(options)
            .connect_with(connect)
            .await
            .map_err(db_error::<PostgresStore>)?;
        let store = PostgresStore {
            pool,
            call_timeout: CALL_TIMEOUT.max(options.acquire_timeout + Duration::from_secs(1)),
            redeems: RedeemQueue::default(),
            group_leaders: options.group_leaders.max(1),
        };
        if options.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }

    /// The connect options of `url` plus the server-side bounds of the
    /// module docs, each unless the URL's `options` already sets it.
    fn connect_options(url: &str, statement_timeout: Duration) -> Result<PgConnectOptions> {
        let options = PgConnectOptions::from_str(url).map_err(db_error::<PostgresStore>)?;
        let given = options.get_options().unwrap_or_default().to_owned();
        let (idle, interval, count) = SERVER_KEEPALIVE;
        let settings = [
            (
                "statement_timeout",
                statement_timeout.as_millis().to_string(),
            ),
            (
                "idle_in_transaction_session_timeout",
                IDLE_IN_TRANSACTION_TIMEOUT.as_millis().to_string(),
            ),
            ("tcp_keepalives_idle", idle.to_string()),
            ("tcp_keepalives_interval", interval.to_string()),
            ("tcp_keepalives_count", count.to_string()),
        ];
        Ok(options.options(
            settings
                .into_iter()
                .filter(|(name, _)| !given.contains(name)),
        ))
    }

    /// The pool settings of [`connect`](Self::connect): 10 connections; a
    /// call waits at most [`ACQUIRE_TIMEOUT`] for a working connection,
    /// then fails as [`Unavailable`](crate::ErrorKind::Unavailable) (HTTP
    /// 503); every pooled connection is checked before use, so connections
    /// the database or the network dropped are replaced rather than handed
    /// out; one that comes back inside a transaction, or does not answer
    /// within [`RELEASE_CHECK_TIMEOUT`], is closed.
    fn pool_options(options: &PostgresOptions) -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .test_before_acquire(true)
            .after_release(|conn, _| Box::pin(async move { released_clean(conn).await }))
            .before_acquire(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
    }

    /// A store on a pool the application configured itself; migrates the
    /// database. (Concurrent migrations from several processes are safe:
    /// they take an advisory lock.) The calls of the store are bounded as
    /// the module docs say; the server-side settings are the pool's own.
    pub async fn from_pool(pool: PgPool) -> Result<PostgresStore> {
        let store = PostgresStore::from_pool_unmigrated(pool);
        store.migrate().await?;
        Ok(store)
    }

    /// A store on a pool the application configured itself, without
    /// migrating: for a host that runs the migrations at deploy time
    /// (`accord migrate`, or [`migrate`](Self::migrate) from its own
    /// deploy step).
    pub fn from_pool_unmigrated(pool: PgPool) -> PostgresStore {
        PostgresStore {
            pool,
            call_timeout: CALL_TIMEOUT,
            redeems: RedeemQueue::default(),
            group_leaders: GROUP_LEADERS,
        }
    }

    /// Applies the pending migrations (safe from several processes at
    /// once). Accord records them in its own table, `accord_migrations`,
    /// never in sqlx's `_sqlx_migrations`; rows an older Accord left in
    /// `_sqlx_migrations` are moved over on the first run.
    pub async fn migrate(&self) -> Result<()> {
        migrate(&self.pool).await
    }

    /// Whether the server runs autovacuum (its `autovacuum` setting). The
    /// planner's statistics of Accord's tables come from it (or from
    /// `ANALYZE`): without them a growing table is planned as if empty,
    /// and a plan a connection keeps may read all of it (see
    /// `docs/operations.md`).
    pub async fn autovacuum(&self) -> Result<bool> {
        self.read_call(async {
            let on: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
                .fetch_one(&self.pool)
                .await
                .map_err(db_error::<PostgresStore>)?;
            Ok(on == "on")
        })
        .await
    }

    /// Runs a read in place, for [`CALL_TIMEOUT`] at most. See
    /// `crate::store::sql::calls`.
    async fn read_call<T>(&self, read: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::time::timeout(self.call_timeout, read)
            .await
            .unwrap_or_else(|_| Err(read_timed_out(self.call_timeout)))
    }

    /// Runs a write to completion (or to [`WRITE_LIMIT`]) as a task of its
    /// own; the caller waits [`CALL_TIMEOUT`] at most. See
    /// `crate::store::sql::calls`.
    async fn write_call<T, F, Fut>(&self, write: F) -> Result<T>
    where
        F: FnOnce(PostgresStore) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let work = write(self.clone());
        let bounded = async move {
            tokio::time::timeout(WRITE_LIMIT, work)
                .await
                .unwrap_or_else(|_| Err(read_timed_out(WRITE_LIMIT)))
        };
        detached(bounded, Some(self.call_timeout)).await
    }

    /// Whether the database takes writes now: it answers, within
    /// [`CALL_TIMEOUT`], and is not read-only (a standby, or
    /// `default_transaction_read_only`).
    pub(crate) async fn check_writable(&self) -> Result<()> {
        let read_only: String = self
            .read_call(async {
                sqlx::query_scalar("SHOW transaction_read_only")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_error::<PostgresStore>)
            })
            .await?;
        if read_only == "on" {
            return Err(Error::unavailable("the database is read-only"));
        }
        Ok(())
    }
}

/// Lock id of the migrations (`pg_advisory_lock`): "accord" in ASCII.
const MIGRATION_LOCK: i64 = 0x6163_636f_7264;

/// Runs the pending migrations on a connection of their own, without the
/// statement timeout: a migration may take longer than a request (an index
/// on a big table) and waits for another process's migration lock. The
/// connection is closed afterwards, so its settings never reach the pool.
/// The history is Accord's own table (see `crate::store::sql::migrate`).
async fn migrate(pool: &PgPool) -> Result<()> {
    let mut conn = pool.acquire().await.map_err(db_error::<PostgresStore>)?;
    let migrated = async {
        sqlx::query("SET statement_timeout = 0")
            .execute(&mut *conn)
            .await
            .map_err(db_error::<PostgresStore>)?;
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *conn)
            .await
            .map_err(db_error::<PostgresStore>)?;
        let applied = migrate::apply::<PostgresStore>(&mut conn, &MIGRATOR).await;
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *conn)
            .await
            .map_err(db_error::<PostgresStore>);
        applied.and(unlocked.map(drop))
    }
    .await;
    let _ = conn.detach().close().await;
    migrated
}

/// Whether a connection back in the pool may be reused: it answers a ping
/// within [`RELEASE_CHECK_TIMEOUT`] and is outside any transaction. (sqlx
/// pings it again after this, without a bound: a connection whose answers
/// stopped arriving must not reach that ping.)
async fn released_clean(conn: &mut PgConnection) -> std::result::Result<bool, sqlx::Error> {
    match tokio::time::timeout(RELEASE_CHECK_TIMEOUT, conn.ping()).await {
        Ok(answered) => answered?,
        Err(_) => {
            return Err(sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "a released connection did not answer a ping",
            )))
        }
    }
    let clean = !conn.is_in_transaction();
    if !clean {
        tracing::warn!(
            target: "accord::store",
            "a pooled PostgreSQL connection came back inside a transaction: closed"
        );
    }
    Ok(clean)
}

// Every storage role, checked when the crate compiles.
const _: () = {
    const fn provides_every_role<S: crate::store::Store>() {}
    provides_every_role::<PostgresStore>();
};

#[cfg(test)]
mod tests {
    use super::*;

    /// While the database is unreachable a call fails within the acquire
    /// timeout (a 503 over HTTP, well before a client gives up), and a
    /// connection the database or the network dropped is never handed out.
    #[test]
    fn the_pool_fails_fast_and_checks_connections() {
        let options = PostgresStore::pool_options(&PostgresOptions::default());
        assert!(options.get_acquire_timeout() <= Duration::from_secs(5));
        assert!(options.get_test_before_acquire());
        assert_eq!(options.get_max_connections(), POOL_SIZE);
        // A caller hears within 5 s, and hears of a refused database (the
        // acquire timeout) rather than of its own call timeout.
        assert!(ACQUIRE_TIMEOUT < CALL_TIMEOUT && CALL_TIMEOUT < Duration::from_secs(5));
        assert!(STATEMENT_TIMEOUT < CALL_TIMEOUT);
        assert!(CALL_TIMEOUT < WRITE_LIMIT);
    }

    #[test]
    fn server_bounds_go_with_the_connection_unless_the_url_sets_them() {
        let options = PostgresStore::connect_options(
            "postgres://u@h/db?options=-c%20search_path%3Ds",
            STATEMENT_TIMEOUT,
        )
        .unwrap();
        let sent = options.get_options().unwrap();
        assert!(sent.contains("search_path=s"), "{sent}");
        assert!(sent.contains("-c statement_timeout=3500"), "{sent}");
        assert!(
            sent.contains("-c idle_in_transaction_session_timeout=10000"),
            "{sent}"
        );
        assert!(sent.contains("-c tcp_keepalives_idle=30"), "{sent}");
        let options = PostgresStore::connect_options(
            "postgres://u@h/db?options=-c%20statement_timeout%3D60000",
            STATEMENT_TIMEOUT,
        )
        .unwrap();
        let sent = options.get_options().unwrap();
        assert_eq!(sent.matches("statement_timeout").count(), 1, "{sent}");
        assert!(sent.contains("statement_timeout=60000"), "{sent}");
    }
}
