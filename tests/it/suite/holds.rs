//! Rolling quota windows and quota holds on every store: exact window
//! edges, windows across a daylight saving change and a year end, holds
//! that count until confirmed, released or expired (with no sweeper), and
//! races of holds and redeems for the last units.

use std::sync::Arc;

use accord::campaign::{HoldRequest, HoldStatus, QuotaWindow, RedeemRequest, TimeZones};
use accord::clock::ManualClock;
use accord::store::{Counter, CounterUsage, RedemptionStore, Store};
use accord::{CampaignService, Clock};
use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! holds_tests {
    ($fixture:path) => {
        $crate::suite::holds::holds_tests!(@each $fixture;
            rolling_window_edges_are_exact,
            rolling_window_ignores_dst_and_year_ends,
            rolling_window_cancel_gives_back,
            rolling_and_calendar_counters_of_one_key_are_apart,
            concurrent_rolling_redeems_never_oversell,
            holds_count_until_released_or_expired,
            confirm_is_idempotent_and_charges_once,
            holds_work_with_windows_and_per_user_keys,
            holds_and_redeems_race_for_the_last_units,
            sweeping_changes_no_usage,
        );
    };
    (@each $fixture:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::holds::$behaviour(store).await;
            }
        )+
    };
}

pub(crate) use holds_tests;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

struct Fixture<S: Store> {
    store: Arc<S>,
    project: String,
    clock: Arc<ManualClock>,
    service: CampaignService<S>,
}

/// A service over `store` in a fresh project (zone Europe/Berlin), its
/// clock at `now`, with one campaign `code` holding `quotas`.
async fn setup<S: Store>(store: Arc<S>, now: &str, code: &str, quotas: Value) -> Fixture<S> {
    let project = uuid::Uuid::new_v4().to_string();
    let clock = Arc::new(ManualClock::new(at(now)));
    let mut zones = TimeZones::default();
    zones
        .projects
        .insert(project.clone(), chrono_tz::Tz::Europe__Berlin);
    let service = CampaignService::new(Arc::clone(&store), clock.clone() as Arc<dyn Clock>)
        .with_time_zones(zones)
        .with_refresh_interval(std::time::Duration::ZERO);
    add_campaign(&service, &project, code, quotas).await;
    Fixture {
        store,
        project,
        clock,
        service,
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

fn request(code: &str, user: &str) -> RedeemRequest {
    serde_json::from_value(json!({"campaignCode": code, "attribute": {"userId": user}})).unwrap()
}

fn hold_request(code: &str, user: &str, ttl: i64) -> HoldRequest {
    HoldRequest {
        redeem: request(code, user),
        ttl: Some(json!(ttl)),
    }
}

impl<S: Store> Fixture<S> {
    fn set(&self, now: &str) {
        self.clock.set(at(now));
    }

    /// Whether a redeem of `code` for `user` is recorded now.
    async fn redeems(&self, code: &str, user: &str) -> bool {
        match self
            .service
            .redeem(&self.project, &request(code, user))
            .await
        {
            Ok(_) => true,
            Err(e) if e.code() == "quota_exceeded" => false,
            Err(e) => panic!("redeem: {e}"),
        }
    }

    async fn usage(&self, key: &str, window: Option<&str>) -> CounterUsage {
        let counter = Counter {
            key: key.to_owned(),
            window: window.map(|w| w.parse::<QuotaWindow>().unwrap()),
        };
        let now = self.clock.now();
        self.store
            .counter_usage(&self.project, &[counter], now)
            .await
            .unwrap()[0]
    }

    /// What search offers `user` now (the campaign, or nothing).
    async fn offered(&self, user: &str) -> bool {
        let req = serde_json::from_value(json!({"attribute": {"userId": user}})).unwrap();
        !self
            .service
            .search(&self.project, &req, &Default::default())
            .await
            .unwrap()
            .actions
            .is_empty()
    }
}

/// At most 3 in any 24 hours: a charge counts until exactly 24 hours after
/// it, not a microsecond longer; search and the store read agree.
pub async fn rolling_window_edges_are_exact<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}-${userId}", "value": 3, "window": "PT24H"}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "ROLL", quotas).await;
    assert!(f.redeems("ROLL", "u1").await);
    f.set("2026-06-01T11:00:00Z");
    assert!(f.redeems("ROLL", "u1").await);
    f.set("2026-06-01T12:00:00Z");
    assert!(f.redeems("ROLL", "u1").await);
    f.set("2026-06-01T13:00:00Z");
    assert!(!f.redeems("ROLL", "u1").await, "a 4th within 24 hours");
    assert!(!f.offered("u1").await);
    assert!(f.offered("u2").await, "another user's counter is apart");
    assert_eq!(f.usage("ROLL-u1", Some("P1D")).await.used, d("3"));
    // One microsecond before the first charge is 24 hours old: still 3.
    f.set("2026-06-02T09:59:59.999999Z");
    assert!(!f.redeems("ROLL", "u1").await);
    assert_eq!(f.usage("ROLL-u1", Some("P1D")).await.used, d("3"));
    // Exactly 24 hours after it: it no longer counts.
    f.set("2026-06-02T10:00:00Z");
    assert_eq!(f.usage("ROLL-u1", Some("P1D")).await.used, d("2"));
    assert!(f.offered("u1").await);
    assert!(f.redeems("ROLL", "u1").await);
    assert!(!f.redeems("ROLL", "u1").await);
    // The redemption records the window with its charge.
    let list = f
        .service
        .list_redemptions(&f.project, &Default::default())
        .await
        .unwrap();
    assert_eq!(list.items[0].quotas[0].window.unwrap().to_string(), "P1D");
    // The quota view shows the usage in the window ending now.
    let view = f
        .service
        .quota_usage(
            &f.project,
            list.items[0].campaign_id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap();
    assert_eq!(view.items.len(), 1);
    assert_eq!(view.items[0].key, "ROLL-u1");
    assert_eq!(view.items[0].used, d("3"));
    assert_eq!(view.items[0].window.unwrap().seconds(), 86_400);
}

/// A window is a duration: across Berlin's spring change (a 23-hour day)
/// 24 hours are still 24 hours, and a 7-day window runs over a year end.
pub async fn rolling_window_ignores_dst_and_year_ends<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}-${userId}", "value": 1, "window": "P1D"}]);
    // 12:00 UTC on 28 March 2026 is 13:00 in Berlin (winter time); 24
    // hours later it is 14:00 local (summer time).
    let f = setup(store, "2026-03-28T12:00:00Z", "DST", quotas).await;
    assert!(f.redeems("DST", "u1").await);
    f.set("2026-03-29T11:59:59Z");
    assert!(!f.redeems("DST", "u1").await, "23h59m59s later");
    f.set("2026-03-29T12:00:00Z");
    assert!(f.redeems("DST", "u1").await, "24 hours later");
    // Autumn change (25-hour day).
    f.set("2026-10-24T12:00:00Z");
    assert!(f.redeems("DST", "u2").await);
    f.set("2026-10-25T11:59:59Z");
    assert!(!f.redeems("DST", "u2").await);
    f.set("2026-10-25T12:00:00Z");
    assert!(f.redeems("DST", "u2").await);
    // A week over the year end.
    let week = json!([{"key": "${campaignCode}-${userId}", "value": 2, "window": "P7D"}]);
    add_campaign(&f.service, &f.project, "WEEK", week).await;
    f.set("2026-12-29T23:00:00Z");
    assert!(f.redeems("WEEK", "u1").await);
    f.set("2027-01-02T08:00:00Z");
    assert!(f.redeems("WEEK", "u1").await);
    f.set("2027-01-05T22:59:59Z");
    assert!(!f.redeems("WEEK", "u1").await);
    f.set("2027-01-05T23:00:00Z");
    assert!(f.redeems("WEEK", "u1").await, "the first is 7 days old");
    assert!(!f.redeems("WEEK", "u1").await);
}

/// Cancelling a redemption takes its charge out of every window.
pub async fn rolling_window_cancel_gives_back<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}", "value": "2.5", "window": "PT1H",
                         "valueField": "amount"}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "C", quotas).await;
    assert!(f.redeems("C", "u1").await);
    let r = f
        .service
        .redeem(&f.project, &request("C", "u2"))
        .await
        .unwrap();
    assert!(!f.redeems("C", "u3").await, "2 + 1 > 2.5");
    assert_eq!(f.usage("C", Some("PT1H")).await.used, d("2"));
    f.service
        .cancel_redemption(&f.project, r.redemption.id)
        .await
        .unwrap();
    // A second cancel gives back nothing more.
    f.service
        .cancel_redemption(&f.project, r.redemption.id)
        .await
        .unwrap();
    assert_eq!(f.usage("C", Some("PT1H")).await.used, d("1"));
    assert!(f.redeems("C", "u3").await);
}

/// A rolling counter is its key and its window: a calendar quota and a
/// rolling one rendering the same key count apart, and so do two windows.
pub async fn rolling_and_calendar_counters_of_one_key_are_apart<S: Store>(store: Arc<S>) {
    let quotas = json!([
        {"key": "K-${userId}", "value": 5},
        {"key": "K-${userId}", "value": 2, "window": "PT1H"},
        {"key": "K-${userId}", "value": 3, "window": "P1D"}
    ]);
    let f = setup(store, "2026-06-01T10:00:00Z", "SAME", quotas).await;
    assert!(f.redeems("SAME", "u1").await);
    assert!(f.redeems("SAME", "u1").await);
    assert!(!f.redeems("SAME", "u1").await, "2 per hour");
    f.set("2026-06-01T11:00:00Z");
    assert!(f.redeems("SAME", "u1").await);
    assert!(!f.redeems("SAME", "u1").await, "3 per day");
    assert_eq!(f.usage("K-u1", None).await.used, d("3"));
    assert_eq!(f.usage("K-u1", Some("PT1H")).await.used, d("1"));
    assert_eq!(f.usage("K-u1", Some("P1D")).await.used, d("3"));
    let list = f
        .service
        .list_redemptions(&f.project, &Default::default())
        .await
        .unwrap();
    let windows: Vec<Option<i64>> = list.items[0]
        .quotas
        .iter()
        .map(|c| c.window.map(QuotaWindow::seconds))
        .collect();
    assert_eq!(windows, [None, Some(3_600), Some(86_400)]);
}

/// Many redeems racing for a rolling quota: exactly the limit wins.
pub async fn concurrent_rolling_redeems_never_oversell<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}", "value": 5, "window": "PT10M"}]);
    let f = Arc::new(setup(store, "2026-06-01T10:00:00Z", "RACE", quotas).await);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..24 {
        let f = Arc::clone(&f);
        tasks.spawn(async move { f.redeems("RACE", &format!("u{i}")).await });
    }
    let mut won = 0;
    while let Some(ok) = tasks.join_next().await {
        won += usize::from(ok.unwrap());
    }
    assert_eq!(won, 5);
    assert_eq!(f.usage("RACE", Some("PT10M")).await.used, d("5"));
}

/// A hold counts toward the limit from the moment it is placed until it is
/// released or expires — on its own, with nothing sweeping.
pub async fn holds_count_until_released_or_expired<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}", "value": 2}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "H", quotas).await;
    let a = f
        .service
        .place_hold(&f.project, &hold_request("H", "u1", 60))
        .await
        .unwrap();
    assert_eq!(a.status, HoldStatus::Held);
    assert_eq!(a.expires_at, at("2026-06-01T10:01:00Z"));
    assert_eq!(
        f.usage("H", None).await,
        CounterUsage {
            used: d("1"),
            held: d("1")
        }
    );
    assert!(f.redeems("H", "u2").await);
    assert!(!f.redeems("H", "u3").await, "the hold keeps the last unit");
    let refused = f
        .service
        .place_hold(&f.project, &hold_request("H", "u3", 60))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "quota_exceeded");
    // Released: the unit is back at once.
    let released = f.service.release_hold(&f.project, a.id).await.unwrap();
    assert_eq!(released.status, HoldStatus::Released);
    assert_eq!(f.usage("H", None).await.used, d("1"));
    let again = f.service.release_hold(&f.project, a.id).await.unwrap();
    assert_eq!(again.status, HoldStatus::Released);
    assert_eq!(f.usage("H", None).await.used, d("1"), "released twice");
    let confirm = f.service.confirm_hold(&f.project, a.id).await.unwrap_err();
    assert_eq!(confirm.code(), "hold_released");
    // Expired: not counted from its expiry on, by reads and by checks.
    let b = f
        .service
        .place_hold(&f.project, &hold_request("H", "u4", 30))
        .await
        .unwrap();
    assert!(!f.offered("u5").await);
    f.set("2026-06-01T10:00:29.999999Z");
    assert_eq!(f.usage("H", None).await.used, d("2"));
    f.set("2026-06-01T10:00:30Z");
    assert_eq!(f.usage("H", None).await, CounterUsage::default_with(d("1")));
    assert!(f.offered("u5").await);
    assert_eq!(
        f.service.hold(&f.project, b.id).await.unwrap().status,
        HoldStatus::Expired
    );
    let late = f.service.confirm_hold(&f.project, b.id).await.unwrap_err();
    assert_eq!(late.code(), "hold_expired");
    assert!(
        f.redeems("H", "u5").await,
        "the expired hold's unit is free"
    );
    assert_eq!(f.usage("H", None).await.used, d("2"));
    // Releasing the expired hold gives nothing back twice.
    f.service.release_hold(&f.project, b.id).await.unwrap();
    assert_eq!(f.usage("H", None).await.used, d("2"));
    assert!(!f.redeems("H", "u6").await);
    let unknown = f
        .service
        .confirm_hold(&f.project, uuid::Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "hold_not_found");
}

/// Confirming turns the hold into its redemption without charging again;
/// a second confirm returns the same redemption; cancelling it gives the
/// unit back.
pub async fn confirm_is_idempotent_and_charges_once<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}-${userId}", "value": 1},
                        {"key": "${campaignCode}", "value": 10}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "CF", quotas).await;
    let h = f
        .service
        .place_hold(&f.project, &hold_request("CF", "u1", 600))
        .await
        .unwrap();
    f.set("2026-06-01T10:05:00Z");
    let first = f.service.confirm_hold(&f.project, h.id).await.unwrap();
    assert!(!first.replayed);
    assert_eq!(first.redemption.id, h.redemption_id);
    assert_eq!(first.redemption.created_date, at("2026-06-01T10:05:00Z"));
    assert_eq!(first.redemption.quotas, h.quotas);
    assert_eq!(first.redemption.user_id.as_deref(), Some("u1"));
    let second = f.service.confirm_hold(&f.project, h.id).await.unwrap();
    assert!(second.replayed);
    assert_eq!(second.redemption, first.redemption);
    assert_eq!(
        f.usage("CF-u1", None).await,
        CounterUsage::default_with(d("1"))
    );
    assert_eq!(f.usage("CF", None).await.used, d("1"));
    // Past the hold's expiry the redemption still counts.
    f.set("2026-06-02T10:00:00Z");
    assert_eq!(f.usage("CF-u1", None).await.used, d("1"));
    assert!(!f.redeems("CF", "u1").await);
    let read = f.service.hold(&f.project, h.id).await.unwrap();
    assert_eq!(read.status, HoldStatus::Confirmed);
    assert_eq!(read.ended_date, Some(at("2026-06-01T10:05:00Z")));
    // Releasing a confirmed hold changes nothing.
    let kept = f.service.release_hold(&f.project, h.id).await.unwrap();
    assert_eq!(kept.status, HoldStatus::Confirmed);
    assert_eq!(f.usage("CF-u1", None).await.used, d("1"));
    f.service
        .cancel_redemption(&f.project, first.redemption.id)
        .await
        .unwrap();
    assert_eq!(f.usage("CF-u1", None).await.used, d("0"));
    assert_eq!(f.usage("CF", None).await.used, d("0"));
    assert!(f.redeems("CF", "u1").await);
}

/// Holds reserve rolling windows and per-user keys alike; a confirmed
/// hold counts in the window from when it was placed.
pub async fn holds_work_with_windows_and_per_user_keys<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}-${userId}", "value": 2, "window": "PT1H"}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "W", quotas).await;
    let a = f
        .service
        .place_hold(&f.project, &hold_request("W", "u1", 600))
        .await
        .unwrap();
    let b = f
        .service
        .place_hold(&f.project, &hold_request("W", "u1", 60))
        .await
        .unwrap();
    assert!(!f.redeems("W", "u1").await);
    assert!(f.redeems("W", "u2").await, "per user");
    assert_eq!(
        f.usage("W-u1", Some("PT1H")).await,
        CounterUsage {
            used: d("2"),
            held: d("2")
        }
    );
    // b expires: its unit is free again within the window.
    f.set("2026-06-01T10:01:00Z");
    assert_eq!(f.usage("W-u1", Some("PT1H")).await.held, d("1"));
    f.service.confirm_hold(&f.project, a.id).await.unwrap();
    assert_eq!(
        f.service
            .confirm_hold(&f.project, b.id)
            .await
            .unwrap_err()
            .code(),
        "hold_expired"
    );
    assert_eq!(
        f.usage("W-u1", Some("PT1H")).await,
        CounterUsage::default_with(d("1"))
    );
    assert!(f.redeems("W", "u1").await);
    assert!(!f.redeems("W", "u1").await);
    // The confirmed hold counts from 10:00, when it was placed.
    f.set("2026-06-01T11:00:00Z");
    assert_eq!(f.usage("W-u1", Some("PT1H")).await.used, d("1"));
    let live = f
        .service
        .live_holds(&f.project, a.campaign_id)
        .await
        .unwrap();
    assert!(live.is_empty());
}

/// Holds and redeems racing for the last units: never more than the limit
/// is held and redeemed together, and confirming every hold that was
/// placed oversells nothing.
pub async fn holds_and_redeems_race_for_the_last_units<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}", "value": 6},
                        {"key": "${campaignCode}-r", "value": 4, "window": "PT1H"}]);
    let f = Arc::new(setup(store, "2026-06-01T10:00:00Z", "LAST", quotas).await);
    // Two units taken before the race.
    assert!(f.redeems("LAST", "pre").await);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let f = Arc::clone(&f);
        tasks.spawn(async move {
            let user = format!("u{i}");
            if i % 2 == 0 {
                match f
                    .service
                    .place_hold(&f.project, &hold_request("LAST", &user, 600))
                    .await
                {
                    Ok(h) => Some(Some(h.id)),
                    Err(e) if e.code() == "quota_exceeded" => None,
                    Err(e) => panic!("hold: {e}"),
                }
            } else {
                f.redeems("LAST", &user).await.then_some(None)
            }
        });
    }
    let mut holds = Vec::new();
    let mut won = 0;
    while let Some(r) = tasks.join_next().await {
        if let Some(h) = r.unwrap() {
            won += 1;
            holds.extend(h);
        }
    }
    // The rolling quota (4) binds: 1 before, 3 in the race.
    assert_eq!(won, 3);
    assert_eq!(f.usage("LAST-r", Some("PT1H")).await.used, d("4"));
    let mut confirms = tokio::task::JoinSet::new();
    for id in holds.clone() {
        let f = Arc::clone(&f);
        confirms.spawn(async move { f.service.confirm_hold(&f.project, id).await.unwrap() });
    }
    while let Some(r) = confirms.join_next().await {
        r.unwrap();
    }
    assert_eq!(
        f.usage("LAST", None).await,
        CounterUsage::default_with(d("4"))
    );
    assert_eq!(
        f.usage("LAST-r", Some("PT1H")).await,
        CounterUsage::default_with(d("4"))
    );
    assert!(!f.redeems("LAST", "late").await);
    let list = f
        .service
        .list_redemptions(&f.project, &Default::default())
        .await
        .unwrap();
    assert_eq!(list.total, 4);
}

/// Sweeping removes expired holds' marks and old rolling charges without
/// changing any usage at any instant.
pub async fn sweeping_changes_no_usage<S: Store>(store: Arc<S>) {
    let quotas = json!([{"key": "${campaignCode}", "value": 5},
                        {"key": "${campaignCode}-r", "value": 5, "window": "PT1M"}]);
    let f = setup(store, "2026-06-01T10:00:00Z", "SW", quotas).await;
    assert!(f.redeems("SW", "u1").await);
    f.service
        .place_hold(&f.project, &hold_request("SW", "u2", 10))
        .await
        .unwrap();
    let live = f
        .service
        .place_hold(&f.project, &hold_request("SW", "u3", 600))
        .await
        .unwrap();
    f.set("2026-06-01T10:02:00Z");
    let before = (
        f.usage("SW", None).await,
        f.usage("SW-r", Some("PT1M")).await,
    );
    assert_eq!(
        before.0,
        CounterUsage {
            used: d("2"),
            held: d("1")
        }
    );
    assert_eq!(before.1, CounterUsage::default());
    let removed = f.service.sweep_quota_marks(&f.project).await.unwrap();
    assert!(removed >= 2, "removed {removed}");
    let after = (
        f.usage("SW", None).await,
        f.usage("SW-r", Some("PT1M")).await,
    );
    assert_eq!(after, before);
    // The live hold still confirms.
    f.service.confirm_hold(&f.project, live.id).await.unwrap();
    assert_eq!(
        f.usage("SW", None).await,
        CounterUsage::default_with(d("2"))
    );
}

/// A usage with nothing held.
trait WithUsed {
    fn default_with(used: Decimal) -> Self;
}

impl WithUsed for CounterUsage {
    fn default_with(used: Decimal) -> Self {
        CounterUsage {
            used,
            held: Decimal::ZERO,
        }
    }
}
