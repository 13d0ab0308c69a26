//! Every consent input limit at its boundary, on every store: the longest
//! value allowed is stored and read back, one byte more is a 422 naming the
//! field (`too_long`), and nothing is a 500 — PostgreSQL's btree indexes
//! on `dataSubject`, `application` and `code` included. Values are random
//! text, which PostgreSQL cannot compress below its index row limit.

use std::sync::Arc;

use accord::consent::{AcceptConsentRequest, PurposeRequest};
use accord::limits::{
    MAX_APP_LEN, MAX_ATTRIBUTE_NAME_LEN, MAX_CONTENT_ID_LEN, MAX_CONTENT_NAME_LEN,
    MAX_DESCRIPTION_LEN, MAX_DEVICE_FIELD_LEN, MAX_EXTRA_ATTRIBUTES, MAX_EXTRA_ATTRIBUTE_LEN,
    MAX_NOTE_LEN, MAX_PURPOSES, MAX_PURPOSE_CODE_LEN, MAX_SUBJECT_LEN,
};
use accord::store::ConsentStore;
use accord::ErrorKind;
use serde_json::{json, Value};
use uuid::Uuid;

use super::Fx;

/// `n` bytes of random text (letters and digits, and a two-byte letter
/// when `n` allows, so lengths count bytes, not characters).
fn random(n: usize) -> String {
    let mut s = String::with_capacity(n + 36);
    if n >= 2 {
        s.push('é');
    }
    while s.len() < n {
        s.push_str(&Uuid::new_v4().simple().to_string());
    }
    s.truncate(n);
    s
}

/// `result` failed with 422 naming `field` as `too_long` (or `code`).
fn too_long<T: std::fmt::Debug>(result: accord::Result<T>, field: &str, code: &str) {
    let err = result.expect_err("one byte over the limit");
    assert_eq!(err.kind(), ErrorKind::Validation, "{field}: {err}");
    assert!(
        err.fields()
            .iter()
            .any(|f| f.field == field && f.code == code),
        "{field}: {:?}",
        err.fields()
    );
}

fn with(mut base: Value, field: &str, v: Value) -> Value {
    base[field] = v;
    base
}

#[allow(clippy::too_many_lines)] // one table, told in order
pub async fn every_limit_at_its_boundary<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let p = fx.project.clone();
    let app = random(MAX_APP_LEN);
    let code = random(MAX_PURPOSE_CODE_LEN);

    // Content-store attributes, one type after the other.
    let notice = json!({"name": "N", "revision": 1, "status": "PUBLISHED"});
    let n = fx.create("svc-privacy-notice-v1", notice.clone()).await;
    let consent = json!({"name": "C", "application": app, "purposes": [code, "b"],
                         "privacyNoticeRef": n.id, "lifespan": 30, "revision": 1,
                         "status": "PUBLISHED"});
    let c = fx.create("svc-consent-v1", consent.clone()).await;
    let subject = random(MAX_SUBJECT_LEN);
    let acceptance = json!({"dataSubject": subject, "consentId": c.id, "consentApplication": app,
        "acceptanceDate": fx.now(), "status": "ACCEPTED", "purposes": [code],
        "expiredDate": fx.now() + chrono::Duration::days(30), "userAgent": "ua", "country": "TH",
        "localIp": "10.0.0.1", "osVersion": "17", "model": "m", "deviceFingerprintId": "fp",
        "note": ""});
    let purpose = json!({"code": code});
    let text = |n: usize| Value::String(random(n));
    let cases: Vec<(&str, &Value, &str, usize)> = vec![
        (
            "svc-privacy-notice-v1",
            &notice,
            "name",
            MAX_CONTENT_NAME_LEN,
        ),
        (
            "svc-privacy-notice-v1",
            &notice,
            "descriptionEn",
            MAX_DESCRIPTION_LEN,
        ),
        (
            "svc-privacy-notice-v1",
            &notice,
            "descriptionTh",
            MAX_DESCRIPTION_LEN,
        ),
        // Indexed attributes are bounded in every type.
        (
            "svc-privacy-notice-v1",
            &notice,
            "dataSubject",
            MAX_SUBJECT_LEN,
        ),
        ("svc-privacy-notice-v1", &notice, "application", MAX_APP_LEN),
        (
            "svc-privacy-notice-v1",
            &notice,
            "code",
            MAX_PURPOSE_CODE_LEN,
        ),
        ("svc-consent-v1", &consent, "name", MAX_CONTENT_NAME_LEN),
        ("svc-consent-v1", &consent, "application", MAX_APP_LEN),
        (
            "svc-consent-v1",
            &consent,
            "descriptionEn",
            MAX_DESCRIPTION_LEN,
        ),
        ("svc-consent-v1", &consent, "ref1", MAX_CONTENT_NAME_LEN),
        ("svc-consent-v1", &consent, "ref3", MAX_CONTENT_NAME_LEN),
        ("svc-consent-v1", &consent, "dataSubject", MAX_SUBJECT_LEN),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "dataSubject",
            MAX_SUBJECT_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "note",
            MAX_NOTE_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "device",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "userAgent",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "country",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "localIp",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "osVersion",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "model",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "deviceFingerprintId",
            MAX_DEVICE_FIELD_LEN,
        ),
        (
            "svc-consent-acceptance-v1",
            &acceptance,
            "code",
            MAX_PURPOSE_CODE_LEN,
        ),
        ("svc-purpose-v1", &purpose, "code", MAX_PURPOSE_CODE_LEN),
        ("svc-purpose-v1", &purpose, "nameEn", MAX_CONTENT_NAME_LEN),
        ("svc-purpose-v1", &purpose, "nameTh", MAX_CONTENT_NAME_LEN),
        ("svc-purpose-v1", &purpose, "dataSubject", MAX_SUBJECT_LEN),
        ("svc-purpose-v1", &purpose, "application", MAX_APP_LEN),
    ];
    for (t, base, field, max) in cases {
        let stored = fx.create(t, with(base.clone(), field, text(max))).await;
        assert_eq!(
            stored.data[field].as_str().map(str::len),
            Some(max),
            "{t} {field}"
        );
        let read = fx.svc.content(&p, t, &stored.id).await.expect("read back");
        assert_eq!(read, stored, "{t} {field}");
        let over = with(base.clone(), field, text(max + 1));
        too_long(
            fx.svc.create_content(&p, t, over, "cms").await,
            &format!("data.{field}"),
            "too_long",
        );
    }
    // Values that are not text: a purpose code in a list, formScreen and
    // an extra attribute as JSON text, the number of extras and purposes,
    // the length of an extra's name.
    let long_code = with(
        consent.clone(),
        "purposes",
        json!(["a", random(MAX_PURPOSE_CODE_LEN + 1)]),
    );
    too_long(
        fx.svc
            .create_content(&p, "svc-consent-v1", long_code, "cms")
            .await,
        "data.purposes[1]",
        "too_long",
    );
    for field in ["formScreen", "extra"] {
        // A JSON string: the text and its two quotes.
        let at = with(consent.clone(), field, text(MAX_EXTRA_ATTRIBUTE_LEN - 2));
        fx.create("svc-consent-v1", at).await;
        let over = with(consent.clone(), field, text(MAX_EXTRA_ATTRIBUTE_LEN - 1));
        too_long(
            fx.svc
                .create_content(&p, "svc-consent-v1", over, "cms")
                .await,
            &format!("data.{field}"),
            "too_long",
        );
    }
    let extras = |n: usize| {
        let mut d = notice.clone();
        for i in 0..n {
            d[format!("x{i}")] = json!(i);
        }
        d
    };
    fx.create("svc-privacy-notice-v1", extras(MAX_EXTRA_ATTRIBUTES))
        .await;
    too_long(
        fx.svc
            .create_content(
                &p,
                "svc-privacy-notice-v1",
                extras(MAX_EXTRA_ATTRIBUTES + 1),
                "cms",
            )
            .await,
        "data",
        "too_many",
    );
    let named = |n: usize| with(notice.clone(), &"n".repeat(n), json!(1));
    fx.create("svc-privacy-notice-v1", named(MAX_ATTRIBUTE_NAME_LEN))
        .await;
    too_long(
        fx.svc
            .create_content(
                &p,
                "svc-privacy-notice-v1",
                named(MAX_ATTRIBUTE_NAME_LEN + 1),
                "cms",
            )
            .await,
        "data",
        "too_long",
    );
    let purposes = |n: usize| {
        let codes: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        with(consent.clone(), "purposes", json!(codes))
    };
    fx.create("svc-consent-v1", purposes(MAX_PURPOSES)).await;
    too_long(
        fx.svc
            .create_content(&p, "svc-consent-v1", purposes(MAX_PURPOSES + 1), "cms")
            .await,
        "data.purposes",
        "too_many",
    );

    // The application-facing routes: the longest subject, app, code and
    // device fields are accepted and found again.
    let req = |subject: &str, app: &str| AcceptConsentRequest {
        app: Some(app.to_owned()),
        data_subject: Some(subject.to_owned()),
        consent_id: Some(c.id.clone()),
        purposes: Some(vec![code.clone()]),
        user_agent: Some(random(MAX_DEVICE_FIELD_LEN)),
        country: Some(random(MAX_DEVICE_FIELD_LEN)),
        local_ip: Some(random(MAX_DEVICE_FIELD_LEN)),
        os_version: Some(random(MAX_DEVICE_FIELD_LEN)),
        model: Some(random(MAX_DEVICE_FIELD_LEN)),
        device_fingerprint_id: Some(random(MAX_DEVICE_FIELD_LEN)),
        note: Some(random(MAX_NOTE_LEN)),
        ..Default::default()
    };
    let subject = random(MAX_SUBJECT_LEN);
    fx.svc
        .accept_consent(&p, req(&subject, &app), "app")
        .await
        .expect("the longest values");
    let to_accept = fx
        .svc
        .to_accept(&p, &app, &subject)
        .await
        .expect("to-accept");
    assert!(
        to_accept.iter().all(|e| e.consent.id != c.id),
        "found again"
    );
    let options = fx
        .svc
        .purpose_options(&p, &app, &subject)
        .await
        .expect("options");
    assert!(options.iter().any(|o| o.code == code && o.accepted));
    let over = [
        (
            "dataSubject",
            AcceptConsentRequest {
                data_subject: Some(random(MAX_SUBJECT_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "app",
            AcceptConsentRequest {
                app: Some(random(MAX_APP_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "consentId",
            AcceptConsentRequest {
                consent_id: Some(random(MAX_CONTENT_ID_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "userAgent",
            AcceptConsentRequest {
                user_agent: Some(random(MAX_DEVICE_FIELD_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "deviceFingerprintId",
            AcceptConsentRequest {
                device_fingerprint_id: Some(random(MAX_DEVICE_FIELD_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "note",
            AcceptConsentRequest {
                note: Some(random(MAX_NOTE_LEN + 1)),
                ..req(&subject, &app)
            },
        ),
        (
            "purposes[0]",
            AcceptConsentRequest {
                purposes: Some(vec![random(MAX_PURPOSE_CODE_LEN + 1)]),
                ..req(&subject, &app)
            },
        ),
    ];
    for (field, r) in over {
        too_long(fx.svc.accept_consent(&p, r, "app").await, field, "too_long");
    }
    // The longest consent id is simply not found.
    let missing = AcceptConsentRequest {
        consent_id: Some(random(MAX_CONTENT_ID_LEN)),
        ..req(&subject, &app)
    };
    let err = fx
        .svc
        .accept_consent(&p, missing, "app")
        .await
        .expect_err("unknown");
    assert_eq!(err.code(), "consent_not_found");

    let purpose = |app: &str, subject: &str, code: &str| PurposeRequest {
        app: Some(app.to_owned()),
        data_subject: Some(subject.to_owned()),
        purpose_code: Some(code.to_owned()),
    };
    let other = random(MAX_SUBJECT_LEN);
    fx.svc
        .accept_purpose(&p, purpose(&app, &other, &code))
        .await
        .expect("accept purpose");
    fx.svc
        .withdraw_purpose(&p, purpose(&app, &other, &code))
        .await
        .expect("withdraw purpose");
    for (field, r) in [
        ("app", purpose(&random(MAX_APP_LEN + 1), &other, &code)),
        (
            "dataSubject",
            purpose(&app, &random(MAX_SUBJECT_LEN + 1), &code),
        ),
        (
            "purposeCode",
            purpose(&app, &other, &random(MAX_PURPOSE_CODE_LEN + 1)),
        ),
    ] {
        too_long(
            fx.svc.withdraw_purpose(&p, r.clone()).await,
            field,
            "too_long",
        );
        too_long(fx.svc.accept_purpose(&p, r).await, field, "too_long");
    }
    too_long(
        fx.svc
            .to_accept(&p, &app, &random(MAX_SUBJECT_LEN + 1))
            .await,
        "dataSubject",
        "too_long",
    );
    too_long(
        fx.svc
            .purpose_options(&p, &random(MAX_APP_LEN + 1), &other)
            .await,
        "app",
        "too_long",
    );
    // Far over every limit (the 900 KB subject of a hostile client):
    // refused before any store sees it.
    let huge = random(900_000);
    too_long(
        fx.svc
            .withdraw_purpose(&p, purpose(&app, &huge, &code))
            .await,
        "dataSubject",
        "too_long",
    );
    let err = fx
        .svc
        .content(&p, "svc-consent-v1", &huge)
        .await
        .expect_err("no such id");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let clean = fx.svc.check_records(&p).await.expect("check");
    assert!(clean.is_empty(), "{clean:#?}");
}
