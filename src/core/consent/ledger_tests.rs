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
