//! The consent integrity rules on every store, each test an attack it
//! prevents: forging a future revision, accepting a draft, a never-expiring
//! or future-dated acceptance, an acceptance for another application,
//! reviving a withdrawal, back-dating, an edit erasing evidence, and
//! timestamp filters that miss an instant written another way. (Revisions
//! are in [`super::revisions`], concurrent edits and the record check in
//! [`super::edits`].)

use std::sync::Arc;

use accord::consent::{
    format_time, ContentQuery, ContentRecord, ContentType, ContentWrite, Reason,
};
use accord::store::ConsentStore;
use accord::ErrorKind;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::{flags, Fx};

pub(super) const CONSENT: &str = "svc-consent-v1";
pub(super) const NOTICE: &str = "svc-privacy-notice-v1";
pub(super) const ACCEPTANCE: &str = "svc-consent-acceptance-v1";

/// A content-store acceptance of `consent` by `u1` in `shop`, accepted at
/// `at` with the expiry of a 30-day lifespan.
pub(super) fn acceptance(consent: &str, at: DateTime<Utc>) -> Value {
    json!({"dataSubject": "u1", "consentId": consent, "consentApplication": "shop",
           "acceptanceDate": at, "status": "ACCEPTED", "purposes": ["email"],
           "expiredDate": at + Duration::days(30), "userAgent": "ua", "country": "TH",
           "localIp": "10.0.0.1", "osVersion": "17", "model": "m", "deviceFingerprintId": "fp",
           "note": ""})
}

pub(super) fn with(mut base: Value, patch: &Value) -> Value {
    for (k, v) in patch.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// The fields and codes of a refused write; panics when it succeeded.
pub(super) fn refused<T: std::fmt::Debug>(r: accord::Result<T>) -> Vec<(String, String)> {
    let err = r.expect_err("must be refused");
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    err.fields()
        .iter()
        .map(|f| (f.field.clone(), f.code.to_string()))
        .collect()
}

pub(super) fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
        .collect()
}

impl<S: ConsentStore + 'static> Fx<S> {
    pub(super) async fn try_create(&self, t: &str, data: Value) -> accord::Result<ContentRecord> {
        self.svc.create_content(&self.project, t, data, "cms").await
    }

    pub(super) async fn try_replace(
        &self,
        t: &str,
        id: &str,
        data: Value,
    ) -> accord::Result<ContentRecord> {
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

pub(super) fn withdrawal(consent: &str, accepted: &Value, status: &str) -> Value {
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
        "2026-01-01T03:00:00.0000004Z",
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
    // The server's own timestamps too: the receipt time and the expiry.
    for (attribute, same) in [
        ("receivedDate", "2026-01-01T10:00:00+07:00"),
        ("expiredDate", "2026-01-31T03:00:00Z"),
        ("expiredDate", "2026-01-31T10:00:00.000+07:00"),
    ] {
        let q = ContentQuery::from_pairs([(format!("data.{attribute}").as_str(), same)])
            .expect("query");
        let page = fx
            .svc
            .list_content(&fx.project, ACCEPTANCE, &q)
            .await
            .expect("list");
        assert_eq!(
            page.items.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            [a.id.as_str()],
            "{attribute}={same}"
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

/// An edit that writes `null` over evidence, or another value, is refused
/// field by field, and nothing is appended: a PUT cannot erase or rewrite
/// what the person agreed to, shown which notice, on which device.
pub async fn an_edit_cannot_null_or_rewrite_evidence<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, Some(&["email"])).await;
    let base = withdrawal(&c.id, &json!(a.acceptance_date), "WITHDRAWN");
    for field in [
        "purposes",
        "expiredDate",
        "consentRevision",
        "privacyNoticeId",
        "privacyNoticeRevision",
        "receivedDate",
        "consentApplication",
        "userAgent",
        "localIp",
        "deviceFingerprintId",
    ] {
        let body = with(base.clone(), &json!({ field: null }));
        assert_eq!(
            refused(fx.try_replace(ACCEPTANCE, &a.id, body).await),
            pairs(&[(&format!("data.{field}"), "immutable")]),
            "{field}: null"
        );
    }
    for patch in [
        json!({"purposes": ["email", "sms"]}),
        json!({"consentRevision": 7}),
        json!({"privacyNoticeRevision": 99}),
        json!({"expiredDate": "9999-12-31T00:00:00Z"}),
        json!({"dataSubject": "u2"}),
        json!({"consentId": "another"}),
    ] {
        let body = with(base.clone(), &patch);
        let field = format!("data.{}", patch.as_object().unwrap().keys().next().unwrap());
        assert_eq!(
            refused(fx.try_replace(ACCEPTANCE, &a.id, body).await),
            pairs(&[(&field, "immutable")]),
            "{patch}"
        );
    }
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 1, "nothing was appended");
    // Repeating the evidence as stored (a timestamp in another offset is
    // the same instant) is an ordinary withdrawal.
    let stored = &versions[0].data;
    let expiry = chrono::DateTime::parse_from_rfc3339(stored["expiredDate"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::FixedOffset::east_opt(7 * 3600).unwrap());
    let body = with(
        base,
        &json!({"purposes": stored["purposes"], "consentRevision": stored["consentRevision"],
                "expiredDate": expiry.to_rfc3339(), "userAgent": stored["userAgent"]}),
    );
    let w = fx.replace(ACCEPTANCE, &a.id, body).await;
    assert_eq!(w.data["status"], "WITHDRAWN");
    assert_eq!(w.data["expiredDate"], stored["expiredDate"]);
}
