//! The request log at info: one line per request with the method, the
//! route TEMPLATE, the status and the latency — and no personal data
//! (user ids, data subjects, IPs, device ids) from paths, queries, bodies
//! or headers.
#![cfg(feature = "http")]

mod support;
use support::{http_support, log_capture};

use http_support::{start, Server};
use log_capture::Captured;
use reqwest::Method;
use serde_json::json;

/// Strings that must never reach the log at info.
const PERSONAL: &[&str] = &[
    "alice-4242",
    "10.1.2.3",
    "device-fp-77",
    "iPhone15,2",
    "SAVE100-alice",
];

#[tokio::test]
async fn info_log_has_route_templates_and_no_personal_data() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let s = start().await;
    for probe in ["/healthz", "/readyz"] {
        let res = s.client.get(s.url(probe)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{probe}");
    }
    campaign_traffic(&s).await;
    consent_traffic(&s).await;
    request_ids(&s).await;
    metrics(&s).await;
    let log = captured.text();
    // Every line of a request carries its id (the span around it).
    assert!(log.contains("request{request_id=trace-42}"), "{log}");
    for line in log.lines().filter(|l| l.contains(" request ")) {
        assert!(line.contains("request_id="), "{line}");
    }
    for needle in PERSONAL {
        assert!(!log.contains(needle), "{needle:?} in the log:\n{log}");
    }
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("request")).collect();
    assert!(lines.len() >= 8, "{log}");
    assert!(
        log.contains(
            "method=POST route=/campaign/api/projects/{projId}/redeem/campaign-code status=201"
        ),
        "{log}"
    );
    assert!(
        log.contains("route=/campaign/api/projects/{projId}/redeem/campaign-code status=409"),
        "{log}"
    );
    assert!(
        log.contains("route=/campaign/api/projects/{projId}/redemptions status=200"),
        "{log}"
    );
    assert!(
        log.contains("route=/campaign/api/projects/{projId}/campaigns status=403"),
        "{log}"
    );
    assert!(log.contains("route=(no route) status=404"), "{log}");
    assert!(log.contains("status=401"), "{log}");
    assert!(log.contains("latency_ms="), "{log}");
    // Successful health probes are logged at debug, below this filter.
    assert!(!log.contains("route=/healthz"), "{log}");
    assert!(!log.contains("route=/readyz"), "{log}");
    assert!(
        log.contains("route=/bff/api/consent/projects/{projId}/to-accept status=200"),
        "{log}"
    );
    assert!(
        log.contains("route=/bff/api/consent/projects/{projId}/consent-acceptance status=201"),
        "{log}"
    );
    assert!(
        log.contains("route=/cms/api/projects/{projId}/c/{type} status=200"),
        "{log}"
    );
}

/// Campaign requests carrying a user id, an IP and device details.
async fn campaign_traffic(s: &Server) {
    s.create("promo_code").await;
    let redeem = json!({
        "campaignCode": "SAVE100",
        "attribute": {"userId": "alice-4242", "promoCode": "SAVE100", "localIp": "10.1.2.3",
                      "deviceFingerprintId": "device-fp-77", "model": "iPhone15,2"},
        "cart": {"totalPrice": 900}
    });
    for _ in 0..2 {
        // The second is a 409 whose detail names the key (with the user
        // id): the client may see it, the log must not.
        s.req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .header("x-forwarded-for", "10.1.2.3")
            .header("idempotency-key", "alice-4242-order")
            .json(&redeem)
            .send()
            .await
            .unwrap();
        s.req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .json(&redeem)
            .send()
            .await
            .unwrap();
    }
    s.req(
        Method::GET,
        &s.campaign_url("/redemptions?userId=alice-4242"),
    )
    .send()
    .await
    .unwrap();
    s.req(
        Method::GET,
        &s.url("/campaign/api/projects/alice-4242/campaigns"),
    )
    .send()
    .await
    .unwrap();
    s.req(Method::GET, &s.url("/nope/alice-4242"))
        .send()
        .await
        .unwrap();
    s.client
        .get(s.campaign_url("/redemptions?userId=alice-4242"))
        .bearer_auth("garbage-alice-4242")
        .send()
        .await
        .unwrap();
}

/// Consent requests: the subject in the query and the body, device details.
async fn consent_traffic(s: &Server) {
    // Consent: the subject in the query and the body, device details.
    let cms = |t: &str| s.url(&format!("/cms/api/projects/shop/c/{t}"));
    let notice: serde_json::Value = s
        .req(Method::POST, &cms("svc-privacy-notice-v1"))
        .json(&json!({"data": {"name": "N", "revision": 1, "status": "PUBLISHED"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let consent: serde_json::Value = s
        .req(Method::POST, &cms("svc-consent-v1"))
        .json(&json!({"data": {"name": "C", "application": "app", "purposes": ["email"],
                               "privacyNoticeRef": notice["id"], "revision": 1, "status": "PUBLISHED"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bff = |rest: &str| s.url(&format!("/bff/api/consent/projects/shop{rest}"));
    for path in [
        "/to-accept?app=app&dataSubject=alice-4242",
        "/purpose-options?app=app&dataSubject=alice-4242",
    ] {
        let res = s.req(Method::GET, &bff(path)).send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    let res = s
        .req(Method::POST, &bff("/consent-acceptance"))
        .json(
            &json!({"app": "app", "dataSubject": "alice-4242", "consentId": consent["id"],
                      "userAgent": "ua", "country": "TH", "localIp": "10.1.2.3", "osVersion": "17",
                      "model": "iPhone15,2", "deviceFingerprintId": "device-fp-77"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let res = s
        .req(
            Method::GET,
            &cms("svc-consent-acceptance-v1?data.dataSubject=alice-4242"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// The request id: a sane one from the client is kept, anything else is
/// replaced by a new one; always returned.
async fn request_ids(s: &Server) {
    let res = s
        .client
        .get(s.url("/healthz"))
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "trace-42");
    s.req(Method::GET, &s.campaign_url("/campaigns"))
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    for bad in ["has space", "alice/4242", &"x".repeat(129), ""] {
        let res = s
            .client
            .get(s.url("/healthz"))
            .header("x-request-id", bad)
            .send()
            .await
            .unwrap();
        let id = res.headers()["x-request-id"].to_str().unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{bad:?} → {id}");
    }
    let res = s.client.get(s.url("/nope")).send().await.unwrap();
    let id = res.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
}

/// `/metrics`: the documented names, route templates as labels, search and
/// redeem outcomes, and no personal data nor project ids.
async fn metrics(s: &Server) {
    s.req(Method::POST, &s.campaign_url("/search"))
        .json(&json!({"attribute": {"userId": "alice-4242"}, "cart": {"totalPrice": 10}}))
        .send()
        .await
        .unwrap();
    let res = s.client.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = res.text().await.unwrap();
    for name in [
        "accord_http_requests_total{method=\"POST\",route=\"/campaign/api/projects/{projId}/redeem/campaign-code\",status=\"201\"}",
        "accord_http_request_duration_seconds_bucket{",
        "accord_search_total{outcome=\"none\"} 1",
        "accord_redeem_total{outcome=\"redeemed\"}",
        "accord_redeem_total{outcome=\"replayed\"}",
        "accord_quota_refusals_total",
    ] {
        assert!(text.contains(name), "{name} not in:\n{text}");
    }
    for needle in PERSONAL.iter().chain(&["shop", "dataSubject", "userId"]) {
        assert!(!text.contains(needle), "{needle:?} in the metrics:\n{text}");
    }
}
