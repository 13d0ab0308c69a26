#![allow(clippy::needless_pass_by_value)]

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::core::campaign::{Campaign, RedeemRequest};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

/// A stored campaign from JSON; only rules, quotas and a few fields vary.
fn campaign(code: &str, extra: serde_json::Value) -> Campaign {
    let mut base = json!({
        "id": uuid::Uuid::new_v4(), "name": code, "description": null, "imageUrl": null,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "refCode": code, "status": "ENABLE", "priority": 1, "channel": null, "groupName": null,
        "quotas": [], "rules": [], "projectId": "p", "version": 1,
        "createdBy": "t", "lastModifiedBy": "t",
        "createdDate": "2026-01-01T00:00:00Z", "lastModifiedDate": "2026-01-01T00:00:00Z"
    });
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    serde_json::from_value(base).unwrap()
}

fn rule(
    name: &str,
    op: &str,
    when: serde_json::Value,
    then: serde_json::Value,
) -> serde_json::Value {
    json!({"id": name, "name": name, "when": when, "thenOperator": op, "then": then})
}

fn benefit(action_ref: &str, data: serde_json::Value) -> serde_json::Value {
    json!({"action": "DISCOUNT", "actionRef": action_ref, "data": data})
}

fn engine(campaigns: Vec<Campaign>) -> Engine {
    Engine::new(
        campaigns
            .iter()
            .map(|c| Arc::new(CompiledCampaign::compile(c).unwrap())),
    )
}

fn refs(engine: &Engine, request: serde_json::Value) -> Vec<String> {
    let req: SearchRequest = serde_json::from_value(request).unwrap();
    let out = engine.search(&req, now(), false).unwrap();
    out.hits
        .iter()
        .flat_map(|h| h.actions.iter().map(|a| a.action.action_ref.clone()))
        .collect()
}

#[test]
fn any_groups_and_empty_groups() {
    let e = engine(vec![campaign(
        "C",
        json!({"rules": [
            rule("any", "AND", json!([{"match": "ANY", "conditions": [
                {"type": "custom", "attribute": "a", "op": "eq", "value": "1"},
                {"type": "cartItem", "attribute": "sku", "op": "eq", "value": "S"}
            ]}]), json!([benefit("any", json!([{"attribute": "sku", "value": "${sku}"}]))])),
            rule("always", "AND", json!([]), json!([benefit("always", json!([]))])),
            rule("empty-any", "AND", json!([{"match": "ANY", "conditions": []}]), json!([benefit("never", json!([]))]))
        ]}),
    )]);
    assert_eq!(
        refs(&e, json!({"attribute": {"a": "1"}})),
        ["always"],
        "ANY satisfied by `a`, but `${{sku}}` has no item"
    );
    assert_eq!(
        refs(&e, json!({"cart": {"items": [{"sku": "X"}, {"sku": "S"}]}})),
        ["any", "always"]
    );
    assert_eq!(
        refs(
            &e,
            json!({"attribute": {"a": "1"}, "cart": {"items": [{"sku": "S"}]}})
        ),
        ["any", "always"]
    );
    assert_eq!(refs(&e, json!({})), ["always"]);
}

#[test]
fn rule_validity_window_and_campaign_period() {
    let c = campaign(
        "C",
        json!({"rules": [
            rule("early", "AND", json!([]), json!([benefit("early", json!([]))])),
            rule("later", "AND", json!([]), json!([benefit("later", json!([]))]))
        ]}),
    );
    let mut c = c;
    c.rules[1].valid_from = Some(Utc.with_ymd_and_hms(2026, 7, 1, 0, 0, 0).unwrap());
    c.rules[0].valid_to = Some(now());
    let e = engine(vec![c.clone()]);
    assert!(
        refs(&e, json!({})).is_empty(),
        "validTo is exclusive, validFrom in the future"
    );
    let req = SearchRequest::default();
    let out = e
        .search(
            &req,
            Utc.with_ymd_and_hms(2026, 7, 1, 0, 0, 0).unwrap(),
            false,
        )
        .unwrap();
    assert_eq!(out.hits[0].actions[0].action.action_ref, "later");
    // endDate is exclusive; startDate inclusive.
    assert!(e.search(&req, c.end_date, false).unwrap().hits.is_empty());
    let at_start = e.search(&req, c.start_date, false).unwrap();
    assert_eq!(
        at_start.hits[0].actions.len(),
        1,
        "'later' not yet valid, 'early' valid"
    );
    assert_eq!(at_start.hits[0].actions[0].action.action_ref, "early");
}

#[test]
fn a_benefit_whose_formula_fails_is_dropped_not_the_others() {
    let e = engine(vec![campaign(
        "C",
        json!({"rules": [rule("r", "AND", json!([]), json!([
            benefit("div", json!([{"attribute": "x", "value": "10 / ${n}", "isFormula": true}])),
            benefit("ok", json!([{"attribute": "x", "value": "10 * ${n}", "isFormula": true}]))
        ]))]}),
    )]);
    assert_eq!(refs(&e, json!({"attribute": {"n": "0"}})), ["ok"]);
    assert_eq!(refs(&e, json!({"attribute": {"n": "4"}})), ["div", "ok"]);
    let req: SearchRequest = serde_json::from_value(json!({"attribute": {"n": "abc"}})).unwrap();
    let out = e.search(&req, now(), true).unwrap();
    assert!(out.hits.is_empty());
    assert_eq!(out.explanations[0].reason, "formula_failed");
    assert_eq!(
        out.explanations[0].field.as_deref(),
        Some("rules[0].then[0].data[0].value")
    );
}

#[test]
fn formula_names_resolve_item_then_attribute_then_cart_then_reserved() {
    let e = engine(vec![campaign(
        "CODE",
        json!({"rules": [rule("r", "AND",
        json!([{"match": "ALL", "conditions": [{"type": "cartItem", "attribute": "sku", "op": "eq", "value": "B"}]}]),
        json!([benefit("b", json!([
            {"attribute": "amount", "value": "${amount}"},
            {"attribute": "price", "value": "${price}"},
            {"attribute": "total", "value": "${totalPrice} ${currency}"},
            {"attribute": "code", "value": "${campaignCode}/${year}-${month}-${day}"}
        ]))]))]}),
    )]);
    let req: SearchRequest = serde_json::from_value(json!({
        "attribute": {"amount": "from-attribute", "price": "p-attr", "campaignCode": "spoof"},
        "cart": {"totalPrice": 70, "currency": "THB", "items": [{"sku": "A", "amount": 1}, {"sku": "B", "amount": 5}]}
    }))
    .unwrap();
    let out = e.search(&req, now(), false).unwrap();
    let values: Vec<&str> = out.hits[0].actions[0]
        .action
        .data
        .iter()
        .map(|d| d.value.as_str())
        .collect();
    // amount from the matched item B; price: item B has none, so the attribute;
    // campaignCode: the attribute wins for benefit text (design order).
    assert_eq!(values, ["5", "p-attr", "70 THB", "spoof/2026-6-15"]);
}

#[test]
fn quota_keys_prefer_reserved_names_and_merge_duplicates() {
    let c = campaign(
        "CODE",
        json!({
            "quotas": [
                {"key": "${campaignCode}", "value": 10},
                {"key": "${campaignCode}", "value": 5},
                {"key": "${campaignCode}-${userId}", "value": 2, "valueField": "pts"}
            ],
            "rules": [rule("r", "AND", json!([]), json!([benefit("b", json!([{"attribute": "pts", "value": "3"}]))]))]
        }),
    );
    let e = engine(vec![c]);
    let req: RedeemRequest = serde_json::from_value(json!({
        "campaignCode": "CODE", "attribute": {"userId": "u", "campaignCode": "spoof"}
    }))
    .unwrap();
    let plan = e.plan_redeem(&req.campaign_code, &req, now()).unwrap();
    let charges: Vec<(String, String, String)> = plan
        .charges
        .iter()
        .map(|c| (c.key.clone(), c.amount.to_string(), c.limit.to_string()))
        .collect();
    assert_eq!(
        charges,
        [
            ("CODE".into(), "2".into(), "5".into()),
            ("CODE-u".into(), "3".into(), "2".into())
        ]
    );
}

#[test]
fn quota_amounts_beyond_decimal_are_an_error_not_a_panic() {
    // Two quotas on one key, each charged Decimal::MAX: the merged amount
    // overflows. (Found by fuzzing: this panicked.)
    let max = "79228162514264337593543950335";
    let c = campaign(
        "BIG",
        json!({
            "quotas": [
                {"key": "k", "value": max, "valueField": "n"},
                {"key": "k", "value": max, "valueField": "n"}
            ],
            "rules": [rule("r", "AND", json!([]), json!([benefit("b", json!([{"attribute": "n", "value": max}]))]))]
        }),
    );
    let e = engine(vec![c]);
    let req: RedeemRequest = serde_json::from_value(json!({"campaignCode": "BIG"})).unwrap();
    let err = e.plan_redeem("BIG", &req, now()).unwrap_err();
    assert_eq!(err.code(), "invalid_quota_amount", "{err:?}");
    assert_eq!(err.fields()[0].code, "invalid_quota_amount");
    // Search drops the campaign and says why.
    let out = e.search(&req.as_search(), now(), true).unwrap();
    assert!(out.hits.is_empty());
    assert_eq!(out.explanations[0].reason, "invalid_quota_amount");
}

#[test]
fn naming_one_benefit_of_an_and_rule_redeems_all_of_it() {
    let c = campaign(
        "C",
        json!({"rules": [
            rule("and", "AND", json!([]), json!([benefit("a1", json!([])), benefit("a2", json!([]))])),
            rule("or", "OR", json!([]), json!([benefit("o1", json!([])), benefit("o2", json!([]))]))
        ]}),
    );
    let e = engine(vec![c]);
    let plan = |refs: serde_json::Value| {
        let req: RedeemRequest =
            serde_json::from_value(json!({"campaignCode": "C", "actionRefs": refs})).unwrap();
        e.plan_redeem(&req.campaign_code, &req, now()).map(|p| {
            p.action_txs
                .iter()
                .map(|t| t.then.action_ref.clone())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(plan(json!(["a2"])).unwrap(), ["a1", "a2"]);
    assert_eq!(plan(json!(["o2", "a1", "o2"])).unwrap(), ["a1", "a2", "o2"]);
    assert_eq!(plan(json!([])).unwrap_err().code(), "no_action_selected");
    assert_eq!(
        plan(serde_json::Value::Null).unwrap_err().code(),
        "action_choice_required"
    );
}

#[test]
fn request_limits_are_enforced() {
    let e = engine(vec![]);
    let items: Vec<_> = (0..=crate::core::limits::MAX_CART_ITEMS)
        .map(|i| json!({"sku": i.to_string()}))
        .collect();
    let req: SearchRequest = serde_json::from_value(json!({"cart": {"items": items}})).unwrap();
    let err = e.search(&req, now(), false).unwrap_err();
    assert_eq!(
        (err.kind(), err.code()),
        (crate::ErrorKind::LimitExceeded, "request_too_large")
    );
    let long = "x".repeat(crate::core::limits::MAX_REQUEST_STRING_LEN + 1);
    let req: SearchRequest = serde_json::from_value(json!({"attribute": {"a": long}})).unwrap();
    assert_eq!(
        e.search(&req, now(), false).unwrap_err().code(),
        "request_too_large"
    );
}

/// `count` campaigns each with one rule `tier in [...]` (or `eq`), plus
/// the extra condition `with` on every rule.
fn tier_campaigns(count: usize, with: &serde_json::Value) -> Vec<Campaign> {
    (0..count)
        .map(|i| {
            let tiers = ["gold", "silver", "bronze", "none"];
            let accept = format!("(\"{}\",\"{}\")", tiers[i % 4], tiers[(i + 1) % 4]);
            let mut when = vec![json!({"type": "custom", "attribute": "tier",
                "op": "in", "value": accept})];
            if !with.is_null() {
                when.push(with.clone());
            }
            campaign(
                &format!("T{i:03}"),
                json!({"rules": [rule("r", "AND", json!([{"match": "ALL", "conditions": when}]),
                    json!([benefit(&format!("t{i}"), json!([{"attribute": "p", "value": "1"}]))]))]}),
            )
        })
        .collect()
}

#[test]
fn dense_filter_picks_text_attributes_tested_by_many_rules() {
    // 130 rules over three words of bits; every rule tests `tier`.
    let e = engine(tier_campaigns(130, &serde_json::Value::Null));
    let tier = e.symbols.get("tier").unwrap();
    assert!(e.index.is_dense_slot(tier));
    let fired = |tier: serde_json::Value| {
        let mut got = refs(&e, json!({"attribute": {"tier": tier}, "cart": {}}));
        got.sort();
        got.len()
    };
    // Each rule accepts two of the four tiers: about half of them pass.
    assert_eq!(fired(json!("gold")), 65);
    assert_eq!(fired(json!("none")), 64);
    // A value no condition names, a missing one, a number: no rule passes.
    assert_eq!(fired(json!("platinum")), 0);
    assert_eq!(fired(serde_json::Value::Null), 0);
    assert_eq!(fired(json!(7)), 0);
    // Several values skip the filter: every rule is then verified.
    assert_eq!(fired(json!(["gold", "silver"])), 98);

    // A numeric test on the attribute keeps it in the counting pass.
    let mut cs = tier_campaigns(130, &serde_json::Value::Null);
    cs.extend(tier_campaigns(
        1,
        &json!({"type": "custom", "attribute": "tier",
        "op": "eq", "value": "3", "valueType": "NUMBER"}),
    ));
    cs.last_mut().unwrap().ref_code = "N".into();
    let e = engine(cs);
    assert!(!e.index.is_dense_slot(e.symbols.get("tier").unwrap()));

    // An attribute tested by fewer than one rule in 64 is counted.
    let mut cs = tier_campaigns(130, &serde_json::Value::Null);
    cs.extend(tier_campaigns(
        1,
        &json!({"type": "custom", "attribute": "rare",
        "op": "eq", "value": "x"}),
    ));
    cs.last_mut().unwrap().ref_code = "R".into();
    let e = engine(cs);
    assert!(e.index.is_dense_slot(e.symbols.get("tier").unwrap()));
    assert!(!e.index.is_dense_slot(e.symbols.get("rare").unwrap()));
    let fired = refs(
        &e,
        json!({"attribute": {"tier": "gold", "rare": "x"}, "cart": {}}),
    );
    assert_eq!(fired.len(), 66);
}

#[test]
fn dense_filter_is_skipped_for_an_attribute_with_too_many_values() {
    let cs: Vec<Campaign> = (0..100)
        .map(|i| {
            let when = json!([{"match": "ALL", "conditions": [{"type": "custom",
                "attribute": "store", "op": "eq", "value": format!("S{i}")}]}]);
            campaign(
                &format!("S{i:03}"),
                json!({"rules": [rule("r", "AND", when, json!([benefit("b", json!([]))]))]}),
            )
        })
        .collect();
    let e = engine(cs);
    assert!(!e.index.is_dense_slot(e.symbols.get("store").unwrap()));
    assert_eq!(
        refs(&e, json!({"attribute": {"store": "S42"}, "cart": {}})),
        vec!["b"]
    );
}

/// The exactness guard of the index: for random campaigns and requests, the
/// indexed search returns exactly what evaluating every rule returns.
mod index_exactness {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;

    const NAMES: [&str; 3] = ["a", "b", "c"];

    /// Texts, and numbers in several scales (`2` and `2.0` are one number,
    /// not one text), so that range bounds meet values equal to them.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            (0..4u8).prop_map(|i| format!("v{i}")),
            (0..4u8).prop_map(|i| i.to_string()),
            (0..4u8).prop_map(|i| format!("{i}.0")),
            (0..4u8).prop_map(|i| format!("{i}.5")),
        ]
    }

    fn condition() -> impl Strategy<Value = Value> {
        let target = prop_oneof![
            prop::sample::select(NAMES.to_vec()).prop_map(|n| ("custom", n)),
            Just(("cartItem", "sku")),
            Just(("cartItem", "tags")),
            Just(("cartItem", "amount")),
            Just(("cartItem", "price")),
            Just(("cart", "totalPrice")),
        ];
        let ops = prop::sample::select(crate::core::campaign::Op::WIRE);
        (
            target,
            ops,
            prop::bool::ANY,
            prop::collection::vec(value(), 1..3),
        )
            .prop_map(|((kind, attr), op, number, vs)| {
                let numeric: Vec<String> = vs
                    .iter()
                    .map(|v| v.trim_start_matches('v').to_owned())
                    .collect();
                let vs = if number { numeric } else { vs };
                let value = match op {
                    "in" | "not_in" => crate::core::condition::list::format_list(&vs),
                    "matches" | "not_matches" => format!("{}|x", vs[0]),
                    _ => vs[0].clone(),
                };
                json!({"type": kind, "attribute": attr, "op": op, "value": value,
                   "valueType": if number { "NUMBER" } else { "STRING" }})
            })
    }

    fn group() -> impl Strategy<Value = Value> {
        (prop::bool::weighted(0.8), prop::collection::vec(condition(), 0..4))
            .prop_map(|(all, conds)| json!({"match": if all { "ALL" } else { "ANY" }, "conditions": conds}))
    }

    fn campaign_json() -> impl Strategy<Value = (Option<&'static str>, bool, Vec<Value>)> {
        let channel = prop::option::weighted(0.2, prop::sample::select(vec!["web", "app"]));
        let rules = prop::collection::vec(prop::collection::vec(group(), 0..3), 1..3);
        (channel, prop::bool::weighted(0.9), rules).prop_map(|(channel, enabled, rules)| {
            let rules = rules
                .into_iter()
                .enumerate()
                .map(|(r, groups)| {
                    rule(
                        &format!("r{r}"),
                        "AND",
                        json!(groups),
                        // Static benefits are lent, templated ones built per
                        // request (`${sku}` from the matched item, if any).
                        json!([benefit(
                            &format!("b{r}"),
                            if r % 2 == 0 {
                                json!([{"attribute": "p", "value": "5"}])
                            } else {
                                json!([{"attribute": "s", "value": "${sku}"}])
                            }
                        )]),
                    )
                })
                .collect();
            (channel, enabled, rules)
        })
    }

    fn request() -> impl Strategy<Value = SearchRequest> {
        let attr = prop_oneof![
            value().prop_map(Value::String),
            (0..4i64).prop_map(Value::from),
            prop::collection::vec(value(), 0..3).prop_map(|v| json!(v)),
            Just(Value::Null),
        ];
        let attrs = prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), attr, 0..4);
        let item = (value(), prop::collection::vec(value(), 0..3), 0..4u8, value()).prop_map(
            |(sku, tags, amount, price)| json!({"sku": sku, "tags": tags, "amount": amount, "price": price}),
        );
        let channel = prop::option::of(prop::sample::select(vec!["web", "app"]));
        (attrs, prop::collection::vec(item, 0..3), channel, 0..4u8).prop_map(
            |(attrs, items, channel, total)| {
                serde_json::from_value(json!({"attribute": attrs, "channel": channel,
                                          "cart": {"totalPrice": total, "items": items}}))
                .unwrap()
            },
        )
    }

    /// The indexed search and the one-by-one evaluation agree on every request.
    fn same_with_and_without_index(
        e: &Engine,
        requests: &[SearchRequest],
    ) -> Result<(), TestCaseError> {
        for req in requests {
            let indexed = e.search(req, now(), true).unwrap();
            let plain = e.search_unindexed(req, now(), true).unwrap();
            prop_assert_eq!(summary(&indexed), summary(&plain));
        }
        Ok(())
    }

    type Summary = (
        Vec<(String, Vec<String>)>,
        Vec<(String, String, Option<String>)>,
    );

    fn summary(out: &SearchOutcome<'_>) -> Summary {
        let hits = out
            .hits
            .iter()
            .map(|h| {
                (
                    h.campaign.campaign.ref_code.clone(),
                    // The whole evaluated benefit, not just its ref: search
                    // lends static benefits and builds the others.
                    h.actions
                        .iter()
                        .map(|a| serde_json::to_string(&*a.action).unwrap())
                        .collect(),
                )
            })
            .collect();
        let why = out
            .explanations
            .iter()
            .map(|e| (e.ref_code.clone(), e.reason.clone(), e.field.clone()))
            .collect();
        (hits, why)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn indexed_search_equals_one_by_one(
            campaigns in prop::collection::vec(campaign_json(), 1..8),
            requests in prop::collection::vec(request(), 1..5),
        ) {
            let campaigns: Vec<Campaign> = campaigns
                .into_iter()
                .enumerate()
                .map(|(i, (channel, enabled, rules))| {
                    campaign(&format!("C{i}"), json!({"channel": channel, "status": if enabled { "ENABLE" } else { "DISABLE" },
                                                     "priority": i % 3 + 1, "rules": rules}))
                })
                .collect();
            same_with_and_without_index(&engine(campaigns), &requests)?;
        }
    }

    /// A text `eq`/`in` condition on one of the attributes, with values of
    /// the same alphabet as [`value`]: the kind the dense filter takes.
    fn text_condition() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(NAMES.to_vec()),
            prop::bool::ANY,
            prop::collection::vec(value(), 1..4),
        )
            .prop_map(|(attr, eq, vs)| {
                let (op, value) = if eq {
                    ("eq", vs[0].clone())
                } else {
                    ("in", crate::core::condition::list::format_list(&vs))
                };
                json!({"type": "custom", "attribute": attr, "op": op, "value": value})
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// Many rules of text conditions, so that the attributes go to the
        /// dense filter, over several words of bits; now and then another
        /// kind of condition, so that some rules are verified.
        #[test]
        fn dense_filtered_search_equals_one_by_one(
            rules in prop::collection::vec(
                prop::collection::vec(prop_oneof![4 => text_condition(), 1 => condition()], 0..4),
                65..200,
            ),
            requests in prop::collection::vec(request(), 1..6),
        ) {
            let campaigns: Vec<Campaign> = rules
                .into_iter()
                .enumerate()
                .map(|(i, conds)| {
                    let when = json!([{"match": "ALL", "conditions": conds}]);
                    // Static benefits, and now and then one that needs a matched item.
                    let value = if i % 5 == 0 { "${sku}" } else { "5" };
                    campaign(&format!("D{i:03}"), json!({"rules": [rule("r", "AND", when,
                        json!([benefit("b", json!([{"attribute": "s", "value": value}]))]))]}))
                })
                .collect();
            same_with_and_without_index(&engine(campaigns), &requests)?;
        }
    }
}
