//! The consent pages, without a browser: content lists and forms, the
//! new-revision warning, and the data-subject lookup.

use accord::consent::{AcceptConsentRequest, PurposeRequest};
use accord::http::scope;
use axum::http::StatusCode;
use chrono::Duration;

use crate::support::*;

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

const C: &str = "/admin/p/shop/content";

/// Creates a notice and a consent through the forms; the consent's page.
async fn notice_and_consent(client: &mut Client) -> String {
    let csrf = client.csrf_on(&format!("{C}/notices/new")).await;
    let res = client
        .post(
            &format!("{C}/notices/new"),
            &[
                ("csrf", &csrf),
                ("data.name", "Privacy notice"),
                ("data.revision", "1"),
                ("data.status", "PUBLISHED"),
                ("data.descriptionEn", "We keep your data safe."),
                ("data.descriptionTh", "เราเก็บข้อมูลของคุณอย่างปลอดภัย"),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
    let notice_id = res.location().rsplit('/').next().unwrap().to_owned();
    let page = client.get(res.location()).await;
    assert!(page.body.contains("The privacy notice was created."));
    assert!(page.body.contains("เราเก็บข้อมูลของคุณอย่างปลอดภัย"));
    assert!(
        page.body.contains("class=\"side-by-side\""),
        "EN and TH are not side by side"
    );
    let res = client
        .post(
            &format!("{C}/consents/new"),
            &[
                ("csrf", &csrf),
                ("data.name", "Marketing"),
                ("data.application", "web"),
                ("data.revision", "1"),
                ("data.status", "PUBLISHED"),
                ("data.privacyNoticeRef", &notice_id),
                ("data.purposes", "email\nsms"),
                ("data.lifespan", "365"),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
    res.location().to_owned()
}

#[test]
fn content_forms_show_errors_beside_fields_and_lists_filter() {
    run(async {
        let app = app();
        let mut client = Client::new(&app);
        client.sign_in(&token(scope::ALL)).await;
        notice_and_consent(&mut client).await;
        let csrf = client.csrf_on(&format!("{C}/consents/new")).await;
        let res = client
            .post(
                &format!("{C}/consents/new"),
                &[
                    ("csrf", &csrf),
                    ("data.name", "No app"),
                    ("data.revision", "x"),
                ],
            )
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            res.body.contains("id=\"data-application-error\""),
            "{}",
            res.body
        );
        assert!(res.body.contains("id=\"data-revision-error\""));
        let list = client.get(&format!("{C}/consents?application=web")).await;
        assert!(list.body.contains(">Marketing</a>"));
        let none = client.get(&format!("{C}/consents?application=app")).await;
        assert!(!none.body.contains(">Marketing</a>"));
        let by_purpose = client.get(&format!("{C}/consents?purposes=sms")).await;
        assert!(by_purpose.body.contains(">Marketing</a>"));
    });
}

/// Subject u1 accepts the consent at t0 and withdraws purpose sms an hour
/// later.
async fn accept_then_withdraw_sms(app: &App, consent_id: &str) {
    let svc = app.api.consent();
    svc.accept_consent(
        P,
        AcceptConsentRequest {
            app: Some("web".into()),
            data_subject: Some("u1".into()),
            consent_id: Some(consent_id.to_owned()),
            purposes: None,
            user_agent: Some("UA".into()),
            country: Some("TH".into()),
            local_ip: Some("10.0.0.1".into()),
            os_version: Some("17".into()),
            model: Some("phone".into()),
            device_fingerprint_id: Some("fp".into()),
            note: None,
            ..Default::default()
        },
        "u1",
    )
    .await
    .unwrap();
    app.clock.advance(Duration::hours(1));
    svc.withdraw_purpose(
        P,
        PurposeRequest {
            app: Some("web".into()),
            data_subject: Some("u1".into()),
            purpose_code: Some("sms".into()),
        },
    )
    .await
    .unwrap();
}

#[test]
fn a_new_revision_warns_that_subjects_are_asked_again_and_the_lookup_shows_it_all() {
    run(async {
        let app = app();
        let mut client = Client::new(&app);
        client.sign_in(&token(scope::ALL)).await;
        let consent_page = notice_and_consent(&mut client).await;
        let consent_id = consent_page.rsplit('/').next().unwrap().to_owned();
        accept_then_withdraw_sms(&app, &consent_id).await;
        let svc = app.api.consent();
        let page = client.get("/admin/p/shop/subjects?subject=u1").await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(
            page.body
                .contains("Consent Marketing accepted (revision 1)"),
            "{}",
            page.body
        );
        assert!(page.body.contains("Purpose sms withdrawn in web"));
        // State at a time between the two: sms was still granted.
        let before = client
            .get("/admin/p/shop/subjects?subject=u1&at=2026-06-15T10:30")
            .await;
        let at = &before.body
            [before.body.find("State at").unwrap()..before.body.find("<h2>Now</h2>").unwrap()];
        assert!(at.contains("sms — since"), "{at}");
        let after = client
            .get("/admin/p/shop/subjects?subject=u1&at=2026-06-15T11:30")
            .await;
        let at = &after.body
            [after.body.find("State at").unwrap()..after.body.find("<h2>Now</h2>").unwrap()];
        assert!(
            !at.contains("sms — since") && at.contains("email — since"),
            "{at}"
        );

        // Revision 2: the form says what it means before saving.
        let csrf = client.csrf_on(&consent_page).await;
        let form = [
            ("csrf", csrf.as_str()),
            ("data.name", "Marketing"),
            ("data.application", "web"),
            ("data.revision", "2"),
            ("data.status", "PUBLISHED"),
            ("data.purposes", "email\nsms"),
            ("data.lifespan", "365"),
        ];
        let notice = svc
            .content(P, "svc-consent-v1", &consent_id)
            .await
            .unwrap()
            .data["privacyNoticeRef"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut form = form.to_vec();
        form.push(("data.privacyNoticeRef", &notice));
        let warned = client.post(&consent_page, &form).await;
        assert!(warned
            .body
            .contains("asks every data subject who accepted an earlier revision to accept again"));
        assert_eq!(
            svc.content(P, "svc-consent-v1", &consent_id)
                .await
                .unwrap()
                .version,
            1,
            "saved before confirming"
        );
        form.push(("confirm", "revision"));
        let saved = client.post(&consent_page, &form).await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
        let page = client.get(&consent_page).await;
        assert!(page
            .body
            .contains("Revision 2 saved: data subjects will be asked to accept again."));
        let lookup = client.get("/admin/p/shop/subjects?subject=u1").await;
        assert!(
            lookup.body.contains("asked again: a new revision"),
            "{}",
            lookup.body
        );
        assert!(lookup
            .body
            .contains("Re-consent asked: Marketing is now at revision 2"));
    });
}

#[test]
fn a_read_only_token_sees_no_edit_controls_and_cannot_post() {
    run(async {
        let app = app();
        let mut writer = Client::new(&app);
        writer.sign_in(&token(scope::ALL)).await;
        let page = notice_and_consent(&mut writer).await;
        let mut reader = Client::new(&app);
        reader.sign_in(&token(&[scope::CMS_READ])).await;
        let view = reader.get(&page).await;
        assert_eq!(view.status, StatusCode::OK);
        assert!(view.body.contains("<fieldset disabled>"));
        assert!(!view.body.contains(">Save</button>"));
        let list = reader.get(&format!("{C}/consents")).await;
        assert!(!list.body.contains("New consent"));
        let csrf = reader.csrf_on(&page).await;
        let res = reader
            .post(&page, &[("csrf", &csrf), ("data.name", "x")])
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
        // The lookup needs consent.audit.
        assert_eq!(
            reader.get("/admin/p/shop/subjects").await.status,
            StatusCode::FORBIDDEN
        );
    });
}

#[test]
fn saving_a_consent_unchanged_keeps_its_data() {
    run(async {
        let app = app();
        let svc = app.api.consent();
        let notice = svc
            .create_content(
                P,
                "svc-privacy-notice-v1",
                serde_json::json!({"name": "N", "revision": 1, "status": "PUBLISHED"}),
                "seed",
            )
            .await
            .unwrap();
        let data = serde_json::json!({
            "name": "Everything <&> \"here\"", "application": "web", "purposes": ["email", "sms"], "lifespan": 30,
            "privacyNoticeRef": notice.id, "revision": 4, "status": "PUBLISHED",
            "descriptionEn": "Line one\nline two", "descriptionTh": "ไทย", "ref1": "r1", "formScreen": {"kept": true}
        });
        let consent = svc
            .create_content(P, "svc-consent-v1", data, "seed")
            .await
            .unwrap();
        let mut client = Client::new(&app);
        client.sign_in(&token(scope::ALL)).await;
        let page_path = format!("{C}/consents/{}", consent.id);
        let page = client.get(&page_path).await;
        let fields = submitted(&page.body, &format!("action=\"{page_path}\""));
        // As a browser sends a textarea: CRLF line breaks.
        let fields: Vec<(String, String)> = fields
            .into_iter()
            .map(|(k, v)| (k, v.replace('\n', "\r\n")))
            .collect();
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let res = client.post(&page_path, &pairs).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        let after = svc.content(P, "svc-consent-v1", &consent.id).await.unwrap();
        assert_eq!(after.version, 2);
        let differs: Vec<&String> = consent
            .data
            .keys()
            .chain(after.data.keys())
            .filter(|k| {
                consent.data.get(*k).unwrap_or(&serde_json::Value::Null)
                    != after.data.get(*k).unwrap_or(&serde_json::Value::Null)
            })
            .collect();
        assert!(
            differs.is_empty(),
            "changed: {differs:?}\nbefore {:?}\nafter {:?}",
            consent.data,
            after.data
        );
    });
}
