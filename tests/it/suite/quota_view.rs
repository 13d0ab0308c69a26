//! The quota view of a campaign on every store: every stored key its
//! quotas can render, whichever campaign charged it, paged by key.

use std::sync::Arc;

use accord::campaign::{CampaignInput, QuotaUsage, QuotaUsageQuery, RedeemRequest};
use accord::store::Store;
use accord::{CampaignService, SystemClock};
use serde_json::json;

fn campaign(code: &str, keys: &[(&str, u32)]) -> CampaignInput {
    let quotas: Vec<serde_json::Value> = keys
        .iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    serde_json::from_value(json!({
        "name": code, "refCode": code,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": quotas,
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap()
}

fn redeem(code: &str, attribute: &serde_json::Value) -> RedeemRequest {
    serde_json::from_value(json!({"campaignCode": code, "attribute": attribute})).unwrap()
}

fn rows(items: &[QuotaUsage]) -> Vec<(String, String, String)> {
    items
        .iter()
        .map(|u| {
            (
                u.key.clone(),
                u.used.to_string(),
                u.limit.map(|l| l.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

/// A campaign's quota view lists the keys other campaigns filled that its
/// own quotas can render (a per-user key under its code, a key shared
/// across campaigns), leaves out keys under the same prefix that it
/// cannot render, and pages by key.
pub async fn quota_view_lists_every_key_that_can_refuse<S: Store>(store: Arc<S>) {
    let (project, service) = super::campaign_service(&store);
    let create = |input: CampaignInput| {
        let service = &service;
        let project = &project;
        async move {
            service
                .create_campaign(project, input, "admin")
                .await
                .unwrap()
        }
    };
    let d = create(campaign(
        "D",
        &[
            ("${campaignCode}-${userId}", 2),
            ("SHARED-${userId}", 1),
            ("R-${region}-${userId}", 3),
            ("TOTAL", 10),
        ],
    ))
    .await;
    create(campaign("A", &[("SHARED-${userId}", 1)])).await;
    create(campaign("OTHER", &[("D-${userId}", 5)])).await;
    create(campaign("D-X", &[("${campaignCode}-${userId}", 2)])).await;
    create(campaign("F", &[("R-${x}", 5)])).await;
    let empty = create(campaign("EMPTY", &[("E-${userId}", 1)])).await;

    // Before any redeem: only the fixed key, at 0.
    let view = service
        .quota_usage(&project, d.id, &QuotaUsageQuery::default())
        .await
        .unwrap();
    assert_eq!(
        rows(&view.items),
        [("TOTAL".into(), "0".into(), "10".into())]
    );
    assert_eq!(view.next, None);

    for (code, attribute) in [
        ("A", json!({"userId": "u1"})),
        ("OTHER", json!({"userId": "u9"})),
        ("D-X", json!({"userId": "u1"})),
        ("F", json!({"x": "a"})),
        ("F", json!({"x": "n-u7"})),
        ("D", json!({"userId": "u2", "region": "eu"})),
    ] {
        service
            .redeem(&project, &redeem(code, &attribute))
            .await
            .unwrap();
    }
    let row = |k: &str, used: &str, limit: &str| (k.to_owned(), used.to_owned(), limit.to_owned());
    let expected = vec![
        row("D-u2", "1", "2"),
        // OTHER's literal `D-${userId}` filled what D renders for u9.
        row("D-u9", "1", "2"),
        // F's `R-${x}` with x = `n-u7` is D's region `n`, user `u7`; its
        // `R-a` is under the same prefix, but no region and user render it.
        row("R-eu-u2", "1", "3"),
        row("R-n-u7", "1", "3"),
        // A's redemption of u1 counts against D's shared key.
        row("SHARED-u1", "1", "1"),
        row("SHARED-u2", "1", "1"),
        row("TOTAL", "1", "10"),
    ];
    let view = service
        .quota_usage(&project, d.id, &QuotaUsageQuery::default())
        .await
        .unwrap();
    assert_eq!(rows(&view.items), expected);
    assert_eq!(view.next, None);
    // D-X's `D%2DX-u1` starts with `D` but not with D's `D-`.
    assert!(!view.items.iter().any(|u| u.key.contains('X')));

    // The shared key refuses D's redeem for u1, as the view showed.
    let err = service
        .redeem(
            &project,
            &redeem("D", &json!({"userId": "u1", "region": "eu"})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");

    // Paged: every size gives the same keys in the same order, each page
    // at most `size`, and the pages end.
    for size in 1..=4 {
        let mut all = Vec::new();
        let mut after = None;
        for _ in 0..20 {
            let page = service
                .quota_usage(
                    &project,
                    d.id,
                    &QuotaUsageQuery {
                        after: after.clone(),
                        size,
                        ..QuotaUsageQuery::default()
                    },
                )
                .await
                .unwrap();
            assert!(page.items.len() <= size as usize);
            all.extend(rows(&page.items));
            after = page.next;
            if after.is_none() {
                break;
            }
        }
        assert_eq!(after, None, "size {size} never ended");
        assert_eq!(all, expected, "size {size}");
    }
    // After the last key: nothing more.
    let page = service
        .quota_usage(
            &project,
            d.id,
            &QuotaUsageQuery {
                after: Some("TOTAL".into()),
                size: 5,
                ..QuotaUsageQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((page.items.len(), page.next), (0, None));
    // A campaign whose keys nobody charged shows nothing.
    let page = service
        .quota_usage(&project, empty.id, &QuotaUsageQuery::default())
        .await
        .unwrap();
    assert_eq!((page.items.len(), page.next), (0, None));
    // Bad page sizes and unknown campaigns are errors.
    for size in [0, 1001] {
        let err = service
            .quota_usage(
                &project,
                d.id,
                &QuotaUsageQuery {
                    size,
                    ..QuotaUsageQuery::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), "invalid_page_size");
    }
    let err = service
        .quota_usage(&project, uuid::Uuid::new_v4(), &QuotaUsageQuery::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "campaign_not_found");
}

/// Keys written before values were escaped: the legacy listing shows the
/// ones the campaign's quotas no longer render (they limit nothing now),
/// and not those that still render (their values needed no escaping, or
/// the old key is also the key of other values).
pub async fn quota_view_lists_keys_rendered_before_escaping<S: Store>(store: Arc<S>) {
    use super::campaign_store::{plan, t};
    let (project, service) = super::campaign_service(&store);
    let code = service
        .create_campaign(
            &project,
            campaign("A-B", &[("${campaignCode}-${userId}", 1), ("TOTAL", 10)]),
            "admin",
        )
        .await
        .unwrap();
    let pair = service
        .create_campaign(&project, campaign("PAIR", &[("${a}-${b}", 1)]), "admin")
        .await
        .unwrap();
    // As an earlier version wrote them: plain substitution.
    for (c, key) in [
        (&code, "A-B-u1"),
        (&pair, "P-X-u1"),
        (&pair, "50%-u1"),
        (&pair, "plain-u1"),
    ] {
        store
            .redeem(&plan(c, &[(key, "1", "1")], t(0, 0)))
            .await
            .unwrap();
    }
    service
        .redeem(&project, &redeem("A-B", &json!({"userId": "u2"})))
        .await
        .unwrap();
    let legacy = QuotaUsageQuery {
        legacy: true,
        ..QuotaUsageQuery::default()
    };
    let listed = |id| {
        let service = &service;
        let project = &project;
        let query = legacy.clone();
        async move {
            let page = service.quota_usage(project, id, &query).await.unwrap();
            assert_eq!(page.next, None);
            rows(&page.items)
        }
    };
    let row = |k: &str, used: &str, limit: &str| (k.to_owned(), used.to_owned(), limit.to_owned());
    // The code's `-` is escaped now: the old per-user key counts no more.
    assert_eq!(listed(code.id).await, [row("A-B-u1", "1", "1")]);
    // `P-X-u1` is also the key of a = `P`, b = `X-u1`, and `plain-u1`
    // needed no escaping: both still count. `50%-u1` does not.
    assert_eq!(listed(pair.id).await, [row("50%-u1", "1", "1")]);
    let view = service
        .quota_usage(&project, code.id, &QuotaUsageQuery::default())
        .await
        .unwrap();
    assert_eq!(
        rows(&view.items),
        [row("A%2DB-u2", "1", "1"), row("TOTAL", "1", "10")]
    );
}
