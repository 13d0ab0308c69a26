//! What differs between the SQL stores, as one trait: [`Dialect`]. The
//! store types implement it themselves (`SqliteStore` in
//! `store/sqlite/dialect.rs`, `PostgresStore` in
//! `store/postgres/dialect.rs`), and the shared implementation of every
//! store role (`campaign.rs`, `redemption.rs`, `consent.rs`, `ledger.rs`
//! beside this file) is generic over it.
//!
//! A dialect binds and reads the typed values of [`Sql`] statements in its
//! column types, begins its transactions (SQLite: `BEGIN IMMEDIATE` behind
//! the process's write queue; PostgreSQL: READ COMMITTED, and REPEATABLE
//! READ for a list's snapshot), says which errors are worth running a
//! transaction again for, and supplies the few statements whose syntax or
//! strategy differs: the quota guard, the row lock, the next consent
//! `seq`, and JSON access.

use std::future::Future;
use std::time::Duration;

use serde_json::{Map, Value};

use super::query::{Arg, Sql, SqlRow};
use super::{db_error, Result};
use crate::core::campaign::QuotaCharge;
use crate::core::consent::{ContentFilter, ContentSort};
use crate::Error;

/// The connection type of a dialect's driver.
pub(crate) type Conn<D> = <<D as Dialect>::Db as sqlx::Database>::Connection;

/// Runs of a transaction the database aborted as a deadlock victim or a
/// serialization failure, before giving up.
const MAX_ATTEMPTS: u32 = 5;

/// One SQL database: how the shared implementation talks to it.
pub(crate) trait Dialect: Clone + Send + Sync + 'static {
    /// The sqlx driver.
    type Db: sqlx::Database;
    /// A row as [`SqlRow`] reads it.
    type Row: SqlRow;

    /// `FOR UPDATE` where the database locks rows (PostgreSQL), empty
    /// where a write transaction already holds the only write lock
    /// (SQLite).
    const FOR_UPDATE: &'static str;

    /// `FOR SHARE` where the database locks rows (PostgreSQL: the row
    /// cannot be updated or deleted until the transaction ends), empty in
    /// SQLite.
    const FOR_SHARE: &'static str;

    /// Whether a `WITH` may hold a data-modifying statement (PostgreSQL):
    /// two writes in one statement.
    const WRITING_WITH: bool;

    /// `FOR UPDATE SKIP LOCKED` where the database locks rows (a claim
    /// passes over rows another worker is claiming), empty in SQLite.
    const SKIP_LOCKED: &'static str;

    /// The function `f(haystack, needle)` giving the 1-based position of a
    /// literal substring, 0 when absent (`instr`, `strpos`).
    const POSITION_FN: &'static str;

    /// What makes an `ORDER BY` term not walk an index for its order
    /// (SQLite's planner, without statistics, may prefer walking the list
    /// index to reading a few rows and sorting them).
    const NOT_BY_INDEX: &'static str;

    /// `CREATE TABLE IF NOT EXISTS accord_migrations (…)` in the dialect's
    /// types (see `migrate.rs`).
    const MIGRATION_HISTORY: &'static str;

    /// The statement taking the next consent `seq` (column `last`) inside
    /// the caller's write transaction.
    const NEXT_SEQ: &'static str;

    /// A query with a row when table `$1` exists.
    const HAS_TABLE: &'static str;

    /// The column of `quota_usage` that orders keys by when they were
    /// first charged, and a statement answering (column `cursor`) the
    /// value from which a later `charged_keys` reads (see
    /// [`RedemptionStore::charged_keys`](crate::store::RedemptionStore::charged_keys)).
    const CHARGED_ORDER: &'static str;
    /// See [`CHARGED_ORDER`](Self::CHARGED_ORDER).
    const CHARGED_CURSOR: &'static str;

    /// Leaders of groups of redeems at once (see `group.rs`): one
    /// where writes are serialised anyway (SQLite), as configured where
    /// groups on different keys can run side by side (PostgreSQL).
    fn group_leaders(&self) -> usize;

    /// Longest a write's own task runs, where the dialect bounds it.
    const WRITE_LIMIT: Option<Duration>;

    /// The embedded migrations.
    const MIGRATOR: &'static sqlx::migrate::Migrator;

    /// The pool.
    fn pool(&self) -> &sqlx::Pool<Self::Db>;

    /// The store's queue of redeems waiting to be grouped.
    fn redeem_queue(&self) -> &super::queue::RedeemQueue;

    /// The rows of `sql`.
    fn fetch_all<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c Sql,
    ) -> impl Future<Output = Result<Vec<Self::Row>, sqlx::Error>> + Send + 'c;

    /// The first row of `sql`, if any.
    fn fetch_optional<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c Sql,
    ) -> impl Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send + 'c;

    /// Runs `sql`; the number of rows it changed.
    fn execute<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c Sql,
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'c;

    /// Runs a script of statements without arguments (a migration).
    fn execute_script<'c>(
        conn: &'c mut Conn<Self>,
        script: &'c str,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'c;

    /// Begins a write transaction.
    fn begin_write(&self) -> impl Future<Output = Result<Tx<Self>, Abort>> + Send;

    /// Begins a read transaction: one snapshot for the statements of a
    /// list (its page, its total, its details).
    fn begin_read(&self) -> impl Future<Output = Result<Tx<Self>, Abort>> + Send;

    /// What a database error of this driver means for the caller.
    fn fault(db: &dyn sqlx::error::DatabaseError) -> super::Fault;

    /// Whether `e` aborted a transaction that may simply be run again.
    fn is_retryable(e: &sqlx::Error) -> bool;

    /// Whether `e` is the unique violation of the campaign's primary key
    /// (`true`) or of its refCode (`false`); `None` for anything else.
    fn campaign_key_violated(e: &sqlx::Error) -> Option<bool>;

    /// Adds `charge` (of a calendar quota) to the usage of its key inside
    /// the caller's write transaction, only if the result stays within its
    /// limit: `false` when it would not (the caller rolls back). It first
    /// gives back the key's hold charges expired at `at`
    /// ([`sweep_key`](super::marks::sweep_key)), so that expired holds
    /// never count.
    fn charge<'c>(
        conn: &'c mut Conn<Self>,
        project: &'c str,
        charge: &'c QuotaCharge,
        at: chrono::DateTime<chrono::Utc>,
    ) -> impl Future<Output = Result<bool, Abort>> + Send + 'c;

    /// Gives `charge` back (a cancelled redemption) inside the caller's
    /// write transaction.
    fn release<'c>(
        conn: &'c mut Conn<Self>,
        project: &'c str,
        charge: &'c QuotaCharge,
    ) -> impl Future<Output = Result<(), Abort>> + Send + 'c;

    /// The SQL expression of the text of top-level attribute `attribute`
    /// of the JSON column `data` (the expression the indexes are on).
    fn json_text(data: &str, attribute: &'static str) -> String;

    /// The SQL condition that attribute `attribute` of `data` is a JSON
    /// string (so that a number or an array whose text equals is no match).
    fn json_is_string(data: &str, attribute: &'static str) -> String;

    /// The dialect's own columns of a content version, derived from its
    /// `data` (SQLite: the exact sort keys of its numbers).
    fn derived_content_columns(data: &Map<String, Value>) -> Result<Vec<(&'static str, Arg)>>;

    /// Appends the condition of one content-list filter on `v.data`
    /// (see [`crate::core::consent::query`]).
    fn push_content_filter(sql: &mut Sql, filter: &ContentFilter) -> Result<()>;

    /// Appends the `ORDER BY` terms of one content-list sort key on
    /// `v.data`, each followed by `, `.
    fn push_content_sort(sql: &mut Sql, key: &ContentSort);
}

/// The statement-running methods of a [`Dialect`] impl, written once: they
/// bind through the `bound(&Sql)` function of the module they are expanded
/// in, which gives the text the driver is sent and the driver's arguments
/// (from the [`Arg`]s).
macro_rules! run_statements {
    () => {
        fn fetch_all<'c>(
            conn: &'c mut $crate::store::sql::dialect::Conn<Self>,
            sql: &'c $crate::store::sql::query::Sql,
        ) -> impl std::future::Future<Output = Result<Vec<Self::Row>, sqlx::Error>> + Send + 'c {
            async move {
                $crate::store::sql::dialect::sent::statement();
                let (text, args) = bound(sql)?;
                sqlx::query_with(&text, args).fetch_all(conn).await
            }
        }

        fn fetch_optional<'c>(
            conn: &'c mut $crate::store::sql::dialect::Conn<Self>,
            sql: &'c $crate::store::sql::query::Sql,
        ) -> impl std::future::Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send + 'c {
            async move {
                $crate::store::sql::dialect::sent::statement();
                let (text, args) = bound(sql)?;
                sqlx::query_with(&text, args).fetch_optional(conn).await
            }
        }

        fn execute<'c>(
            conn: &'c mut $crate::store::sql::dialect::Conn<Self>,
            sql: &'c $crate::store::sql::query::Sql,
        ) -> impl std::future::Future<Output = Result<u64, sqlx::Error>> + Send + 'c {
            async move {
                $crate::store::sql::dialect::sent::statement();
                let (text, args) = bound(sql)?;
                let done = sqlx::query_with(&text, args).execute(conn).await?;
                Ok(done.rows_affected())
            }
        }

        fn execute_script<'c>(
            conn: &'c mut $crate::store::sql::dialect::Conn<Self>,
            script: &'c str,
        ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send + 'c {
            async move {
                $crate::store::sql::dialect::sent::statement();
                sqlx::Executor::execute(conn, script).await?;
                Ok(())
            }
        }
    };
}

pub(crate) use run_statements;

/// A transaction of a dialect, with whatever it holds until it ends
/// (SQLite: this process's write queue). Dropping it rolls back.
pub(crate) struct Tx<D: Dialect> {
    tx: sqlx::Transaction<'static, D::Db>,
    _held: Option<Box<dyn Send + Sync>>,
}

impl<D: Dialect> Tx<D> {
    /// A transaction holding `held` until it ends.
    pub(crate) fn new(
        tx: sqlx::Transaction<'static, D::Db>,
        held: Option<Box<dyn Send + Sync>>,
    ) -> Tx<D> {
        sent::call();
        sent::statement(); // BEGIN
        Tx { tx, _held: held }
    }

    /// The connection, to run statements on.
    pub(crate) fn conn(&mut self) -> &mut Conn<D> {
        &mut self.tx
    }

    pub(crate) async fn commit(self) -> Result<(), Abort> {
        sent::statement();
        Ok(self.tx.commit().await?)
    }

    pub(crate) async fn rollback(self) -> Result<(), Abort> {
        sent::statement();
        Ok(self.tx.rollback().await?)
    }
}

/// A pooled connection, outside any transaction.
pub(crate) async fn acquire<D: Dialect>(
    db: &D,
) -> Result<sqlx::pool::PoolConnection<D::Db>, Abort> {
    sent::call();
    Ok(db.pool().acquire().await?)
}

/// What this thread sent to the database (feature `testkit`: the
/// round-trip tests of redeem; without it, nothing is counted).
///
/// A *call* is one use of the database by a store method: a connection
/// taken from the pool outside a transaction, or one transaction (each run
/// of it). A *statement* is every statement sent: each query, and `BEGIN`,
/// `COMMIT` and `ROLLBACK` (not the pool's own connection set-up, nor the
/// rollback sqlx sends for a transaction dropped unfinished). Counted per
/// thread, so a test on a current-thread runtime sees only its own (the
/// writes the stores run as tasks of their own run on that thread too).
pub(crate) mod sent {
    #[cfg(feature = "testkit")]
    use std::cell::Cell;

    #[cfg(feature = "testkit")]
    thread_local! {
        static CALLS: Cell<u64> = const { Cell::new(0) };
        static STATEMENTS: Cell<u64> = const { Cell::new(0) };
    }

    /// One more call.
    #[inline]
    pub(crate) fn call() {
        #[cfg(feature = "testkit")]
        CALLS.with(|n| n.set(n.get() + 1));
    }

    /// One more statement.
    #[inline]
    pub(crate) fn statement() {
        #[cfg(feature = "testkit")]
        STATEMENTS.with(|n| n.set(n.get() + 1));
    }

    /// The calls and the statements this thread sent so far.
    #[cfg(feature = "testkit")]
    pub fn counts() -> (u64, u64) {
        (CALLS.with(Cell::get), STATEMENTS.with(Cell::get))
    }
}

/// Why one run of a transaction failed.
pub(crate) enum Abort {
    /// The database said no; maybe only this time.
    Db(sqlx::Error),
    /// Anything else: final.
    Fail(Error),
}

impl Abort {
    /// The error a caller sees.
    pub(crate) fn into_error<D: Dialect>(self) -> Error {
        match self {
            Abort::Db(e) => db_error::<D>(e),
            Abort::Fail(e) => e,
        }
    }
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

/// Runs the transaction `attempt` until it neither succeeds nor is aborted
/// by an error the dialect calls retryable, at most [`MAX_ATTEMPTS`] times.
/// Each run must begin and end its own transaction (an error drops it,
/// which rolls it back).
pub(crate) async fn retry<D: Dialect, T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Abort>>,
{
    let mut run = 1;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Abort::Db(e)) if run < MAX_ATTEMPTS && D::is_retryable(&e) => {
                // A short, growing pause lets the transaction we collided
                // with finish first.
                tokio::time::sleep(Duration::from_millis(2 << run)).await;
                run += 1;
            }
            Err(e) => return Err(e.into_error::<D>()),
        }
    }
}

/// The rows of the read `sql`, each made a `T` by `from_row`, on a
/// connection of its own and retried as [`retry`] retries.
pub(crate) async fn read_all<D: Dialect, T>(
    db: &D,
    sql: &Sql,
    from_row: impl Fn(&D::Row) -> Result<T>,
) -> Result<Vec<T>> {
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        rows::<D>(&mut conn, sql)
            .await?
            .iter()
            .map(&from_row)
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}

/// Takes the next consent `seq` inside the caller's write transaction.
pub(crate) async fn next_seq<D: Dialect>(conn: &mut Conn<D>) -> Result<i64, Abort> {
    let row = row::<D>(conn, &Sql::new(D::NEXT_SEQ)).await?;
    Ok(row
        .ok_or_else(|| super::corrupt("consent_seq", "no row"))?
        .col("last")?)
}

/// The rows of `sql`.
pub(crate) async fn rows<D: Dialect>(conn: &mut Conn<D>, sql: &Sql) -> Result<Vec<D::Row>, Abort> {
    Ok(D::fetch_all(conn, sql).await?)
}

/// The first row of `sql`, if any.
pub(crate) async fn row<D: Dialect>(
    conn: &mut Conn<D>,
    sql: &Sql,
) -> Result<Option<D::Row>, Abort> {
    Ok(D::fetch_optional(conn, sql).await?)
}

/// Runs `sql`; the number of rows it changed.
pub(crate) async fn execute<D: Dialect>(conn: &mut Conn<D>, sql: &Sql) -> Result<u64, Abort> {
    Ok(D::execute(conn, sql).await?)
}
