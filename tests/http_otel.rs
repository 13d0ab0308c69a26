//! OpenTelemetry traces (feature `otel`): the spans `accord::http::otel::layer`
//! exports for requests, searches and redeems, caught by an in-memory
//! exporter — their names and attributes, a caller's trace continued, and
//! no personal data among them. (Its own test binary: the subscriber is
//! the process's global one, so that every thread's spans reach it.
//! `tests/it/http_otel.rs` sends them to a collector.)
#![cfg(feature = "otel")]

mod support;
use support::http_support;

use std::sync::{Arc, Mutex};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use reqwest::Method;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

use http_support::start;

/// Keeps what it is given.
#[derive(Debug, Clone, Default)]
struct Caught(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Caught {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

const PERSONAL: &[&str] = &["alice-4242", "10.1.2.3", "device-fp-77", "SAVE100-alice"];

/// Campaign and consent requests carrying a user id, a data subject, an
/// IP, a device and an idempotency key; the search continues a caller's
/// trace (`traceparent`).
async fn traffic(s: &http_support::Server) {
    s.create("promo_code").await;
    let request = json!({
        "campaignCode": "SAVE100",
        "attribute": {"userId": "alice-4242", "promoCode": "SAVE100", "localIp": "10.1.2.3",
                      "deviceFingerprintId": "device-fp-77"},
        "cart": {"totalPrice": 900}
    });
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let res = s
        .req(Method::POST, &s.campaign_url("/search"))
        .header("traceparent", caller)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    for _ in 0..2 {
        s.req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
            .header("idempotency-key", "SAVE100-alice")
            .header("x-forwarded-for", "10.1.2.3")
            .json(&request)
            .send()
            .await
            .unwrap();
    }
    let res = s
        .req(
            Method::GET,
            &s.url("/bff/api/consent/projects/shop/to-accept?app=app&dataSubject=alice-4242"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = s
        .req(
            Method::GET,
            &s.campaign_url("/redemptions?userId=alice-4242"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_searches_and_redeems_are_traced_without_personal_data() {
    let caught = Caught::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(caught.clone())
        .build();
    let subscriber =
        tracing_subscriber::registry().with(accord::http::otel::layer(provider.tracer("test")));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );

    let s = start().await;
    traffic(&s).await;
    provider.force_flush().unwrap();

    let spans = caught.0.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    for name in [
        "POST /campaign/api/projects/{projId}/search",
        "POST /campaign/api/projects/{projId}/redeem/campaign-code",
        "GET /bff/api/consent/projects/{projId}/to-accept",
        "GET /campaign/api/projects/{projId}/redemptions",
        "campaign.search",
        "campaign.redeem",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    let attribute = |span: &SpanData, key: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    let search = spans.iter().find(|s| s.name.ends_with("/search")).unwrap();
    assert_eq!(search.span_kind, opentelemetry::trace::SpanKind::Server);
    assert_eq!(
        attribute(search, "http.request.method").as_deref(),
        Some("POST")
    );
    assert_eq!(
        attribute(search, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        attribute(search, "http.route").as_deref(),
        Some("/campaign/api/projects/{projId}/search")
    );
    // The caller's trace goes on; the search operation is the request's child.
    assert_eq!(
        search.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(search.parent_span_id.to_string(), "00f067aa0ba902b7");
    let operation = spans.iter().find(|s| s.name == "campaign.search").unwrap();
    assert_eq!(operation.parent_span_id, search.span_context.span_id());
    let outcomes: Vec<String> = spans
        .iter()
        .filter(|s| s.name == "campaign.redeem")
        .filter_map(|s| attribute(s, "accord.outcome"))
        .collect();
    assert_eq!(outcomes, ["redeemed", "replayed"]);

    // No personal data: not in a name, an attribute or an event.
    let dump = format!("{spans:?}");
    for needle in PERSONAL {
        assert!(!dump.contains(needle), "{needle:?} in the spans: {dump}");
    }
    for span in &spans {
        assert!(span.events.is_empty(), "{span:?}");
        for kv in &span.attributes {
            assert!(
                [
                    "http.request.method",
                    "http.route",
                    "http.response.status_code",
                    "accord.request_id",
                    "accord.outcome",
                ]
                .contains(&kv.key.as_str()),
                "unexpected attribute {kv:?}"
            );
        }
    }
}
