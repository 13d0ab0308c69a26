//! The use cases of the campaign specification, end to end through
//! `CampaignService` on the memory store: search, then redeem.

mod common;

use accord::campaign::SearchOptions;
use accord::ErrorKind;
use common::{fixture, redeem_req, run, search_req, world};
use rust_decimal::Decimal;
use serde_json::json;

const P: &str = "shop";

fn explain() -> SearchOptions {
    SearchOptions {
        explain: true,
        at: None,
    }
}

#[test]
fn marketplace_cart_promotion() {
    let w = world();
    let c = run(w
        .service
        .create_campaign(P, fixture("marketplace"), "admin"))
    .unwrap();
    let cart = json!({
        "totalPrice": "2500", "currency": "THB",
        "items": [
            {"name": "Socks", "sku": "SOCK-1", "amount": 1, "price": 99, "tags": ["socks"]},
            {"name": "Sneaker", "sku": "SNEAKER-1", "amount": "2", "price": "1200.50", "tags": ["shoes", "sale"]}
        ]
    });
    let req =
        search_req(json!({"channel": "marketplace", "attribute": {"userId": "u1"}, "cart": cart}));
    let res = run(w.service.search(P, &req, &SearchOptions::default())).unwrap();
    assert_eq!(res.actions.len(), 1);
    let a = &res.actions[0];
    assert_eq!(a.campaign.ref_code, "SHOES10");
    assert_eq!(a.campaign.id, c.id);
    assert_eq!(a.action.action.as_deref(), Some("DISCOUNT"));
    // The formula reads the item that satisfied the cartItem group: the sneaker.
    let data: Vec<(&str, &str)> = a
        .action
        .data
        .iter()
        .map(|d| (d.attribute.as_str(), d.value.as_str()))
        .collect();
    assert_eq!(
        data,
        [("amount", "240"), ("sku", "SNEAKER-1"), ("currency", "THB")]
    );
    assert_eq!(res.attribute["userId"], "u1");

    // Another channel: the campaign does not run, and explain says so.
    let web = search_req(json!({"channel": "web", "cart": cart}));
    let res = run(w.service.search(P, &web, &explain())).unwrap();
    assert!(res.actions.is_empty());
    assert_eq!(res.explain.unwrap()[0].reason, "channel_mismatch");

    // Redeem records the evaluated benefit and charges the campaign quota.
    let r = run(w.service.redeem(
        P,
        &redeem_req(json!({"campaignCode": "SHOES10", "channel": "marketplace", "cart": cart})),
    ))
    .unwrap();
    assert!(!r.replayed);
    assert_eq!(r.redemption.campaign_version, 1);
    assert_eq!(r.redemption.action_txs.len(), 1);
    assert_eq!(r.redemption.action_txs[0].then.data[0].value, "240");
    let usage = run(w
        .service
        .quota_usage(P, c.id, &accord::campaign::QuotaUsageQuery::default()))
    .unwrap()
    .items;
    assert_eq!(usage.len(), 1);
    assert_eq!(
        (usage[0].key.as_str(), usage[0].used, usage[0].limit),
        ("SHOES10", Decimal::ONE, Some(Decimal::from(1000)))
    );
}

#[test]
fn cart_item_conditions_of_one_group_need_the_same_item() {
    let w = world();
    run(w
        .service
        .create_campaign(P, fixture("marketplace"), "admin"))
    .unwrap();
    // One item has the tag, another the amount: no single item has both.
    let cart = json!({
        "totalPrice": 2500, "currency": "THB",
        "items": [
            {"sku": "A", "amount": 0, "price": 2500, "tags": ["shoes"]},
            {"sku": "B", "amount": 3, "price": 0, "tags": ["socks"]}
        ]
    });
    let req = search_req(json!({"channel": "marketplace", "cart": cart}));
    let res = run(w.service.search(P, &req, &explain())).unwrap();
    assert!(res.actions.is_empty());
    let why = &res.explain.unwrap()[0];
    assert_eq!(why.reason, "condition_failed");
    assert_eq!(why.field.as_deref(), Some("rules[0].when[1]"));
    assert!(why.message.contains("no single item"), "{}", why.message);
}

#[test]
#[allow(clippy::too_many_lines)] // one story, told in order
fn promo_code_with_per_user_and_total_quotas() {
    let w = world();
    let c = run(w.service.create_campaign(P, fixture("promo_code"), "admin")).unwrap();
    let body = |user: &str, total: u32| {
        json!({"campaignCode": "SAVE100", "attribute": {"userId": user, "promoCode": "save100"},
               "cart": {"totalPrice": total.to_string(), "currency": "THB", "items": []}})
    };
    // Search: the regex is case-insensitive by its own flag, and full-match.
    let res = run(w
        .service
        .search(P, &search_req(body("u1", 600)), &SearchOptions::default()))
    .unwrap();
    assert_eq!(res.actions.len(), 1);
    assert_eq!(
        res.actions[0].action.action.as_deref(),
        Some("CART_DISCOUNT")
    );
    let res = run(w
        .service
        .search(P, &search_req(body("u1", 400)), &explain()))
    .unwrap();
    assert!(res.actions.is_empty());
    let why = &res.explain.unwrap()[0];
    assert_eq!(
        (
            why.attribute.as_deref(),
            why.actual.as_deref(),
            why.expected.as_deref()
        ),
        (Some("totalPrice"), Some("400"), Some("500"))
    );

    // Once per user.
    let first = run(w.service.redeem(P, &redeem_req(body("u1", 600))))
        .unwrap()
        .redemption;
    let again = run(w.service.redeem(P, &redeem_req(body("u1", 600)))).unwrap_err();
    assert_eq!(
        (again.kind(), again.code()),
        (ErrorKind::Conflict, "quota_exceeded")
    );
    assert!(
        again.message().contains("SAVE100-u1"),
        "{}",
        again.message()
    );
    // Search now leaves the campaign out for u1, and explain names the key.
    let res = run(w
        .service
        .search(P, &search_req(body("u1", 600)), &explain()))
    .unwrap();
    assert!(res.actions.is_empty());
    let why = &res.explain.unwrap()[0];
    assert_eq!(
        (why.reason.as_str(), why.quota_key.as_deref()),
        ("quota_exhausted", Some("SAVE100-u1"))
    );
    // ...but not for u2.
    assert_eq!(
        run(w
            .service
            .search(P, &search_req(body("u2", 600)), &SearchOptions::default()))
        .unwrap()
        .actions
        .len(),
        1
    );

    // Three in all: u4 is refused on the total key, and nothing is recorded for u4.
    run(w.service.redeem(P, &redeem_req(body("u2", 600)))).unwrap();
    run(w.service.redeem(P, &redeem_req(body("u3", 600)))).unwrap();
    let full = run(w.service.redeem(P, &redeem_req(body("u4", 600)))).unwrap_err();
    assert_eq!(full.code(), "quota_exceeded");
    assert!(full.message().contains("\"SAVE100\""), "{}", full.message());
    let usage = run(w
        .service
        .quota_usage(P, c.id, &accord::campaign::QuotaUsageQuery::default()))
    .unwrap()
    .items;
    let used = |k: &str| usage.iter().find(|u| u.key == k).map(|u| u.used);
    assert_eq!(used("SAVE100"), Some(Decimal::from(3)));
    assert_eq!(used("SAVE100-u4"), None);

    // A request without userId cannot build the per-user key: 422, never a shared key.
    let anon = json!({"campaignCode": "SAVE100", "attribute": {"promoCode": "SAVE100"}, "cart": {"totalPrice": 600}});
    let e = run(w.service.redeem(P, &redeem_req(anon))).unwrap_err();
    assert_eq!(
        (e.kind(), e.fields()[0].code.as_str()),
        (ErrorKind::Validation, "quota_key_unresolved")
    );
    assert!(e.message().contains("userId"), "{}", e.message());

    // Cancel gives both keys back, once.
    let cancelled = run(w.service.cancel_redemption(P, first.id)).unwrap();
    assert_eq!(cancelled.status.as_str(), "CANCELLED");
    assert!(cancelled
        .action_txs
        .iter()
        .all(|t| t.status.as_str() == "CANCELLED"));
    run(w.service.cancel_redemption(P, first.id)).unwrap();
    let usage = run(w
        .service
        .quota_usage(P, c.id, &accord::campaign::QuotaUsageQuery::default()))
    .unwrap()
    .items;
    let used = |k: &str| usage.iter().find(|u| u.key == k).map(|u| u.used);
    assert_eq!(
        (used("SAVE100"), used("SAVE100-u1")),
        (Some(Decimal::from(2)), Some(Decimal::ZERO))
    );

    // Idempotency: the same key twice records once.
    let mut keyed = redeem_req(body("u1", 600));
    keyed.idempotency_key = Some("order-42".into());
    let a = run(w.service.redeem(P, &keyed)).unwrap();
    let b = run(w.service.redeem(P, &keyed)).unwrap();
    assert!(!a.replayed && b.replayed);
    assert_eq!(a.redemption, b.redemption);
    let usage = run(w
        .service
        .quota_usage(P, c.id, &accord::campaign::QuotaUsageQuery::default()))
    .unwrap()
    .items;
    assert_eq!(
        usage.iter().find(|u| u.key == "SAVE100").unwrap().used,
        Decimal::from(3)
    );
}

#[test]
fn freebie_choice_on_an_or_rule() {
    let w = world();
    run(w.service.create_campaign(P, fixture("freebie"), "admin")).unwrap();
    let cart = json!({"items": [{"sku": "PHONE-2", "amount": 1, "price": 20000}]});
    let res = run(w.service.search(
        P,
        &search_req(json!({"cart": cart})),
        &SearchOptions::default(),
    ))
    .unwrap();
    assert_eq!(res.actions.len(), 2);
    assert_eq!(res.actions[0].rule.id, res.actions[1].rule.id);
    assert_eq!(res.actions[0].rule.then_operator.as_str(), "OR");
    let refs: Vec<&str> = res
        .actions
        .iter()
        .map(|a| a.action.action_ref.as_str())
        .collect();
    assert_eq!(
        refs,
        [
            "cccccccc-0000-4000-8000-000000000001",
            "cccccccc-0000-4000-8000-000000000002"
        ]
    );

    let e = run(w.service.redeem(
        P,
        &redeem_req(json!({"campaignCode": "FREEBIE", "cart": cart})),
    ))
    .unwrap_err();
    assert_eq!(e.code(), "action_choice_required");
    let e = run(w.service.redeem(
        P,
        &redeem_req(json!({"campaignCode": "FREEBIE", "cart": cart, "actionRefs": ["nope"]})),
    ))
    .unwrap_err();
    assert_eq!(
        (e.code(), e.fields()[0].field.as_str()),
        ("unknown_action_ref", "actionRefs[0]")
    );

    let case = json!({"campaignCode": "FREEBIE", "cart": cart, "actionRefs": ["cccccccc-0000-4000-8000-000000000001"]});
    let r = run(w.service.redeem(P, &redeem_req(case.clone())))
        .unwrap()
        .redemption;
    assert_eq!(r.action_txs.len(), 1);
    assert_eq!(r.action_txs[0].then.data[0].value, "CASE-1");
    // The quota key takes `sku` from the chosen benefit: two of each gift.
    assert_eq!(r.quotas[0].key, "FREEBIE-CASE-1");
    run(w.service.redeem(P, &redeem_req(case.clone()))).unwrap();
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(case)))
            .unwrap_err()
            .code(),
        "quota_exceeded"
    );
    let charger = json!({"campaignCode": "FREEBIE", "cart": cart, "actionRefs": ["cccccccc-0000-4000-8000-000000000002"]});
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(charger)))
            .unwrap()
            .redemption
            .quotas[0]
            .key,
        "FREEBIE-CHARGER-1"
    );

    // Without the phone, the rule does not fire: redeem cannot bypass conditions.
    let e = run(w.service.redeem(
        P,
        &redeem_req(json!({"campaignCode": "FREEBIE", "cart": {"items": [{"sku": "X"}]}, "actionRefs": ["cccccccc-0000-4000-8000-000000000002"]})),
    ))
    .unwrap_err();
    assert_eq!(e.code(), "conditions_not_met");
}

#[test]
fn loyalty_points_with_a_summed_per_user_per_year_quota() {
    let w = world();
    let mut input = fixture("loyalty");
    input.end_date = Some("2028-01-01T00:00:00Z".parse().unwrap());
    run(w.service.create_campaign(P, input, "admin")).unwrap();
    let body = |points: &str| json!({"campaignCode": "POINTS", "attribute": {"userId": "u1", "points": points, "externalCode": "EXT-1234"}});
    let res = run(w
        .service
        .search(P, &search_req(body("350")), &SearchOptions::default()))
    .unwrap();
    let data: Vec<(&str, &str)> = res.actions[0]
        .action
        .data
        .iter()
        .map(|d| (d.attribute.as_str(), d.value.as_str()))
        .collect();
    assert_eq!(
        data,
        [
            ("pointsUsed", "300"),
            ("amount", "30"),
            ("externalCode", "EXT-1234")
        ]
    );

    let r = run(w.service.redeem(P, &redeem_req(body("350"))))
        .unwrap()
        .redemption;
    assert_eq!(r.quotas[0].key, "POINTS-u1-2026");
    assert_eq!(r.quotas[0].amount, Decimal::from(300));
    // 300 + 800 > 1000: refused; 300 + 700 = 1000: allowed.
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(body("800"))))
            .unwrap_err()
            .code(),
        "quota_exceeded"
    );
    run(w.service.redeem(P, &redeem_req(body("700")))).unwrap();
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(body("100"))))
            .unwrap_err()
            .code(),
        "quota_exceeded"
    );
    // A new year is a new key.
    w.clock.set("2027-01-02T00:00:00Z".parse().unwrap());
    let r = run(w.service.redeem(P, &redeem_req(body("100"))))
        .unwrap()
        .redemption;
    assert_eq!(r.quotas[0].key, "POINTS-u1-2027");
    // The external code must have the shape the rule demands.
    let mut bad = body("500");
    bad["attribute"]["externalCode"] = json!("EXT-12345");
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(bad)))
            .unwrap_err()
            .code(),
        "conditions_not_met"
    );
}

#[test]
fn customer_grading() {
    let w = world();
    run(w.service.create_campaign(P, fixture("grading"), "admin")).unwrap();
    let grade = |attribute: serde_json::Value| {
        let res = run(w.service.search(
            P,
            &search_req(json!({"name": "grading", "attribute": attribute})),
            &SearchOptions::default(),
        ))
        .unwrap();
        res.actions
            .iter()
            .flat_map(|a| {
                a.action
                    .data
                    .iter()
                    .map(|d| format!("{}={}", d.attribute, d.value))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        grade(json!({"yearlySpend": "150000", "segment": "retail", "cards": ["VISA", "PLATINUM"]})),
        ["grade=GOLD", "cust_type=retail", "card_type=PREMIUM"]
    );
    assert_eq!(
        grade(json!({"yearlySpend": 50000, "cards": ["VISA"]})),
        ["grade=SILVER"]
    );
    // Unparsable and missing inputs never match.
    assert!(grade(json!({"yearlySpend": "a lot"})).is_empty());
    // Gold's text value needs `segment`: without it that benefit is dropped, Silver does not fire.
    assert!(grade(json!({"yearlySpend": "150000"})).is_empty());
}

#[test]
fn results_are_ordered_by_priority_then_ref_code_then_rule_then_benefit() {
    let w = world();
    let mut inputs = Vec::new();
    for (code, priority) in [("B", 2), ("A", 2), ("C", 1)] {
        let mut c = fixture("grading");
        c.ref_code = code.into();
        c.priority = Some(priority);
        for rule in &mut c.rules {
            rule.id.clear();
            for t in &mut rule.then {
                t.action_ref.clear();
            }
        }
        inputs.push(c);
    }
    for c in inputs {
        run(w.service.create_campaign(P, c, "admin")).unwrap();
    }
    let req = search_req(
        json!({"attribute": {"yearlySpend": "150000", "segment": "s", "cards": ["BLACK"]}}),
    );
    let res = run(w.service.search(P, &req, &SearchOptions::default())).unwrap();
    let order: Vec<(String, String)> = res
        .actions
        .iter()
        .map(|a| (a.campaign.ref_code.clone(), a.rule.name.clone()))
        .collect();
    let expected: Vec<(String, String)> = ["C", "A", "B"]
        .iter()
        .flat_map(|c| ["Gold", "Card holders"].map(|r| (c.to_string(), r.to_string())))
        .collect();
    assert_eq!(order, expected);
}

#[test]
fn search_can_preview_a_future_moment() {
    let w = world();
    let mut c = fixture("promo_code");
    c.start_date = Some("2026-07-01T00:00:00Z".parse().unwrap());
    run(w.service.create_campaign(P, c, "admin")).unwrap();
    let req = search_req(
        json!({"attribute": {"userId": "u", "promoCode": "SAVE100"}, "cart": {"totalPrice": 900}}),
    );
    assert!(run(w.service.search(P, &req, &SearchOptions::default()))
        .unwrap()
        .actions
        .is_empty());
    let at = Some("2026-07-01T00:00:00Z".parse().unwrap());
    assert_eq!(
        run(w
            .service
            .search(P, &req, &SearchOptions { explain: false, at }))
        .unwrap()
        .actions
        .len(),
        1
    );
    // Redeem always uses the real clock.
    let mut r = redeem_req(serde_json::to_value(&req).unwrap());
    r.campaign_code = "SAVE100".into();
    assert_eq!(
        run(w.service.redeem(P, &r)).unwrap_err().code(),
        "campaign_not_active"
    );
}
