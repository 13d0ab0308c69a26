//! Consent history is append-only, seen from the wire: a content-store PUT
//! never destroys the previous version. For each of the four content types
//! a record is created and PUT twice over HTTP, then the store's
//! `content_versions` must hold every version, each intact and readable;
//! concurrent PUTs naming no version each append one (the last writer
//! wins), and a write naming a stale version is refused. Over the memory store and
//! SQLite (and PostgreSQL when `ACCORD_TEST_PG_URL` is set).
#![cfg(feature = "http")]

use crate::http_support;
use crate::pg_support;

use std::sync::Arc;

use accord::consent::{ContentType, ContentWrite};
use accord::http::{scope, Api, Auth, HttpStore};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::{ErrorKind, ManualClock};
use http_support::{listen, parts, problem, t0, token, SECRET};
use serde_json::{json, Map, Value};

struct Wire {
    base: String,
    client: reqwest::Client,
    token: String,
    project: String,
}

impl Wire {
    fn url(&self, t: &str, id: Option<&str>) -> String {
        match id {
            Some(id) => format!("{}/cms/api/projects/{}/c/{t}/{id}", self.base, self.project),
            None => format!("{}/cms/api/projects/{}/c/{t}", self.base, self.project),
        }
    }

    async fn send(&self, method: reqwest::Method, url: &str, body: &Value) -> (u16, Value) {
        let res = self
            .client
            .request(method, url)
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap();
        parts(res).await
    }
}

async fn serve<S: HttpStore>(store: Arc<S>, project: &str) -> Wire {
    let clock = Arc::new(ManualClock::new(t0()));
    let api = Api::new(store, clock, Auth::hs256(SECRET).unwrap());
    let (base, client) = listen(api).await;
    Wire {
        base,
        client,
        token: token(scope::ALL, &[project]),
        project: project.to_owned(),
    }
}

/// Three successive `data` of a record of each type (create, PUT, PUT),
/// given the ids the references need.
fn revisions(t: ContentType, notice: &str, consent: &str) -> [Value; 3] {
    match t {
        ContentType::PrivacyNotice => [1, 2, 3].map(|r| {
            json!({"name": format!("Notice r{r}"), "descriptionEn": format!("text {r}"),
                   "revision": r, "status": "PUBLISHED"})
        }),
        ContentType::Consent => [1, 2, 3].map(|r| {
            json!({"name": format!("Marketing r{r}"), "application": "shop",
                   "purposes": ["email", format!("p{r}")], "privacyNoticeRef": notice,
                   "revision": r, "status": "PUBLISHED", "lifespan": 100 * r})
        }),
        // What an acceptance's edits may change: the note, and the status
        // forward (the server's clock, which these tests do not move, is
        // the withdrawal date).
        ContentType::ConsentAcceptance => [
            json!({"consentApplication": "shop", "dataSubject": "u1", "consentId": consent,
                   "purposes": ["email"], "userAgent": "ua-1", "country": "TH",
                   "localIp": "192.0.2.1", "osVersion": "17", "model": "m-1",
                   "deviceFingerprintId": "fp-1", "note": "r1",
                   "acceptanceDate": "2026-06-15T10:00:00Z", "status": "ACCEPTED",
                   "expiredDate": "2027-04-11T10:00:00Z"}),
            json!({"application": "shop", "dataSubject": "u1", "consentId": consent,
                   "acceptanceDate": "2026-06-15T17:00:00+07:00", "status": "ACCEPTED",
                   "note": "r2"}),
            json!({"application": "shop", "dataSubject": "u1", "consentId": consent,
                   "acceptanceDate": "2026-06-15T10:00:00Z", "status": "WITHDRAWN",
                   "withdrawalDate": "2026-06-15T10:00:00Z", "note": "r3"}),
        ],
        ContentType::Purpose => [1, 2, 3].map(|r| {
            json!({"code": "email", "nameEn": format!("Email r{r}"), "nameTh": format!("อีเมล {r}")})
        }),
    }
}

const TYPES: [ContentType; 4] = [
    ContentType::PrivacyNotice,
    ContentType::Consent,
    ContentType::ConsentAcceptance,
    ContentType::Purpose,
];

/// Whether every attribute `sent` names is stored with that value.
fn holds(stored: &Map<String, Value>, sent: &Value) -> bool {
    sent.as_object().unwrap().iter().all(|(k, v)| {
        // The acceptance update form's name of `consentApplication`.
        let k = if k == "application" && !stored.contains_key(k) {
            "consentApplication"
        } else {
            k
        };
        let got = &stored[k];
        // Timestamps are normalized on the way in; compare the instant.
        match (got.as_str(), v.as_str()) {
            (Some(a), Some(b)) if a.contains('T') && b.contains('T') => {
                chrono::DateTime::parse_from_rfc3339(a).ok()
                    == chrono::DateTime::parse_from_rfc3339(b).ok()
            }
            _ => got == v,
        }
    })
}

async fn puts_keep_every_version<S: HttpStore>(store: Arc<S>, project: &str) {
    let w = serve(Arc::clone(&store), project).await;
    let mut notice = String::new();
    let mut consent = String::new();
    for t in TYPES {
        let name = t.as_str();
        let datas = revisions(t, &notice, &consent);
        let (status, created) = w
            .send(
                reqwest::Method::POST,
                &w.url(name, None),
                &json!({"data": datas[0]}),
            )
            .await;
        assert_eq!(status, 201, "{name}: {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        for data in &datas[1..] {
            let (status, body) = w
                .send(
                    reqwest::Method::PUT,
                    &w.url(name, Some(&id)),
                    &json!({ "data": data }),
                )
                .await;
            assert_eq!(status, 200, "{name}: {body}");
        }
        let versions = store.content_versions(project, t, &id).await.unwrap();
        assert_eq!(
            versions.iter().map(|v| v.version).collect::<Vec<_>>(),
            [1, 2, 3],
            "{name}"
        );
        for (v, sent) in versions.iter().zip(&datas) {
            assert!(
                holds(&v.data, sent),
                "{name} v{}: stored {:?}, sent {sent}",
                v.version,
                v.data
            );
            assert_eq!(v.created_date, versions[0].created_date, "{name}");
            assert_eq!(v.created_by, "tester", "{name}");
        }
        // The current version is the last one, over HTTP too.
        let current = store.content(project, t, &id).await.unwrap().unwrap();
        assert_eq!(current.version, 3);
        let res = w
            .client
            .get(w.url(name, Some(&id)))
            .bearer_auth(&w.token)
            .send()
            .await
            .unwrap();
        let (status, body) = parts(res).await;
        assert_eq!(status, 200);
        assert!(
            holds(body["data"].as_object().unwrap(), &datas[2]),
            "{body}"
        );

        // A write against a version that is no longer current is refused,
        // and changes nothing.
        let stale = ContentWrite {
            project_id: project.to_owned(),
            content_type: t,
            id: id.clone(),
            data: datas[0].as_object().unwrap().clone(),
            actor: "late-writer".to_owned(),
            at: t0(),
        };
        for expected in [1, 2] {
            let err = store.replace_content(&stale, expected).await.unwrap_err();
            assert_eq!(
                (err.kind(), err.code()),
                (ErrorKind::Conflict, "stale_version"),
                "{name}"
            );
        }
        assert_eq!(
            store.content_versions(project, t, &id).await.unwrap(),
            versions,
            "{name}: a refused write changed the history"
        );
        match t {
            ContentType::PrivacyNotice => notice = id,
            ContentType::Consent => consent = id,
            _ => {}
        }
    }
}

/// Many PUTs at once on one record, naming no version: the last writer
/// wins, and every writer's version is kept (200 each, nothing lost). A PUT
/// naming a version (`If-Match`, or `version` in the body) that is no
/// longer current gets 409 `stale_version` and changes nothing.
#[allow(clippy::too_many_lines)] // one story, told in order
async fn concurrent_puts_lose_nothing<S: HttpStore>(store: Arc<S>, project: &str) {
    let w = Arc::new(serve(Arc::clone(&store), project).await);
    let res = w
        .client
        .post(w.url("svc-purpose-v1", None))
        .bearer_auth(&w.token)
        .json(&json!({"data": {"code": "email", "nameEn": "v1", "nameTh": "v1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["etag"], "\"1\"");
    let (status, created) = parts(res).await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let w = Arc::clone(&w);
        let url = w.url("svc-purpose-v1", Some(&id));
        tasks.push(tokio::spawn(async move {
            let body =
                json!({"data": {"code": "email", "nameEn": format!("writer {i}"), "nameTh": "x"}});
            let res = w
                .client
                .put(&url)
                .bearer_auth(&w.token)
                .json(&body)
                .send()
                .await
                .unwrap();
            let (status, body) = parts(res).await;
            assert_eq!(status, 200, "no version named, no conflict: {body}");
            i
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        winners.push(t.await.unwrap());
    }
    let versions = store
        .content_versions(project, ContentType::Purpose, &id)
        .await
        .unwrap();
    assert_eq!(versions.len(), 17, "one version per PUT");
    assert_eq!(versions[0].data["nameEn"], "v1");
    let mut written: Vec<String> = versions[1..]
        .iter()
        .map(|v| v.data["nameEn"].as_str().unwrap().to_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = winners.iter().map(|i| format!("writer {i}")).collect();
    expected.sort();
    assert_eq!(written, expected);
    for (n, v) in versions.iter().enumerate() {
        assert_eq!(v.version, i64::try_from(n).unwrap() + 1);
    }

    // Naming a version: the current one succeeds, a stale one is refused.
    let url = w.url("svc-purpose-v1", Some(&id));
    let body = json!({"data": {"code": "email", "nameEn": "named", "nameTh": "x"}});
    let res = w
        .client
        .get(&url)
        .bearer_auth(&w.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["etag"], "\"17\"");
    let put = |if_match: Option<&'static str>, body: Value| {
        let w = Arc::clone(&w);
        let url = url.clone();
        async move {
            let mut req = w.client.put(&url).bearer_auth(&w.token).json(&body);
            if let Some(tag) = if_match {
                req = req.header("if-match", tag);
            }
            req.send().await.unwrap()
        }
    };
    let res = put(Some("\"17\""), body.clone()).await;
    assert_eq!(res.headers()["etag"], "\"18\"");
    assert_eq!(res.status(), 200);
    problem(
        put(Some("\"17\""), body.clone()).await,
        409,
        "stale_version",
    )
    .await;
    let mut stale = body.clone();
    stale["version"] = json!(3);
    problem(put(None, stale).await, 409, "stale_version").await;
    for bad in ["17", "W/\"18\"", "\"x\"", "\"18\", \"19\""] {
        problem(put(Some(bad), body.clone()).await, 400, "invalid_if_match").await;
    }
    let mut disagree = body.clone();
    disagree["version"] = json!(18);
    problem(put(Some("\"17\""), disagree).await, 400, "invalid_if_match").await;
    assert_eq!(
        put(Some("*"), body).await.status(),
        200,
        "* names no version"
    );
    let versions = store
        .content_versions(project, ContentType::Purpose, &id)
        .await
        .unwrap();
    assert_eq!(versions.len(), 19, "refused writes changed nothing");
}

#[tokio::test]
async fn memory_store_keeps_every_version() {
    puts_keep_every_version(Arc::new(MemoryStore::new()), "hist").await;
    concurrent_puts_lose_nothing(Arc::new(MemoryStore::new()), "race").await;
}

#[tokio::test]
async fn sqlite_store_keeps_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    puts_keep_every_version(Arc::clone(&store), "hist").await;
    concurrent_puts_lose_nothing(store, "race").await;
}

#[tokio::test]
async fn postgres_store_keeps_every_version() {
    let Some(url) = pg_support::database_url("the content versions over PostgreSQL") else {
        return;
    };
    // A schema of its own: the database is shared with other checkouts,
    // whose migrations may differ.
    let schema = pg_support::create_schema(&url, "versions", "").await;
    let store = Arc::new(
        accord::store::postgres::PostgresStore::connect(&pg_support::with_schema(&url, &schema))
            .await
            .unwrap(),
    );
    // Projects of their own per run: the database is shared between runs.
    let run = uuid::Uuid::new_v4();
    puts_keep_every_version(Arc::clone(&store), &format!("hist-{run}")).await;
    concurrent_puts_lose_nothing(store, &format!("race-{run}")).await;
}
