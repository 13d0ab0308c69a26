//! A short run of examples/load/main.rs (the same code as
//! `cargo run --release --example load -- --self-host`): a few seconds of
//! mixed search, redeem and consent traffic against the real server on
//! loopback, on SQLite and on PostgreSQL. No 5xx, no request without an
//! answer, and no quota oversold or out of balance with its COMPLETE
//! redemptions.
#![cfg(all(feature = "http", feature = "sqlite", feature = "postgres"))]
#![allow(clippy::unwrap_used)]

#[path = "../examples/load/main.rs"]
#[allow(dead_code)]
mod load;
mod reliability_support;

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
};

async fn smoke(database_url: &str) {
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
    smoke(&fresh_schema(&url, "load").await).await;
}
