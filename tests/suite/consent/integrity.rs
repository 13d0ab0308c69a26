//! The consent integrity rules on every store, each test an attack it
//! prevents: forging a future revision, accepting a draft, a never-expiring
//! or future-dated acceptance, an acceptance for another application,
//! reviving a withdrawal, back-dating, walking a revision backwards, a new
//! notice revision that asks no one, a retired notice still offered,
//! timestamp filters that miss an instant written another way, and the
//! check that reports records bent before the rules existed.

use std::sync::Arc;

use accord::consent::{
    format_time, ContentQuery, ContentRecord, ContentType, ContentWrite, Reason,
};
use accord::store::ConsentStore;
use accord::ErrorKind;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::{flags, Fx};

const CONSENT: &str = "svc-consent-v1";
const NOTICE: &str = "svc-privacy-notice-v1";
const ACCEPTANCE: &str = "svc-consent-acceptance-v1";

/// A content-store acceptance of `consent` by `u1` in `shop`, accepted at
/// `at` with the expiry of a 30-day lifespan.
fn acceptance(consent: &str, at: DateTime<Utc>) -> Value {
    json!({"dataSubject": "u1", "consentId": consent, "consentApplication": "shop",
           "acceptanceDate": at, "status": "ACCEPTED", "purposes": ["email"],
           "expiredDate": at + Duration::days(30), "userAgent": "ua", "country": "TH",
           "localIp": "10.0.0.1", "osVersion": "17", "model": "m", "deviceFingerprintId": "fp",
           "note": ""})
}

fn with(mut base: Value, patch: &Value) -> Value {
    for (k, v) in patch.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// The fields and codes of a refused write; panics when it succeeded.
fn refused(r: accord::Result<ContentRecord>) -> Vec<(String, String)> {
    let err = r.expect_err("must be refused");
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    err.fields()
        .iter()
        .map(|f| (f.field.clone(), f.code.clone()))
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
        .collect()
}

impl<S: ConsentStore + 'static> Fx<S> {
    async fn try_create(&self, t: &str, data: Value) -> accord::Result<ContentRecord> {
        self.svc.create_content(&self.project, t, data, "cms").await
    }

    async fn try_replace(&self, t: &str, id: &str, data: Value) -> accord::Result<ContentRecord> {
        self.svc
            .replace_content(&self.project, t, id, data, "cms")
            .await
    }

    /// The acceptances of `u1` as stored.
    async fn acceptances(&self) -> Vec<ContentRecord> {
        let q = ContentQuery::default().with_filter("dataSubject", "u1");
        self.svc
            .list_content(&self.project, ACCEPTANCE, &q)
            .await
            .expect("list")
            .items
    }
}

pub async fn forged_revision_is_refused<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let notice = c.data["privacyNoticeRef"].clone();
    for (patch, field) in [
        (json!({"consentRevision": 7}), "data.consentRevision"),
        (json!({"consentRevision": 99}), "data.consentRevision"),
        (
            json!({"privacyNoticeRevision": 5}),
            "data.privacyNoticeRevision",
        ),
        (
            json!({"privacyNoticeId": "another"}),
            "data.privacyNoticeId",
        ),
        (
            json!({"receivedDate": "2025-01-01T00:00:00Z"}),
            "data.receivedDate",
        ),
    ] {
        let body = with(acceptance(&c.id, fx.now()), &patch);
        assert_eq!(
            refused(fx.try_create(ACCEPTANCE, body).await),
            pairs(&[(field, "evidence_mismatch")]),
            "{patch}"
        );
    }
    assert!(fx.acceptances().await.is_empty(), "nothing was written");
    // The values in force may be repeated; left out, the server fills them.
    let same = json!({"consentRevision": 1, "privacyNoticeId": notice, "privacyNoticeRevision": 4});
    let a = fx
        .create(ACCEPTANCE, with(acceptance(&c.id, fx.now()), &same))
        .await;
    assert_eq!(a.data["receivedDate"], format_time(fx.now()));
    let b = fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    for k in [
        "consentRevision",
        "privacyNoticeId",
        "privacyNoticeRevision",
    ] {
        assert_eq!(a.data[k], b.data[k], "{k}");
    }
    // Once revision 7 is published, the subject is asked again.
    let mut data = c.data.clone();
    data.insert("revision".into(), json!(7));
    fx.replace(CONSENT, &c.id, Value::Object(data)).await;
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::NewRevision)]
    );
}

pub async fn draft_or_archived_is_not_accepted<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    for status in ["DRAFT", "ARCHIVED"] {
        let mut data = c.data.clone();
        data.insert("status".into(), json!(status));
        let other = fx.create(CONSENT, Value::Object(data)).await;
        assert_eq!(
            refused(
                fx.try_create(ACCEPTANCE, acceptance(&other.id, fx.now()))
                    .await
            ),
            pairs(&[("data.consentId", "consent_not_published")]),
            "{status}"
        );
        let err = fx
            .svc
            .accept_consent(
                &fx.project,
                Fx::<S>::request("shop", "u1", &other.id, None),
                "app",
            )
            .await
            .expect_err("the consent route refuses it too");
        assert_eq!(err.code(), "consent_not_published");
    }
    assert!(fx.acceptances().await.is_empty());
}

pub async fn never_expiring_or_future_acceptance_is_refused<S: ConsentStore + 'static>(
    store: Arc<S>,
) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    fx.advance(Duration::days(1));
    let now = fx.now();
    let future = now + Duration::minutes(6);
    for (patch, field, code) in [
        (
            json!({"expiredDate": null}),
            "data.expiredDate",
            "evidence_mismatch",
        ),
        (
            json!({"expiredDate": "9999-12-31T00:00:00Z"}),
            "data.expiredDate",
            "evidence_mismatch",
        ),
        (
            json!({"expiredDate": now + Duration::days(31)}),
            "data.expiredDate",
            "evidence_mismatch",
        ),
        (
            json!({"acceptanceDate": future, "expiredDate": future + Duration::days(30)}),
            "data.acceptanceDate",
            "in_future",
        ),
    ] {
        let body = with(acceptance(&c.id, now), &patch);
        assert_eq!(
            refused(fx.try_create(ACCEPTANCE, body).await),
            pairs(&[(field, code)]),
            "{patch}"
        );
    }
    assert!(fx.acceptances().await.is_empty());
    // A client clock up to five minutes ahead is accepted, in any offset.
    let ahead = now + Duration::minutes(5);
    let a = fx
        .create(
            ACCEPTANCE,
            with(
                acceptance(&c.id, ahead),
                &json!({"acceptanceDate": ahead.with_timezone(&chrono::FixedOffset::east_opt(7 * 3600).unwrap())}),
            ),
        )
        .await;
    assert_eq!(a.data["acceptanceDate"], format_time(ahead));
    assert_eq!(a.data["receivedDate"], format_time(now), "beside it");
    fx.advance(Duration::days(30) + Duration::minutes(5));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Expired)],
        "it expires like any other"
    );
}

pub async fn acceptance_for_another_app_is_refused<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let body = with(
        acceptance(&c.id, fx.now()),
        &json!({"consentApplication": "other-app"}),
    );
    assert_eq!(
        refused(fx.try_create(ACCEPTANCE, body).await),
        pairs(&[("data.consentApplication", "consent_not_in_app")])
    );
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::New)]
    );
    assert_eq!(fx.flags("shop", "u1").await, flags(&[("email", false)]));
}

fn withdrawal(consent: &str, accepted: &Value, status: &str) -> Value {
    json!({"dataSubject": "u1", "consentId": consent, "application": "shop",
           "acceptanceDate": accepted, "status": status,
           "withdrawalDate": if status == "WITHDRAWN" { "2026-01-01T00:00:00Z" } else { "" },
           "note": "edit"})
}

pub async fn a_withdrawal_is_not_revived<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    let date = json!(a.acceptance_date);
    fx.advance(Duration::hours(1));
    let w = fx
        .replace(ACCEPTANCE, &a.id, withdrawal(&c.id, &date, "WITHDRAWN"))
        .await;
    assert_eq!(w.data["withdrawalDate"], format_time(fx.now()));
    fx.advance(Duration::hours(1));
    assert_eq!(
        refused(
            fx.try_replace(ACCEPTANCE, &a.id, withdrawal(&c.id, &date, "ACCEPTED"))
                .await
        ),
        pairs(&[("data.status", "invalid_transition")])
    );
    // A retried withdrawal is fine and keeps the first withdrawal's date.
    let again = fx
        .replace(ACCEPTANCE, &a.id, withdrawal(&c.id, &date, "WITHDRAWN"))
        .await;
    assert_eq!(again.data["withdrawalDate"], w.data["withdrawalDate"]);
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Withdrawn)]
    );
    // Created withdrawn: not a thing (an acceptance is created ACCEPTED).
    let body = with(
        acceptance(&c.id, fx.now()),
        &json!({"status": "WITHDRAWN", "withdrawalDate": fx.now()}),
    );
    assert_eq!(
        refused(fx.try_create(ACCEPTANCE, body).await),
        pairs(&[("data.status", "invalid_transition")])
    );
    // Consent given again is a new acceptance.
    let b = fx.accept("shop", "u1", &c.id, None).await;
    assert_ne!(a.id, b.id);
    assert!(fx.to_accept("shop", "u1").await.is_empty());
}

pub async fn back_dating_is_refused<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    fx.advance(Duration::days(10));
    let mut data = c.data.clone();
    data.insert("revision".into(), json!(2));
    fx.replace(CONSENT, &c.id, Value::Object(data)).await;
    fx.advance(Duration::days(1));
    // Claiming acceptance of revision 2 before revision 2 existed.
    let before = fx.now() - Duration::days(5);
    assert_eq!(
        refused(fx.try_create(ACCEPTANCE, acceptance(&c.id, before)).await),
        pairs(&[("data.acceptanceDate", "before_revision")])
    );
    let a = fx
        .create(ACCEPTANCE, acceptance(&c.id, fx.now() - Duration::hours(2)))
        .await;
    // An edit cannot move the date either way, nor the application.
    for patch in [
        json!({"acceptanceDate": "2000-01-01T00:00:00Z"}),
        json!({"acceptanceDate": "2030-01-01T00:00:00Z"}),
        json!({"application": "other-app"}),
    ] {
        let body = with(
            withdrawal(&c.id, &a.data["acceptanceDate"], "ACCEPTED"),
            &patch,
        );
        let field = format!("data.{}", patch.as_object().unwrap().keys().next().unwrap());
        assert_eq!(
            refused(fx.try_replace(ACCEPTANCE, &a.id, body).await),
            pairs(&[(&field, "immutable")])
        );
    }
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 1, "nothing was appended");
}

/// The record is the truth: after an edit in the spec's update form, what
/// GET returns is what the rules enforce.
pub async fn an_edit_keeps_the_evidence<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, Some(&["email"])).await;
    let before = fx
        .svc
        .content(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("get");
    fx.advance(Duration::minutes(1));
    let edited = fx
        .replace(
            ACCEPTANCE,
            &a.id,
            withdrawal(&c.id, &json!(a.acceptance_date), "ACCEPTED"),
        )
        .await;
    let got = fx
        .svc
        .content(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("get");
    assert_eq!(got, edited);
    for (k, v) in &before.data {
        if k != "note" {
            assert_eq!(&got.data[k], v, "{k} is kept");
        }
    }
    assert_eq!(got.data["note"], "edit");
    // What is enforced is what is shown: the purposes, revision and expiry.
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.flags("shop", "u1").await,
        flags(&[("email", true), ("sms", false)])
    );
    let state = fx
        .svc
        .state_at(&fx.project, "u1", "shop", fx.now())
        .await
        .expect("state");
    let agreed = &state.consents[0];
    assert_eq!(json!(agreed.purposes), got.data["purposes"]);
    assert_eq!(json!(agreed.consent_revision), got.data["consentRevision"]);
    assert_eq!(
        agreed.expired_date.map(format_time),
        got.data["expiredDate"].as_str().map(str::to_owned)
    );
    fx.advance(Duration::days(30));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Expired)],
        "the expiry shown is the expiry enforced"
    );
}

pub async fn revisions_do_not_walk_backwards<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], None).await;
    let at = |revision: i64, purposes: &[&str]| {
        let mut data = c.data.clone();
        data.insert("revision".into(), json!(revision));
        data.insert("purposes".into(), json!(purposes));
        Value::Object(data)
    };
    fx.replace(CONSENT, &c.id, at(8, &["email"])).await;
    fx.accept("shop", "u1", &c.id, None).await;
    for (data, field, code) in [
        (at(7, &["email"]), "data.revision", "revision_decreased"),
        (at(0, &["email"]), "data.revision", "out_of_range"),
        (
            at(8, &["email", "sms"]),
            "data.purposes",
            "revision_required",
        ),
    ] {
        assert_eq!(
            refused(fx.try_replace(CONSENT, &c.id, data).await),
            pairs(&[(field, code)])
        );
    }
    assert!(
        fx.to_accept("shop", "u1").await.is_empty(),
        "still revision 8"
    );
    // A purpose is added with a new revision: everyone is asked.
    fx.replace(CONSENT, &c.id, at(9, &["email", "sms"])).await;
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::NewRevision)]
    );
    // Revision 0 is refused on create too, and notices only go up.
    let mut zero = c.data.clone();
    zero.insert("revision".into(), json!(0));
    assert_eq!(
        refused(fx.try_create(CONSENT, Value::Object(zero)).await),
        pairs(&[("data.revision", "out_of_range")])
    );
    let notice = c.data["privacyNoticeRef"].as_str().unwrap();
    let n = |revision: i64| json!({"name": "Privacy", "revision": revision, "status": "PUBLISHED"});
    assert_eq!(
        refused(fx.try_replace(NOTICE, notice, n(3)).await),
        pairs(&[("data.revision", "revision_decreased")])
    );
    fx.replace(NOTICE, notice, n(4)).await;
}

pub async fn a_new_notice_revision_asks_again<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let notice = fx.notice(1).await;
    let consent = |name: &str, app: &str| {
        json!({"name": name, "application": app, "purposes": [format!("{name}-p")],
               "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"})
    };
    let a = fx.create(CONSENT, consent("a", "shop")).await;
    fx.advance(Duration::seconds(1));
    let b = fx.create(CONSENT, consent("b", "shop")).await;
    let g = fx.create(CONSENT, consent("g", "games")).await;
    for c in [&a, &b] {
        fx.accept("shop", "u1", &c.id, None).await;
    }
    fx.accept("games", "u1", &g.id, None).await;
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    let n = |revision: i64, status: &str| json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": revision, "status": status});
    fx.replace(NOTICE, &notice.id, n(2, "PUBLISHED")).await;
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [
            (a.id.clone(), Reason::NewNoticeRevision),
            (b.id.clone(), Reason::NewNoticeRevision)
        ],
        "every consent that references it"
    );
    assert_eq!(
        fx.to_accept("games", "u1").await,
        [(g.id.clone(), Reason::NewNoticeRevision)]
    );
    let again = fx.accept("shop", "u1", &a.id, None).await;
    assert_eq!(again.privacy_notice_revision, Some(2));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(b.id.clone(), Reason::NewNoticeRevision)]
    );

    // A notice that is not PUBLISHED is neither offered nor served.
    fx.replace(NOTICE, &notice.id, n(3, "DRAFT")).await;
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert!(fx.to_accept("shop", "u2").await.is_empty());
    assert!(fx.flags("shop", "u2").await.is_empty());
    let err = fx
        .svc
        .privacy_notice(&fx.project, &notice.id)
        .await
        .expect_err("not served");
    assert_eq!(err.code(), "privacy_notice_not_found");
    let err = fx
        .svc
        .accept_consent(
            &fx.project,
            Fx::<S>::request("shop", "u2", &a.id, None),
            "app",
        )
        .await
        .expect_err("not accepted");
    assert_eq!(err.code(), "privacy_notice_not_published");
    let body = with(
        acceptance(&a.id, fx.now()),
        &json!({"purposes": ["a-p"], "expiredDate": null}),
    );
    assert_eq!(
        refused(fx.try_create(ACCEPTANCE, body).await),
        pairs(&[("data.consentId", "privacy_notice_not_published")])
    );
    let err = fx
        .svc
        .accept_purpose(&fx.project, Fx::<S>::purpose("shop", "u2", "a-p"))
        .await
        .expect_err("no offered consent lists it");
    assert_eq!(err.code(), "purpose_not_found");
    fx.svc
        .withdraw_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "a-p"))
        .await
        .expect("withdrawing is always possible");
    fx.replace(NOTICE, &notice.id, n(3, "PUBLISHED")).await;
    assert_eq!(
        fx.to_accept("shop", "u2").await,
        [(a.id.clone(), Reason::New), (b.id.clone(), Reason::New)]
    );
    assert_eq!(
        fx.svc
            .privacy_notice(&fx.project, &notice.id)
            .await
            .expect("served")
            .revision,
        3
    );
}

pub async fn timestamp_filters_compare_instants<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    fx.advance(Duration::hours(3));
    let a = fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    assert_eq!(a.data["acceptanceDate"], "2026-01-01T03:00:00.000000Z");
    fx.advance(Duration::seconds(1));
    fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    for same in [
        "2026-01-01T03:00:00.000000Z",
        "2026-01-01T03:00:00Z",
        "2026-01-01T03:00:00.000Z",
        "2026-01-01T10:00:00+07:00",
        "2026-01-01T10:00:00.0+07:00",
        "2025-12-31T22:00:00-05:00",
    ] {
        let q = ContentQuery::from_pairs([("data.acceptanceDate", same)]).expect("query");
        let page = fx
            .svc
            .list_content(&fx.project, ACCEPTANCE, &q)
            .await
            .expect("list");
        assert_eq!(
            page.items.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            [a.id.as_str()],
            "{same}"
        );
    }
    for other in ["2026-01-01T03:00:00.000001Z", "2026-01-01", "03:00:00Z"] {
        let q = ContentQuery::from_pairs([("data.acceptanceDate", other)]).expect("query");
        let page = fx
            .svc
            .list_content(&fx.project, ACCEPTANCE, &q)
            .await
            .expect("list");
        assert!(page.items.is_empty(), "{other}");
    }
}

/// Records written straight into the store, as older versions of the crate
/// or a hand-edited database could have left them, are reported by the
/// check and not changed; records written through the service are clean.
pub async fn the_check_reports_bent_records<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(Arc::clone(&store));
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    fx.replace(
        ACCEPTANCE,
        &a.id,
        withdrawal(&c.id, &json!(a.acceptance_date), "WITHDRAWN"),
    )
    .await;
    fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    let clean = fx.svc.check_records(&fx.project).await.expect("check");
    assert!(clean.is_empty(), "{clean:#?}");

    let write = |t: ContentType, id: &str, data: Value| ContentWrite {
        project_id: fx.project.clone(),
        content_type: t,
        id: id.to_owned(),
        data: data.as_object().unwrap().clone(),
        actor: "legacy".into(),
        at: fx.now(),
    };
    // A forged future revision and a never-expiring acceptance.
    let mut forged = acceptance(&c.id, fx.now());
    forged["consentRevision"] = json!(7);
    forged["expiredDate"] = Value::Null;
    store
        .insert_content(&write(ContentType::ConsentAcceptance, "forged", forged))
        .await
        .unwrap();
    // An acceptance revived, its evidence nulled by the update form (as
    // "PUT nulls what the body leaves out" once did).
    let revived = fx.accept("shop", "u1", &c.id, None).await;
    let stored = fx
        .svc
        .content(&fx.project, ACCEPTANCE, &revived.id)
        .await
        .expect("get");
    let mut w = write(
        ContentType::ConsentAcceptance,
        &revived.id,
        Value::Object(stored.data),
    );
    w.data.insert("status".into(), json!("WITHDRAWN"));
    w.data
        .insert("withdrawalDate".into(), json!(format_time(fx.now())));
    w.data.insert("purposes".into(), Value::Null);
    store.replace_content(&w, 1).await.unwrap();
    w.data.insert("status".into(), json!("ACCEPTED"));
    w.data.insert("withdrawalDate".into(), json!(""));
    store.replace_content(&w, 2).await.unwrap();
    // A consent whose revision walked backwards.
    let mut back = c.data.clone();
    back.insert("revision".into(), json!(0));
    store
        .replace_content(&write(ContentType::Consent, &c.id, Value::Object(back)), 1)
        .await
        .unwrap();

    let mut found: Vec<(String, i64, String, String)> = fx
        .svc
        .check_records(&fx.project)
        .await
        .expect("check")
        .into_iter()
        .map(|f| (f.id, f.version, f.field, f.code))
        .collect();
    found.sort();
    let mut expected = vec![
        (
            c.id.clone(),
            2,
            "data.revision".to_owned(),
            "out_of_range".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.consentRevision".to_owned(),
            "evidence_mismatch".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.expiredDate".to_owned(),
            "evidence_mismatch".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.privacyNoticeId".to_owned(),
            "evidence_missing".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.privacyNoticeRevision".to_owned(),
            "evidence_missing".to_owned(),
        ),
        (
            revived.id.clone(),
            2,
            "data.purposes".to_owned(),
            "immutable".to_owned(),
        ),
        (
            revived.id.clone(),
            3,
            "data.status".to_owned(),
            "invalid_transition".to_owned(),
        ),
    ];
    expected.sort();
    assert_eq!(found, expected);
    // Reported, not rewritten.
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &revived.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 3);
}
