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
