//! A subject's history paged in the store: every page, with every filter
//! and at several instants, is the page of the whole history that
//! `subject_events` derives from the store's own records.

use std::collections::BTreeSet;
use std::sync::Arc;

use accord::consent::evidence::{subject_events, HistoryQuery, Versions};
use accord::consent::ContentType;
use accord::store::ConsentStore;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::{t0, Fx};

/// The reference: every event derived from the subject's records, paged.
async fn reference<S: ConsentStore>(
    store: &S,
    project: &str,
    subject: &str,
    query: &HistoryQuery,
    now: DateTime<Utc>,
) -> accord::store::Page<accord::consent::evidence::SubjectEvent> {
    let acceptances = store.acceptance_versions(project, subject).await.unwrap();
    let purposes = store.purpose_events(project, subject, None).await.unwrap();
    let mut pinned = [Versions::new(), Versions::new()];
    for (slot, (key, t)) in pinned.iter_mut().zip([
        ("consentId", ContentType::Consent),
        ("privacyNoticeId", ContentType::PrivacyNotice),
    ]) {
        let ids: BTreeSet<String> = acceptances
            .iter()
            .filter_map(|r| r.data.get(key).and_then(Value::as_str).map(str::to_owned))
            .collect();
        for id in ids {
            let versions = store.content_versions(project, t, &id).await.unwrap();
            slot.insert(id, versions);
        }
    }
    let events = subject_events(&acceptances, &purposes, &pinned[0], &pinned[1], now);
    query.page_of(events)
}

pub async fn history_pages_are_pages_of_the_whole<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store.clone());
    let short = fx.consent("shop", &["email", "sms"], Some(1)).await;
    let club = fx.consent("club", &["news"], None).await;
    let notice_id = short.data["privacyNoticeRef"].as_str().unwrap().to_owned();
    for i in 0..6 {
        fx.advance(Duration::hours(5));
        let a = fx.accept("shop", "u1", &short.id, None).await;
        fx.accept("shop", "u2", &short.id, None).await;
        fx.advance(Duration::hours(1));
        fx.svc
            .accept_purpose(&fx.project, Fx::<S>::purpose("club", "u1", "news"))
            .await
            .unwrap();
        if i % 2 == 0 {
            let body = json!({"dataSubject": "u1", "consentId": short.id, "application": "shop",
                "acceptanceDate": a.acceptance_date, "expiredDate": a.expired_date,
                "status": "WITHDRAWN", "withdrawalDate": fx.now(), "note": ""});
            fx.replace("svc-consent-acceptance-v1", &a.id, body).await;
        }
        if i == 3 {
            // A new revision of the consent, then of its notice, while
            // some acceptances are in force.
            let mut data = short.data.clone();
            data.insert("revision".into(), json!(2));
            fx.replace("svc-consent-v1", &short.id, Value::Object(data))
                .await;
            fx.advance(Duration::minutes(10));
            fx.replace(
                "svc-privacy-notice-v1",
                &notice_id,
                json!({"name": "Privacy", "descriptionEn": "How we use data, again", "revision": 5, "status": "PUBLISHED"}),
            )
            .await;
        }
        fx.accept("club", "u1", &club.id, None).await;
    }
    let end = fx.now() + Duration::days(3);
    let queries = [
        HistoryQuery::default(),
        HistoryQuery {
            app: Some("club".into()),
            ..HistoryQuery::default()
        },
        HistoryQuery {
            consent_id: Some(short.id.clone()),
            ..HistoryQuery::default()
        },
        HistoryQuery {
            from: Some(t0() + Duration::hours(12)),
            to: Some(t0() + Duration::hours(40)),
            ..HistoryQuery::default()
        },
    ];
    // Before, among and after the expiries and the new revisions.
    for now in [t0() + Duration::hours(20), t0() + Duration::hours(30), end] {
        fx.clock.set(now);
        for subject in ["u1", "u2", "nobody"] {
            for q in &queries {
                for size in [1, 4, 7, 1000] {
                    for page in 0..8 {
                        let q = HistoryQuery {
                            page,
                            size,
                            ..q.clone()
                        };
                        let want = reference(&*store, &fx.project, subject, &q, now).await;
                        let got = fx
                            .svc
                            .subject_history(&fx.project, subject, &q)
                            .await
                            .unwrap();
                        assert_eq!(got, want, "{subject} at {now}, {q:?}");
                        if want.items.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
    }
    let all = fx
        .svc
        .subject_history(
            &fx.project,
            "u1",
            &HistoryQuery {
                size: 1000,
                ..HistoryQuery::default()
            },
        )
        .await
        .unwrap();
    let kinds: BTreeSet<String> = all.items.iter().map(|e| e.kind.to_string()).collect();
    for kind in [
        "ACCEPTED",
        "WITHDRAWN",
        "PURPOSE_ACCEPTED",
        "EXPIRED",
        "RECONSENT_REQUIRED",
    ] {
        assert!(kinds.contains(kind), "{kind} in {kinds:?}");
    }
}

/// Acceptances past their lifespan: those whose expiry passed while they
/// were accepted (not one withdrawn before), oldest expiry first, paged,
/// as each instant sees them.
pub async fn expired_acceptances_are_listed<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let short = fx.consent("shop", &["email"], Some(1)).await;
    let forever = fx.consent("club", &["news"], None).await;
    let mut ids = Vec::new();
    for subject in ["u1", "u2", "u3", "u4"] {
        fx.advance(Duration::hours(1));
        ids.push(fx.accept("shop", subject, &short.id, None).await);
        fx.accept("club", subject, &forever.id, None).await;
    }
    fx.advance(Duration::hours(1));
    let u3 = &ids[2];
    let body = json!({"dataSubject": "u3", "consentId": short.id, "application": "shop",
        "acceptanceDate": u3.acceptance_date, "expiredDate": u3.expired_date,
        "status": "WITHDRAWN", "withdrawalDate": fx.now(), "note": ""});
    fx.replace("svc-consent-acceptance-v1", &u3.id, body).await;
    let list = |page, size| {
        let svc = fx.svc.clone();
        let project = fx.project.clone();
        async move {
            let p = svc.expired_acceptances(&project, page, size).await.unwrap();
            (
                p.total,
                p.items
                    .iter()
                    .map(|e| e.data_subject.clone())
                    .collect::<Vec<_>>(),
            )
        }
    };
    assert_eq!(list(0, 20).await, (0, vec![]));
    fx.clock
        .set(t0() + Duration::days(1) + Duration::minutes(90));
    assert_eq!(list(0, 20).await, (1, vec!["u1".to_owned()]));
    fx.clock.set(t0() + Duration::days(3));
    assert_eq!(
        list(0, 20).await,
        (3, vec!["u1".to_owned(), "u2".to_owned(), "u4".to_owned()])
    );
    assert_eq!(list(1, 2).await, (3, vec!["u4".to_owned()]));
    let page = fx.svc.expired_acceptances(&fx.project, 0, 1).await.unwrap();
    let first = &page.items[0];
    assert_eq!(first.acceptance_id, ids[0].id);
    assert_eq!(first.consent_id.as_deref(), Some(short.id.as_str()));
    assert_eq!(first.application, "shop");
    assert_eq!(
        first.expired_date,
        t0() + Duration::days(1) + Duration::hours(1)
    );
    let other = fx.other_project();
    let none = other.svc.expired_acceptances(&other.project, 0, 20).await;
    assert_eq!(none.unwrap().total, 0);
    let err = fx
        .svc
        .expired_acceptances(&fx.project, 0, 0)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_page_size");
}

/// A retention purge: the acceptances that ended longer ago than the
/// retention lose their personal data (pseudonym, device context emptied,
/// salts deleted), the others keep it; the ledger still verifies; a second
/// purge changes nothing; without a retention or a key it is refused.
pub async fn retention_purge_keeps_the_proof<S: ConsentStore + 'static>(store: Arc<S>) {
    use accord::consent::erasure::PseudonymKey;
    let fx = Fx::new(store);
    let key = PseudonymKey::new(&[42; 32]).unwrap();
    let svc = fx
        .svc
        .clone()
        .with_pseudonym_key(key.clone())
        .with_retention(Duration::days(30));
    let short = fx.consent("shop", &["email"], Some(1)).await;
    let forever = fx.consent("club", &["news"], None).await;
    fx.advance(Duration::hours(1));
    let expires = fx.accept("shop", "u1", &short.id, None).await;
    let withdrawn = fx.accept("club", "u2", &forever.id, None).await;
    let kept = fx.accept("club", "u3", &forever.id, None).await;
    fx.advance(Duration::hours(1));
    let body = json!({"dataSubject": "u2", "consentId": forever.id, "application": "club",
        "acceptanceDate": withdrawn.acceptance_date, "status": "WITHDRAWN",
        "withdrawalDate": fx.now(), "note": "by phone"});
    fx.replace("svc-consent-acceptance-v1", &withdrawn.id, body)
        .await;

    fx.clock.set(t0() + Duration::days(20));
    let report = svc.purge_retention(&fx.project).await.unwrap();
    assert_eq!(report.acceptances, 0, "nothing ended 30 days ago yet");
    assert_eq!(report.retention_days, 30);
    assert_eq!(report.ended_before, t0() - Duration::days(10));

    fx.clock.set(t0() + Duration::days(40));
    let report = svc.purge_retention(&fx.project).await.unwrap();
    assert_eq!(report.acceptances, 2, "{report:?}");
    assert_eq!(report.erased.acceptance_versions, 3);
    assert_eq!(report.erased.ledger_salts, 3);
    for (a, subject) in [(&expires, "u1"), (&withdrawn, "u2")] {
        let versions = svc
            .content_versions(&fx.project, "svc-consent-acceptance-v1", &a.id)
            .await
            .unwrap();
        for v in &versions {
            assert_eq!(
                v.data["dataSubject"],
                json!(key.pseudonym(&fx.project, subject))
            );
            assert_eq!(v.data["localIp"], json!(""));
            assert_eq!(v.data["note"], json!(""));
        }
        let gone = svc
            .subject_history(&fx.project, subject, &HistoryQuery::default())
            .await
            .unwrap();
        assert_eq!(gone.total, 0, "{subject}'s history moved to the pseudonym");
        let pseudonymous = svc
            .subject_history(
                &fx.project,
                &key.pseudonym(&fx.project, subject),
                &HistoryQuery::default(),
            )
            .await
            .unwrap();
        assert!(pseudonymous.total >= 2, "{pseudonymous:?}");
    }
    let still = svc
        .content_versions(&fx.project, "svc-consent-acceptance-v1", &kept.id)
        .await
        .unwrap();
    assert_eq!(still[0].data["dataSubject"], json!("u3"));
    assert!(svc.verify_ledger(&fx.project).await.unwrap().valid);
    let again = svc.purge_retention(&fx.project).await.unwrap();
    assert_eq!(again.acceptances, 0);

    let no_retention = fx.svc.clone().with_pseudonym_key(key);
    let err = no_retention.purge_retention(&fx.project).await.unwrap_err();
    assert_eq!(err.code(), "retention_not_configured");
    let no_key = fx.svc.clone().with_retention(Duration::days(30));
    let err = no_key.purge_retention(&fx.project).await.unwrap_err();
    assert_eq!(err.code(), "erasure_not_configured");
}
