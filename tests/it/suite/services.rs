//! Behaviours of the services that depend on the store underneath: every
//! store must give the same answer to the same input.

use std::sync::Arc;

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::consent::{AcceptConsentRequest, ContentQuery};
use accord::store::Store;
use accord::{CampaignService, ConsentService, ErrorKind, SystemClock};
use serde_json::json;

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! services_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(services, $fixture;
            nul_text_is_refused_by_every_store,
            decimals_are_exact_through_every_store,
            quota_keys_never_collide_and_shared_keys_show,
            campaign_limits_hold_at_the_boundary,
            idempotency_replays_the_request_and_refuses_another,
            quota_view_lists_every_key_that_can_refuse,
            quota_view_lists_keys_rendered_before_escaping,
        );
    };
}

pub(crate) use services_tests;

pub use super::quota_view::{
    quota_view_lists_every_key_that_can_refuse, quota_view_lists_keys_rendered_before_escaping,
};

fn assert_invalid_text(result: Result<impl std::fmt::Debug, accord::Error>, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::Validation, "{what}: {err:?}");
    assert!(
        err.code() == "invalid_text" || err.fields().iter().any(|f| f.code == "invalid_text"),
        "{what}: {err:?}"
    );
}

/// PostgreSQL cannot store NUL; the services refuse it before any store
/// sees it, so every store answers 422 alike — and nothing is written.
pub async fn nul_text_is_refused_by_every_store<S: Store>(store: Arc<S>) {
    let (project, campaigns) = super::campaign_service(&store);
    let consent = ConsentService::new(Arc::clone(&store), Arc::new(SystemClock));

    let campaign = |name: &str| -> CampaignInput {
        serde_json::from_value(json!({
            "name": name, "refCode": "NUL",
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}-${userId}", "value": 5}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
        }))
        .unwrap()
    };
    assert_invalid_text(
        campaigns
            .create_campaign(&project, campaign("a\0b"), "admin")
            .await,
        "campaign name",
    );
    campaigns
        .create_campaign(&project, campaign("fine"), "admin")
        .await
        .unwrap();

    let search: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": "u\0"}})).unwrap();
    assert_invalid_text(
        campaigns
            .search(&project, &search, &SearchOptions::default())
            .await,
        "search attribute",
    );
    let redeem: RedeemRequest =
        serde_json::from_value(json!({"campaignCode": "NUL", "attribute": {"userId": "u\0"}}))
            .unwrap();
    assert_invalid_text(campaigns.redeem(&project, &redeem).await, "redeem userId");

    assert_invalid_text(
        consent
            .create_content(
                &project,
                "svc-privacy-notice-v1",
                json!({"name": "n\0", "revision": 1, "status": "PUBLISHED"}),
                "admin",
            )
            .await,
        "notice name",
    );
    let accept = AcceptConsentRequest {
        app: Some("web".into()),
        data_subject: Some("user\0".into()),
        consent_id: Some("c".into()),
        ..AcceptConsentRequest::default()
    };
    assert_invalid_text(
        consent.accept_consent(&project, accept, "user").await,
        "dataSubject",
    );
    // Nothing half-written.
    let notices = consent
        .list_content(&project, "svc-privacy-notice-v1", &ContentQuery::default())
        .await
        .unwrap();
    assert_eq!(notices.total, 0);
    let redemptions = campaigns
        .list_redemptions(&project, &accord::store::RedemptionQuery::default())
        .await
        .unwrap();
    assert_eq!(redemptions.total, 0);
}

/// A campaign that fires on `totalPrice gte 1000`, echoes the total
/// through a formula and sums the `spend` attribute into a quota.
fn exact_campaign() -> CampaignInput {
    serde_json::from_value(json!({
        "name": "exact", "refCode": "EXACT",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-spend", "value": "79228162514264337593543950335",
                    "valueField": "spend"}],
        "rules": [{"name": "r",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000",
                 "valueType": "NUMBER"}]}],
            "then": [{"action": "DISCOUNT", "data": [
                {"attribute": "echo", "value": "${totalPrice} + 0", "isFormula": true},
                {"attribute": "plain", "value": "${totalPrice}"}]}]}]
    }))
    .unwrap()
}

/// A request whose `totalPrice` and `spend` are JSON numbers with exactly
/// the given texts (never through a float).
fn exact_request(code: bool, total: &str, spend: &str) -> String {
    let code = if code {
        r#""campaignCode": "EXACT", "#
    } else {
        ""
    };
    format!(
        r#"{{{code}"attribute": {{"userId": "u", "spend": {spend}}}, "cart": {{"totalPrice": {total}}}}}"#
    )
}

/// Decimals in random spots of `Decimal`'s range (up to 28 significant
/// digits, scales 0 to 28), and the edges the wire must not round.
fn sample_decimals() -> Vec<rust_decimal::Decimal> {
    use rand::{Rng, SeedableRng};
    use rust_decimal::Decimal;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x00ac_c0bd);
    let mut out: Vec<Decimal> = [
        "999.99999999999999999",
        "1000",
        "1000.0000000000000000000000001",
        "12345678901234567.89",
        "1234567.1234567891",
        "1.000000000000000000000000001",
        "0.0000000000000000000000000001",
        "7922816251426433759354395033.5",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    for _ in 0..24 {
        let digits = rng.gen_range(1..=28u32);
        let mantissa = rng.gen_range(1..10i128.pow(digits));
        let scale = rng.gen_range(0..=digits.min(28));
        out.push(Decimal::from_i128_with_scale(mantissa, scale));
    }
    out
}

/// Any decimal in comes out as the same decimal: a cart total compared
/// with a NUMBER condition, echoed by a formula and a template, recorded
/// by redeem and summed into quota usage, on every store.
pub async fn decimals_are_exact_through_every_store<S: Store>(store: Arc<S>) {
    use rust_decimal::Decimal;
    let thousand = Decimal::from(1000);
    for d in sample_decimals() {
        let (project, campaigns) = super::campaign_service(&store);
        let c = campaigns
            .create_campaign(&project, exact_campaign(), "admin")
            .await
            .unwrap();
        let text = d.to_string();
        let search: SearchRequest =
            serde_json::from_str(&exact_request(false, &text, &text)).unwrap();
        let found = campaigns
            .search(&project, &search, &SearchOptions::default())
            .await
            .unwrap();
        assert_eq!(
            found.actions.len(),
            usize::from(d >= thousand),
            "{d} gte 1000"
        );
        // The attribute echo keeps the number's text.
        assert_eq!(found.attribute["spend"].to_string(), text);
        if d < thousand {
            continue;
        }
        let values = |data: &[accord::campaign::DataItem]| -> Vec<Decimal> {
            data.iter()
                .map(|x| x.value.parse::<Decimal>().unwrap())
                .collect()
        };
        assert_eq!(
            values(&found.actions[0].action.data),
            [d, d],
            "search of {d}"
        );

        let redeem: RedeemRequest =
            serde_json::from_str(&exact_request(true, &text, &text)).unwrap();
        let r = campaigns.redeem(&project, &redeem).await.unwrap();
        assert_eq!(
            values(&r.redemption.action_txs[0].then.data),
            [d, d],
            "redeem of {d}"
        );
        assert_eq!(r.redemption.quotas[0].amount, d);
        // The stored record reads back the same.
        let stored = campaigns
            .redemption(&project, r.redemption.id)
            .await
            .unwrap();
        assert_eq!(stored.quotas[0].amount, d);
        assert_eq!(values(&stored.action_txs[0].then.data), [d, d]);
        // A second redeem: the usage is the exact sum.
        let more: Decimal = "0.000000000000000000000000001".parse().unwrap();
        let spend = (d - d.trunc()).checked_add(more);
        if let Some(spend) = spend.filter(|s| s.scale() <= 28 && *s > Decimal::ZERO) {
            let redeem: RedeemRequest =
                serde_json::from_str(&exact_request(true, &text, &spend.to_string())).unwrap();
            campaigns.redeem(&project, &redeem).await.unwrap();
            let usage = campaigns
                .quota_usage(
                    &project,
                    c.id,
                    &accord::campaign::QuotaUsageQuery::default(),
                )
                .await
                .unwrap()
                .items;
            assert_eq!(usage[0].used, d + spend, "usage of {d} + {spend}");
            // Written as the exact number text.
            let json = serde_json::to_string(&usage[0]).unwrap();
            assert!(
                json.contains(&format!("\"used\":{}", (d + spend).normalize())),
                "{json}"
            );
        }
    }
}

fn keyed_campaign(code: &str, keys: &[(&str, u32)]) -> CampaignInput {
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

/// Distinct values never render the same quota key (`${a}-${b}` with
/// `P-X`,`u1` and `P`,`X-u1`), and a campaign's quota view shows a shared
/// key that only another campaign filled.
pub async fn quota_keys_never_collide_and_shared_keys_show<S: Store>(store: Arc<S>) {
    let (project, campaigns) = super::campaign_service(&store);
    campaigns
        .create_campaign(
            &project,
            keyed_campaign("PAIR", &[("${a}-${b}", 1)]),
            "admin",
        )
        .await
        .unwrap();
    let redeem = |a: &str, b: &str| -> RedeemRequest {
        serde_json::from_value(json!({"campaignCode": "PAIR", "attribute": {"a": a, "b": b}}))
            .unwrap()
    };
    let first = campaigns
        .redeem(&project, &redeem("P-X", "u1"))
        .await
        .unwrap();
    let second = campaigns
        .redeem(&project, &redeem("P", "X-u1"))
        .await
        .unwrap();
    assert_eq!(first.redemption.quotas[0].key, "P%2DX-u1");
    assert_eq!(second.redemption.quotas[0].key, "P-X-u1");
    // The same values again: the one key, used up.
    let err = campaigns
        .redeem(&project, &redeem("P", "X-u1"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");

    // Adjacent placeholders cannot be told apart: refused at save.
    let err = campaigns
        .create_campaign(
            &project,
            keyed_campaign("ADJ", &[("x${a}${b}", 1)]),
            "admin",
        )
        .await
        .unwrap_err();
    assert_eq!(err.fields()[0].field, "quotas[0].key");
    assert_eq!(err.fields()[0].code, "quota_key_ambiguous");

    // A project-wide label: B's view shows what A used of it.
    campaigns
        .create_campaign(&project, keyed_campaign("A", &[("BUDGET", 2)]), "admin")
        .await
        .unwrap();
    let b = campaigns
        .create_campaign(
            &project,
            keyed_campaign("B", &[("BUDGET", 2), ("${campaignCode}-${userId}", 1)]),
            "admin",
        )
        .await
        .unwrap();
    let view = campaigns
        .quota_usage(
            &project,
            b.id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap()
        .items;
    let shown: Vec<(&str, String)> = view
        .iter()
        .map(|u| (u.key.as_str(), u.used.to_string()))
        .collect();
    assert_eq!(shown, [("BUDGET", "0".to_owned())]);
    let a: RedeemRequest = serde_json::from_value(json!({"campaignCode": "A"})).unwrap();
    campaigns.redeem(&project, &a).await.unwrap();
    campaigns.redeem(&project, &a).await.unwrap();
    let view = campaigns
        .quota_usage(
            &project,
            b.id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap()
        .items;
    let shown: Vec<(&str, String)> = view
        .iter()
        .map(|u| (u.key.as_str(), u.used.to_string()))
        .collect();
    assert_eq!(shown, [("BUDGET", "2".to_owned())]);
    let err = campaigns
        .redeem(
            &project,
            &serde_json::from_value(json!({"campaignCode": "B", "attribute": {"userId": "u"}}))
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");
}

fn assert_too_long<T: std::fmt::Debug>(result: Result<T, accord::Error>, field: &str, code: &str) {
    let err = result.expect_err(field);
    assert_eq!(err.kind(), ErrorKind::Validation, "{field}: {err:?}");
    assert!(
        err.fields()
            .iter()
            .any(|f| f.field == field && f.code == code),
        "{field}: {err:?}"
    );
}

/// Every indexed campaign identifier is bounded below what any store's
/// index takes: the boundary value is stored, one byte more is a 422 —
/// never a store error.
pub async fn campaign_limits_hold_at_the_boundary<S: Store>(store: Arc<S>) {
    use accord::limits::{
        MAX_CAMPAIGN_LABEL_LEN, MAX_PROJECT_ID_LEN, MAX_QUOTA_KEY_LEN, MAX_USER_ID_LEN,
    };
    let campaigns = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let long_project = format!("{unique}{}", "p".repeat(MAX_PROJECT_ID_LEN - unique.len()));
    let prefix = "K".repeat(200);
    let labelled = |code: &str, label: usize| -> CampaignInput {
        serde_json::from_value(json!({
            "name": code, "refCode": code,
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "channel": "c".repeat(label), "groupName": "g".repeat(label),
            "quotas": [{"key": format!("{prefix}:${{a}}:${{userId}}"), "value": 10}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
        }))
        .unwrap()
    };
    // Project id.
    let too_long = format!("{long_project}x");
    assert_too_long(
        campaigns
            .create_campaign(&too_long, labelled("L", 1), "admin")
            .await,
        "projId",
        "too_long",
    );
    // Channel and group name.
    assert_too_long(
        campaigns
            .create_campaign(
                &long_project,
                labelled("L", MAX_CAMPAIGN_LABEL_LEN + 1),
                "admin",
            )
            .await,
        "channel",
        "too_long",
    );
    let saved = campaigns
        .create_campaign(
            &long_project,
            labelled("L", MAX_CAMPAIGN_LABEL_LEN),
            "admin",
        )
        .await
        .unwrap();
    assert_eq!(saved.project_id, long_project);
    // userId, and the rendered key: 200 + 1 + a + 1 + userId bytes.
    let redeem = |a: usize, user: usize| -> RedeemRequest {
        serde_json::from_value(json!({
            "campaignCode": "L", "channel": "c".repeat(MAX_CAMPAIGN_LABEL_LEN),
            "attribute": {"a": "a".repeat(a), "userId": "u".repeat(user)}
        }))
        .unwrap()
    };
    assert_too_long(
        campaigns
            .redeem(&long_project, &redeem(1, MAX_USER_ID_LEN + 1))
            .await,
        "attribute.userId",
        "too_long",
    );
    let a = MAX_QUOTA_KEY_LEN - 202 - MAX_USER_ID_LEN;
    let r = campaigns
        .redeem(&long_project, &redeem(a, MAX_USER_ID_LEN))
        .await
        .unwrap();
    assert_eq!(r.redemption.quotas[0].key.len(), MAX_QUOTA_KEY_LEN);
    assert_eq!(
        r.redemption.user_id.as_deref().map(str::len),
        Some(MAX_USER_ID_LEN)
    );
    assert_too_long(
        campaigns
            .redeem(&long_project, &redeem(a + 1, MAX_USER_ID_LEN))
            .await,
        "quotas[0].key",
        "quota_key_too_long",
    );
    // The quota key as written.
    let mut input = labelled("M", 1);
    input.quotas[0].key = "k".repeat(MAX_QUOTA_KEY_LEN + 1);
    assert_too_long(
        campaigns
            .create_campaign(&long_project, input.clone(), "admin")
            .await,
        "quotas[0].key",
        "too_long",
    );
    input.quotas[0].key.pop();
    campaigns
        .create_campaign(&long_project, input, "admin")
        .await
        .unwrap();
    let usage = campaigns
        .quota_usage(
            &long_project,
            saved.id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(usage[0].key.len(), MAX_QUOTA_KEY_LEN);
}

/// An idempotency key replays the redemption of the same request (same
/// body, the key aside) and refuses another request, on every store.
pub async fn idempotency_replays_the_request_and_refuses_another<S: Store>(store: Arc<S>) {
    let (project, campaigns) = super::campaign_service(&store);
    let c = campaigns
        .create_campaign(
            &project,
            keyed_campaign("IDEM", &[("${campaignCode}", 10)]),
            "admin",
        )
        .await
        .unwrap();
    let request = |user: &str, key: &str| -> RedeemRequest {
        serde_json::from_value(json!({"campaignCode": "IDEM", "idempotencyKey": key,
                                      "attribute": {"userId": user, "n": 1.50}}))
        .unwrap()
    };
    let first = campaigns
        .redeem(&project, &request("u1", "k1"))
        .await
        .unwrap();
    assert!(!first.replayed);
    let again = campaigns
        .redeem(&project, &request("u1", "k1"))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.redemption, first.redemption);
    let err = campaigns
        .redeem(&project, &request("u2", "k1"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_key_reused");
    assert_eq!(err.kind(), ErrorKind::Validation);
    // Keys are scoped to the project: another project records its own.
    let other = uuid::Uuid::new_v4().to_string();
    campaigns
        .create_campaign(
            &other,
            keyed_campaign("IDEM", &[("${campaignCode}", 10)]),
            "admin",
        )
        .await
        .unwrap();
    assert!(
        !campaigns
            .redeem(&other, &request("u2", "k1"))
            .await
            .unwrap()
            .replayed
    );
    // One charge in the first project.
    let usage = campaigns
        .quota_usage(
            &project,
            c.id,
            &accord::campaign::QuotaUsageQuery::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(usage[0].used, rust_decimal::Decimal::ONE);
}
