//! Webhook delivery survives a server stopped mid-delivery: the receiver
//! holds the first request, the server (and its worker) is dropped while
//! it waits; a new server on the same database claims the delivery again
//! once the lease expires and delivers the same event, with the same id.
#![cfg(all(feature = "cli", feature = "webhooks"))]
#![allow(clippy::unwrap_used)]
#![allow(clippy::too_many_lines)] // one story, start to end

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accord::cli::serve::{start, ServeArgs};
use accord::cli::webhooks::WebhookFlags;
use accord::http::Claims;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

const SECRET: &str = "webhook-kill-test-secret-0123456789abcdef";

fn args(db: &str) -> ServeArgs {
    ServeArgs {
        addr: ([127, 0, 0, 1], 0).into(),
        database_url: db.to_owned(),
        jwt_secret: Some(SECRET.to_owned()),
        webhooks: WebhookFlags {
            webhook_interval: Duration::from_millis(50),
            webhook_lease: Duration::from_secs(2),
            webhook_timeout: Duration::from_secs(2),
            webhook_retry_base: Duration::from_millis(100),
            ..WebhookFlags::default()
        },
        ..ServeArgs::default()
    }
}

/// Every request the receiver got: (event id, body).
type Got = Arc<Mutex<Vec<(String, Bytes)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_cut_by_a_stopped_server_is_sent_again_with_the_same_id() {
    // The receiver: the first request is held (never answered), the next
    // ones answered 204.
    let got: Got = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let (g, c) = (Arc::clone(&got), Arc::clone(&calls));
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let (g, c) = (Arc::clone(&g), Arc::clone(&c));
        async move {
            let id = headers["accord-event-id"].to_str().unwrap().to_owned();
            g.lock().unwrap().push((id, body));
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                std::future::pending::<()>().await;
            }
            StatusCode::NO_CONTENT
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let rx = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("hooks.db").display());
    let token = Claims::all_scopes("ops", &["rel"], Duration::from_secs(600))
        .sign_hs256(SECRET.as_bytes())
        .unwrap();
    let first = start(args(&db), std::future::pending()).await.unwrap();
    let base = format!("http://{}", first.addr);
    let client = reqwest::Client::new();
    let post = |url: String, body: Value| {
        let req = client.post(url).bearer_auth(&token).json(&body);
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            (status, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, hook) = post(
        format!("{base}/events/api/projects/rel/webhooks"),
        json!({"url": rx, "eventTypes": ["redemption.created"]}),
    )
    .await;
    assert_eq!(status, 201, "{hook}");
    let campaign = json!({
        "name": "K", "refCode": "K",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
            "data": [{"attribute": "amount", "value": "1"}]}]}]
    });
    let (status, body) = post(
        format!("{base}/campaign/api/projects/rel/campaigns"),
        campaign,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        format!("{base}/campaign/api/projects/rel/redeem/campaign-code"),
        json!({"campaignCode": "K", "attribute": {"userId": "u1"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // The first server's worker sends it; the receiver holds it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the first attempt never came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Stop that server mid-delivery: its task, worker and request in flight
    // are dropped; nothing is recorded.
    first.done.abort();
    let _ = first.done.await;
    let stopped = Instant::now();

    let second = start(args(&db), std::future::pending()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "not delivered again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        stopped.elapsed() >= Duration::from_millis(1500),
        "claimed again only once the lease expired"
    );
    let got = got.lock().unwrap().clone();
    assert_eq!(got[0].0, got[1].0, "the same event id");
    assert_eq!(got[0].1, got[1].1, "the same event");

    // The second server's record: delivered at its attempt 2.
    let base = format!("http://{}", second.addr);
    let hook_id = hook["id"].as_str().unwrap();
    let url = format!(
        "{base}/events/api/projects/rel/webhooks/{hook_id}/deliveries/{}",
        got[0].0
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let d: Value = client
            .get(&url)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if d["state"] == "DELIVERED" {
            assert_eq!(d["attempts"], 2, "{d}");
            assert_eq!(d["attemptLog"].as_array().unwrap().len(), 1, "{d}");
            assert_eq!(d["attemptLog"][0]["attempt"], 2, "{d}");
            break;
        }
        assert!(Instant::now() < deadline, "{d}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.done.abort();
}
