//! Test data: campaigns and redemption plans with every field set, and
//! timestamps with non-zero microseconds so that a store that loses them is
//! caught.

use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use serde_json::json;
use uuid::Uuid;

use accord::campaign::{
    ActionTx, Campaign, CampaignStatus, DataItem, Quota, QuotaCharge, Redemption, Rule, Then,
    TxStatus,
};
use accord::store::RedemptionPlan;

/// A project id of its own, so that tests sharing a database never see
/// each other's rows.
pub fn project() -> String {
    format!("suite-{}", Uuid::new_v4())
}

/// A decimal from text.
pub fn d(s: &str) -> Decimal {
    s.parse().expect("test decimal")
}

/// 2026-03-01T00:00:00Z plus `secs` seconds and `micros` microseconds.
pub fn t(secs: i64, micros: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()
        + Duration::seconds(secs)
        + Duration::microseconds(micros)
}

fn rule() -> Rule {
    serde_json::from_value(json!({
        "id": "7c1f0a52-9f57-4f0a-8a9b-0d3f1c7e5a10",
        "name": "buy two",
        "description": "two or more of anything",
        "when": [{"match": "ALL", "conditions": [
            {"type": "cartItem", "attribute": "amount", "op": "gte", "value": "2",
             "valueType": "NUMBER", "note": "n", "resolveAction": true},
            {"type": "custom", "attribute": "tier", "op": "in", "value": "(\"gold\",\"ทอง\")",
             "valueType": "STRING"}
        ]}],
        "thenOperator": "OR",
        "then": [{"action": "DISCOUNT", "internalAction": true, "actionRef": "a1",
                  "data": [{"attribute": "amount", "value": "${price} * 0.1", "isFormula": true}]}],
        "validFrom": "2026-03-01T00:00:00.000001Z",
        "validTo": "2026-04-01T12:34:56.654321Z"
    }))
    .expect("test rule")
}

/// A campaign of `project` with every field set.
pub fn campaign(project: &str, ref_code: &str) -> Campaign {
    Campaign {
        id: Uuid::new_v4(),
        name: format!("Campaign {ref_code}"),
        description: Some("ลดราคา — a description".to_owned()),
        image_url: Some("https://img.example/c.png".to_owned()),
        start_date: t(0, 123_456),
        end_date: t(30 * 86_400, 999_999),
        ref_code: ref_code.to_owned(),
        status: CampaignStatus::Enable,
        priority: 1,
        channel: Some("web".to_owned()),
        group_name: Some("spring".to_owned()),
        // Round-trips the stacking column; alone in a group, it stacks.
        stacking: Some(accord::campaign::Stacking {
            exclusive: false,
            group: Some("spring".to_owned()),
            stop_after: false,
        }),
        time_zone: Some("Asia/Bangkok".to_owned()),
        // Round-trips the schedule column; after the end date, it changes
        // nothing that runs.
        status_schedule: vec![accord::campaign::StatusChange {
            at: t(40 * 86_400, 5),
            status: CampaignStatus::Disable,
        }],
        quotas: vec![
            Quota {
                id: Some("q1".to_owned()),
                key: "${campaignCode}".to_owned(),
                // More significant digits than an f64 keeps.
                value: d("12345678901234567.891"),
                value_field: None,
                description: Some("total".to_owned()),
                window: None,
            },
            Quota {
                id: None,
                key: "${campaignCode}-${userId}".to_owned(),
                value: d("2.50"),
                value_field: Some("amount".to_owned()),
                description: None,
                window: Some("P1D".to_owned()),
            },
        ],
        rules: vec![rule()],
        project_id: project.to_owned(),
        version: 1,
        active: false,
        created_by: "admin@example".to_owned(),
        last_modified_by: "admin@example".to_owned(),
        created_date: t(1, 1),
        last_modified_date: t(2, 2),
    }
}

/// A plan redeeming `c` at `at` with `charges` (key, amount, limit); the
/// charges are sorted by key, as the engine plans them.
pub fn plan(c: &Campaign, charges: &[(&str, &str, &str)], at: DateTime<Utc>) -> RedemptionPlan {
    let mut quotas: Vec<QuotaCharge> = charges
        .iter()
        .map(|(key, amount, limit)| QuotaCharge {
            key: (*key).to_owned(),
            amount: d(amount),
            limit: d(limit),
            window: None,
        })
        .collect();
    quotas.sort_by(|a, b| a.key.cmp(&b.key));
    RedemptionPlan {
        redemption: Redemption {
            id: Uuid::new_v4(),
            project_id: c.project_id.clone(),
            campaign_id: c.id,
            campaign_code: c.ref_code.clone(),
            campaign_version: c.version,
            status: TxStatus::Complete,
            user_id: Some("user-1".to_owned()),
            channel: Some("web".to_owned()),
            idempotency_key: None,
            request_fingerprint: None,
            action_txs: vec![ActionTx {
                status: TxStatus::Complete,
                then: Then {
                    action: Some("DISCOUNT".to_owned()),
                    internal_action: false,
                    action_ref: "a1".to_owned(),
                    data: vec![DataItem::text("amount", "10.50")],
                    ..Then::default()
                },
            }],
            quotas,
            code: None,
            created_date: at,
            cancelled_date: None,
        },
        verify_campaign: false,
    }
}

/// The same plan with an idempotency key.
pub fn keyed(mut p: RedemptionPlan, key: &str) -> RedemptionPlan {
    p.redemption.idempotency_key = Some(key.to_owned());
    p
}

/// The same plan for another user.
pub fn for_user(mut p: RedemptionPlan, user: Option<&str>) -> RedemptionPlan {
    p.redemption.user_id = user.map(str::to_owned);
    p
}
