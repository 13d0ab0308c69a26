//! The promotion features over HTTP: benefit caps allocated to cart
//! lines, stacking, exact decimals on the wire, formulas refused at save,
//! campaign time zones, and their OpenAPI description.
#![cfg(feature = "http")]

use crate::http_support;

use http_support::{parts, problem, start};
use reqwest::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn capped_discount_is_allocated_to_lines_in_search_and_redeem() {
    let s = start().await;
    let created = s.create("cart_cap").await;
    assert_eq!(
        created["rules"][0]["then"][0]["cap"]["max"], "300",
        "written back as an exact decimal string"
    );
    assert_eq!(created["rules"][0]["then"][0]["allocate"], "PROPORTIONAL");
    let cart = json!({"totalPrice": "1000", "currency": "THB", "items": [
        {"sku": "A", "amount": 1, "price": "500"},
        {"sku": "B", "amount": 2, "price": "166.67"},
        {"sku": "C", "amount": 1, "price": "166.66"}
    ]});
    let (status, found) = parts(
        s.req(Method::POST, &s.campaign_url("/search"))
            .json(&json!({"cart": cart}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let action = &found["actions"][0]["action"];
    assert_eq!(
        action["data"][0]["value"], "200",
        "20% of 1000, under the cap"
    );
    assert_eq!(
        action["allocation"],
        json!([
            {"line": 0, "sku": "A", "amount": "100.00"},
            {"line": 1, "sku": "B", "amount": "66.67"},
            {"line": 2, "sku": "C", "amount": "33.33"}
        ])
    );
    assert!(action.get("capped").is_none());

    let big = json!({"totalPrice": "2000", "currency": "THB", "items": [
        {"sku": "A", "price": "1000"}, {"sku": "B", "price": "1000"}]});
    let url = s.campaign_url("/redeem/campaign-code");
    let (status, r) = parts(
        s.req(Method::POST, &url)
            .json(&json!({"campaignCode": "CART20", "cart": big}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{r}");
    let then = &r["actionTxs"][0]["then"];
    assert_eq!(then["data"][0]["value"], "300");
    assert_eq!(then["capped"], json!({"original": "400", "by": "MAX"}));
    assert_eq!(then["allocation"][0]["amount"], "150.00");
    assert_eq!(
        r["quotas"][0]["amount"], 300,
        "the quota counts the capped amount"
    );
    let id = r["id"].as_str().unwrap();
    let (_, listed) = parts(
        s.req(
            Method::GET,
            &s.campaign_url("/redemptions?campaignCode=CART20"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["actionTxs"][0]["then"], *then, "kept as returned");

    // Without a currency the allocation cannot be made: 422, not a guess.
    let res = s
        .req(Method::POST, &url)
        .json(&json!({"campaignCode": "CART20", "cart": {"totalPrice": "900", "items": [{"price": "900"}]}}))
        .send()
        .await
        .unwrap();
    problem(res, 422, "currency_unknown").await;

    let mut bad = http_support::fixture("cart_cap");
    bad["refCode"] = json!("BAD");
    bad["rules"][0]["then"][0]["cap"] = json!({"max": -5, "scope": "LINE"});
    bad["rules"][0]["then"][0]["allocate"] = json!("EVEN");
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
        [
            "rules[0].then[0].allocate",
            "rules[0].then[0].cap.max",
            "rules[0].then[0].cap.scope"
        ]
    );
}

#[tokio::test]
async fn stacking_over_http() {
    let s = start().await;
    let campaign = |code: &str, priority: i32, stacking: Value| {
        let mut c = json!({
            "name": code, "refCode": code, "priority": priority,
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                "data": [{"attribute": "amount", "value": "5"}]}]}]
        });
        if !stacking.is_null() {
            c["stacking"] = stacking;
        }
        c
    };
    let create = |body: Value| {
        s.req(Method::POST, &s.campaign_url("/campaigns"))
            .json(&body)
            .send()
    };
    let (status, plain) = parts(create(campaign("PLAIN", 1, Value::Null)).await.unwrap()).await;
    assert_eq!(status, 201);
    assert!(
        plain.get("stacking").is_none(),
        "absent stays absent: {plain}"
    );
    let (status, vip) = parts(
        create(campaign("VIP", 2, json!({"exclusive": true})))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        vip["stacking"],
        json!({"exclusive": true, "stopAfter": false})
    );

    let (status, found) = parts(
        s.req(Method::POST, &s.campaign_url("/search?explain=true"))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["actions"].as_array().unwrap().len(), 1);
    assert_eq!(found["actions"][0]["campaign"]["refCode"], "PLAIN");
    let why = &found["explain"][0];
    assert_eq!(
        (&why["refCode"], &why["reason"], &why["suppressedBy"]),
        (&json!("VIP"), &json!("exclusive_campaign"), &json!("PLAIN"))
    );

    let url = s.campaign_url("/redeem/campaign-code");
    let res = s
        .req(Method::POST, &url)
        .json(&json!({"campaignCode": "VIP", "withCampaigns": ["PLAIN"]}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 409, "stacking_conflict").await;
    assert!(p["detail"].as_str().unwrap().contains("exclusive"), "{p}");
    let res = s
        .req(Method::POST, &url)
        .json(&json!({"campaignCode": "VIP", "withCampaigns": ["NOPE"]}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "unknown_campaign").await;
    assert_eq!(p["errors"][0]["field"], "withCampaigns[0]");
    let res = s
        .req(Method::POST, &url)
        .json(&json!({"campaignCode": "VIP"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "alone, the exclusive campaign redeems");

    let mut bad = campaign(
        "BAD",
        1,
        json!({"group": "x".repeat(200), "exclusive": "yes"}),
    );
    bad["stacking"]["exclusive"] = json!(true);
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&bad)
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "stacking.group");
}

/// Decimals travel as JSON numbers whose text is the exact decimal, both
/// ways; a number no decimal holds exactly is a 422 at its field.
#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn decimals_are_exact_on_the_wire() {
    let s = start().await;
    let campaign = json!({
        "name": "exact", "refCode": "EXACT",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-spend", "value": 5, "valueField": "spend"}],
        "rules": [{"name": "r",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000",
                 "valueType": "NUMBER"}]}],
            "then": [{"action": "DISCOUNT", "data": [
                {"attribute": "echo", "value": "${totalPrice} + 0", "isFormula": true}]}]}]
    });
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&campaign)
        .send()
        .await
        .unwrap();
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let post = |path: &str, body: String| {
        s.req(Method::POST, &s.campaign_url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cart = |total: &str, spend: &str| {
        format!(
            r#"{{"campaignCode": "EXACT", "attribute": {{"userId": "u1", "spend": {spend}}},
                "cart": {{"totalPrice": {total}, "items": []}}}}"#
        )
    };

    // Just below 1000 is below 1000 (a float would say 1000.0).
    let (status, found) = parts(
        post("/search", cart("999.99999999999999999", "1"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(found["actions"], json!([]), "{found}");

    // A formula echoes the total exactly.
    let (status, found) = parts(
        post("/search", cart("12345678901234567.89", "1"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        found["actions"][0]["action"]["data"][0]["value"],
        "12345678901234567.89"
    );

    // Quota usage written as the exact number text.
    let (status, r) = parts(
        post(
            "/redeem/campaign-code",
            cart("1000", "1.000000000000000000000000001"),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{r}");
    let res = s
        .req(
            Method::GET,
            &s.campaign_url(&format!("/campaigns/{id}/quotas")),
        )
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    assert_eq!(
        text,
        r#"[{"key":"EXACT-spend","used":1.000000000000000000000000001,"limit":5}]"#
    );

    // Beyond Decimal: refused at the field, never rounded.
    for (body, field) in [
        (
            cart("1.00000000000000000000000000001", "1"),
            "cart.totalPrice",
        ),
        (cart("1000", "1e40"), "attribute.spend"),
    ] {
        let p = problem(
            post("/search", body).await.unwrap(),
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(p["errors"][0]["field"], field, "{p}");
        assert_eq!(p["errors"][0]["code"], "invalid_number", "{p}");
    }
    let mut bad = campaign.clone();
    bad["refCode"] = json!("EXACT2");
    let bad = bad
        .to_string()
        .replace(r#""value":5"#, r#""value":79228162514264337593543950336"#);
    let p = problem(
        post("/campaigns", bad).await.unwrap(),
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "quotas[0].value", "{p}");
    assert_eq!(p["errors"][0]["code"], "invalid_number", "{p}");
}

/// A formula that fails on every request is refused when saved, at its
/// field.
#[tokio::test]
async fn formulas_that_always_fail_are_refused_at_save() {
    let s = start().await;
    let campaign = json!({
        "name": "div", "refCode": "DIV",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [],
            "then": [{"action": "DISCOUNT", "data": [
                {"attribute": "ok", "value": "${totalPrice} / 2", "isFormula": true},
                {"attribute": "bad", "value": "${totalPrice} + 1 / 0", "isFormula": true}]}]}]
    });
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&campaign)
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(
        p["errors"][0]["field"], "rules[0].then[0].data[1].value",
        "{p}"
    );
    assert_eq!(p["errors"][0]["code"], "formula_division_by_zero", "{p}");
}

#[tokio::test]
async fn campaign_time_zone_over_http() {
    let s = start().await;
    let mut c = http_support::fixture("promo_code");
    c["timeZone"] = json!("Europe/Berlin");
    let (status, created) = parts(
        s.req(Method::POST, &s.campaign_url("/campaigns"))
            .json(&c)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["timeZone"], "Europe/Berlin");
    c["refCode"] = json!("MARS");
    c["timeZone"] = json!("Mars/Olympus_Mons");
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&c)
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "timeZone");
    assert_eq!(p["errors"][0]["code"], "invalid_time_zone");
}

#[tokio::test]
async fn openapi_describes_the_promotion_fields() {
    let s = start().await;
    let (_, doc) = parts(s.client.get(s.url("/openapi.json")).send().await.unwrap()).await;
    let schemas = &doc["components"]["schemas"];
    let props = |name: &str| -> Vec<String> {
        schemas[name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {name}: {}", schemas[name]))
            .keys()
            .cloned()
            .collect()
    };
    for (schema, field) in [
        ("Then", "cap"),
        ("Then", "allocate"),
        ("Then", "allocation"),
        ("Then", "capped"),
        ("CampaignInput", "stacking"),
        ("CampaignInput", "timeZone"),
        ("Campaign", "stacking"),
        ("Campaign", "timeZone"),
        ("RedeemRequest", "withCampaigns"),
        ("Explanation", "suppressedBy"),
        ("BenefitCap", "max"),
        ("LineShare", "amount"),
        ("Stacking", "stopAfter"),
    ] {
        assert!(
            props(schema).iter().any(|p| p == field),
            "{schema}.{field} in {:?}",
            props(schema)
        );
    }
}
