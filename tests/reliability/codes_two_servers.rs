//! Code pools on PostgreSQL with two server processes on one database:
//! holds and redeems of a few limited-use codes, sent to both servers at
//! once, race for the codes' uses and the campaign's quota; no code is
//! used more than its limit, the quota is never oversold, and confirming
//! every hold (on both servers at once) takes no use twice.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use std::collections::HashMap;

use accord::store::postgres::PostgresStore;
use accord::store::{Counter, RedemptionQuery, RedemptionStore};
use reliability_support::two_servers::{post, TwoServers};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Units of the campaign's quota: fewer than the codes' uses together.
const QUOTA: usize = 12;

/// The codes (normalized) and their usage limits: 14 uses in all.
const CODES: [(&str, i64); 4] = [("RACE1", 3), ("RACE2", 3), ("RACE3", 3), ("RACE4", 5)];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_code_limits_hold_on_two_servers() {
    let Some(servers) = TwoServers::start("codes").await else {
        return;
    };
    let (url, project, token) = (&servers.url, &servers.project, &servers.token);
    let api = |i: usize, rest: &str| servers.api(i, rest);
    let client = load::client();
    let (status, created) = post(
        &client,
        api(0, "/campaigns"),
        token,
        json!({"name": "race codes", "refCode": "RACE",
               "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
               "quotas": [{"key": "${campaignCode}", "value": QUOTA}],
               "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                   "data": [{"attribute": "amount", "value": "5"}]}]}]}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    // Imported with a dash: RACE-1 is RACE1.
    let csv = CODES
        .iter()
        .map(|(code, limit)| [&code[..4], "-", &code[4..], ",", &limit.to_string(), "\n"].concat())
        .collect::<String>();
    let res = client
        .post(api(1, &format!("/campaigns/{id}/codes/import")))
        .bearer_auth(token)
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);

    // 96 requests, 24 a code in lower case, over both servers: holds and
    // redeems alternate. The quota (12) binds before the codes (14 uses).
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..96 {
        let (client, token, url) = (client.clone(), token.clone(), api(i, ""));
        tasks.spawn(async move {
            let code = CODES[i % 4].0.to_lowercase();
            let body = json!({"code": code, "ttl": 600});
            let path = if (i / 4) % 2 == 0 {
                "/holds"
            } else {
                "/redeem/campaign-code"
            };
            let (status, body) = post(&client, format!("{url}{path}"), &token, body).await;
            match status {
                201 => {}
                409 => assert!(
                    body["code"] == "code_exhausted" || body["code"] == "quota_exceeded",
                    "{body}"
                ),
                _ => panic!("{status}: {body}"),
            }
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
    assert_eq!(won, QUOTA, "uses taken by holds and redeems together");

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
        assert!(body["code"].is_string(), "{body}");
        if body.get("replayed").is_none() {
            fresh += 1;
        }
    }
    assert_eq!(fresh, holds.len(), "each hold is confirmed once");
    check_store(url, project).await;
}

/// Through the library: each code's `used` within its limit and equal to
/// its redemptions, the quota at its limit, nothing held.
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
    assert_eq!(page.total, QUOTA as u64);
    let mut by_code: HashMap<String, i64> = HashMap::new();
    for r in &page.items {
        *by_code.entry(r.code.clone().unwrap()).or_default() += 1;
    }
    let mut used_in_all = 0;
    for (code, limit) in CODES {
        let stored = store.code(project, code).await.unwrap().unwrap();
        assert!(stored.used <= limit, "{code}: {} of {limit}", stored.used);
        assert_eq!(
            stored.used,
            by_code.get(code).copied().unwrap_or_default(),
            "{code}"
        );
        used_in_all += stored.used;
    }
    assert_eq!(used_in_all, i64::try_from(QUOTA).unwrap());
    let usage = store
        .counter_usage(
            project,
            &[Counter {
                key: "RACE".to_owned(),
                window: None,
            }],
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(usage[0].used, Decimal::from(QUOTA));
    assert_eq!(usage[0].held, Decimal::ZERO);
    store.close().await;
}
