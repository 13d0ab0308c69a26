use super::*;
use crate::core::consent::validate::{content_data, Form};
use crate::core::consent::{ConsentStatus, ContentType};
use chrono::TimeZone;
use serde_json::json;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

fn in_force(lifespan: Option<i64>) -> InForce {
    InForce {
        consent: Consent {
            id: "c1".into(),
            name: "Marketing".into(),
            description_en: None,
            application: "shop".into(),
            purposes: vec!["email".into(), "sms".into()],
            lifespan,
            privacy_notice_ref: "pn".into(),
            revision: 3,
            status: ConsentStatus::Published,
            ref1: None,
            ref2: None,
            ref3: None,
        },
        revision_since: t0() - Duration::days(1),
        notice: Some(PrivacyNotice {
            id: "pn".into(),
            name: "Notice".into(),
            description_en: None,
            description_th: None,
            status: NoticeStatus::Published,
            revision: 7,
        }),
    }
}

/// An acceptance create body accepted at `t0` with a 30-day lifespan.
fn body() -> Value {
    json!({"dataSubject": "u1", "consentId": "c1", "consentApplication": "shop",
           "acceptanceDate": "2026-03-01T19:00:00+07:00", "status": "ACCEPTED",
           "purposes": ["email"], "expiredDate": "2026-03-31T12:00:00Z", "userAgent": "ua",
           "country": "TH", "localIp": "10.0.0.1", "osVersion": "17", "model": "X",
           "deviceFingerprintId": "fp", "note": ""})
}

fn patch(mut base: Value, p: &Value) -> Value {
    for (k, v) in p.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// The problems (`field:code`) and the data of a create checked at `now`.
fn create(data: &Value, f: &InForce, now: DateTime<Utc>) -> (Vec<String>, Map<String, Value>) {
    let (mut d, mut p) = content_data(ContentType::ConsentAcceptance, Form::Create, data);
    acceptance_create(&mut d, f, now, &mut p);
    let codes = p
        .into_fields()
        .into_iter()
        .map(|f| format!("{}:{}", f.field, f.code))
        .collect();
    (codes, d)
}

#[test]
fn a_create_gets_the_evidence_of_the_consent_in_force() {
    let (p, d) = create(&body(), &in_force(Some(30)), t0());
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(d["consentRevision"], 3);
    assert_eq!(d["privacyNoticeId"], "pn");
    assert_eq!(d["privacyNoticeRevision"], 7);
    assert_eq!(d["receivedDate"], "2026-03-01T12:00:00.000000Z");
    // The same values sent by the client are fine.
    let same = patch(
        body(),
        &json!({"consentRevision": 3, "privacyNoticeId": "pn", "privacyNoticeRevision": 7}),
    );
    assert!(create(&same, &in_force(Some(30)), t0()).0.is_empty());
}

#[test]
#[allow(clippy::too_many_lines)] // a table of cases
fn attacks_on_a_create_are_refused_naming_the_field() {
    let skew = clock_skew();
    let f = in_force(Some(30));
    let never = in_force(None);
    let mut draft = in_force(Some(30));
    draft.consent.status = ConsentStatus::Draft;
    let mut draft_notice = in_force(Some(30));
    draft_notice.notice.as_mut().unwrap().status = NoticeStatus::Draft;
    let mut no_notice = in_force(Some(30));
    no_notice.notice = None;
    let ahead = t0() + skew + Duration::seconds(1);
    let cases: Vec<(&str, Value, &InForce, &[&str])> = vec![
        (
            "forged future revision",
            json!({"consentRevision": 7}),
            &f,
            &["data.consentRevision:evidence_mismatch"],
        ),
        (
            "another notice",
            json!({"privacyNoticeId": "pn-old", "privacyNoticeRevision": 1}),
            &f,
            &[
                "data.privacyNoticeId:evidence_mismatch",
                "data.privacyNoticeRevision:evidence_mismatch",
            ],
        ),
        (
            "chosen receipt time",
            json!({"receivedDate": "2026-02-01T00:00:00Z"}),
            &f,
            &["data.receivedDate:evidence_mismatch"],
        ),
        (
            "a draft",
            json!({}),
            &draft,
            &["data.consentId:consent_not_published"],
        ),
        (
            "a draft notice",
            json!({}),
            &draft_notice,
            &["data.consentId:privacy_notice_not_published"],
        ),
        (
            "no notice",
            json!({}),
            &no_notice,
            &["data.consentId:privacy_notice_not_published"],
        ),
        (
            "another app",
            json!({"consentApplication": "other-app"}),
            &f,
            &["data.consentApplication:consent_not_in_app"],
        ),
        (
            "another purpose",
            json!({"purposes": ["email", "fax"]}),
            &f,
            &["data.purposes[1]:unknown_purpose"],
        ),
        (
            "created withdrawn",
            json!({"status": "WITHDRAWN", "withdrawalDate": "2026-03-01T12:00:00Z"}),
            &f,
            &["data.status:invalid_transition"],
        ),
        (
            "never expires",
            json!({"expiredDate": null}),
            &f,
            &["data.expiredDate:evidence_mismatch"],
        ),
        (
            "far expiry",
            json!({"expiredDate": "9999-12-31T00:00:00Z"}),
            &f,
            &["data.expiredDate:evidence_mismatch"],
        ),
        (
            "expiry without lifespan",
            json!({}),
            &never,
            &["data.expiredDate:evidence_mismatch"],
        ),
        (
            "future-dated",
            json!({"acceptanceDate": format_time(ahead),
            "expiredDate": format_time(ahead + Duration::days(30))}),
            &f,
            &["data.acceptanceDate:in_future"],
        ),
        (
            "back-dated before the revision",
            json!({"acceptanceDate": "2000-01-01T00:00:00Z",
            "expiredDate": "2000-01-31T00:00:00Z"}),
            &f,
            &["data.acceptanceDate:before_revision"],
        ),
    ];
    for (name, p, f, expected) in cases {
        assert_eq!(create(&patch(body(), &p), f, t0()).0, expected, "{name}");
    }
    // Within the skew both ways, and an acceptance without lifespan.
    let edge = |at: DateTime<Utc>| json!({"acceptanceDate": format_time(at), "expiredDate": format_time(at + Duration::days(30))});
    assert!(create(&patch(body(), &edge(t0() + skew)), &f, t0())
        .0
        .is_empty());
    let earliest = f.revision_since - skew;
    assert!(create(&patch(body(), &edge(earliest)), &f, t0())
        .0
        .is_empty());
    let forever = patch(body(), &json!({"expiredDate": null}));
    assert!(create(&forever, &never, t0()).0.is_empty());
}

type Data = Map<String, Value>;

fn stored() -> Map<String, Value> {
    create(&body(), &in_force(Some(30)), t0()).1
}

fn update(b: &Value, current: &Map<String, Value>) -> (Vec<String>, Map<String, Value>) {
    let (d, mut p) = content_data(ContentType::ConsentAcceptance, Form::Update, b);
    let next = acceptance_update(&d, current, t0() + Duration::hours(1), &mut p);
    let codes = p
        .into_fields()
        .into_iter()
        .map(|f| format!("{}:{}", f.field, f.code))
        .collect();
    (codes, next)
}

fn update_form(status: &str) -> Value {
    json!({"dataSubject": "u1", "consentId": "c1", "application": "shop",
           "acceptanceDate": "2026-03-01T12:00:00Z", "status": status,
           "withdrawalDate": "2026-03-01T13:30:00+07:00", "note": "by phone"})
}

#[test]
fn a_withdrawal_keeps_the_evidence_and_takes_the_servers_time() {
    let current = stored();
    let (p, next) = update(&update_form("WITHDRAWN"), &current);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(next["status"], "WITHDRAWN");
    assert_eq!(
        next["withdrawalDate"], "2026-03-01T13:00:00.000000Z",
        "the server's clock"
    );
    assert_eq!(next["note"], "by phone");
    for k in [
        "purposes",
        "expiredDate",
        "consentRevision",
        "privacyNoticeId",
        "privacyNoticeRevision",
        "userAgent",
        "deviceFingerprintId",
        "receivedDate",
        "consentApplication",
    ] {
        assert_eq!(next[k], current[k], "{k} is kept");
    }
    assert!(
        !next.contains_key("application"),
        "the update form's name is not stored"
    );
    // Withdrawn again (a retry): the first withdrawal's date stays.
    let (p, again) = update(&update_form("WITHDRAWN"), &next);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(again["withdrawalDate"], next["withdrawalDate"]);
    // The whole record sent back unchanged but for the note is fine too.
    let mut echo = Value::Object(next.clone());
    echo["note"] = json!("edited");
    echo["application"] = json!("shop");
    assert!(update(&echo, &next).0.is_empty());
}

#[test]
fn attacks_on_an_edit_are_refused_naming_the_field() {
    let accepted = stored();
    let withdrawn = update(&update_form("WITHDRAWN"), &accepted).1;
    let ok = |s: &str| {
        let mut b = update_form(s);
        if s == "ACCEPTED" {
            b["withdrawalDate"] = json!("");
        }
        b
    };
    let cases: Vec<(&str, Value, &Data, &[&str])> = vec![
        (
            "revive",
            ok("ACCEPTED"),
            &withdrawn,
            &["data.status:invalid_transition"],
        ),
        (
            "back-date",
            patch(
                ok("ACCEPTED"),
                &json!({"acceptanceDate": "2000-01-01T00:00:00Z"}),
            ),
            &accepted,
            &["data.acceptanceDate:immutable"],
        ),
        (
            "forward-date",
            patch(
                ok("ACCEPTED"),
                &json!({"acceptanceDate": "2030-01-01T00:00:00Z"}),
            ),
            &accepted,
            &["data.acceptanceDate:immutable"],
        ),
        (
            "move app",
            patch(ok("ACCEPTED"), &json!({"application": "other"})),
            &accepted,
            &["data.application:immutable"],
        ),
        (
            "extend",
            patch(
                ok("ACCEPTED"),
                &json!({"expiredDate": "2099-01-01T00:00:00Z"}),
            ),
            &accepted,
            &["data.expiredDate:immutable"],
        ),
        (
            "erase",
            patch(
                ok("WITHDRAWN"),
                &json!({"purposes": null, "consentRevision": null}),
            ),
            &accepted,
            &["data.consentRevision:immutable", "data.purposes:immutable"],
        ),
        (
            "add",
            patch(ok("ACCEPTED"), &json!({"extra": 1})),
            &accepted,
            &["data.extra:immutable"],
        ),
        (
            "someone else",
            patch(ok("ACCEPTED"), &json!({"dataSubject": "u2"})),
            &accepted,
            &["data.dataSubject:immutable"],
        ),
    ];
    for (name, b, current, expected) in cases {
        assert_eq!(update(&b, current).0, expected, "{name}");
    }
    // Repeating the same instant in another offset is not a change.
    let same = patch(
        ok("ACCEPTED"),
        &json!({"acceptanceDate": "2026-03-01T19:00:00+07:00"}),
    );
    assert!(update(&same, &accepted).0.is_empty());
}

fn consent_data(revision: i64, purposes: &[&str]) -> Map<String, Value> {
    json!({"name": "C", "application": "shop", "purposes": purposes, "privacyNoticeRef": "pn",
           "revision": revision, "status": "PUBLISHED"})
    .as_object()
    .unwrap()
    .clone()
}

fn codes(f: impl FnOnce(&mut Problems)) -> Vec<String> {
    let mut p = Problems::new();
    f(&mut p);
    p.into_fields()
        .into_iter()
        .map(|f| format!("{}:{}", f.field, f.code))
        .collect()
}

#[test]
fn revisions_only_increase_and_guard_what_is_agreed() {
    let v8 = consent_data(8, &["email", "sms"]);
    let cases: Vec<(Map<String, Value>, &[&str])> = vec![
        (consent_data(8, &["sms", "email"]), &[]),
        (consent_data(9, &["email"]), &[]),
        (
            consent_data(7, &["email", "sms"]),
            &["data.revision:revision_decreased"],
        ),
        (
            consent_data(8, &["email", "sms", "push"]),
            &["data.purposes:revision_required"],
        ),
        (
            consent_data(8, &["email"]),
            &["data.purposes:revision_required"],
        ),
    ];
    for (new, expected) in cases {
        assert_eq!(codes(|p| consent_update(&new, &v8, p)), expected, "{new:?}");
    }
    let mut moved = v8.clone();
    moved.insert("application".into(), json!("games"));
    moved.insert("privacyNoticeRef".into(), json!("pn-2"));
    assert_eq!(
        codes(|p| consent_update(&moved, &v8, p)),
        [
            "data.application:revision_required",
            "data.privacyNoticeRef:revision_required"
        ]
    );
    let mut lifespan = v8.clone();
    lifespan.insert("lifespan".into(), json!(30));
    assert!(
        codes(|p| consent_update(&lifespan, &v8, p)).is_empty(),
        "not agreed to"
    );
    let notice = |r: i64| {
        json!({"name": "N", "revision": r, "status": "PUBLISHED"})
            .as_object()
            .unwrap()
            .clone()
    };
    assert_eq!(
        codes(|p| notice_update(&notice(4), &notice(5), p)),
        ["data.revision:revision_decreased"]
    );
    assert!(codes(|p| notice_update(&notice(5), &notice(5), p)).is_empty());
}

#[test]
fn revision_since_is_the_start_of_the_last_run() {
    let version = |n: i64, revision: i64| ContentRecord {
        id: "c".into(),
        project_id: "p".into(),
        content_type: ContentType::Consent,
        version: n,
        seq: n,
        created_by: "a".into(),
        last_modified_by: "a".into(),
        created_date: t0(),
        last_modified_date: t0() + Duration::hours(n),
        data: consent_data(revision, &["email"]),
    };
    let history = [version(1, 1), version(2, 2), version(3, 2), version(4, 2)];
    assert_eq!(revision_since(&history), Some(t0() + Duration::hours(2)));
    assert_eq!(
        revision_since(&history[..1]),
        Some(t0() + Duration::hours(1))
    );
    assert_eq!(revision_since(&[]), None);
}
