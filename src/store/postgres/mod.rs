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

mod campaign;
mod consent;
mod redemption;

use std::future::Future;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};

use super::sql::{db_error, migrate_error};
use crate::{Error, Result};

/// The schema, embedded at compile time from `migrations/postgres`.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Connections of the pool [`PostgresStore::connect`] opens.
const POOL_SIZE: u32 = 10;

/// How long a call waits for a working connection — a free one, or a new
/// one while the database refuses connections — before failing as
/// [`Unavailable`](crate::ErrorKind::Unavailable). It bounds how long a
/// request hangs when the database is down: the client gets a 503 with
/// `Retry-After` after this long at most, not a stalled connection.
/// (sqlx retries a refused connection until this deadline.)
pub(crate) const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs of a transaction the database aborted as a deadlock victim or a
/// serialization failure, before giving up.
const MAX_ATTEMPTS: u32 = 5;

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
}

impl PostgresStore {
    /// Connects a pool of 10 connections to `url`
    /// (`postgres://user:password@host:5432/database`; libpq-style query
    /// parameters such as `sslmode` and `options` are understood) and
    /// migrates the database.
    ///
    /// The pool fails fast while the database is unreachable and recovers
    /// by itself when it is back (see `pool_options`).
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        let pool = PostgresStore::pool_options()
            .connect(url)
            .await
            .map_err(db_error)?;
        PostgresStore::from_pool(pool).await
    }

    /// The pool settings of [`connect`](Self::connect): 10 connections; a
    /// call waits at most [`ACQUIRE_TIMEOUT`] for a working connection,
    /// then fails as [`Unavailable`](crate::ErrorKind::Unavailable) (HTTP
    /// 503); every pooled connection is checked before use, so connections
    /// the database or the network dropped are replaced rather than handed
    /// out.
    fn pool_options() -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .test_before_acquire(true)
    }

    /// A store on a pool the application configured itself; migrates the
    /// database. (Concurrent migrations from several processes are safe:
    /// sqlx serialises them with an advisory lock.)
    pub async fn from_pool(pool: PgPool) -> Result<PostgresStore> {
        MIGRATOR.run(&pool).await.map_err(migrate_error)?;
        Ok(PostgresStore { pool })
    }

    /// Closes every connection, waiting for them to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }
}

// Every storage role, checked when the crate compiles.
const _: () = {
    const fn provides_every_role<S: crate::store::Store>() {}
    provides_every_role::<PostgresStore>();
};

/// Why one run of a transaction failed.
pub(crate) enum Abort {
    /// The database said no; maybe only this time.
    Db(sqlx::Error),
    /// Anything else: final.
    Fail(Error),
}

impl From<sqlx::Error> for Abort {
    fn from(e: sqlx::Error) -> Self {
        Abort::Db(e)
    }
}

impl From<Error> for Abort {
    fn from(e: Error) -> Self {
        Abort::Fail(e)
    }
}

/// Whether the database aborted a transaction that may simply be run again:
/// serialization failure (40001) or deadlock victim (40P01).
fn is_retryable(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.code().is_some_and(|c| c == "40001" || c == "40P01"))
}

/// Runs the transaction `attempt` until it neither succeeds nor is aborted
/// by a retryable error, at most [`MAX_ATTEMPTS`] times. Each run must begin
/// and end its own transaction (an error drops it, which rolls it back).
pub(crate) async fn retry<T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, Abort>>,
{
    let mut run = 1;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Abort::Db(e)) if run < MAX_ATTEMPTS && is_retryable(&e) => {
                // A short, growing pause lets the transaction we collided
                // with finish first.
                tokio::time::sleep(Duration::from_millis(2 << run)).await;
                run += 1;
            }
            Err(Abort::Db(e)) => return Err(db_error(e)),
            Err(Abort::Fail(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While the database is unreachable a call fails within the acquire
    /// timeout (a 503 over HTTP, well before a client gives up), and a
    /// connection the database or the network dropped is never handed out.
    #[test]
    fn the_pool_fails_fast_and_checks_connections() {
        let options = PostgresStore::pool_options();
        assert!(options.get_acquire_timeout() <= Duration::from_secs(5));
        assert!(options.get_test_before_acquire());
        assert_eq!(options.get_max_connections(), POOL_SIZE);
    }
}
