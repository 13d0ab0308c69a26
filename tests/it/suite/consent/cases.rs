//! The consent cases of `tests/data/cases/consent/`: events (in hours from
//! [`t0`]) and the state a subject must be in at instants (in minutes), on
//! every store.

use std::collections::HashMap;
use std::sync::Arc;

use accord::store::ConsentStore;
use chrono::Duration;
use serde::Deserialize;
use serde_json::{Map, Value};

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

/// Every case file's states hold after its events.
pub async fn consent_cases_hold<S: ConsentStore + 'static>(store: Arc<S>) {
    for (name, file) in files() {
        let fx = Fx::new(Arc::clone(&store));
        // Consent names to their records' ids, and back.
        let mut ids: HashMap<String, String> = HashMap::new();
        let mut records: HashMap<String, Map<String, Value>> = HashMap::new();
        for event in &file.events {
            let due = t0() + Duration::hours(event.hour());
            assert!(fx.now() <= due, "{name}: events are in time order");
            fx.advance(due - fx.now());
            match event {
                Event::Consent {
                    consent,
                    app,
                    purposes,
                    ..
                } => {
                    let codes: Vec<&str> = purposes.iter().map(String::as_str).collect();
                    let record = fx.consent(app, &codes, None).await;
                    ids.insert(consent.clone(), record.id.clone());
                    records.insert(consent.clone(), record.data.clone());
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
                    fx.accept(&app, subject, &ids[consent], codes.as_deref())
                        .await;
                }
                Event::Revise { consent, .. } => {
                    let data = records.get_mut(consent).unwrap();
                    let next = data["revision"].as_i64().unwrap() + 1;
                    data.insert("revision".into(), next.into());
                    fx.replace("svc-consent-v1", &ids[consent], Value::Object(data.clone()))
                        .await;
                }
                Event::AcceptPurpose {
                    app,
                    subject,
                    purpose,
                    ..
                } => {
                    fx.svc
                        .accept_purpose(&fx.project, Fx::<S>::purpose(app, subject, purpose))
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
                }
                Event::WithdrawPurpose {
                    app,
                    subject,
                    purpose,
                    ..
                } => {
                    fx.svc
                        .withdraw_purpose(&fx.project, Fx::<S>::purpose(app, subject, purpose))
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
                }
            }
        }
        let names: HashMap<&str, &str> = ids
            .iter()
            .map(|(n, id)| (id.as_str(), n.as_str()))
            .collect();
        for want in &file.states {
            let at = t0() + Duration::minutes(want.minute);
            let state = fx
                .svc
                .state_at(&fx.project, &want.subject, &want.app, at)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
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
}
