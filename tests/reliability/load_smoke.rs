//! A short run of examples/load/main.rs (the same code as
//! `cargo run --release --example load -- --self-host`): a few seconds of
//! mixed search, redeem and consent traffic against the real server on
//! loopback, on SQLite and on PostgreSQL. No 5xx, no request without an
//! answer, and no quota oversold or out of balance with its COMPLETE
//! redemptions. And two seconds of the storefront workload: its 200
//! campaigns created through the API, searches answered with actions.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use std::time::Duration;

use load::{Mix, Op};
use reliability_support::{fresh_schema, pg_url};

const MIX: Mix = Mix {
    duration: Duration::from_secs(5),
    concurrency: 16,
    // Few users with 3 redeems each: their quotas are reached during the run
    // (60 redemptions in all), under contention.
    users: 20,
    search_percent: 50,
    redeems_only: false,
};

async fn smoke(database_url: &str) {
    let _alone = reliability_support::TIMING.lock().await;
    let hosted = load::self_host(database_url).await.unwrap();
    let outcome = load::run_load(&hosted.target, MIX, 3).await.unwrap();
    hosted.stop().await.unwrap();
    let report = &outcome.report;
    eprintln!("{}{:?}", report.table(), outcome.quotas);
    assert_eq!(report.server_errors(), 0, "5xx answers");
    assert_eq!(report.transport_errors(), 0, "requests without an answer");
    for op in [Op::Search, Op::Redeem, Op::Consent] {
        let s = &report.ops[&op];
        assert!(s.ok > 0, "{op:?}: no success");
    }
    // The per-user quotas were reached (409s), and held.
    assert!(
        report.ops[&Op::Redeem].client_errors > 0,
        "no quota reached"
    );
    assert!(outcome.quotas.holds(), "{:?}", outcome.quotas);
    // 20 users × 3 = 60 at most.
    assert!(outcome.quotas.complete <= 60, "{:?}", outcome.quotas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_seconds_of_mixed_traffic_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    smoke(&format!(
        "sqlite://{}",
        dir.path().join("load.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_seconds_of_mixed_traffic_on_postgres() {
    let Some(url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&url, "load").await;
    smoke(&url).await;
}

/// Two seconds of the storefront workload (`--workload storefront`): the
/// 200 campaigns created through the API, searches only; every search
/// answered 2xx, with actions (about 10 per search by the workload's design).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_seconds_of_storefront_searches_on_sqlite() {
    let _alone = reliability_support::TIMING.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("load.db").display());
    let hosted = load::self_host(&url).await.unwrap();
    let outcome = load::run_storefront(&hosted.target, Duration::from_secs(2), 8, None)
        .await
        .unwrap();
    hosted.stop().await.unwrap();
    eprintln!("{}", outcome.report.table());
    assert_eq!(outcome.campaigns, 200);
    let s = &outcome.report.ops[&Op::Search];
    assert!(s.ok > 0, "no search answered");
    assert_eq!(s.ok, s.count, "a search without a 2xx answer");
    assert!(s.sampled > 0);
    let per_search = s.actions_per_search();
    assert!(
        (5.0..20.0).contains(&per_search),
        "{per_search} actions per search: the campaigns did not match as generated"
    );
}
