//! The consent cases of `tests/data/cases/consent/`: events (in hours from
//! [`t0`]) and the state a subject must be in at instants (in minutes), on
//! every store, through the service and through the HTTP router alike.

use std::collections::HashMap;
use std::sync::Arc;

use accord::consent::{PurposeRequest, SubjectState};
use accord::store::ConsentStore;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{t0, Fx};

#[derive(Debug, Deserialize)]
struct CaseFile {
    events: Vec<Event>,
    states: Vec<State>,
}

/// One event, made when the clock reads `hour`.
#[derive(Debug, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
enum Event {
    /// A published consent named `consent` (its notice at revision 4).
    Consent {
        hour: i64,
        consent: String,
        app: String,
        purposes: Vec<String>,
    },
    /// An acceptance of the consent named `consent`.
    Accept {
        hour: i64,
        consent: String,
        subject: String,
        purposes: Option<Vec<String>>,
    },
    /// The consent's next revision, through the content store.
    Revise { hour: i64, consent: String },
    AcceptPurpose {
        hour: i64,
        app: String,
        subject: String,
        purpose: String,
    },
    WithdrawPurpose {
        hour: i64,
        app: String,
        subject: String,
        purpose: String,
    },
}

impl Event {
    fn hour(&self) -> i64 {
        match self {
            Event::Consent { hour, .. }
            | Event::Accept { hour, .. }
            | Event::Revise { hour, .. }
            | Event::AcceptPurpose { hour, .. }
            | Event::WithdrawPurpose { hour, .. } => *hour,
        }
    }
}

/// What `subject` had agreed to in `app` at `minute`: consents as
/// `<name>@<revision accepted>`, purposes by code.
#[derive(Debug, Deserialize)]
struct State {
    minute: i64,
    app: String,
    subject: String,
    consents: Vec<String>,
    purposes: Vec<String>,
}

fn files() -> Vec<(String, CaseFile)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cases/consent");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let file =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), file)
        })
        .collect()
}

/// What makes a case's events and reads its states: the service
/// ([`Fx`]) or the HTTP router over the same store ([`Router`]).
trait Runner {
    fn now(&self) -> DateTime<Utc>;
    fn advance(&self, by: Duration);
    /// Creates content: its id and data.
    async fn create(&self, t: &str, data: Value) -> (String, Map<String, Value>);
    async fn replace(&self, t: &str, id: &str, data: Value);
    async fn accept(&self, app: &str, subject: &str, consent_id: &str, purposes: Option<&[&str]>);
    /// Accepts (`true`) or withdraws a purpose.
    async fn purpose(&self, accept: bool, request: PurposeRequest);
    async fn state(&self, subject: &str, app: &str, at: DateTime<Utc>) -> SubjectState;
}

impl<S: ConsentStore + 'static> Runner for Fx<S> {
    fn now(&self) -> DateTime<Utc> {
        Fx::now(self)
    }

    fn advance(&self, by: Duration) {
        Fx::advance(self, by);
    }

    async fn create(&self, t: &str, data: Value) -> (String, Map<String, Value>) {
        let record = Fx::create(self, t, data).await;
        (record.id, record.data)
    }

    async fn replace(&self, t: &str, id: &str, data: Value) {
        Fx::replace(self, t, id, data).await;
    }

    async fn accept(&self, app: &str, subject: &str, consent_id: &str, purposes: Option<&[&str]>) {
        Fx::accept(self, app, subject, consent_id, purposes).await;
    }

    async fn purpose(&self, accept: bool, request: PurposeRequest) {
        let done = if accept {
            self.svc.accept_purpose(&self.project, request).await
        } else {
            self.svc.withdraw_purpose(&self.project, request).await
        };
        done.unwrap();
    }

    async fn state(&self, subject: &str, app: &str, at: DateTime<Utc>) -> SubjectState {
        self.svc
            .state_at(&self.project, subject, app, at)
            .await
            .unwrap()
    }
}

/// Every case file's states hold after its events, through the service.
pub async fn consent_cases_hold<S: ConsentStore + 'static>(store: Arc<S>) {
    for (name, file) in files() {
        run(&name, &file, &Fx::new(Arc::clone(&store))).await;
    }
}

/// Every case file's states hold after its events, through the HTTP
/// router over `store`: content through `/cms`, acceptances and purposes
/// through `/bff`, states from `/consent/api/…/subjects/state`.
#[cfg(feature = "http")]
pub async fn consent_cases_hold_through_the_router<S: accord::http::HttpStore>(store: Arc<S>) {
    for (name, file) in files() {
        let router = crate::http_support::serve_store(Arc::clone(&store), t0()).await;
        run(&name, &file, &router).await;
    }
}

#[cfg(feature = "http")]
impl<S: accord::http::HttpStore> Runner for crate::http_support::Served<S> {
    fn now(&self) -> DateTime<Utc> {
        accord::Clock::now(&*self.clock)
    }

    fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    async fn create(&self, t: &str, data: Value) -> (String, Map<String, Value>) {
        let (status, body) = self
            .send(reqwest::Method::POST, &self.cms(t), json!({ "data": data }))
            .await;
        assert_eq!(status, 201, "create {t}: {body}");
        let Value::Object(data) = body["data"].clone() else {
            panic!("create {t}: {body}");
        };
        (body["id"].as_str().unwrap().to_owned(), data)
    }

    async fn replace(&self, t: &str, id: &str, data: Value) {
        let (status, body) = self
            .send(
                reqwest::Method::PUT,
                &self.cms(&format!("{t}/{id}")),
                json!({ "data": data }),
            )
            .await;
        assert_eq!(status, 200, "replace {t}: {body}");
    }

    async fn accept(&self, app: &str, subject: &str, consent_id: &str, purposes: Option<&[&str]>) {
        let request = Fx::<S>::request(app, subject, consent_id, purposes);
        let (status, body) = self
            .send(
                reqwest::Method::POST,
                &self.bff("/consent-acceptance"),
                serde_json::to_value(request).unwrap(),
            )
            .await;
        assert_eq!(status, 201, "accept: {body}");
    }

    async fn purpose(&self, accept: bool, request: PurposeRequest) {
        let route = if accept {
            "/purpose-acceptance"
        } else {
            "/purpose-withdrawal"
        };
        let (status, body) = self
            .send(
                reqwest::Method::POST,
                &self.bff(route),
                serde_json::to_value(request).unwrap(),
            )
            .await;
        assert!((200..300).contains(&status), "{route}: {status} {body}");
    }

    async fn state(&self, subject: &str, app: &str, at: DateTime<Utc>) -> SubjectState {
        let instant = at.to_rfc3339().replace('+', "%2B");
        let (status, body) = self
            .fetch(&self.consent(&format!(
                "/subjects/state?dataSubject={subject}&app={app}&at={instant}"
            )))
            .await;
        assert_eq!(status, 200, "state: {body}");
        let states: Vec<SubjectState> = serde_json::from_value(body).unwrap();
        assert!(states.len() <= 1, "one application asked: {states:?}");
        states.into_iter().next().unwrap_or_else(|| SubjectState {
            application: app.to_owned(),
            data_subject: subject.to_owned(),
            at,
            consents: Vec::new(),
            purposes: Vec::new(),
        })
    }
}

fn purpose_request(app: &str, subject: &str, code: &str) -> PurposeRequest {
    PurposeRequest {
        app: Some(app.into()),
        data_subject: Some(subject.into()),
        purpose_code: Some(code.into()),
    }
}

/// Makes `file`'s events through `runner`, then checks its states.
async fn run(name: &str, file: &CaseFile, runner: &impl Runner) {
    // Consent names to their records' ids, and back.
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut records: HashMap<String, Map<String, Value>> = HashMap::new();
    for event in &file.events {
        let due = t0() + Duration::hours(event.hour());
        assert!(runner.now() <= due, "{name}: events are in time order");
        runner.advance(due - runner.now());
        match event {
            Event::Consent {
                consent,
                app,
                purposes,
                ..
            } => {
                // A published consent of `app` with its own privacy
                // notice (revision 4), as `Fx::consent` makes them.
                let (notice, _) = runner
                    .create(
                        "svc-privacy-notice-v1",
                        json!({"name": "Privacy", "descriptionEn": "How we use data",
                               "revision": 4, "status": "PUBLISHED"}),
                    )
                    .await;
                let (id, data) = runner
                    .create(
                        "svc-consent-v1",
                        json!({"name": format!("{app} consent"), "descriptionEn": "Please agree",
                               "application": app, "purposes": purposes, "lifespan": null,
                               "privacyNoticeRef": notice, "revision": 1,
                               "status": "PUBLISHED", "ref1": "r1"}),
                    )
                    .await;
                ids.insert(consent.clone(), id);
                records.insert(consent.clone(), data);
            }
            Event::Accept {
                consent,
                subject,
                purposes,
                ..
            } => {
                let data = &records[consent];
                let app = data["application"].as_str().unwrap().to_owned();
                let codes: Option<Vec<&str>> = purposes
                    .as_ref()
                    .map(|p| p.iter().map(String::as_str).collect());
                runner
                    .accept(&app, subject, &ids[consent], codes.as_deref())
                    .await;
            }
            Event::Revise { consent, .. } => {
                let data = records.get_mut(consent).unwrap();
                let next = data["revision"].as_i64().unwrap() + 1;
                data.insert("revision".into(), next.into());
                runner
                    .replace("svc-consent-v1", &ids[consent], Value::Object(data.clone()))
                    .await;
            }
            Event::AcceptPurpose {
                app,
                subject,
                purpose,
                ..
            } => {
                runner
                    .purpose(true, purpose_request(app, subject, purpose))
                    .await;
            }
            Event::WithdrawPurpose {
                app,
                subject,
                purpose,
                ..
            } => {
                runner
                    .purpose(false, purpose_request(app, subject, purpose))
                    .await;
            }
        }
    }
    let names: HashMap<&str, &str> = ids
        .iter()
        .map(|(n, id)| (id.as_str(), n.as_str()))
        .collect();
    for want in &file.states {
        let at = t0() + Duration::minutes(want.minute);
        let state = runner.state(&want.subject, &want.app, at).await;
        let consents: Vec<String> = state
            .consents
            .iter()
            .map(|a| {
                let revision = a.consent_revision.map_or("-".to_owned(), |r| r.to_string());
                format!(
                    "{}@{revision}",
                    names.get(a.consent_id.as_str()).unwrap_or(&"?")
                )
            })
            .collect();
        let purposes: Vec<String> = state.purposes.iter().map(|p| p.code.clone()).collect();
        let what = format!(
            "{name}: {} in {} at minute {}",
            want.subject, want.app, want.minute
        );
        assert_eq!(consents, want.consents, "{what}: consents");
        assert_eq!(purposes, want.purposes, "{what}: purposes");
    }
}
