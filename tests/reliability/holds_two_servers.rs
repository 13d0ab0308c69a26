//! Quota holds on PostgreSQL with two server processes on one database:
//! holds and redeems sent to both servers at once race for the last units
//! of a calendar quota and a rolling one; exactly the limit wins, and
//! confirming every hold (twice each, on the other server) records each
//! once and oversells nothing.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use std::time::Duration;

use accord::http::Claims;
use accord::store::postgres::PostgresStore;
use accord::store::{Counter, RedemptionQuery, RedemptionStore};
use reliability_support::{fresh_schema, pg_url, ServerProcess};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// The child server of the crash tests serves these too.
const CHILD: &str = "crash_safety::crash_server_child";

/// Units of the campaign's calendar quota.
const LIMIT: usize = 10;

async fn post(client: &reqwest::Client, url: String, token: &str, body: Value) -> (u16, Value) {
    let res = client
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let replayed = res.headers().contains_key("idempotent-replayed");
    let mut body: Value = res.json().await.unwrap_or(Value::Null);
    if replayed {
        body["replayed"] = json!(true);
    }
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_holds_and_redeems_on_two_servers_never_oversell() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "holds").await;
    let dir = tempfile::tempdir().unwrap();
    let secret = load::new_secret();
    let project = format!("holds-{}", &load::new_secret()[..12]);
    let token = Claims::all_scopes("holds", &[&project], Duration::from_secs(3600))
        .sign_hs256(secret.as_bytes())
        .unwrap();
    let a = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "a").await;
    let b = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "b").await;
    let bases = [a.base.clone(), b.base.clone()];
    let api =
        |i: usize, rest: &str| format!("{}/campaign/api/projects/{project}{rest}", bases[i % 2]);
    let client = load::client();
    let (status, created) = post(
        &client,
        api(0, "/campaigns"),
        &token,
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

    check_store(&url, &project).await;
    let (status, _) = post(
        &client,
        api(1, "/redeem/campaign-code"),
        &token,
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
