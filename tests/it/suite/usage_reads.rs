//! The quota usage search reads, on every store: many counters read at
//! once agree with each read alone (calendar usage, live and expired
//! holds, rolling windows, keys never charged, more keys than one
//! statement takes), and a search sees its own service's writes at once
//! however long its refresh interval.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use accord::campaign::{HoldRequest, QuotaWindow, RedeemRequest, SearchOptions, SearchRequest};
use accord::clock::ManualClock;
use accord::store::{Counter, CounterUsage, RedemptionStore, Store};
use accord::{CampaignService, Clock};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! usage_read_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(usage_reads, $fixture;
            many_counters_read_at_once_agree_with_each_alone,
            search_sees_its_own_writes_at_once,
        );
    };
}

pub(crate) use usage_read_tests;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn counter(key: &str, window: Option<&str>) -> Counter {
    Counter {
        key: key.to_owned(),
        window: window.map(|w| w.parse::<QuotaWindow>().unwrap()),
    }
}

fn usage(used: &str, held: &str) -> CounterUsage {
    CounterUsage {
        used: d(used),
        held: d(held),
    }
}

async fn add_campaign<S: Store>(
    service: &CampaignService<S>,
    project: &str,
    code: &str,
    quotas: Value,
) {
    let c = json!({
        "name": code, "refCode": code,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": quotas,
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
            "data": [{"attribute": "amount", "value": "1"}]}]}]
    });
    service
        .create_campaign(project, serde_json::from_value(c).unwrap(), "admin")
        .await
        .unwrap();
}

fn redeem_request(code: &str, user: &str) -> RedeemRequest {
    serde_json::from_value(json!({"campaignCode": code, "attribute": {"userId": user}})).unwrap()
}

fn hold_request(code: &str, user: &str, ttl: i64) -> HoldRequest {
    HoldRequest {
        redeem: redeem_request(code, user),
        ttl: Some(json!(ttl)),
    }
}

/// Calendar usage, a live and an expired hold, a rolling window with a
/// charge in it and one just out, a live hold on a rolling counter, and
/// keys nobody charged: one read of all of them (with duplicates, and with
/// enough keys to need more than one statement) gives what each read alone
/// gives.
pub async fn many_counters_read_at_once_agree_with_each_alone<S: Store>(store: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let clock = Arc::new(ManualClock::new(at("2026-06-01T10:00:00Z")));
    let service = CampaignService::new(Arc::clone(&store), clock.clone() as Arc<dyn Clock>);
    let per_user = |window: Option<&str>| {
        let mut q = json!({"key": "${campaignCode}-${userId}", "value": 100});
        if let Some(w) = window {
            q["window"] = json!(w);
        }
        json!([q])
    };
    add_campaign(&service, &project, "CAL", per_user(None)).await;
    add_campaign(&service, &project, "ROLL", per_user(Some("PT24H"))).await;
    let redeem = |code: &'static str, user: &'static str| {
        let service = &service;
        let project = &project;
        async move {
            service
                .redeem(project, &redeem_request(code, user))
                .await
                .unwrap();
        }
    };
    let hold = |code: &'static str, user: &'static str, ttl: i64| {
        let service = &service;
        let project = &project;
        async move {
            service
                .place_hold(project, &hold_request(code, user, ttl))
                .await
                .unwrap();
        }
    };
    redeem("ROLL", "u1").await;
    clock.set(at("2026-06-02T09:00:00Z"));
    redeem("ROLL", "u1").await;
    clock.set(at("2026-06-02T09:59:00Z"));
    redeem("CAL", "u1").await;
    redeem("CAL", "u1").await;
    hold("CAL", "u3", 30).await;
    // The first rolling charge counts until exactly now: no longer.
    clock.set(at("2026-06-02T10:00:00Z"));
    hold("CAL", "u2", 60).await;
    hold("ROLL", "u2", 600).await;
    let now = clock.now();

    let expected = [
        (counter("CAL-u1", None), usage("2", "0")),
        (counter("CAL-u2", None), usage("1", "1")),
        (counter("CAL-u3", None), usage("0", "0")),
        (counter("ROLL-u1", Some("PT24H")), usage("1", "0")),
        (counter("ROLL-u2", Some("PT24H")), usage("1", "1")),
        // A rolling key has a calendar row of its own, never charged.
        (counter("ROLL-u1", None), usage("0", "0")),
        (counter("CAL-u1", Some("PT24H")), usage("0", "0")),
        (counter("ROLL-u1", Some("PT1H")), usage("0", "0")),
        (counter("nobody", None), usage("0", "0")),
        (counter("nobody", Some("PT24H")), usage("0", "0")),
        // Twice: both answered.
        (counter("CAL-u1", None), usage("2", "0")),
    ];
    for (c, u) in &expected {
        let alone = store
            .counter_usage(&project, std::slice::from_ref(c), now)
            .await
            .unwrap();
        assert_eq!(alone, [*u], "{c:?} read alone");
    }
    let counters: Vec<Counter> = expected.iter().map(|(c, _)| c.clone()).collect();
    let want: Vec<CounterUsage> = expected.iter().map(|(_, u)| *u).collect();
    let together = store.counter_usage(&project, &counters, now).await.unwrap();
    assert_eq!(together, want, "read together");
    // More keys of each kind than one statement takes.
    let mut many = Vec::new();
    for i in 0..1_200 {
        many.push(counter(&format!("none-{i}"), None));
        if i % 2 == 0 {
            many.push(counter(&format!("none-{i}"), Some("PT24H")));
        }
    }
    let split = many.len() / 2;
    many.splice(split..split, counters.iter().cloned());
    let read = store.counter_usage(&project, &many, now).await.unwrap();
    assert_eq!(read.len(), many.len());
    assert_eq!(&read[split..split + counters.len()], want.as_slice());
    assert!(
        read[..split]
            .iter()
            .chain(&read[split + counters.len()..])
            .all(|u| *u == CounterUsage::default()),
        "keys never charged"
    );
}

/// Whether a search for `user` offers the campaign.
async fn offered<S: Store>(service: &CampaignService<S>, project: &str, user: &str) -> bool {
    let req: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": user}})).unwrap();
    !service
        .search(project, &req, &SearchOptions::default())
        .await
        .unwrap()
        .actions
        .is_empty()
}

/// A service that trusts what it read for an hour still sees at once the
/// redeems, cancels, holds and releases it made itself.
pub async fn search_sees_its_own_writes_at_once<S: Store>(store: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let service = CampaignService::new(store, Arc::new(accord::SystemClock))
        .with_refresh_interval(StdDuration::from_secs(3600));
    add_campaign(
        &service,
        &project,
        "ONCE",
        json!([{"key": "${campaignCode}-${userId}", "value": 1}]),
    )
    .await;
    assert!(offered(&service, &project, "u1").await);
    assert!(offered(&service, &project, "u1").await, "read again");
    let r = service
        .redeem(&project, &redeem_request("ONCE", "u1"))
        .await
        .unwrap()
        .redemption;
    assert!(!offered(&service, &project, "u1").await, "after its redeem");
    assert!(offered(&service, &project, "u2").await, "another user");
    service.cancel_redemption(&project, r.id).await.unwrap();
    assert!(offered(&service, &project, "u1").await, "after its cancel");
    let h = service
        .place_hold(&project, &hold_request("ONCE", "u1", 600))
        .await
        .unwrap();
    assert!(!offered(&service, &project, "u1").await, "after its hold");
    service.release_hold(&project, h.id).await.unwrap();
    assert!(offered(&service, &project, "u1").await, "after its release");
    // Many new users, each read once: none charged.
    for i in 0..50 {
        assert!(offered(&service, &project, &format!("new-{i}")).await);
    }
}
