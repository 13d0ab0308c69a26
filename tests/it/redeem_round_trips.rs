//! What one redeem sends to a SQL database: at most two store calls (the
//! campaign lookup, then one write transaction), and a known number of
//! statements. Counted with `accord::store::sql_sent` (feature `testkit`),
//! which counts per thread: each test runs on a current-thread runtime.
//!
//! A *call* is one use of the database by a store method (a pooled
//! connection outside a transaction, or one transaction); a *statement* is
//! every statement sent, `BEGIN` and `COMMIT` included. See
//! `docs/benchmarks.md` for the figures and how they were measured.
//!
//! `ACCORD_REDEEM_ROUNDS=n` runs n redeems after the checks (default 0):
//! the load measured under callgrind for `docs/benchmarks.md`.
#![cfg(all(feature = "testkit", feature = "sqlite"))]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::store::sql_sent;
use accord::store::sqlite::SqliteStore;
use accord::store::{CampaignStore, RedemptionStore};
use accord::{CampaignService, SystemClock};
use serde_json::json;

/// Store calls of one redeem, at most.
const MAX_CALLS: u64 = 2;

fn campaign() -> CampaignInput {
    serde_json::from_value(json!({
        "name": "trips", "refCode": "TRIPS",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1_000_000}],
        "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap()
}

fn request(user: u64, key: Option<String>) -> RedeemRequest {
    let mut r: RedeemRequest = serde_json::from_value(json!({
        "campaignCode": "TRIPS",
        "attribute": {"userId": format!("u{user}"), "tier": "gold"},
        "cart": {"totalPrice": "1500.00", "currency": "THB",
                 "items": [{"sku": "A1", "amount": 2, "price": "750.00"}]}
    }))
    .unwrap();
    r.idempotency_key = key;
    r
}

/// `(calls, statements)` of one redeem.
async fn one<S: CampaignStore + RedemptionStore>(
    service: &CampaignService<S>,
    project: &str,
    request: &RedeemRequest,
) -> (u64, u64) {
    let (calls, statements) = sql_sent();
    service.redeem(project, request).await.unwrap();
    let (c, s) = sql_sent();
    (c - calls, s - statements)
}

/// Checks `store`; `statements`: what one redeem sends (one quota key).
async fn check<S: CampaignStore + RedemptionStore>(store: Arc<S>, what: &str, statements: u64) {
    let project = uuid::Uuid::new_v4().to_string();
    // A refresh interval of zero: a search would ask the store for the
    // catalog version every time; redeem must not.
    let eager = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(Duration::ZERO);
    let service = CampaignService::new(store, Arc::new(SystemClock));
    service
        .create_campaign(&project, campaign(), "t")
        .await
        .unwrap();
    // A search builds the project's snapshot, as a checkout's search
    // before its redeem would; the first redeem is not counted either.
    let search: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": "u0"}})).unwrap();
    for s in [&service, &eager] {
        s.search(&project, &search, &SearchOptions::default())
            .await
            .unwrap();
    }
    service.redeem(&project, &request(0, None)).await.unwrap();
    eager.redeem(&project, &request(0, None)).await.unwrap();
    let mut counted = Vec::new();
    for (label, service, req) in [
        ("without a key", &service, request(1, None)),
        (
            "with a new key",
            &service,
            request(2, Some(uuid::Uuid::new_v4().to_string())),
        ),
        ("refresh interval zero", &eager, request(3, None)),
    ] {
        let (calls, statements) = one(service, &project, &req).await;
        eprintln!("{what}, {label}: {calls} store calls, {statements} statements");
        counted.push((label, calls, statements));
    }
    let rounds: u64 = std::env::var("ACCORD_REDEEM_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if rounds > 0 {
        let start = Instant::now();
        for i in 0..rounds {
            let key = uuid::Uuid::new_v4().to_string();
            service
                .redeem(&project, &request(i % 100, Some(key)))
                .await
                .unwrap();
        }
        let each = start.elapsed() / u32::try_from(rounds).unwrap();
        eprintln!("{what}: {rounds} redeems, {each:?} each");
    }
    for (label, calls, sent) in counted {
        assert!(
            calls <= MAX_CALLS,
            "{what}, a redeem {label} made {calls} store calls ({sent} statements)"
        );
        assert_eq!(sent, statements, "{what}, statements of a redeem {label}");
    }
}

#[tokio::test]
async fn a_redeem_makes_two_store_calls_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("accord.db").to_str().unwrap())
        .await
        .unwrap();
    // The campaign (and whether it has a code pool); BEGIN, the
    // redemption, its usage read and written, the charges, the outbox event
    // and its deliveries, COMMIT.
    check(Arc::new(store), "SQLite", 9).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_redeem_makes_two_store_calls_on_postgres() {
    use std::str::FromStr;

    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    let Some(url) = crate::pg_support::database_url("the redeem round-trip test") else {
        return;
    };
    let schema = crate::pg_support::create_schema(&url, "trips", "").await;
    let options = PgConnectOptions::from_str(&url)
        .unwrap()
        .options([("search_path", schema.name())]);
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    let store = accord::store::postgres::PostgresStore::from_pool(pool)
        .await
        .unwrap();
    // The campaign (and whether it has a code pool); BEGIN, the
    // redemption, the guarded charge, the charges, the outbox event and its
    // deliveries, COMMIT.
    check(Arc::new(store), "PostgreSQL", 8).await;
}
