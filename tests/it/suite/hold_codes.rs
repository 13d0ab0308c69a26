//! Holds of campaigns with a code pool, on every store: a hold names a
//! valid code as a redeem does, reserves one use of it while it lives
//! (released or expired, the use is free again), and its confirmation
//! keeps that use for the redemption, which records the code.

use std::sync::Arc;

use accord::campaign::{CampaignInput, HoldRequest, HoldStatus, RedeemRequest};
use accord::clock::ManualClock;
use accord::store::{RedemptionQuery, Store};
use accord::{CampaignService, Clock};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! hold_codes_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(hold_codes, $fixture;
            a_hold_names_a_valid_code_as_a_redeem_does,
            a_hold_reserves_a_use_until_released_expired_or_confirmed,
            the_sweep_frees_expired_holds_codes,
            concurrent_holds_and_redeems_never_pass_a_code_limit,
        );
    };
}

pub(crate) use hold_codes_tests;

struct Fixture<S: Store> {
    project: String,
    clock: Arc<ManualClock>,
    service: Arc<CampaignService<S>>,
}

fn now() -> DateTime<Utc> {
    "2026-06-01T10:00:00Z".parse().unwrap()
}

/// A fresh project with campaigns `POOL` (its codes imported from `csv`,
/// each usable once unless the line says) and `PLAIN` (no pool).
async fn setup<S: Store>(store: Arc<S>, csv: &str) -> (Fixture<S>, Uuid) {
    let project = Uuid::new_v4().to_string();
    let clock = Arc::new(ManualClock::new(now()));
    let service = Arc::new(CampaignService::new(store, clock.clone() as Arc<dyn Clock>));
    let mut pool = Uuid::nil();
    for code in ["POOL", "PLAIN", "OTHER"] {
        let input: CampaignInput = serde_json::from_value(json!({
            "name": code, "refCode": code,
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}", "value": 1000}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                "data": [{"attribute": "amount", "value": "5"}]}]}]
        }))
        .unwrap();
        let id = service
            .create_campaign(&project, input, "admin")
            .await
            .unwrap()
            .id;
        match code {
            "POOL" => pool = id,
            "OTHER" => {
                service
                    .import_codes(&project, id, "OTHER-1\n", None, None)
                    .await
                    .unwrap();
            }
            _ => {}
        }
    }
    service
        .import_codes(&project, pool, csv, None, None)
        .await
        .unwrap();
    (
        Fixture {
            project,
            clock,
            service,
        },
        pool,
    )
}

fn redeem(v: Value) -> RedeemRequest {
    serde_json::from_value(v).unwrap()
}

fn hold(v: Value, ttl: i64) -> HoldRequest {
    HoldRequest {
        redeem: redeem(v),
        ttl: Some(json!(ttl)),
    }
}

impl<S: Store> Fixture<S> {
    /// The error code of a hold of `v`, or `ok`.
    async fn hold_code(&self, v: Value) -> String {
        match self.service.place_hold(&self.project, &hold(v, 60)).await {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.code().to_owned(),
        }
    }

    /// The error code of a redeem of `v`, or `ok`.
    async fn redeem_code(&self, v: Value) -> String {
        match self.service.redeem(&self.project, &redeem(v)).await {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.code().to_owned(),
        }
    }

    async fn used(&self, code: &str) -> i64 {
        self.service
            .code_info(&self.project, code)
            .await
            .unwrap()
            .code
            .used
    }
}

/// A hold of a campaign with a pool needs one of its codes, matched as a
/// redeem matches it, and is refused with the same errors.
pub async fn a_hold_names_a_valid_code_as_a_redeem_does<S: Store>(store: Arc<S>) {
    let (f, pool) = setup(store, "POOL-A1\nPOOL-A2\n").await;
    f.service
        .set_code_active(&f.project, pool, "POOL-A2", false)
        .await
        .unwrap();
    for (request, expected) in [
        (json!({"campaignCode": "POOL"}), "code_required"),
        (json!({"code": "NOPE"}), "code_not_found"),
        (
            json!({"campaignCode": "POOL", "code": "OTHER-1"}),
            "code_not_for_campaign",
        ),
        (json!({"code": "pool-a2"}), "code_inactive"),
    ] {
        let refused = f.hold_code(request.clone()).await;
        assert_eq!(refused, expected, "hold {request}");
        assert_eq!(
            f.redeem_code(request.clone()).await,
            refused,
            "redeem {request}"
        );
    }
    // Nothing was reserved by the refused holds.
    assert_eq!(f.used("POOLA1").await, 0);
    // Lower case, spaces, no campaignCode: the code names the campaign.
    let held = f
        .service
        .place_hold(&f.project, &hold(json!({"code": " pool a1 "}), 60))
        .await
        .unwrap();
    assert_eq!(held.code.as_deref(), Some("POOLA1"));
    assert_eq!(held.campaign_code, "POOL");
    assert_eq!(f.used("POOLA1").await, 1);
    // The hold reads back with its code.
    let read = f.service.hold(&f.project, held.id).await.unwrap();
    assert_eq!(read.code.as_deref(), Some("POOLA1"));
    // A campaign without a pool is held without a code, as before.
    let plain = f
        .service
        .place_hold(&f.project, &hold(json!({"campaignCode": "PLAIN"}), 60))
        .await
        .unwrap();
    assert_eq!(plain.code, None);
    let confirmed = f.service.confirm_hold(&f.project, plain.id).await.unwrap();
    assert_eq!(confirmed.redemption.code, None);
}

/// A hold reserves the code's last use: a redeem or another hold of the
/// code is refused while it lives; a release or its expiry frees the use;
/// a confirmation keeps it, once, and the redemption records the code.
pub async fn a_hold_reserves_a_use_until_released_expired_or_confirmed<S: Store>(store: Arc<S>) {
    let (f, _) = setup(store, "LAST-1\n").await;
    let code = json!({"code": "last1"});
    let h1 = f
        .service
        .place_hold(&f.project, &hold(code.clone(), 60))
        .await
        .unwrap();
    assert_eq!(f.redeem_code(code.clone()).await, "code_exhausted");
    assert_eq!(f.hold_code(code.clone()).await, "code_exhausted");
    assert_eq!(f.used("LAST1").await, 1);
    // Released: the use is free again, once (a second release changes
    // nothing).
    f.service.release_hold(&f.project, h1.id).await.unwrap();
    f.service.release_hold(&f.project, h1.id).await.unwrap();
    assert_eq!(f.used("LAST1").await, 0);
    let r1 = f
        .service
        .redeem(&f.project, &redeem(code.clone()))
        .await
        .unwrap();
    assert_eq!(r1.redemption.code.as_deref(), Some("LAST1"));
    assert_eq!(f.hold_code(code.clone()).await, "code_exhausted");
    f.service
        .cancel_redemption(&f.project, r1.redemption.id)
        .await
        .unwrap();
    // Expired: the next use of the code finds the use free, and the hold
    // can no longer be confirmed.
    let h2 = f
        .service
        .place_hold(&f.project, &hold(code.clone(), 60))
        .await
        .unwrap();
    f.clock.set(now() + Duration::seconds(59));
    assert_eq!(f.redeem_code(code.clone()).await, "code_exhausted");
    f.clock.set(now() + Duration::seconds(60));
    let r2 = f
        .service
        .redeem(&f.project, &redeem(code.clone()))
        .await
        .unwrap();
    let err = f.service.confirm_hold(&f.project, h2.id).await.unwrap_err();
    assert_eq!(err.code(), "hold_expired");
    assert_eq!(f.used("LAST1").await, 1);
    // Releasing the expired hold gives nothing back twice.
    let released = f.service.release_hold(&f.project, h2.id).await.unwrap();
    assert_ne!(released.status, HoldStatus::Held);
    assert_eq!(f.used("LAST1").await, 1);
    f.service
        .cancel_redemption(&f.project, r2.redemption.id)
        .await
        .unwrap();
    assert_eq!(f.used("LAST1").await, 0);
    // Confirmed: the redemption keeps the hold's use and records the code.
    let h3 = f
        .service
        .place_hold(&f.project, &hold(code.clone(), 60))
        .await
        .unwrap();
    let confirmed = f.service.confirm_hold(&f.project, h3.id).await.unwrap();
    assert!(!confirmed.replayed);
    assert_eq!(confirmed.redemption.code.as_deref(), Some("LAST1"));
    assert_eq!(f.used("LAST1").await, 1);
    let again = f.service.confirm_hold(&f.project, h3.id).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.redemption, confirmed.redemption);
    assert_eq!(f.used("LAST1").await, 1);
    // Long after the hold's expiry the confirmed use still counts.
    f.clock.set(now() + Duration::hours(1));
    assert_eq!(f.redeem_code(code.clone()).await, "code_exhausted");
    let stored = f
        .service
        .redemption(&f.project, confirmed.redemption.id)
        .await
        .unwrap();
    assert_eq!(stored.code.as_deref(), Some("LAST1"));
    let listed = f
        .service
        .list_redemptions(&f.project, &RedemptionQuery::default())
        .await
        .unwrap();
    assert!(listed
        .items
        .iter()
        .any(|r| r.id == stored.id && r.code.as_deref() == Some("LAST1")));
    // Cancelling the confirmed redemption gives the use back.
    f.service
        .cancel_redemption(&f.project, stored.id)
        .await
        .unwrap();
    assert_eq!(f.used("LAST1").await, 0);
    assert_eq!(f.redeem_code(code).await, "ok");
}

/// The sweep gives back the uses expired holds still reserve; a live
/// hold's stays.
pub async fn the_sweep_frees_expired_holds_codes<S: Store>(store: Arc<S>) {
    let (f, _) = setup(store, "SWEEP-1\nSWEEP-2\n").await;
    f.service
        .place_hold(&f.project, &hold(json!({"code": "SWEEP-1"}), 60))
        .await
        .unwrap();
    f.service
        .place_hold(&f.project, &hold(json!({"code": "SWEEP-2"}), 600))
        .await
        .unwrap();
    f.clock.set(now() + Duration::seconds(61));
    f.service.sweep_quota_marks(&f.project).await.unwrap();
    assert_eq!(f.used("SWEEP1").await, 0);
    assert_eq!(f.used("SWEEP2").await, 1);
    assert_eq!(f.redeem_code(json!({"code": "SWEEP-1"})).await, "ok");
    assert_eq!(
        f.redeem_code(json!({"code": "SWEEP-2"})).await,
        "code_exhausted"
    );
}

/// Holds and redeems of one code at once: exactly its limit succeed, and
/// confirming the holds takes nothing more.
pub async fn concurrent_holds_and_redeems_never_pass_a_code_limit<S: Store>(store: Arc<S>) {
    let (f, _) = setup(store, "RACE-1,3\n").await;
    let f = Arc::new(f);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..24 {
        let f = Arc::clone(&f);
        tasks.spawn(async move {
            let code = json!({"code": "race-1"});
            if i % 2 == 0 {
                f.service
                    .place_hold(&f.project, &hold(code, 600))
                    .await
                    .map(|h| Some(h.id))
            } else {
                f.service
                    .redeem(&f.project, &redeem(code))
                    .await
                    .map(|_| None)
            }
        });
    }
    let (mut holds, mut ok, mut exhausted) = (Vec::new(), 0, 0);
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            Ok(Some(id)) => {
                holds.push(id);
                ok += 1;
            }
            Ok(None) => ok += 1,
            Err(e) if e.code() == "code_exhausted" => exhausted += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!((ok, exhausted), (3, 21));
    assert_eq!(f.used("RACE1").await, 3);
    for id in holds {
        f.service.confirm_hold(&f.project, id).await.unwrap();
    }
    assert_eq!(f.used("RACE1").await, 3);
}
