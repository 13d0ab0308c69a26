//! Clients that misbehave, on purpose or not, against `accord::http::serve`
//! (the accept loop of `accord serve`):
//!
//! - the HTTP layer's own refusals (malformed, too large, too slow) are
//!   problem+json, and each timeout closes the connection;
//! - the connection cap refuses the newest connection with a 503 problem;
//! - 2,000 clients holding half a request head do not stop `/healthz`, and
//!   the server closes them after the head read timeout;
//! - clients that abandon redeems and consent writes mid-request (aborted
//!   futures, closed connections), many at once and again and again, leave
//!   the store whole: afterwards every write succeeds at normal latency, no
//!   answer was a 5xx, each abandoned redeem's key gets its redemption, and
//!   quota usage equals the committed redemptions — on SQLite and on
//!   PostgreSQL.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::http_support;
use crate::load;
use crate::reliability_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accord::http::{scope, Api, Auth, ServeConfig};
use accord::store::memory::MemoryStore;
use accord::ManualClock;
use http_support::{listen_with, t0, token, P, SECRET};
use load::{Limits, Seeded, Target};
use rand::Rng;
use reliability_support::{fresh_schema, pg_url};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A memory-store server with the bounds of `config`; its `host:port`.
async fn server(config: ServeConfig) -> String {
    let api = Api::new(
        Arc::new(MemoryStore::new()),
        Arc::new(ManualClock::new(t0())),
        Auth::hs256(SECRET).unwrap(),
    );
    let (base, _) = listen_with(api, config).await;
    base.strip_prefix("http://").unwrap().to_owned()
}

/// Short bounds, so the timeouts show within a test.
fn short() -> ServeConfig {
    let mut config = ServeConfig::default();
    config.header_read_timeout = Duration::from_secs(1);
    config.body_read_timeout = Duration::from_secs(1);
    config.idle_timeout = Duration::from_secs(1);
    config.request_timeout = Duration::from_secs(5);
    config
}

/// Everything the server sends until it closes the connection (`within`
/// at most), and how long that took.
async fn until_closed(stream: &mut TcpStream, within: Duration) -> (Vec<u8>, Duration) {
    let began = Instant::now();
    let mut out = Vec::new();
    let read = tokio::time::timeout(within, stream.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "the server kept the connection open past {within:?}; it sent {:?}",
        String::from_utf8_lossy(&out)
    );
    (out, began.elapsed())
}

/// Status, lowercased head and JSON body of one raw HTTP/1.1 response.
fn response(bytes: &[u8]) -> (u16, String, Value) {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, head.to_ascii_lowercase(), body)
}

/// Asserts a problem+json response of `status` and `code`.
fn assert_problem(bytes: &[u8], status: u16, code: &str) {
    let (got, head, body) = response(bytes);
    assert_eq!(
        (got, body["code"].as_str()),
        (status, Some(code)),
        "{}",
        String::from_utf8_lossy(bytes)
    );
    assert!(
        head.contains("content-type: application/problem+json"),
        "{head}"
    );
    assert_eq!(body["status"], status);
}

/// Sends `bytes` on a new connection and returns all the server answers
/// before it closes.
async fn exchange(addr: &str, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    until_closed(&mut stream, Duration::from_secs(10)).await.0
}

#[tokio::test]
async fn the_http_layers_refusals_are_problems() {
    let addr = server(short()).await;

    let malformed = exchange(&addr, b"NOT HTTP AT ALL\r\n\r\n").await;
    assert_problem(&malformed, 400, "malformed_request");
    let bad_header = exchange(
        &addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n",
    )
    .await;
    assert_problem(&bad_header, 400, "malformed_request");

    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    assert_problem(
        &exchange(&addr, big.as_bytes()).await,
        431,
        "header_fields_too_large",
    );
    let many = (0..150).fold(String::new(), |mut out, i| {
        use std::fmt::Write as _;
        let _ = write!(out, "x-h{i}: v\r\n");
        out
    });
    let many = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    assert_problem(
        &exchange(&addr, many.as_bytes()).await,
        431,
        "header_fields_too_large",
    );

    // Past the router's target limit (8 KiB): 414 from the router, on a
    // kept-alive connection (it is a plain response).
    let long = format!(
        "GET /healthz?q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "a".repeat(9 * 1024)
    );
    assert_problem(&exchange(&addr, long.as_bytes()).await, 414, "uri_too_long");
    // Past hyper's buffer: hyper refuses it; still a problem.
    let longer = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70 * 1024));
    let (status, head, body) = response(&exchange(&addr, longer.as_bytes()).await);
    assert!(matches!(status, 414 | 431), "{status}");
    assert!(head.contains("application/problem+json") && body["status"] == status);

    // Half a head, then nothing: 408 once the head read timeout (1 s) is up.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (bytes, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert_problem(&bytes, 408, "head_timeout");
    assert!(took >= Duration::from_millis(900), "{took:?}");

    // Half a body: 408 once the body read timeout (1 s) is up.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /bff/api/consent/projects/{P}/consent-acceptance HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"app\": \"a\"",
        token(scope::ALL, &[P])
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (bytes, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert_problem(&bytes, 408, "body_timeout");
    assert!(took >= Duration::from_millis(900), "{took:?}");

    // A kept-alive connection idle past the idle timeout is closed.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (bytes, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(bytes.starts_with(b"HTTP/1.1 200"), "{bytes:?}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );

    // A connection that never sends anything is closed, silently.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let (bytes, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(bytes.is_empty(), "{bytes:?}");
    assert!(took >= Duration::from_millis(900), "{took:?}");
}

/// Past `max_connections`, the newest connection gets a 503 problem and is
/// closed; the connections already open are served; once they are gone,
/// new ones are accepted again.
#[tokio::test]
async fn the_connection_cap_refuses_the_newest() {
    let mut config = short();
    config.max_connections = 4;
    config.header_read_timeout = Duration::from_secs(2);
    let addr = server(config).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut refused = TcpStream::connect(&addr).await.unwrap();
    let (bytes, took) = until_closed(&mut refused, Duration::from_secs(1)).await;
    assert_problem(&bytes, 503, "too_many_connections");
    assert!(response(&bytes).1.contains("retry-after: 1"));
    assert!(took < Duration::from_millis(500), "{took:?}");
    // The held ones still get answers.
    held[0]
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (bytes, _) = until_closed(&mut held[0], Duration::from_secs(2)).await;
    assert!(bytes.starts_with(b"HTTP/1.1 200"));
    // The others time out (2 s); then there is room again.
    for stream in &mut held[1..] {
        until_closed(stream, Duration::from_secs(4)).await;
    }
    let again = exchange(
        &addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(again.starts_with(b"HTTP/1.1 200"), "{again:?}");
}

/// Raises this process's soft limit of open files toward what `wanted`
/// sockets on each side of loopback need; returns how many half-open
/// clients the limit allows (at most `wanted`).
fn room_for_clients(wanted: usize) -> usize {
    // Each client is two descriptors here (its socket, and the server's).
    const SPARE: u64 = 300;
    let need = 2 * wanted as u64 + SPARE;
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let limit = getrlimit(Resource::Nofile);
        let current = limit.current.unwrap_or(u64::MAX);
        if current < need {
            let raised = limit.maximum.map_or(need, |max| max.min(need));
            let _ = setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: Some(raised),
                    maximum: limit.maximum,
                },
            );
        }
        let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
        usize::try_from(current.saturating_sub(SPARE) / 2)
            .unwrap_or(wanted)
            .min(wanted)
    }
    #[cfg(not(unix))]
    {
        let _ = need;
        wanted
    }
}

/// 2,000 clients each send half a request head and stop. `/healthz` still
/// answers within a second, over and over, while they hang; the server
/// closes every one of them (with a 408 problem) after the head read
/// timeout, its default of 10 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_half_open_clients_do_not_hold_the_server() {
    let _alone = reliability_support::TIMING.lock().await;
    let clients = room_for_clients(2000);
    if clients < 2000 {
        eprintln!("the open-files limit allows {clients} half-open clients, not 2,000");
    }
    let config = ServeConfig::default();
    let timeout = config.header_read_timeout;
    let addr = server(config).await;
    let began = Instant::now();
    let mut streams = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        stream
            .write_all(b"POST /campaign/api/projects/shop/search HTTP/1.1\r\nHost: x\r\nContent-")
            .await
            .unwrap();
        streams.push(stream);
    }
    let opened = began.elapsed();
    let probe = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let asked = Instant::now();
        let res = probe
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let took = asked.elapsed();
        assert!(took < Duration::from_secs(1), "/healthz took {took:?}");
        slowest = slowest.max(took);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let closed: Vec<_> = streams
        .into_iter()
        .map(|mut stream| {
            tokio::spawn(async move {
                let mut out = Vec::new();
                let read = tokio::time::timeout(timeout * 2, stream.read_to_end(&mut out)).await;
                (read.is_ok(), out)
            })
        })
        .collect();
    let mut answered_408 = 0;
    for task in closed {
        let (closed, bytes) = task.await.unwrap();
        assert!(closed, "a half-open client was kept past {:?}", timeout * 2);
        if response(&bytes).0 == 408 {
            answered_408 += 1;
        }
    }
    let all_closed = began.elapsed();
    eprintln!(
        "{clients} half-open clients: opened in {opened:?}; /healthz slowest {slowest:?}; \
         all closed {all_closed:?} after the first opened ({answered_408} with a 408 problem)"
    );
    assert_eq!(answered_408, clients);
    assert!(all_closed < opened + timeout + Duration::from_secs(3));
}

/// Redeems and consent writes abandoned mid-request by many clients at
/// once, round after round, on the `accord` server over `database_url`.
async fn abandoned_requests_leave_the_store_whole(database_url: &str) {
    const CLIENTS: usize = 48;
    const ROUNDS: usize = 8;
    let hosted = load::self_host(database_url).await.unwrap();
    let t = hosted.target.clone();
    let client = load::client();
    let code = format!("GONE-{}", &load::new_secret()[..8]).to_uppercase();
    let limits = Limits {
        per_user: 10_000,
        total: 1_000_000,
        points: 10_000_000,
    };
    let s = load::seed(&client, &t, &code, limits).await.unwrap();
    let baseline = write_latency(&client, &t, &s, "before").await;

    let answers: Arc<Mutex<BTreeMap<u16, usize>>> = Arc::default();
    let abandoned_keys: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let storm = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (t, s) = (t.clone(), s.clone());
            let (answers, abandoned_keys) = (Arc::clone(&answers), Arc::clone(&abandoned_keys));
            tokio::spawn(async move {
                let client = load::client();
                let user = format!("user-{i}");
                for round in 0..ROUNDS {
                    let cut = Duration::from_millis(rand::thread_rng().gen_range(0..40));
                    let key = load::new_secret();
                    let sent = if round % 3 == 2 {
                        tokio::time::timeout(cut, load::accept(&client, &t, &s, &user)).await
                    } else {
                        abandoned_keys
                            .lock()
                            .unwrap()
                            .push((user.clone(), key.clone()));
                        tokio::time::timeout(cut, load::redeem(&client, &t, &s, &user, 1, &key))
                            .await
                    };
                    if let Ok(Ok(res)) = sent {
                        *answers
                            .lock()
                            .unwrap()
                            .entry(res.status().as_u16())
                            .or_default() += 1;
                    }
                    // A write seen through: its answer counts.
                    let res = if round % 2 == 0 {
                        load::redeem(&client, &t, &s, &user, 1, &load::new_secret()).await
                    } else {
                        load::accept(&client, &t, &s, &user).await
                    };
                    let status = res.unwrap().status().as_u16();
                    *answers.lock().unwrap().entry(status).or_default() += 1;
                }
            })
        })
        .collect();
    // Meanwhile, connections closed halfway through a body.
    for _ in 0..20 {
        half_a_redeem(&t, &s).await;
    }
    for task in tasks {
        task.await.unwrap();
    }
    let answers = answers.lock().unwrap().clone();
    eprintln!(
        "{database_url}: {CLIENTS} clients x {ROUNDS} rounds of abandoned writes in {:?}; answers {answers:?}",
        storm.elapsed()
    );
    assert!(
        answers.keys().all(|&s| matches!(s, 200 | 201)),
        "{answers:?}"
    );

    // Every write succeeds again, at the latency it had before.
    let after = write_latency(&client, &t, &s, "after").await;
    eprintln!("median redeem latency: {baseline:?} before the storm, {after:?} after");
    assert!(
        after <= baseline * 3 + Duration::from_millis(100),
        "median write latency {after:?} after the storm, {baseline:?} before"
    );
    let ready = t
        .req(&client, reqwest::Method::GET, &t.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    // Each abandoned redeem's key gets its redemption: replayed if it was
    // committed, recorded now if it never was.
    let keys = abandoned_keys.lock().unwrap().clone();
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    for (user, key) in &keys {
        let res = load::redeem(&client, &t, &s, user, 1, key).await.unwrap();
        *by_status.entry(res.status().as_u16()).or_default() += 1;
    }
    eprintln!("abandoned redeems retried with their keys: {by_status:?}");
    assert!(
        by_status.keys().all(|&s| matches!(s, 200 | 201)),
        "{by_status:?}"
    );

    let quotas = load::check_quotas(&client, &t, &s).await.unwrap();
    assert!(quotas.holds() && quotas.complete > 0, "{quotas:?}");
    hosted.stop().await.unwrap();
}

/// The median of 15 sequential redeems (each must be a 201 within 2 s).
async fn write_latency(client: &reqwest::Client, t: &Target, s: &Seeded, when: &str) -> Duration {
    let mut took = Vec::new();
    for n in 0..15 {
        let began = Instant::now();
        let res = load::redeem(client, t, s, &format!("probe-{n}"), 1, &load::new_secret())
            .await
            .unwrap();
        let elapsed = began.elapsed();
        assert_eq!(res.status(), 201, "a redeem {when} the storm");
        assert!(
            elapsed < Duration::from_secs(2),
            "a redeem {when} the storm took {elapsed:?}"
        );
        took.push(elapsed);
    }
    took.sort();
    took[took.len() / 2]
}

/// A redeem whose connection closes halfway through its body.
async fn half_a_redeem(t: &Target, s: &Seeded) {
    let addr = t.base.strip_prefix("http://").unwrap();
    let body =
        serde_json::json!({"campaignCode": s.code, "attribute": {"userId": "u"}}).to_string();
    let head = format!(
        "POST /campaign/api/projects/{}/redeem/campaign-code HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        t.project,
        t.token,
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
        .write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_abandoned_requests_leave_the_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("gone.db").display());
    abandoned_requests_leave_the_store_whole(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_abandoned_requests_leave_the_store_whole() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "gone").await;
    abandoned_requests_leave_the_store_whole(&url).await;
}
