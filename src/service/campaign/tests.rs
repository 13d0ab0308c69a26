//! The service's search and redeem over a store that counts its reads.
// Helpers of the tests unwrap like the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::core::campaign::{CampaignInput, RedeemRequest, Redemption, SearchRequest};
use crate::core::clock::{ManualClock, SystemClock};
use crate::store::memory::MemoryStore;
use crate::testkit::counting::Counting;

#[test]
fn usage_plus_charge_beyond_decimal_is_exhausted_not_a_panic() {
    // Usage at Decimal::MAX plus any charge overflows: search and the
    // memory store must see the quota as used up. (Found by fuzzing.)
    let now = Utc.with_ymd_and_hms(2026, 6, 15, 0, 0, 0).unwrap();
    let service = CampaignService::new(
        Arc::new(MemoryStore::new()),
        Arc::new(ManualClock::new(now)),
    );
    let max = "79228162514264337593543950335";
    let input: CampaignInput = serde_json::from_value(json!({
        "name": "big", "refCode": "BIG",
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "quotas": [{"key": "k", "value": max, "valueField": "n"}],
        "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap();
    pollster::block_on(service.create_campaign("p", input, "t")).unwrap();
    let redeem = |n: &str| {
        let req: RedeemRequest =
            serde_json::from_value(json!({"campaignCode": "BIG", "attribute": {"n": n}})).unwrap();
        pollster::block_on(service.redeem("p", &req))
    };
    redeem(max).unwrap();
    assert_eq!(redeem("1").unwrap_err().code(), "quota_exceeded");
    let search: SearchRequest = serde_json::from_value(json!({"attribute": {"n": "1"}})).unwrap();
    let found =
        pollster::block_on(service.search("p", &search, &SearchOptions::default())).unwrap();
    assert!(found.actions.is_empty(), "a used-up quota was offered");
}

/// One campaign, offered to any request, once per user.
fn once_per_user(service: &CampaignService<Counting>) {
    let input: CampaignInput = serde_json::from_value(json!({
        "name": "once", "refCode": "ONCE",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1}],
        "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap();
    pollster::block_on(service.create_campaign("p", input, "t")).unwrap();
}

fn offered(service: &CampaignService<Counting>, user: &str) -> bool {
    let req: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": user}})).unwrap();
    let found = pollster::block_on(service.search("p", &req, &SearchOptions::default())).unwrap();
    !found.actions.is_empty()
}

fn redeem_once(service: &CampaignService<Counting>, user: &str) -> Redemption {
    let req: RedeemRequest =
        serde_json::from_value(json!({"campaignCode": "ONCE", "attribute": {"userId": user}}))
            .unwrap();
    pollster::block_on(service.redeem("p", &req))
        .unwrap()
        .redemption
}

fn usage_reads(store: &Counting) -> usize {
    Counting::count(&store.quota_usage)
}

#[test]
fn search_reuses_quota_usage_and_sees_its_own_redeem_and_cancel_at_once() {
    let store = Arc::new(Counting::default());
    let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(Duration::from_secs(3600));
    once_per_user(&service);
    // u0's key is charged: read once, then kept.
    redeem_once(&service, "u0");
    assert!(!offered(&service, "u0"));
    assert!(!offered(&service, "u0"));
    assert_eq!(
        usage_reads(&store),
        1,
        "the second search read the store again"
    );
    // u1's key was never charged: the view of charged keys answers it.
    assert!(offered(&service, "u1"));
    assert!(offered(&service, "u1"));
    assert_eq!(usage_reads(&store), 1, "a key never charged was read");
    assert_eq!(
        Counting::count(&store.charged_keys),
        1,
        "the view read once"
    );
    let r = redeem_once(&service, "u1");
    assert!(
        !offered(&service, "u1"),
        "a search after the redeem offered its quota again"
    );
    assert_eq!(usage_reads(&store), 2);
    // Other users' keys were not touched, and are still never charged.
    assert!(offered(&service, "u2"));
    assert_eq!(usage_reads(&store), 2);
    pollster::block_on(service.cancel_redemption("p", r.id)).unwrap();
    assert!(
        offered(&service, "u1"),
        "a search after the cancel did not see it"
    );
    assert_eq!(usage_reads(&store), 3);
    assert_eq!(Counting::count(&store.charged_keys), 1);
}

#[test]
fn new_users_searches_read_the_charged_keys_once_per_refresh_interval() {
    let store = Arc::new(Counting::default());
    let refresh = Duration::from_millis(200);
    let a = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(refresh);
    let b = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(refresh);
    once_per_user(&a);
    let start = Instant::now();
    for user in ["n1", "n2", "n3"] {
        assert!(offered(&b, user));
    }
    if start.elapsed() < refresh {
        assert_eq!(usage_reads(&store), 0);
        assert_eq!(Counting::count(&store.charged_keys), 1);
    }
    // Another service charges n4's key: b's view has it after an update.
    redeem_once(&a, "n4");
    let start = Instant::now();
    while offered(&b, "n4") {
        assert!(
            start.elapsed() < refresh + Duration::from_secs(2),
            "b never saw a's redeem"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(Counting::count(&store.charged_keys) >= 2);
}

#[test]
fn another_services_redeem_is_seen_within_the_refresh_interval() {
    let store = Arc::new(Counting::default());
    let refresh = Duration::from_millis(300);
    let a = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(refresh);
    let b = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(refresh);
    once_per_user(&a);
    let read = Instant::now();
    assert!(offered(&b, "u1"));
    redeem_once(&a, "u1");
    let still = offered(&b, "u1");
    if read.elapsed() < refresh {
        assert!(still, "b read the store again within its refresh interval");
    }
    let start = Instant::now();
    while offered(&b, "u1") {
        assert!(
            start.elapsed() < refresh + Duration::from_secs(2),
            "b never saw a's redeem"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Redeem itself never trusted b's view.
    let req: RedeemRequest =
        serde_json::from_value(json!({"campaignCode": "ONCE", "attribute": {"userId": "u1"}}))
            .unwrap();
    let err = pollster::block_on(b.redeem("p", &req)).unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");
}

#[test]
fn a_refresh_interval_of_zero_reads_usage_on_every_search() {
    let store = Arc::new(Counting::default());
    let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(Duration::ZERO);
    once_per_user(&service);
    for _ in 0..3 {
        assert!(offered(&service, "u1"));
    }
    assert_eq!(usage_reads(&store), 3);
}
