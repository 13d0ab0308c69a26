//! Webhooks over HTTP: endpoint CRUD with its problems and scope; a real
//! delivery to a local receiver (signature checked, a 500 retried with
//! backoff, then delivered with the same event id); a disabled endpoint
//! gets nothing; deliveries listed, read and redelivered.
#![cfg(all(feature = "http", feature = "webhooks"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord::http::scope;
use accord::http::webhooks::worker::{HttpSender, Worker};
use accord::outbox::webhook::{verify, RetryPolicy};
use accord::outbox::{OutboxService, WorkerSettings};
use accord::SystemClock;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use reqwest::Method;
use serde_json::{json, Value};

use crate::http_support::{parts, problem, start, token, Server, P};

fn hooks(s: &Server, rest: &str) -> String {
    s.url(&format!("/events/api/projects/{P}/webhooks{rest}"))
}

async fn send(s: &Server, method: Method, url: &str, body: Option<Value>) -> reqwest::Response {
    let mut req = s.req(method, url);
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn endpoints_crud_with_problems() {
    let s = start().await;
    let res = send(
        &s,
        Method::POST,
        &hooks(&s, ""),
        Some(json!({"url": "https://shop.example/hook", "eventTypes": ["redemption.created"], "description": "orders"})),
    )
    .await;
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(location.ends_with(&id));
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(created["enabled"], true);
    assert_eq!(created["eventTypes"], json!(["redemption.created"]));

    let res = send(&s, Method::GET, &hooks(&s, ""), None).await;
    assert_eq!(res.headers()["x-total-count"], "1");
    let (_, list) = parts(res).await;
    assert_eq!(list[0]["id"], created["id"]);
    assert!(list[0].get("secret").is_none(), "the secret is shown once");
    let (status, one) =
        parts(send(&s, Method::GET, &hooks(&s, &format!("/{id}")), None).await).await;
    assert_eq!((status, one["description"].clone()), (200, json!("orders")));
    assert!(one.get("secret").is_none());

    let (status, updated) = parts(
        send(
            &s,
            Method::PUT,
            &hooks(&s, &format!("/{id}")),
            Some(json!({"url": "https://shop.example/hook2", "enabled": false})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        (updated["enabled"].clone(), updated["eventTypes"].clone()),
        (json!(false), json!([]))
    );

    let bad = send(
        &s,
        Method::POST,
        &hooks(&s, ""),
        Some(json!({"url": "ftp://x", "eventTypes": ["order.shipped"]})),
    )
    .await;
    let p = problem(bad, 422, "validation_failed").await;
    let fields: Vec<&str> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["url", "eventTypes[0]"], "{p}");
    let unknown = format!("/{}", uuid::Uuid::new_v4());
    problem(
        send(&s, Method::GET, &hooks(&s, &unknown), None).await,
        404,
        "webhook_not_found",
    )
    .await;
    problem(
        send(&s, Method::GET, &hooks(&s, "/not-a-uuid"), None).await,
        404,
        "webhook_not_found",
    )
    .await;
    problem(
        send(
            &s,
            Method::GET,
            &hooks(&s, &format!("{unknown}/deliveries")),
            None,
        )
        .await,
        404,
        "webhook_not_found",
    )
    .await;
    // Another scope is not enough.
    let res = s
        .client
        .get(hooks(&s, ""))
        .bearer_auth(token(&[scope::CAMPAIGN_ADMIN, scope::CONSENT_ADMIN], &[P]))
        .send()
        .await
        .unwrap();
    problem(res, 403, "insufficient_scope").await;

    let res = send(&s, Method::DELETE, &hooks(&s, &format!("/{id}")), None).await;
    assert_eq!(res.status(), 204);
    problem(
        send(&s, Method::DELETE, &hooks(&s, &format!("/{id}")), None).await,
        404,
        "webhook_not_found",
    )
    .await;
}

/// What the receiver got: (path, headers, body).
type Received = Arc<Mutex<Vec<(String, HeaderMap, Bytes)>>>;

/// A receiver on a free port: the first `fail_first` requests get a 500.
async fn receiver(fail_first: usize) -> (String, Received) {
    let got: Received = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let (g, c) = (Arc::clone(&got), Arc::clone(&calls));
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
            let (g, c) = (Arc::clone(&g), Arc::clone(&c));
            async move {
                g.lock()
                    .unwrap()
                    .push((uri.path().to_owned(), headers, body));
                if c.fetch_add(1, Ordering::SeqCst) < fail_first {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), got)
}

fn fast() -> WorkerSettings {
    WorkerSettings {
        interval: Duration::from_millis(20),
        lease: Duration::from_secs(10),
        batch: 32,
        retry: RetryPolicy {
            base: Duration::from_millis(200),
            max_delay: Duration::from_secs(1),
            max_attempts: 5,
            // The events are dated by the server's manual clock, months before
            // the system clock the worker reads.
            max_age: Duration::from_secs(400 * 86_400),
        },
        project: None,
    }
}

async fn until<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) -> bool {
    for _ in 0..200 {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
#[allow(clippy::too_many_lines)] // one story, start to end
async fn deliveries_are_signed_retried_and_listed() {
    let s = start().await;
    let (rx, got) = receiver(1).await;
    let (_, on) = parts(
        send(
            &s,
            Method::POST,
            &hooks(&s, ""),
            Some(json!({"url": format!("{rx}/on")})),
        )
        .await,
    )
    .await;
    let (_, off) = parts(
        send(
            &s,
            Method::POST,
            &hooks(&s, ""),
            Some(json!({"url": format!("{rx}/off"), "enabled": false})),
        )
        .await,
    )
    .await;
    let secret = on["secret"].as_str().unwrap().to_owned();
    let campaign = json!({
        "name": "HOOK", "refCode": "HOOK",
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
            "data": [{"attribute": "amount", "value": "5"}]}]}]
    });
    let (status, body) = s.post_json(&s.campaign_url("/campaigns"), campaign).await;
    assert_eq!(status, 201, "{body}");
    let (status, redeemed) = s
        .post_json(
            &s.campaign_url("/redeem/campaign-code"),
            json!({"campaignCode": "HOOK", "attribute": {"userId": "u1"}}),
        )
        .await;
    assert_eq!(status, 201, "{redeemed}");

    let service = OutboxService::new(Arc::clone(&s.store), Arc::new(SystemClock));
    let started = std::time::Instant::now();
    let worker = Worker::start(
        service,
        HttpSender::new(Duration::from_secs(5)).unwrap(),
        fast(),
    );
    if !until(|| async { got.lock().unwrap().len() >= 2 }).await {
        let on_id = on["id"].as_str().unwrap();
        let (_, list) = parts(
            send(
                &s,
                Method::GET,
                &hooks(&s, &format!("/{on_id}/deliveries")),
                None,
            )
            .await,
        )
        .await;
        panic!(
            "not delivered in time: {} received; {list}",
            got.lock().unwrap().len()
        );
    }
    let waited = started.elapsed();
    worker.stop();
    let got = got.lock().unwrap().clone();
    assert!(
        got.iter().all(|(path, _, _)| path == "/on"),
        "the disabled endpoint gets nothing"
    );
    let ids: Vec<&str> = got
        .iter()
        .map(|(_, h, _)| h["accord-event-id"].to_str().unwrap())
        .collect();
    assert_eq!(ids[0], ids[1], "a retry sends the same event");
    assert!(
        waited >= Duration::from_millis(150),
        "the retry waited: {waited:?}"
    );
    let now = chrono::Utc::now().timestamp();
    for (_, headers, body) in &got {
        let sig = headers["accord-signature"].to_str().unwrap();
        assert!(verify(&secret, sig, body, now, 60), "{sig}");
        assert!(!verify("whsec_other", sig, body, now, 60));
        assert_eq!(headers["content-type"], "application/json");
        let event: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(event["type"], "redemption.created");
        assert_eq!(event["id"], ids[0]);
        assert_eq!(event["projectId"], P);
        assert_eq!(event["data"]["redemptionId"], redeemed["id"], "{redeemed}");
    }

    let on_id = on["id"].as_str().unwrap();
    let res = send(
        &s,
        Method::GET,
        &hooks(&s, &format!("/{on_id}/deliveries")),
        None,
    )
    .await;
    assert_eq!(res.headers()["x-total-count"], "1");
    let (_, list) = parts(res).await;
    assert_eq!(list[0]["state"], "DELIVERED", "{list}");
    assert_eq!(list[0]["eventId"], ids[0]);
    let one = hooks(&s, &format!("/{on_id}/deliveries/{}", ids[0]));
    let (status, d) = parts(send(&s, Method::GET, &one, None).await).await;
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["attempts"], 2);
    assert_eq!(d["attemptLog"][0]["status"], 500);
    assert_eq!(d["attemptLog"][0]["error"], "HTTP status 500");
    assert_eq!(d["attemptLog"][1]["status"], 204);
    let off_id = off["id"].as_str().unwrap();
    let (_, none) = parts(
        send(
            &s,
            Method::GET,
            &hooks(&s, &format!("/{off_id}/deliveries")),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(none, json!([]));

    let res = send(&s, Method::POST, &format!("{one}/redeliver"), None).await;
    let (status, again) = parts(res).await;
    assert_eq!((status, again["state"].clone()), (202, json!("PENDING")));
    let unknown = hooks(
        &s,
        &format!("/{on_id}/deliveries/{}/redeliver", uuid::Uuid::new_v4()),
    );
    problem(
        send(&s, Method::POST, &unknown, None).await,
        404,
        "delivery_not_found",
    )
    .await;
}
