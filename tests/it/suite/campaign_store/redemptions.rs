//! Redeem, cancel, redemption lists and quota usage.

use std::collections::HashMap;
use std::sync::Arc;

use accord::campaign::{QuotaUsage, TxStatus};
use accord::store::memory::MemoryStore;
use accord::store::{RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::data::{campaign, d, for_user, keyed, plan, project, t};
use super::Store;

/// Redeems `plan`, which must be recorded.
pub async fn recorded(store: &impl RedemptionStore, plan: &RedemptionPlan) {
    match store.redeem(plan).await.unwrap() {
        RedeemOutcome::Recorded(r) => assert_eq!(r, plan.redemption),
        other => panic!("expected Recorded, got {other:?}"),
    }
}

/// The stored usage of `keys` (those ever charged).
pub(super) async fn usage(
    store: &impl RedemptionStore,
    project: &str,
    keys: &[&str],
) -> HashMap<String, Decimal> {
    let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    store.quota_usage(project, &keys).await.unwrap()
}

fn map(entries: &[(&str, &str)]) -> HashMap<String, Decimal> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), d(v)))
        .collect()
}

pub async fn redeem_records_with_charges<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "R");
    let first = plan(
        &c,
        &[("R-user-1", "2.5", "2.50"), ("R", "1", "100")],
        t(10, 7),
    );
    recorded(&*store, &first).await;
    let r = &first.redemption;
    assert_eq!(store.redemption(&p, r.id).await.unwrap(), Some(r.clone()));
    assert_eq!(store.redemption(&project(), r.id).await.unwrap(), None);
    assert_eq!(store.redemption(&p, Uuid::new_v4()).await.unwrap(), None);
    // No charges at all is a valid redemption too.
    let free = plan(&c, &[], t(11, 0));
    recorded(&*store, &free).await;
    assert_eq!(
        store.redemption(&p, free.redemption.id).await.unwrap(),
        Some(free.redemption.clone())
    );
    assert_eq!(
        usage(&*store, &p, &["R", "R-user-1", "never"]).await,
        map(&[("R", "1"), ("R-user-1", "2.5")])
    );
}

pub async fn quota_exceeded_writes_nothing<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "Q");
    for i in 0..2 {
        recorded(&*store, &plan(&c, &[("Q", "1", "2")], t(i, 0))).await;
    }
    let third = plan(&c, &[("Q", "1", "2")], t(5, 0));
    assert_eq!(
        store.redeem(&third).await.unwrap(),
        RedeemOutcome::QuotaExceeded {
            key: "Q".into(),
            used: d("2"),
            limit: d("2")
        }
    );
    assert_eq!(
        store.redemption(&p, third.redemption.id).await.unwrap(),
        None
    );
    assert_eq!(usage(&*store, &p, &["Q"]).await, map(&[("Q", "2")]));
    let page = store
        .list_redemptions(&p, &RedemptionQuery::default())
        .await
        .unwrap();
    assert_eq!(page.total, 2);
    // Fractional amounts fill a quota exactly to its limit, not past it.
    recorded(&*store, &plan(&c, &[("F", "0.75", "1.5")], t(6, 0))).await;
    recorded(&*store, &plan(&c, &[("F", "0.75", "1.5")], t(7, 0))).await;
    assert_eq!(
        store
            .redeem(&plan(&c, &[("F", "0.01", "1.5")], t(8, 0)))
            .await
            .unwrap(),
        RedeemOutcome::QuotaExceeded {
            key: "F".into(),
            used: d("1.5"),
            limit: d("1.5")
        }
    );
}

pub async fn amount_over_limit_on_fresh_key<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "BIG");
    let big = plan(&c, &[("BIG", "5", "3")], t(0, 0));
    assert_eq!(
        store.redeem(&big).await.unwrap(),
        RedeemOutcome::QuotaExceeded {
            key: "BIG".into(),
            used: d("0"),
            limit: d("3")
        }
    );
    // Not even a zero usage row was left behind.
    assert!(usage(&*store, &p, &["BIG"]).await.is_empty());
    assert_eq!(store.redemption(&p, big.redemption.id).await.unwrap(), None);
    assert!(store
        .campaign_quota_usage(&p, c.id)
        .await
        .unwrap()
        .is_empty());
}

pub async fn multi_key_all_or_nothing<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "M");
    recorded(
        &*store,
        &plan(&c, &[("m-a", "1", "10"), ("m-b", "1", "1")], t(0, 0)),
    )
    .await;
    // "m-a" is charged first (keys are sorted) and fits; "m-b" is full.
    let second = plan(
        &c,
        &[("m-a", "1", "10"), ("m-b", "1", "1"), ("m-c", "1", "5")],
        t(1, 0),
    );
    assert_eq!(
        store.redeem(&second).await.unwrap(),
        RedeemOutcome::QuotaExceeded {
            key: "m-b".into(),
            used: d("1"),
            limit: d("1")
        }
    );
    assert_eq!(
        usage(&*store, &p, &["m-a", "m-b", "m-c"]).await,
        map(&[("m-a", "1"), ("m-b", "1")])
    );
    assert_eq!(
        store.redemption(&p, second.redemption.id).await.unwrap(),
        None
    );
}

pub async fn idempotent_replay_charges_nothing<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "I");
    let first = keyed(plan(&c, &[("I", "1", "1")], t(0, 0)), "order-42");
    recorded(&*store, &first).await;
    // The same key again, even with another body and a full quota: the
    // stored record, nothing charged, nothing recorded.
    let again = keyed(
        plan(&c, &[("I", "1", "1"), ("J", "1", "9")], t(1, 0)),
        "order-42",
    );
    assert_eq!(
        store.redeem(&again).await.unwrap(),
        RedeemOutcome::Replayed(first.redemption.clone())
    );
    assert_eq!(usage(&*store, &p, &["I", "J"]).await, map(&[("I", "1")]));
    assert_eq!(
        store.redemption(&p, again.redemption.id).await.unwrap(),
        None
    );
    // The key finds the record; unknown keys and other projects find nothing.
    assert_eq!(
        store.redemption_by_key(&p, "order-42").await.unwrap(),
        Some(first.redemption.clone())
    );
    assert_eq!(store.redemption_by_key(&p, "order-43").await.unwrap(), None);
    assert_eq!(
        store
            .redemption_by_key(&project(), "order-42")
            .await
            .unwrap(),
        None
    );
    // Keys are per project; redemptions without a key never replay.
    let other = campaign(&project(), "I");
    recorded(&*store, &keyed(plan(&other, &[], t(2, 0)), "order-42")).await;
    recorded(&*store, &plan(&c, &[], t(3, 0))).await;
    recorded(&*store, &plan(&c, &[], t(3, 0))).await;
    // A replay of a cancelled redemption returns it as it is now.
    let cancelled = store
        .cancel_redemption(&p, first.redemption.id, t(4, 4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store.redeem(&again).await.unwrap(),
        RedeemOutcome::Replayed(cancelled)
    );
    assert_eq!(usage(&*store, &p, &["I"]).await, map(&[("I", "0")]));
}

pub async fn cancel_gives_back_once<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "X");
    let first = plan(&c, &[("x-a", "1", "1"), ("x-b", "2.5", "10")], t(0, 0));
    recorded(&*store, &first).await;
    let blocked = plan(&c, &[("x-a", "1", "1")], t(1, 0));
    assert!(matches!(
        store.redeem(&blocked).await.unwrap(),
        RedeemOutcome::QuotaExceeded { .. }
    ));

    let id = first.redemption.id;
    let cancelled = store
        .cancel_redemption(&p, id, t(2, 5))
        .await
        .unwrap()
        .unwrap();
    let mut expected = first.redemption.clone();
    expected.status = TxStatus::Cancelled;
    expected.cancelled_date = Some(t(2, 5));
    for tx in &mut expected.action_txs {
        tx.status = TxStatus::Cancelled;
    }
    assert_eq!(cancelled, expected);
    assert_eq!(
        store.redemption(&p, id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        usage(&*store, &p, &["x-a", "x-b"]).await,
        map(&[("x-a", "0"), ("x-b", "0")])
    );

    // Twice: nothing changes, not even the cancellation date.
    let again = store.cancel_redemption(&p, id, t(9, 9)).await.unwrap();
    assert_eq!(again, Some(expected));
    assert_eq!(
        usage(&*store, &p, &["x-a", "x-b"]).await,
        map(&[("x-a", "0"), ("x-b", "0")])
    );
    // The quota is free again.
    recorded(&*store, &plan(&c, &[("x-a", "1", "1")], t(3, 0))).await;
    // Unknown redemption, or another project's.
    assert_eq!(
        store
            .cancel_redemption(&p, Uuid::new_v4(), t(4, 0))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .cancel_redemption(&project(), id, t(4, 0))
            .await
            .unwrap(),
        None
    );
}

pub async fn list_redemptions_filters_and_order<S: Store>(store: Arc<S>) {
    let p = project();
    let reference = MemoryStore::new();
    let one = campaign(&p, "ONE");
    let two = campaign(&p, "TWO");
    // Times out of insertion order, some equal (ties broken by id, newest
    // id first) and a microsecond apart.
    let rows = [
        (&one, Some("u1"), t(5, 0)),
        (&two, Some("u1"), t(5, 1)),
        (&one, Some("u2"), t(1, 0)),
        (&one, None, t(5, 0)),
        (&two, Some("u2"), t(9, 0)),
        (&one, Some("u1"), t(5, 0)),
        (&two, Some("u1"), t(0, 999_999)),
    ];
    for (c, user, at) in rows {
        let pl = for_user(plan(c, &[("shared", "1", "100")], at), user);
        recorded(&*store, &pl).await;
        recorded(&reference, &pl).await;
    }
    recorded(&*store, &plan(&campaign(&project(), "ONE"), &[], t(7, 0))).await;

    let q = |code: Option<&str>, user: Option<&str>, page, size| RedemptionQuery {
        campaign_code: code.map(str::to_owned),
        user_id: user.map(str::to_owned),
        page,
        size,
    };
    let queries = [
        (q(None, None, 0, 20), 7),
        (q(Some("ONE"), None, 0, 20), 4),
        (q(None, Some("u1"), 0, 20), 4),
        (q(Some("TWO"), Some("u1"), 0, 20), 2),
        (q(Some("one"), None, 0, 20), 0),
        (q(Some("NONE"), None, 0, 20), 0),
        (q(None, None, 1, 3), 7),
        (q(None, None, 2, 3), 7),
        (q(None, None, 3, 3), 7),
    ];
    for (query, total) in queries {
        let page = store.list_redemptions(&p, &query).await.unwrap();
        assert_eq!(page.total, total, "{query:?}");
        assert_eq!(
            page,
            reference.list_redemptions(&p, &query).await.unwrap(),
            "{query:?}"
        );
        for pair in page.items.windows(2) {
            assert!(
                (pair[0].created_date, pair[0].id) > (pair[1].created_date, pair[1].id),
                "newest first"
            );
        }
    }
    let all = store
        .list_redemptions(&p, &q(None, None, 0, 20))
        .await
        .unwrap();
    assert_eq!(all.items[0].created_date, t(9, 0));
    assert_eq!(all.items[6].created_date, t(0, 999_999));
    assert!(all.items.iter().all(|r| r.quotas.len() == 1));
}

pub async fn campaign_quota_usage_lists_keys<S: Store>(store: Arc<S>) {
    let p = project();
    let a = campaign(&p, "A");
    let b = campaign(&p, "B");
    recorded(
        &*store,
        &plan(&a, &[("A", "1", "9"), ("shared", "2", "9")], t(0, 0)),
    )
    .await;
    recorded(&*store, &plan(&a, &[("A-u1", "1", "9")], t(1, 0))).await;
    recorded(
        &*store,
        &plan(&b, &[("shared", "3", "9"), ("B", "1", "9")], t(2, 0)),
    )
    .await;
    let cancelled = plan(&a, &[("A-u2", "1", "9")], t(3, 0));
    recorded(&*store, &cancelled).await;
    store
        .cancel_redemption(&p, cancelled.redemption.id, t(4, 0))
        .await
        .unwrap();
    // A later redemption under an edited quota: the latest limit is shown.
    recorded(&*store, &plan(&a, &[("A", "1", "20")], t(5, 0))).await;
    // Every key the campaign ever charged, sorted; the usage is the key's
    // (charged by any campaign); a cancelled charge leaves its key at 0.
    let expected: Vec<QuotaUsage> = [
        ("A", "2", "20"),
        ("A-u1", "1", "9"),
        ("A-u2", "0", "9"),
        ("shared", "5", "9"),
    ]
    .iter()
    .map(|(k, used, limit)| QuotaUsage {
        key: (*k).to_owned(),
        used: d(used),
        limit: Some(d(limit)),
        window: None,
        held: None,
    })
    .collect();
    assert_eq!(
        store.campaign_quota_usage(&p, a.id).await.unwrap(),
        expected
    );
    assert!(store
        .campaign_quota_usage(&project(), a.id)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .campaign_quota_usage(&p, Uuid::new_v4())
        .await
        .unwrap()
        .is_empty());
    // quota_usage with no keys, with unknown keys, with keys of another project.
    assert!(store.quota_usage(&p, &[]).await.unwrap().is_empty());
    assert_eq!(
        usage(&*store, &p, &["shared", "B", "zzz"]).await,
        map(&[("shared", "5"), ("B", "1")])
    );
    assert!(usage(&*store, &project(), &["shared"]).await.is_empty());
}

/// `quota_usage_by_prefix`: the keys under a prefix, in bytewise order,
/// after a key, at most a limit; keys just outside the prefix, of other
/// projects, and keys sorting between the prefix's characters are left
/// out.
pub async fn quota_usage_by_prefix_pages_a_key_range<S: Store>(store: Arc<S>) {
    let p = project();
    let other = project();
    let c = campaign(&p, "P");
    let keys = [
        "P-",
        "P-u1",
        "P-u10",
        "P-u2",
        "P-é",
        "P-\u{10FFFF}",
        "P.",
        "P",
        "P,x",
        "Q-u1",
        "%P-u1",
    ];
    for (i, key) in keys.iter().enumerate() {
        recorded(
            &*store,
            &plan(&c, &[(key, "1", "9")], t(i64::try_from(i).unwrap(), 0)),
        )
        .await;
    }
    let cancelled = plan(&c, &[("P-u3", "2", "9")], t(20, 0));
    recorded(&*store, &cancelled).await;
    store
        .cancel_redemption(&p, cancelled.redemption.id, t(21, 0))
        .await
        .unwrap();
    let oc = campaign(&other, "P");
    recorded(&*store, &plan(&oc, &[("P-u0", "1", "9")], t(0, 0))).await;

    let read = |prefix: &'static str, after: Option<&'static str>, limit: u32| {
        let store = store.clone();
        let p = p.clone();
        async move {
            store
                .quota_usage_by_prefix(&p, prefix, after, limit)
                .await
                .unwrap()
                .into_iter()
                .map(|(k, used)| (k, used.to_string()))
                .collect::<Vec<_>>()
        }
    };
    let owned = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter()
            .map(|(k, u)| ((*k).to_owned(), (*u).to_owned()))
            .collect()
    };
    let all_p = owned(&[
        ("P-", "1"),
        ("P-u1", "1"),
        ("P-u10", "1"),
        ("P-u2", "1"),
        ("P-u3", "0"),
        ("P-é", "1"),
        ("P-\u{10FFFF}", "1"),
    ]);
    assert_eq!(read("P-", None, 100).await, all_p);
    // Paged: after the last key of each page, bounded by the limit.
    assert_eq!(read("P-", None, 3).await, all_p[..3]);
    assert_eq!(read("P-", Some("P-u10"), 3).await, all_p[3..6]);
    assert_eq!(read("P-", Some("P-é"), 3).await, all_p[6..]);
    assert!(read("P-", Some("P-\u{10FFFF}"), 3).await.is_empty());
    // An `after` before the prefix starts at the prefix.
    assert_eq!(read("P-", Some("A"), 2).await, all_p[..2]);
    // Narrower prefixes, a prefix that is a key, the empty prefix.
    assert_eq!(
        read("P-u1", None, 100).await,
        owned(&[("P-u1", "1"), ("P-u10", "1")])
    );
    assert_eq!(read("P.", None, 100).await, owned(&[("P.", "1")]));
    assert_eq!(
        read("", None, 3).await,
        owned(&[("%P-u1", "1"), ("P", "1"), ("P,x", "1")])
    );
    assert_eq!(read("", Some("P."), 5).await, owned(&[("Q-u1", "1")]));
    assert!(read("Z", None, 100).await.is_empty());
    // Another project's keys stay there.
    assert_eq!(
        store
            .quota_usage_by_prefix(&other, "P-", None, 100)
            .await
            .unwrap(),
        vec![("P-u0".to_owned(), d("1"))]
    );
}

/// `charged_keys`: every key with a usage record, then from a cursor at
/// least every key charged since and never a key that was not charged
/// (refused, or of another project). Keys may come again (PostgreSQL's
/// cursor keeps a margin); a cancel keeps its keys (usage 0).
pub async fn charged_keys_lists_every_key_then_the_new_ones<S: Store>(store: Arc<S>) {
    use std::collections::BTreeSet;
    let p = project();
    let c = campaign(&p, "K");
    let keys = |answer: &accord::store::ChargedKeys| -> BTreeSet<String> {
        answer.keys.iter().cloned().collect()
    };
    let set =
        |list: &[&str]| -> BTreeSet<String> { list.iter().map(|k| (*k).to_owned()).collect() };

    let empty = store.charged_keys(&p, None).await.unwrap();
    assert!(empty.keys.is_empty(), "{empty:?}");
    recorded(
        &*store,
        &plan(&c, &[("A", "1", "9"), ("B", "1", "9")], t(0, 0)),
    )
    .await;
    let first = store.charged_keys(&p, None).await.unwrap();
    assert_eq!(keys(&first), set(&["A", "B"]));

    // Refused (over its limit): not charged.
    let refused = plan(&c, &[("Z", "10", "9")], t(1, 0));
    assert!(matches!(
        store.redeem(&refused).await.unwrap(),
        RedeemOutcome::QuotaExceeded { .. }
    ));
    // Charged, then cancelled: still a record.
    let cancelled = plan(&c, &[("C", "1", "9")], t(2, 0));
    recorded(&*store, &cancelled).await;
    store
        .cancel_redemption(&p, cancelled.redemption.id, t(3, 0))
        .await
        .unwrap();
    // A rolling counter's key.
    let mut rolling = plan(&c, &[("R", "1", "9")], t(4, 0));
    rolling.redemption.quotas[0].window = accord::campaign::QuotaWindow::from_seconds(3600);
    recorded(&*store, &rolling).await;
    // Another project's key.
    recorded(
        &*store,
        &plan(&campaign(&project(), "K"), &[("D", "1", "9")], t(5, 0)),
    )
    .await;

    let since = store.charged_keys(&p, Some(first.cursor)).await.unwrap();
    let found = keys(&since);
    assert!(found.is_superset(&set(&["C", "R"])), "{found:?}");
    assert!(found.is_subset(&set(&["A", "B", "C", "R"])), "{found:?}");
    let again = store.charged_keys(&p, Some(since.cursor)).await.unwrap();
    assert!(
        keys(&again).is_subset(&set(&["A", "B", "C", "R"])),
        "{again:?}"
    );
    let whole = store.charged_keys(&p, None).await.unwrap();
    assert_eq!(keys(&whole), set(&["A", "B", "C", "R"]));
}
