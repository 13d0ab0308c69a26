//! The store behaviour suites (campaign and consent) on PostgreSQL, from
//! `ACCORD_TEST_PG_URL`.
//! Also: two OS processes sharing one database, and durability across a
//! new pool.
//!
//! Without `ACCORD_TEST_PG_URL` every test says why it skips and passes —
//! except when `CI` is set: there a missing URL fails the run, so CI can
//! never skip this suite silently.
//!
//! Isolation: besides a random project per test, this test process works in
//! a schema of its own (`accord_suite_<unix time>_<pid>`, migrated on first
//! use; schemas of runs older than an hour are dropped). Several
//! checkouts with different migrations can then share one test database.
#![cfg(all(feature = "postgres", feature = "memory"))] // the memory store is the reference model
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::str::FromStr;
use std::sync::Arc;

use accord::store::postgres::{PostgresOptions, PostgresStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::suite;

use suite::campaign_store::{
    assert_shared_quota, durability_check, durability_write, shared_quota_campaign,
};
use suite::workers::{run_worker, spawn_workers, two_jobs, Job};

use crate::pg_support;

/// The database URL, or `None` (after saying why) to skip.
fn database_url() -> Option<String> {
    pg_support::database_url("the PostgreSQL store suite")
}

static SCHEMA: pg_support::Shared = pg_support::Shared::new("suite");

/// This process's schema: created on first use, after dropping stale ones;
/// dropped when the last test using it ends.
async fn schema(url: &str) -> pg_support::SharedUse {
    SCHEMA.get(url).await
}

/// A store on a new pool whose connections work in `schema`.
async fn open(url: &str, schema: &str) -> PostgresStore {
    let options = PgConnectOptions::from_str(url)
        .unwrap()
        .options([("search_path", schema)]);
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .unwrap();
    PostgresStore::from_pool(pool).await.unwrap()
}

async fn fixture() -> Option<(Arc<PostgresStore>, suite::Guard)> {
    let url = database_url()?;
    let schema = schema(&url).await;
    let store = Arc::new(open(&url, &schema).await);
    Some((store, Box::new(schema)))
}

/// With one leader of redeem groups (`PostgresOptions::group_leaders`,
/// `--pg-group-leaders 1`), concurrent redeems are still each all or
/// nothing and never pass a limit.
#[tokio::test(flavor = "multi_thread")]
async fn one_group_leader_never_oversells() {
    let Some(url) = database_url() else { return };
    let schema = schema(&url).await;
    let mut options = PostgresOptions::default();
    options.group_leaders = 1;
    options.max_connections = 4;
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20search_path%3D{}", &*schema);
    let store = Arc::new(PostgresStore::connect_with(&url, &options).await.unwrap());
    suite::campaign_store::concurrent_redeems_never_oversell(Arc::clone(&store)).await;
    suite::campaign_store::mixed_concurrent_redeems_each_all_or_nothing(store).await;
}

suite::campaign_store::campaign_store_tests!(fixture);
suite::services::services_tests!(fixture);
suite::promotions::promotions_tests!(fixture);
suite::code_pools::code_pool_tests!(fixture);
suite::holds::holds_tests!(fixture);
suite::usage_reads::usage_read_tests!(fixture);
suite::hold_codes::hold_codes_tests!(fixture);
suite::outbox::outbox_tests!(fixture);

mod consent {
    crate::suite::consent::consent_suite!(super::fixture);
}

/// `PostgresStore` provides every storage role (checked at compile time).
#[test]
fn postgres_store_is_a_store() {
    fn is_store<S: accord::store::Store>() {}
    is_store::<PostgresStore>();
}

#[tokio::test(flavor = "multi_thread")]
async fn acknowledged_writes_survive_a_new_pool() {
    let Some(url) = database_url() else { return };
    let schema = schema(&url).await;
    let store = open(&url, &schema).await;
    let written = durability_write(&store).await;
    store.close().await;
    drop(store);
    // Reconnect through the URL this time (libpq-style `options`).
    let sep = if url.contains('?') { '&' } else { '?' };
    let reconnect = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let reopened = PostgresStore::connect(&reconnect).await.unwrap();
    durability_check(&reopened, &written).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn consent_history_survives_a_new_pool() {
    let Some(url) = database_url() else { return };
    let schema = schema(&url).await;
    let store = open(&url, &schema).await;
    let written = suite::consent::store::durability_write(&store).await;
    store.close().await;
    drop(store);
    let reopened = open(&url, &schema).await;
    suite::consent::store::durability_check(&reopened, &written).await;
}

/// `autovacuum()` answers the server's own setting (`accord serve` warns
/// when it is off).
#[tokio::test(flavor = "multi_thread")]
async fn autovacuum_is_the_servers_setting() {
    let Some(url) = database_url() else { return };
    let schema = schema(&url).await;
    let store = open(&url, &schema).await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let setting: String = sqlx::query_scalar("SHOW autovacuum")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(setting == "on" || setting == "off", "{setting}");
    assert_eq!(store.autovacuum().await.unwrap(), setting == "on");
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_server_is_unavailable() {
    // Nothing listens on port 1 of the loopback interface. (A short acquire
    // timeout: `connect` keeps trying for its 10 s before giving up.)
    let pool = PgPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_secs(1))
        .connect_lazy("postgres://postgres@127.0.0.1:1/none")
        .unwrap();
    let err = PostgresStore::from_pool(pool).await.unwrap_err();
    assert_eq!(err.kind(), accord::ErrorKind::Unavailable, "{err:?}");
    assert_eq!(err.code(), "store_unavailable");
}

/// 64 redeems against a quota of 50, split between two worker processes,
/// each with its own pool on the same database: exactly 50 succeed in total.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_share_one_quota() {
    let Some(url) = database_url() else { return };
    let schema = schema(&url).await;
    let store = open(&url, &schema).await;
    let c = shared_quota_campaign(&store).await;
    let barrier = tempfile::tempdir().unwrap();

    let jobs = two_jobs(&url, Some(&*schema), &c, 64, "50", barrier.path());
    let reports = spawn_workers("store_postgres::two_process_worker", jobs).await;
    eprintln!("postgres workers: {reports:?}");
    assert_eq!(reports.iter().map(|r| r.recorded).sum::<usize>(), 50);
    assert_eq!(reports.iter().map(|r| r.exceeded).sum::<usize>(), 14);
    assert_shared_quota(&store, &c, 50).await;
}

/// The child process of `two_processes_share_one_quota`; does nothing when
/// run by hand without a job.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "worker process of two_processes_share_one_quota, started by it"]
async fn two_process_worker() {
    let Some(job) = Job::from_env() else {
        return;
    };
    let schema = job.schema.clone().expect("the parent names its schema");
    let store = open(&job.store, &schema).await;
    run_worker(Arc::new(store), &job).await;
}

/// The services refuse NUL before it reaches a store; should it reach
/// PostgreSQL anyway (an embedding program calling the store directly), the
/// store answers with a validation error, not an internal one.
#[tokio::test(flavor = "multi_thread")]
async fn nul_reaching_postgres_is_a_validation_error() {
    use accord::store::CampaignStore;
    let Some((store, _guard)) = fixture().await else {
        return;
    };
    let err = store.campaign_by_code("p", "a\0b").await.unwrap_err();
    assert_eq!(err.kind(), accord::ErrorKind::Validation, "{err:?}");
    assert_eq!(err.code(), "invalid_text");
}

/// A pool whose connections work in `schema`.
async fn pool_in(url: &str, schema: &str) -> sqlx::PgPool {
    let options = PgConnectOptions::from_str(url)
        .unwrap()
        .options([("search_path", schema)]);
    PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .unwrap()
}

/// A host application's own sqlx migrations, in a folder (version 1, as
/// Accord's first migration is numbered too).
fn host_migrations() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("1_host_orders.sql"),
        "CREATE TABLE host_orders (id BIGINT PRIMARY KEY);",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("2_host_customers.sql"),
        "CREATE TABLE host_customers (id BIGINT PRIMARY KEY);",
    )
    .unwrap();
    dir
}

/// A host with its own sqlx migrations embeds Accord on the same database
/// and schema: each keeps its own history, neither sees the other's
/// versions, and both run again without complaint.
#[tokio::test(flavor = "multi_thread")]
async fn embedded_beside_a_hosts_own_sqlx_migrations() {
    let Some(url) = database_url() else { return };
    let schema = pg_support::create_schema(&url, "embed", "host").await;
    let pool = pool_in(&url, &schema).await;
    let dir = host_migrations();
    let host = sqlx::migrate::Migrator::new(dir.path()).await.unwrap();
    host.run(&pool).await.unwrap();

    // Skipping migration leaves the database alone; the store reports
    // what is pending.
    let store = PostgresStore::from_pool_unmigrated(pool.clone());
    let pending = store.pending_migrations().await.unwrap();
    assert_eq!(pending.first(), Some(&1), "{pending:?}");
    store.migrate().await.unwrap();
    assert!(store.pending_migrations().await.unwrap().is_empty());
    let store = PostgresStore::from_pool(pool.clone()).await.unwrap();
    // The host's migrator, run again (as at its every start), finds only
    // its own versions; a new host migration applies as usual.
    host.run(&pool).await.unwrap();
    std::fs::write(
        dir.path().join("3_host_more.sql"),
        "ALTER TABLE host_orders ADD COLUMN total BIGINT;",
    )
    .unwrap();
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    let host_versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(host_versions, [1, 2, 3]);
    let accord_versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM accord_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(accord_versions.starts_with(&[1, 2]), "{accord_versions:?}");
    // Accord works in it.
    assert!(
        accord::store::CampaignStore::campaign_by_code(&store, "p", "X")
            .await
            .unwrap()
            .is_none()
    );
    pool.close().await;
}

/// A database an older Accord migrated through sqlx (its versions in
/// `_sqlx_migrations`, beside a host's): the rows move to
/// `accord_migrations`, nothing is applied twice, the host's rows stay.
#[tokio::test(flavor = "multi_thread")]
async fn history_left_in_sqlx_migrations_is_moved_over() {
    let Some(url) = database_url() else { return };
    let schema = pg_support::create_schema(&url, "embed", "legacy").await;
    let pool = pool_in(&url, &schema).await;
    // The older Accord: sqlx's own migrator over the same folder.
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    let old = sqlx::migrate::Migrator::new(folder).await.unwrap();
    old.run(&pool).await.unwrap();
    let store = PostgresStore::from_pool_unmigrated(pool.clone());
    assert!(
        store.pending_migrations().await.unwrap().is_empty(),
        "what sqlx recorded counts as applied"
    );
    sqlx::query("INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) VALUES (20990101, 'host', now(), true, '\\x00', 0)")
        .execute(&pool)
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let left: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(left, [20_990_101], "only the host's row stays");
    let moved: i64 = sqlx::query_scalar("SELECT count(*) FROM accord_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(usize::try_from(moved).unwrap(), old.iter().count());
    store.migrate().await.unwrap();
    pool.close().await;
}
