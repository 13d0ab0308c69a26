//! No personal data in the log when requests fail: client errors (4xx)
//! and server errors (5xx, logged at error with their cause) over a real
//! SQLite store, for requests carrying a data subject, user id, IP, device
//! id and user agent in the path, the query, the body and the headers.
//! (`http_logging` covers the info lines of successful traffic; this is its
//! own test binary because the log subscriber is global.)
#![cfg(feature = "http")]

mod support;
use support::{http_support, log_capture};

use std::sync::Arc;
use std::time::Duration;

use accord::http::{router, scope, Api, Auth, ROUTES};
use accord::store::sqlite::SqliteStore;
use accord::ManualClock;
use http_support::{fixture, t0, token, P, SECRET};
use log_capture::Captured;
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{Connection, Row};

const SUBJECT: &str = "alice-4242";
const IP: &str = "203.0.113.77";
const DEVICE: &str = "device-fp-77";
const AGENT: &str = "AliceBrowser/9.9";
const MODEL: &str = "iPhone15,2";
const PERSONAL: &[&str] = &[SUBJECT, IP, DEVICE, AGENT, MODEL];

/// A body for every route that takes one, full of personal data.
fn body(path: &str) -> Value {
    if path.ends_with("/consent-acceptance") {
        json!({"app": "shop", "dataSubject": SUBJECT, "consentId": SUBJECT,
               "userAgent": AGENT, "country": "TH", "localIp": IP, "osVersion": "17",
               "model": MODEL, "deviceFingerprintId": DEVICE})
    } else if path.ends_with("/purpose-acceptance") || path.ends_with("/purpose-withdrawal") {
        json!({"app": "shop", "dataSubject": SUBJECT, "purposeCode": "email"})
    } else if path.contains("/c/{type}") {
        json!({"data": {"dataSubject": SUBJECT, "localIp": IP, "deviceFingerprintId": DEVICE,
                        "userAgent": AGENT, "model": MODEL}})
    } else if path.ends_with("/campaigns") || path.ends_with("/campaigns/{id}") {
        let mut c = fixture("promo_code");
        c["description"] = json!(format!("for {SUBJECT} at {IP}"));
        c
    } else {
        json!({"campaignCode": "SAVE100",
               "attribute": {"userId": SUBJECT, "promoCode": "SAVE100", "localIp": IP,
                             "deviceFingerprintId": DEVICE, "model": MODEL, "userAgent": AGENT},
               "cart": {"totalPrice": 900}})
    }
}

/// Every route of the router, with personal data wherever the route lets
/// a client put it: path ids, query, body, headers.
async fn every_route(client: &reqwest::Client, base: &str, bearer: &str) -> Vec<u16> {
    let mut statuses = Vec::new();
    for route in ROUTES {
        // Campaign and redemption ids are UUIDs (anything else is a 404
        // before the store is asked); content ids are free text.
        let id = if route.path.starts_with("/campaign/") {
            "0b5e1d2c-3f4a-4b6c-8d7e-9f0a1b2c3d4e"
        } else {
            SUBJECT
        };
        let path = route
            .path
            .replace("{projId}", P)
            .replace("{type}", "svc-consent-acceptance-v1")
            .replace("{id}", id);
        let query = if path.ends_with("/to-accept") || path.ends_with("/purpose-options") {
            format!("?app=shop&dataSubject={SUBJECT}")
        } else if path.ends_with("/redemptions") {
            format!("?userId={SUBJECT}")
        } else if path.ends_with("/campaigns") {
            format!("?q={SUBJECT}")
        } else if path.ends_with("/c/svc-consent-acceptance-v1") && route.method == "GET" {
            format!("?data.dataSubject={SUBJECT}")
        } else {
            String::new()
        };
        let url = format!("{base}{path}{query}");
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        let mut req = client
            .request(method.clone(), &url)
            .bearer_auth(bearer)
            .header("user-agent", AGENT)
            .header("x-forwarded-for", IP)
            .header("x-real-ip", IP)
            .header("idempotency-key", format!("{SUBJECT}-{DEVICE}"));
        if method == Method::POST || method == Method::PUT {
            req = req.json(&body(route.path));
        }
        statuses.push(req.send().await.unwrap().status().as_u16());
    }
    statuses
}

/// Drops every table and view of the database under the running store:
/// from then on each store call fails as a real database fault would.
async fn break_database(path: &str) {
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut conn)
        .await
        .unwrap();
    let objects = sqlx::query(
        "SELECT type, name FROM sqlite_master WHERE type IN ('view', 'table') \
         AND name NOT LIKE 'sqlite_%' ORDER BY type DESC",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for row in objects {
        let (kind, name): (String, String) = (row.get(0), row.get(1));
        sqlx::query(&format!("DROP {kind} \"{name}\""))
            .execute(&mut conn)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn failing_requests_log_no_personal_data_at_any_level() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_env_filter("trace")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accord.db");
    let path = path.to_str().unwrap().to_owned();
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    let api = Api::new(
        store,
        Arc::new(ManualClock::new(t0())),
        Auth::hs256(SECRET).unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(api)).await.unwrap() });
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let admin = token(scope::ALL, &[P]);

    // Client errors with a working store: 4xx of every kind.
    let client_errors = every_route(&client, &base, &admin).await;
    assert!(
        client_errors.iter().any(|s| (400..500).contains(s)),
        "{client_errors:?}"
    );
    let wrong_project = token(scope::ALL, &[SUBJECT]);
    let forbidden = every_route(&client, &base, &wrong_project).await;
    assert!(forbidden.contains(&403), "{forbidden:?}");
    let bad_token = format!("{SUBJECT}.{IP}.{DEVICE}");
    let unauthorized = every_route(&client, &base, &bad_token).await;
    assert!(unauthorized.contains(&401), "{unauthorized:?}");

    // Server errors: the database loses its tables under the store.
    break_database(&path).await;
    let server_errors = every_route(&client, &base, &admin).await;
    let fives = server_errors.iter().filter(|s| **s >= 500).count();
    assert!(fives >= 10, "only {fives} server errors: {server_errors:?}");

    let log = captured.text();
    assert!(
        log.lines()
            .any(|l| l.contains("ERROR") && l.contains("internal error")),
        "the 5xx were not logged at error:\n{log}"
    );
    for needle in PERSONAL {
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
        assert!(
            lines.is_empty(),
            "{needle:?} in the log:\n{}",
            lines.join("\n")
        );
    }
}
