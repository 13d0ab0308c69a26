//! Campaign revisions and scheduled status changes over HTTP: list, read,
//! diff and restore revisions; a schedule that stops a campaign exactly at
//! its instant.
#![cfg(feature = "http")]

use crate::http_support;

use chrono::Duration;
use http_support::{parts, problem, start, P};
use reqwest::Method;
use serde_json::{json, Value};

fn shoes_cart() -> Value {
    json!({
        "channel": "marketplace",
        "attribute": {"userId": "u1"},
        "cart": {"totalPrice": "2500", "currency": "THB", "items": [
            {"name": "Runner", "sku": "SHOE-1", "amount": 2, "price": "1250", "tags": ["shoes"]}
        ]}
    })
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn revisions_list_show_diff_and_restore() {
    let s = start().await;
    let created = s.create("marketplace").await;
    let id = created["id"].as_str().unwrap().to_owned();
    let base = format!("/campaigns/{id}");

    // An edit: a new name, one condition's value, the priority.
    let mut edit = http_support::fixture("marketplace");
    edit["name"] = json!("Shoes: 15% off");
    edit["priority"] = json!(1);
    edit["rules"][0]["when"][0]["conditions"][0]["value"] = json!("1500");
    edit["version"] = json!(1);
    s.clock.advance(Duration::minutes(5));
    let (status, v2) = parts(
        s.req(Method::PUT, &s.campaign_url(&base))
            .json(&edit)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, &v2["version"]), (200, &json!(2)), "{v2}");

    // The list: newest first, who, when, and what each save changed.
    let res = s
        .req(Method::GET, &s.campaign_url(&format!("{base}/revisions")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "2");
    let (status, list) = parts(res).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list[0]["revision"], 2);
    assert_eq!(list[0]["createdBy"], "tester");
    assert_eq!(list[0]["createdDate"], "2026-06-15T10:05:00Z");
    assert_eq!(
        list[0]["changes"],
        json!([
            {"op": "replace", "path": "/name", "value": "Shoes: 15% off",
             "oldValue": "Marketplace: 10% off shoes over 2,000 THB"},
            {"op": "replace", "path": "/priority", "value": 1, "oldValue": 2},
            {"op": "replace", "path": "/rules/0/when/0/conditions/0/value",
             "value": "1500", "oldValue": "2000"},
        ])
    );
    assert!(list[0].get("campaign").is_none());
    assert_eq!(list[1]["revision"], 1);
    assert_eq!(list[1]["changes"], json!([]));
    assert_eq!(list[1]["createdDate"], "2026-06-15T10:00:00Z");

    // Paged.
    let (_, page) = parts(
        s.req(
            Method::GET,
            &s.campaign_url(&format!("{base}/revisions?page=1&size=1")),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(page[0]["revision"], 1);
    assert_eq!(page[0]["changes"], json!([]));

    // One revision: the whole campaign as it was.
    let (status, one) = parts(
        s.req(Method::GET, &s.campaign_url(&format!("{base}/revisions/1")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{one}");
    let mut as_created = created.clone();
    as_created["active"] = json!(false);
    assert_eq!(one["campaign"], as_created);

    // A diff between any two, either way round.
    let (status, diff) = parts(
        s.req(
            Method::GET,
            &s.campaign_url(&format!("{base}/revisions/diff?from=2&to=1")),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{diff}");
    assert_eq!(
        (diff["from"].clone(), diff["to"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(diff["changes"][0]["path"], "/name");
    assert_eq!(
        diff["changes"][0]["value"],
        "Marketplace: 10% off shoes over 2,000 THB"
    );

    // Restore: optimistic concurrency, then a new revision equal to the
    // old one.
    let restore = |query: &str| {
        let url = s.campaign_url(&format!("{base}/revisions/1/restore{query}"));
        s.req(Method::POST, &url).send()
    };
    problem(restore("?version=1").await.unwrap(), 409, "stale_version").await;
    let (status, restored) = parts(restore("?version=2").await.unwrap()).await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["version"], 3);
    assert_eq!(restored["name"], created["name"]);
    assert_eq!(restored["priority"], 2);
    let (_, same) = parts(
        s.req(
            Method::GET,
            &s.campaign_url(&format!("{base}/revisions/diff?from=1&to=3")),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(same["changes"], json!([]));

    // Errors: unknown revision, bad numbers, unknown campaign, missing
    // parameter, unknown parameter.
    let get = |path: String| s.req(Method::GET, &s.campaign_url(&path)).send();
    problem(
        get(format!("{base}/revisions/9")).await.unwrap(),
        404,
        "campaign_revision_not_found",
    )
    .await;
    problem(
        get(format!("{base}/revisions/0")).await.unwrap(),
        400,
        "invalid_parameter",
    )
    .await;
    problem(
        get(format!("{base}/revisions/diff?from=1")).await.unwrap(),
        400,
        "invalid_parameter",
    )
    .await;
    problem(
        get(format!("{base}/revisions?sort=x")).await.unwrap(),
        400,
        "invalid_parameter",
    )
    .await;
    let other = uuid::Uuid::new_v4();
    problem(
        get(format!("/campaigns/{other}/revisions")).await.unwrap(),
        404,
        "campaign_not_found",
    )
    .await;

    // A redemption names the revision it was decided by.
    let (status, redeemed) = parts(
        s.req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .json(&json!({"campaignCode": "SHOES10", "channel": "marketplace",
                "attribute": {"userId": "u1"}, "cart": shoes_cart()["cart"]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{redeemed}");
    assert_eq!(redeemed["campaignVersion"], 3);

    // A deleted campaign keeps its history, and is not restored.
    let res = s
        .req(Method::DELETE, &s.campaign_url(&base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let res = get(format!("{base}/revisions")).await.unwrap();
    assert_eq!(res.headers()["x-total-count"], "3");
    problem(restore("").await.unwrap(), 404, "campaign_not_found").await;
    let _ = P;
}

#[tokio::test]
async fn a_scheduled_status_change_takes_effect_at_its_instant() {
    let s = start().await;
    let mut body = http_support::fixture("marketplace");
    body["statusSchedule"] = json!([
        {"at": "2026-06-15T12:00:00Z", "status": "DISABLE"},
        {"at": "2026-06-15T11:00:00+07:00", "status": "DISABLE"},
        {"at": "2026-06-15T10:30:00Z", "status": "ENABLE"},
    ]);
    body["status"] = json!("ENABLE");
    let (status, created) = parts(
        s.req(Method::POST, &s.campaign_url("/campaigns"))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    // Stored sorted by instant.
    assert_eq!(
        created["statusSchedule"],
        json!([
            {"at": "2026-06-15T04:00:00Z", "status": "DISABLE"},
            {"at": "2026-06-15T10:30:00Z", "status": "ENABLE"},
            {"at": "2026-06-15T12:00:00Z", "status": "DISABLE"},
        ])
    );
    let id = created["id"].as_str().unwrap().to_owned();

    let matches = |at: &'static str| {
        s.clock.set(at.parse().unwrap());
        let search = s
            .req(Method::POST, &s.campaign_url("/search"))
            .json(&shoes_cart())
            .send();
        let get = s
            .req(Method::GET, &s.campaign_url(&format!("/campaigns/{id}")))
            .send();
        async move {
            let (_, found) = parts(search.await.unwrap()).await;
            let (_, one) = parts(get.await.unwrap()).await;
            let hit = !found["actions"].as_array().unwrap().is_empty();
            assert_eq!(one["active"], hit, "{at}");
            hit
        }
    };
    // (instant, whether the campaign runs)
    for (at, runs) in [
        ("2026-06-15T03:59:59Z", true),
        ("2026-06-15T04:00:00Z", false),
        ("2026-06-15T10:29:59.999999Z", false),
        ("2026-06-15T10:30:00Z", true),
        ("2026-06-15T11:59:59.999999Z", true),
        ("2026-06-15T12:00:00Z", false),
        ("2026-06-15T12:00:01Z", false),
    ] {
        assert_eq!(matches(at).await, runs, "{at}");
    }

    // A redeem after the stop is refused as not running.
    let res = s
        .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .json(&json!({"campaignCode": "SHOES10", "channel": "marketplace",
            "attribute": {"userId": "u1"}, "cart": shoes_cart()["cart"]}))
        .send()
        .await
        .unwrap();
    problem(res, 422, "campaign_not_active").await;

    // Validation: unknown status, two changes at one instant, too many.
    let mut bad = http_support::fixture("marketplace");
    bad["refCode"] = json!("BAD");
    bad["statusSchedule"] = json!([
        {"at": "2026-07-01T00:00:00Z", "status": "PAUSE"},
        {"at": "2026-07-01T07:00:00+07:00", "status": "ENABLE"},
    ]);
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&bad)
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    let fields: Vec<&str> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["statusSchedule[0].status", "statusSchedule[1].at"],
        "{p}"
    );
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"at": format!("2027-01-01T00:00:{i:02}Z"), "status": "ENABLE"}))
        .collect();
    bad["statusSchedule"] = json!(many);
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&bad)
        .send()
        .await
        .unwrap();
    problem(res, 422, "validation_failed").await;
}
