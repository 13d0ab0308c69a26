//! Quota holds on PostgreSQL with two server processes on one database:
//! holds and redeems sent to both servers at once race for the last units
//! of a calendar quota and a rolling one; exactly the limit wins, and
//! confirming every hold (twice each, on the other server) records each
//! once and oversells nothing.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use accord::store::postgres::PostgresStore;
use accord::store::{Counter, RedemptionQuery, RedemptionStore};
use reliability_support::two_servers::{post, TwoServers};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Units of the campaign's calendar quota.
const LIMIT: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_holds_and_redeems_on_two_servers_never_oversell() {
    let Some(servers) = TwoServers::start("holds").await else {
        return;
    };
    let (url, project, token) = (&servers.url, &servers.project, &servers.token);
    let api = |i: usize, rest: &str| servers.api(i, rest);
    let client = load::client();
    let (status, created) = post(
        &client,
        api(0, "/campaigns"),
        token,
        json!({"name": "last units", "refCode": "LAST",
               "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
               "quotas": [{"key": "${campaignCode}", "value": LIMIT},
                          {"key": "${campaignCode}-${userId}", "value": 1, "window": "PT1H"}],
               "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                   "data": [{"attribute": "amount", "value": "5"}]}]}]}),
    )
    .await;
    assert_eq!(status, 201, "{created}");

    // 48 requests for 10 units, over both servers: holds and redeems
    // alternate; users repeat (the rolling per-user quota refuses a
    // user's second unit within the hour).
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..48 {
        let (client, token, url) = (client.clone(), token.clone(), api(i, ""));
        tasks.spawn(async move {
            let user = format!("u{}", i % 24);
            let body = json!({"campaignCode": "LAST", "attribute": {"userId": user}, "ttl": 600});
            let path = if i % 4 < 2 {
                "/holds"
            } else {
                "/redeem/campaign-code"
            };
            let (status, body) = post(&client, format!("{url}{path}"), &token, body).await;
            assert!(status == 201 || status == 409, "{status}: {body}");
            (status == 201, path == "/holds", body)
        });
    }
    let mut holds = Vec::new();
    let mut won = 0;
    while let Some(r) = tasks.join_next().await {
        let (ok, is_hold, body) = r.unwrap();
        if ok {
            won += 1;
            if is_hold {
                holds.push(body["id"].as_str().unwrap().to_owned());
            }
        }
    }
    assert_eq!(won, LIMIT, "units taken by holds and redeems together");

    // Confirm every hold twice, each time on both servers at once.
    let mut confirms = tokio::task::JoinSet::new();
    for (i, id) in holds.iter().enumerate() {
        for server in [i, i + 1] {
            let (client, token) = (client.clone(), token.clone());
            let url = api(server, &format!("/holds/{id}/confirm"));
            confirms.spawn(async move { post(&client, url, &token, Value::Null).await });
        }
    }
    let mut fresh = 0;
    while let Some(r) = confirms.join_next().await {
        let (status, body) = r.unwrap();
        assert_eq!(status, 201, "{body}");
        if body.get("replayed").is_none() {
            fresh += 1;
        }
    }
    assert_eq!(fresh, holds.len(), "each hold is confirmed once");

    check_store(url, project).await;
    let (status, _) = post(
        &client,
        api(1, "/redeem/campaign-code"),
        token,
        json!({"campaignCode": "LAST", "attribute": {"userId": "late"}}),
    )
    .await;
    assert_eq!(status, 409);
}

/// Through the library: the limit's worth of redemptions, the usage at the
/// limit, nothing held.
async fn check_store(url: &str, project: &str) {
    let store = PostgresStore::connect(url).await.unwrap();
    let page = store
        .list_redemptions(
            project,
            &RedemptionQuery {
                size: 100,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.total, LIMIT as u64);
    let now = chrono::Utc::now();
    let usage = store
        .counter_usage(
            project,
            &[Counter {
                key: "LAST".to_owned(),
                window: None,
            }],
            now,
        )
        .await
        .unwrap();
    assert_eq!(usage[0].used, Decimal::from(LIMIT));
    assert_eq!(usage[0].held, Decimal::ZERO);
    store.close().await;
}
