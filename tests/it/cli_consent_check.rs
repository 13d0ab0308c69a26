//! `accord consent check` as an operator runs it (the built binary) on a
//! SQLite database: a clean project exits 0; a record written around the
//! rules is reported (exit status 1) and left as it was; a database that
//! cannot be opened is exit status 2.
#![cfg(feature = "cli")]

use std::process::Command;
use std::sync::Arc;

use accord::consent::{AcceptConsentRequest, ConsentService, ContentType, ContentWrite};
use accord::store::sqlite::SqliteStore;
use accord::store::ContentStore as _;
use chrono::TimeZone as _;
use serde_json::{json, Value};

fn check(url: &str, project: &str) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args([
            "consent",
            "check",
            "--project",
            project,
            "--database-url",
            url,
        ])
        .env_remove("ACCORD_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_check_command_reports_bent_records() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("check.db").display());
    let store = Arc::new(SqliteStore::open(&url).await.unwrap());
    let at = chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let svc = ConsentService::new(store.clone(), Arc::new(accord::ManualClock::new(at)));
    let notice = svc
        .create_content(
            "p1",
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let consent = svc
        .create_content(
            "p1",
            "svc-consent-v1",
            json!({"name": "Shop", "application": "shop", "purposes": ["email"], "lifespan": 30,
                   "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let req = AcceptConsentRequest {
        app: Some("shop".into()),
        data_subject: Some("u1".into()),
        consent_id: Some(consent.id.clone()),
        user_agent: Some("Mozilla/5.0".into()),
        country: Some("TH".into()),
        local_ip: Some("10.1.2.3".into()),
        os_version: Some("17.2".into()),
        model: Some("phone-x".into()),
        device_fingerprint_id: Some("fp-1".into()),
        ..AcceptConsentRequest::default()
    };
    svc.accept_consent("p1", req, "app").await.unwrap();

    let (code, report, err) = check(&url, "p1");
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["valid"], true);
    assert_eq!(report["findings"], json!([]));

    // An acceptance forging a later revision that never expires, written
    // straight into the database.
    let forged = json!({"dataSubject": "u2", "consentId": consent.id, "consentApplication": "shop",
        "acceptanceDate": "2026-01-01T00:00:00.000000Z", "status": "ACCEPTED",
        "purposes": ["email"], "expiredDate": null, "userAgent": "ua", "country": "TH",
        "localIp": "10.0.0.1", "osVersion": "17", "model": "m", "deviceFingerprintId": "fp",
        "note": "", "consentRevision": 7, "privacyNoticeId": notice.id,
        "privacyNoticeRevision": 1});
    store
        .insert_content(&ContentWrite {
            project_id: "p1".into(),
            content_type: ContentType::ConsentAcceptance,
            id: "forged".into(),
            data: forged.as_object().unwrap().clone(),
            actor: "legacy".into(),
            at,
        })
        .await
        .unwrap();
    let (code, report, err) = check(&url, "p1");
    assert_eq!(code, 1, "{report} {err}");
    assert_eq!(report["valid"], false);
    let mut found: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_owned();
            (s("id"), s("field"), s("code"))
        })
        .collect();
    found.sort();
    let expected: Vec<(String, String, String)> = [
        ("forged", "data.consentRevision", "evidence_mismatch"),
        ("forged", "data.expiredDate", "evidence_mismatch"),
    ]
    .iter()
    .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(found, expected);
    let versions = store
        .content_versions("p1", ContentType::ConsentAcceptance, "forged")
        .await
        .unwrap();
    assert_eq!(versions.len(), 1, "reported, not rewritten");
    assert_eq!(versions[0].data["consentRevision"], 7);

    // Another project of the same database is clean.
    assert_eq!(check(&url, "p2").0, 0);
    let (code, _, err) = check("mysql://nowhere", "p1");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unsupported database URL"), "{err}");
}
