//! Revisions on every store: they only go up, what a person agrees to
//! changes only with a new one, and a new notice revision asks again for
//! every consent that references it; a notice that is not published is
//! neither offered nor served.

use std::sync::Arc;

use accord::consent::Reason;
use accord::store::ConsentStore;
use chrono::Duration;
use serde_json::{json, Value};

use super::integrity::{acceptance, pairs, refused, with, ACCEPTANCE, CONSENT, NOTICE};
use super::Fx;

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

/// What a person agreed to — the purposes, the application, the privacy
/// notice — cannot be swapped under an unchanged revision (those who
/// accepted it would not be asked); presentation (the order of the
/// purposes) and the lifespan of acceptances still to come can.
pub async fn what_was_agreed_changes_only_with_a_revision<S: ConsentStore + 'static>(
    store: Arc<S>,
) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(30)).await;
    let other_notice = fx.notice(1).await;
    fx.accept("shop", "u1", &c.id, None).await;
    let edit = |patch: Value| {
        let mut data = c.data.clone();
        for (k, v) in patch.as_object().unwrap() {
            data.insert(k.clone(), v.clone());
        }
        Value::Object(data)
    };
    for (patch, field) in [
        (json!({"purposes": ["email"]}), "data.purposes"),
        (json!({"purposes": ["email", "phone"]}), "data.purposes"),
        (json!({"application": "games"}), "data.application"),
        (
            json!({"privacyNoticeRef": other_notice.id}),
            "data.privacyNoticeRef",
        ),
    ] {
        assert_eq!(
            refused(fx.try_replace(CONSENT, &c.id, edit(patch.clone())).await),
            pairs(&[(field, "revision_required")]),
            "{patch}"
        );
    }
    let versions = fx
        .svc
        .content_versions(&fx.project, CONSENT, &c.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 1, "nothing was appended");
    fx.replace(
        CONSENT,
        &c.id,
        edit(json!({"purposes": ["sms", "email"], "lifespan": 60})),
    )
    .await;
    assert!(
        fx.to_accept("shop", "u1").await.is_empty(),
        "the same agreement, still in force"
    );
    // A notice's revision is never 0 either.
    let notice = c.data["privacyNoticeRef"].as_str().unwrap();
    assert_eq!(
        refused(
            fx.try_replace(
                NOTICE,
                notice,
                json!({"name": "Privacy", "revision": 0, "status": "PUBLISHED"})
            )
            .await
        ),
        pairs(&[("data.revision", "out_of_range")])
    );
}
