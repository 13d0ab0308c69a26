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
        $crate::suite::services::services_tests!(@each $fixture; nul_text_is_refused_by_every_store);
    };
    (@each $fixture:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::services::$behaviour(store).await;
            }
        )+
    };
}

pub(crate) use services_tests;

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
    let project = uuid::Uuid::new_v4().to_string();
    let campaigns = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
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
