use super::*;
use crate::core::consent::{ConsentStatus, NoticeStatus};
use chrono::{Duration, TimeZone};
use proptest::prelude::*;

fn t(h: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::hours(h)
}

/// The privacy notice `pn` at `revision`.
fn notice(revision: i64, status: NoticeStatus) -> PrivacyNotice {
    PrivacyNotice {
        id: "pn".into(),
        name: "Notice".into(),
        description_en: None,
        description_th: None,
        status,
        revision,
    }
}

fn consent(id: &str, revision: i64, purposes: &[&str]) -> Consent {
    Consent {
        id: id.into(),
        name: id.into(),
        description_en: None,
        application: "app".into(),
        purposes: purposes.iter().map(|p| (*p).to_owned()).collect(),
        lifespan: None,
        privacy_notice_ref: "pn".into(),
        revision,
        status: ConsentStatus::Published,
        ref1: None,
        ref2: None,
        ref3: None,
    }
}

/// Builds versions of acceptances with a running `seq`.
#[derive(Default)]
struct Log {
    seq: i64,
    versions: Vec<AcceptanceVersion>,
    events: Vec<PurposeEvent>,
}

impl Log {
    fn accept(
        &mut self,
        id: &str,
        consent: &str,
        rev: i64,
        purposes: &[&str],
        at: i64,
        expires: Option<i64>,
    ) {
        self.seq += 1;
        self.versions.push(AcceptanceVersion {
            id: id.into(),
            version: 1,
            seq: self.seq,
            recorded_at: t(at),
            data_subject: "s".into(),
            consent_id: consent.into(),
            status: AcceptanceStatus::Accepted,
            acceptance_date: Some(t(at)),
            expired_date: expires.map(t),
            withdrawal_date: None,
            purposes: Some(purposes.iter().map(|p| (*p).to_owned()).collect()),
            consent_revision: Some(rev),
            privacy_notice_id: Some("pn".into()),
            privacy_notice_revision: Some(3),
            consent_application: Some("app".into()),
        });
    }

    /// A content-store PUT: the update form, so purposes, expiry and pins are null.
    fn put(&mut self, id: &str, status: AcceptanceStatus, at: i64) {
        let last = self
            .versions
            .iter()
            .filter(|v| v.id == id)
            .max_by_key(|v| v.version)
            .cloned()
            .expect("acceptance exists");
        self.seq += 1;
        self.versions.push(AcceptanceVersion {
            version: last.version + 1,
            seq: self.seq,
            recorded_at: t(at),
            withdrawal_date: (status == AcceptanceStatus::Withdrawn).then(|| t(at)),
            status,
            expired_date: None,
            purposes: None,
            consent_revision: None,
            privacy_notice_id: None,
            privacy_notice_revision: None,
            ..last
        });
    }

    fn purpose(&mut self, code: &str, accepted: bool, at: i64, expires: Option<i64>) {
        self.seq += 1;
        self.events.push(PurposeEvent {
            id: format!("e{}", self.seq),
            project_id: "p".into(),
            data_subject: "s".into(),
            app: "app".into(),
            purpose_code: code.into(),
            status: if accepted {
                AcceptanceStatus::Accepted
            } else {
                AcceptanceStatus::Withdrawn
            },
            consent_id: None,
            acceptance_date: Some(t(at)),
            expired_date: expires.map(t),
            withdrawal_date: None,
            recorded_at: t(at),
            seq: self.seq,
        });
    }

    /// The reason with the notice at the revision the log's acceptances pin.
    fn reason(&self, c: &Consent, now: i64) -> Option<Reason> {
        self.reason_with(c, &notice(3, NoticeStatus::Published), now)
    }

    fn reason_with(&self, c: &Consent, n: &PrivacyNotice, now: i64) -> Option<Reason> {
        reason(c, Some(n), &acceptances_at(&self.versions, t(now)), t(now))
    }

    fn flag(&self, consents: &[Consent], code: &str, now: i64) -> bool {
        let ids: HashSet<&str> = consents.iter().map(|c| c.id.as_str()).collect();
        let acceptances = acceptances_at(&self.versions, t(now));
        let timeline = purpose_timeline("app", code, &ids, &acceptances, &self.events, t(now));
        purpose_granted(&timeline, t(now))
    }
}

#[test]
fn expiry_in_whole_days() {
    assert_eq!(expiry(t(0), None), None);
    assert_eq!(expiry(t(0), Some(0)), None);
    assert_eq!(expiry(t(0), Some(30)), Some(t(30 * 24)));
    assert_eq!(expiry(DateTime::<Utc>::MAX_UTC, Some(1)), None);
    assert!(!is_expired(None, t(1_000_000)));
    assert!(is_expired(Some(t(5)), t(5)));
    assert!(!is_expired(Some(t(5)), t(4)));
}

#[test]
fn fold_keeps_latest_non_null_and_counts_status_changes_only() {
    let mut log = Log::default();
    log.accept("a", "c", 2, &["x", "y"], 0, Some(100));
    log.put("a", AcceptanceStatus::Accepted, 1); // a note edit
    log.put("a", AcceptanceStatus::Withdrawn, 2);
    let at1 = acceptances_at(&log.versions, t(1));
    assert_eq!(at1.len(), 1);
    assert_eq!(at1[0].changes.len(), 1);
    assert_eq!(at1[0].purposes, ["x", "y"]);
    assert_eq!(at1[0].expired_date, Some(t(100)));
    assert_eq!(at1[0].consent_revision, Some(2));
    assert_eq!(at1[0].withdrawal_date, None);
    let at2 = acceptances_at(&log.versions, t(2));
    assert_eq!(at2[0].status, AcceptanceStatus::Withdrawn);
    assert_eq!(at2[0].changes.len(), 2);
    assert_eq!(at2[0].purposes, ["x", "y"]);
    assert_eq!(at2[0].withdrawal_date, Some(t(2)));
    assert_eq!(at2[0].privacy_notice_revision, Some(3));
    assert!(acceptances_at(&log.versions, t(-1)).is_empty());
}

#[test]
fn reasons() {
    let c1 = consent("c", 1, &["x"]);
    let c2 = consent("c", 2, &["x"]);
    let mut log = Log::default();
    assert_eq!(log.reason(&c1, 0), Some(Reason::New));
    log.accept("a", "c", 1, &["x"], 1, Some(10));
    assert_eq!(
        log.reason(&c1, 0),
        Some(Reason::New),
        "not yet recorded at 0"
    );
    assert_eq!(log.reason(&c1, 5), None);
    assert_eq!(log.reason(&c2, 5), Some(Reason::NewRevision));
    assert_eq!(log.reason(&c1, 10), Some(Reason::Expired));
    assert_eq!(
        log.reason(&c2, 10),
        Some(Reason::NewRevision),
        "revision before expiry"
    );
    log.put("a", AcceptanceStatus::Withdrawn, 6);
    assert_eq!(log.reason(&c1, 7), Some(Reason::Withdrawn));
    log.accept("b", "c", 1, &["x"], 8, None);
    assert_eq!(
        log.reason(&c1, 8),
        None,
        "a new acceptance after a withdrawal"
    );
    assert_eq!(log.reason(&c1, 1000), None, "never expires");
    assert_eq!(log.reason(&consent("other", 1, &[]), 8), Some(Reason::New));
}

#[test]
fn a_new_notice_revision_reoffers() {
    let c = consent("c", 1, &["x"]);
    let mut log = Log::default();
    log.accept("a", "c", 1, &["x"], 1, None);
    assert_eq!(
        log.reason_with(&c, &notice(3, NoticeStatus::Published), 2),
        None
    );
    assert_eq!(
        log.reason_with(&c, &notice(4, NoticeStatus::Published), 2),
        Some(Reason::NewNoticeRevision)
    );
    let mut moved = c.clone();
    moved.privacy_notice_ref = "pn-2".into();
    let mut other = notice(3, NoticeStatus::Published);
    other.id = "pn-2".into();
    assert_eq!(
        log.reason_with(&moved, &other, 2),
        Some(Reason::NewNoticeRevision),
        "another notice"
    );
    assert_eq!(
        log.reason_with(
            &consent("c", 2, &["x"]),
            &notice(4, NoticeStatus::Published),
            2
        ),
        Some(Reason::NewRevision),
        "the consent's revision first"
    );
}

#[test]
fn an_acceptance_counts_only_in_the_application_it_names() {
    let c = consent("c", 1, &["x"]);
    let mut log = Log::default();
    log.accept("a", "c", 1, &["x"], 1, None);
    log.versions[0].consent_application = Some("other-app".into());
    assert_eq!(log.reason(&c, 2), Some(Reason::New));
    assert!(!log.flag(std::slice::from_ref(&c), "x", 2));
    log.versions[0].consent_application = None;
    assert_eq!(
        log.reason(&c, 2),
        None,
        "unnamed: its consent's application"
    );
}

#[test]
fn to_accept_lists_only_offered() {
    let mut archived = consent("c2", 1, &["x"]);
    archived.status = ConsentStatus::Archived;
    let mut orphan = consent("c3", 1, &["x"]);
    orphan.privacy_notice_ref = "missing".into();
    let consents = [consent("c1", 1, &["x"]), archived, orphan];
    let list = to_accept(&consents, &[notice(1, NoticeStatus::Published)], &[], t(0));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].consent.id, "c1");
    assert_eq!(list[0].reason, Reason::New);
    for status in [NoticeStatus::Draft, NoticeStatus::Archived] {
        assert!(
            to_accept(&consents, &[notice(1, status.clone())], &[], t(0)).is_empty(),
            "{status}"
        );
        let options = purpose_options("app", &consents, &[notice(1, status)], &[], &[], &[], t(0));
        assert!(options.is_empty());
    }
}

#[test]
fn purpose_flags_follow_latest_event() {
    let consents = [consent("c", 1, &["x", "y"])];
    let mut log = Log::default();
    assert!(!log.flag(&consents, "x", 0));
    log.accept("a", "c", 1, &["x"], 1, None);
    assert!(log.flag(&consents, "x", 1));
    assert!(!log.flag(&consents, "y", 1), "not listed by the acceptance");
    log.purpose("x", false, 2, None);
    assert!(!log.flag(&consents, "x", 2));
    assert!(
        log.flag(&consents, "x", 1),
        "as it was before the withdrawal"
    );
    log.purpose("x", true, 3, Some(5));
    assert!(log.flag(&consents, "x", 4));
    assert!(!log.flag(&consents, "x", 5), "expired");
    log.put("a", AcceptanceStatus::Withdrawn, 6);
    log.purpose("y", true, 6, None);
    assert!(!log.flag(&consents, "x", 6));
    assert!(log.flag(&consents, "y", 7));
    // An acceptance of a consent of another application does not count.
    log.accept("o", "elsewhere", 1, &["y"], 8, None);
    log.purpose("y", false, 8, None);
    log.put("o", AcceptanceStatus::Accepted, 9);
    assert!(!log.flag(&consents, "y", 9));
}

#[test]
fn same_instant_is_ordered_by_seq() {
    let consents = [consent("c", 1, &["x"])];
    let mut log = Log::default();
    log.accept("a", "c", 1, &["x"], 1, None);
    log.purpose("x", false, 1, None);
    assert!(!log.flag(&consents, "x", 1));
    log.purpose("x", true, 1, None);
    assert!(log.flag(&consents, "x", 1));
}

#[test]
fn state_at_before_between_after() {
    let consents = [consent("c", 2, &["x", "y"])];
    let mut log = Log::default();
    log.accept("a", "c", 2, &["x"], 10, Some(100));
    log.purpose("y", true, 20, None);
    log.put("a", AcceptanceStatus::Withdrawn, 30);
    let at = |h| state_at("app", "s", &consents, &log.versions, &log.events, t(h));
    let before = at(5);
    assert!(before.consents.is_empty() && before.purposes.is_empty());
    let between = at(25);
    assert_eq!(between.consents.len(), 1);
    assert_eq!(between.consents[0].consent_revision, Some(2));
    assert_eq!(between.consents[0].privacy_notice_revision, Some(3));
    let codes: Vec<&str> = between.purposes.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["x", "y"]);
    assert_eq!(between.purposes[0].source, GrantSource::ConsentAcceptance);
    assert_eq!(between.purposes[1].source, GrantSource::PurposeAcceptance);
    let after = at(35);
    assert!(after.consents.is_empty());
    let codes: Vec<&str> = after.purposes.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["y"]);
}

#[test]
fn history_is_in_recorded_order() {
    let rec = |id: &str, h: i64, seq: i64| ContentRecord {
        id: id.into(),
        project_id: "p".into(),
        content_type: crate::core::consent::ContentType::ConsentAcceptance,
        version: 1,
        seq,
        created_by: "a".into(),
        last_modified_by: "a".into(),
        created_date: t(h),
        last_modified_date: t(h),
        data: serde_json::Map::new(),
    };
    let mut log = Log {
        seq: 1,
        ..Log::default()
    };
    log.purpose("x", true, 1, None); // seq 2
    let h = history(vec![rec("late", 2, 3), rec("early", 1, 1)], log.events);
    let order: Vec<i64> = h.iter().map(HistoryEntry::seq).collect();
    assert_eq!(order, [1, 2, 3]);
}

#[derive(Debug, Clone)]
enum Op {
    AcceptPurpose {
        expires_in: Option<i64>,
    },
    WithdrawPurpose,
    AcceptConsent {
        lists: bool,
        expires_in: Option<i64>,
    },
    WithdrawAcceptance,
}

fn op() -> impl Strategy<Value = Op> {
    let expires = prop_oneof![Just(None), (1i64..6).prop_map(Some)];
    prop_oneof![
        expires
            .clone()
            .prop_map(|e| Op::AcceptPurpose { expires_in: e }),
        Just(Op::WithdrawPurpose),
        (any::<bool>(), expires).prop_map(|(l, e)| Op::AcceptConsent {
            lists: l,
            expires_in: e
        }),
        Just(Op::WithdrawAcceptance),
    ]
}

proptest! {
    /// The flag equals the kind of the latest relevant event, and is false
    /// once that event's grant has expired.
    #[test]
    fn flag_is_latest_event_kind(ops in prop::collection::vec((op(), 0i64..3), 0..25), probe in 0i64..8) {
        let consents = [consent("c", 1, &["x"])];
        let mut log = Log::default();
        let mut now = 0;
        // Model: the latest relevant event as (accepted, expiry).
        let mut latest: Option<(bool, Option<i64>)> = None;
        let mut acceptances: Vec<(String, bool, Option<i64>)> = Vec::new();
        for (i, (op, dt)) in ops.iter().enumerate() {
            now += dt;
            match op {
                Op::AcceptPurpose { expires_in } => {
                    let e = expires_in.map(|d| now + d);
                    log.purpose("x", true, now, e);
                    latest = Some((true, e));
                }
                Op::WithdrawPurpose => {
                    log.purpose("x", false, now, None);
                    latest = Some((false, None));
                }
                Op::AcceptConsent { lists, expires_in } => {
                    let e = expires_in.map(|d| now + d);
                    let id = format!("a{i}");
                    log.accept(&id, "c", 1, if *lists { &["x"] } else { &["z"] }, now, e);
                    acceptances.push((id, *lists, e));
                    if *lists {
                        latest = Some((true, e));
                    }
                }
                Op::WithdrawAcceptance => {
                    if let Some((id, lists, _)) = acceptances.pop() {
                        log.put(&id, AcceptanceStatus::Withdrawn, now);
                        if lists {
                            latest = Some((false, None));
                        }
                    }
                }
            }
            let at = now + probe;
            let expected = latest.is_some_and(|(ok, e)| ok && e.is_none_or(|e| at < e));
            prop_assert_eq!(log.flag(&consents, "x", at), expected);
        }
    }
}
