//! The store behaviour suites (campaign and consent) on SQLite: a temporary
//! database file per test. Also: two OS processes sharing one file, and
//! durability across a reopen.
#![cfg(all(feature = "sqlite", feature = "memory"))] // the memory store is the reference model
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use accord::store::sqlite::SqliteStore;

use crate::suite;

use suite::campaign_store::{
    assert_shared_quota, durability_check, durability_write, shared_quota_campaign,
};
use suite::workers::{run_worker, spawn_workers, two_jobs, Job};

async fn fixture() -> Option<(Arc<SqliteStore>, suite::Guard)> {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    Some((Arc::new(store), Box::new(dir)))
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

/// `SqliteStore` provides every storage role (checked at compile time).
#[test]
fn sqlite_store_is_a_store() {
    fn is_store<S: accord::store::Store>() {}
    is_store::<SqliteStore>();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_memory_database_passes_a_smoke_run() {
    let store = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    suite::campaign_store::redeem_records_with_charges(Arc::clone(&store)).await;
    suite::campaign_store::concurrent_redeems_never_oversell(store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn opens_urls_and_creates_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested-name.db");
    let url = format!("sqlite://{}", path.display());
    let store = SqliteStore::open(&url).await.unwrap();
    suite::campaign_store::insert_get_and_by_code(Arc::new(store.clone())).await;
    store.close().await;
    assert!(path.exists());
    // Opening again runs no migration twice.
    SqliteStore::open(path.to_str().unwrap()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn acknowledged_writes_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accord.db");
    let path = path.to_str().unwrap();
    let store = SqliteStore::open(path).await.unwrap();
    let written = durability_write(&store).await;
    // Dropped without close(): whatever was acknowledged is on disk already.
    drop(store);
    let reopened = SqliteStore::open(path).await.unwrap();
    durability_check(&reopened, &written).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn consent_history_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accord.db");
    let path = path.to_str().unwrap();
    let store = SqliteStore::open(path).await.unwrap();
    let written = suite::consent::store::durability_write(&store).await;
    drop(store);
    let reopened = SqliteStore::open(path).await.unwrap();
    suite::consent::store::durability_check(&reopened, &written).await;
}

/// A database from before the history table (its records, no history
/// rows) gets its history on the next open, equal to what was kept.
#[tokio::test(flavor = "multi_thread")]
async fn consent_history_is_filled_for_an_older_database() {
    use accord::consent::evidence::HistoryQuery;
    use accord::consent::ConsentService;
    use chrono::Duration;
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accord.db");
    let path = path.to_str().unwrap();
    let store = Arc::new(SqliteStore::open(path).await.unwrap());
    let fx = suite::consent::Fx::new(store.clone());
    let c = fx.consent("shop", &["email", "sms"], Some(1)).await;
    fx.advance(Duration::hours(1));
    fx.accept("shop", "u1", &c.id, None).await;
    fx.svc
        .accept_purpose(
            &fx.project,
            suite::consent::Fx::<SqliteStore>::purpose("shop", "u1", "sms"),
        )
        .await
        .unwrap();
    fx.advance(Duration::hours(1));
    let mut data = c.data.clone();
    data.insert("revision".into(), serde_json::json!(2));
    fx.replace("svc-consent-v1", &c.id, serde_json::Value::Object(data))
        .await;
    fx.advance(Duration::days(2));
    let q = HistoryQuery {
        size: 1000,
        ..HistoryQuery::default()
    };
    let kept = fx.svc.subject_history(&fx.project, "u1", &q).await.unwrap();
    assert_eq!(
        kept.total, 4,
        "ACCEPTED, PURPOSE_ACCEPTED, RECONSENT_REQUIRED, EXPIRED"
    );
    let (clock, project) = (fx.clock.clone(), fx.project.clone());
    drop(fx);
    drop(store);
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    sqlx::query("DELETE FROM consent_history")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE consent_history_state SET built = 0")
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    let reopened = Arc::new(SqliteStore::open(path).await.unwrap());
    let svc = ConsentService::new(reopened, clock);
    let filled = svc.subject_history(&project, "u1", &q).await.unwrap();
    assert_eq!(filled, kept);
}

/// 64 redeems against a quota of 50, split between two worker processes
/// that each open the same SQLite file: exactly 50 succeed in total.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_share_one_quota() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let path = path.to_str().unwrap();
    let barrier = dir.path().join("barrier");
    std::fs::create_dir(&barrier).unwrap();
    let store = SqliteStore::open(path).await.unwrap();
    let c = shared_quota_campaign(&store).await;

    let jobs = two_jobs(path, None, &c, 64, "50", &barrier);
    let reports = spawn_workers("store_sqlite::two_process_worker", jobs).await;
    eprintln!("sqlite workers: {reports:?}");
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
    let store = SqliteStore::open(&job.store).await.unwrap();
    run_worker(Arc::new(store), &job).await;
}

/// A new SQLite file at `path` migrated by sqlx itself, as an older Accord
/// did, through Accord's migrations below version `below`.
async fn migrated_by_sqlx(
    path: &std::path::Path,
    below: i64,
) -> (sqlx::SqlitePool, sqlx::migrate::Migrator) {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    let mut old = sqlx::migrate::Migrator::new(folder).await.unwrap();
    old.migrations = old
        .migrations
        .iter()
        .filter(|m| m.version < below)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    old.run(&pool).await.unwrap();
    (pool, old)
}

/// A file an older Accord migrated through sqlx (its versions in
/// `_sqlx_migrations`): opening it moves them to `accord_migrations`
/// without applying anything twice; a host's own sqlx migrations beside
/// Accord's keep their table to themselves.
#[tokio::test(flavor = "multi_thread")]
async fn history_left_in_sqlx_migrations_is_moved_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let (pool, old) = migrated_by_sqlx(&path, i64::MAX).await;

    let store = SqliteStore::open_unmigrated(path.to_str().unwrap())
        .await
        .unwrap();
    assert!(store.pending_migrations().await.unwrap().is_empty());
    store.migrate().await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    let moved: i64 = sqlx::query_scalar("SELECT count(*) FROM accord_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(usize::try_from(moved).unwrap(), old.iter().count());

    // A host's migrator on the same file now sees only its own versions.
    let host = tempfile::tempdir().unwrap();
    std::fs::write(
        host.path().join("1_host.sql"),
        "CREATE TABLE host_orders (id INTEGER PRIMARY KEY);",
    )
    .unwrap();
    let host = sqlx::migrate::Migrator::new(host.path()).await.unwrap();
    host.run(&pool).await.unwrap();
    host.run(&pool).await.unwrap();
    store.migrate().await.unwrap();
    assert!(store.pending_migrations().await.unwrap().is_empty());
    pool.close().await;
}

/// A file whose quota usage was written before keys were numbered in the
/// order first charged: the migration keeps every row and its usage, and
/// keys charged afterwards come after them (`charged_keys` from a cursor).
#[tokio::test(flavor = "multi_thread")]
async fn quota_usage_written_before_the_charged_order_keeps_its_rows() {
    use accord::store::RedemptionStore;
    use suite::campaign_store::{campaign, plan, recorded, t};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let (pool, _) = migrated_by_sqlx(&path, 150).await;
    for (key, used) in [("old-b", "2"), ("old-a", "1")] {
        sqlx::query("INSERT INTO quota_usage (project_id, quota_key, used) VALUES ('p', ?, ?)")
            .bind(key)
            .bind(used)
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;

    let store = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    let before = store.charged_keys("p", None).await.unwrap();
    let mut keys = before.keys.clone();
    keys.sort();
    assert_eq!(keys, ["old-a", "old-b"]);
    let usage = store
        .quota_usage("p", &["old-a".to_owned(), "old-b".to_owned()])
        .await
        .unwrap();
    assert_eq!(usage["old-b"].to_string(), "2");
    recorded(
        &store,
        &plan(&campaign("p", "N"), &[("new", "1", "9")], t(0, 0)),
    )
    .await;
    let after = store.charged_keys("p", Some(before.cursor)).await.unwrap();
    assert_eq!(after.keys, ["new"]);
    assert!(store
        .charged_keys("p", Some(after.cursor))
        .await
        .unwrap()
        .keys
        .is_empty());
}

/// Generating 1,000,000 codes into one campaign's pool on a SQLite file:
/// one transaction of multi-row inserts, under a minute (the figure is in
/// docs/benchmarks.md). Run it in release:
/// `cargo test --release --all-features --test it -- --ignored million_codes`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a timing run: a million rows"]
async fn million_codes_on_sqlite_within_a_minute() {
    use accord::campaign::codes::{GenerateCodes, MAX_GENERATE};
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(crate::common::sqlite_in(&dir).await);
    let service = accord::CampaignService::new(Arc::clone(&store), Arc::new(accord::SystemClock));
    let input: accord::campaign::CampaignInput = serde_json::from_value(serde_json::json!({
        "name": "million", "refCode": "MILLION",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "all", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap();
    let id = service.create_campaign("p", input, "t").await.unwrap().id;
    let request = GenerateCodes {
        count: 1_000_000,
        length: Some(10),
        prefix: Some("M-".to_owned()),
        ..GenerateCodes::default()
    };
    let started = std::time::Instant::now();
    let n = service
        .generate_codes("p", id, &request, MAX_GENERATE, None)
        .await
        .unwrap();
    let took = started.elapsed();
    eprintln!("generated {n} codes in {took:?}");
    assert_eq!(n, 1_000_000);
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    // A redeem by code finds one among the million with one index probe.
    let page = service.list_codes("p", id, 500, 1000).await.unwrap();
    let code = page.items[0].code.to_lowercase();
    let started = std::time::Instant::now();
    let request: accord::campaign::RedeemRequest =
        serde_json::from_value(serde_json::json!({"code": code})).unwrap();
    service.redeem("p", &request).await.unwrap();
    eprintln!("redeem by code among a million: {:?}", started.elapsed());
}
