//! Every campaign route's success path over a real TCP socket, with the
//! spec's field names; plus the operations routes.
#![cfg(feature = "http")]

use crate::http_support;

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

fn promo(user: &str) -> Value {
    json!({
        "campaignCode": "SAVE100",
        "attribute": {"userId": user, "promoCode": "save100"},
        "cart": {"totalPrice": 600, "currency": "THB", "items": []}
    })
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn campaign_administration() {
    let s = start().await;
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&http_support::fixture("marketplace"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = res.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        location,
        format!("/campaign/api/projects/{P}/campaigns/{id}")
    );
    assert_eq!(created["refCode"], "SHOES10");
    assert_eq!(created["version"], 1);
    assert_eq!(created["active"], true);
    assert_eq!(created["projectId"], P);
    assert_eq!(created["createdBy"], "tester");
    assert_eq!(created["groupName"], "Shoes");
    assert_eq!(created["rules"][0]["thenOperator"], "AND");
    assert_eq!(created["quotas"][0]["value"], 1000);
    s.create("promo_code").await;
    s.create("freebie").await;

    // GET one, through the Location.
    let (status, one) = parts(s.req(Method::GET, &s.url(&location)).send().await.unwrap()).await;
    assert_eq!((status, &one), (200, &created));

    // List: bare array, total in X-Total-Count; q, status, sort, paging.
    let list = |query: &str| {
        let url = s.campaign_url(&format!("/campaigns{query}"));
        let req = s.req(Method::GET, &url);
        async move {
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200, "{url}");
            let total: u64 = res.headers()["x-total-count"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            let body: Vec<Value> = res.json().await.unwrap();
            let codes: Vec<String> = body
                .iter()
                .map(|c| c["refCode"].as_str().unwrap().to_owned())
                .collect();
            (total, codes)
        }
    };
    assert_eq!(list("").await.0, 3);
    assert_eq!(list("?q=shoe").await, (1, vec!["SHOES10".to_owned()]));
    assert_eq!(list("?q=gift").await, (1, vec!["FREEBIE".to_owned()]));
    assert_eq!(
        list("?sort=priority,desc").await.1,
        ["FREEBIE", "SHOES10", "SAVE100"]
    );
    assert_eq!(
        list("?sort=priority,asc&page=1&size=1").await,
        (3, vec!["SHOES10".to_owned()])
    );
    assert_eq!(list("?status=DISABLE").await.0, 0);
    assert_eq!(
        list("?status=ENABLE&q=save").await,
        (1, vec!["SAVE100".to_owned()])
    );

    // PUT: version + 1; a stale version is a 409.
    let mut edit = http_support::fixture("marketplace");
    edit["name"] = json!("Shoes, renamed");
    edit["version"] = json!(1);
    let res = s
        .req(Method::PUT, &s.url(&location))
        .json(&edit)
        .send()
        .await
        .unwrap();
    let (status, updated) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(
        (updated["version"].as_i64(), updated["name"].as_str()),
        (Some(2), Some("Shoes, renamed"))
    );
    let res = s
        .req(Method::PUT, &s.url(&location))
        .json(&edit)
        .send()
        .await
        .unwrap();
    problem(res, 409, "stale_version").await;

    // Duplicate refCode on create: 409.
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&http_support::fixture("freebie"))
        .send()
        .await
        .unwrap();
    problem(res, 409, "duplicate_ref_code").await;

    // DELETE: 204, then 404.
    let res = s
        .req(Method::DELETE, &s.url(&location))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    assert!(res.bytes().await.unwrap().is_empty());
    let res = s.req(Method::GET, &s.url(&location)).send().await.unwrap();
    problem(res, 404, "campaign_not_found").await;
    let res = s
        .req(Method::DELETE, &s.url(&location))
        .send()
        .await
        .unwrap();
    problem(res, 404, "campaign_not_found").await;
    assert_eq!(list("").await.0, 2);
}

#[tokio::test]
async fn search_returns_the_nested_action_shape() {
    let s = start().await;
    let shoes = s.create("marketplace").await;
    s.create("freebie").await;
    let res = s
        .req(Method::POST, &s.campaign_url("/search"))
        .json(&shoes_cart())
        .send()
        .await
        .unwrap();
    let (status, body) = parts(res).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["attribute"], json!({"userId": "u1"}));
    assert!(body.get("explain").is_none());
    let actions = body["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{body}");
    let a = &actions[0];
    assert_eq!(a["rule"]["id"], "11111111-1111-4111-8111-111111111111");
    assert_eq!(a["rule"]["name"], "Shoes over 2,000");
    assert_eq!(a["rule"]["thenOperator"], "AND");
    assert_eq!(a["campaign"]["refCode"], "SHOES10");
    assert_eq!(a["campaign"]["id"], shoes["id"]);
    assert_eq!(a["campaign"]["name"], shoes["name"]);
    assert_eq!(a["campaign"]["startDate"], "2025-12-31T17:00:00Z");
    assert_eq!(a["campaign"]["endDate"], "2026-12-31T17:00:00Z");
    assert_eq!(
        a["campaign"]["imageUrl"],
        "https://cdn.example.com/shoes.png"
    );
    assert_eq!(a["action"]["action"], "DISCOUNT");
    assert_eq!(a["action"]["internalAction"], false);
    assert_eq!(
        a["action"]["actionRef"],
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    let data = &a["action"]["data"];
    assert_eq!(data[0]["attribute"], "amount");
    assert_eq!(data[0]["value"], "250", "floor(1250 * 2 * 0.10)");
    assert_eq!(data[1]["value"], "SHOE-1");

    // An OR rule: one entry per alternative, sharing the rule id.
    let res = s
        .req(Method::POST, &s.campaign_url("/search"))
        .json(&json!({"cart": {"items": [{"sku": "PHONE-1", "amount": 1, "price": 20000}]}}))
        .send()
        .await
        .unwrap();
    let (_, body) = parts(res).await;
    let actions = body["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{body}");
    assert_eq!(actions[0]["rule"]["id"], actions[1]["rule"]["id"]);
    assert_eq!(actions[0]["rule"]["thenOperator"], "OR");
    assert_eq!(
        actions[1]["action"]["actionRef"],
        "cccccccc-0000-4000-8000-000000000002"
    );

    // explain: why the campaigns that did not fire failed.
    let res = s
        .req(Method::POST, &s.campaign_url("/search?explain=true"))
        .json(&json!({"channel": "marketplace", "cart": {"totalPrice": 10, "currency": "THB"}}))
        .send()
        .await
        .unwrap();
    let (status, body) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(body["actions"], json!([]));
    let explain = body["explain"].as_array().unwrap();
    assert!(
        explain
            .iter()
            .any(|e| e["refCode"] == "SHOES10" && e["reason"].is_string()),
        "{body}"
    );

    // at: a preview after every campaign has ended.
    let res = s
        .req(
            Method::POST,
            &s.campaign_url("/search?at=2027-06-01T00:00:00%2B07:00"),
        )
        .json(&shoes_cart())
        .send()
        .await
        .unwrap();
    let (status, body) = parts(res).await;
    assert_eq!((status, body["actions"].clone()), (200, json!([])));
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn redeem_idempotency_quota_cancel_and_lists() {
    let s = start().await;
    let promo_campaign = s.create("promo_code").await;
    let redeem = |body: Value, key: Option<&str>| {
        let mut req = s
            .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .json(&body);
        if let Some(k) = key {
            req = req.header("Idempotency-Key", k);
        }
        async move { parts(req.send().await.unwrap()).await }
    };

    let (status, first) = redeem(promo("u1"), Some("order-1")).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["campaignCode"], "SAVE100");
    assert_eq!(first["status"], "COMPLETE");
    assert_eq!(first["idempotencyKey"], "order-1");
    assert_eq!(first["actionTxs"][0]["status"], "COMPLETE");
    assert_eq!(
        first["actionTxs"][0]["then"]["actionRef"],
        "bbbbbbbb-0000-4000-8000-000000000001"
    );
    assert_eq!(first["actionTxs"][0]["then"]["action"], "CART_DISCOUNT");
    assert_eq!(first["actionTxs"][0]["then"]["data"][0]["value"], "100");

    // Replay: 201 as the original, the same redemption, nothing charged,
    // marked `Idempotent-Replayed: true`.
    let (status, again) = redeem(promo("u1"), Some("order-1")).await;
    assert_eq!((status, &again), (201, &first));
    let res = s
        .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .header("Idempotency-Key", "order-1")
        .json(&promo("u1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["idempotent-replayed"], "true");
    // The same key with another request: refused, nothing recorded.
    let (status, p) = redeem(promo("u9"), Some("order-1")).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (422, Some("idempotency_key_reused")),
        "{p}"
    );
    // The header wins over the body's idempotencyKey.
    let mut body = promo("u1");
    body["idempotencyKey"] = json!("something-else");
    let (status, again) = redeem(body, Some("order-1")).await;
    assert_eq!((status, again["id"].clone()), (201, first["id"].clone()));
    // The body's key alone works too.
    let mut body = promo("u2");
    body["idempotencyKey"] = json!("order-2");
    let (status, second) = redeem(body.clone(), None).await;
    assert_eq!(status, 201);
    let (status, replay) = redeem(body, None).await;
    assert_eq!((status, replay["id"].clone()), (201, second["id"].clone()));

    // Once per user: u1 again is a 409 naming the key.
    let (status, p) = redeem(promo("u1"), Some("order-3")).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (409, Some("quota_exceeded")),
        "{p}"
    );
    assert!(p["detail"].as_str().unwrap().contains("SAVE100-u1"));

    // Redemption list, filtered, total in the header.
    let res = s
        .req(
            Method::GET,
            &s.campaign_url("/redemptions?campaignCode=SAVE100&size=1"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "2");
    let (status, page) = parts(res).await;
    assert_eq!((status, page.as_array().unwrap().len()), (200, 1));
    let res = s
        .req(Method::GET, &s.campaign_url("/redemptions?userId=u1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "1");
    let (_, page) = parts(res).await;
    assert_eq!(page[0]["id"], first["id"]);
    assert_eq!(page[0]["userId"], "u1");

    // Quota usage per key.
    let id = promo_campaign["id"].as_str().unwrap();
    let res = s
        .req(
            Method::GET,
            &s.campaign_url(&format!("/campaigns/{id}/quotas")),
        )
        .send()
        .await
        .unwrap();
    let (status, usage) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(
        usage,
        json!([
            {"key": "SAVE100", "used": 2, "limit": 3},
            {"key": "SAVE100-u1", "used": 1, "limit": 1},
            {"key": "SAVE100-u2", "used": 1, "limit": 1},
        ])
    );

    // Cancel gives the quota back; twice is a no-op.
    let rid = first["id"].as_str().unwrap();
    let cancel = s.campaign_url(&format!("/redemptions/{rid}/cancel"));
    let (status, cancelled) = parts(s.req(Method::POST, &cancel).send().await.unwrap()).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "CANCELLED");
    assert_eq!(cancelled["actionTxs"][0]["status"], "CANCELLED");
    assert!(cancelled["cancelledDate"].is_string());
    let (status, twice) = parts(s.req(Method::POST, &cancel).send().await.unwrap()).await;
    assert_eq!((status, &twice), (200, &cancelled));
    let (status, _) = redeem(promo("u1"), Some("order-4")).await;
    assert_eq!(status, 201);

    // Unknown ids: 404 with the resource's code.
    let res = s
        .req(
            Method::POST,
            &s.campaign_url("/redemptions/00000000-0000-4000-8000-000000000000/cancel"),
        )
        .send()
        .await
        .unwrap();
    problem(res, 404, "redemption_not_found").await;
    let res = s
        .req(
            Method::POST,
            &s.campaign_url("/redemptions/not-a-uuid/cancel"),
        )
        .send()
        .await
        .unwrap();
    problem(res, 404, "redemption_not_found").await;
    let (status, p) = redeem(json!({"campaignCode": "NOPE"}), None).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (404, Some("campaign_not_found"))
    );
}

#[tokio::test]
async fn or_rule_needs_a_choice_then_redeems_it() {
    let s = start().await;
    s.create("freebie").await;
    let body = json!({
        "campaignCode": "FREEBIE",
        "cart": {"items": [{"sku": "PHONE-2", "amount": 1, "price": 20000}]}
    });
    let url = s.campaign_url("/redeem/campaign-code");
    let res = s.req(Method::POST, &url).json(&body).send().await.unwrap();
    let p = problem(res, 422, "action_choice_required").await;
    assert!(p["detail"].is_string());
    let mut chosen = body.clone();
    chosen["actionRefs"] = json!(["cccccccc-0000-4000-8000-000000000002"]);
    let res = s
        .req(Method::POST, &url)
        .json(&chosen)
        .send()
        .await
        .unwrap();
    let (status, r) = parts(res).await;
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["actionTxs"].as_array().unwrap().len(), 1);
    assert_eq!(r["actionTxs"][0]["then"]["data"][0]["value"], "CHARGER-1");
}

#[tokio::test]
async fn operations_routes() {
    let s = start().await;
    let (status, body) = parts(s.client.get(s.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let (status, body) = parts(s.client.get(s.url("/readyz")).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"status": "ready"})));
    let res = s.client.get(s.url("/openapi.json")).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "application/json");
    let (status, doc) = parts(res).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
}

/// Nested under a prefix in a host's app (`.nest("/promo", router)`), the
/// router's self links carry the prefix, and lead to what was created.
#[tokio::test]
async fn self_links_are_right_when_the_router_is_nested() {
    use accord::http::{router, Api, Auth};
    use accord::store::memory::MemoryStore;
    use std::sync::Arc;
    let api = Api::new(
        Arc::new(MemoryStore::new()),
        Arc::new(accord::ManualClock::new(http_support::t0())),
        Auth::hs256(http_support::SECRET).unwrap(),
    );
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "host" }))
        .nest("/promo", router(api));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let base = format!("http://{addr}");
    let token = http_support::token(accord::http::scope::ALL, &[P]);
    let client = reqwest::Client::new();

    let res = client
        .post(format!("{base}/promo/campaign/api/projects/{P}/campaigns"))
        .bearer_auth(&token)
        .json(&http_support::fixture("marketplace"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with(&format!("/promo/campaign/api/projects/{P}/campaigns/")),
        "{location}"
    );
    let got = client
        .get(format!("{base}{location}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);

    let res = client
        .post(format!(
            "{base}/promo/cms/api/projects/{P}/c/svc-privacy-notice-v1"
        ))
        .bearer_auth(&token)
        .json(&json!({"data": {"name": "Draft notice", "revision": 1, "status": "DRAFT"}}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let location = res
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned());
    assert_eq!(status, 201, "{:?}", res.text().await);
    let location = location.unwrap();
    assert!(
        location.starts_with(&format!(
            "/promo/cms/api/projects/{P}/c/svc-privacy-notice-v1/"
        )),
        "{location}"
    );
    let got = client
        .get(format!("{base}{location}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
}
