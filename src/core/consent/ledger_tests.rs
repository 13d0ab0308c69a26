use chrono::{TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::core::consent::model::AcceptanceStatus;

#[test]
fn canonical_json_sorts_by_utf16_and_escapes_like_json_stringify() {
    let v = json!({"b": [1, "x\n\u{1}\"\\/é"], "a": null, "\u{e9}": true, "\u{1f600}": 0, "\u{ff61}": -5});
    // U+1F600 is the surrogate pair D83D DE00, below U+FF61 in UTF-16 order.
    assert_eq!(
        canonical_json(&v),
        "{\"a\":null,\"b\":[1,\"x\\n\\u0001\\\"\\\\/é\"],\"é\":true,\"\u{1f600}\":0,\"\u{ff61}\":-5}"
    );
}

#[test]
fn sha256_of_a_known_text() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

fn chain(n: usize) -> Vec<Sealed> {
    let mut out: Vec<Sealed> = Vec::new();
    for i in 0..n {
        let e = PurposeEvent {
            id: format!("e{i}"),
            project_id: "p".into(),
            data_subject: "u1".into(),
            app: "shop".into(),
            purpose_code: "email".into(),
            status: AcceptanceStatus::Accepted,
            consent_id: None,
            acceptance_date: None,
            expired_date: None,
            withdrawal_date: None,
            recorded_at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            seq: i64::try_from(i).unwrap() + 1,
        };
        let prev = out.last().map(|s| (s.position, s.hash.as_str()));
        let sealed = for_purpose_event(&e, new_salt()).seal(prev);
        out.push(sealed);
    }
    out
}

fn texts(c: &[Sealed]) -> Vec<String> {
    c.iter().map(|s| s.text.clone()).collect()
}

fn check(entries: &[String], head: Option<&LedgerHead>) -> Option<(i64, ProblemKind)> {
    verify(entries.iter().map(String::as_str), head)
        .problem
        .map(|p| (p.position, p.kind))
}

#[test]
fn an_intact_chain_verifies_and_keeps_personal_data_out() {
    let c = chain(5);
    let head = LedgerHead {
        position: 5,
        hash: c[4].hash.clone(),
    };
    let report = verify(texts(&c).iter().map(String::as_str), Some(&head));
    assert!(report.valid, "{report:?}");
    assert_eq!(report.entries, 5);
    assert!(!c[0].text.contains("u1"), "{}", c[0].text);
    assert!(c[0].text.contains(GENESIS));
    assert!(c[1].text.contains(&c[0].hash));
}

#[test]
fn tampering_names_the_entry() {
    let c = chain(5);
    let head = LedgerHead {
        position: 5,
        hash: c[4].hash.clone(),
    };
    // Changed.
    let mut t = texts(&c);
    t[2] = t[2].replace("\"email\"", "\"sms\"");
    assert_eq!(check(&t, Some(&head)), Some((3, ProblemKind::Changed)));
    // Changed, with its hash recomputed: the next entry gives it away.
    let mut t = texts(&c);
    let mut m: Map<String, Value> = serde_json::from_str(&t[1]).unwrap();
    m.remove("hash");
    m.insert("subject".into(), "0".repeat(64).into());
    let hash = sha256_hex(canonical_json(&Value::Object(m.clone())).as_bytes());
    m.insert("hash".into(), hash.into());
    t[1] = canonical_json(&Value::Object(m));
    assert_eq!(check(&t, Some(&head)), Some((2, ProblemKind::Changed)));
    // Removed.
    let mut t = texts(&c);
    t.remove(1);
    assert_eq!(check(&t, Some(&head)), Some((2, ProblemKind::Removed)));
    // Removed at the end: only the head shows it.
    let mut t = texts(&c);
    t.pop();
    assert_eq!(check(&t, None), None);
    assert_eq!(check(&t, Some(&head)), Some((5, ProblemKind::Removed)));
    // Reordered.
    let mut t = texts(&c);
    t.swap(1, 3);
    assert_eq!(check(&t, Some(&head)), Some((4, ProblemKind::Reordered)));
    // Unreadable.
    let mut t = texts(&c);
    t[3] = "{not json".into();
    assert_eq!(check(&t, Some(&head)), Some((4, ProblemKind::Unreadable)));
    // JSON Lines.
    let file = texts(&c).join("\n") + "\n";
    let report = verify_jsonl(file.as_bytes(), Some(&head)).unwrap();
    assert!(report.valid);
}

/// An acceptance's entries as the ledger has always written them: the
/// hashes and texts below were computed from the module docs' definition
/// by an implementation of its own (Python's `hashlib`, members sorted by
/// their UTF-16 encoding), not by this crate. Stored ledgers verify only
/// while these stay the same.
#[test]
fn an_acceptance_entry_is_byte_for_byte_the_known_one() {
    let data = json!({"dataSubject": "u1", "consentId": "c1", "consentApplication": "shop",
        "acceptanceDate": "2026-01-01T00:00:00Z", "withdrawalDate": "", "status": "ACCEPTED",
        "purposes": ["email", "sms"], "expiredDate": "2026-01-02T00:00:00Z",
        "userAgent": "Mozilla/5.0", "country": "TH", "localIp": "192.168.1.10",
        "osVersion": "iOS 17", "model": "iPhone", "deviceFingerprintId": "fp-1",
        "note": "sign\"up\n\u{1}é\u{1f600}", "consentRevision": 1, "privacyNoticeId": "n1",
        "privacyNoticeRevision": 2, "language": "th", "receivedDate": "2026-01-01T00:00:00Z",
        "\u{ff61}": 1.5, "\u{1f600}x": null, "z": {"b": true, "a": [1, -2, "q"]}});
    let Value::Object(data) = data else {
        panic!("an object")
    };
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let record = ContentRecord {
        id: "a1".into(),
        project_id: "p\"1".into(),
        content_type: crate::core::consent::ContentType::ConsentAcceptance,
        version: 3,
        seq: 42,
        created_by: "app".into(),
        last_modified_by: "app".into(),
        created_date: at,
        last_modified_date: at,
        data,
    };
    let entry = for_acceptance(&record, "00112233445566778899aabbccddeeff".into());
    let subject = "c3ede3ecbb088e0df3cf3b2e3570a2cb3fd739e09ca61c13ddb403a3f8d0da43";
    assert_eq!(entry.subject, subject);
    let evidence = "{\"acceptanceDate\":\"2026-01-01T00:00:00Z\",\"consentApplication\":\"shop\",\
        \"consentId\":\"c1\",\"consentRevision\":1,\"expiredDate\":\"2026-01-02T00:00:00Z\",\
        \"language\":\"th\",\"privacyNoticeId\":\"n1\",\"privacyNoticeRevision\":2,\
        \"purposes\":[\"email\",\"sms\"],\"receivedDate\":\"2026-01-01T00:00:00Z\",\
        \"status\":\"ACCEPTED\",\"withdrawalDate\":\"\",\"z\":{\"a\":[1,-2,\"q\"],\"b\":true},\
        \"\u{1f600}x\":null,\"\u{ff61}\":1.5}";
    let text = |hash: &str, position: i64, prev: &str| {
        format!(
            "{{\"evidence\":{evidence},\"hash\":\"{hash}\",\"kind\":\"consentAcceptance\",\
             \"position\":{position},\"prevHash\":\"{prev}\",\"projectId\":\"p\\\"1\",\
             \"recordId\":\"a1\",\"recordedAt\":\"2026-01-01T00:00:00.000000Z\",\"seq\":42,\
             \"subject\":\"{subject}\",\"version\":3}}"
        )
    };
    let first = entry.seal(None);
    let h1 = "5b8eb60fc748335828d39dc0684e25eda511678d4d39be70ba12838b0498a75f";
    assert_eq!((first.position, first.hash.as_str()), (1, h1));
    assert_eq!(first.text, text(h1, 1, GENESIS));
    let second = entry.seal(Some((1, h1)));
    let h2 = "e63c636632d50a744f2beff8d68e2a5472841f85910343985997bb59086c72f3";
    assert_eq!((second.position, second.hash.as_str()), (2, h2));
    assert_eq!(second.text, text(h2, 2, h1));
    // The text is its own canonical form, and the chain verifies.
    let parsed: Value = serde_json::from_str(&second.text).unwrap();
    assert_eq!(canonical_json(&parsed), second.text);
    let head = LedgerHead {
        position: 2,
        hash: h2.into(),
    };
    assert!(verify([first.text.as_str(), second.text.as_str()], Some(&head)).valid);
}
