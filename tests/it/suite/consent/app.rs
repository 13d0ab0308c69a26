//! Application-facing behaviours: to-accept, accept consent, purpose
//! options, accept and withdraw purpose, privacy notice.

use std::sync::Arc;

use accord::consent::{AcceptConsentRequest, AcceptanceStatus, PurposeRequest, Reason};
use accord::store::ConsentStore;
use accord::ErrorKind;
use chrono::Duration;
use serde_json::{json, Value};

use super::{flags, Fx};

pub async fn to_accept_before_and_after_acceptance<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(365)).await;
    let list = fx
        .svc
        .to_accept(&fx.project, "shop", "u1")
        .await
        .expect("to-accept");
    assert_eq!(list.len(), 1);
    let entry = serde_json::to_value(&list[0]).expect("json");
    assert_eq!(entry["id"], c.id.as_str());
    assert_eq!(entry["name"], "shop consent");
    assert_eq!(entry["descriptionEn"], "Please agree");
    assert_eq!(entry["application"], "shop");
    assert_eq!(entry["purposes"], json!(["email", "sms"]));
    assert_eq!(entry["lifespan"], 365);
    assert_eq!(entry["privacyNoticeRef"], c.data["privacyNoticeRef"]);
    assert_eq!(entry["revision"], 1);
    assert_eq!(entry["status"], "PUBLISHED");
    assert_eq!(entry["ref1"], "r1");
    assert_eq!(entry["ref2"], Value::Null);
    assert_eq!(entry["reason"], "NEW");

    fx.advance(Duration::seconds(5));
    let acc = fx.accept("shop", "u1", &c.id, None).await;
    assert_eq!(acc.status, AcceptanceStatus::Accepted);
    assert_eq!(acc.acceptance_date, fx.now());
    assert_eq!(acc.expired_date, Some(fx.now() + Duration::days(365)));
    assert_eq!(acc.purposes, ["email", "sms"], "omitted purposes mean all");
    assert_eq!(acc.consent_application, "shop");
    assert_eq!(acc.consent_revision, Some(1));
    assert_eq!(
        acc.privacy_notice_id.as_deref(),
        c.data["privacyNoticeRef"].as_str()
    );
    assert_eq!(acc.privacy_notice_revision, Some(4));
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.to_accept("shop", "u2").await,
        [(c.id.clone(), Reason::New)]
    );
}

pub async fn to_accept_after_new_revision<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], None).await;
    fx.accept("shop", "u1", &c.id, None).await;
    fx.advance(Duration::hours(1));
    let mut data = c.data.clone();
    data.insert("revision".into(), json!(2));
    fx.replace("svc-consent-v1", &c.id, Value::Object(data))
        .await;
    let list = fx
        .svc
        .to_accept(&fx.project, "shop", "u1")
        .await
        .expect("to-accept");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].reason, Reason::NewRevision);
    assert_eq!(list[0].consent.revision, 2);
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true)]),
        "purposes are not revisioned"
    );
    let again = fx.accept("shop", "u1", &c.id, None).await;
    assert_eq!(again.consent_revision, Some(2));
    assert!(fx.to_accept("shop", "u1").await.is_empty());
}

pub async fn to_accept_after_expiry<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    fx.advance(Duration::seconds(1)); // consents of one instant are ordered by id
    let forever = fx.consent("shop", &["x"], Some(0)).await;
    let acc = fx.accept("shop", "u1", &c.id, None).await;
    let acc_forever = fx.accept("shop", "u1", &forever.id, None).await;
    assert_eq!(acc.expired_date, Some(fx.now() + Duration::days(30)));
    assert_eq!(acc_forever.expired_date, None);
    fx.advance(Duration::days(30) - Duration::microseconds(1));
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("x", true)])
    );
    fx.advance(Duration::microseconds(1));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Expired)]
    );
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", false), ("x", true)])
    );
    fx.advance(Duration::days(3650));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Expired)]
    );
    fx.accept("shop", "u1", &c.id, None).await;
    assert!(fx.to_accept("shop", "u1").await.is_empty());
}

pub async fn withdrawal_through_content_store<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(365)).await;
    let acc = fx.accept("shop", "u1", &c.id, Some(&["email"])).await;
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("sms", false)])
    );
    fx.advance(Duration::minutes(10));
    let body = json!({"dataSubject": "u1", "consentId": c.id, "application": "shop",
        "acceptanceDate": acc.acceptance_date, "status": "WITHDRAWN",
        "withdrawalDate": "2026-01-01T07:10:00+07:00", "note": "withdrawn by phone"});
    let put = fx.replace("svc-consent-acceptance-v1", &acc.id, body).await;
    assert_eq!(put.version, 2);
    assert_eq!(
        put.data["withdrawalDate"],
        accord::consent::format_time(fx.now()),
        "the server's time of the withdrawal"
    );
    assert_eq!(
        put.data["purposes"],
        json!(["email"]),
        "an edit keeps the evidence the update form leaves out"
    );
    assert_eq!(put.data["userAgent"], "Mozilla/5.0");
    assert_eq!(put.data["consentRevision"], 1);
    let reduced = serde_json::to_value(put.reduced_envelope()).expect("json");
    assert_eq!(reduced["contentType"]["alias"], "svc-consent-acceptance-v1");
    assert!(reduced.get("createdBy").is_none());

    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Withdrawn)]
    );
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", false), ("sms", false)])
    );
    let versions = fx
        .svc
        .content_versions(&fx.project, "svc-consent-acceptance-v1", &acc.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0].data["status"], "ACCEPTED");
    assert_eq!(
        versions[0].data["purposes"],
        json!(["email"]),
        "the proof of what was agreed stays"
    );
    assert_eq!(versions[0].data["consentRevision"], 1);
    assert_eq!(versions[1].data["status"], "WITHDRAWN");
    assert_eq!(versions[1].created_by, "app-backend");
    assert_eq!(versions[1].last_modified_by, "editor");
    assert!(versions[0].seq < versions[1].seq);

    fx.advance(Duration::minutes(1));
    fx.accept("shop", "u1", &c.id, Some(&["sms"])).await;
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", false), ("sms", true)])
    );
}

pub async fn other_app_and_project_never_appear<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let other = fx.other_project();
    let shop = fx.consent("shop", &["email"], None).await;
    let games = fx.consent("games", &["push"], None).await;
    let elsewhere = other.consent("shop", &["email"], None).await;
    let notice = fx.notice(1).await;
    for status in ["DRAFT", "ARCHIVED"] {
        fx.create(
            "svc-consent-v1",
            json!({"name": status, "application": "shop", "purposes": ["hidden"],
                   "privacyNoticeRef": notice.id, "revision": 1, "status": status}),
        )
        .await;
    }
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(shop.id.clone(), Reason::New)]
    );
    assert_eq!(
        fx.to_accept("games", "u1").await,
        [(games.id.clone(), Reason::New)]
    );
    assert_eq!(
        other.to_accept("shop", "u1").await,
        [(elsewhere.id.clone(), Reason::New)]
    );
    assert!(fx.to_accept("none", "u1").await.is_empty());
    assert_eq!(fx.flags("shop", "u1").await, flags(&[("email", false)]));

    let err = fx
        .svc
        .accept_consent(
            &fx.project,
            Fx::<S>::request("shop", "u1", &elsewhere.id, None),
            "a",
        )
        .await
        .expect_err("a consent of another project");
    assert_eq!(
        (err.kind(), err.code()),
        (ErrorKind::NotFound, "consent_not_found")
    );
    // An acceptance in one project and app does not satisfy another.
    fx.accept("shop", "u1", &shop.id, None).await;
    assert_eq!(
        other.to_accept("shop", "u1").await,
        [(elsewhere.id.clone(), Reason::New)]
    );
    assert_eq!(
        fx.to_accept("games", "u1").await,
        [(games.id.clone(), Reason::New)]
    );
    assert_eq!(other.flags("shop", "u1").await, flags(&[("email", false)]));
}

pub async fn accept_consent_errors<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], None).await;
    let mut draft = c.data.clone();
    draft.insert("status".into(), json!("DRAFT"));
    let d = fx.create("svc-consent-v1", Value::Object(draft)).await;
    let cases = [
        (
            Fx::<S>::request("shop", "u1", "nope", None),
            ErrorKind::NotFound,
            "consent_not_found",
        ),
        (
            Fx::<S>::request("shop", "u1", &d.id, None),
            ErrorKind::Validation,
            "consent_not_published",
        ),
        (
            Fx::<S>::request("games", "u1", &c.id, None),
            ErrorKind::Validation,
            "consent_not_in_app",
        ),
        (
            Fx::<S>::request("shop", "u1", &c.id, Some(&["email", "fax", "tv"])),
            ErrorKind::Validation,
            "validation_failed",
        ),
        (
            AcceptConsentRequest::default(),
            ErrorKind::Validation,
            "validation_failed",
        ),
    ];
    for (req, kind, code) in cases {
        let err = fx
            .svc
            .accept_consent(&fx.project, req, "a")
            .await
            .expect_err("must fail");
        assert_eq!((err.kind(), err.code()), (kind, code), "{err:?}");
        if code == "validation_failed" {
            let fields: Vec<(&str, &str)> = err
                .fields()
                .iter()
                .map(|f| (f.field.as_str(), f.code.as_str()))
                .collect();
            assert!(
                fields
                    == [
                        ("purposes[1]", "unknown_purpose"),
                        ("purposes[2]", "unknown_purpose")
                    ]
                    || fields.len() == 9 && fields.iter().all(|(_, c)| *c == "required"),
                "{fields:?}"
            );
        }
    }
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::New)],
        "nothing was recorded"
    );
    let err = fx
        .svc
        .to_accept(&fx.project, "", "u1")
        .await
        .expect_err("app required");
    assert_eq!(err.fields()[0].field, "app");
}

pub async fn app_acceptance_is_content<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(7)).await;
    let acc = fx.accept("shop", "u1", &c.id, Some(&["sms"])).await;
    fx.accept("shop", "u2", &c.id, None).await;
    let q = accord::consent::ContentQuery::from_pairs([("data.dataSubject", "u1")]).expect("query");
    let page = fx
        .svc
        .list_content(&fx.project, "svc-consent-acceptance-v1", &q)
        .await
        .expect("list");
    assert_eq!(page.total, 1);
    let record = &page.items[0];
    assert_eq!(record.id, acc.id);
    assert_eq!(record.created_by, "app-backend");
    let d = &record.data;
    assert_eq!(d["consentApplication"], "shop");
    assert_eq!(d["acceptanceDate"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(d["expiredDate"], "2026-01-08T00:00:00.000000Z");
    assert_eq!(d["withdrawalDate"], "");
    assert_eq!(d["status"], "ACCEPTED");
    assert_eq!(d["purposes"], json!(["sms"]));
    assert_eq!(d["deviceFingerprintId"], "fp-1");
    assert_eq!(d["note"], "signup");
    assert_eq!(d["consentRevision"], 1);
    assert_eq!(d["privacyNoticeRevision"], 4);
    let one = fx
        .svc
        .content(&fx.project, "svc-consent-acceptance-v1", &acc.id)
        .await
        .expect("get");
    assert_eq!(&one, record);
}

pub async fn purpose_flags_over_a_sequence<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx
        .consent("shop", &["email", "sms", "push"], Some(10))
        .await;
    fx.create(
        "svc-purpose-v1",
        json!({"code": "email", "nameEn": "Email", "nameTh": "อีเมล"}),
    )
    .await;
    let options = fx
        .svc
        .purpose_options(&fx.project, "shop", "u1")
        .await
        .expect("options");
    assert_eq!(options.len(), 3);
    assert_eq!(
        (options[0].name_en.as_str(), options[0].name_th.as_str()),
        ("Email", "อีเมล")
    );
    assert_eq!(
        (options[1].name_en.as_str(), options[1].name_th.as_str()),
        ("", "")
    );
    assert!(options.iter().all(|o| o.consent_id == c.id && !o.accepted));

    fx.accept("shop", "u1", &c.id, Some(&["email"])).await;
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("sms", false), ("push", false)])
    );
    let w = fx
        .svc
        .withdraw_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "sms"))
        .await
        .expect("withdraw");
    assert_eq!(w.status, AcceptanceStatus::Withdrawn);
    assert_eq!(
        (w.acceptance_date, w.expired_date),
        (None, None),
        "never accepted"
    );
    assert_eq!(w.withdrawal_date, Some(fx.now()));
    fx.advance(Duration::hours(1));
    let a = fx
        .svc
        .accept_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "sms"))
        .await
        .expect("accept");
    assert_eq!(a.status, AcceptanceStatus::Accepted);
    assert_eq!(a.acceptance_date, Some(fx.now()));
    assert_eq!(a.expired_date, Some(fx.now() + Duration::days(10)));
    assert_eq!(a.withdrawal_date, None);
    assert_eq!(
        (
            a.consent_application.as_str(),
            a.data_subject.as_str(),
            a.purpose_code.as_str()
        ),
        ("shop", "u1", "sms")
    );
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("sms", true), ("push", false)])
    );
    fx.advance(Duration::hours(1));
    for _ in 0..2 {
        let w = fx
            .svc
            .withdraw_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "sms"))
            .await
            .expect("withdraw");
        assert_eq!(
            w.acceptance_date, a.acceptance_date,
            "keeps the acceptance it ends"
        );
        assert_eq!(w.expired_date, a.expired_date);
        assert_eq!(w.withdrawal_date, Some(fx.now()));
        assert_ne!(w.id, a.id);
        assert_eq!(
            fx.flags("shop", "u1").await,
            flags(&[("email", true), ("sms", false), ("push", false)])
        );
    }
    // The same instant: the later record wins.
    fx.svc
        .withdraw_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "email"))
        .await
        .expect("withdraw");
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", false), ("sms", false), ("push", false)])
    );
    fx.accept("shop", "u1", &c.id, Some(&["email", "push"]))
        .await;
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("sms", false), ("push", true)])
    );
    assert_eq!(
        fx.flags("shop", "u2").await,
        flags(&[("email", false), ("sms", false), ("push", false)])
    );

    for (req, code) in [
        (Fx::<S>::purpose("shop", "u1", "fax"), "purpose_not_found"),
        (
            Fx::<S>::purpose("games", "u1", "email"),
            "purpose_not_found",
        ),
    ] {
        let e = fx
            .svc
            .accept_purpose(&fx.project, req.clone())
            .await
            .expect_err("unknown");
        assert_eq!((e.kind(), e.code()), (ErrorKind::NotFound, code));
        let e = fx
            .svc
            .withdraw_purpose(&fx.project, req)
            .await
            .expect_err("unknown");
        assert_eq!((e.kind(), e.code()), (ErrorKind::NotFound, code));
    }
    let e = fx
        .svc
        .accept_purpose(&fx.project, PurposeRequest::default())
        .await
        .expect_err("empty");
    assert_eq!(e.fields().len(), 3);
}

pub async fn purpose_acceptance_expires<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    fx.consent("shop", &["email"], Some(2)).await;
    fx.svc
        .accept_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "email"))
        .await
        .expect("accept");
    fx.advance(Duration::days(2) - Duration::seconds(1));
    assert_eq!(fx.flags("shop", "u1").await, flags(&[("email", true)]));
    fx.advance(Duration::seconds(1));
    assert_eq!(fx.flags("shop", "u1").await, flags(&[("email", false)]));
}

pub async fn purpose_catalogue_latest_wins<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    fx.consent("shop", &["email"], None).await;
    let first = fx
        .create(
            "svc-purpose-v1",
            json!({"code": "email", "nameEn": "E-mail"}),
        )
        .await;
    fx.advance(Duration::seconds(1));
    fx.create(
        "svc-purpose-v1",
        json!({"code": "email", "nameEn": "Email"}),
    )
    .await;
    fx.create(
        "svc-purpose-v1",
        json!({"code": "other", "nameEn": "Other"}),
    )
    .await;
    let name =
        |o: Vec<accord::consent::PurposeOption>| (o[0].name_en.clone(), o[0].name_th.clone());
    let o = fx
        .svc
        .purpose_options(&fx.project, "shop", "u1")
        .await
        .expect("options");
    assert_eq!(name(o), ("Email".to_owned(), String::new()));
    fx.advance(Duration::seconds(1));
    fx.replace(
        "svc-purpose-v1",
        &first.id,
        json!({"code": "email", "nameEn": "Mail", "nameTh": "เมล"}),
    )
    .await;
    let o = fx
        .svc
        .purpose_options(&fx.project, "shop", "u1")
        .await
        .expect("options");
    assert_eq!(name(o), ("Mail".to_owned(), "เมล".to_owned()));
}

pub async fn privacy_notice_details<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let n = fx.notice(3).await;
    let got = fx
        .svc
        .privacy_notice(&fx.project, &n.id)
        .await
        .expect("notice");
    let v = serde_json::to_value(&got).expect("json");
    assert_eq!(
        v,
        json!({"id": n.id, "name": "Privacy", "descriptionEn": "How we use data", "descriptionTh": null,
               "status": "PUBLISHED", "revision": 3})
    );
    let e = fx
        .svc
        .privacy_notice(&fx.project, "nope")
        .await
        .expect_err("unknown");
    assert_eq!(
        (e.kind(), e.code()),
        (ErrorKind::NotFound, "privacy_notice_not_found")
    );
    let e = fx
        .other_project()
        .svc
        .privacy_notice("elsewhere", &n.id)
        .await
        .expect_err("other project");
    assert_eq!(e.kind(), ErrorKind::NotFound);
}
