use super::*;
use crate::core::consent::model::{AcceptConsentRequest, PurposeRequest};
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
        // The server sets withdrawalDate (see integrity); a create is
        // ACCEPTED, which integrity checks with the consent in force.
        (
            A,
            Create,
            with(acceptance(), &json!({"status": "WITHDRAWN"})),
            &[],
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
            N,
            Create,
            json!({"name": "PN", "revision": 0, "status": "DRAFT"}),
            &["data.revision:out_of_range"],
        ),
        (
            A,
            Create,
            with(
                acceptance(),
                &json!({"consentRevision": 0, "receivedDate": "now"}),
            ),
            &[
                "data.consentRevision:out_of_range",
                "data.receivedDate:invalid_timestamp",
            ],
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

/// Each limit of `crate::core::limits`: the boundary passes, one byte more is
/// `too_long` at the field.
#[test]
fn lengths_at_the_boundary() {
    use crate::core::limits::*;
    let cases: Vec<(ContentType, Value, &str, usize)> = vec![
        (A, acceptance(), "dataSubject", MAX_SUBJECT_LEN),
        (A, acceptance(), "consentApplication", MAX_APP_LEN),
        (A, acceptance(), "consentId", MAX_CONTENT_ID_LEN),
        (A, acceptance(), "note", MAX_NOTE_LEN),
        (A, acceptance(), "userAgent", MAX_DEVICE_FIELD_LEN),
        (A, acceptance(), "deviceFingerprintId", MAX_DEVICE_FIELD_LEN),
        (A, acceptance(), "device", MAX_DEVICE_FIELD_LEN),
        (A, acceptance(), "privacyNoticeId", MAX_CONTENT_ID_LEN),
        (C, consent(), "name", MAX_CONTENT_NAME_LEN),
        (C, consent(), "application", MAX_APP_LEN),
        (C, consent(), "privacyNoticeRef", MAX_CONTENT_ID_LEN),
        (C, consent(), "descriptionTh", MAX_DESCRIPTION_LEN),
        (C, consent(), "ref2", MAX_CONTENT_NAME_LEN),
        (P, json!({"code": "x"}), "code", MAX_PURPOSE_CODE_LEN),
        (P, json!({"code": "x"}), "nameTh", MAX_CONTENT_NAME_LEN),
        // Indexed names are bounded in every type, also as extras.
        (
            N,
            json!({"name": "PN", "revision": 1, "status": "DRAFT"}),
            "dataSubject",
            MAX_SUBJECT_LEN,
        ),
        (
            N,
            json!({"name": "PN", "revision": 1, "status": "DRAFT"}),
            "application",
            MAX_APP_LEN,
        ),
        (A, acceptance(), "code", MAX_PURPOSE_CODE_LEN),
    ];
    for (t, base, field, max) in cases {
        for (len, expected) in [
            (max, vec![]),
            (max + 1, vec![format!("data.{field}:too_long")]),
        ] {
            let data = with(
                base.clone(),
                &json!({ field: "é".repeat(len / 2) + &"x".repeat(len % 2) }),
            );
            assert_eq!(problems(t, Create, &data), expected, "{t} {field} {len}");
        }
    }
    // A purpose code inside a list, extras as JSON text, their number and
    // the length of their names.
    let codes = |n: usize| json!({"purposes": ["a", "b".repeat(n)]});
    assert!(problems(C, Create, &with(consent(), &codes(MAX_PURPOSE_CODE_LEN))).is_empty());
    assert_eq!(
        problems(
            C,
            Create,
            &with(consent(), &codes(MAX_PURPOSE_CODE_LEN + 1))
        ),
        ["data.purposes[1]:too_long"]
    );
    let extra = |n: usize| json!({"extra": "x".repeat(n - 2)});
    assert!(problems(C, Create, &with(consent(), &extra(MAX_EXTRA_ATTRIBUTE_LEN))).is_empty());
    assert_eq!(
        problems(
            C,
            Create,
            &with(consent(), &extra(MAX_EXTRA_ATTRIBUTE_LEN + 1))
        ),
        ["data.extra:too_long"]
    );
    let extras = |n: usize| Value::Object((0..n).map(|i| (format!("x{i}"), json!(i))).collect());
    assert!(problems(C, Create, &with(consent(), &extras(MAX_EXTRA_ATTRIBUTES))).is_empty());
    assert_eq!(
        problems(
            C,
            Create,
            &with(consent(), &extras(MAX_EXTRA_ATTRIBUTES + 1))
        ),
        ["data:too_many"]
    );
    let name = |n: usize| json!({ "n".repeat(n): 1 });
    assert!(problems(C, Create, &with(consent(), &name(MAX_ATTRIBUTE_NAME_LEN))).is_empty());
    assert_eq!(
        problems(
            C,
            Create,
            &with(consent(), &name(MAX_ATTRIBUTE_NAME_LEN + 1))
        ),
        ["data:too_long"]
    );
    let (_, p) = content_data(
        A,
        Create,
        &with(
            acceptance(),
            &json!({"acceptanceDate": "9".repeat(100_000)}),
        ),
    );
    let f = &p.into_fields()[0];
    assert_eq!(f.code, "invalid_timestamp");
    assert!(
        f.message.len() < 200,
        "a long value is not echoed: {}",
        f.message
    );
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
    use crate::core::limits::{MAX_APP_LEN, MAX_NOTE_LEN, MAX_PURPOSE_CODE_LEN, MAX_SUBJECT_LEN};
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
        ..Default::default()
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
    let long = |n: usize| "x".repeat(n);
    assert!(codes(subject_query(&long(MAX_APP_LEN), &long(MAX_SUBJECT_LEN))).is_empty());
    assert_eq!(
        codes(subject_query(
            &long(MAX_APP_LEN + 1),
            &long(MAX_SUBJECT_LEN + 1)
        )),
        ["app:too_long", "dataSubject:too_long"]
    );
    let req = AcceptConsentRequest {
        data_subject: Some(long(MAX_SUBJECT_LEN + 1)),
        note: Some(long(MAX_NOTE_LEN + 1)),
        purposes: Some(vec![long(MAX_PURPOSE_CODE_LEN + 1)]),
        ..req
    };
    assert_eq!(
        codes(accept_consent(&req)),
        [
            "dataSubject:too_long",
            "deviceFingerprintId:required",
            "note:too_long",
            "purposes[0]:too_long"
        ]
    );
    let req = PurposeRequest {
        app: Some("a".into()),
        data_subject: Some(long(MAX_SUBJECT_LEN + 1)),
        purpose_code: Some(long(MAX_PURPOSE_CODE_LEN + 1)),
    };
    assert_eq!(
        codes(purpose_request(&req)),
        ["dataSubject:too_long", "purposeCode:too_long"]
    );
}
