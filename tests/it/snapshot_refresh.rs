//! Several server processes on one database: each `CampaignService` keeps
//! its own compiled snapshot, and must notice a change another process made
//! (through the store's catalog version) within a second; a redeem planned
//! from an older snapshot is recorded against the stored campaign.
//!
//! Two stores opened separately on one SQLite file, or two pools on one
//! PostgreSQL database, stand for two processes: they share nothing but the
//! database.
#![cfg(all(feature = "sqlite", feature = "postgres"))]
#![allow(clippy::unwrap_used)]

use crate::pg_support;

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::store::memory::MemoryStore;
use accord::store::postgres::PostgresStore;
use accord::store::sqlite::SqliteStore;
use accord::store::{CampaignStore, RedemptionStore};
use accord::{CampaignService, SystemClock};
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

fn campaign(code: &str, status: &str) -> CampaignInput {
    serde_json::from_value(json!({
        "name": code, "refCode": code, "status": status,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap()
}

/// Polls `b` until its search returns `expected` campaign codes, and
/// returns how long that took; fails after two seconds.
async fn seen<S: CampaignStore + RedemptionStore>(
    b: &CampaignService<S>,
    project: &str,
    expected: &[&str],
) -> Duration {
    let start = Instant::now();
    loop {
        let res = b
            .search(
                project,
                &SearchRequest::default(),
                &SearchOptions::default(),
            )
            .await
            .unwrap();
        let codes: Vec<&str> = res
            .actions
            .iter()
            .map(|a| a.campaign.ref_code.as_str())
            .collect();
        if codes == expected {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "after {:?} the other process still sees {codes:?}, not {expected:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn story<S: CampaignStore + RedemptionStore>(a: Arc<S>, b: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let writer = CampaignService::new(a, Arc::new(SystemClock));
    let reader = CampaignService::new(b, Arc::new(SystemClock));
    // The reader builds its snapshot before the change.
    // Immediate, give or take the first snapshot build on a loaded machine.
    assert!(seen(&reader, &project, &[]).await < Duration::from_secs(1));

    let created = writer
        .create_campaign(&project, campaign("NEW", "ENABLE"), "admin")
        .await
        .unwrap();
    let took = seen(&reader, &project, &["NEW"]).await;
    assert!(
        took <= Duration::from_secs(1),
        "creation seen after {took:?}"
    );

    writer
        .update_campaign(&project, created.id, campaign("NEW", "DISABLE"), "admin")
        .await
        .unwrap();
    let took = seen(&reader, &project, &[]).await;
    assert!(took <= Duration::from_secs(1), "update seen after {took:?}");

    let other = writer
        .create_campaign(&project, campaign("OTHER", "ENABLE"), "admin")
        .await
        .unwrap();
    seen(&reader, &project, &["OTHER"]).await;
    writer.delete_campaign(&project, other.id).await.unwrap();
    let took = seen(&reader, &project, &[]).await;
    assert!(
        took <= Duration::from_secs(1),
        "deletion seen after {took:?}"
    );
}

/// Campaign `R`, giving `amount` off anyone.
fn giving(amount: &str, status: &str) -> CampaignInput {
    serde_json::from_value(json!({
        "name": "R", "refCode": "R", "status": status,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [],
            "then": [{"action": "DISCOUNT", "data": [{"attribute": "amount", "value": amount}]}]}]
    }))
    .unwrap()
}

/// A redeem is planned from the process's snapshot, which may be older than
/// the stored campaign: the store's check sends it back to the stored
/// campaign, so the redemption is always of the version stored when it
/// commits. The redeeming process here never refreshes on its own.
async fn redeem_story<S: CampaignStore + RedemptionStore>(a: Arc<S>, b: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let writer = CampaignService::new(a, Arc::new(SystemClock));
    let redeemer = CampaignService::new(b, Arc::new(SystemClock))
        .with_refresh_interval(Duration::from_secs(3600));
    let request: RedeemRequest = serde_json::from_value(json!({"campaignCode": "R"})).unwrap();
    let created = writer
        .create_campaign(&project, giving("10", "ENABLE"), "admin")
        .await
        .unwrap();
    let first = redeemer.redeem(&project, &request).await.unwrap();
    assert_eq!(first.redemption.campaign_version, created.version);
    assert_eq!(first.redemption.action_txs[0].then.data[0].value, "10");

    let edited = writer
        .update_campaign(&project, created.id, giving("20", "ENABLE"), "admin")
        .await
        .unwrap();
    let second = redeemer.redeem(&project, &request).await.unwrap();
    assert_eq!(second.redemption.campaign_version, edited.version);
    assert_eq!(second.redemption.action_txs[0].then.data[0].value, "20");

    writer
        .update_campaign(&project, created.id, giving("20", "DISABLE"), "admin")
        .await
        .unwrap();
    let refused = redeemer.redeem(&project, &request).await.unwrap_err();
    assert_eq!(refused.code(), "campaign_not_active", "{refused:?}");

    writer.delete_campaign(&project, created.id).await.unwrap();
    let refused = redeemer.redeem(&project, &request).await.unwrap_err();
    assert_eq!(refused.code(), "campaign_not_found", "{refused:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_redeems_follow_the_stored_campaign_not_the_snapshot() {
    let store = Arc::new(MemoryStore::new());
    redeem_story(Arc::clone(&store), store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_processes_see_each_others_changes_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    let b = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    story(Arc::new(a), Arc::new(b)).await;
    let a = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    let b = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    redeem_story(Arc::new(a), Arc::new(b)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_processes_see_each_others_changes_within_a_second() {
    let Some(url) = pg_support::database_url("the PostgreSQL refresh test") else {
        return;
    };
    // A schema of its own, so this checkout's migrations meet no others.
    let schema = pg_support::create_schema(&url, "refresh", "").await;
    let open = || async {
        let options = PgConnectOptions::from_str(&url)
            .unwrap()
            .options([("search_path", schema.name())]);
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .unwrap();
        PostgresStore::from_pool(pool).await.unwrap()
    };
    let a = open().await;
    let b = open().await;
    story(Arc::new(a), Arc::new(b)).await;
    let a = open().await;
    let b = open().await;
    redeem_story(Arc::new(a), Arc::new(b)).await;
}
