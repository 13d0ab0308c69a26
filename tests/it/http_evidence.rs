//! Consent evidence over HTTP, on the memory store, SQLite and PostgreSQL
//! (when `ACCORD_TEST_PG_URL` is set): a subject's history and state at
//! an instant agree with the library (`subject_history`, `state_at`), and
//! the revision history of notices and consents is readable by version;
//! the consent ledger exports, verifies offline, and names the entry that
//! was edited, deleted or moved straight in SQLite or PostgreSQL.
#![cfg(all(feature = "http", feature = "sqlite", feature = "postgres"))]
#![allow(clippy::unwrap_used)]

use crate::http_support;
use crate::pg_support;

use std::sync::Arc;

use accord::consent::erasure::PseudonymKey;
use accord::consent::evidence::HistoryQuery;
use accord::consent::ledger::{verify_jsonl, LedgerHead, ProblemKind};
use accord::consent::{AcceptConsentRequest, ContentRecord, PurposeRequest};
use accord::http::{scope, Api, Auth, HttpStore};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::ManualClock;
use chrono::Duration;
use http_support::{listen, parts, problem, t0, token, SECRET};
use serde_json::{json, Value};

struct Wire<S> {
    base: String,
    client: reqwest::Client,
    token: String,
    project: String,
    api: Api<S>,
    clock: Arc<ManualClock>,
}

impl<S: HttpStore> Wire<S> {
    async fn get(&self, path: &str) -> reqwest::Response {
        self.get_with(path, &self.token).await
    }

    async fn get_with(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    async fn json(&self, path: &str) -> (Value, Option<String>) {
        let res = self.get(path).await;
        let total = res
            .headers()
            .get("x-total-count")
            .map(|v| v.to_str().unwrap().to_owned());
        let (status, body) = parts(res).await;
        assert_eq!(status, 200, "{path}: {body}");
        (body, total)
    }

    fn c(&self, rest: &str) -> String {
        format!("/consent/api/projects/{}{rest}", self.project)
    }

    async fn create(&self, t: &str, data: Value) -> ContentRecord {
        self.api
            .consent()
            .create_content(&self.project, t, data, "admin")
            .await
            .unwrap()
    }

    async fn accept(&self, subject: &str, consent: &str) -> String {
        let req = AcceptConsentRequest {
            app: Some("shop".into()),
            data_subject: Some(subject.into()),
            consent_id: Some(consent.into()),
            purposes: None,
            user_agent: Some("Mozilla/5.0".into()),
            country: Some("TH".into()),
            local_ip: Some("10.1.2.3".into()),
            os_version: Some("17.2".into()),
            model: Some("phone-x".into()),
            device_fingerprint_id: Some(format!("fp-{subject}")),
            note: None,
            ..Default::default()
        };
        self.api
            .consent()
            .accept_consent(&self.project, req, "app")
            .await
            .unwrap()
            .id
    }

    fn advance(&self) {
        self.clock.advance(Duration::hours(1));
    }
}

async fn serve<S: HttpStore>(store: Arc<S>, project: &str) -> Wire<S> {
    let clock = Arc::new(ManualClock::new(t0()));
    let api = Api::new(store, clock.clone(), Auth::hs256(SECRET).unwrap())
        .with_pseudonym_key(PseudonymKey::new(&[42; 32]).unwrap())
        .with_receipt_signer(
            accord::http::receipt::ReceiptSigner::from_seed(&[9; 32]).unwrap(),
            accord::consent::receipt::Controller {
                pii_controller: "Example Co.".into(),
                contact: "privacy@example.com".into(),
                jurisdiction: "TH".into(),
                policy_url: "https://example.com/privacy".into(),
            },
        );
    let (base, client) = listen(api.clone()).await;
    Wire {
        base,
        client,
        token: token(scope::ALL, &[project]),
        project: project.to_owned(),
        api,
        clock,
    }
}

/// Accept, purpose events, a new consent revision, a new notice revision,
/// accept again, withdraw: every route agrees with the library.
#[allow(clippy::too_many_lines)] // one story, told in order
async fn history_and_state_agree<S: HttpStore>(store: Arc<S>, project: &str) {
    let w = serve(store, project).await;
    let notice = w
        .create(
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "revision": 1, "status": "PUBLISHED"}),
        )
        .await;
    let consent = w
        .create(
            "svc-consent-v1",
            json!({"name": "Marketing", "application": "shop", "purposes": ["email", "sms"],
                   "lifespan": 30, "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"}),
        )
        .await;
    w.advance(); // 1h
    let first = w.accept("u1", &consent.id).await;
    w.accept("someone-else", &consent.id).await;
    w.advance(); // 2h
    let purpose = |code: &str| PurposeRequest {
        app: Some("shop".into()),
        data_subject: Some("u1".into()),
        purpose_code: Some(code.into()),
    };
    w.api
        .consent()
        .withdraw_purpose(&w.project, purpose("sms"))
        .await
        .unwrap();
    w.advance(); // 3h
    let mut data = consent.data.clone();
    data.insert("revision".into(), json!(2));
    w.api
        .consent()
        .replace_content(
            &w.project,
            "svc-consent-v1",
            &consent.id,
            Value::Object(data),
            "admin",
        )
        .await
        .unwrap();
    w.advance(); // 4h
    let second = w.accept("u1", &consent.id).await;
    w.advance(); // 5h
    let mut ndata = notice.data.clone();
    ndata.insert("revision".into(), json!(2));
    w.api
        .consent()
        .replace_content(
            &w.project,
            "svc-privacy-notice-v1",
            &notice.id,
            Value::Object(ndata),
            "admin",
        )
        .await
        .unwrap();
    w.advance(); // 6h
    w.api
        .consent()
        .replace_content(
            &w.project,
            "svc-consent-acceptance-v1",
            &first,
            json!({"dataSubject": "u1", "consentId": consent.id, "application": "shop",
                   "acceptanceDate": t0() + Duration::hours(1), "status": "WITHDRAWN",
                   "note": "asked by phone"}),
            "support",
        )
        .await
        .unwrap();
    w.clock.advance(Duration::days(40));

    // History: every event, in order, as the library says.
    let (body, total) = w
        .json(&w.c("/subjects/history?dataSubject=u1&size=100"))
        .await;
    let lib = w
        .api
        .consent()
        .subject_history(
            &w.project,
            "u1",
            &HistoryQuery {
                size: 100,
                ..HistoryQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(body, serde_json::to_value(&lib.items).unwrap());
    assert_eq!(total.as_deref(), Some(lib.total.to_string().as_str()));
    let kinds: Vec<&str> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "ACCEPTED",
            "PURPOSE_WITHDRAWN",
            "RECONSENT_REQUIRED",
            "ACCEPTED",
            "RECONSENT_REQUIRED",
            "RECONSENT_REQUIRED",
            "WITHDRAWN",
            "EXPIRED",
        ],
        "{body:#}"
    );
    let events = body.as_array().unwrap();
    assert_eq!(events[0]["recordId"], first.as_str());
    assert_eq!(events[0]["device"]["localIp"], "10.1.2.3");
    assert_eq!(events[0]["privacyNoticeRevision"], 1);
    assert_eq!(events[2]["reason"], "NEW_REVISION");
    assert_eq!(events[3]["recordId"], second.as_str());
    assert_eq!(events[3]["consentRevision"], 2);
    assert_eq!(events[6]["note"], "asked by phone");
    assert!(
        !body.to_string().contains("someone-else"),
        "another subject's records leaked"
    );

    // Filters and paging.
    let from = (t0() + Duration::hours(4)).to_rfc3339();
    let to = (t0() + Duration::hours(6)).to_rfc3339();
    let path = format!(
        "/subjects/history?dataSubject=u1&app=shop&consentId={}&from={}&to={}&page=0&size=2",
        consent.id,
        urlencode(&from),
        urlencode(&to)
    );
    let (body, total) = w.json(&w.c(&path)).await;
    let lib = w
        .api
        .consent()
        .subject_history(
            &w.project,
            "u1",
            &HistoryQuery {
                app: Some("shop".into()),
                consent_id: Some(consent.id.clone()),
                from: Some(t0() + Duration::hours(4)),
                to: Some(t0() + Duration::hours(6)),
                page: 0,
                size: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(body, serde_json::to_value(&lib.items).unwrap());
    assert_eq!(total.as_deref(), Some("3"));
    assert_eq!(body.as_array().unwrap().len(), 2);
    let (body, _) = w
        .json(&w.c("/subjects/history?dataSubject=u1&app=other"))
        .await;
    assert_eq!(body, json!([]));

    // State at instants, as `state_at` says.
    for hours in [0, 1, 2, 3, 4, 5, 6, 24 * 40] {
        let at = t0() + Duration::hours(hours);
        let (body, total) = w
            .json(&w.c(&format!(
                "/subjects/state?dataSubject=u1&at={}",
                urlencode(&at.to_rfc3339())
            )))
            .await;
        let lib = w
            .api
            .consent()
            .state_at(&w.project, "u1", "shop", at)
            .await
            .unwrap();
        assert_eq!(body, json!([lib]), "at {at}");
        assert_eq!(total.as_deref(), Some("1"));
        let (one, _) = w
            .json(&w.c(&format!(
                "/subjects/state?dataSubject=u1&app=shop&at={}",
                urlencode(&at.to_rfc3339())
            )))
            .await;
        assert_eq!(one, body);
    }
    let at2 = t0() + Duration::hours(2);
    let (body, _) = w
        .json(&w.c(&format!(
            "/subjects/state?dataSubject=u1&at={}",
            urlencode(&at2.to_rfc3339())
        )))
        .await;
    assert_eq!(body[0]["consents"][0]["acceptanceId"], first.as_str());
    assert_eq!(body[0]["purposes"].as_array().unwrap().len(), 1, "{body}");

    // Revisions of notices and consents, all and by number.
    let path = format!(
        "/cms/api/projects/{}/c/svc-consent-v1/{}/versions",
        w.project, consent.id
    );
    let (body, total) = w.json(&path).await;
    assert_eq!(total.as_deref(), Some("2"));
    assert_eq!(body[0]["version"], 1);
    assert_eq!(body[0]["data"]["revision"], 1);
    assert_eq!(body[1]["data"]["revision"], 2);
    assert_eq!(body[1]["id"], consent.id.as_str());
    let (one, _) = w.json(&format!("{path}/2")).await;
    assert_eq!(one, body[1]);
    problem(w.get(&format!("{path}/3")).await, 404, "content_not_found").await;
    problem(w.get(&format!("{path}/0")).await, 400, "invalid_parameter").await;
    problem(w.get(&format!("{path}/x")).await, 400, "invalid_parameter").await;
    let path = format!(
        "/cms/api/projects/{}/c/svc-privacy-notice-v1/{}/versions/1",
        w.project, notice.id
    );
    let (one, _) = w.json(&path).await;
    assert_eq!(one["data"]["revision"], 1);
    problem(
        w.get(&format!(
            "/cms/api/projects/{}/c/svc-consent-v1/nope/versions",
            w.project
        ))
        .await,
        404,
        "content_not_found",
    )
    .await;

    // Bad input: clear problems.
    problem(
        w.get(&w.c("/subjects/history")).await,
        400,
        "invalid_parameter",
    )
    .await;
    problem(
        w.get(&w.c("/subjects/history?dataSubject=u1&from=yesterday"))
            .await,
        400,
        "invalid_parameter",
    )
    .await;
    problem(
        w.get(&w.c("/subjects/history?dataSubject=u1&size=0")).await,
        400,
        "invalid_parameter",
    )
    .await;
    problem(
        w.get(&w.c("/subjects/state?dataSubject=u1&when=now")).await,
        400,
        "invalid_parameter",
    )
    .await;
    let long = "x".repeat(10_000);
    let res = w
        .get(&w.c(&format!("/subjects/state?dataSubject={long}")))
        .await;
    assert!(
        [414, 422].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );
    // The scope: consent.audit, not consent.r.
    let reader = token(&[scope::CONSENT_READ, scope::CMS_READ], &[project]);
    let res = w
        .get_with(&w.c("/subjects/history?dataSubject=u1"), &reader)
        .await;
    assert_eq!(res.status(), 403);
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn memory_history_and_state() {
    history_and_state_agree(Arc::new(MemoryStore::new()), "ev").await;
}

#[tokio::test]
async fn sqlite_history_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evidence.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    history_and_state_agree(store, "ev").await;
}

async fn pg_store(kind: &str) -> Option<Arc<accord::store::postgres::PostgresStore>> {
    let url = pg_support::database_url("consent evidence over PostgreSQL")?;
    let schema = pg_support::create_schema(&url, kind, "").await;
    Some(Arc::new(
        accord::store::postgres::PostgresStore::connect(&pg_support::with_schema(&url, &schema))
            .await
            .unwrap(),
    ))
}

#[tokio::test]
async fn postgres_history_and_state() {
    let Some(store) = pg_store("evidence").await else {
        return;
    };
    let run = uuid::Uuid::new_v4();
    history_and_state_agree(store, &format!("ev-{run}")).await;
}

/// Five ledger entries in `project`: two acceptances, a purpose
/// acceptance, a withdrawal through the content store, a purpose
/// withdrawal.
async fn ledger_story<S: HttpStore>(w: &Wire<S>) {
    ledger_story_of(w, "u1").await;
}

async fn ledger_story_of<S: HttpStore>(w: &Wire<S>, subject: &str) {
    let notice = w
        .create(
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "revision": 1, "status": "PUBLISHED"}),
        )
        .await;
    let consent = w
        .create(
            "svc-consent-v1",
            json!({"name": "Marketing", "application": "shop", "purposes": ["email", "sms"],
                   "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"}),
        )
        .await;
    let first = w.accept(subject, &consent.id).await;
    w.accept("u2", &consent.id).await;
    let purpose = |code: &str| PurposeRequest {
        app: Some("shop".into()),
        data_subject: Some(subject.into()),
        purpose_code: Some(code.into()),
    };
    w.api
        .consent()
        .accept_purpose(&w.project, purpose("sms"))
        .await
        .unwrap();
    w.api
        .consent()
        .replace_content(
            &w.project,
            "svc-consent-acceptance-v1",
            &first,
            json!({"dataSubject": subject, "consentId": consent.id, "application": "shop",
                   "acceptanceDate": t0(), "status": "WITHDRAWN", "note": "call me on 0812345678"}),
            "support",
        )
        .await
        .unwrap();
    w.api
        .consent()
        .withdraw_purpose(&w.project, purpose("email"))
        .await
        .unwrap();
}

/// The ledger over HTTP: five entries, valid, no personal data; the
/// JSON Lines export verifies offline, and one changed byte does not.
async fn ledger_exports_and_verifies<S: HttpStore>(w: &Wire<S>) {
    let (report, _) = w.json(&w.c("/ledger/verify")).await;
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["entries"], 5);
    let res = w.get(&w.c("/ledger?after=0&limit=2")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/jsonl");
    assert_eq!(res.headers()["x-ledger-head-position"], "5");
    let head = LedgerHead {
        position: 5,
        hash: res.headers()["x-ledger-head-hash"]
            .to_str()
            .unwrap()
            .to_owned(),
    };
    let mut file = res.text().await.unwrap();
    assert_eq!(file.lines().count(), 2);
    let rest = w.get(&w.c("/ledger?after=2")).await.text().await.unwrap();
    file.push_str(&rest);
    for personal in ["u1", "u2", "10.1.2.3", "fp-u1", "Mozilla", "phone-x"] {
        assert!(!file.contains(personal), "{personal} in the ledger: {file}");
    }
    let offline = verify_jsonl(file.as_bytes(), Some(&head)).unwrap();
    assert!(offline.valid, "{offline:?}");
    assert_eq!(serde_json::to_value(&offline).unwrap(), report);
    // One changed byte: the entry is named.
    let changed = file.replacen("\"purposeCode\":\"sms\"", "\"purposeCode\":\"smt\"", 1);
    let offline = verify_jsonl(changed.as_bytes(), Some(&head)).unwrap();
    let problem = offline.problem.unwrap();
    assert_eq!((problem.position, problem.kind), (3, ProblemKind::Changed));
    problem_of(w.get(&w.c("/ledger?limit=0")).await).await;
    problem_of(w.get(&w.c("/ledger?after=-1")).await).await;
}

async fn problem_of(res: reqwest::Response) {
    problem(res, 400, "invalid_parameter").await;
}

/// Direct SQL on the ledger table of `project` (the same text for SQLite
/// and PostgreSQL), and the problem the verifier must name.
fn tampering(project: &str) -> Vec<(&'static str, Vec<String>, i64, ProblemKind)> {
    let p = format!("project_id = '{project}'");
    vec![
        (
            "edit",
            vec![format!(
                "UPDATE consent_ledger SET entry = replace(entry, '\"WITHDRAWN\"', '\"ACCEPTED\"') \
                 WHERE {p} AND position = 4"
            )],
            4,
            ProblemKind::Changed,
        ),
        (
            "delete",
            vec![format!(
                "DELETE FROM consent_ledger WHERE {p} AND position = 2"
            )],
            2,
            ProblemKind::Removed,
        ),
        (
            "delete the last",
            vec![format!(
                "DELETE FROM consent_ledger WHERE {p} AND position = 5"
            )],
            5,
            ProblemKind::Removed,
        ),
        (
            "reorder",
            vec![
                format!("UPDATE consent_ledger SET position = 1000 WHERE {p} AND position = 2"),
                format!("UPDATE consent_ledger SET position = 2 WHERE {p} AND position = 4"),
                format!("UPDATE consent_ledger SET position = 4 WHERE {p} AND position = 1000"),
            ],
            4,
            ProblemKind::Reordered,
        ),
    ]
}

/// For each kind of tampering, a project of its own: the story, the SQL,
/// then the verify route names the entry.
async fn tamper_and_verify<S: HttpStore, F, Fut>(store: Arc<S>, run: &str, mut exec: F)
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for (name, _, _, _) in tampering("-") {
        let project = format!("tamper-{}-{run}", name.replace(' ', "-"));
        let w = serve(Arc::clone(&store), &project).await;
        ledger_story(&w).await;
        if name == "edit" {
            ledger_exports_and_verifies(&w).await;
        }
        let (_, sql, position, kind) = tampering(&project)
            .into_iter()
            .find(|t| t.0 == name)
            .unwrap();
        for statement in sql {
            exec(statement).await;
        }
        let (report, _) = w.json(&w.c("/ledger/verify")).await;
        assert_eq!(report["valid"], false, "{name}: {report}");
        assert_eq!(report["problem"]["position"], position, "{name}: {report}");
        assert_eq!(report["problem"]["kind"], kind.as_str(), "{name}: {report}");
    }
}

#[tokio::test]
async fn memory_ledger_verifies() {
    let w = serve(Arc::new(MemoryStore::new()), "ledger").await;
    ledger_story(&w).await;
    ledger_exports_and_verifies(&w).await;
}

#[tokio::test]
async fn sqlite_tampering_is_named() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tamper.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    let url = format!("sqlite://{}", path.display());
    tamper_and_verify(store, "s", |sql| {
        let url = url.clone();
        async move {
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query(&sql).execute(&mut conn).await.unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn postgres_tampering_is_named() {
    use sqlx::Connection;
    let Some(url) = pg_support::database_url("ledger tampering over PostgreSQL") else {
        return;
    };
    let schema = pg_support::create_schema(&url, "tamper", "").await;
    let url = pg_support::with_schema(&url, &schema);
    let store = Arc::new(
        accord::store::postgres::PostgresStore::connect(&url)
            .await
            .unwrap(),
    );
    let run = uuid::Uuid::new_v4().to_string();
    tamper_and_verify(store, &run, |sql| {
        let url = url.clone();
        async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(&sql).execute(&mut conn).await.unwrap();
        }
    })
    .await;
}

/// The identifier of the erasure tests: searched for in the raw rows.
const ALICE: &str = "alice@example.com";

async fn post<S: HttpStore>(w: &Wire<S>, path: &str, body: &Value, token: &str) -> (u16, Value) {
    let res = w
        .client
        .post(format!("{}{path}", w.base))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    parts(res).await
}

/// Export holds every record of the subject and nothing of others; erasure
/// pseudonymizes them, reports it, and the ledger still verifies. Returns
/// the pseudonym.
#[allow(clippy::too_many_lines)] // one story, told in order
async fn export_and_erase<S: HttpStore>(w: &Wire<S>) -> String {
    ledger_story_of(w, ALICE).await;
    let (status, export) = post(
        w,
        &w.c("/subjects/export"),
        &json!({"dataSubject": ALICE}),
        &w.token,
    )
    .await;
    assert_eq!(status, 200, "{export}");
    let lib = w
        .api
        .consent()
        .export_subject(&w.project, ALICE)
        .await
        .unwrap();
    assert_eq!(export, serde_json::to_value(&lib).unwrap());
    assert_eq!(export["format"], "accord-subject-export/1");
    assert_eq!(
        export["acceptances"].as_array().unwrap().len(),
        2,
        "two versions"
    );
    assert_eq!(export["purposeEvents"].as_array().unwrap().len(), 2);
    assert_eq!(export["history"].as_array().unwrap().len(), 4);
    assert_eq!(export["consents"].as_array().unwrap().len(), 1);
    assert_eq!(export["privacyNotices"].as_array().unwrap().len(), 1);
    assert!(
        !export.to_string().contains("u2"),
        "another subject in the export"
    );
    assert!(export.to_string().contains("fp-alice@example.com"));

    // Erasure needs consent.admin.
    let auditor = token(&[scope::CONSENT_AUDIT], &[w.project.as_str()]);
    let (status, _) = post(
        w,
        &w.c("/subjects/erase"),
        &json!({"dataSubject": ALICE}),
        &auditor,
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = post(w, &w.c("/subjects/erase"), &json!({}), &w.token).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("validation_failed")),
        "{body}"
    );
    let (status, report) = post(
        w,
        &w.c("/subjects/erase"),
        &json!({"dataSubject": ALICE}),
        &w.token,
    )
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["erased"],
        json!({"acceptanceVersions": 2, "purposeEvents": 2, "ledgerSalts": 4})
    );
    let pseudonym = report["pseudonym"].as_str().unwrap().to_owned();
    assert!(pseudonym.starts_with("pseudonym:"));
    assert!(report["erasedFields"]
        .as_array()
        .unwrap()
        .contains(&json!("localIp")));

    // Nothing personal is left; the proof is.
    let (_, export) = post(
        w,
        &w.c("/subjects/export"),
        &json!({"dataSubject": ALICE}),
        &w.token,
    )
    .await;
    assert_eq!(export["acceptances"], json!([]));
    assert_eq!(export["purposeEvents"], json!([]));
    let (_, export) = post(
        w,
        &w.c("/subjects/export"),
        &json!({"dataSubject": pseudonym}),
        &w.token,
    )
    .await;
    let text = export.to_string();
    assert!(!text.contains(ALICE), "{text}");
    assert!(
        !text.contains("10.1.2.3") && !text.contains("0812345678"),
        "{text}"
    );
    let acceptances = export["acceptances"].as_array().unwrap();
    assert_eq!(acceptances.len(), 2);
    assert_eq!(acceptances[0]["data"]["dataSubject"], pseudonym.as_str());
    assert_eq!(acceptances[0]["data"]["localIp"], "");
    assert_eq!(acceptances[0]["data"]["consentRevision"], 1);
    assert_eq!(acceptances[0]["data"]["country"], "TH");
    assert_eq!(acceptances[1]["data"]["status"], "WITHDRAWN");
    let (history, _) = w
        .json(&w.c(&format!(
            "/subjects/history?dataSubject={}",
            urlencode(&pseudonym)
        )))
        .await;
    assert_eq!(history.as_array().unwrap().len(), 4, "{history}");
    let (report, _) = w.json(&w.c("/ledger/verify")).await;
    assert_eq!(
        (report["valid"].clone(), report["entries"].clone()),
        (json!(true), json!(5)),
        "{report}"
    );
    // Erasing again, or the pseudonym, changes nothing.
    let (_, again) = post(
        w,
        &w.c("/subjects/erase"),
        &json!({"dataSubject": ALICE}),
        &w.token,
    )
    .await;
    assert_eq!(
        again["erased"],
        json!({"acceptanceVersions": 0, "purposeEvents": 0, "ledgerSalts": 0})
    );
    assert_eq!(again["pseudonym"], pseudonym.as_str());
    pseudonym
}

#[tokio::test]
async fn memory_export_and_erasure() {
    let w = serve(Arc::new(MemoryStore::new()), "erase").await;
    export_and_erase(&w).await;
    // Without a key, erasure is refused and changes nothing.
    let api = Api::new(
        Arc::new(MemoryStore::new()),
        w.clock.clone(),
        Auth::hs256(SECRET).unwrap(),
    );
    let err = api.consent().erase_subject("p", ALICE).await.unwrap_err();
    assert_eq!(err.code(), "erasure_not_configured");
}

#[tokio::test]
async fn sqlite_erasure_leaves_no_identifier_in_the_rows() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("erase.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    let w = serve(store, "erase").await;
    export_and_erase(&w).await;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let mut all = String::new();
    for sql in [
        "SELECT project_id || id || data || number_keys || created_by || last_modified_by FROM content_version",
        "SELECT project_id || id || data_subject || app || purpose_code || coalesce(consent_id, '') FROM purpose_event",
        "SELECT project_id || record_id || entry || coalesce(salt, '') FROM consent_ledger",
        "SELECT project_id || hash FROM consent_ledger_head",
        "SELECT project_id || data_subject || record_id || app || event FROM consent_history",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap();
        assert!(!rows.is_empty(), "{sql}");
        all.push_str(&rows.join("\n"));
    }
    assert!(all.contains("u2"), "the search sees the rows");
    assert!(!all.contains(ALICE), "the identifier is still in a row");
    assert!(!all.contains("0812345678"), "a note is still in a row");
}

#[tokio::test]
async fn postgres_erasure_leaves_no_identifier_in_the_rows() {
    use sqlx::Connection;
    let Some(url) = pg_support::database_url("erasure over PostgreSQL") else {
        return;
    };
    let schema = pg_support::create_schema(&url, "erase", "").await;
    let url = pg_support::with_schema(&url, &schema);
    let store = Arc::new(
        accord::store::postgres::PostgresStore::connect(&url)
            .await
            .unwrap(),
    );
    let w = serve(store, "erase").await;
    export_and_erase(&w).await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut all = String::new();
    for table in [
        "content_version",
        "purpose_event",
        "consent_ledger",
        "consent_ledger_head",
        "consent_history",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(&format!("SELECT t::text FROM {table} t"))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert!(!rows.is_empty(), "{table}");
        all.push_str(&rows.join("\n"));
    }
    assert!(all.contains("u2"), "the search sees the rows");
    assert!(!all.contains(ALICE), "the identifier is still in a row");
    assert!(!all.contains("0812345678"), "a note is still in a row");
}

/// Receipts: fetched again byte for byte, signed with the published key,
/// in the ledger; one changed byte fails.
async fn receipts_verify<S: HttpStore>(store: Arc<S>, project: &str) {
    use accord::http::receipt::{receipt_in_ledger, verify_receipt, ReceiptError};
    let w = serve(store, project).await;
    ledger_story(&w).await;
    let (history, _) = w.json(&w.c("/subjects/history?dataSubject=u1")).await;
    let acceptance = history[0]["recordId"].as_str().unwrap().to_owned();
    let (signed, _) = w
        .json(&w.c(&format!("/receipts/{acceptance}?version=1")))
        .await;
    let (again, _) = w
        .json(&w.c(&format!("/receipts/{acceptance}?version=1")))
        .await;
    assert_eq!(signed, again, "a receipt is fetched again unchanged");
    let (latest, _) = w.json(&w.c(&format!("/receipts/{acceptance}"))).await;
    assert_eq!(latest["receipt"]["status"], "WITHDRAWN");
    assert_eq!(latest["receiptId"], format!("{acceptance}.2"));
    let receipt = &signed["receipt"];
    assert_eq!(receipt["version"], "KI-CR-v1.1.0");
    assert_eq!(receipt["status"], "ACCEPTED");
    assert_eq!(receipt["jurisdiction"], "TH");
    assert_eq!(receipt["piiControllers"][0]["piiController"], "Example Co.");
    assert_eq!(receipt["services"][0]["service"], "shop");
    assert_eq!(receipt["services"][0]["purposes"][1]["purpose"], "sms");
    assert_eq!(receipt["consentRevision"], 1);
    assert_eq!(receipt["privacyNoticeRevision"], 1);
    assert_eq!(receipt["ledgerPosition"], 1);
    assert!(!signed.to_string().contains("u1"), "{signed}");

    // The published key verifies it; the ledger export contains it.
    let res = w
        .client
        .get(format!("{}/.well-known/jwks.json", w.base))
        .send()
        .await
        .unwrap();
    let (status, jwks) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(jwks["keys"][0]["crv"], "Ed25519");
    let x = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        jwks["keys"][0]["x"].as_str().unwrap(),
    )
    .unwrap();
    let jws = signed["jws"].as_str().unwrap();
    let checked = verify_receipt(jws, &x).unwrap();
    assert_eq!(serde_json::to_value(&checked).unwrap(), *receipt);
    let file = w.get(&w.c("/ledger")).await.text().await.unwrap();
    receipt_in_ledger(&checked, file.lines(), None).unwrap();

    // One changed byte, anywhere: refused.
    for i in [0, jws.len() / 2, jws.len() - 2] {
        let mut bytes = jws.as_bytes().to_vec();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(bytes).unwrap();
        assert!(verify_receipt(&forged, &x).is_err(), "byte {i} changed");
    }
    // A receipt whose ledger entry was changed is not in the ledger.
    let changed = file.replacen("\"status\":\"ACCEPTED\"", "\"status\":\"WITHDRAWN\"", 1);
    assert!(matches!(
        receipt_in_ledger(&checked, changed.lines(), None),
        Err(ReceiptError::NotInLedger(_))
    ));
    let mut other = checked.clone();
    other.ledger_position = 2;
    assert!(receipt_in_ledger(&other, file.lines(), None).is_err());
    problem(
        w.get(&w.c("/receipts/nope")).await,
        404,
        "content_not_found",
    )
    .await;
    problem(
        w.get(&w.c(&format!("/receipts/{acceptance}?version=0")))
            .await,
        400,
        "invalid_parameter",
    )
    .await;

    let consent_id = receipt["consentId"].as_str().unwrap();
    acceptance_names_its_receipt(&w, consent_id).await;
}

/// The acceptance route names the receipt of what it recorded.
async fn acceptance_names_its_receipt<S: HttpStore>(w: &Wire<S>, consent_id: &str) {
    let res = w
        .client
        .post(format!(
            "{}/bff/api/consent/projects/{}/consent-acceptance",
            w.base, w.project
        ))
        .bearer_auth(&w.token)
        .json(
            &json!({"app": "shop", "dataSubject": "u9", "consentId": consent_id,
                       "userAgent": "Mozilla/5.0", "country": "TH", "localIp": "10.0.0.9",
                       "osVersion": "17", "model": "x", "deviceFingerprintId": "fp-9"}),
        )
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (receipt_id, link) = (header("consent-receipt-id"), header("link"));
    let (status, accepted) = parts(res).await;
    assert_eq!(status, 201, "{accepted}");
    let (receipt_id, link) = (receipt_id.unwrap(), link.unwrap());
    let id = accepted["id"].as_str().unwrap();
    assert_eq!(receipt_id, format!("{id}.1"));
    let path = w.c(&format!("/receipts/{id}?version=1"));
    assert_eq!(link, format!("<{path}>; rel=\"receipt\""));
    let (fetched, _) = w.json(&path).await;
    assert_eq!(fetched["receiptId"], receipt_id);
}

#[tokio::test]
async fn memory_receipts_verify() {
    receipts_verify(Arc::new(MemoryStore::new()), "receipts").await;
}

#[tokio::test]
async fn sqlite_receipts_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    receipts_verify(store, "receipts").await;
}
