//! Campaign administration through `CampaignService`: validation, versions,
//! conflicts, lists; and the quota guarantee under concurrent redeems.

mod common;

use std::sync::Arc;

use accord::campaign::{CampaignService, CampaignStatus, SearchOptions};
use accord::store::memory::MemoryStore;
use accord::store::{CampaignQuery, CampaignSort, SortDirection};
use accord::{ErrorKind, ManualClock};
use common::{fixture, redeem_req, run, search_req, t0, world};
use rust_decimal::Decimal;
use serde_json::json;

const P: &str = "shop";

#[test]
fn a_campaign_with_five_mistakes_gets_five_field_errors() {
    let w = world();
    let input = serde_json::from_value(json!({
        "name": "",
        "refCode": "X",
        "startDate": "2026-02-01T00:00:00Z",
        "endDate": "2026-01-01T00:00:00Z",
        "rules": [{
            "name": "r",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "sku", "op": "eq", "value": "x"},
                {"type": "custom", "attribute": "code", "op": "matches", "value": "(unclosed"},
                {"type": "custom", "attribute": "n", "op": "in", "value": "(1,2)", "valueType": "NUMBER"}
            ]}],
            "then": [{"action": "DISCOUNT", "data": [{"attribute": "amount", "value": "${price} *", "isFormula": true}]}]
        }]
    }))
    .unwrap();
    let e = run(w.service.create_campaign(P, input, "admin")).unwrap_err();
    assert_eq!(
        (e.kind(), e.code()),
        (ErrorKind::Validation, "validation_failed")
    );
    let fields: Vec<(&str, &str)> = e
        .fields()
        .iter()
        .map(|f| (f.field.as_str(), f.code.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("name", "required"),
            ("endDate", "invalid_period"),
            (
                "rules[0].when[0].conditions[0].attribute",
                "invalid_attribute"
            ),
            ("rules[0].when[0].conditions[1].value", "invalid_regex"),
            ("rules[0].when[0].conditions[2].value", "in_list_syntax"),
            (
                "rules[0].then[0].data[0].value",
                e.fields()[5].code.as_str()
            ),
        ]
    );
    assert!(
        e.fields()[5].code.starts_with("formula_"),
        "{:?}",
        e.fields()[5]
    );
    // Nothing was saved.
    assert_eq!(
        run(w.service.list_campaigns(P, &CampaignQuery::default()))
            .unwrap()
            .total,
        0
    );
}

#[test]
fn versions_conflicts_and_delete() {
    let w = world();
    let c = run(w.service.create_campaign(P, fixture("promo_code"), "alice")).unwrap();
    assert_eq!(
        (c.version, c.created_by.as_str(), c.active),
        (1, "alice", true)
    );
    assert!(!c.rules[0].id.is_empty(), "rule ids are generated");

    // Same refCode in the same project: 409; in another project: fine.
    let dup = run(w.service.create_campaign(P, fixture("promo_code"), "alice")).unwrap_err();
    assert_eq!(
        (dup.kind(), dup.code()),
        (ErrorKind::Conflict, "duplicate_ref_code")
    );
    run(w
        .service
        .create_campaign("other", fixture("promo_code"), "alice"))
    .unwrap();

    // Update: version + 1, creation fields kept.
    w.clock.advance(chrono::Duration::minutes(5));
    let mut edit = fixture("promo_code");
    edit.name = "Renamed".into();
    edit.version = Some(1);
    let u = run(w.service.update_campaign(P, c.id, edit.clone(), "bob")).unwrap();
    assert_eq!(
        (
            u.version,
            u.name.as_str(),
            u.created_by.as_str(),
            u.last_modified_by.as_str()
        ),
        (2, "Renamed", "alice", "bob")
    );
    assert_eq!(u.created_date, c.created_date);
    assert!(u.last_modified_date > c.last_modified_date);
    // Naming the old version again: stale.
    let stale = run(w.service.update_campaign(P, c.id, edit, "bob")).unwrap_err();
    assert_eq!(
        (stale.kind(), stale.code()),
        (ErrorKind::Conflict, "stale_version")
    );

    // Renaming onto another campaign's refCode: 409.
    let other = run(w.service.create_campaign(P, fixture("freebie"), "alice")).unwrap();
    let mut clash = fixture("freebie");
    clash.ref_code = "SAVE100".into();
    assert_eq!(
        run(w.service.update_campaign(P, other.id, clash, "bob"))
            .unwrap_err()
            .code(),
        "duplicate_ref_code"
    );

    // Redemptions record the version they were evaluated against.
    let body = json!({"campaignCode": "SAVE100", "attribute": {"userId": "u", "promoCode": "save100"}, "cart": {"totalPrice": 900}});
    assert_eq!(
        run(w.service.redeem(P, &redeem_req(body)))
            .unwrap()
            .redemption
            .campaign_version,
        2
    );

    run(w.service.delete_campaign(P, c.id)).unwrap();
    assert_eq!(
        run(w.service.campaign(P, c.id)).unwrap_err().code(),
        "campaign_not_found"
    );
    assert_eq!(
        run(w.service.delete_campaign(P, c.id)).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // The deleted campaign no longer matches.
    let req = search_req(
        json!({"attribute": {"userId": "v", "promoCode": "save100"}, "cart": {"totalPrice": 900}}),
    );
    assert!(run(w.service.search(P, &req, &SearchOptions::default()))
        .unwrap()
        .actions
        .is_empty());
}

#[test]
fn list_filters_sorts_and_pages() {
    let w = world();
    for (code, name, group, status, priority) in [
        ("SUMMER-1", "Summer shoes", Some("Summer"), "ENABLE", 3),
        ("SUMMER-2", "Summer hats", Some("summer"), "DISABLE", 1),
        ("XMAS", "Christmas", None, "ENABLE", 2),
    ] {
        let mut c = fixture("grading");
        c.ref_code = code.into();
        c.name = name.into();
        c.group_name = group.map(Into::into);
        c.status = CampaignStatus::parse(status);
        c.priority = Some(priority);
        run(w.service.create_campaign(P, c, "admin")).unwrap();
    }
    let codes = |q: CampaignQuery| {
        run(w.service.list_campaigns(P, &q))
            .unwrap()
            .items
            .into_iter()
            .map(|c| c.ref_code)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        codes(CampaignQuery {
            q: Some("sUmMeR".into()),
            ..Default::default()
        }),
        ["SUMMER-1", "SUMMER-2"]
    );
    assert_eq!(
        codes(CampaignQuery {
            q: Some("hat".into()),
            ..Default::default()
        }),
        ["SUMMER-2"]
    );
    assert_eq!(
        codes(CampaignQuery {
            q: Some("xma".into()),
            ..Default::default()
        }),
        ["XMAS"]
    );
    assert_eq!(
        codes(CampaignQuery {
            status: Some(CampaignStatus::Disable),
            ..Default::default()
        }),
        ["SUMMER-2"]
    );
    let by_priority = CampaignQuery {
        sort: vec![(CampaignSort::Priority, SortDirection::Desc)],
        ..Default::default()
    };
    assert_eq!(codes(by_priority), ["SUMMER-1", "XMAS", "SUMMER-2"]);
    let page = run(w.service.list_campaigns(
        P,
        &CampaignQuery {
            page: 1,
            size: 2,
            ..Default::default()
        },
    ))
    .unwrap();
    assert_eq!(
        (
            page.total,
            page.items.len(),
            page.items[0].ref_code.as_str()
        ),
        (3, 1, "XMAS")
    );
    let list = run(w.service.list_campaigns(P, &CampaignQuery::default())).unwrap();
    assert_eq!(
        list.items.iter().map(|c| c.active).collect::<Vec<_>>(),
        [true, false, true]
    );
    for size in [0, 1001] {
        let e = run(w.service.list_campaigns(
            P,
            &CampaignQuery {
                size,
                ..Default::default()
            },
        ))
        .unwrap_err();
        assert_eq!(
            (e.kind(), e.code()),
            (ErrorKind::BadRequest, "invalid_page_size")
        );
    }
}

#[test]
fn sixty_four_threads_against_a_quota_of_fifty() {
    let clock = Arc::new(ManualClock::new(t0()));
    let service = Arc::new(CampaignService::new(Arc::new(MemoryStore::new()), clock));
    let mut c = fixture("promo_code");
    c.quotas = serde_json::from_value(json!([{"key": "${campaignCode}", "value": 50}])).unwrap();
    let created = run(service.create_campaign(P, c, "admin")).unwrap();
    let handles: Vec<_> = (0..64)
        .map(|i| {
            let service = Arc::clone(&service);
            std::thread::spawn(move || {
                let body = json!({"campaignCode": "SAVE100", "attribute": {"userId": format!("u{i}"), "promoCode": "SAVE100"},
                                  "cart": {"totalPrice": 900}});
                run(service.redeem(P, &redeem_req(body)))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 50);
    assert!(results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .all(|e| e.code() == "quota_exceeded"));
    let usage =
        run(service.quota_usage(P, created.id, &accord::campaign::QuotaUsageQuery::default()))
            .unwrap()
            .items;
    assert_eq!(usage[0].used, Decimal::from(50));
}
