//! What a search sends to a SQL database: nothing for a key never charged
//! (the view of charged keys answers it, `service/campaign/charged.rs`) or
//! whose usage is known (the same user again within the refresh interval),
//! one store call of one statement for the charged keys it does not know
//! (every one read at once, with no transaction around it). Counted with
//! `accord::store::sql_sent` (feature `testkit`), per thread: each test runs
//! on a current-thread runtime.
#![cfg(all(feature = "testkit", feature = "sqlite"))]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::store::sql_sent;
use accord::store::{CampaignStore, RedemptionStore};
use accord::{CampaignService, SystemClock};
use serde_json::json;

/// A campaign with a per-user quota, a per-user rolling quota and a
/// campaign-wide one: a search charges three keys of both kinds.
fn campaign(code: &str) -> CampaignInput {
    serde_json::from_value(json!({
        "name": code, "refCode": code,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [
            {"key": "${campaignCode}-${userId}", "value": 5},
            {"key": "${campaignCode}-${userId}", "value": 2, "window": "PT24H"},
            {"key": "${campaignCode}", "value": 1_000_000}
        ],
        "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap()
}

/// `(calls, statements)` of one search for `user`.
async fn one<S: CampaignStore + RedemptionStore>(
    service: &CampaignService<S>,
    project: &str,
    user: &str,
) -> (u64, u64) {
    let search: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": user}})).unwrap();
    let (calls, statements) = sql_sent();
    let found = service
        .search(project, &search, &SearchOptions::default())
        .await
        .unwrap();
    let (c, s) = sql_sent();
    assert_eq!(found.actions.len(), 3, "every campaign offered");
    (c - calls, s - statements)
}

async fn check<S: CampaignStore + RedemptionStore>(store: Arc<S>, what: &str) {
    let project = uuid::Uuid::new_v4().to_string();
    let service = CampaignService::new(store, Arc::new(SystemClock));
    for code in ["A", "B", "C"] {
        service
            .create_campaign(&project, campaign(code), "t")
            .await
            .unwrap();
    }
    // The first search builds the project's snapshot and reads its view
    // of charged keys (none yet).
    one(&service, &project, "u0").await;
    // u0 redeems A: keys `A-u0` (both quotas) and `A` are charged.
    let redeem: RedeemRequest =
        serde_json::from_value(json!({"campaignCode": "A", "attribute": {"userId": "u0"}}))
            .unwrap();
    service.redeem(&project, &redeem).await.unwrap();
    let new_user = one(&service, &project, "u1").await;
    let again = one(&service, &project, "u1").await;
    let another = one(&service, &project, "u2").await;
    eprintln!(
        "{what}: a new user's search {new_user:?}, the same user again {again:?}, \
         another new user {another:?}"
    );
    assert_eq!(
        new_user,
        (1, 1),
        "{what}: (calls, statements) of a new user: `A`'s usage, nothing else"
    );
    assert_eq!(again, (0, 0), "{what}: the same user again");
    assert_eq!(another, (0, 0), "{what}: another new user");
}

#[tokio::test]
async fn a_new_users_search_is_one_statement_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    check(Arc::new(store), "SQLite").await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_new_users_search_is_one_statement_on_postgres() {
    let Some((store, _schema)) =
        crate::pg_support::store_in_schema("the search round-trip test", "searchtrips").await
    else {
        return;
    };
    check(Arc::new(store), "PostgreSQL").await;
}
