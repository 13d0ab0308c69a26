#![allow(clippy::needless_pass_by_value)]

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::{largest_remainder, minor_digits};
use crate::core::campaign::{Campaign, RedeemRequest, SearchRequest, Then};
use crate::core::engine::{CompiledCampaign, Engine};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

/// A campaign with one rule (`when` groups) and one benefit (`then`).
fn campaign(when: Value, then: Value) -> Campaign {
    serde_json::from_value(json!({
        "id": uuid::Uuid::new_v4(), "name": "C", "description": null, "imageUrl": null,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "refCode": "C", "status": "ENABLE", "priority": 1, "channel": null,
        "quotas": [], "projectId": "p", "version": 1,
        "rules": [{"id": "r", "name": "r", "when": when, "thenOperator": "AND", "then": [then]}],
        "createdBy": "t", "lastModifiedBy": "t",
        "createdDate": "2026-01-01T00:00:00Z", "lastModifiedDate": "2026-01-01T00:00:00Z"
    }))
    .unwrap()
}

fn engine(c: &Campaign) -> Engine {
    Engine::new([Arc::new(CompiledCampaign::compile(c).unwrap())])
}

/// The benefit as search returns it, or the search's explanation reason.
fn search(c: &Campaign, cart: Value) -> Result<Then, String> {
    let e = engine(c);
    let req: SearchRequest = serde_json::from_value(json!({"cart": cart})).unwrap();
    let out = e.search(&req, now(), true).unwrap();
    match out.hits.first() {
        Some(hit) => Ok((*hit.actions[0].action).clone()),
        None => Err(out.explanations[0].reason.clone()),
    }
}

fn cart_discount(value: &str, extra: Value) -> Value {
    let mut b = json!({"action": "CART_DISCOUNT", "actionRef": "a",
        "data": [{"attribute": "amount", "value": value, "isFormula": true}]});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

fn shares(then: &Then) -> Vec<String> {
    then.allocation
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.amount.clone())
        .collect()
}

#[test]
fn minor_digits_follow_iso_4217() {
    for (code, digits) in [
        ("THB", Some(2)),
        ("eur", Some(2)),
        ("JPY", Some(0)),
        ("KRW", Some(0)),
        ("KWD", Some(3)),
        ("CLF", Some(4)),
        ("XAU", None),
        ("XXX", None),
        ("US", None),
        ("US1", None),
        ("", None),
    ] {
        assert_eq!(minor_digits(code), digits, "{code}");
    }
}

#[test]
fn largest_remainder_cases() {
    // (total, weights, shares)
    type Case<'a> = (i128, &'a [i128], Option<&'a [i128]>);
    let cases: [Case; 8] = [
        (100, &[100, 100, 100], Some(&[34, 33, 33])),
        (2, &[1, 1, 1], Some(&[1, 1, 0])),
        (10, &[0, 5, 5], Some(&[0, 5, 5])),
        (1, &[3, 3], Some(&[1, 0])),
        (7, &[1, 2, 4], Some(&[1, 2, 4])),
        (0, &[], Some(&[])),
        (1, &[0], None),
        (-1, &[1], None),
    ];
    for (total, weights, want) in cases {
        assert_eq!(
            largest_remainder(total, weights).as_deref(),
            want,
            "{total} over {weights:?}"
        );
    }
}

#[test]
fn cap_max_and_cart_bound() {
    let cart = json!({"totalPrice": "80", "currency": "THB", "items": []});
    let c = campaign(
        json!([]),
        cart_discount("200", json!({"cap": {"max": 100}})),
    );
    let then = search(&c, cart.clone()).unwrap();
    assert_eq!(then.data[0].value, "80", "the cart is below the max");
    let capped = then.capped.unwrap();
    assert_eq!(
        (capped.original.as_str(), capped.by.as_str()),
        ("200", "CART")
    );

    let c = campaign(
        json!([]),
        cart_discount("200", json!({"cap": {"max": "50"}})),
    );
    let then = search(&c, cart.clone()).unwrap();
    assert_eq!(then.data[0].value, "50");
    assert_eq!(then.capped.unwrap().by.as_str(), "MAX");

    let c = campaign(
        json!([]),
        cart_discount("20", json!({"cap": {"max": "50"}})),
    );
    let then = search(&c, cart).unwrap();
    assert_eq!(then.data[0].value, "20");
    assert!(then.capped.is_none(), "nothing reduced it");
}

#[test]
fn cap_by_item_line_and_zero_floor() {
    let when = json!([{"match": "ALL", "conditions": [
        {"type": "cartItem", "attribute": "sku", "op": "eq", "value": "S"}]}]);
    let cart = json!({"totalPrice": "500", "items": [
        {"sku": "X", "price": "300", "amount": 1},
        {"sku": "S", "price": "15", "amount": 2}]});
    let c = campaign(
        when.clone(),
        cart_discount("${price} * 3", json!({"cap": {}})),
    );
    let then = search(&c, cart.clone()).unwrap();
    assert_eq!(
        then.data[0].value, "30",
        "scope defaults to the matched line: 2 × 15"
    );
    assert_eq!(then.capped.unwrap().by.as_str(), "ITEM");

    let c = campaign(
        when.clone(),
        cart_discount("${price} * 3", json!({"cap": {"scope": "CART"}})),
    );
    assert_eq!(search(&c, cart.clone()).unwrap().data[0].value, "45");

    let c = campaign(when, cart_discount("0 - 5", json!({"cap": {}})));
    let then = search(&c, cart).unwrap();
    assert_eq!(then.data[0].value, "0");
    assert_eq!(then.capped.unwrap().by.as_str(), "ZERO");
}

#[test]
fn cart_total_from_lines_or_unknown() {
    let c = campaign(json!([]), cart_discount("100", json!({"cap": {}})));
    let lines = json!({"items": [{"price": "10", "amount": "2"}, {"price": "5"}]});
    assert_eq!(search(&c, lines).unwrap().data[0].value, "25");
    let unpriced = json!({"items": [{"price": "10"}, {"sku": "no price"}]});
    assert_eq!(search(&c, unpriced).unwrap_err(), "cart_total_unknown");
}

#[test]
fn allocation_splits_in_minor_units() {
    let c = campaign(
        json!([]),
        cart_discount("100", json!({"allocate": "PROPORTIONAL"})),
    );
    let cart = json!({"currency": "THB", "items": [
        {"sku": "A", "price": "100"}, {"sku": "B", "price": "100"}, {"sku": "C", "price": "100"}]});
    let then = search(&c, cart).unwrap();
    assert_eq!(shares(&then), ["33.34", "33.33", "33.33"]);
    assert_eq!(
        then.allocation.as_ref().unwrap()[2].sku.as_deref(),
        Some("C")
    );

    let jpy = json!({"currency": "JPY", "items": [
        {"price": "1000", "amount": 2}, {"price": "999"}, {"name": "free", "price": "0"}]});
    let then = search(&c, jpy).unwrap();
    assert_eq!(shares(&then), ["67", "33", "0"]);

    let small = json!({"currency": "EUR", "items": [{"price": "30"}, {"price": "20.005"}]});
    let then = search(&c, small).unwrap();
    assert_eq!(then.data[0].value, "50", "bounded by the lines, in cents");
    assert_eq!(shares(&then), ["30.00", "20.00"]);
    assert_eq!(then.capped.unwrap().by.as_str(), "LINES");
}

#[test]
fn allocation_rounds_the_amount_down_to_minor_units() {
    let c = campaign(
        json!([]),
        cart_discount("10 / 3", json!({"allocate": "PROPORTIONAL"})),
    );
    let cart = json!({"currency": "KWD", "items": [{"price": "7"}, {"price": "3"}]});
    let then = search(&c, cart).unwrap();
    assert_eq!(then.data[0].value, "3.333");
    assert_eq!(shares(&then), ["2.333", "1.000"]);
}

#[test]
fn allocation_needs_a_currency() {
    let c = campaign(
        json!([]),
        cart_discount("10", json!({"allocate": "PROPORTIONAL"})),
    );
    let cart = json!({"items": [{"price": "70"}]});
    assert_eq!(search(&c, cart).unwrap_err(), "currency_unknown");
    let cart = json!({"currency": "XAU", "items": [{"price": "70"}]});
    assert_eq!(search(&c, cart).unwrap_err(), "currency_unknown");
    let mut with_currency = c.clone();
    with_currency.rules[0].then[0]
        .data
        .push(crate::core::campaign::DataItem::text("currency", "USD"));
    let cart = json!({"items": [{"price": "70"}]});
    assert_eq!(
        shares(&search(&with_currency, cart).unwrap()),
        ["10.00"],
        "the benefit's currency when the cart has none"
    );
}

#[test]
fn redeem_returns_the_allocation_and_fails_without_a_price() {
    let c = campaign(
        json!([]),
        cart_discount(
            "floor(100 / 2)",
            json!({"cap": {"max": 40}, "allocate": "PROPORTIONAL"}),
        ),
    );
    let e = engine(&c);
    let req: RedeemRequest = serde_json::from_value(json!({"campaignCode": "C",
        "cart": {"totalPrice": "100", "currency": "USD", "items": [{"price": "60"}, {"price": "40"}]}}))
    .unwrap();
    let plan = e.plan_redeem("C", &req, now()).unwrap();
    let then = &plan.action_txs[0].then;
    assert_eq!(then.data[0].value, "40");
    assert_eq!(shares(then), ["24.00", "16.00"]);
    let req: RedeemRequest = serde_json::from_value(
        json!({"campaignCode": "C", "cart": {"currency": "USD", "items": [{"sku": "x"}]}}),
    )
    .unwrap();
    let err = e.plan_redeem("C", &req, now()).unwrap_err();
    assert_eq!(err.code(), "cart_total_unknown");
    assert_eq!(err.fields()[0].field, "rules[0].then[0].data[0].value");
}

#[test]
fn invalid_caps_are_refused_at_save() {
    let c = campaign(
        json!([]),
        json!({"action": "D", "actionRef": "a", "allocate": "EVENLY",
            "cap": {"max": -1, "scope": "ITEM", "attribute": "discount"},
            "data": [{"attribute": "amount", "value": "1"}]}),
    );
    let problems = CompiledCampaign::compile(&c).unwrap_err();
    let got: Vec<(String, String)> = problems
        .iter()
        .map(|p| (p.field.clone(), p.code.to_string()))
        .collect();
    let p = "rules[0].then[0]";
    assert_eq!(
        got,
        [
            (format!("{p}.allocate"), "invalid_enum".to_owned()),
            (format!("{p}.cap.max"), "invalid_number".to_owned()),
            (format!("{p}.cap.attribute"), "unknown_attribute".to_owned()),
            (format!("{p}.cap.scope"), "invalid_cap_scope".to_owned()),
        ]
    );
}

#[test]
fn an_unused_cap_keeps_the_spec_wire_form() {
    let then: Then = serde_json::from_value(
        json!({"action": "DISCOUNT", "actionRef": "a", "data": [], "internalAction": false}),
    )
    .unwrap();
    let back = serde_json::to_value(&then).unwrap();
    assert_eq!(
        back.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["action", "actionRef", "data", "internalAction"]
    );
}

fn cents() -> impl Strategy<Value = i64> {
    0i64..1_000_000
}

proptest! {
    #[test]
    fn allocation_sums_exactly_and_stays_within_lines(
        total in 0i128..10_000_000,
        weights in proptest::collection::vec(0i128..1_000_000, 0..20),
    ) {
        let room: i128 = weights.iter().sum();
        let total = total.min(room);
        let shares = largest_remainder(total, &weights).unwrap();
        prop_assert_eq!(shares.iter().sum::<i128>(), total);
        for (s, w) in shares.iter().zip(&weights) {
            prop_assert!(*s >= 0 && s <= w, "share {} of line {}", s, w);
        }
    }

    #[test]
    fn allocated_benefit_sums_to_its_amount(
        amount in cents(),
        max in proptest::option::of(cents()),
        lines in proptest::collection::vec((cents(), 1i64..5), 1..8),
    ) {
        let mut extra = json!({"allocate": "PROPORTIONAL"});
        if let Some(m) = max {
            extra["cap"] = json!({"max": Decimal::new(m, 2).to_string()});
        }
        let c = campaign(json!([]), cart_discount(&Decimal::new(amount, 2).to_string(), extra));
        let items: Vec<Value> = lines
            .iter()
            .map(|(p, q)| json!({"price": Decimal::new(*p, 2).to_string(), "amount": q}))
            .collect();
        let then = search(&c, json!({"currency": "EUR", "items": items})).unwrap();
        let value: Decimal = then.data[0].value.parse().unwrap();
        let shares: Vec<Decimal> = then.allocation.as_ref().unwrap().iter()
            .map(|s| s.amount.parse().unwrap()).collect();
        prop_assert_eq!(shares.iter().copied().sum::<Decimal>(), value);
        let cart: Decimal = lines.iter().map(|(p, q)| Decimal::new(*p, 2) * Decimal::from(*q)).sum();
        prop_assert!(value >= Decimal::ZERO && value <= cart);
        prop_assert!(value <= Decimal::new(amount, 2));
        if let Some(m) = max {
            prop_assert!(value <= Decimal::new(m, 2));
        }
        for (s, (p, q)) in shares.iter().zip(&lines) {
            prop_assert!(*s >= Decimal::ZERO && *s <= Decimal::new(*p, 2) * Decimal::from(*q));
        }
    }

    #[test]
    fn capped_benefit_never_exceeds_its_cap_or_the_cart(
        amount in -1_000_000i64..10_000_000,
        max in proptest::option::of(cents()),
        total in cents(),
    ) {
        let mut cap = json!({});
        if let Some(m) = max {
            cap["max"] = json!(Decimal::new(m, 2).to_string());
        }
        let c = campaign(json!([]), cart_discount(&format!("{}", Decimal::new(amount, 2)), json!({"cap": cap})));
        let then = search(&c, json!({"totalPrice": Decimal::new(total, 2).to_string()})).unwrap();
        let value: Decimal = then.data[0].value.parse().unwrap();
        prop_assert!(value >= Decimal::ZERO);
        prop_assert!(value <= Decimal::new(total, 2));
        prop_assert!(value <= Decimal::new(amount, 2).max(Decimal::ZERO));
        if let Some(m) = max {
            prop_assert!(value <= Decimal::new(m, 2));
        }
    }
}
