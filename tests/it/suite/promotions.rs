//! Promotion controls on every store: what the engine decides (caps,
//! allocation, stacking) must be recorded, replayed and read back the same
//! whatever the store underneath.

use std::sync::Arc;

use accord::campaign::SearchOptions;
use accord::campaign::TimeZones;
use accord::campaign::{CampaignInput, RedeemRequest};
use accord::clock::ManualClock;
use accord::store::RedemptionQuery;
use accord::store::Store;
use accord::{CampaignService, ErrorKind, SystemClock};
use serde_json::{json, Value};

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! promotions_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(promotions, $fixture;
            capped_allocation_is_recorded_and_replayed,
            stacking_is_stored_resolved_and_enforced,
            calendar_quotas_roll_over_at_local_midnight,
            search_cases_hold,
        );
    };
}

pub(crate) use promotions_tests;

pub use super::cases::search_cases_hold;

/// A campaign fixture of `tests/data/campaigns/<name>.json`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/data/campaigns/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn input(v: Value) -> CampaignInput {
    serde_json::from_value(v).unwrap()
}

fn redeem(v: Value) -> RedeemRequest {
    serde_json::from_value(v).unwrap()
}

/// A capped, allocated discount: the redemption keeps the capped amount,
/// the reason and each line's share; a replay and a read give them back
/// unchanged; the quota counts the capped amount.
pub async fn capped_allocation_is_recorded_and_replayed<S: Store>(store: Arc<S>) {
    let (project, service) = super::campaign_service(&store);
    let mut campaign = fixture("cart_cap");
    campaign["endDate"] = json!("2100-01-01T00:00:00Z");
    let created = service
        .create_campaign(&project, input(campaign), "admin")
        .await
        .unwrap();
    let request = redeem(json!({
        "campaignCode": "CART20", "idempotencyKey": "order-1",
        "cart": {"totalPrice": "2001", "currency": "JPY", "items": [
            {"sku": "A", "price": "1000"}, {"sku": "B", "price": "1000"}, {"sku": "C", "price": "1"}]}
    }));
    let first = service.redeem(&project, &request).await.unwrap();
    let then = &first.redemption.action_txs[0].then;
    assert_eq!(then.data[0].value, "300");
    let shares: Vec<&str> = then
        .allocation
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.amount.as_str())
        .collect();
    assert_eq!(shares, ["150", "150", "0"], "yen have no minor unit");
    assert_eq!(then.capped.as_ref().unwrap().by.as_str(), "MAX");

    let again = service.redeem(&project, &request).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.redemption, first.redemption);
    let read = service
        .redemption(&project, first.redemption.id)
        .await
        .unwrap();
    assert_eq!(read.action_txs, first.redemption.action_txs);
    let usage = service
        .quota_usage(
            &project,
            created.id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(usage[0].used.to_string(), "300");
}

/// A campaign that always fires, with a priority and stacking settings.
fn stacked(code: &str, priority: i32, stacking: Value) -> CampaignInput {
    let mut c = json!({
        "name": code, "refCode": code, "priority": priority,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
            "data": [{"attribute": "amount", "value": "1"}]}]}]
    });
    if !stacking.is_null() {
        c["stacking"] = stacking;
    }
    input(c)
}

/// The refCodes search returns, and (refCode, reason, suppressedBy) of
/// each explanation.
async fn stacked_search<S: Store>(
    service: &CampaignService<S>,
    project: &str,
) -> (Vec<String>, Vec<(String, String, String)>) {
    let out = service
        .search(
            project,
            &serde_json::from_value(json!({})).unwrap(),
            &SearchOptions {
                explain: true,
                at: None,
            },
        )
        .await
        .unwrap();
    let codes = out
        .actions
        .iter()
        .map(|a| a.campaign.ref_code.clone())
        .collect();
    let why = out
        .explain
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.ref_code, e.reason, e.suppressed_by.unwrap_or_default()))
        .collect();
    (codes, why)
}

fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.to_owned(), b.to_owned(), c.to_owned())
}

/// Stacking settings survive the store (and their removal does); search
/// applies them in priority order and explains each suppression; redeem
/// refuses a forbidden combination with a conflict.
pub async fn stacking_is_stored_resolved_and_enforced<S: Store>(store: Arc<S>) {
    let (project, service) = super::campaign_service(&store);
    let excl = service
        .create_campaign(
            &project,
            stacked("EXCL", 1, json!({"exclusive": true})),
            "admin",
        )
        .await
        .unwrap();
    assert!(excl.stacking.as_ref().unwrap().exclusive);
    assert_eq!(
        service.campaign(&project, excl.id).await.unwrap().stacking,
        excl.stacking,
        "read back as saved"
    );
    for (code, priority, stacking) in [
        ("PLAIN", 2, Value::Null),
        ("SHIP1", 3, json!({"group": "shipping"})),
        ("SHIP2", 4, json!({"group": "shipping", "stopAfter": true})),
        ("LAST", 5, json!({})),
    ] {
        service
            .create_campaign(&project, stacked(code, priority, stacking), "admin")
            .await
            .unwrap();
    }
    let (codes, why) = stacked_search(&service, &project).await;
    assert_eq!(codes, ["EXCL"]);
    assert_eq!(
        why,
        [
            t("PLAIN", "exclusive_campaign", "EXCL"),
            t("SHIP1", "exclusive_campaign", "EXCL"),
            t("SHIP2", "exclusive_campaign", "EXCL"),
            t("LAST", "exclusive_campaign", "EXCL"),
        ]
    );
    // The console's "try it here" marks the same suppressions.
    let preview = service
        .preview(
            &project,
            &serde_json::from_value(json!({})).unwrap(),
            None,
            None,
        )
        .await
        .unwrap();
    let marked: Vec<(String, Option<String>)> = preview
        .hits
        .iter()
        .map(|h| {
            let by = h.suppressed.as_ref().and_then(|s| s.suppressed_by.clone());
            (h.campaign.ref_code.clone(), by)
        })
        .collect();
    let by_excl = || Some("EXCL".to_owned());
    assert_eq!(
        marked,
        [
            ("EXCL".to_owned(), None),
            ("PLAIN".to_owned(), by_excl()),
            ("SHIP1".to_owned(), by_excl()),
            ("SHIP2".to_owned(), by_excl()),
            ("LAST".to_owned(), by_excl()),
        ]
    );

    // Exclusivity removed (and the campaign disabled): one campaign of the
    // group applies; the suppressed SHIP2 stops nothing.
    let mut edited = stacked("EXCL", 1, Value::Null);
    edited.status = accord::campaign::CampaignStatus::Disable;
    let updated = service
        .update_campaign(&project, excl.id, edited, "admin")
        .await
        .unwrap();
    assert_eq!(updated.stacking, None);
    assert_eq!(
        service.campaign(&project, excl.id).await.unwrap().stacking,
        None,
        "removed in the store too"
    );
    let (codes, why) = stacked_search(&service, &project).await;
    assert_eq!(codes, ["PLAIN", "SHIP1", "LAST"]);
    assert_eq!(why, [t("SHIP2", "stacking_group", "SHIP1")]);

    // Redeem: the combination is checked against the stored settings.
    let r =
        |code: &str, with: &[&str]| redeem(json!({"campaignCode": code, "withCampaigns": with}));
    service
        .redeem(&project, &r("SHIP1", &["PLAIN", "LAST"]))
        .await
        .unwrap();
    let err = service
        .redeem(&project, &r("SHIP2", &["SHIP1"]))
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.code()),
        (ErrorKind::Conflict, "stacking_conflict")
    );
    let err = service
        .redeem(&project, &r("PLAIN", &["NOPE", "LAST", "GONE"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "unknown_campaign");
    let fields: Vec<&str> = err.fields().iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["withCampaigns[0]", "withCampaigns[2]"]);
    let page = service
        .list_redemptions(&project, &RedemptionQuery::default())
        .await
        .unwrap();
    assert_eq!(page.total, 1, "only the allowed redeem was recorded");
}

fn at(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// A daily quota per user rolls over at the project's local midnight
/// (Europe/Berlin, across the spring DST change), and a campaign's own
/// zone (Asia/Bangkok) wins over the project's; `${week}` counts ISO weeks
/// across the year end. The zone is stored with the campaign.
pub async fn calendar_quotas_roll_over_at_local_midnight<S: Store>(store: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let clock = Arc::new(ManualClock::new(at("2026-03-28T22:30:00Z")));
    let mut zones = TimeZones::default();
    zones
        .projects
        .insert(project.clone(), chrono_tz::Tz::Europe__Berlin);
    let service = CampaignService::new(Arc::clone(&store), clock.clone() as Arc<dyn accord::Clock>)
        .with_time_zones(zones);
    let daily = |code: &str, zone: Option<&str>| {
        let mut c = json!({
            "name": code, "refCode": code,
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}-${userId}-${year}-${month}-${day}", "value": 1},
                       {"key": "${campaignCode}-${userId}-${week}", "value": 2}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                "data": [{"attribute": "amount", "value": "1"}]}]}]
        });
        if let Some(z) = zone {
            c["timeZone"] = json!(z);
        }
        input(c)
    };
    service
        .create_campaign(&project, daily("DAILY", None), "admin")
        .await
        .unwrap();
    let bkk = service
        .create_campaign(&project, daily("BKK", Some("Asia/Bangkok")), "admin")
        .await
        .unwrap();
    assert_eq!(
        service
            .campaign(&project, bkk.id)
            .await
            .unwrap()
            .time_zone
            .as_deref(),
        Some("Asia/Bangkok")
    );
    // Keys come sorted, as redeem charges them.
    let go = |code: &str, t: &str| {
        clock.set(at(t));
        let request = redeem(json!({"campaignCode": code, "attribute": {"userId": "u1"}}));
        let service = &service;
        let project = &project;
        async move {
            match service.redeem(project, &request).await {
                Ok(r) => Ok(r
                    .redemption
                    .quotas
                    .iter()
                    .map(|q| q.key.clone())
                    .collect::<Vec<_>>()
                    .join(" ")),
                Err(e) => Err(e.code().to_owned()),
            }
        }
    };
    // 23:30 in Berlin on the 28th (CET), then 00:30 on the 29th.
    assert_eq!(
        go("DAILY", "2026-03-28T22:30:00Z").await,
        Ok("DAILY-u1-2026-3-28 DAILY-u1-2026-W13".to_owned())
    );
    assert_eq!(
        go("DAILY", "2026-03-28T23:30:00Z").await,
        Ok("DAILY-u1-2026-3-29 DAILY-u1-2026-W13".to_owned())
    );
    // 23:30 CEST on the 29th (21:30 UTC): still the 29th, which is used;
    // and the week's two are used too.
    assert_eq!(
        go("DAILY", "2026-03-29T21:30:00Z").await,
        Err("quota_exceeded".to_owned())
    );
    // Bangkok's own zone: 18:00 UTC is already the 29th there.
    assert_eq!(
        go("BKK", "2026-03-28T18:00:00Z").await,
        Ok("BKK-u1-2026-3-29 BKK-u1-2026-W13".to_owned())
    );
    // The year end: 31 December and 1 January share ISO week 2026-W53.
    assert_eq!(
        go("DAILY", "2026-12-31T12:00:00Z").await,
        Ok("DAILY-u1-2026-12-31 DAILY-u1-2026-W53".to_owned())
    );
    assert_eq!(
        go("DAILY", "2026-12-31T23:30:00Z").await,
        Ok("DAILY-u1-2026-W53 DAILY-u1-2027-1-1".to_owned())
    );
    assert_eq!(
        go("DAILY", "2027-01-02T12:00:00Z").await,
        Err("quota_exceeded".to_owned()),
        "the week's two are used"
    );
    assert_eq!(
        go("DAILY", "2027-01-03T23:30:00Z").await,
        Ok("DAILY-u1-2027-1-4 DAILY-u1-2027-W01".to_owned())
    );
}
