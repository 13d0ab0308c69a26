//! Every error status of the wire API as problem+json over a real socket:
//! 400 (malformed JSON, wrong types with the field path, bad query), 404,
//! 405, 409, 413, 415, 422 with per-field errors, 503 with Retry-After, and
//! a panicking handler answered with a 500 problem.
#![cfg(feature = "http")]

use crate::http_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use accord::campaign::codes::PromoCode;
use accord::campaign::{Campaign, QuotaUsage, Redemption};
use accord::consent::{ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent};
use accord::http::{router, Api, Auth};
use accord::store::memory::MemoryStore;
use accord::store::{
    CampaignQuery, CampaignStore, CodeBatch, CodeStore, ConsentLedger, ContentStore, Page, Ping,
    RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore,
};
use accord::{Error, ManualClock, Result};
use chrono::{DateTime, Utc};
use http_support::{fixture, parts, problem, start, token, P, SECRET};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::json;
use uuid::Uuid;

#[tokio::test]
async fn malformed_json_and_wrong_types_are_400() {
    let s = start().await;
    let url = s.campaign_url("/search");
    let send = |body: &'static str| {
        s.req(Method::POST, &url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    problem(send(r#"{"cart": "#).await.unwrap(), 400, "malformed_json").await;
    problem(
        send(r#"{"cart": {}} trailing"#).await.unwrap(),
        400,
        "malformed_json",
    )
    .await;
    problem(send("").await.unwrap(), 400, "body_required").await;
    let p = problem(
        send(r#"{"cart": {"items": [{"sku": "A"}, {"tags": "shoes"}]}}"#)
            .await
            .unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "cart.items[1].tags");
    assert_eq!(p["errors"][0]["code"], "invalid_type");
    assert!(p["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("expected a sequence"));
    let p = problem(
        send(r#"{"attribute": [1, 2]}"#).await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "attribute");
    let p = problem(send("[]").await.unwrap(), 400, "invalid_json").await;
    assert_eq!(p["errors"][0]["field"], "");
    // Cart numbers and codes are strings or numbers: a boolean is refused,
    // as the OpenAPI schema says, for search and redeem alike.
    for (body, field) in [
        (r#"{"cart": {"totalPrice": true}}"#, "cart.totalPrice"),
        (r#"{"cart": {"currency": false}}"#, "cart.currency"),
        (
            r#"{"cart": {"items": [{"price": true}]}}"#,
            "cart.items[0].price",
        ),
        (
            r#"{"cart": {"items": [{"sku": true}]}}"#,
            "cart.items[0].sku",
        ),
    ] {
        let p = problem(send(body).await.unwrap(), 400, "invalid_json").await;
        assert_eq!(p["errors"][0]["field"], field, "{body}");
        assert!(
            p["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("found a boolean"),
            "{p}"
        );
    }
    let res = s
        .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .json(&json!({"campaignCode": "X", "cart": {"totalPrice": true}}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 400, "invalid_json").await;
    assert_eq!(p["errors"][0]["field"], "cart.totalPrice");
    // Campaign input: a number where a list is expected.
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&json!({"name": "x", "rules": [{"when": 5}]}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 400, "invalid_json").await;
    assert_eq!(p["errors"][0]["field"], "rules[0].when");
}

#[tokio::test]
async fn bad_query_values_are_400_naming_the_parameter() {
    let s = start().await;
    for (path, param) in [
        ("/campaigns?size=0", "size"),
        ("/campaigns?size=1001", "size"),
        ("/campaigns?page=-1", "page"),
        ("/campaigns?page=x", "page"),
        ("/campaigns?status=PAUSED", "status"),
        ("/campaigns?sort=secret", "sort"),
        ("/campaigns?sort=name,sideways", "sort"),
        ("/campaigns?q=a&q=b", "q"),
        ("/campaigns?colour=red", "colour"),
        ("/redemptions?size=5000", "size"),
        ("/redemptions?userid=u1", "userid"),
    ] {
        let res = s
            .req(Method::GET, &s.campaign_url(path))
            .send()
            .await
            .unwrap();
        let p = problem(res, 400, "invalid_parameter").await;
        assert_eq!(p["errors"][0]["field"], param, "{path}");
    }
    for (query, param) in [("?explain=maybe", "explain"), ("?at=yesterday", "at")] {
        let res = s
            .req(Method::POST, &s.campaign_url(&format!("/search{query}")))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let p = problem(res, 400, "invalid_parameter").await;
        assert_eq!(p["errors"][0]["field"], param);
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415() {
    let s = start().await;
    let url = s.campaign_url("/search");
    let res = s
        .req(Method::POST, &url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    problem(res, 415, "unsupported_media_type").await;
    let res = s.req(Method::POST, &url).body("{}").send().await.unwrap();
    problem(res, 415, "unsupported_media_type").await;
    let res = s
        .req(Method::POST, &url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=b")
        .send()
        .await
        .unwrap();
    problem(res, 415, "unsupported_media_type").await;
    // JSON with parameters is JSON.
    let res = s
        .req(Method::POST, &url)
        .header("content-type", "application/json; charset=utf-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_body_over_one_mib_is_413() {
    let s = start().await;
    let big = format!(r#"{{"name": "{}"}}"#, "x".repeat(1 << 20));
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    problem(res, 413, "payload_too_large").await;
    // A request within the body limit but over a request limit (cart
    // items) is a 413 too, from the service.
    let items: Vec<_> = (0..1001).map(|i| json!({"sku": format!("S{i}")})).collect();
    let res = s
        .req(Method::POST, &s.campaign_url("/search"))
        .json(&json!({"cart": {"items": items}}))
        .send()
        .await
        .unwrap();
    problem(res, 413, "request_too_large").await;
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405() {
    let s = start().await;
    for path in [
        "/",
        "/nope",
        "/campaign/api/projects/shop",
        "/campaign/api/projects/shop/searches",
    ] {
        let res = s.req(Method::GET, &s.url(path)).send().await.unwrap();
        problem(res, 404, "route_not_found").await;
    }
    let res = s
        .req(Method::DELETE, &s.campaign_url("/search"))
        .send()
        .await
        .unwrap();
    let allow = res
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_owned());
    problem(res, 405, "method_not_allowed").await;
    assert_eq!(allow.as_deref(), Some("POST"));
    let res = s.client.post(s.url("/healthz")).send().await.unwrap();
    problem(res, 405, "method_not_allowed").await;
    let res = s
        .req(
            Method::PATCH,
            &s.campaign_url("/campaigns/00000000-0000-4000-8000-000000000000"),
        )
        .send()
        .await
        .unwrap();
    problem(res, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn conflicts_are_409() {
    let s = start().await;
    let c = s.create("promo_code").await;
    // Duplicate refCode.
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&fixture("promo_code"))
        .send()
        .await
        .unwrap();
    problem(res, 409, "duplicate_ref_code").await;
    // Stale version.
    let mut stale = fixture("promo_code");
    stale["version"] = json!(7);
    let res = s
        .req(
            Method::PUT,
            &s.campaign_url(&format!("/campaigns/{}", c["id"].as_str().unwrap())),
        )
        .json(&stale)
        .send()
        .await
        .unwrap();
    problem(res, 409, "stale_version").await;
    // Quota exhausted: three in all.
    for (i, user) in ["a", "b", "c", "d"].iter().enumerate() {
        let res = s
            .req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .json(&json!({
                "campaignCode": "SAVE100",
                "attribute": {"userId": user, "promoCode": "SAVE100"},
                "cart": {"totalPrice": "999"}
            }))
            .send()
            .await
            .unwrap();
        if i < 3 {
            assert_eq!(res.status(), 201);
        } else {
            problem(res, 409, "quota_exceeded").await;
        }
    }
}

#[tokio::test]
async fn validation_is_422_with_every_field() {
    let s = start().await;
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&json!({
            "name": "",
            "refCode": "X",
            "startDate": "2026-02-01T00:00:00Z",
            "endDate": "2026-01-01T00:00:00Z",
            "rules": [{
                "name": "r",
                "when": [{"match": "ALL", "conditions": [
                    {"type": "cart", "attribute": "sku", "op": "eq", "value": "x"},
                    {"type": "custom", "attribute": "code", "op": "matches", "value": "(unclosed"}
                ]}],
                "then": [{"action": "DISCOUNT", "data": []}]
            }]
        }))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    let fields: Vec<(&str, &str)> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["code"].as_str().unwrap()))
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
        ]
    );
    assert!(p["errors"][0]["message"].is_string());
    // A required field serde would reject is a 422 too, named.
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&json!({"name": "q", "quotas": [{"key": "k"}]}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "quotas[0].value");
    assert_eq!(p["errors"][0]["code"], "required");
}

/// A store that can be taken down (every call: unavailable) or made to
/// panic, around a memory store.
#[derive(Default)]
struct Flaky {
    inner: MemoryStore,
    /// 0 up, 1 down, 2 panics.
    mode: AtomicU8,
}

impl Flaky {
    fn check(&self) -> Result<()> {
        match self.mode.load(Ordering::SeqCst) {
            0 => Ok(()),
            1 => Err(Error::unavailable("connection refused by db.internal:5432")),
            _ => panic!("store invariant broken"),
        }
    }
}

impl Ping for Flaky {
    async fn ping(&self) -> Result<()> {
        self.check()
    }
}

impl CampaignStore for Flaky {
    async fn insert_campaign_within(&self, campaign: &Campaign, max: u64) -> Result<()> {
        self.check()?;
        self.inner.insert_campaign_within(campaign, max).await
    }
    async fn update_campaign(&self, campaign: &Campaign, expected_version: i64) -> Result<()> {
        self.check()?;
        self.inner.update_campaign(campaign, expected_version).await
    }
    async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<bool> {
        self.check()?;
        self.inner.delete_campaign(project, id).await
    }
    async fn campaign_revisions(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<accord::campaign::CampaignRevision>> {
        self.check()?;
        self.inner
            .campaign_revisions(project, campaign_id, page, size)
            .await
    }
    async fn campaign_revision(
        &self,
        project: &str,
        campaign_id: Uuid,
        revision: i64,
    ) -> Result<Option<accord::campaign::CampaignRevision>> {
        self.check()?;
        self.inner
            .campaign_revision(project, campaign_id, revision)
            .await
    }
    async fn campaign(&self, project: &str, id: Uuid) -> Result<Option<Campaign>> {
        self.check()?;
        self.inner.campaign(project, id).await
    }
    async fn campaign_by_code(&self, project: &str, ref_code: &str) -> Result<Option<Campaign>> {
        self.check()?;
        self.inner.campaign_by_code(project, ref_code).await
    }
    async fn campaigns_by_code(
        &self,
        project: &str,
        ref_codes: &[&str],
    ) -> Result<Vec<accord::store::NamedCampaign>> {
        self.check()?;
        self.inner.campaigns_by_code(project, ref_codes).await
    }
    async fn list_campaigns(&self, project: &str, query: &CampaignQuery) -> Result<Page<Campaign>> {
        self.check()?;
        self.inner.list_campaigns(project, query).await
    }
    async fn all_campaigns(&self, project: &str) -> Result<Vec<Campaign>> {
        self.check()?;
        self.inner.all_campaigns(project).await
    }
    async fn catalog_version(&self, project: &str) -> Result<i64> {
        self.check()?;
        self.inner.catalog_version(project).await
    }
    async fn count_campaigns(&self, project: &str) -> Result<u64> {
        self.check()?;
        self.inner.count_campaigns(project).await
    }
}

impl RedemptionStore for Flaky {
    async fn code(&self, project: &str, normalized: &str) -> Result<Option<PromoCode>> {
        self.check()?;
        self.inner.code(project, normalized).await
    }
    async fn redeem(&self, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        self.check()?;
        self.inner.redeem(plan).await
    }
    async fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Redemption>> {
        self.check()?;
        self.inner.cancel_redemption(project, id, at).await
    }
    async fn redemption_by_key(&self, project: &str, key: &str) -> Result<Option<Redemption>> {
        self.check()?;
        self.inner.redemption_by_key(project, key).await
    }
    async fn redemption(&self, project: &str, id: Uuid) -> Result<Option<Redemption>> {
        self.check()?;
        self.inner.redemption(project, id).await
    }
    async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        self.check()?;
        self.inner.list_redemptions(project, query).await
    }
    async fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Decimal>> {
        self.check()?;
        self.inner.quota_usage(project, keys).await
    }
    async fn counter_usage(
        &self,
        project: &str,
        counters: &[accord::store::Counter],
        at: DateTime<Utc>,
    ) -> Result<Vec<accord::store::CounterUsage>> {
        self.check()?;
        self.inner.counter_usage(project, counters, at).await
    }
    async fn charged_keys(
        &self,
        project: &str,
        after: Option<i64>,
    ) -> Result<accord::store::ChargedKeys> {
        self.check()?;
        self.inner.charged_keys(project, after).await
    }
    async fn quota_usage_by_prefix(
        &self,
        project: &str,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, Decimal)>> {
        self.check()?;
        self.inner
            .quota_usage_by_prefix(project, prefix, after, limit)
            .await
    }
    async fn campaign_quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
    ) -> Result<Vec<QuotaUsage>> {
        self.check()?;
        self.inner.campaign_quota_usage(project, campaign_id).await
    }
}

impl CodeStore for Flaky {
    async fn insert_codes(&self, batch: &CodeBatch) -> Result<u64> {
        self.check()?;
        self.inner.insert_codes(batch).await
    }
    async fn list_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<PromoCode>> {
        self.check()?;
        self.inner
            .list_codes(project, campaign_id, page, size)
            .await
    }
    async fn codes_after(
        &self,
        project: &str,
        campaign_id: Uuid,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<PromoCode>> {
        self.check()?;
        self.inner
            .codes_after(project, campaign_id, after, limit)
            .await
    }
    async fn set_code_active(
        &self,
        project: &str,
        campaign_id: Uuid,
        normalized: &str,
        active: bool,
    ) -> Result<Option<PromoCode>> {
        self.check()?;
        self.inner
            .set_code_active(project, campaign_id, normalized, active)
            .await
    }
}

impl accord::store::HoldStore for Flaky {
    async fn place_hold(
        &self,
        hold: &accord::campaign::Hold,
    ) -> Result<accord::store::HoldOutcome> {
        self.check()?;
        self.inner.place_hold(hold).await
    }
    async fn confirm_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<accord::store::Confirmation>> {
        self.check()?;
        self.inner.confirm_hold(project, id, at).await
    }
    async fn release_hold(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<accord::campaign::Hold>> {
        self.check()?;
        self.inner.release_hold(project, id, at).await
    }
    async fn hold(&self, project: &str, id: Uuid) -> Result<Option<accord::campaign::Hold>> {
        self.check()?;
        self.inner.hold(project, id).await
    }
    async fn live_holds(
        &self,
        project: &str,
        campaign_id: Uuid,
        at: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<accord::campaign::Hold>> {
        self.check()?;
        self.inner.live_holds(project, campaign_id, at, limit).await
    }
    async fn sweep_quota_marks(&self, project: &str, at: DateTime<Utc>) -> Result<u64> {
        self.check()?;
        self.inner.sweep_quota_marks(project, at).await
    }
}

impl ContentStore for Flaky {
    async fn insert_content(&self, write: &ContentWrite) -> Result<ContentRecord> {
        self.check()?;
        self.inner.insert_content(write).await
    }
    async fn replace_content(
        &self,
        write: &ContentWrite,
        expected_version: i64,
    ) -> Result<ContentRecord> {
        self.check()?;
        self.inner.replace_content(write, expected_version).await
    }
    async fn content(
        &self,
        project: &str,
        t: ContentType,
        id: &str,
    ) -> Result<Option<ContentRecord>> {
        self.check()?;
        self.inner.content(project, t, id).await
    }
    async fn content_versions(
        &self,
        project: &str,
        t: ContentType,
        id: &str,
    ) -> Result<Vec<ContentRecord>> {
        self.check()?;
        self.inner.content_versions(project, t, id).await
    }
    async fn list_content(
        &self,
        project: &str,
        t: ContentType,
        query: &ContentQuery,
    ) -> Result<Page<ContentRecord>> {
        self.check()?;
        self.inner.list_content(project, t, query).await
    }
}

impl ConsentLedger for Flaky {
    async fn consents_of_app(&self, project: &str, app: &str) -> Result<Vec<ContentRecord>> {
        self.check()?;
        self.inner.consents_of_app(project, app).await
    }
    async fn acceptance_versions(
        &self,
        project: &str,
        subject: &str,
    ) -> Result<Vec<ContentRecord>> {
        self.check()?;
        self.inner.acceptance_versions(project, subject).await
    }
    async fn purpose_names(&self, project: &str, codes: &[String]) -> Result<Vec<ContentRecord>> {
        self.check()?;
        self.inner.purpose_names(project, codes).await
    }
    async fn append_purpose_event(&self, event: &PurposeEvent) -> Result<PurposeEvent> {
        self.check()?;
        self.inner.append_purpose_event(event).await
    }
    async fn purpose_events(
        &self,
        project: &str,
        subject: &str,
        app: Option<&str>,
    ) -> Result<Vec<PurposeEvent>> {
        self.check()?;
        self.inner.purpose_events(project, subject, app).await
    }
}

impl accord::store::LedgerStore for Flaky {
    async fn ledger_entries(
        &self,
        project: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<accord::store::StoredEntry>> {
        self.check()?;
        self.inner.ledger_entries(project, after, limit).await
    }
    async fn ledger_entries_of(
        &self,
        project: &str,
        record_id: &str,
    ) -> Result<Vec<accord::store::StoredEntry>> {
        self.check()?;
        self.inner.ledger_entries_of(project, record_id).await
    }
    async fn ledger_head(
        &self,
        project: &str,
    ) -> Result<Option<accord::consent::ledger::LedgerHead>> {
        self.check()?;
        self.inner.ledger_head(project).await
    }
    async fn erase_subject(
        &self,
        project: &str,
        subject: &str,
        pseudonym: &str,
    ) -> Result<accord::consent::erasure::ErasureCounts> {
        self.check()?;
        self.inner.erase_subject(project, subject, pseudonym).await
    }
}

impl accord::store::HistoryStore for Flaky {
    async fn subject_history(
        &self,
        project: &str,
        subject: &str,
        query: &accord::consent::evidence::HistoryQuery,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<accord::store::Page<accord::consent::evidence::SubjectEvent>> {
        self.check()?;
        self.inner
            .subject_history(project, subject, query, now)
            .await
    }
    async fn expired_acceptances(
        &self,
        project: &str,
        now: chrono::DateTime<chrono::Utc>,
        page: u32,
        size: u32,
    ) -> Result<accord::store::Page<accord::consent::history::ExpiredAcceptance>> {
        self.check()?;
        self.inner
            .expired_acceptances(project, now, page, size)
            .await
    }
    async fn ended_acceptances(
        &self,
        project: &str,
        before: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<Vec<(String, String)>> {
        self.check()?;
        self.inner.ended_acceptances(project, before, limit).await
    }
    async fn purge_acceptance(
        &self,
        project: &str,
        id: &str,
        pseudonym: &str,
    ) -> Result<accord::consent::erasure::ErasureCounts> {
        self.check()?;
        self.inner.purge_acceptance(project, id, pseudonym).await
    }
}

#[tokio::test]
async fn store_down_is_503_with_retry_after_and_a_panic_is_a_500_problem() {
    let store = Arc::new(Flaky::default());
    let clock = Arc::new(ManualClock::new(http_support::t0()));
    let app = router(Api::new(store.clone(), clock, Auth::hs256(SECRET).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();
    let admin = token(accord::http::scope::ALL, &[P]);
    let list = format!("{base}/campaign/api/projects/{P}/campaigns");

    assert_eq!(
        client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    store.mode.store(1, Ordering::SeqCst);
    for res in [
        client.get(format!("{base}/readyz")).send().await.unwrap(),
        client.get(&list).bearer_auth(&admin).send().await.unwrap(),
        client
            .get(format!(
                "{base}/bff/api/consent/projects/{P}/to-accept?app=a&dataSubject=u"
            ))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(res.headers()["retry-after"], "1");
        let p = problem(res, 503, "store_unavailable").await;
        assert!(
            !p["detail"].as_str().unwrap().contains("db.internal"),
            "{p}"
        );
    }
    // Liveness does not depend on the store.
    assert_eq!(
        client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    // A panic below a handler: a 500 problem on a connection that still works.
    store.mode.store(2, Ordering::SeqCst);
    let res = client.get(&list).bearer_auth(&admin).send().await.unwrap();
    let p = problem(res, 500, "internal").await;
    assert!(!p["detail"].as_str().unwrap().contains("invariant"), "{p}");
    store.mode.store(0, Ordering::SeqCst);
    let (status, body) = parts(client.get(&list).bearer_auth(&admin).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!([])));
}

impl accord::store::FileStore for Flaky {
    async fn put_file(
        &self,
        file: &accord::consent::file::StoredFile,
    ) -> Result<(accord::consent::file::StoredFile, bool)> {
        self.check()?;
        self.inner.put_file(file).await
    }
    async fn file(
        &self,
        project: &str,
        sha256: &str,
    ) -> Result<Option<accord::consent::file::StoredFile>> {
        self.check()?;
        self.inner.file(project, sha256).await
    }
    async fn file_exists(&self, project: &str, sha256: &str) -> Result<bool> {
        self.check()?;
        self.inner.file_exists(project, sha256).await
    }
}

impl accord::store::OutboxStore for Flaky {
    async fn insert_endpoint(
        &self,
        endpoint: &accord::outbox::webhook::Endpoint,
        max: usize,
    ) -> Result<bool> {
        self.check()?;
        self.inner.insert_endpoint(endpoint, max).await
    }
    async fn update_endpoint(&self, endpoint: &accord::outbox::webhook::Endpoint) -> Result<bool> {
        self.check()?;
        self.inner.update_endpoint(endpoint).await
    }
    async fn delete_endpoint(&self, project: &str, id: uuid::Uuid) -> Result<bool> {
        self.check()?;
        self.inner.delete_endpoint(project, id).await
    }
    async fn endpoint(
        &self,
        project: &str,
        id: uuid::Uuid,
    ) -> Result<Option<accord::outbox::webhook::Endpoint>> {
        self.check()?;
        self.inner.endpoint(project, id).await
    }
    async fn endpoints(&self, project: &str) -> Result<Vec<accord::outbox::webhook::Endpoint>> {
        self.check()?;
        self.inner.endpoints(project).await
    }
    async fn outbox_events(
        &self,
        project: &str,
        after: Option<uuid::Uuid>,
        limit: u32,
    ) -> Result<Vec<accord::outbox::OutboxEvent>> {
        self.check()?;
        self.inner.outbox_events(project, after, limit).await
    }
    async fn claim_deliveries(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        lease: std::time::Duration,
        limit: u32,
        project: Option<&str>,
    ) -> Result<Vec<accord::outbox::webhook::Claimed>> {
        self.check()?;
        self.inner
            .claim_deliveries(now, lease, limit, project)
            .await
    }
    async fn finish_delivery(
        &self,
        claimed: &accord::outbox::webhook::Delivery,
        attempt: &accord::outbox::webhook::Attempt,
        next: accord::outbox::webhook::Next,
    ) -> Result<bool> {
        self.check()?;
        self.inner.finish_delivery(claimed, attempt, next).await
    }
    async fn deliveries(
        &self,
        project: &str,
        endpoint: uuid::Uuid,
        page: u32,
        size: u32,
    ) -> Result<accord::store::Page<accord::outbox::webhook::Delivery>> {
        self.check()?;
        self.inner.deliveries(project, endpoint, page, size).await
    }
    async fn delivery(
        &self,
        project: &str,
        endpoint: uuid::Uuid,
        event: uuid::Uuid,
    ) -> Result<
        Option<(
            accord::outbox::webhook::Delivery,
            Vec<accord::outbox::webhook::Attempt>,
        )>,
    > {
        self.check()?;
        self.inner.delivery(project, endpoint, event).await
    }
    async fn redeliver(
        &self,
        project: &str,
        endpoint: uuid::Uuid,
        event: uuid::Uuid,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<accord::outbox::webhook::Delivery>> {
        self.check()?;
        self.inner.redeliver(project, endpoint, event, now).await
    }
}
