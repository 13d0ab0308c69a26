//! Quota holds and rolling windows over HTTP: place, read, confirm
//! (idempotent), release, expire; the problems of each misuse; the quota
//! view's `window` and `held`.
#![cfg(feature = "http")]

use chrono::Duration;

use crate::http_support;

use http_support::{parts, problem, start, token, Server, P};
use reqwest::Method;
use serde_json::{json, Value};

async fn create(s: &Server, code: &str, quotas: Value) -> String {
    let body = json!({
        "name": code, "refCode": code,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": quotas,
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
            "data": [{"attribute": "amount", "value": "5"}]}]}]
    });
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

async fn post(s: &Server, path: &str, body: Value) -> reqwest::Response {
    s.req(Method::POST, &s.campaign_url(path))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn hold(s: &Server, code: &str, user: &str, ttl: Value) -> Value {
    let res = post(
        s,
        "/holds",
        json!({"campaignCode": code, "attribute": {"userId": user}, "ttl": ttl}),
    )
    .await;
    let (status, body) = parts(res).await;
    assert_eq!(status, 201, "{body}");
    body
}

async fn redeem_status(s: &Server, code: &str, user: &str) -> u16 {
    post(
        s,
        "/redeem/campaign-code",
        json!({"campaignCode": code, "attribute": {"userId": user}}),
    )
    .await
    .status()
    .as_u16()
}

#[tokio::test]
async fn a_hold_is_placed_confirmed_once_and_counts_meanwhile() {
    let s = start().await;
    let id = create(
        &s,
        "FLASH",
        json!([{"key": "${campaignCode}", "value": 2},
        {"key": "${campaignCode}-${userId}", "value": 1, "window": "PT24H"}]),
    )
    .await;
    let h = hold(&s, "FLASH", "u1", json!(600)).await;
    assert_eq!(h["status"], "HELD");
    assert_eq!(h["expiresAt"], "2026-06-15T10:10:00Z");
    assert_eq!(h["campaignCode"], "FLASH");
    assert_eq!(h["userId"], "u1");
    assert_eq!(
        h["quotas"],
        json!([{"key": "FLASH", "amount": 1, "limit": 2},
               {"key": "FLASH-u1", "amount": 1, "limit": 1, "window": "P1D"}])
    );
    // The hold counts: the per-user window is full for u1.
    assert_eq!(redeem_status(&s, "FLASH", "u1").await, 409);
    // The quota view shows it, held.
    let res = s
        .req(
            Method::GET,
            &s.campaign_url(&format!("/campaigns/{id}/quotas")),
        )
        .send()
        .await
        .unwrap();
    let (_, view) = parts(res).await;
    assert_eq!(
        view,
        json!([{"key": "FLASH", "used": 1, "limit": 2, "held": 1},
               {"key": "FLASH-u1", "used": 1, "limit": 1, "window": "P1D", "held": 1}])
    );
    let hold_url = format!("/holds/{}", h["id"].as_str().unwrap());
    s.clock.advance(Duration::minutes(4));
    let res = post(&s, &format!("{hold_url}/confirm"), json!(null)).await;
    assert!(res.headers().get("idempotent-replayed").is_none());
    let (status, r) = parts(res).await;
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["id"], h["redemptionId"]);
    assert_eq!(r["createdDate"], "2026-06-15T10:04:00Z");
    assert_eq!(r["quotas"], h["quotas"]);
    // Again: the same redemption, marked as a replay.
    let res = post(&s, &format!("{hold_url}/confirm"), json!(null)).await;
    assert_eq!(res.headers().get("idempotent-replayed").unwrap(), "true");
    let (status, again) = parts(res).await;
    assert_eq!(status, 201);
    assert_eq!(again, r);
    let res = s
        .req(Method::GET, &s.campaign_url(&hold_url))
        .send()
        .await
        .unwrap();
    let (status, read) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(read["status"], "CONFIRMED");
    assert_eq!(read["endedDate"], "2026-06-15T10:04:00Z");
    // One unit of FLASH left; u2 takes it.
    assert_eq!(redeem_status(&s, "FLASH", "u2").await, 201);
    assert_eq!(redeem_status(&s, "FLASH", "u3").await, 409);
}

#[tokio::test]
async fn released_and_expired_holds_give_their_quota_back() {
    let s = start().await;
    create(&s, "LAST", json!([{"key": "${campaignCode}", "value": 1}])).await;
    let a = hold(&s, "LAST", "u1", json!(60)).await;
    let p = problem(
        post(&s, "/holds", json!({"campaignCode": "LAST"})).await,
        409,
        "quota_exceeded",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("LAST"), "{p}");
    let a_url = format!("/holds/{}", a["id"].as_str().unwrap());
    let res = post(&s, &format!("{a_url}/release"), json!(null)).await;
    let (status, released) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(released["status"], "RELEASED");
    problem(
        post(&s, &format!("{a_url}/confirm"), json!(null)).await,
        409,
        "hold_released",
    )
    .await;
    // Default ttl: 15 minutes.
    let b = hold(&s, "LAST", "u2", Value::Null).await;
    assert_eq!(b["expiresAt"], "2026-06-15T10:15:00Z");
    assert_eq!(redeem_status(&s, "LAST", "u3").await, 409);
    s.clock.advance(Duration::minutes(15));
    let b_url = format!("/holds/{}", b["id"].as_str().unwrap());
    let res = s
        .req(Method::GET, &s.campaign_url(&b_url))
        .send()
        .await
        .unwrap();
    let (_, read) = parts(res).await;
    assert_eq!(read["status"], "EXPIRED");
    let p = problem(
        post(&s, &format!("{b_url}/confirm"), json!(null)).await,
        409,
        "hold_expired",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("expired at"), "{p}");
    assert_eq!(redeem_status(&s, "LAST", "u3").await, 201);
}

#[tokio::test]
async fn hold_requests_are_checked() {
    let s = start().await;
    create(&s, "C", json!([{"key": "${campaignCode}", "value": 5}])).await;
    for ttl in [json!(0), json!(86_401), json!(1.5), json!("60"), json!(-1)] {
        let res = post(&s, "/holds", json!({"campaignCode": "C", "ttl": ttl})).await;
        let p = problem(res, 422, "invalid_hold_ttl").await;
        assert!(p["detail"].as_str().unwrap().contains("ttl"), "{p}");
    }
    let res = post(
        &s,
        "/holds",
        json!({"campaignCode": "C", "idempotencyKey": "k"}),
    )
    .await;
    let p = problem(res, 422, "invalid_idempotency_key").await;
    assert_eq!(p["errors"][0]["field"], "idempotencyKey");
    assert_eq!(p["errors"][0]["code"], "invalid_idempotency_key");
    problem(
        post(&s, "/holds", json!({"campaignCode": "NOPE"})).await,
        404,
        "campaign_not_found",
    )
    .await;
    problem(
        post(&s, "/holds", json!({})).await,
        422,
        "validation_failed",
    )
    .await;
    let missing = uuid::Uuid::new_v4();
    problem(
        post(&s, &format!("/holds/{missing}/confirm"), json!(null)).await,
        404,
        "hold_not_found",
    )
    .await;
    problem(
        post(&s, "/holds/not-a-uuid/release", json!(null)).await,
        404,
        "hold_not_found",
    )
    .await;
    let res = s
        .req(Method::GET, &s.campaign_url(&format!("/holds/{missing}")))
        .send()
        .await
        .unwrap();
    problem(res, 404, "hold_not_found").await;
    // Scopes: reading needs campaign.r, placing campaign.w.
    let reader = token(&["campaign.r"], &[P]);
    let res = s
        .client
        .post(s.campaign_url("/holds"))
        .bearer_auth(&reader)
        .json(&json!({"campaignCode": "C"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
}

#[tokio::test]
async fn a_bad_window_is_refused_at_save_and_a_good_one_read_back_canonical() {
    let s = start().await;
    let body = |window: Value| {
        json!({"name": "W", "refCode": "W",
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}", "value": 1, "window": window}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]})
    };
    for bad in ["P1M", "PT0S", "24h", "P367D"] {
        let res = post(&s, "/campaigns", body(json!(bad))).await;
        let p = problem(res, 422, "validation_failed").await;
        assert_eq!(p["errors"][0]["field"], "quotas[0].window", "{bad}");
        assert_eq!(p["errors"][0]["code"], "invalid_quota_window", "{bad}");
    }
    let res = post(&s, "/campaigns", body(json!("PT1440M"))).await;
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["quotas"][0]["window"], "P1D");
    // At most 1 in any day: the second redeem waits exactly 24 hours.
    assert_eq!(redeem_status(&s, "W", "u1").await, 201);
    s.clock
        .advance(Duration::hours(24) - Duration::microseconds(1));
    assert_eq!(redeem_status(&s, "W", "u1").await, 409);
    s.clock.advance(Duration::microseconds(1));
    assert_eq!(redeem_status(&s, "W", "u1").await, 201);
}

/// A hold of a campaign with a code pool: without a code 422
/// `code_required`, as a redeem; with one, the hold shows the code and
/// reserves its last use (409 `code_exhausted` for a redeem meanwhile);
/// released, the use is free; confirmed, the redemption records the code.
#[tokio::test]
async fn a_hold_reserves_a_use_of_its_code() {
    let s = start().await;
    let id = create(&s, "CODES", json!([])).await;
    let res = s
        .req(
            Method::POST,
            &s.campaign_url(&format!("/campaigns/{id}/codes/import")),
        )
        .header("content-type", "text/csv")
        .body("code\nONLY-ONCE\n")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    problem(
        post(&s, "/holds", json!({"campaignCode": "CODES"})).await,
        422,
        "code_required",
    )
    .await;
    problem(
        post(&s, "/holds", json!({"code": "NOT-A-CODE"})).await,
        404,
        "code_not_found",
    )
    .await;
    let (status, h) =
        parts(post(&s, "/holds", json!({"code": "only once", "ttl": 60})).await).await;
    assert_eq!(status, 201, "{h}");
    assert_eq!(
        (&h["code"], &h["campaignCode"]),
        (&json!("ONLYONCE"), &json!("CODES"))
    );
    let redeem = || post(&s, "/redeem/campaign-code", json!({"code": "ONLY-ONCE"}));
    problem(redeem().await, 409, "code_exhausted").await;
    problem(
        post(&s, "/holds", json!({"code": "ONLY-ONCE"})).await,
        409,
        "code_exhausted",
    )
    .await;
    let release = format!("/holds/{}/release", h["id"].as_str().unwrap());
    assert_eq!(post(&s, &release, json!(null)).await.status(), 200);
    let (status, h2) = parts(post(&s, "/holds", json!({"code": "ONLY-ONCE"})).await).await;
    assert_eq!(status, 201, "{h2}");
    let confirm = format!("/holds/{}/confirm", h2["id"].as_str().unwrap());
    let (status, r) = parts(post(&s, &confirm, json!(null)).await).await;
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["code"], "ONLYONCE");
    let res = s
        .req(Method::GET, &s.campaign_url("/codes/only-once"))
        .send()
        .await
        .unwrap();
    let (_, info) = parts(res).await;
    assert_eq!((&info["used"], &info["usageLimit"]), (&json!(1), &json!(1)));
    problem(redeem().await, 409, "code_exhausted").await;
}
