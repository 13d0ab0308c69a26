//! The six consent `bff` routes and the content store over a real TCP
//! socket, with the spec's status codes and field names.
#![cfg(feature = "http")]

use crate::http_support;

use http_support::{parts, problem, start, Server, P};
use reqwest::Method;
use serde_json::{json, Value};

/// A published notice and a consent of application `shop` with purposes
/// email and sms (365 days), and a catalogue name for email.
async fn seed(s: &Server) -> (Value, Value) {
    let (status, notice) = s
        .post_json(
            &s.cms("svc-privacy-notice-v1"),
            json!({"data": {"name": "Privacy notice", "descriptionEn": "How we use your data",
                         "descriptionTh": "นโยบาย", "revision": 1, "status": "PUBLISHED"}}),
        )
        .await;
    assert_eq!(status, 201, "{notice}");
    let (status, consent) = s
        .post_json(
            &s.cms("svc-consent-v1"),
            json!({"data": {"name": "Marketing", "descriptionEn": "News and offers", "application": "shop",
                             "purposes": ["email", "sms"], "lifespan": 365,
                             "privacyNoticeRef": notice["id"], "revision": 1, "status": "PUBLISHED",
                             "ref1": "campaign-2026"}}),
        )
        .await;
    assert_eq!(status, 201, "{consent}");
    let (status, _) = s
        .post_json(
            &s.cms("svc-purpose-v1"),
            json!({"data": {"code": "email", "nameEn": "Email", "nameTh": "อีเมล"}}),
        )
        .await;
    assert_eq!(status, 201);
    (notice, consent)
}

fn acceptance(consent_id: &Value) -> Value {
    json!({
        "app": "shop", "dataSubject": "u1", "consentId": consent_id, "purposes": ["email"],
        "userAgent": "Mozilla/5.0", "country": "TH", "localIp": "192.168.1.20",
        "osVersion": "iOS 17.4", "model": "iPhone15,2", "deviceFingerprintId": "fp-1",
        "note": "signup"
    })
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn the_consent_story_through_the_six_bff_routes() {
    let s = start().await;
    let (notice, consent) = seed(&s).await;
    let cid = consent["id"].clone();

    // 1. to-accept.
    let res = s
        .req(Method::GET, &s.bff("/to-accept?app=shop&dataSubject=u1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "1");
    let (status, list) = parts(res).await;
    assert_eq!(status, 200);
    let c = &list[0];
    assert_eq!(c["id"], cid);
    for (field, value) in [
        ("name", json!("Marketing")),
        ("descriptionEn", json!("News and offers")),
        ("application", json!("shop")),
        ("purposes", json!(["email", "sms"])),
        ("lifespan", json!(365)),
        ("privacyNoticeRef", notice["id"].clone()),
        ("revision", json!(1)),
        ("status", json!("PUBLISHED")),
        ("ref1", json!("campaign-2026")),
        ("ref2", Value::Null),
        ("ref3", Value::Null),
    ] {
        assert_eq!(c[field], value, "{field}: {c}");
    }

    // 2. privacy notice.
    let (status, n) = s
        .get_json(&s.bff(&format!(
            "/privacy-notice/{}",
            notice["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        n,
        json!({"id": notice["id"], "name": "Privacy notice", "descriptionEn": "How we use your data",
               "descriptionTh": "นโยบาย", "status": "PUBLISHED", "revision": 1})
    );

    // 3. accept consent: 201, every field of the spec.
    let (status, a) = s
        .post_json(&s.bff("/consent-acceptance"), acceptance(&cid))
        .await;
    assert_eq!(status, 201, "{a}");
    for (field, value) in [
        ("consentApplication", json!("shop")),
        ("acceptanceDate", json!("2026-06-15T10:00:00Z")),
        ("expiredDate", json!("2027-06-15T10:00:00Z")),
        ("consentId", cid.clone()),
        ("dataSubject", json!("u1")),
        ("userAgent", json!("Mozilla/5.0")),
        ("country", json!("TH")),
        ("localIp", json!("192.168.1.20")),
        ("osVersion", json!("iOS 17.4")),
        ("model", json!("iPhone15,2")),
        ("deviceFingerprintId", json!("fp-1")),
        ("purposes", json!(["email"])),
        ("note", json!("signup")),
        ("status", json!("ACCEPTED")),
    ] {
        assert_eq!(a[field], value, "{field}: {a}");
    }
    assert!(a["id"].is_string());
    let (_, list) = s
        .get_json(&s.bff("/to-accept?app=shop&dataSubject=u1"))
        .await;
    assert_eq!(list, json!([]));

    // 4. purpose options.
    let (status, options) = s
        .get_json(&s.bff("/purpose-options?app=shop&dataSubject=u1"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        options,
        json!([
            {"code": "email", "accepted": true, "nameEn": "Email", "nameTh": "อีเมล", "consentId": cid},
            {"code": "sms", "accepted": false, "nameEn": "", "nameTh": "", "consentId": cid},
        ])
    );

    // 5. accept a purpose: 201.
    let body = json!({"app": "shop", "dataSubject": "u1", "purposeCode": "sms"});
    let (status, p) = s.post_json(&s.bff("/purpose-acceptance"), body).await;
    assert_eq!(status, 201, "{p}");
    assert_eq!(p["status"], "ACCEPTED");
    assert_eq!(p["purposeCode"], "sms");
    assert_eq!(p["dataSubject"], "u1");
    assert_eq!(p["consentApplication"], "shop");
    assert_eq!(p["acceptanceDate"], "2026-06-15T10:00:00Z");
    assert_eq!(p["expiredDate"], "2027-06-15T10:00:00Z");
    assert_eq!(p["withdrawalDate"], Value::Null);

    // 6. withdraw a purpose: 200, withdrawalDate set, dates kept.
    s.clock.advance(chrono::Duration::hours(1));
    let body = json!({"app": "shop", "dataSubject": "u1", "purposeCode": "email"});
    let (status, w) = s.post_json(&s.bff("/purpose-withdrawal"), body).await;
    assert_eq!(status, 200, "{w}");
    assert_eq!(w["status"], "WITHDRAWN");
    assert_eq!(w["withdrawalDate"], "2026-06-15T11:00:00Z");
    assert_eq!(w["acceptanceDate"], "2026-06-15T10:00:00Z");
    let (_, options) = s
        .get_json(&s.bff("/purpose-options?app=shop&dataSubject=u1"))
        .await;
    let flags: Vec<(&str, bool)> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["code"].as_str().unwrap(),
                o["accepted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(flags, [("email", false), ("sms", true)]);
}

#[tokio::test]
async fn bff_errors() {
    let s = start().await;
    let (_, consent) = seed(&s).await;
    let cid = consent["id"].clone();
    let res = s
        .req(Method::GET, &s.bff("/to-accept?app=shop"))
        .send()
        .await
        .unwrap();
    let p = problem(res, 400, "invalid_parameter").await;
    assert_eq!(p["errors"][0]["field"], "dataSubject");
    let res = s
        .req(Method::GET, &s.bff("/privacy-notice/nope"))
        .send()
        .await
        .unwrap();
    problem(res, 404, "privacy_notice_not_found").await;
    let res = s
        .req(Method::POST, &s.bff("/consent-acceptance"))
        .json(&acceptance(&json!("no-such-consent")))
        .send()
        .await
        .unwrap();
    problem(res, 404, "consent_not_found").await;
    let res = s
        .req(Method::POST, &s.bff("/consent-acceptance"))
        .json(&json!({"app": "shop", "consentId": cid}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    let fields: Vec<&str> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"dataSubject") && fields.contains(&"deviceFingerprintId"),
        "{p}"
    );
    let res = s
        .req(Method::POST, &s.bff("/purpose-acceptance"))
        .json(&json!({"app": "shop", "dataSubject": "u1", "purposeCode": "fax"}))
        .send()
        .await
        .unwrap();
    problem(res, 404, "purpose_not_found").await;
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn the_content_store() {
    let s = start().await;
    let (notice, consent) = seed(&s).await;

    // Envelope fields.
    for field in [
        "id",
        "createdBy",
        "lastModifiedBy",
        "createdDate",
        "lastModifiedDate",
        "contentType",
        "projectId",
        "data",
    ] {
        assert!(notice.get(field).is_some(), "{field}: {notice}");
    }
    assert_eq!(notice["createdBy"], "tester");
    assert_eq!(notice["projectId"], P);
    assert_eq!(notice["createdDate"], "2026-06-15T10:00:00Z");
    assert_eq!(
        notice["contentType"],
        json!({"id": "svc-privacy-notice-v1", "name": "Privacy Notice", "alias": "svc-privacy-notice-v1", "searchEngine": null})
    );

    // POST answers a Location; GET one.
    let res = s
        .req(Method::POST, &s.cms("svc-privacy-notice-v1"))
        .json(&json!({"data": {"name": "Draft notice", "revision": 1, "status": "DRAFT"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let draft: Value = res.json().await.unwrap();
    assert_eq!(
        location,
        format!(
            "/cms/api/projects/{P}/c/svc-privacy-notice-v1/{}",
            draft["id"].as_str().unwrap()
        )
    );
    let (status, one) = s.get_json(&s.url(&location)).await;
    assert_eq!((status, &one), (200, &draft));

    // PUT replaces the whole data: 200, envelope; missing attributes null.
    s.clock.advance(chrono::Duration::minutes(5));
    let res = s
        .req(Method::PUT, &s.url(&location))
        .json(&json!({"data": {"name": "Draft notice v2", "revision": 2, "status": "PUBLISHED"}}))
        .send()
        .await
        .unwrap();
    let (status, put) = parts(res).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["data"]["name"], "Draft notice v2");
    assert_eq!(put["lastModifiedDate"], "2026-06-15T10:05:00Z");
    assert_eq!(put["createdDate"], "2026-06-15T10:00:00Z");

    // Lists: bare arrays, filters, sort, paging, total in the header.
    let res = s
        .req(
            Method::GET,
            &s.cms("svc-privacy-notice-v1?sort=data.name,desc"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "2");
    let (_, list) = parts(res).await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Privacy notice", "Draft notice v2"]);
    let (_, list) = s
        .get_json(&s.cms("svc-consent-v1?data.application=shop&data.purposes=sms"))
        .await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], consent["id"]);
    let (_, list) = s
        .get_json(&s.cms("svc-consent-v1?data.application=other"))
        .await;
    assert_eq!(list, json!([]));
    let res = s
        .req(Method::GET, &s.cms("svc-privacy-notice-v1?size=1&page=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "2");
    let (_, list) = parts(res).await;
    assert_eq!(list.as_array().unwrap().len(), 1);

    // An acceptance through the bff route is listed by the content store,
    // and the acceptance update answers the reduced envelope.
    let (status, a) = s
        .post_json(&s.bff("/consent-acceptance"), acceptance(&consent["id"]))
        .await;
    assert_eq!(status, 201);
    let res = s
        .req(
            Method::GET,
            &s.cms("svc-consent-acceptance-v1?data.dataSubject=u1"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "1");
    let (_, list) = parts(res).await;
    assert_eq!(list[0]["id"], a["id"]);
    assert_eq!(list[0]["data"]["status"], "ACCEPTED");
    let res = s
        .req(
            Method::PUT,
            &s.cms(&format!(
                "svc-consent-acceptance-v1/{}",
                a["id"].as_str().unwrap()
            )),
        )
        .json(&json!({"data": {
            "dataSubject": "u1", "consentId": consent["id"], "application": "shop",
            "acceptanceDate": a["acceptanceDate"], "status": "WITHDRAWN",
            "withdrawalDate": "2026-06-15T10:05:00+07:00", "note": "user asked"
        }}))
        .send()
        .await
        .unwrap();
    let (status, reduced) = parts(res).await;
    assert_eq!(status, 200, "{reduced}");
    let keys: Vec<&str> = reduced
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 4, "{reduced}");
    for k in ["id", "contentType", "projectId", "data"] {
        assert!(keys.contains(&k), "{reduced}");
    }
    assert_eq!(
        reduced["contentType"],
        json!({"id": "svc-consent-acceptance-v1", "name": "Consent Acceptance", "alias": "svc-consent-acceptance-v1"})
    );
    assert_eq!(reduced["data"]["status"], "WITHDRAWN");
    assert_eq!(
        reduced["data"]["userAgent"], a["userAgent"],
        "an edit keeps the evidence the update form leaves out"
    );
    assert_eq!(reduced["data"]["purposes"], a["purposes"]);
    assert_eq!(
        reduced["data"]["withdrawalDate"],
        "2026-06-15T10:05:00.000000Z"
    );
    // The withdrawal is what to-accept reads.
    let (_, list) = s
        .get_json(&s.bff("/to-accept?app=shop&dataSubject=u1"))
        .await;
    assert_eq!(list[0]["id"], consent["id"]);
    assert_eq!(list[0]["reason"], "WITHDRAWN");
}

#[tokio::test]
async fn content_store_errors() {
    let s = start().await;
    seed(&s).await;
    let res = s
        .req(Method::GET, &s.cms("svc-nope-v1"))
        .send()
        .await
        .unwrap();
    problem(res, 404, "content_type_not_found").await;
    let res = s
        .req(Method::GET, &s.cms("svc-consent-v1/nope"))
        .send()
        .await
        .unwrap();
    problem(res, 404, "content_not_found").await;
    let res = s
        .req(Method::GET, &s.cms("svc-consent-v1?date.status=x"))
        .send()
        .await
        .unwrap();
    let p = problem(res, 400, "unknown_parameter").await;
    assert!(!p["errors"].as_array().unwrap().is_empty());
    let res = s
        .req(Method::GET, &s.cms("svc-consent-v1?size=1001"))
        .send()
        .await
        .unwrap();
    problem(res, 400, "invalid_page_size").await;
    let res = s
        .req(Method::POST, &s.cms("svc-consent-v1"))
        .json(&json!({"data": {"application": "shop", "purposes": [], "status": "ACCEPTED"}}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    let fields: Vec<&str> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    for f in [
        "data.name",
        "data.purposes",
        "data.privacyNoticeRef",
        "data.revision",
        "data.status",
    ] {
        assert!(fields.contains(&f), "{f} not in {fields:?}");
    }
    let res = s
        .req(Method::POST, &s.cms("svc-consent-v1"))
        .json(&json!({"name": "no data envelope"}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "data");
    let res = s
        .req(Method::POST, &s.cms("svc-consent-v1"))
        .json(&json!({"data": ["not", "an", "object"]}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 400, "invalid_json").await;
    assert_eq!(p["errors"][0]["field"], "data");
}

/// The integrity rules seen from the wire: a forged acceptance is a
/// problem+json naming the field, an edit keeps the evidence, a timestamp
/// filter finds an instant however the URL writes it, and a notice that is
/// not published is not served to applications.
#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn consent_integrity_over_the_wire() {
    let s = start().await;
    let (notice, consent) = seed(&s).await;
    let body = |patch: Value| {
        let mut data = json!({"dataSubject": "u1", "consentId": consent["id"],
            "consentApplication": "shop", "acceptanceDate": "2026-06-15T17:00:00+07:00",
            "status": "ACCEPTED", "purposes": ["email"], "expiredDate": "2027-06-15T10:00:00Z",
            "userAgent": "ua", "country": "TH", "localIp": "10.0.0.1", "osVersion": "17",
            "model": "m", "deviceFingerprintId": "fp", "note": ""});
        for (k, v) in patch.as_object().unwrap() {
            data[k] = v.clone();
        }
        json!({ "data": data })
    };
    let url = s.cms("svc-consent-acceptance-v1");
    for (patch, field, code) in [
        (
            json!({"consentRevision": 7}),
            "data.consentRevision",
            "evidence_mismatch",
        ),
        (
            json!({"expiredDate": null}),
            "data.expiredDate",
            "evidence_mismatch",
        ),
        (
            json!({"consentApplication": "other-app"}),
            "data.consentApplication",
            "consent_not_in_app",
        ),
        (
            json!({"acceptanceDate": "2030-01-01T00:00:00Z", "expiredDate": "2031-01-01T00:00:00Z"}),
            "data.acceptanceDate",
            "in_future",
        ),
    ] {
        let res = s
            .req(Method::POST, &url)
            .json(&body(patch))
            .send()
            .await
            .unwrap();
        let p = problem(res, 422, "validation_failed").await;
        assert_eq!(p["errors"][0]["field"], field, "{p}");
        assert_eq!(p["errors"][0]["code"], code, "{p}");
    }
    let (status, created) = s.post_json(&url, body(json!({}))).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["consentRevision"], 1);
    assert_eq!(
        created["data"]["receivedDate"],
        "2026-06-15T10:00:00.000000Z"
    );
    let id = created["id"].as_str().unwrap();

    // The withdrawal in the spec's update form keeps the evidence; a
    // revival is refused.
    let edit = |status: &str| {
        json!({"data": {"dataSubject": "u1", "consentId": consent["id"], "application": "shop",
            "acceptanceDate": "2026-06-15T10:00:00Z", "status": status,
            "withdrawalDate": if status == "WITHDRAWN" { "2026-06-15T10:00:00Z" } else { "" },
            "note": "edit"}})
    };
    let one = s.cms(&format!("svc-consent-acceptance-v1/{id}"));
    let res = s
        .req(Method::PUT, &one)
        .json(&edit("WITHDRAWN"))
        .send()
        .await
        .unwrap();
    let (status, put) = parts(res).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["data"]["purposes"], json!(["email"]));
    assert_eq!(put["data"]["expiredDate"], "2027-06-15T10:00:00.000000Z");
    let res = s
        .req(Method::PUT, &one)
        .json(&edit("ACCEPTED"))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "data.status", "{p}");
    assert_eq!(p["errors"][0]["code"], "invalid_transition", "{p}");
    let (_, got) = s.get_json(&one).await;
    assert_eq!(got["data"], put["data"], "GET shows what the rules enforce");

    // The same instant, however the query writes it (a raw `+` included,
    // which form decoding turns into a space).
    for q in [
        "2026-06-15T10:00:00Z",
        "2026-06-15T10:00:00.000Z",
        "2026-06-15T17:00:00%2B07:00",
        "2026-06-15T17:00:00+07:00",
    ] {
        let (status, list) = s.get_json(&format!("{url}?data.acceptanceDate={q}")).await;
        assert_eq!(status, 200);
        assert_eq!(list.as_array().unwrap().len(), 1, "{q}: {list}");
    }

    // A notice set back to DRAFT is not served, and its consents are not
    // offered.
    let res = s
        .req(
            Method::PUT,
            &s.cms(&format!(
                "svc-privacy-notice-v1/{}",
                notice["id"].as_str().unwrap()
            )),
        )
        .json(&json!({"data": {"name": "Privacy notice", "revision": 2, "status": "DRAFT"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = s
        .req(
            Method::GET,
            &s.bff(&format!(
                "/privacy-notice/{}",
                notice["id"].as_str().unwrap()
            )),
        )
        .send()
        .await
        .unwrap();
    problem(res, 404, "privacy_notice_not_found").await;
    let (_, list) = s
        .get_json(&s.bff("/to-accept?app=shop&dataSubject=u9"))
        .await;
    assert_eq!(list, json!([]));
    let res = s
        .req(Method::POST, &s.bff("/consent-acceptance"))
        .json(&acceptance(&consent["id"]))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "privacy_notice_not_published").await;
    assert_eq!(p["errors"][0]["field"], "consentId");
}

/// Consent input limits over HTTP: problem+json naming the field and the
/// limit, for a body field, a query parameter and a far too long subject.
#[tokio::test]
async fn consent_limits_over_the_wire() {
    let s = start().await;
    let (_, consent) = seed(&s).await;
    let mut body = acceptance(&consent["id"]);
    body["dataSubject"] = json!("s".repeat(accord::limits::MAX_SUBJECT_LEN));
    let (status, accepted) = s
        .post_json(&s.bff("/consent-acceptance"), body.clone())
        .await;
    assert_eq!(status, 201, "{accepted}");
    for (len, status) in [(accord::limits::MAX_SUBJECT_LEN + 1, 422), (900_000, 422)] {
        body["dataSubject"] = json!("s".repeat(len));
        let res = s
            .req(Method::POST, &s.bff("/consent-acceptance"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let p = problem(res, status, "validation_failed").await;
        assert_eq!(p["errors"][0]["field"], "dataSubject", "{p}");
        assert_eq!(p["errors"][0]["code"], "too_long", "{p}");
        assert!(
            p["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("256 bytes"),
            "{p}"
        );
    }
    let long = "a".repeat(accord::limits::MAX_APP_LEN + 1);
    let res = s
        .req(
            Method::GET,
            &s.bff(&format!("/purpose-options?app={long}&dataSubject=u1")),
        )
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "app", "{p}");
    let res = s
        .req(Method::POST, &s.bff("/purpose-withdrawal"))
        .json(&json!({"app": "shop", "dataSubject": "u1", "purposeCode": "x".repeat(129)}))
        .send()
        .await
        .unwrap();
    let p = problem(res, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "purposeCode", "{p}");
    assert_eq!(p["errors"][0]["code"], "too_long", "{p}");
}
