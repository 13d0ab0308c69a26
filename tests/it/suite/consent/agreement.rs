//! Property: after any sequence of content-store writes (acceptances
//! created, forged, withdrawn, revived; consent and notice revisions and
//! statuses) and consent-route calls (accept consent, accept and withdraw
//! purpose), over time, `to-accept` and `purpose-options` say exactly what
//! the stored records say, read plainly: the records a `GET` returns, each
//! acceptance's status changes, the purpose events. Every refused write is
//! refused for a rule, changes nothing, and the integrity check finds
//! nothing to report.

use std::collections::HashMap;
use std::sync::Arc;

use accord::consent::{format_time, ContentQuery, ContentRecord, PurposeEvent, Reason};
use accord::store::{ConsentLedger, ConsentStore};
use accord::ErrorKind;
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

use super::Fx;

const APP: &str = "app";
const SUBJECT: &str = "u";
/// Two consents sharing purpose `b`; the first expires after a day.
const PURPOSES: [&[&str]; 2] = [&["a", "b"], &["b", "c"]];
const LIFESPANS: [Option<i64>; 2] = [Some(1), None];
const CODES: [&str; 3] = ["a", "b", "c"];

/// How a content-store acceptance is bent, if at all.
#[derive(Debug, Clone, Copy)]
enum Bend {
    None,
    FutureRevision,
    NeverExpires,
    FutureDate,
    OtherApp,
}

#[derive(Debug, Clone)]
enum Op {
    /// Accept consent `i` through the consent route (all purposes, or the
    /// first one only).
    Accept(usize, bool),
    /// Create an acceptance of consent `i` through the content store.
    Create(usize, Bend),
    /// PUT the `k`-th acceptance (mod their number) to WITHDRAWN or back to
    /// ACCEPTED (update form).
    Edit(usize, bool),
    AcceptPurpose(usize),
    WithdrawPurpose(usize),
    /// Consent `i`: a new revision (with the purposes swapped, or not), or
    /// the same revision with a purpose added (refused).
    Revise(usize, bool),
    SneakPurpose(usize),
    /// Consent `i` to PUBLISHED or DRAFT.
    ConsentStatus(usize, bool),
    /// The notice: a new revision, and PUBLISHED or DRAFT.
    Notice(bool, bool),
    Wait(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let bend = prop_oneof![
        3 => Just(Bend::None),
        1 => Just(Bend::FutureRevision),
        1 => Just(Bend::NeverExpires),
        1 => Just(Bend::FutureDate),
        1 => Just(Bend::OtherApp),
    ];
    prop_oneof![
        3 => (0..2usize, any::<bool>()).prop_map(|(i, all)| Op::Accept(i, all)),
        3 => (0..2usize, bend).prop_map(|(i, b)| Op::Create(i, b)),
        3 => (0..8usize, any::<bool>()).prop_map(|(k, w)| Op::Edit(k, w)),
        2 => (0..3usize).prop_map(Op::AcceptPurpose),
        2 => (0..3usize).prop_map(Op::WithdrawPurpose),
        1 => (0..2usize, any::<bool>()).prop_map(|(i, swap)| Op::Revise(i, swap)),
        1 => (0..2usize).prop_map(Op::SneakPurpose),
        1 => (0..2usize, any::<bool>()).prop_map(|(i, p)| Op::ConsentStatus(i, p)),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(r, p)| Op::Notice(r, p)),
        2 => (0..30i64).prop_map(Op::Wait),
    ]
}

/// Runs the property against a store (each case in its own project).
pub fn views_agree_with_the_records<S: ConsentStore + 'static>(
    rt: &tokio::runtime::Runtime,
    store: &Arc<S>,
) {
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&prop::collection::vec(op(), 1..24), |ops| {
        rt.block_on(check(Arc::clone(store), ops))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

struct World<S> {
    fx: Fx<S>,
    notice: String,
    consents: [String; 2],
    acceptances: Vec<String>,
}

fn expect_refused<T>(r: accord::Result<T>, what: &str) -> Result<(), String> {
    match r {
        Err(e) if e.kind() == ErrorKind::Validation || e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{what}: refused for the wrong reason: {e}")),
        Ok(_) => Err(format!("{what}: accepted")),
    }
}

impl<S: ConsentStore + 'static> World<S> {
    async fn consent(&self, i: usize) -> ContentRecord {
        self.fx
            .svc
            .content(&self.fx.project, "svc-consent-v1", &self.consents[i])
            .await
            .expect("consent")
    }

    /// Whether consent `i` may be accepted now (so a valid write must be
    /// taken and any write refused otherwise).
    async fn offered(&self, i: usize) -> bool {
        let c = self.consent(i).await;
        let n = self
            .fx
            .svc
            .content(&self.fx.project, "svc-privacy-notice-v1", &self.notice)
            .await
            .expect("notice");
        c.data["status"] == "PUBLISHED" && n.data["status"] == "PUBLISHED"
    }

    async fn apply(&mut self, op: &Op) -> Result<(), String> {
        let fx = &self.fx;
        let p = fx.project.clone();
        match *op {
            Op::Accept(i, all) => {
                let current = purposes_now(self, i).await;
                let first: Vec<&str> = current.iter().take(1).map(String::as_str).collect();
                let purposes = (!all).then_some(first.as_slice());
                let r = fx
                    .svc
                    .accept_consent(
                        &p,
                        Fx::<S>::request(APP, SUBJECT, &self.consents[i], purposes),
                        "app",
                    )
                    .await;
                if self.offered(i).await {
                    let a = r.map_err(|e| format!("accept: {e}"))?;
                    self.acceptances.push(a.id);
                } else {
                    expect_refused(r, "accept an unoffered consent")?;
                }
            }
            Op::Create(i, bend) => {
                let now = fx.now();
                let c = self.consent(i).await;
                let lifespan = c.data["lifespan"].as_i64().filter(|d| *d > 0);
                let mut body = json!({"dataSubject": SUBJECT, "consentId": c.id,
                    "consentApplication": APP, "acceptanceDate": now, "status": "ACCEPTED",
                    "purposes": [c.data["purposes"].as_array().and_then(|a| a.last()).cloned()],
                    "expiredDate": lifespan.map(|d| now + Duration::days(d)),
                    "userAgent": "ua", "country": "TH", "localIp": "10.0.0.1", "osVersion": "1",
                    "model": "m", "deviceFingerprintId": "fp", "note": ""});
                match bend {
                    Bend::None => {}
                    Bend::FutureRevision => {
                        body["consentRevision"] =
                            json!(c.data["revision"].as_i64().unwrap_or(1) + 1);
                    }
                    Bend::NeverExpires => body["expiredDate"] = json!("9999-12-31T00:00:00Z"),
                    Bend::FutureDate => {
                        let later = now + Duration::hours(2);
                        body["acceptanceDate"] = json!(later);
                        body["expiredDate"] = json!(lifespan.map(|d| later + Duration::days(d)));
                    }
                    Bend::OtherApp => body["consentApplication"] = json!("other-app"),
                }
                let r = fx
                    .svc
                    .create_content(&p, "svc-consent-acceptance-v1", body, "cms")
                    .await;
                if matches!(bend, Bend::None) && self.offered(i).await {
                    let a = r.map_err(|e| format!("create acceptance: {e}"))?;
                    self.acceptances.push(a.id);
                } else {
                    expect_refused(r, &format!("{bend:?} acceptance"))?;
                }
            }
            Op::Edit(k, withdraw) => {
                if self.acceptances.is_empty() {
                    return Ok(());
                }
                let id = self.acceptances[k % self.acceptances.len()].clone();
                let current = fx
                    .svc
                    .content(&p, "svc-consent-acceptance-v1", &id)
                    .await
                    .expect("acceptance");
                let status = if withdraw { "WITHDRAWN" } else { "ACCEPTED" };
                let body = json!({"dataSubject": SUBJECT, "consentId": current.data["consentId"],
                    "application": APP, "acceptanceDate": current.data["acceptanceDate"],
                    "status": status, "withdrawalDate": if withdraw { json!(fx.now()) } else { json!("") },
                    "note": "edit"});
                let r = fx
                    .svc
                    .replace_content(&p, "svc-consent-acceptance-v1", &id, body, "cms")
                    .await;
                if current.data["status"] == "WITHDRAWN" && !withdraw {
                    expect_refused(r, "revive")?;
                } else {
                    r.map_err(|e| format!("edit {status}: {e}"))?;
                }
            }
            Op::AcceptPurpose(i) => {
                let r = fx
                    .svc
                    .accept_purpose(&p, Fx::<S>::purpose(APP, SUBJECT, CODES[i]))
                    .await;
                let mut offered = false;
                for c in 0..2 {
                    offered |= purposes_now(self, c).await.contains(&CODES[i].to_owned())
                        && self.offered(c).await;
                }
                if offered {
                    r.map_err(|e| format!("accept purpose: {e}"))?;
                } else {
                    expect_refused(r, "accept an unoffered purpose")?;
                }
            }
            Op::WithdrawPurpose(i) => {
                let r = fx
                    .svc
                    .withdraw_purpose(&p, Fx::<S>::purpose(APP, SUBJECT, CODES[i]))
                    .await;
                let mut listed = false;
                for c in 0..2 {
                    listed |= purposes_now(self, c).await.contains(&CODES[i].to_owned());
                }
                if listed {
                    r.map_err(|e| format!("withdraw purpose: {e}"))?;
                } else {
                    expect_refused(r, "withdraw an unknown purpose")?;
                }
            }
            Op::Revise(i, swap) => {
                let mut data = self.consent(i).await.data;
                let revision = data["revision"].as_i64().unwrap_or(1);
                data.insert("revision".into(), json!(revision + 1));
                if swap {
                    let mut purposes = data["purposes"].as_array().cloned().unwrap_or_default();
                    purposes.reverse();
                    if purposes.len() > 1 {
                        purposes.pop();
                    } else {
                        purposes.push(json!("c"));
                        purposes.dedup();
                    }
                    data.insert("purposes".into(), Value::Array(purposes));
                }
                fx.replace("svc-consent-v1", &self.consents[i], Value::Object(data))
                    .await;
            }
            Op::SneakPurpose(i) => {
                let mut data = self.consent(i).await.data;
                let mut purposes = data["purposes"].as_array().cloned().unwrap_or_default();
                purposes.push(json!("sneaked"));
                data.insert("purposes".into(), Value::Array(purposes));
                let r = fx
                    .svc
                    .replace_content(
                        &p,
                        "svc-consent-v1",
                        &self.consents[i],
                        Value::Object(data),
                        "cms",
                    )
                    .await;
                expect_refused(r, "purposes without a new revision")?;
            }
            Op::ConsentStatus(i, published) => {
                let mut data = self.consent(i).await.data;
                let status = if published { "PUBLISHED" } else { "DRAFT" };
                data.insert("status".into(), json!(status));
                fx.replace("svc-consent-v1", &self.consents[i], Value::Object(data))
                    .await;
            }
            Op::Notice(new_revision, published) => {
                let n = fx
                    .svc
                    .content(&p, "svc-privacy-notice-v1", &self.notice)
                    .await
                    .expect("notice");
                let revision = n.data["revision"].as_i64().unwrap_or(1) + i64::from(new_revision);
                let status = if published { "PUBLISHED" } else { "DRAFT" };
                fx.replace(
                    "svc-privacy-notice-v1",
                    &self.notice,
                    json!({"name": "Notice", "revision": revision, "status": status}),
                )
                .await;
            }
            Op::Wait(hours) => fx.advance(Duration::hours(hours)),
        }
        Ok(())
    }
}

/// The current purposes of consent `i`.
async fn purposes_now<S: ConsentStore + 'static>(w: &World<S>, i: usize) -> Vec<String> {
    let c = w.consent(i).await;
    c.data["purposes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One event of a purpose: recorded at, seq, an acceptance (else a
/// withdrawal), its expiry.
type Mark = (DateTime<Utc>, i64, bool, Option<DateTime<Utc>>);

/// One acceptance as its stored versions say: the current data, and when
/// its status last changed and each change.
struct Stored {
    data: Map<String, Value>,
    /// (recorded at, seq, accepted) of each status change, oldest first.
    changes: Vec<(DateTime<Utc>, i64, bool)>,
}

fn text<'a>(d: &'a Map<String, Value>, k: &str) -> &'a str {
    d.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn time(d: &Map<String, Value>, k: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text(d, k))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The views, derived from the records by the rules as the docs state
/// them, compared with the service's.
async fn agree<S: ConsentStore + 'static>(w: &World<S>) -> Result<(), String> {
    let fx = &w.fx;
    let p = &fx.project;
    let now = fx.now();
    let all = |t: &'static str| {
        let q = ContentQuery::default().with_page(0, 1000);
        async move { fx.svc.list_content(p, t, &q).await.expect("list").items }
    };
    let notices: HashMap<String, Map<String, Value>> = all("svc-privacy-notice-v1")
        .await
        .into_iter()
        .map(|r| (r.id, r.data))
        .collect();
    let consents = all("svc-consent-v1").await;
    let mut stored = Vec::new();
    for r in all("svc-consent-acceptance-v1").await {
        let versions = fx
            .svc
            .content_versions(p, "svc-consent-acceptance-v1", &r.id)
            .await
            .expect("versions");
        let mut changes: Vec<(DateTime<Utc>, i64, bool)> = Vec::new();
        let mut last = "";
        for v in &versions {
            let s = text(&v.data, "status");
            if s != last {
                changes.push((v.last_modified_date, v.seq, s == "ACCEPTED"));
            }
            last = s;
        }
        if versions.last().map(|v| &v.data) != Some(&r.data) {
            return Err("GET is not the last version".into());
        }
        stored.push(Stored {
            data: r.data,
            changes,
        });
    }
    let events: Vec<PurposeEvent> = fx
        .svc
        .store()
        .purpose_events(p, SUBJECT, Some(APP))
        .await
        .expect("events");

    let offered = |c: &ContentRecord| {
        let n = notices.get(text(&c.data, "privacyNoticeRef"));
        text(&c.data, "status") == "PUBLISHED"
            && n.is_some_and(|n| text(n, "status") == "PUBLISHED")
    };
    let in_app = |a: &Stored| text(&a.data, "consentApplication") == APP;
    let live = |a: &Stored| {
        text(&a.data, "status") == "ACCEPTED"
            && time(&a.data, "expiredDate").is_none_or(|e| now < e)
    };

    // to-accept, from the records.
    let mut expected = Vec::new();
    for c in consents
        .iter()
        .filter(|c| text(&c.data, "application") == APP && offered(c))
    {
        let notice = &notices[text(&c.data, "privacyNoticeRef")];
        let mine: Vec<&Stored> = stored
            .iter()
            .filter(|a| text(&a.data, "consentId") == c.id && in_app(a))
            .collect();
        let revision_ok = |a: &Stored| a.data["consentRevision"] == c.data["revision"];
        let notice_ok = |a: &Stored| {
            a.data["privacyNoticeId"] == c.data["privacyNoticeRef"]
                && a.data["privacyNoticeRevision"] == notice["revision"]
        };
        if mine
            .iter()
            .any(|a| live(a) && revision_ok(a) && notice_ok(a))
        {
            continue;
        }
        let latest = mine
            .iter()
            .max_by_key(|a| a.changes.last().map(|(t, s, _)| (*t, *s)));
        let reason = match latest {
            None => Reason::New,
            Some(a) if text(&a.data, "status") != "ACCEPTED" => Reason::Withdrawn,
            Some(a) if !revision_ok(a) => Reason::NewRevision,
            Some(a) if !notice_ok(a) => Reason::NewNoticeRevision,
            Some(_) => Reason::Expired,
        };
        expected.push((c.id.clone(), reason));
    }
    let got = fx.to_accept(APP, SUBJECT).await;
    if got != expected {
        return Err(format!("to-accept {got:?}, the records say {expected:?}"));
    }

    // purpose-options, from the records: the latest event of each code.
    let app_consents: Vec<&str> = consents
        .iter()
        .filter(|c| text(&c.data, "application") == APP)
        .map(|c| c.id.as_str())
        .collect();
    let mut expected = Vec::new();
    for c in consents
        .iter()
        .filter(|c| text(&c.data, "application") == APP && offered(c))
    {
        for code in c.data["purposes"].as_array().into_iter().flatten() {
            let code = code.as_str().unwrap_or_default();
            let mut marks: Vec<Mark> = events
                .iter()
                .filter(|e| e.purpose_code == code)
                .map(|e| {
                    (
                        e.recorded_at,
                        e.seq,
                        e.status.as_str() == "ACCEPTED",
                        e.expired_date,
                    )
                })
                .collect();
            for a in &stored {
                let lists = a.data["purposes"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|x| x == code));
                if lists && in_app(a) && app_consents.contains(&text(&a.data, "consentId")) {
                    let expiry = time(&a.data, "expiredDate");
                    marks.extend(a.changes.iter().map(|(t, s, ok)| (*t, *s, *ok, expiry)));
                }
            }
            marks.sort_by_key(|m| (m.0, m.1));
            let accepted = marks
                .last()
                .is_some_and(|(_, _, ok, e)| *ok && e.is_none_or(|e| now < e));
            expected.push((code.to_owned(), accepted));
        }
    }
    let got = fx.flags(APP, SUBJECT).await;
    if got != expected {
        return Err(format!(
            "purpose-options {got:?}, the records say {expected:?}"
        ));
    }

    // Every acceptance shows the rules' evidence: its withdrawal has the
    // server's time, its expiry is acceptanceDate + lifespan.
    for a in &stored {
        if text(&a.data, "status") == "WITHDRAWN" {
            let withdrawn = a.changes.last().map(|(t, _, _)| format_time(*t));
            if withdrawn.as_deref() != Some(text(&a.data, "withdrawalDate")) {
                return Err(format!("withdrawalDate {:?}", a.data["withdrawalDate"]));
            }
        }
    }
    let findings = fx.svc.check_records(p).await.expect("check");
    if !findings.is_empty() {
        return Err(format!("the check reports {findings:#?}"));
    }
    Ok(())
}

async fn check<S: ConsentStore + 'static>(store: Arc<S>, ops: Vec<Op>) -> Result<(), String> {
    let fx = Fx::new(store);
    let notice = fx.notice(1).await;
    let mut consents = Vec::new();
    for i in 0..2 {
        fx.advance(Duration::seconds(1));
        let c = fx
            .create(
                "svc-consent-v1",
                json!({"name": format!("c{i}"), "application": APP, "purposes": PURPOSES[i],
                       "lifespan": LIFESPANS[i], "privacyNoticeRef": notice.id, "revision": 1,
                       "status": "PUBLISHED"}),
            )
            .await;
        consents.push(c.id);
    }
    let mut w = World {
        fx,
        notice: notice.id,
        consents: [consents[0].clone(), consents[1].clone()],
        acceptances: Vec::new(),
    };
    agree(&w).await?;
    for (step, op) in ops.iter().enumerate() {
        w.apply(op)
            .await
            .map_err(|e| format!("step {step} {op:?}: {e}"))?;
        agree(&w)
            .await
            .map_err(|e| format!("after step {step} ({op:?}): {e}"))?;
    }
    Ok(())
}
