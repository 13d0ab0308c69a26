//! Every limit of `accord::limits` over a real socket: one test per limit,
//! each sending the smallest request over it and asserting the status, the
//! problem `code` and the field path a client gets. Request-size limits are
//! 413 (`payload_too_large` for the body, `request_too_large` for the
//! rest), limits on a saved campaign or content record are 422
//! `validation_failed` naming the field, list parameters 400.
#![cfg(feature = "http")]

use crate::http_support;

use std::sync::Arc;

use accord::http::{Api, Auth};
use accord::limits;
use accord::store::memory::MemoryStore;
use accord::{CampaignService, ConsentService, ManualClock};
use http_support::{fixture, parts, problem, serve_api, start, t0, token, Server, P, SECRET};
use reqwest::Method;
use serde_json::{json, Value};

async fn post(s: &Server, url: &str, body: &Value) -> reqwest::Response {
    s.req(Method::POST, url).json(body).send().await.unwrap()
}

async fn get(s: &Server, url: &str) -> reqwest::Response {
    s.req(Method::GET, url).send().await.unwrap()
}

/// Asserts a problem naming `field` with the field error `code`.
fn assert_field(p: &Value, field: &str, code: &str) {
    let errors = p["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["field"] == field && e["code"] == code),
        "no {field} ({code}) in {p}"
    );
}

/// A search with `body`: the problem, checked for `status` and `code`.
async fn search(s: &Server, body: &Value, status: u16, code: &str) -> Value {
    let res = post(s, &s.campaign_url("/search"), body).await;
    problem(res, status, code).await
}

/// A search over a request limit: 413 `request_too_large` naming `field`.
async fn search_too_large(body: Value, field: &str, code: &str) {
    let s = start().await;
    let p = search(&s, &body, 413, "request_too_large").await;
    assert_field(&p, field, code);
}

/// The promo-code fixture changed by `edit`, created: 422 naming `field`.
async fn campaign_invalid(edit: impl FnOnce(&mut Value), field: &str, code: &str) {
    let s = start().await;
    let mut campaign = fixture("promo_code");
    edit(&mut campaign);
    let res = post(&s, &s.campaign_url("/campaigns"), &campaign).await;
    let p = problem(res, 422, "validation_failed").await;
    assert_field(&p, field, code);
}

/// The promo-code fixture changed by `edit` is accepted (201).
async fn campaign_valid(s: &Server, edit: impl FnOnce(&mut Value)) -> Value {
    let mut campaign = fixture("promo_code");
    edit(&mut campaign);
    let res = post(s, &s.campaign_url("/campaigns"), &campaign).await;
    let (status, body) = parts(res).await;
    assert_eq!(status, 201, "{body}");
    body
}

fn rule0(c: &mut Value) -> &mut Value {
    &mut c["rules"][0]
}

fn condition(attribute: &str, op: &str, value: &str) -> Value {
    json!({"type": "custom", "attribute": attribute, "op": op, "value": value, "valueType": "STRING"})
}

// ---- request limits: 413 ----

#[tokio::test]
async fn body_over_one_mib() {
    let s = start().await;
    let body = format!(
        r#"{{"cart": {{"items": [{{"name": "{}"}}]}}}}"#,
        "x".repeat(accord::http::MAX_BODY_BYTES)
    );
    let res = s
        .req(Method::POST, &s.campaign_url("/search"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let p = problem(res, 413, "payload_too_large").await;
    assert_eq!(p["errors"], json!([]));
}

#[tokio::test]
async fn cart_items_per_request() {
    let items =
        |n: usize| -> Vec<Value> { (0..n).map(|i| json!({"sku": i.to_string()})).collect() };
    let s = start().await;
    let ok = json!({"cart": {"items": items(limits::MAX_CART_ITEMS)}});
    let res = post(&s, &s.campaign_url("/search"), &ok).await;
    assert_eq!(res.status(), 200);
    search_too_large(
        json!({"cart": {"items": items(limits::MAX_CART_ITEMS + 1)}}),
        "cart.items",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn tags_per_cart_item() {
    let tags: Vec<String> = (0..=limits::MAX_TAGS_PER_ITEM)
        .map(|i| format!("t{i}"))
        .collect();
    search_too_large(
        json!({"cart": {"items": [{"sku": "A"}, {"sku": "B", "tags": tags}]}}),
        "cart.items[1].tags",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn attributes_per_request() {
    let attrs: serde_json::Map<String, Value> = (0..=limits::MAX_ATTRIBUTES)
        .map(|i| (format!("a{i}"), json!(i)))
        .collect();
    search_too_large(json!({ "attribute": attrs }), "attribute", "too_many").await;
}

#[tokio::test]
async fn attribute_array_length() {
    let xs: Vec<usize> = (0..=limits::MAX_ATTRIBUTE_ARRAY_LEN).collect();
    search_too_large(
        json!({"attribute": {"tiers": xs}}),
        "attribute.tiers",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn request_string_length() {
    let long = "x".repeat(limits::MAX_REQUEST_STRING_LEN + 1);
    let ok = "x".repeat(limits::MAX_REQUEST_STRING_LEN);
    let s = start().await;
    let res = post(
        &s,
        &s.campaign_url("/search"),
        &json!({"attribute": {"promo": ok}}),
    )
    .await;
    assert_eq!(res.status(), 200);
    for (body, field) in [
        (json!({"attribute": {"userId": long}}), "attribute.userId"),
        (
            json!({"attribute": {"codes": ["a", long]}}),
            "attribute.codes[1]",
        ),
        (json!({"attribute": {long.clone(): 1}}), "attribute"),
        (
            json!({"cart": {"items": [{"sku": "A"}, {"sku": long}]}}),
            "cart.items[1].sku",
        ),
        (
            json!({"cart": {"items": [{"tags": ["a", long]}]}}),
            "cart.items[0].tags[1]",
        ),
        (json!({"cart": {"totalPrice": long}}), "cart.totalPrice"),
        (json!({"channel": long}), "channel"),
    ] {
        let p = search(&s, &body, 413, "request_too_large").await;
        assert_field(&p, field, "too_long");
    }
}

#[tokio::test]
async fn action_refs_per_redeem() {
    let s = start().await;
    s.create("promo_code").await;
    let refs: Vec<String> = (0..=limits::MAX_ACTION_REFS)
        .map(|i| format!("ref-{i}"))
        .collect();
    let res = s
        .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .json(&json!({"campaignCode": "SAVE100", "actionRefs": refs,
                      "attribute": {"userId": "u1", "promoCode": "SAVE100"},
                      "cart": {"totalPrice": 900}}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 413, "request_too_large").await;
    assert_field(&p, "actionRefs", "too_many");
}

/// Starts the router over services whose campaign service allows `max`
/// campaigns per project.
async fn start_with_max_campaigns(max: u64) -> Server {
    let clock = Arc::new(ManualClock::new(t0()));
    let store = Arc::new(MemoryStore::new());
    let campaigns =
        Arc::new(CampaignService::new(Arc::clone(&store), clock.clone()).with_max_campaigns(max));
    let consent = Arc::new(ConsentService::new(Arc::clone(&store), clock.clone()));
    let api = Api::from_services(campaigns, consent, Auth::hs256(SECRET).unwrap());
    serve_api(api, clock, store).await
}

#[tokio::test]
async fn campaigns_per_project() {
    // The default is MAX_CAMPAIGNS_PER_PROJECT; the service takes a smaller
    // one so the test need not create 100,000 campaigns.
    let s = start_with_max_campaigns(3).await;
    for code in ["C1", "C2", "C3"] {
        campaign_valid(&s, |c| c["refCode"] = json!(code)).await;
    }
    let mut fourth = fixture("promo_code");
    fourth["refCode"] = json!("C4");
    let res = post(&s, &s.campaign_url("/campaigns"), &fourth).await;
    let p = problem(res, 413, "too_many_campaigns").await;
    assert!(p["detail"].as_str().unwrap().contains("at most 3"), "{p}");
    // Another project has its own count.
    let other = token(accord::http::scope::ALL, &["other"]);
    let res = s
        .client
        .post(s.url("/campaign/api/projects/other/campaigns"))
        .bearer_auth(other)
        .json(&fourth)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    // Deleting one makes room again.
    let list: Vec<Value> = get(&s, &s.campaign_url("/campaigns"))
        .await
        .json()
        .await
        .unwrap();
    let id = list[0]["id"].as_str().unwrap();
    let res = s
        .req(Method::DELETE, &s.campaign_url(&format!("/campaigns/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    campaign_valid(&s, |c| c["refCode"] = json!("C4")).await;
}

// ---- campaign limits: 422 naming the field ----

#[tokio::test]
async fn rules_per_campaign() {
    campaign_invalid(
        |c| {
            let rule = c["rules"][0].clone();
            c["rules"] = json!(vec![rule; limits::MAX_RULES_PER_CAMPAIGN + 1]);
        },
        "rules",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn when_groups_per_rule() {
    campaign_invalid(
        |c| {
            let group = rule0(c)["when"][0].clone();
            rule0(c)["when"] = json!(vec![group; limits::MAX_GROUPS_PER_RULE + 1]);
        },
        "rules[0].when",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn conditions_per_rule() {
    // Five groups of 41: every group is small, the rule is over.
    let per_group = limits::MAX_CONDITIONS_PER_RULE / 5 + 1;
    campaign_invalid(
        |c| {
            let group = json!({"match": "ALL",
                "conditions": vec![condition("tier", "eq", "gold"); per_group]});
            rule0(c)["when"] = json!(vec![group; 5]);
        },
        "rules[0].when",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn benefits_per_rule() {
    campaign_invalid(
        |c| {
            let then = rule0(c)["then"][0].clone();
            rule0(c)["then"] = json!(vec![then; limits::MAX_BENEFITS_PER_RULE + 1]);
        },
        "rules[0].then",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn data_items_per_benefit() {
    campaign_invalid(
        |c| {
            let item = json!({"attribute": "note", "value": "x"});
            rule0(c)["then"][0]["data"] = json!(vec![item; limits::MAX_DATA_PER_BENEFIT + 1]);
        },
        "rules[0].then[0].data",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn quotas_per_campaign() {
    campaign_invalid(
        |c| {
            let quotas: Vec<Value> = (0..=limits::MAX_QUOTAS_PER_CAMPAIGN)
                .map(|i| json!({"key": format!("k{i}"), "value": 1}))
                .collect();
            c["quotas"] = json!(quotas);
        },
        "quotas",
        "too_many",
    )
    .await;
}

#[tokio::test]
async fn campaign_text_length() {
    let long = "x".repeat(limits::MAX_TEXT_LEN + 1);
    campaign_invalid(|c| c["name"] = json!(long), "name", "too_long").await;
    let long = "x".repeat(limits::MAX_TEXT_LEN + 1);
    campaign_invalid(
        |c| rule0(c)["then"][0]["data"][1]["value"] = json!(long),
        "rules[0].then[0].data[1].value",
        "too_long",
    )
    .await;
}

#[tokio::test]
async fn ref_code_length() {
    let long = "X".repeat(limits::MAX_REF_CODE_LEN + 1);
    campaign_invalid(|c| c["refCode"] = json!(long), "refCode", "too_long").await;
}

#[tokio::test]
async fn in_list_length() {
    let list = |n: usize| {
        let values: Vec<String> = (0..n).map(|i| format!("\"v{i}\"")).collect();
        format!("({})", values.join(","))
    };
    let s = start().await;
    campaign_valid(&s, |c| {
        rule0(c)["when"][0]["conditions"][0] =
            condition("tier", "in", &list(limits::MAX_IN_VALUES));
    })
    .await;
    campaign_invalid(
        |c| {
            rule0(c)["when"][0]["conditions"][0] =
                condition("tier", "in", &list(limits::MAX_IN_VALUES + 1));
        },
        "rules[0].when[0].conditions[0].value",
        "in_list_too_long",
    )
    .await;
}

#[tokio::test]
async fn condition_value_and_pattern_length() {
    campaign_invalid(
        |c| {
            rule0(c)["when"][0]["conditions"][0] =
                condition("tier", "eq", &"x".repeat(limits::MAX_VALUE_LEN + 1));
        },
        "rules[0].when[0].conditions[0].value",
        "too_long",
    )
    .await;
    campaign_invalid(
        |c| {
            rule0(c)["when"][0]["conditions"][0] =
                condition("code", "matches", &"a".repeat(limits::MAX_PATTERN_LEN + 1));
        },
        "rules[0].when[0].conditions[0].value",
        "too_long",
    )
    .await;
}

fn formula_item(source: &str) -> Value {
    json!({"attribute": "points", "value": source, "isFormula": true})
}

#[tokio::test]
async fn formula_length() {
    // `1+1+…`: as long as allowed is fine, one byte more is not.
    let ones = |len: usize| {
        let mut f = "1+".repeat(len / 2);
        f.push('1');
        f.truncate(len);
        f.trim_end_matches('+').to_owned()
    };
    let s = start().await;
    campaign_valid(&s, |c| {
        rule0(c)["then"][0]["data"][0] = formula_item(&ones(limits::MAX_FORMULA_LEN));
    })
    .await;
    campaign_invalid(
        |c| {
            let mut f = ones(limits::MAX_FORMULA_LEN);
            f.push_str("+1");
            rule0(c)["then"][0]["data"][0] = formula_item(&f);
        },
        "rules[0].then[0].data[0].value",
        "formula_too_long",
    )
    .await;
}

#[tokio::test]
async fn formula_nesting_depth() {
    let nested = |depth: usize| format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    let s = start().await;
    campaign_valid(&s, |c| {
        rule0(c)["then"][0]["data"][0] = formula_item(&nested(limits::MAX_FORMULA_DEPTH));
    })
    .await;
    campaign_invalid(
        |c| {
            rule0(c)["then"][0]["data"][0] = formula_item(&nested(limits::MAX_FORMULA_DEPTH + 1));
        },
        "rules[0].then[0].data[0].value",
        "formula_too_deep",
    )
    .await;
}

/// The evaluation budget is a second line of defence: no formula within
/// the length and depth limits can reach it (the formula unit tests show it
/// trips with a small budget). Over HTTP: the most expensive formulas a
/// campaign may hold evaluate, with the exact result.
#[tokio::test]
async fn evaluation_steps() {
    // `1+1+…+1` in 1,023 bytes (512 terms: about the most nodes the length
    // limit lets a formula hold), and the deepest nesting around a sum.
    let mut widest = "1+".repeat(limits::MAX_FORMULA_LEN / 2);
    widest.push('1');
    widest.truncate(limits::MAX_FORMULA_LEN);
    let widest = widest.trim_end_matches('+').to_owned();
    let terms = widest.matches('1').count();
    let depth = limits::MAX_FORMULA_DEPTH;
    let deepest = format!("{}1+1{}", "(".repeat(depth), ")".repeat(depth));
    assert!(widest.len() <= limits::MAX_FORMULA_LEN && terms * 2 < limits::MAX_EVAL_STEPS);
    let s = start().await;
    campaign_valid(&s, |c| {
        rule0(c)["then"][0]["data"] = json!([formula_item(&widest),
            {"attribute": "depth", "value": deepest, "isFormula": true}]);
    })
    .await;
    let body = json!({"attribute": {"promoCode": "SAVE100", "userId": "u1"},
                      "cart": {"totalPrice": 900}});
    let res = post(&s, &s.campaign_url("/search"), &body).await;
    let (status, body) = parts(res).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["actions"][0]["action"]["data"];
    assert_eq!(data[0]["value"], terms.to_string(), "{body}");
    assert_eq!(data[1]["value"], "2", "{body}");
}

// ---- lists: 400 naming the parameter ----

#[tokio::test]
async fn page_size_of_every_list() {
    let s = start().await;
    let max = limits::MAX_PAGE_SIZE;
    for (path, code) in [
        (
            format!("/campaign/api/projects/{P}/campaigns"),
            "invalid_parameter",
        ),
        (
            format!("/campaign/api/projects/{P}/redemptions"),
            "invalid_parameter",
        ),
        (
            format!("/cms/api/projects/{P}/c/svc-consent-v1"),
            "invalid_page_size",
        ),
    ] {
        let ok = get(&s, &s.url(&format!("{path}?size={max}"))).await;
        assert_eq!(ok.status(), 200, "{path}");
        for size in [0, max + 1] {
            let res = get(&s, &s.url(&format!("{path}?size={size}"))).await;
            let p = problem(res, 400, code).await;
            assert_eq!(p["errors"][0]["field"], "size", "{path}: {p}");
        }
    }
}

#[tokio::test]
async fn content_filters_and_sort_keys() {
    let s = start().await;
    let url = |q: String| s.url(&format!("/cms/api/projects/{P}/c/svc-consent-v1?{q}"));
    let filters: Vec<String> = (0..=limits::MAX_FILTERS)
        .map(|i| format!("data.a{i}=x"))
        .collect();
    let res = get(&s, &url(filters.join("&"))).await;
    let p = problem(res, 400, "too_many_filters").await;
    assert!(p["errors"][0]["field"].is_string(), "{p}");
    let sorts: Vec<String> = (0..=limits::MAX_SORT_KEYS)
        .map(|i| format!("sort=data.a{i}"))
        .collect();
    let res = get(&s, &url(sorts.join("&"))).await;
    let p = problem(res, 400, "too_many_sort_keys").await;
    assert_eq!(p["errors"][0]["field"], "sort", "{p}");
}

// ---- consent limits: 422 naming the field ----

#[tokio::test]
async fn purposes_per_consent() {
    let s = start().await;
    let purposes: Vec<String> = (0..=limits::MAX_PURPOSES)
        .map(|i| format!("p{i}"))
        .collect();
    let res = s
        .req(
            Method::POST,
            &s.url(&format!("/cms/api/projects/{P}/c/svc-consent-v1")),
        )
        .json(
            &json!({"data": {"name": "C", "application": "app", "purposes": purposes,
                               "revision": 1, "status": "DRAFT"}}),
        )
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_field(&p, "data.purposes", "too_many");
}

#[tokio::test]
async fn template_name_length() {
    let name = |n: usize| format!("${{{}}}", "a".repeat(n));
    let s = start().await;
    campaign_valid(&s, |c| {
        c["quotas"][0]["key"] = json!(name(limits::MAX_TEMPLATE_NAME_LEN));
    })
    .await;
    campaign_invalid(
        |c| c["quotas"][0]["key"] = json!(name(limits::MAX_TEMPLATE_NAME_LEN + 1)),
        "quotas[0].key",
        "template_syntax",
    )
    .await;
}

#[tokio::test]
async fn idempotency_key_length() {
    let s = start().await;
    s.create("promo_code").await;
    let res = s
        .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .header("idempotency-key", "k".repeat(limits::MAX_REF_CODE_LEN + 1))
        .json(&json!({"campaignCode": "SAVE100",
                      "attribute": {"userId": "u1", "promoCode": "SAVE100"},
                      "cart": {"totalPrice": 900}}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "invalid_idempotency_key").await;
    assert_field(&p, "idempotencyKey", "invalid_idempotency_key");
}

#[tokio::test]
async fn consent_revision_and_lifespan() {
    let s = start().await;
    let url = s.url(&format!("/cms/api/projects/{P}/c/svc-consent-v1"));
    for (revision, lifespan, field) in [
        (limits::MAX_REVISION + 1, 1, "data.revision"),
        (1, limits::MAX_LIFESPAN_DAYS + 1, "data.lifespan"),
    ] {
        let res = s
            .req(Method::POST, &url)
            .json(
                &json!({"data": {"name": "C", "application": "app", "purposes": ["email"],
                                   "privacyNoticeRef": "n1", "revision": revision,
                                   "lifespan": lifespan, "status": "DRAFT"}}),
            )
            .send()
            .await
            .unwrap();
        let p = problem(res, 422, "validation_failed").await;
        let e = p["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["field"] == field);
        assert!(e.is_some(), "no {field} in {p}");
    }
}

/// The campaign identifiers the stores index: a project id in the path and
/// `attribute.userId` one byte over their limits are 422 naming the field
/// (the boundary values are stored on every store: tests/it/suite/services.rs).
#[tokio::test]
async fn campaign_identifier_lengths() {
    let s = start().await;
    let user = |n: usize| json!({"attribute": {"userId": "u".repeat(n)}});
    let res = post(
        &s,
        &s.campaign_url("/search"),
        &user(limits::MAX_USER_ID_LEN),
    )
    .await;
    assert_eq!(res.status(), 200);
    let res = post(
        &s,
        &s.campaign_url("/search"),
        &user(limits::MAX_USER_ID_LEN + 1),
    )
    .await;
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "attribute.userId", "{p}");
    assert_eq!(p["errors"][0]["code"], "too_long", "{p}");

    let project = "p".repeat(limits::MAX_PROJECT_ID_LEN + 1);
    for url in [
        s.url(&format!("/campaign/api/projects/{project}/search")),
        s.url(&format!(
            "/bff/api/consent/projects/{project}/consent-acceptance"
        )),
    ] {
        let res = post(&s, &url, &json!({})).await;
        let p = problem(res, 422, "validation_failed").await;
        assert_eq!(p["errors"][0]["field"], "projId", "{p}");
        assert_eq!(p["errors"][0]["code"], "too_long", "{p}");
    }
}

/// Per-project and per-token rate limits: past one, a 429 problem
/// `rate_limited` with `Retry-After`; other projects and tokens keep their
/// own allowance; the refusals are counted in the metrics.
#[tokio::test]
async fn rate_limits_answer_429_with_retry_after() {
    use accord::http::{Rate, RateLimits};
    let mut limits = RateLimits::default();
    limits.per_project = Some(Rate {
        per_second: 1,
        burst: 3,
    });
    limits.per_token = Some(Rate {
        per_second: 1,
        burst: 2,
    });
    let clock = Arc::new(ManualClock::new(t0()));
    let store = Arc::new(MemoryStore::new());
    let api = Api::new(store.clone(), clock.clone(), Auth::hs256(SECRET).unwrap())
        .with_rate_limits(limits);
    let s = serve_api(api, clock, store).await;
    let list = |project: &str, token: &str| {
        s.client
            .get(s.url(&format!("/campaign/api/projects/{project}/campaigns")))
            .bearer_auth(token.to_owned())
            .send()
    };
    let a = token(accord::http::scope::ALL, &[P, "other"]);
    let b = http_support::claims(accord::http::scope::ALL, &[P, "other"]);
    let b = accord::http::Claims {
        sub: "another".to_owned(),
        ..b
    }
    .sign_hs256(SECRET.as_bytes())
    .unwrap();
    // Token a: two, then its own limit.
    for _ in 0..2 {
        assert_eq!(list(P, &a).await.unwrap().status(), 200);
    }
    let refused = list(P, &a).await.unwrap();
    assert_eq!(refused.status(), 429);
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    let body = problem(refused, 429, "rate_limited").await;
    assert!(body["detail"].as_str().unwrap().contains("token"), "{body}");
    // Token b: the project's third, then the project's limit.
    assert_eq!(list(P, &b).await.unwrap().status(), 200);
    let refused = list(P, &b).await.unwrap();
    assert!(refused.headers().contains_key("retry-after"));
    let body = problem(refused, 429, "rate_limited").await;
    assert!(
        body["detail"].as_str().unwrap().contains("project"),
        "{body}"
    );
    // Another project has its own allowance (a fresh token: b's own is
    // used up too).
    let c = token(&[accord::http::scope::CAMPAIGN_ADMIN], &["other"]);
    assert_eq!(list("other", &c).await.unwrap().status(), 200);
    // Public routes are not limited.
    assert_eq!(
        s.client
            .get(s.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let metrics = s
        .client
        .get(s.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("accord_rate_limited_total{limit=\"token\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("accord_rate_limited_total{limit=\"project\"} 1"),
        "{metrics}"
    );
}
