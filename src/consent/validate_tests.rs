use super::*;
use serde_json::json;

/// Every problem as `field:code`, in order.
fn problems(t: ContentType, form: Form, data: &Value) -> Vec<String> {
    let (_, p) = content_data(t, form, data);
    p.into_fields()
        .into_iter()
        .map(|f| format!("{}:{}", f.field, f.code))
        .collect()
}

fn consent() -> Value {
    json!({"name": "Marketing", "application": "shop", "purposes": ["email"],
           "privacyNoticeRef": "pn1", "revision": 1, "status": "PUBLISHED"})
}

fn acceptance() -> Value {
    json!({"dataSubject": "u1", "consentId": "c1", "consentApplication": "shop",
           "acceptanceDate": "2026-01-01T07:00:00+07:00", "status": "ACCEPTED",
           "purposes": ["email"], "expiredDate": null, "userAgent": "ua", "country": "TH",
           "localIp": "10.0.0.1", "osVersion": "17", "model": "X", "deviceFingerprintId": "fp",
           "note": ""})
}

fn with(mut base: Value, patch: &Value) -> Value {
    if let (Some(b), Some(p)) = (base.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            b.insert(k.clone(), v.clone());
        }
    }
    base
}

fn without(mut base: Value, keys: &[&str]) -> Value {
    if let Some(b) = base.as_object_mut() {
        for k in keys {
            b.remove(*k);
        }
    }
    base
}

use ContentType::{Consent as C, ConsentAcceptance as A, PrivacyNotice as N, Purpose as P};
use Form::{Create, Update};

#[test]
#[allow(clippy::too_many_lines)] // a table of cases
fn cases() {
    let cases: Vec<(ContentType, Form, Value, &[&str])> = vec![
        (C, Create, consent(), &[]),
        (
            N,
            Create,
            json!({"name": "PN", "revision": 1, "status": "DRAFT"}),
            &[],
        ),
        (P, Create, json!({"code": "email"}), &[]),
        (A, Create, acceptance(), &[]),
        (
            N,
            Create,
            json!({}),
            &[
                "data.name:required",
                "data.revision:required",
                "data.status:required",
            ],
        ),
        (
            C,
            Create,
            json!({"formScreen": {"url": "x"}}),
            &[
                "data.name:required",
                "data.application:required",
                "data.purposes:required",
                "data.privacyNoticeRef:required",
                "data.revision:required",
                "data.status:required",
            ],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"status": "ACCEPTED"})),
            &["data.status:invalid_enum"],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"status": "LIVE"})),
            &["data.status:invalid_enum"],
        ),
        (
            N,
            Create,
            json!({"name": "PN", "revision": 1, "status": "published"}),
            &["data.status:invalid_enum"],
        ),
        (
            A,
            Create,
            with(acceptance(), &json!({"status": "PUBLISHED"})),
            &["data.status:invalid_enum"],
        ),
        (
            C,
            Create,
            with(
                consent(),
                &json!({"revision": "1", "lifespan": 1.5, "purposes": ["a", 2, " ", "a"]}),
            ),
            &[
                "data.purposes[1]:invalid_type",
                "data.purposes[2]:required",
                "data.purposes:duplicate",
                "data.lifespan:invalid_type",
                "data.revision:invalid_type",
            ],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"purposes": []})),
            &["data.purposes:required"],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"purposes": "email"})),
            &["data.purposes:invalid_type"],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"lifespan": -1})),
            &["data.lifespan:out_of_range"],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"lifespan": 36_501})),
            &["data.lifespan:out_of_range"],
        ),
        (
            C,
            Create,
            with(consent(), &json!({"name": "  ", "ref1": 5})),
            &["data.name:required", "data.ref1:invalid_type"],
        ),
        (C, Create, json!([1]), &["data:invalid_type"]),
        (C, Create, Value::Null, &["data:required"]),
        (
            A,
            Create,
            without(acceptance(), &["expiredDate"]),
            &["data.expiredDate:required"],
        ),
        (
            A,
            Create,
            without(
                acceptance(),
                &[
                    "userAgent",
                    "country",
                    "localIp",
                    "osVersion",
                    "model",
                    "deviceFingerprintId",
                    "note",
                ],
            ),
            &[
                "data.userAgent:required",
                "data.country:required",
                "data.localIp:required",
                "data.osVersion:required",
                "data.model:required",
                "data.deviceFingerprintId:required",
                "data.note:required",
            ],
        ),
        (
            A,
            Create,
            with(acceptance(), &json!({"acceptanceDate": "yesterday"})),
            &["data.acceptanceDate:invalid_timestamp"],
        ),
        (
            A,
            Create,
            with(acceptance(), &json!({"status": "WITHDRAWN"})),
            &["data.withdrawalDate:required"],
        ),
        (
            A,
            Create,
            with(
                acceptance(),
                &json!({"withdrawalDate": "2026-02-01T00:00:00Z"}),
            ),
            &["data.withdrawalDate:inconsistent"],
        ),
        (
            A,
            Create,
            with(
                acceptance(),
                &json!({"expiredDate": "2025-01-01T00:00:00Z"}),
            ),
            &["data.expiredDate:invalid_value"],
        ),
        (
            A,
            Update,
            json!({"dataSubject": "u1", "consentId": "c1", "application": "shop",
                   "acceptanceDate": "2026-01-01T00:00:00Z", "status": "WITHDRAWN",
                   "withdrawalDate": "2026-02-01T00:00:00Z", "note": "by phone"}),
            &[],
        ),
        (
            A,
            Update,
            json!({"status": "WITHDRAWN"}),
            &[
                "data.dataSubject:required",
                "data.consentId:required",
                "data.application:required",
                "data.acceptanceDate:required",
                "data.note:required",
                "data.withdrawalDate:required",
            ],
        ),
        (A, Update, acceptance(), &["data.application:required"]),
        (
            P,
            Create,
            json!({"code": "", "nameEn": 1}),
            &["data.code:required", "data.nameEn:invalid_type"],
        ),
    ];
    for (i, (t, form, data, expected)) in cases.into_iter().enumerate() {
        assert_eq!(
            problems(t, form, &data),
            expected,
            "case {i}: {t} {form:?} {data}"
        );
    }
}

#[test]
fn acceptance_status_on_consent_says_where_it_belongs() {
    let (_, p) = content_data(C, Create, &with(consent(), &json!({"status": "WITHDRAWN"})));
    let f = &p.into_fields()[0];
    assert!(
        f.message.contains("status of consent acceptances"),
        "{}",
        f.message
    );
}

#[test]
fn normalises_timestamps_and_whole_numbers_and_keeps_extras() {
    let data = with(
        acceptance(),
        &json!({"consentRevision": 2.0, "custom": {"k": 1}, "withdrawalDate": ""}),
    );
    let (out, p) = content_data(A, Create, &data);
    assert!(p.is_empty());
    assert_eq!(out["acceptanceDate"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(out["consentRevision"], json!(2));
    assert!(out["consentRevision"].is_i64());
    assert_eq!(out["custom"], json!({"k": 1}));
    assert_eq!(out["withdrawalDate"], "");
    assert_eq!(out["expiredDate"], Value::Null);
}

#[test]
fn requests() {
    let codes = |p: Problems| -> Vec<String> {
        p.into_fields()
            .into_iter()
            .map(|f| format!("{}:{}", f.field, f.code))
            .collect()
    };
    let empty = AcceptConsentRequest::default();
    assert_eq!(codes(accept_consent(&empty)).len(), 9);
    let req = AcceptConsentRequest {
        app: Some("shop".into()),
        data_subject: Some("u".into()),
        consent_id: Some("c".into()),
        purposes: Some(vec!["a".into(), String::new(), "a".into()]),
        user_agent: Some("ua".into()),
        country: Some("TH".into()),
        local_ip: Some("ip".into()),
        os_version: Some("1".into()),
        model: Some("m".into()),
        device_fingerprint_id: Some(" ".into()),
        note: None,
    };
    assert_eq!(
        codes(accept_consent(&req)),
        [
            "deviceFingerprintId:required",
            "purposes[1]:required",
            "purposes:duplicate"
        ]
    );
    assert_eq!(
        codes(purpose_request(&PurposeRequest::default())),
        [
            "app:required",
            "dataSubject:required",
            "purposeCode:required"
        ]
    );
    assert_eq!(
        codes(subject_query("", " ")),
        ["app:required", "dataSubject:required"]
    );
}
