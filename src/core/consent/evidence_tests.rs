use chrono::{Duration, TimeZone, Utc};
use serde_json::{json, Value};

use super::*;
use crate::core::consent::content::{format_time, ContentType};

fn t(h: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::hours(h)
}

fn record(
    t_: ContentType,
    id: &str,
    version: i64,
    seq: i64,
    at: DateTime<Utc>,
    data: Value,
) -> ContentRecord {
    let Value::Object(data) = data else {
        unreachable!()
    };
    ContentRecord {
        id: id.into(),
        project_id: "p".into(),
        content_type: t_,
        version,
        seq,
        created_by: "a".into(),
        last_modified_by: "a".into(),
        created_date: at,
        last_modified_date: at,
        data,
    }
}

fn acceptance(
    version: i64,
    seq: i64,
    at: DateTime<Utc>,
    status: &str,
    expired: Option<DateTime<Utc>>,
) -> ContentRecord {
    record(
        ContentType::ConsentAcceptance,
        "a1",
        version,
        seq,
        at,
        json!({"dataSubject": "u1", "consentId": "c1", "consentApplication": "shop", "status": status,
               "purposes": ["email"], "consentRevision": 1, "privacyNoticeId": "n1", "privacyNoticeRevision": 2,
               "acceptanceDate": format_time(t(1)), "expiredDate": expired.map(format_time),
               "localIp": "10.0.0.1", "note": ""}),
    )
}

fn kinds(events: &[SubjectEvent]) -> Vec<(&str, DateTime<Utc>)> {
    events.iter().map(|e| (e.kind.as_str(), e.at)).collect()
}

#[test]
fn stored_and_derived_events_in_order() {
    let acc = [
        acceptance(1, 10, t(1), "ACCEPTED", Some(t(10))),
        acceptance(2, 12, t(3), "ACCEPTED", Some(t(10))),
    ];
    let consent = |v: i64, seq: i64, at, rev: i64| {
        record(
            ContentType::Consent,
            "c1",
            v,
            seq,
            at,
            json!({"revision": rev}),
        )
    };
    let mut consents = Versions::new();
    consents.insert(
        "c1".into(),
        vec![
            consent(1, 1, t(0), 1),
            consent(2, 11, t(2), 2),
            consent(3, 13, t(4), 3),
        ],
    );
    let purpose = PurposeEvent {
        id: "e1".into(),
        project_id: "p".into(),
        data_subject: "u1".into(),
        app: "shop".into(),
        purpose_code: "sms".into(),
        status: AcceptanceStatus::Withdrawn,
        consent_id: None,
        acceptance_date: None,
        expired_date: None,
        withdrawal_date: Some(t(5)),
        recorded_at: t(5),
        seq: 14,
    };
    let events = subject_events(&acc, &[purpose], &consents, &Versions::new(), t(20));
    assert_eq!(
        kinds(&events),
        [
            ("ACCEPTED", t(1)),
            ("RECONSENT_REQUIRED", t(2)),
            ("UPDATED", t(3)),
            ("PURPOSE_WITHDRAWN", t(5)),
            ("EXPIRED", t(10))
        ]
    );
    assert_eq!(events[1].reason, Some(Reason::NewRevision));
    assert_eq!(events[1].new_revision, Some(2));
    assert_eq!(events[0].device.as_ref().unwrap().local_ip, "10.0.0.1");
    assert_eq!(events[0].privacy_notice_revision, Some(2));
    // Not expired yet at t(9); derived events never lie in the future.
    let events = subject_events(&acc, &[], &consents, &Versions::new(), t(9));
    assert!(!events.iter().any(|e| e.kind == EventKind::Expired));
}

#[test]
fn a_withdrawal_ends_what_can_be_derived() {
    let acc = [
        acceptance(1, 10, t(1), "ACCEPTED", Some(t(10))),
        acceptance(2, 12, t(3), "WITHDRAWN", Some(t(10))),
    ];
    let mut notices = Versions::new();
    notices.insert(
        "n1".into(),
        vec![record(
            ContentType::PrivacyNotice,
            "n1",
            1,
            1,
            t(4),
            json!({"revision": 3}),
        )],
    );
    let events = subject_events(&acc, &[], &Versions::new(), &notices, t(20));
    assert_eq!(kinds(&events), [("ACCEPTED", t(1)), ("WITHDRAWN", t(3))]);
}

#[test]
fn queries_filter_and_page() {
    let acc = [
        acceptance(1, 10, t(1), "ACCEPTED", None),
        acceptance(2, 12, t(3), "WITHDRAWN", None),
    ];
    let events = subject_events(&acc, &[], &Versions::new(), &Versions::new(), t(20));
    let q = HistoryQuery {
        from: Some(t(2)),
        ..HistoryQuery::default()
    };
    assert_eq!(
        kinds(&q.page_of(events.clone()).items),
        [("WITHDRAWN", t(3))]
    );
    let q = HistoryQuery {
        to: Some(t(3)),
        ..HistoryQuery::default()
    };
    assert_eq!(q.page_of(events.clone()).total, 1);
    let q = HistoryQuery {
        app: Some("other".into()),
        ..HistoryQuery::default()
    };
    assert_eq!(q.page_of(events.clone()).total, 0);
    let q = HistoryQuery {
        page: 1,
        size: 1,
        ..HistoryQuery::default()
    };
    let page = q.page_of(events);
    assert_eq!(
        (page.total, kinds(&page.items)),
        (2, vec![("WITHDRAWN", t(3))])
    );
}
