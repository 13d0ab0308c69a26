//! Database faults: the `accord` server (in-process, on
//! loopback) answers a 503 problem with `Retry-After` — quickly, never a
//! 500 or a hang — while its database is unreachable, reports not ready,
//! and serves again by itself once the database is back.
//!
//! - PostgreSQL: a TCP proxy between the server and the database. Cutting
//!   it drops every connection and refuses new ones; blackholing it stops
//!   forwarding in both directions without closing anything (a network
//!   that drops packets): connections, old and new, hang silently until
//!   it forwards again.
//! - SQLite: another connection holds the write lock past the busy
//!   timeout; reads go on meanwhile.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use load::{Limits, Seeded, Target};
use reliability_support::{fresh_schema, pg_url};
use reqwest::{Client, Method, Response};
use sqlx::Connection;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a request may take while the database is down.
const FAIL_FAST: Duration = Duration::from_secs(5);

const LIMITS: Limits = Limits {
    per_user: 1000,
    total: 100_000,
    points: 1_000_000,
};

/// A TCP proxy to `upstream` that can be cut (every connection dropped, new
/// ones refused: the port is closed) and restored (the same port again),
/// or blackholed (nothing forwarded either way, nothing closed; new
/// connections are accepted and hang too) and let through again.
struct Proxy {
    addr: SocketAddr,
    upstream: String,
    accept: Mutex<Option<JoinHandle<()>>>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    /// `true` while blackholed.
    holding: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            addr: listener.local_addr().unwrap(),
            upstream,
            accept: Mutex::new(None),
            conns: Arc::new(Mutex::new(Vec::new())),
            holding: watch::channel(false).0,
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (upstream, conns) = (self.upstream.clone(), self.conns.clone());
        let holding = self.holding.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let holding = holding.subscribe();
                let conn = tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(&upstream).await {
                        let (from_client, to_client) = inbound.into_split();
                        let (from_db, to_db) = outbound.into_split();
                        tokio::join!(
                            pump(from_client, to_db, holding.clone()),
                            pump(from_db, to_client, holding),
                        );
                    }
                });
                conns.lock().unwrap().push(conn);
            }
        });
        *self.accept.lock().unwrap() = Some(task);
    }

    /// Closes the port and drops every connection.
    async fn cut(&self) {
        let accept = self.accept.lock().unwrap().take();
        if let Some(task) = accept {
            task.abort();
            let _ = task.await;
        }
        let conns: Vec<_> = self.conns.lock().unwrap().drain(..).collect();
        for c in conns {
            c.abort();
            let _ = c.await;
        }
    }

    /// Listens on the same port again.
    async fn restore(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) => {
                    assert!(Instant::now() < deadline, "rebind {}: {e}", self.addr);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        self.serve(listener);
    }

    /// Stops forwarding, both ways, on every connection; closes nothing.
    fn blackhole(&self) {
        self.holding.send_replace(true);
    }

    /// Forwards again what was held, and what comes next.
    fn let_through(&self) {
        self.holding.send_replace(false);
    }
}

/// Copies `from` to `to` until either closes, holding every chunk (unsent)
/// while `holding` is true — as a network that drops packets holds them
/// in TCP's retransmissions.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut holding: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if holding.wait_for(|held| !held).await.is_err() {
            break;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// `host:port` of a `postgres://` URL (port 5432 when absent).
fn upstream_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split(['/', '?']).next().unwrap();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if hostport
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        hostport.to_owned()
    } else {
        format!("{hostport}:5432")
    }
}

/// `url` with its host and port replaced by `addr`.
fn via(url: &str, addr: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let userinfo = authority
        .rsplit_once('@')
        .map(|(u, _)| format!("{u}@"))
        .unwrap_or_default();
    format!("{scheme}://{userinfo}{addr}{tail}")
}

#[test]
fn proxy_urls() {
    let url = "postgres://postgres@127.0.0.1:5432/test?options=-c%20x";
    assert_eq!(upstream_of(url), "127.0.0.1:5432");
    assert_eq!(upstream_of("postgresql://u:p@db/x"), "db:5432");
    assert_eq!(
        via(url, "127.0.0.1:9".parse().unwrap()),
        "postgres://postgres@127.0.0.1:9/test?options=-c%20x"
    );
}

/// The operations the outage must not hang: readiness, search, redeem,
/// consent acceptance.
#[derive(Debug, Clone, Copy)]
enum Call {
    Ready,
    Search,
    Redeem,
    Accept,
}

async fn call(client: &Client, t: &Target, s: &Seeded, what: Call, n: usize) -> Response {
    let user = format!("user-{n}");
    let res = match what {
        Call::Ready => client.request(Method::GET, t.url("/readyz")).send().await,
        Call::Search => load::search(client, t, &user, 250).await,
        Call::Redeem => {
            let key = format!("{}-{}", s.code, load::new_secret());
            load::redeem(client, t, s, &user, 1, &key).await
        }
        Call::Accept => load::accept(client, t, s, &user).await,
    };
    res.unwrap_or_else(|e| panic!("{what:?}: no answer: {e}"))
}

const CALLS: [Call; 4] = [Call::Ready, Call::Search, Call::Redeem, Call::Accept];

/// When a search may still be answered from what the server read before
/// the database went down: within its refresh interval (500 ms) of the
/// cut, search's snapshot and its view of charged keys are still trusted
/// (docs/operations.md), so a new user's search needs no read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Since {
    /// Just cut: a search may be a 200 or a 503.
    JustCut,
    /// Past the refresh interval: nothing cached is trusted, every call 503.
    Long,
}

/// Every call at once, `rounds` times each; asserts each is a 503 problem
/// with `Retry-After` answered within [`FAIL_FAST`] (a search just after
/// the cut may be a 200 instead: [`Since`]).
async fn assert_unavailable(client: &Client, t: &Target, s: &Seeded, rounds: usize, since: Since) {
    let mut tasks = Vec::new();
    for n in 0..rounds {
        for what in CALLS {
            let (client, t, s) = (client.clone(), t.clone(), s.clone());
            tasks.push(tokio::spawn(async move {
                let began = Instant::now();
                let res = call(&client, &t, &s, what, n).await;
                let elapsed = began.elapsed();
                let status = res.status().as_u16();
                if status == 200 && matches!(what, Call::Search) && since == Since::JustCut {
                    assert!(elapsed < FAIL_FAST, "{what:?} took {elapsed:?}");
                    return elapsed;
                }
                let retry_after = res.headers().get("retry-after").cloned();
                let ct = res.headers().get("content-type").cloned();
                let body: serde_json::Value = res.json().await.unwrap_or_default();
                assert_eq!(status, 503, "{what:?} while the database is down: {body}");
                assert!(elapsed < FAIL_FAST, "{what:?} took {elapsed:?}");
                assert!(retry_after.is_some(), "{what:?}: no Retry-After");
                assert_eq!(ct.unwrap(), "application/problem+json");
                assert_eq!(body["status"], 503);
                elapsed
            }));
        }
    }
    let mut slowest = Duration::ZERO;
    for task in tasks {
        slowest = slowest.max(task.await.unwrap());
    }
    eprintln!("database down: every call a 503 within {slowest:?}");
}

/// Retries each call until it succeeds, `within` at most; returns how long
/// service took to come back.
async fn assert_recovers(client: &Client, t: &Target, s: &Seeded, within: Duration) -> Duration {
    let began = Instant::now();
    for what in CALLS {
        loop {
            let res = call(client, t, s, what, 0).await;
            let status = res.status().as_u16();
            if status < 300 {
                break;
            }
            assert_eq!(status, 503, "{what:?} after the database came back");
            assert!(
                began.elapsed() < within,
                "{what:?} still failing {within:?} after the database came back"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    began.elapsed()
}

/// Traffic during the outages: workers cycling search, redeem and consent
/// acceptance until stopped, so that requests are in flight when the
/// connections drop.
struct Hammer {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<Vec<(u16, Duration)>>>,
}

impl Hammer {
    fn start(t: &Target, s: &Seeded, workers: usize) -> Hammer {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..workers)
            .map(|i| {
                let (t, s, stop) = (t.clone(), s.clone(), stop.clone());
                tokio::spawn(async move {
                    let client = load::client();
                    let mut seen = Vec::new();
                    let mut n = i;
                    while !stop.load(Ordering::SeqCst) {
                        n += 1;
                        let what = [Call::Search, Call::Redeem, Call::Accept][n % 3];
                        let began = Instant::now();
                        let res = call(&client, &t, &s, what, n).await;
                        seen.push((res.status().as_u16(), began.elapsed()));
                    }
                    seen
                })
            })
            .collect();
        Hammer { stop, tasks }
    }

    /// Stops; every answer was a success, a quota refusal or a 503, each
    /// within [`FAIL_FAST`].
    async fn check(self) {
        self.stop.store(true, Ordering::SeqCst);
        let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
        let mut slowest = Duration::ZERO;
        for task in self.tasks {
            for (status, elapsed) in task.await.unwrap() {
                *by_status.entry(status).or_default() += 1;
                slowest = slowest.max(elapsed);
            }
        }
        eprintln!("traffic through the outages: {by_status:?}, slowest {slowest:?}");
        assert!(
            by_status.keys().all(|s| matches!(s, 200 | 201 | 409 | 503)),
            "{by_status:?}"
        );
        assert!(by_status.contains_key(&503), "{by_status:?}");
        assert!(slowest < FAIL_FAST, "slowest answer {slowest:?}");
    }
}

async fn seed(client: &Client, t: &Target) -> Seeded {
    let code = format!("FAULT-{}", &load::new_secret()[..8]).to_uppercase();
    load::seed(client, t, &code, LIMITS).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_outage_is_a_fast_503_and_service_resumes_without_restart() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "faults").await;
    let proxy = Proxy::start(upstream_of(&url)).await;
    let hosted = load::self_host(&via(&url, proxy.addr)).await.unwrap();
    let t = hosted.target.clone();
    let client = load::client();
    let s = seed(&client, &t).await;
    assert_recovers(&client, &t, &s, Duration::from_secs(1)).await;

    // Twice: the pool must come back after each outage.
    let hammer = Hammer::start(&t, &s, 6);
    for outage in 1..=2 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.cut().await;
        assert_unavailable(&client, &t, &s, 3, Since::JustCut).await;
        // Still down a while later (nothing cached a good answer).
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_unavailable(&client, &t, &s, 1, Since::Long).await;
        proxy.restore().await;
        let back = assert_recovers(&client, &t, &s, Duration::from_secs(5)).await;
        eprintln!("outage {outage}: service back {back:?} after the database");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    hammer.check().await;
    let quotas = load::check_quotas(&client, &t, &s).await.unwrap();
    assert!(quotas.holds() && quotas.complete > 0, "{quotas:?}");
    hosted.stop().await.unwrap();
}

/// A database behind a network that drops packets (no refusal, no reset):
/// every call, reads and writes, old connections and new, answers a 503
/// problem within 5 s — the server's own bounds, since nothing fails on
/// the wire — over and over while it lasts (longer than the server's
/// idle-in-transaction timeout); once packets flow again, the service
/// comes back by itself, and the quotas balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_blackhole_is_a_fast_503_and_service_resumes_by_itself() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "blackhole").await;
    let proxy = Proxy::start(upstream_of(&url)).await;
    let hosted = load::self_host(&via(&url, proxy.addr)).await.unwrap();
    let t = hosted.target.clone();
    let client = load::client();
    let s = seed(&client, &t).await;
    assert_recovers(&client, &t, &s, Duration::from_secs(1)).await;

    let hammer = Hammer::start(&t, &s, 6);
    for outage in 1..=2 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let began = Instant::now();
        proxy.blackhole();
        assert_unavailable(&client, &t, &s, 3, Since::JustCut).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_unavailable(&client, &t, &s, 1, Since::Long).await;
        // Past the server's idle-in-transaction timeout (10 s).
        tokio::time::sleep(Duration::from_secs(11).saturating_sub(began.elapsed())).await;
        assert_unavailable(&client, &t, &s, 1, Since::Long).await;
        let held = began.elapsed();
        proxy.let_through();
        let back = assert_recovers(&client, &t, &s, Duration::from_secs(10)).await;
        eprintln!("blackhole {outage} ({held:?}): service back {back:?} after packets flowed");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    hammer.check().await;
    let quotas = load::check_quotas(&client, &t, &s).await.unwrap();
    assert!(quotas.holds() && quotas.complete > 0, "{quotas:?}");
    hosted.stop().await.unwrap();
}

/// PostgreSQL: another session holds a lock that redeems need, longer than
/// the statement timeout. A redeem then waits for the server to cancel its
/// statement (3.5 s) and answers a 503 problem — not a 500, not a hang —
/// while searches go on; once the lock goes, redeems succeed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_lock_past_the_statement_timeout_is_a_503() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "locked").await;
    let hosted = load::self_host(&url).await.unwrap();
    let t = hosted.target.clone();
    let client = load::client();
    let s = seed(&client, &t).await;
    assert_recovers(&client, &t, &s, Duration::from_secs(1)).await;

    let mut blocker = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    sqlx::query("LOCK TABLE quota_usage IN EXCLUSIVE MODE")
        .execute(&mut blocker)
        .await
        .unwrap();
    let began = Instant::now();
    let res = call(&client, &t, &s, Call::Redeem, 1).await;
    let elapsed = began.elapsed();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    assert!(elapsed < FAIL_FAST, "redeem took {elapsed:?}");
    eprintln!("PostgreSQL lock held: redeem answered 503 after {elapsed:?}");
    let res = call(&client, &t, &s, Call::Search, 2).await;
    assert_eq!(res.status(), 200, "search during the lock");

    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    drop(blocker);
    assert_recovers(&client, &t, &s, Duration::from_secs(2)).await;
    let quotas = load::check_quotas(&client, &t, &s).await.unwrap();
    assert!(quotas.holds(), "{quotas:?}");
    hosted.stop().await.unwrap();
}

/// SQLite: another process's connection holds the write lock longer than
/// the busy timeout. A redeem then fails as a 503 problem with
/// `Retry-After` (not a 500, and not later than the busy timeout plus a
/// margin); reads are not blocked meanwhile (WAL), and `/readyz` reports
/// the store not ready (it cannot take a write); once the lock is released,
/// writes succeed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_write_lock_past_the_busy_timeout_is_a_503_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("busy.db").display());
    let hosted = load::self_host(&url).await.unwrap();
    let t = hosted.target.clone();
    let client = load::client();
    let s = seed(&client, &t).await;
    assert_recovers(&client, &t, &s, Duration::from_secs(1)).await;

    let mut blocker = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut blocker)
        .await
        .unwrap();
    let began = Instant::now();
    let redeem = {
        let (client, t, s) = (client.clone(), t.clone(), s.clone());
        tokio::spawn(async move { call(&client, &t, &s, Call::Redeem, 1).await })
    };
    // Reads answer while the writer waits; readiness says the store
    // cannot take a write, quickly.
    let read_began = Instant::now();
    let res = call(&client, &t, &s, Call::Search, 2).await;
    assert_eq!(res.status(), 200, "search during the write lock");
    assert!(read_began.elapsed() < Duration::from_secs(2));
    let ready_began = Instant::now();
    let res = call(&client, &t, &s, Call::Ready, 2).await;
    let ready_took = ready_began.elapsed();
    assert_eq!(res.status(), 503, "readiness during the write lock");
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    assert!(
        ready_took < Duration::from_secs(2),
        "readiness took {ready_took:?}"
    );
    eprintln!("SQLite write lock held: /readyz answered 503 after {ready_took:?}");
    let res = redeem.await.unwrap();
    let elapsed = began.elapsed();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    assert!(elapsed < Duration::from_secs(20), "redeem took {elapsed:?}");
    eprintln!("SQLite write lock held: redeem answered 503 after {elapsed:?}");

    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    drop(blocker);
    assert_recovers(&client, &t, &s, Duration::from_secs(2)).await;
    let quotas = load::check_quotas(&client, &t, &s).await.unwrap();
    assert!(quotas.holds(), "{quotas:?}");
    hosted.stop().await.unwrap();
}
