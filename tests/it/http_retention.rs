//! Retention over HTTP, on the memory store and SQLite: the acceptances
//! past their lifespan, paged, the same as the library's list; scope
//! `consent.audit`.
#![cfg(all(feature = "http", feature = "sqlite"))]
#![allow(clippy::unwrap_used)]

use crate::http_support;

use std::sync::Arc;

use accord::consent::AcceptConsentRequest;
use accord::http::{scope, Api, Auth, HttpStore};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::ManualClock;
use chrono::Duration;
use http_support::{listen, parts, t0, token, SECRET};
use serde_json::{json, Value};

async fn expired_over_http<S: HttpStore>(store: Arc<S>) {
    let clock = Arc::new(ManualClock::new(t0()));
    let api = Api::new(store, clock.clone(), Auth::hs256(SECRET).unwrap());
    let (base, client) = listen(api.clone()).await;
    let svc = api.consent();
    let notice = svc
        .create_content(
            "p1",
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let consent = svc
        .create_content(
            "p1",
            "svc-consent-v1",
            json!({"name": "Shop", "descriptionEn": "Please agree", "application": "shop",
                   "purposes": ["email"], "lifespan": 1, "privacyNoticeRef": notice.id,
                   "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    for subject in ["u1", "u2", "u3"] {
        clock.advance(Duration::hours(1));
        let req = AcceptConsentRequest {
            app: Some("shop".into()),
            data_subject: Some(subject.into()),
            consent_id: Some(consent.id.clone()),
            user_agent: Some("Mozilla/5.0".into()),
            country: Some("TH".into()),
            local_ip: Some("10.1.2.3".into()),
            os_version: Some("17.2".into()),
            model: Some("phone-x".into()),
            device_fingerprint_id: Some(format!("fp-{subject}")),
            ..AcceptConsentRequest::default()
        };
        svc.accept_consent("p1", req, "app").await.unwrap();
    }
    clock.advance(Duration::days(2));
    let get = |path: String, scopes: &'static [&'static str]| {
        let client = client.clone();
        let url = format!("{base}/consent/api/projects/p1/retention/expired{path}");
        async move {
            let res = client
                .get(url)
                .bearer_auth(token(scopes, &["p1"]))
                .send()
                .await
                .unwrap();
            let total = res
                .headers()
                .get("x-total-count")
                .map(|v| v.to_str().unwrap().to_owned());
            let (status, body) = parts(res).await;
            (status, total, body)
        }
    };
    let (status, total, body) = get("?size=2&page=1".into(), &[scope::CONSENT_AUDIT]).await;
    assert_eq!((status, total.as_deref()), (200, Some("3")), "{body}");
    let library = svc.expired_acceptances("p1", 1, 2).await.unwrap();
    assert_eq!(body, serde_json::to_value(&library.items).unwrap());
    assert_eq!(body[0]["dataSubject"], "u3");
    assert_eq!(body[0]["consentId"], consent.id.as_str());
    let (status, _, all) = get(String::new(), &[scope::CONSENT_AUDIT]).await;
    assert_eq!(status, 200);
    let subjects: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["dataSubject"])
        .collect();
    assert_eq!(subjects, [&json!("u1"), &json!("u2"), &json!("u3")]);
    let (status, _, _) = get(String::new(), &[scope::CONSENT_READ]).await;
    assert_eq!(status, 403, "consent.r does not read the retention list");
    let (status, _, body) = get("?size=0".into(), &[scope::CONSENT_AUDIT]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("invalid_parameter"))
    );
    let (status, _, body) = get("?dataSubject=u1".into(), &[scope::CONSENT_AUDIT]).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn expired_acceptances_on_memory() {
    expired_over_http(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn expired_acceptances_on_sqlite() {
    let store = SqliteStore::open_in_memory().await.unwrap();
    expired_over_http(Arc::new(store)).await;
}

/// `POST …/retention/purge`: scope `consent.admin`, what was purged, the
/// ledger still valid; 409 without a configured retention.
#[tokio::test]
async fn purge_over_http() {
    use accord::consent::erasure::PseudonymKey;
    let store = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let clock = Arc::new(ManualClock::new(t0()));
    let plain = Api::new(store.clone(), clock.clone(), Auth::hs256(SECRET).unwrap())
        .with_pseudonym_key(PseudonymKey::new(&[42; 32]).unwrap());
    let api = plain.clone().with_consent_retention(Duration::days(30));
    let (base, client) = listen(api.clone()).await;
    let (plain_base, _) = listen(plain).await;
    let svc = api.consent();
    let notice = svc
        .create_content(
            "p1",
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let consent = svc
        .create_content(
            "p1",
            "svc-consent-v1",
            json!({"name": "Shop", "descriptionEn": "Please agree", "application": "shop",
                   "purposes": ["email"], "lifespan": 1, "privacyNoticeRef": notice.id,
                   "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let req = AcceptConsentRequest {
        app: Some("shop".into()),
        data_subject: Some("alice@example.com".into()),
        consent_id: Some(consent.id.clone()),
        user_agent: Some("Mozilla/5.0".into()),
        country: Some("TH".into()),
        local_ip: Some("10.1.2.3".into()),
        os_version: Some("17.2".into()),
        model: Some("phone-x".into()),
        device_fingerprint_id: Some("fp-1".into()),
        ..AcceptConsentRequest::default()
    };
    svc.accept_consent("p1", req, "app").await.unwrap();
    clock.advance(Duration::days(40));
    let post = |base: String, scopes: &'static [&'static str]| {
        let client = client.clone();
        async move {
            let res = client
                .post(format!("{base}/consent/api/projects/p1/retention/purge"))
                .bearer_auth(token(scopes, &["p1"]))
                .send()
                .await
                .unwrap();
            parts(res).await
        }
    };
    let (status, _) = post(base.clone(), &[scope::CONSENT_AUDIT]).await;
    assert_eq!(status, 403);
    let (status, body) = post(plain_base, &[scope::CONSENT_ADMIN]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("retention_not_configured"))
    );
    let (status, body) = post(base.clone(), &[scope::CONSENT_ADMIN]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["acceptances"], 1);
    assert_eq!(body["retentionDays"], 30);
    assert_eq!(body["erased"]["acceptanceVersions"], 1);
    assert_eq!(body["erased"]["ledgerSalts"], 1);
    let export = svc.export_subject("p1", "alice@example.com").await.unwrap();
    assert!(export.acceptances.is_empty(), "nothing personal is left");
    assert!(svc.verify_ledger("p1").await.unwrap().valid);
}
