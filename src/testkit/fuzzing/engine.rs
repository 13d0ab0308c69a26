//! Harnesses of campaigns: validation, compilation, search, redeem, quota keys.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use chrono::Datelike;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{block_on, head_and_pairs, now};
use crate::core::campaign::{Campaign, CampaignInput, RedeemRequest, SearchRequest, Then};
use crate::core::clock::ManualClock;
use crate::core::engine::{CompiledCampaign, Engine, SearchOutcome};
use crate::core::formula::Formula;
use crate::core::template::{Template, TemplateError};
use crate::service::campaign::CampaignService;
use crate::service::campaign::SearchOptions;
use crate::store::memory::MemoryStore;
use crate::store::CampaignStore;
use crate::ErrorKind;

/// The fixed campaign set of [`request`]: the test fixtures of
/// `tests/data/campaigns/`.
pub const FIXTURES: [&str; 5] = [
    include_str!("../../../tests/data/campaigns/freebie.json"),
    include_str!("../../../tests/data/campaigns/grading.json"),
    include_str!("../../../tests/data/campaigns/loyalty.json"),
    include_str!("../../../tests/data/campaigns/marketplace.json"),
    include_str!("../../../tests/data/campaigns/promo_code.json"),
];

const PROJECT: &str = "fuzz";

type Service = CampaignService<MemoryStore>;

fn service_over(store: MemoryStore) -> Service {
    CampaignService::new(Arc::new(store), Arc::new(ManualClock::new(now())))
}

/// An error the caller's input may cause; anything else is a bug.
fn assert_caller_error(e: &crate::Error, what: &str) {
    assert!(
        !matches!(e.kind(), ErrorKind::Internal | ErrorKind::Unavailable),
        "{what}: {e:?}"
    );
}

/// Parses campaign JSON, saves it (validation and compilation), then
/// searches and redeems it with an empty request and one built from its
/// conditions.
///
/// Invariants: a rejection is a caller error; a saved campaign compiles,
/// reads back as input and saves again; indexed and unindexed search agree;
/// a redemption keeps every quota within its limit, and replaying its
/// idempotency key returns it without charging.
pub fn campaign(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<CampaignInput>(data) else {
        return;
    };
    let service = service_over(MemoryStore::new());
    let saved = match block_on(service.create_campaign(PROJECT, input, "fuzz")) {
        Ok(c) => c,
        Err(e) => return assert_caller_error(&e, "create"),
    };
    let compiled = CompiledCampaign::compile(&saved)
        .unwrap_or_else(|p| panic!("a saved campaign does not compile: {p:?}"));
    let json = serde_json::to_value(&saved).expect("a campaign serializes");
    let again: CampaignInput =
        serde_json::from_value(json).expect("a saved campaign reads back as input");
    if let Err(e) = block_on(service.create_campaign("again", again, "fuzz")) {
        panic!("a saved campaign does not save again: {e:?}");
    }
    let engine = Engine::new([Arc::new(compiled)]);
    for (i, (attribute, cart)) in [(Map::new(), json!({})), probe(&saved)]
        .into_iter()
        .enumerate()
    {
        let search = SearchRequest {
            attribute,
            cart: serde_json::from_value(cart).unwrap_or_default(),
            ..SearchRequest::default()
        };
        check_search(&service, &engine, &search);
        let redeem = RedeemRequest {
            campaign_code: saved.ref_code.clone(),
            action_refs: None,
            channel: saved.channel.clone(),
            attribute: search.attribute.clone(),
            cart: search.cart.clone(),
            idempotency_key: Some(format!("fuzz-key-{i}")),
            with_campaigns: Vec::new(),
            code: None,
        };
        check_redeem(&service, &redeem);
    }
}

/// Request attributes and a cart that meet the campaign's conditions where
/// an equality can, and bind every name of its formulas and quotas.
fn probe(c: &Campaign) -> (Map<String, Value>, Value) {
    let mut attrs = Map::new();
    let mut items = Vec::new();
    let mut cart = Map::new();
    for cond in c
        .rules
        .iter()
        .flat_map(|r| &r.when)
        .flat_map(|g| &g.conditions)
    {
        let v = Value::String(cond.value.clone());
        match (cond.kind.as_str(), cond.attribute.as_str()) {
            ("custom", a) => {
                attrs.insert(a.to_owned(), v);
            }
            ("cart", a) => {
                cart.insert(a.to_owned(), v);
            }
            ("cartItem", "tags") => items.push(json!({"sku": "s", "tags": [v]})),
            ("cartItem", a) => items.push(json!({ a: v })),
            _ => {}
        }
    }
    let mut names: Vec<String> = Vec::new();
    for data in c.rules.iter().flat_map(|r| &r.then).flat_map(|t| &t.data) {
        if data.is_formula {
            if let Ok(f) = Formula::parse(&data.value) {
                names.extend(f.names().map(str::to_owned));
            }
        } else if let Ok(t) = Template::parse(&data.value) {
            names.extend(t.names().map(str::to_owned));
        }
    }
    for q in &c.quotas {
        if let Ok(t) = Template::parse(&q.key) {
            names.extend(t.names().map(str::to_owned));
        }
        names.extend(q.value_field.clone());
    }
    for name in names {
        attrs.entry(name).or_insert_with(|| json!("3"));
    }
    cart.insert("items".into(), Value::Array(items));
    (attrs, Value::Object(cart))
}

/// Hits as comparable data: campaign, benefits (with values) and charges.
fn summary(outcome: &SearchOutcome<'_>) -> Vec<String> {
    let mut out: Vec<String> = outcome
        .hits
        .iter()
        .map(|h| {
            let actions: Vec<&Then> = h.actions.iter().map(|a| &*a.action).collect();
            format!(
                "{} {:?} {:?}",
                h.campaign.campaign.ref_code, actions, h.charges
            )
        })
        .collect();
    out.extend(
        outcome
            .explanations
            .iter()
            .map(|e| format!("{} {}", e.ref_code, e.reason)),
    );
    out
}

fn check_search(service: &Service, engine: &Engine, request: &SearchRequest) {
    let indexed = engine.search(request, now(), true);
    let unindexed = engine.search_unindexed(request, now(), true);
    match (&indexed, &unindexed) {
        (Ok(a), Ok(b)) => assert_eq!(summary(a), summary(b), "indexed and unindexed differ"),
        (Err(a), Err(b)) => assert_eq!(a.code(), b.code()),
        _ => panic!(
            "indexed and unindexed disagree: {:?} / {:?}",
            indexed.err(),
            unindexed.err()
        ),
    }
    let options = SearchOptions {
        explain: true,
        at: None,
    };
    if let Err(e) = block_on(service.search(PROJECT, request, &options)) {
        assert_caller_error(&e, "search");
    }
}

fn check_redeem(service: &Service, request: &RedeemRequest) {
    let first = match block_on(service.redeem(PROJECT, request)) {
        Ok(r) => r,
        Err(e) => return assert_caller_error(&e, "redeem"),
    };
    assert!(!first.replayed);
    assert!(!first.redemption.action_txs.is_empty(), "redeemed nothing");
    for q in &first.redemption.quotas {
        assert!(
            q.amount >= rust_decimal::Decimal::ZERO,
            "negative charge {q:?}"
        );
        assert!(q.amount <= q.limit, "charge over its limit {q:?}");
    }
    let usage = block_on(service.quota_usage(
        PROJECT,
        first.redemption.campaign_id,
        &crate::service::campaign::QuotaUsageQuery::default(),
    ))
    .expect("quota usage of a saved campaign")
    .items;
    for u in &usage {
        if let Some(limit) = u.limit {
            assert!(u.used <= limit, "quota over its limit: {u:?}");
        }
    }
    if request.idempotency_key.is_some() {
        let replay = block_on(service.redeem(PROJECT, request)).expect("a replay succeeds");
        assert!(replay.replayed, "the key was not replayed");
        assert_eq!(replay.redemption.id, first.redemption.id);
        let after = block_on(service.quota_usage(
            PROJECT,
            first.redemption.campaign_id,
            &crate::service::campaign::QuotaUsageQuery::default(),
        ))
        .expect("quota usage of a saved campaign")
        .items;
        assert_eq!(after, usage, "a replay charged quotas");
    }
}

/// The fixtures, saved once and compiled once.
fn fixtures() -> &'static (Vec<Campaign>, Engine) {
    static SET: OnceLock<(Vec<Campaign>, Engine)> = OnceLock::new();
    SET.get_or_init(|| {
        let service = service_over(MemoryStore::new());
        let saved: Vec<Campaign> = FIXTURES
            .iter()
            .map(|src| {
                let input = serde_json::from_str(src).expect("a fixture parses");
                block_on(service.create_campaign(PROJECT, input, "fuzz")).expect("a fixture saves")
            })
            .collect();
        let engine =
            Engine::new(saved.iter().map(|c| {
                Arc::new(CompiledCampaign::compile(c).expect("a saved campaign compiles"))
            }));
        (saved, engine)
    })
}

/// Reads the input as a search request and as a redeem request, and runs
/// each against the [`FIXTURES`] (a fresh store per input).
///
/// Invariants: as for [`campaign`]: caller errors only, indexed and
/// unindexed search agree, quotas stay within limits, replays charge
/// nothing.
pub fn request(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (saved, engine) = fixtures();
    let store = MemoryStore::new();
    for c in saved {
        block_on(store.insert_campaign(c)).expect("a fresh store takes the fixtures");
    }
    let service = service_over(store);
    if let Ok(search) = SearchRequest::deserialize(&value) {
        check_search(&service, engine, &search);
    }
    if let Ok(redeem) = RedeemRequest::deserialize(&value) {
        check_redeem(&service, &redeem);
    }
}

/// Parses line 1 as a quota key template and the other lines as request
/// attributes, then redeems a campaign whose one quota has that key.
///
/// Invariants: a template prints back to itself; rendering fails exactly
/// on a name without a value; the key charged is the template rendered
/// from the reserved names (campaignCode, campaignId, channel, day, month,
/// year), then the request attributes.
pub fn quota_key(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (source, vars) = head_and_pairs(text);
    let template = match Template::parse(source) {
        Ok(t) => t,
        Err(e) => {
            let _ = (e.code(), e.to_string());
            return;
        }
    };
    let printed = template.to_string();
    let reparsed = Template::parse(&printed).expect("a printed template parses");
    assert_eq!(reparsed.to_string(), printed, "printing is not stable");
    assert!(reparsed.names().eq(template.names()), "names changed");

    let attrs: Map<String, Value> = vars
        .iter()
        .map(|(n, v)| ((*n).to_owned(), Value::String((*v).to_owned())))
        .collect();
    let from_attrs = |name: &str| attrs.get(name).and_then(Value::as_str).map(Cow::Borrowed);
    match template.render(&from_attrs) {
        Ok(_) => assert!(template.names().all(|n| attrs.contains_key(n))),
        Err(TemplateError::Unresolved { name }) => assert!(!attrs.contains_key(&name)),
        Err(e) => panic!("rendering failed with {e:?}"),
    }

    let service = service_over(MemoryStore::new());
    let input: CampaignInput = serde_json::from_value(json!({
        "name": "quota key", "refCode": "QK",
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "quotas": [{"key": source, "value": 1000}],
        "rules": [{"name": "always", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .expect("a well-formed campaign");
    let saved = match block_on(service.create_campaign(PROJECT, input, "fuzz")) {
        Ok(c) => c,
        Err(e) => return assert_caller_error(&e, "create"),
    };
    let day = now();
    let expected = template.render_key(&|name| {
        let reserved = match name {
            "campaignCode" => Some("QK".to_owned()),
            "campaignId" => Some(saved.id.to_string()),
            "day" => Some(day.day().to_string()),
            "month" => Some(day.month().to_string()),
            "year" => Some(day.year().to_string()),
            "week" => Some(crate::core::engine::calendar(
                "week",
                day,
                chrono_tz::Tz::UTC,
            )?),
            _ => None,
        };
        reserved.map(Cow::Owned).or_else(|| from_attrs(name))
    });
    let request = RedeemRequest {
        campaign_code: "QK".into(),
        action_refs: None,
        channel: None,
        attribute: attrs.clone(),
        cart: crate::core::campaign::Cart::default(),
        idempotency_key: None,
        with_campaigns: Vec::new(),
        code: None,
    };
    match (block_on(service.redeem(PROJECT, &request)), expected) {
        (Ok(r), Ok(key)) => {
            assert_eq!(r.redemption.quotas.len(), 1);
            assert_eq!(r.redemption.quotas[0].key, key, "the key charged");
        }
        (Ok(r), Err(e)) => panic!("charged {:?}, yet {e}", r.redemption.quotas),
        (Err(e), expected) => {
            assert_caller_error(&e, "redeem");
            assert!(
                expected.is_err() || e.code() != "quota_key_unresolved",
                "the key {expected:?} was not built: {e:?}"
            );
        }
    }
}
