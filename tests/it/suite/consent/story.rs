//! Behaviours over time: `state_at` and `history` after one story of
//! events, and concurrent use.

use std::sync::Arc;

use accord::consent::{ConsentAcceptance, ContentRecord, GrantSource, HistoryEntry, Reason};
use accord::store::ConsentStore;
use chrono::Duration;
use serde_json::{json, Value};

use super::{t0, Fx};

/// The sequence of [`state_at_before_between_after`] and
/// [`history_in_recorded_order`], one hour apart from `t0 + 1h`.
async fn story<S: ConsentStore + 'static>(
    fx: &Fx<S>,
) -> (ContentRecord, ConsentAcceptance, ConsentAcceptance) {
    let c = fx.consent("shop", &["email", "sms"], None).await;
    fx.advance(Duration::hours(1));
    let acc1 = fx.accept("shop", "u1", &c.id, Some(&["email"])).await; // 1h
    fx.advance(Duration::hours(1));
    fx.svc
        .accept_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "sms"))
        .await
        .expect("accept"); // 2h
    fx.advance(Duration::hours(1));
    let mut data = c.data.clone();
    data.insert("revision".into(), json!(2));
    fx.replace("svc-consent-v1", &c.id, Value::Object(data))
        .await; // 3h
    fx.advance(Duration::hours(1));
    let acc2 = fx.accept("shop", "u1", &c.id, None).await; // 4h
    fx.advance(Duration::hours(1));
    fx.svc
        .withdraw_purpose(&fx.project, Fx::<S>::purpose("shop", "u1", "email"))
        .await
        .expect("withdraw"); // 5h
    fx.advance(Duration::hours(1));
    let body = json!({"dataSubject": "u1", "consentId": c.id, "application": "shop",
        "acceptanceDate": acc2.acceptance_date, "status": "WITHDRAWN", "withdrawalDate": fx.now(), "note": ""});
    fx.replace("svc-consent-acceptance-v1", &acc2.id, body)
        .await; // 6h
    (c, acc1, acc2)
}

pub async fn state_at_before_between_after<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let (c, acc1, acc2) = story(&fx).await;
    let at = |minutes: i64| {
        let svc = fx.svc.clone();
        let project = fx.project.clone();
        async move {
            let s = svc
                .state_at(&project, "u1", "shop", t0() + Duration::minutes(minutes))
                .await
                .expect("state");
            let consents: Vec<(String, Option<i64>)> = s
                .consents
                .iter()
                .map(|a| (a.acceptance_id.clone(), a.consent_revision))
                .collect();
            let purposes: Vec<String> = s.purposes.iter().map(|p| p.code.clone()).collect();
            (consents, purposes, s)
        }
    };
    let (consents, purposes, _) = at(30).await;
    assert!(
        consents.is_empty() && purposes.is_empty(),
        "before anything"
    );
    let (consents, purposes, s) = at(60).await;
    assert_eq!(
        consents,
        [(acc1.id.clone(), Some(1))],
        "at the instant of acceptance"
    );
    assert_eq!(purposes, ["email"]);
    assert_eq!(s.consents[0].consent_id, c.id);
    assert_eq!(s.consents[0].privacy_notice_revision, Some(4));
    assert_eq!(s.purposes[0].source, GrantSource::ConsentAcceptance);
    let (_, purposes, s) = at(150).await;
    assert_eq!(purposes, ["email", "sms"]);
    assert_eq!(s.purposes[1].source, GrantSource::PurposeAcceptance);
    let (consents, purposes, _) = at(270).await;
    assert_eq!(
        consents,
        [(acc2.id.clone(), Some(2))],
        "the latest acceptance"
    );
    assert_eq!(purposes, ["email", "sms"]);
    let (_, purposes, _) = at(330).await;
    assert_eq!(purposes, ["sms"]);
    let (consents, purposes, _) = at(60 * 24 * 365).await;
    assert_eq!(
        consents,
        [(acc1.id.clone(), Some(1))],
        "acc1 was never withdrawn"
    );
    assert!(
        purposes.is_empty(),
        "acc2's withdrawal withdrew its purposes"
    );
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Withdrawn)]
    );
}

pub async fn history_in_recorded_order<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let (_, acc1, acc2) = story(&fx).await;
    fx.accept("shop", "someone-else", &acc1.consent_id, None)
        .await;
    let h = fx.svc.history(&fx.project, "u1").await.expect("history");
    let kinds: Vec<String> = h
        .iter()
        .map(|e| match e {
            HistoryEntry::ConsentAcceptance(r) => format!(
                "{}v{}",
                if r.id == acc1.id { "acc1" } else { "acc2" },
                r.version
            ),
            HistoryEntry::Purpose(p) => format!("{}:{}", p.purpose_code, p.status),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "acc1v1",
            "sms:ACCEPTED",
            "acc2v1",
            "email:WITHDRAWN",
            "acc2v2"
        ]
    );
    assert!(h.windows(2).all(|w| w[0].seq() < w[1].seq()));
    let v = serde_json::to_value(&h).expect("json");
    assert_eq!(v[0]["kind"], "consentAcceptance");
    assert_eq!(v[1]["kind"], "purpose");
    assert_eq!(v[4]["id"], acc2.id.as_str());
    assert!(fx
        .svc
        .history(&fx.project, "nobody")
        .await
        .expect("history")
        .is_empty());
}

pub async fn concurrent_acceptances<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], None).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let svc = fx.svc.clone();
        let (project, id) = (fx.project.clone(), c.id.clone());
        tasks.push(tokio::spawn(async move {
            let subject = format!("u{}", i % 4);
            svc.accept_consent(&project, Fx::<S>::request("shop", &subject, &id, None), "a")
                .await?;
            svc.withdraw_purpose(&project, Fx::<S>::purpose("shop", &subject, "email"))
                .await
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("accept and withdraw");
    }
    let q = accord::consent::ContentQuery::default().with_page(0, 100);
    let all = fx
        .svc
        .list_content(&fx.project, "svc-consent-acceptance-v1", &q)
        .await
        .expect("list");
    assert_eq!(all.total, 16);
    let mut seqs: Vec<i64> = all.items.iter().map(|r| r.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 16, "every append has its own seq");
    for i in 0..4 {
        let h = fx
            .svc
            .history(&fx.project, &format!("u{i}"))
            .await
            .expect("history");
        assert_eq!(h.len(), 8);
    }
}

/// The history as events and the state per application, over the story:
/// stored events in order, the re-consent request derived from the new
/// revision, filters and paging; `subject_state` is `state_at` per
/// application.
pub async fn history_events_and_state_by_app<S: ConsentStore + 'static>(store: Arc<S>) {
    use accord::consent::evidence::{EventKind, HistoryQuery};
    let fx = Fx::new(store);
    let (c, acc1, acc2) = story(&fx).await;
    fx.accept("shop", "someone-else", &c.id, None).await;
    let all = fx
        .svc
        .subject_history(&fx.project, "u1", &HistoryQuery::default())
        .await
        .expect("history");
    let kinds: Vec<(EventKind, String)> = all
        .items
        .iter()
        .map(|e| (e.kind.clone(), e.record_id.clone()))
        .collect();
    assert_eq!(all.total, 6);
    assert_eq!(kinds[0], (EventKind::Accepted, acc1.id.clone()));
    assert_eq!(kinds[1].0, EventKind::PurposeAccepted);
    assert_eq!(kinds[2], (EventKind::ReconsentRequired, acc1.id.clone()));
    assert_eq!(kinds[3], (EventKind::Accepted, acc2.id.clone()));
    assert_eq!(kinds[4].0, EventKind::PurposeWithdrawn);
    assert_eq!(kinds[5], (EventKind::Withdrawn, acc2.id.clone()));
    assert_eq!(all.items[0].consent_revision, Some(1));
    assert_eq!(all.items[2].new_revision, Some(2));
    assert_eq!(all.items[3].consent_revision, Some(2));
    assert_eq!(all.items[0].privacy_notice_revision, Some(4));
    assert!(all.items.iter().all(|e| e.application == "shop"));
    let page = fx
        .svc
        .subject_history(
            &fx.project,
            "u1",
            &HistoryQuery {
                consent_id: Some(c.id.clone()),
                from: Some(t0() + Duration::hours(2)),
                page: 1,
                size: 2,
                ..HistoryQuery::default()
            },
        )
        .await
        .expect("history");
    // From 2h, of the consent: PURPOSE_ACCEPTED (its lifespan's consent),
    // RECONSENT_REQUIRED, ACCEPTED, WITHDRAWN.
    assert_eq!(page.total, 4);
    assert_eq!(
        page.items
            .iter()
            .map(|e| e.kind.clone())
            .collect::<Vec<_>>(),
        [EventKind::Accepted, EventKind::Withdrawn]
    );
    let other = fx
        .svc
        .subject_history(&fx.project, "nobody", &HistoryQuery::default())
        .await
        .expect("history");
    assert_eq!(other.total, 0);

    for minutes in [30, 90, 150, 270, 330, 400] {
        let at = t0() + Duration::minutes(minutes);
        let states = fx
            .svc
            .subject_state(&fx.project, "u1", None, at)
            .await
            .expect("state");
        let one = fx
            .svc
            .state_at(&fx.project, "u1", "shop", at)
            .await
            .expect("state_at");
        assert_eq!(states, [one], "at {at}");
    }
    assert!(fx
        .svc
        .subject_state(&fx.project, "nobody", None, fx.now())
        .await
        .expect("state")
        .is_empty());
}

/// Every consent event has its ledger entry, appended with it: the story's
/// acceptance versions and purpose events, concurrent writers, and nothing
/// for a refused write; the chain verifies.
pub async fn the_ledger_has_one_entry_per_event<S: ConsentStore + 'static>(store: Arc<S>) {
    use accord::consent::ContentType;
    use accord::store::{ContentStore, LedgerStore};
    let fx = Fx::new(Arc::clone(&store));
    let (c, _, acc2) = story(&fx).await;
    // acc1 v1, sms accepted, acc2 v1, email withdrawn, acc2 v2.
    let report = fx.svc.verify_ledger(&fx.project).await.expect("verify");
    assert!(report.valid, "{report:?}");
    assert_eq!(report.entries, 5);
    let head = store
        .ledger_head(&fx.project)
        .await
        .expect("head")
        .expect("a head");
    assert_eq!(head.position, 5);
    assert_eq!(report.last_hash.as_deref(), Some(head.hash.as_str()));
    let entries = store
        .ledger_entries(&fx.project, 0, 100)
        .await
        .expect("entries");
    assert!(
        entries.iter().all(|e| !e.text.contains("u1")),
        "personal data in the ledger"
    );
    assert!(entries[4].text.contains(&acc2.id));
    // By record: acc2's two versions, in position order, from the index.
    let of_acc2 = store
        .ledger_entries_of(&fx.project, &acc2.id)
        .await
        .expect("entries of a record");
    assert_eq!(
        of_acc2.iter().map(|e| e.position).collect::<Vec<_>>(),
        entries
            .iter()
            .filter(|e| e.text.contains(&acc2.id))
            .map(|e| e.position)
            .collect::<Vec<_>>()
    );
    assert_eq!(of_acc2.len(), 2);
    assert_eq!(of_acc2[1], entries[4]);
    assert!(store
        .ledger_entries_of(&fx.project, "no-such-record")
        .await
        .expect("none")
        .is_empty());
    assert!(store
        .ledger_entries_of(&fx.other_project().project, &acc2.id)
        .await
        .expect("none")
        .is_empty());
    // A refused write appends nothing.
    let stale = accord::consent::ContentWrite {
        project_id: fx.project.clone(),
        content_type: ContentType::ConsentAcceptance,
        id: acc2.id.clone(),
        data: serde_json::Map::new(),
        actor: "late".into(),
        at: fx.now(),
    };
    assert!(store.replace_content(&stale, 1).await.is_err());
    assert_eq!(
        store.ledger_head(&fx.project).await.expect("head"),
        Some(head)
    );
    // Concurrent writers: one gapless chain.
    let mut tasks = Vec::new();
    for i in 0..12 {
        let svc = fx.svc.clone();
        let (project, id) = (fx.project.clone(), c.id.clone());
        tasks.push(tokio::spawn(async move {
            let subject = format!("w{}", i % 3);
            svc.accept_consent(&project, Fx::<S>::request("shop", &subject, &id, None), "a")
                .await?;
            svc.withdraw_purpose(&project, Fx::<S>::purpose("shop", &subject, "email"))
                .await
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("accept and withdraw");
    }
    let report = fx.svc.verify_ledger(&fx.project).await.expect("verify");
    assert!(report.valid, "{report:?}");
    assert_eq!(report.entries, 5 + 24);
    // Other projects have ledgers of their own.
    let other = fx.other_project();
    let report = other
        .svc
        .verify_ledger(&other.project)
        .await
        .expect("verify");
    assert_eq!((report.valid, report.entries), (true, 0));
}
