//! OpenTelemetry traces (feature `otel`): the spans `accord::http::otel::layer`
//! exports for requests, searches and redeems, caught by an in-memory
//! exporter — their names and attributes, a caller's trace continued, and
//! no personal data among them.
#![cfg(feature = "otel")]

use std::sync::{Arc, Mutex};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use reqwest::Method;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

use crate::http_support::start;

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

/// A current-thread runtime (`tokio::test`): the subscriber set for this
/// thread sees the server's spans too.
#[tokio::test]
async fn requests_searches_and_redeems_are_traced_without_personal_data() {
    let caught = Caught::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(caught.clone())
        .build();
    let subscriber =
        tracing_subscriber::registry().with(accord::http::otel::layer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );

    let s = start().await;
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

/// `accord serve --otlp-endpoint`: spans reach a collector (here a local
/// one) as OTLP/HTTP protobuf under `/v1/traces`, the last batch when the
/// server stops on SIGTERM.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn serve_sends_traces_to_the_collector() {
    use std::io::BufRead as _;
    type Posts = Arc<Mutex<Vec<(String, Option<String>, Vec<u8>)>>>;
    let posts: Posts = Arc::default();
    let app = axum::Router::new()
        .fallback(
            |axum::extract::State(posts): axum::extract::State<Posts>,
             uri: axum::http::Uri,
             headers: axum::http::HeaderMap,
             body: axum::body::Bytes| async move {
                let kind = headers
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_owned());
                posts
                    .lock()
                    .unwrap()
                    .push((uri.path().to_owned(), kind, body.to_vec()));
                ""
            },
        )
        .with_state(Arc::clone(&posts));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_accord"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            "memory:",
        ])
        .args(["--otlp-endpoint", &collector])
        .env("ACCORD_JWT_SECRET", "a-fixed-secret-of-at-least-32-bytes!")
        .env_remove("ACCORD_CONFIG")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let addr = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        lines
            .find_map(|l| {
                let l = l.unwrap();
                let rest = l.split("listening on http://").nth(1)?;
                Some(rest.split_whitespace().next().unwrap().to_owned())
            })
            .unwrap()
    })
    .await
    .unwrap();
    let res = reqwest::Client::new()
        .get(format!(
            "http://{addr}/bff/api/consent/projects/shop/to-accept?app=a&dataSubject=alice-4242"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status}");

    let posts = posts.lock().unwrap().clone();
    let (path, kind, body) = posts.first().expect("no traces sent");
    assert_eq!(path, "/v1/traces");
    assert_eq!(kind.as_deref(), Some("application/x-protobuf"));
    let has = |needle: &str| body.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(has("GET /bff/api/consent/projects/{projId}/to-accept"));
    assert!(has("accord"));
    assert!(!has("alice-4242"));
}
