//! Wire shapes of the consent types: spec-shaped JSON in, exact field names
//! out, timestamps read with any offset and written in UTC with `Z`; and
//! the service's futures are `Send` (it runs inside axum handlers).

use std::sync::Arc;

use accord::consent::{
    AcceptConsentRequest, AcceptanceStatus, ConsentAcceptance, ConsentService, ConsentStatus,
    Envelope, PrivacyNotice, PurposeAcceptance, PurposeOption, PurposeRequest, Reason, ToAccept,
};
use accord::store::memory::MemoryStore;
use accord::store::ConsentStore;
use accord::SystemClock;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// The sorted keys of a serialised value.
fn keys<T: Serialize>(v: &T) -> Vec<String> {
    let v = serde_json::to_value(v).expect("serialise");
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

/// Parses `json`, checks it writes back to `expected` and reads back equal.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    json: &Value,
    expected: &Value,
) -> T {
    let v: T = serde_json::from_value(json.clone()).expect("parse");
    let out = serde_json::to_value(&v).expect("serialise");
    assert_eq!(&out, expected);
    let again: T = serde_json::from_value(out).expect("parse back");
    assert_eq!(again, v);
    v
}

#[test]
fn accept_consent_request_from_spec_body() {
    let body = json!({"app": "shop", "dataSubject": "u-1", "consentId": "c-1", "purposes": ["email"],
        "userAgent": "Mozilla/5.0", "country": "TH", "localIp": "10.0.0.2", "osVersion": "Android 14",
        "model": "Pixel", "deviceFingerprintId": "fp", "note": "first launch"});
    let r: AcceptConsentRequest = round_trip(&body, &body);
    assert_eq!(r.purposes.as_deref(), Some(&["email".to_owned()][..]));
    let minimal: AcceptConsentRequest =
        serde_json::from_value(json!({"app": "shop"})).expect("parse");
    assert_eq!(
        minimal.purposes, None,
        "omitted purposes: all of the consent's"
    );
    assert_eq!(
        minimal.data_subject, None,
        "reported by validation, not serde"
    );
}

#[test]
fn consent_acceptance_response() {
    let json = json!({"id": "a-1", "consentApplication": "shop", "acceptanceDate": "2026-01-01T07:00:00+07:00",
        "expiredDate": null, "consentId": "c-1", "dataSubject": "u-1", "userAgent": "ua", "country": "TH",
        "localIp": "ip", "osVersion": "os", "model": "m", "deviceFingerprintId": "fp", "purposes": ["email"],
        "note": "", "status": "ACCEPTED", "consentRevision": 2, "privacyNoticeId": "pn-1", "privacyNoticeRevision": 5,
        "language": "th"});
    let mut expected = json.clone();
    expected["acceptanceDate"] = json!("2026-01-01T00:00:00Z");
    let a: ConsentAcceptance = round_trip(&json, &expected);
    assert_eq!(a.status, AcceptanceStatus::Accepted);
    assert_eq!(
        keys(&a),
        sorted(&[
            "id",
            "consentApplication",
            "acceptanceDate",
            "expiredDate",
            "consentId",
            "dataSubject",
            "userAgent",
            "country",
            "localIp",
            "osVersion",
            "model",
            "deviceFingerprintId",
            "purposes",
            "note",
            "status",
            "consentRevision",
            "privacyNoticeId",
            "privacyNoticeRevision",
            "language"
        ])
    );
}

#[test]
fn to_accept_entry_is_the_spec_consent_plus_reason() {
    let json = json!({"id": "c-1", "name": "Marketing", "descriptionEn": "We would like to…", "application": "shop",
        "purposes": ["email", "sms"], "lifespan": 365, "privacyNoticeRef": "pn-1", "revision": 3,
        "status": "PUBLISHED", "ref1": "a", "ref2": null, "ref3": null, "reason": "NEW_REVISION"});
    let e: ToAccept = round_trip(&json, &json);
    assert_eq!(e.reason, Reason::NewRevision);
    assert_eq!(e.consent.status, ConsentStatus::Published);
    assert_eq!(
        keys(&e),
        sorted(&[
            "id",
            "name",
            "descriptionEn",
            "application",
            "purposes",
            "lifespan",
            "privacyNoticeRef",
            "revision",
            "status",
            "ref1",
            "ref2",
            "ref3",
            "reason"
        ])
    );
    for (r, s) in [
        (Reason::New, "NEW"),
        (Reason::NewRevision, "NEW_REVISION"),
        (Reason::Expired, "EXPIRED"),
        (Reason::Withdrawn, "WITHDRAWN"),
    ] {
        assert_eq!(serde_json::to_value(r).expect("json"), s);
    }
}

#[test]
fn purpose_shapes() {
    let option =
        json!({"code": "email", "accepted": true, "nameEn": "", "nameTh": "", "consentId": "c-1"});
    let _: PurposeOption = round_trip(&option, &option);
    let req = json!({"app": "shop", "dataSubject": "u-1", "purposeCode": "email"});
    let r: PurposeRequest = round_trip(&req, &req);
    assert_eq!(r.purpose_code.as_deref(), Some("email"));
    let acceptance = json!({"id": "e-1", "dataSubject": "u-1", "consentApplication": "shop", "purposeCode": "email",
        "status": "WITHDRAWN", "acceptanceDate": "2026-01-01T00:00:00Z", "expiredDate": "2027-01-01T00:00:00.5+00:00",
        "withdrawalDate": "2026-06-01T12:00:00-05:00"});
    let mut expected = acceptance.clone();
    expected["expiredDate"] = json!("2027-01-01T00:00:00.500Z");
    expected["withdrawalDate"] = json!("2026-06-01T17:00:00Z");
    let p: PurposeAcceptance = round_trip(&acceptance, &expected);
    assert_eq!(p.status, AcceptanceStatus::Withdrawn);
    let never = json!({"id": "e-2", "dataSubject": "u-1", "consentApplication": "shop", "purposeCode": "email",
        "status": "ACCEPTED", "acceptanceDate": "2026-01-01T00:00:00Z", "expiredDate": null, "withdrawalDate": null});
    let _: PurposeAcceptance = round_trip(&never, &never);
}

#[test]
fn privacy_notice_shape() {
    let json = json!({"id": "pn-1", "name": "Privacy notice", "descriptionEn": "en", "descriptionTh": "ไทย",
        "status": "ARCHIVED", "revision": 7});
    let n: PrivacyNotice = round_trip(&json, &json);
    assert_eq!(n.revision, 7);
}

#[test]
fn content_envelope_from_a_spec_shaped_response() {
    let json = json!({"id": "4c9e", "createdBy": "admin", "lastModifiedBy": "admin",
        "createdDate": "2026-02-01T10:00:00+07:00", "lastModifiedDate": "2026-02-01T03:00:00.123456Z",
        "contentType": {"id": "svc-consent-v1", "name": "Consent", "alias": "svc-consent-v1", "searchEngine": null},
        "projectId": "demo",
        "data": {"name": "Marketing", "application": "shop", "purposes": ["email"], "privacyNoticeRef": "pn-1",
                 "revision": 1, "status": "PUBLISHED", "formScreen": null}});
    let mut expected = json.clone();
    expected["createdDate"] = json!("2026-02-01T03:00:00Z");
    let e: Envelope = round_trip(&json, &expected);
    assert_eq!(e.data["purposes"], json!(["email"]));
}

fn assert_send<T: Send>(_: &T) {}

/// Compiles only if every service future is `Send` for any store.
fn futures_are_send<S: ConsentStore + 'static>(svc: &ConsentService<S>) {
    let q = accord::consent::ContentQuery::default();
    assert_send(&svc.to_accept("p", "a", "s"));
    assert_send(&svc.privacy_notice("p", "i"));
    assert_send(&svc.accept_consent("p", AcceptConsentRequest::default(), "x"));
    assert_send(&svc.purpose_options("p", "a", "s"));
    assert_send(&svc.accept_purpose("p", PurposeRequest::default()));
    assert_send(&svc.withdraw_purpose("p", PurposeRequest::default()));
    assert_send(&svc.create_content("p", "t", Value::Null, "x"));
    assert_send(&svc.replace_content("p", "t", "i", Value::Null, "x"));
    assert_send(&svc.content("p", "t", "i"));
    assert_send(&svc.list_content("p", "t", &q));
    assert_send(&svc.content_versions("p", "t", "i"));
    assert_send(&svc.history("p", "s"));
    assert_send(&svc.state_at("p", "s", "a", chrono::Utc::now()));
}

#[test]
fn service_is_shareable_across_threads() {
    let svc = ConsentService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
    futures_are_send(&svc);
    let handle = std::thread::spawn(move || pollster::block_on(svc.to_accept("p", "a", "s")));
    assert!(handle
        .join()
        .expect("thread")
        .expect("to-accept")
        .is_empty());
}
