//! `accord serve --otlp-endpoint` (feature `otel`): the server's spans
//! reach an OpenTelemetry collector. (What the spans hold is tested by
//! `tests/http_otel.rs`, with the process's global subscriber.)
#![cfg(all(feature = "otel", unix))]

use std::sync::{Arc, Mutex};

/// `accord serve --otlp-endpoint`: spans reach a collector (here a local
/// one) as OTLP/HTTP protobuf under `/v1/traces`, the last batch when the
/// server stops on SIGTERM.
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
