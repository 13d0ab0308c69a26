//! Campaign definitions: insert, read, update, delete, list, catalog version.

use std::sync::Arc;

use accord::campaign::{Campaign, CampaignStatus};
use accord::store::memory::MemoryStore;
use accord::store::{CampaignQuery, CampaignSort, CampaignStore, Period, SortDirection};
use accord::{ErrorKind, Result};
use chrono::{Duration, TimeZone, Utc};
use uuid::Uuid;

use super::data::{campaign, project, t};
use super::Store;

/// Asserts that `r` failed with `kind` and `code`.
pub fn assert_err<T: std::fmt::Debug>(r: Result<T>, kind: ErrorKind, code: &str) {
    match r {
        Err(e) => {
            assert_eq!(e.kind(), kind, "{e:?}");
            assert_eq!(e.code(), code, "{e:?}");
        }
        Ok(v) => panic!("expected {kind:?} {code}, got Ok({v:?})"),
    }
}

pub async fn insert_get_and_by_code<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "SPRING-1");
    store.insert_campaign(&c).await.unwrap();

    // Every field round-trips: micros of timestamps, the quota limit's 20
    // digits, the rules document.
    assert_eq!(store.campaign(&p, c.id).await.unwrap(), Some(c.clone()));
    assert_eq!(
        store.campaign_by_code(&p, "SPRING-1").await.unwrap(),
        Some(c.clone())
    );
    // Lookups are exact and per project.
    assert_eq!(store.campaign_by_code(&p, "spring-1").await.unwrap(), None);
    assert_eq!(store.campaign(&project(), c.id).await.unwrap(), None);
    assert_eq!(
        store
            .campaign_by_code(&project(), "SPRING-1")
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.campaign(&p, Uuid::new_v4()).await.unwrap(), None);

    // A campaign with the optional fields empty round-trips too.
    let mut bare = campaign(&p, "BARE");
    bare.description = None;
    bare.image_url = None;
    bare.channel = None;
    bare.group_name = None;
    bare.quotas.clear();
    bare.rules.clear();
    bare.status = CampaignStatus::Disable;
    bare.priority = -3;
    store.insert_campaign(&bare).await.unwrap();
    assert_eq!(
        store.campaign(&p, bare.id).await.unwrap(),
        Some(bare.clone())
    );

    assert_eq!(store.count_campaigns(&p).await.unwrap(), 2);
    assert_eq!(store.count_campaigns(&project()).await.unwrap(), 0);
    // Ordered by refCode.
    assert_eq!(store.all_campaigns(&p).await.unwrap(), vec![bare, c]);
}

pub async fn duplicate_ref_code_is_a_conflict<S: Store>(store: Arc<S>) {
    let p = project();
    let a = campaign(&p, "DUP");
    store.insert_campaign(&a).await.unwrap();
    let version = store.catalog_version(&p).await.unwrap();

    let same_code = campaign(&p, "DUP");
    assert_err(
        store.insert_campaign(&same_code).await,
        ErrorKind::Conflict,
        "duplicate_ref_code",
    );
    // The same id again.
    let mut same_id = campaign(&p, "OTHER");
    same_id.id = a.id;
    assert_err(
        store.insert_campaign(&same_id).await,
        ErrorKind::Conflict,
        "duplicate_id",
    );
    // Another project may use the code.
    store
        .insert_campaign(&campaign(&project(), "DUP"))
        .await
        .unwrap();

    // Renaming another campaign to a taken code.
    let b = campaign(&p, "B");
    store.insert_campaign(&b).await.unwrap();
    let mut renamed = b.clone();
    renamed.ref_code = "DUP".into();
    renamed.version = 2;
    assert_err(
        store.update_campaign(&renamed, 1).await,
        ErrorKind::Conflict,
        "duplicate_ref_code",
    );
    // Keeping one's own code is not a conflict.
    let mut kept = a.clone();
    kept.name = "still DUP".into();
    kept.version = 2;
    store.update_campaign(&kept, 1).await.unwrap();

    // Failed writes changed nothing.
    assert_eq!(store.campaign(&p, b.id).await.unwrap(), Some(b));
    assert_eq!(store.count_campaigns(&p).await.unwrap(), 2);
    assert_eq!(store.catalog_version(&p).await.unwrap(), version + 2);
}

pub async fn update_checks_version<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "UPD");
    store.insert_campaign(&c).await.unwrap();

    let mut v2 = c.clone();
    v2.version = 2;
    v2.name = "Renamed".into();
    v2.ref_code = "UPD-2".into();
    v2.status = CampaignStatus::Disable;
    v2.group_name = None;
    v2.rules.clear();
    v2.quotas.truncate(1);
    v2.last_modified_by = "editor".into();
    v2.last_modified_date = t(3_600, 42);
    store.update_campaign(&v2, 1).await.unwrap();
    assert_eq!(store.campaign(&p, c.id).await.unwrap(), Some(v2.clone()));
    assert_eq!(store.campaign_by_code(&p, "UPD").await.unwrap(), None);
    assert_eq!(
        store.campaign_by_code(&p, "UPD-2").await.unwrap(),
        Some(v2.clone())
    );

    // A writer that read version 1 is too late.
    let mut stale = c.clone();
    stale.version = 2;
    assert_err(
        store.update_campaign(&stale, 1).await,
        ErrorKind::Conflict,
        "stale_version",
    );
    assert_eq!(store.campaign(&p, c.id).await.unwrap(), Some(v2));

    // A campaign that does not exist (here, or in another project).
    assert_err(
        store.update_campaign(&campaign(&p, "NEW"), 1).await,
        ErrorKind::NotFound,
        "campaign_not_found",
    );
    let mut elsewhere = c.clone();
    elsewhere.project_id = project();
    assert_err(
        store.update_campaign(&elsewhere, 2).await,
        ErrorKind::NotFound,
        "campaign_not_found",
    );
}

pub async fn delete_removes<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "DEL");
    store.insert_campaign(&c).await.unwrap();
    assert!(!store.delete_campaign(&project(), c.id).await.unwrap());
    assert!(store.delete_campaign(&p, c.id).await.unwrap());
    assert_eq!(store.campaign(&p, c.id).await.unwrap(), None);
    assert_eq!(store.campaign_by_code(&p, "DEL").await.unwrap(), None);
    assert!(!store.delete_campaign(&p, c.id).await.unwrap());
    assert_eq!(store.count_campaigns(&p).await.unwrap(), 0);
    // The code is free again.
    store.insert_campaign(&campaign(&p, "DEL")).await.unwrap();
}

pub async fn catalog_version_changes_on_every_write<S: Store>(store: Arc<S>) {
    let p = project();
    let other = project();
    assert_eq!(store.catalog_version(&p).await.unwrap(), 0);
    let c = campaign(&p, "CAT");
    store.insert_campaign(&c).await.unwrap();
    assert_eq!(store.catalog_version(&p).await.unwrap(), 1);
    let mut v2 = c.clone();
    v2.version = 2;
    store.update_campaign(&v2, 1).await.unwrap();
    assert_eq!(store.catalog_version(&p).await.unwrap(), 2);
    // Failed writes do not count.
    assert!(store.update_campaign(&v2, 1).await.is_err());
    assert!(store.insert_campaign(&campaign(&p, "CAT")).await.is_err());
    assert!(!store.delete_campaign(&p, Uuid::new_v4()).await.unwrap());
    assert_eq!(store.catalog_version(&p).await.unwrap(), 2);
    assert!(store.delete_campaign(&p, c.id).await.unwrap());
    assert_eq!(store.catalog_version(&p).await.unwrap(), 3);
    // Per project.
    assert_eq!(store.catalog_version(&other).await.unwrap(), 0);
}

/// refCode, name, priority, date offset, groupName, status.
type Row<'a> = (&'a str, &'a str, i32, i64, Option<&'a str>, CampaignStatus);

/// Campaigns whose sort keys tie in places, so that every tie-break shows.
async fn sortable(store: &impl CampaignStore, reference: &MemoryStore) -> String {
    let p = project();
    let rows: [Row; 7] = [
        (
            "B",
            "Beta sale",
            2,
            10,
            Some("Spring"),
            CampaignStatus::Enable,
        ),
        ("A", "alpha", 1, 10, None, CampaignStatus::Disable),
        (
            "C",
            "Beta sale",
            2,
            5,
            Some("summer"),
            CampaignStatus::Enable,
        ),
        (
            "a_1",
            "Zeta",
            1,
            5,
            Some("SPRING-extra"),
            CampaignStatus::Enable,
        ),
        (
            "D%",
            "Ünïcode Ärger",
            3,
            7,
            Some("winter"),
            CampaignStatus::Disable,
        ),
        ("E", "beta", 10, 7, None, CampaignStatus::Enable),
        (
            "F",
            "Beta sale",
            2,
            10,
            Some("spring"),
            CampaignStatus::Enable,
        ),
    ];
    for (i, (code, name, priority, offset, group, status)) in rows.into_iter().enumerate() {
        let mut c = campaign(&p, code);
        c.name = name.to_owned();
        c.priority = priority;
        // Dates a microsecond apart, and equal between some campaigns.
        c.start_date = t(offset, 1);
        c.end_date = t(offset * 2, 0);
        c.created_date = t(0, i64::try_from(i % 3).unwrap());
        c.last_modified_date = t(offset, -1);
        c.group_name = group.map(str::to_owned);
        c.status = status;
        store.insert_campaign(&c).await.unwrap();
        reference.insert_campaign(&c).await.unwrap();
    }
    p
}

fn codes(items: &[Campaign]) -> Vec<&str> {
    items.iter().map(|c| c.ref_code.as_str()).collect()
}

pub async fn list_filters<S: Store>(store: Arc<S>) {
    let reference = MemoryStore::new();
    let p = sortable(&*store, &reference).await;
    let list = |q: Option<&str>, status: Option<CampaignStatus>| CampaignQuery {
        q: q.map(str::to_owned),
        status,
        ..CampaignQuery::default()
    };
    let cases: Vec<(CampaignQuery, Vec<&str>)> = vec![
        (list(None, None), vec!["A", "B", "C", "D%", "E", "F", "a_1"]),
        // Name, refCode or groupName; case-insensitive, also beyond ASCII.
        (list(Some("BETA"), None), vec!["B", "C", "E", "F"]),
        (list(Some("spring"), None), vec!["B", "F", "a_1"]),
        (list(Some("üNÏ"), None), vec!["D%"]),
        (list(Some("a_"), None), vec!["a_1"]),
        // LIKE wildcards are literal characters.
        (list(Some("%"), None), vec!["D%"]),
        (list(Some("_"), None), vec!["a_1"]),
        (
            list(Some(""), None),
            vec!["A", "B", "C", "D%", "E", "F", "a_1"],
        ),
        (list(Some("nothing like it"), None), vec![]),
        (list(None, Some(CampaignStatus::Disable)), vec!["A", "D%"]),
        (
            list(Some("e"), Some(CampaignStatus::Enable)),
            vec!["B", "C", "E", "F", "a_1"],
        ),
    ];
    for (query, expected) in cases {
        let page = store.list_campaigns(&p, &query).await.unwrap();
        assert_eq!(codes(&page.items), expected, "{query:?}");
        assert_eq!(page.total, expected.len() as u64, "{query:?}");
        let reference = reference.list_campaigns(&p, &query).await.unwrap();
        assert_eq!(page, reference, "{query:?}");
    }
    // Other projects' campaigns are never listed.
    let empty = store
        .list_campaigns(&project(), &CampaignQuery::default())
        .await
        .unwrap();
    assert!(empty.items.is_empty());
    assert_eq!(empty.total, 0);
}

pub async fn list_sorts_by_every_key<S: Store>(store: Arc<S>) {
    use CampaignSort::*;
    use SortDirection::*;
    let reference = MemoryStore::new();
    let p = sortable(&*store, &reference).await;
    let sorted = |sort: Vec<(CampaignSort, SortDirection)>| CampaignQuery {
        sort,
        ..CampaignQuery::default()
    };
    // A few orders written out, to pin the reference model itself.
    let pinned: Vec<(CampaignQuery, Vec<&str>)> = vec![
        // Bytewise: uppercase before lowercase, "Ü" after "Z".
        (
            sorted(vec![(Name, Asc)]),
            vec!["B", "C", "F", "a_1", "A", "E", "D%"],
        ),
        (
            sorted(vec![(Name, Desc)]),
            vec!["D%", "E", "A", "a_1", "B", "C", "F"],
        ),
        (
            sorted(vec![(Priority, Asc)]),
            vec!["A", "a_1", "B", "C", "F", "D%", "E"],
        ),
        (
            sorted(vec![(Priority, Desc), (StartDate, Desc)]),
            vec!["E", "D%", "B", "F", "C", "A", "a_1"],
        ),
        (
            sorted(vec![(RefCode, Desc)]),
            vec!["a_1", "F", "E", "D%", "C", "B", "A"],
        ),
    ];
    for (query, expected) in pinned {
        let page = store.list_campaigns(&p, &query).await.unwrap();
        assert_eq!(codes(&page.items), expected, "{:?}", query.sort);
    }
    // Every key in both directions, alone and before another key, against
    // the reference model.
    let keys = [
        Name,
        RefCode,
        Priority,
        StartDate,
        EndDate,
        CreatedDate,
        LastModifiedDate,
    ];
    for key in keys {
        for dir in [Asc, Desc] {
            for query in [
                sorted(vec![(key, dir)]),
                sorted(vec![(key, dir), (Name, Desc)]),
                sorted(vec![(Priority, Asc), (key, dir)]),
            ] {
                let page = store.list_campaigns(&p, &query).await.unwrap();
                let expected = reference.list_campaigns(&p, &query).await.unwrap();
                assert_eq!(
                    codes(&page.items),
                    codes(&expected.items),
                    "{:?}",
                    query.sort
                );
                assert_eq!(page, expected, "{:?}", query.sort);
            }
        }
    }
}

pub async fn list_pages<S: Store>(store: Arc<S>) {
    let reference = MemoryStore::new();
    let p = sortable(&*store, &reference).await;
    let page = |page, size| CampaignQuery {
        page,
        size,
        sort: vec![(CampaignSort::Priority, SortDirection::Desc)],
        ..CampaignQuery::default()
    };
    let all = store.list_campaigns(&p, &page(0, 1000)).await.unwrap();
    assert_eq!(all.items.len(), 7);
    let mut joined = Vec::new();
    for (n, expected_len) in [(0, 3), (1, 3), (2, 1), (3, 0), (1000, 0)] {
        let got = store.list_campaigns(&p, &page(n, 3)).await.unwrap();
        assert_eq!(got.items.len(), expected_len, "page {n}");
        assert_eq!((got.page, got.size, got.total), (n, 3, 7));
        assert_eq!(
            got,
            reference.list_campaigns(&p, &page(n, 3)).await.unwrap()
        );
        joined.extend(got.items);
    }
    assert_eq!(joined, all.items);
    let one = store.list_campaigns(&p, &page(6, 1)).await.unwrap();
    assert_eq!(one.items, all.items[6..]);
    // The largest page number does not overflow.
    let far = store
        .list_campaigns(&p, &page(u32::MAX, 1000))
        .await
        .unwrap();
    assert!(far.items.is_empty());
    assert_eq!(far.total, 7);
}

/// Runs `n` copies of a campaign write at once; the successes and the
/// error codes of the failures.
async fn racing_writes<S, F, Fut>(store: &Arc<S>, n: usize, write: F) -> (usize, Vec<&'static str>)
where
    S: Store,
    F: Fn(Arc<S>, usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        tasks.spawn(write(Arc::clone(store), i));
    }
    let (mut ok, mut codes) = (0, Vec::new());
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            Ok(()) => ok += 1,
            Err(e) => codes.push(e.code()),
        }
    }
    (ok, codes)
}

pub async fn concurrent_inserts_of_one_code_one_wins<S: Store>(store: Arc<S>) {
    let p = project();
    let (ok, codes) = racing_writes(&store, 8, |store, _| {
        let c = campaign(&p, "RACE");
        async move { store.insert_campaign(&c).await }
    })
    .await;
    assert_eq!(ok, 1);
    assert_eq!(codes, vec!["duplicate_ref_code"; 7]);
    assert_eq!(store.count_campaigns(&p).await.unwrap(), 1);
    assert_eq!(store.catalog_version(&p).await.unwrap(), 1);
}

/// A project's campaign limit holds under racing creates: the count and
/// the insert are one step, and a refused create writes nothing.
pub async fn concurrent_creates_never_pass_the_campaign_limit<S: Store>(store: Arc<S>) {
    let p = project();
    for i in 0..3 {
        store
            .insert_campaign_within(&campaign(&p, &format!("HELD{i}")), 5)
            .await
            .unwrap();
    }
    let (ok, codes) = racing_writes(&store, 8, |store, i| {
        let c = campaign(&p, &format!("NEW{i}"));
        async move { store.insert_campaign_within(&c, 5).await }
    })
    .await;
    assert_eq!(ok, 2);
    assert_eq!(codes, vec!["too_many_campaigns"; 6]);
    assert_eq!(store.count_campaigns(&p).await.unwrap(), 5);
    let version = store.catalog_version(&p).await.unwrap();
    let refused = store
        .insert_campaign_within(&campaign(&p, "LATE"), 5)
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), accord::ErrorKind::LimitExceeded);
    assert_eq!(store.count_campaigns(&p).await.unwrap(), 5);
    assert_eq!(store.catalog_version(&p).await.unwrap(), version);
    // Another project is not counted against this one.
    store
        .insert_campaign_within(&campaign(&project(), "OTHER"), 1)
        .await
        .unwrap();
}

pub async fn concurrent_updates_of_one_version_one_wins<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "RACE");
    store.insert_campaign(&c).await.unwrap();
    let (ok, codes) = racing_writes(&store, 8, |store, i| {
        let mut next = c.clone();
        next.version = 2;
        next.name = format!("writer {i}");
        async move { store.update_campaign(&next, 1).await }
    })
    .await;
    assert_eq!(ok, 1);
    assert_eq!(codes, vec!["stale_version"; 7]);
    let stored = store.campaign(&p, c.id).await.unwrap().unwrap();
    assert_eq!(stored.version, 2);
    assert_eq!(store.catalog_version(&p).await.unwrap(), 2);
    // The winner's revision, and no loser's, was written with it.
    let revisions = store.campaign_revisions(&p, c.id, 0, 20).await.unwrap();
    assert_eq!(
        revisions.items,
        vec![
            accord::campaign::CampaignRevision::of(&stored),
            accord::campaign::CampaignRevision::of(&c)
        ]
    );
}

pub async fn list_search_box_and_admin_filters<S: Store>(store: Arc<S>) {
    let reference = MemoryStore::new();
    let p = project();
    let t = |days: i64| Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap() + Duration::days(days);
    // refCode, name, group, channel, start, end (days from June 1st), status.
    let rows = [
        (
            "NOW-WEB",
            "Summer web",
            Some("Summer"),
            Some("web"),
            -10,
            10,
            CampaignStatus::Enable,
        ),
        (
            "NOW-APP",
            "Summer app",
            Some("summer"),
            Some("app"),
            -10,
            10,
            CampaignStatus::Disable,
        ),
        (
            "SOON",
            "Autumn",
            Some("Autumn"),
            Some("web"),
            5,
            30,
            CampaignStatus::Enable,
        ),
        (
            "PAST",
            "Spring",
            None,
            None,
            -30,
            -1,
            CampaignStatus::Enable,
        ),
        (
            "EDGE",
            "Starts now",
            Some("Summer"),
            None,
            0,
            1,
            CampaignStatus::Disable,
        ),
    ];
    for (code, name, group, channel, start, end, status) in rows {
        let mut c = campaign(&p, code);
        c.name = name.to_owned();
        c.group_name = group.map(str::to_owned);
        c.channel = channel.map(str::to_owned);
        c.start_date = t(start);
        c.end_date = t(end);
        c.status = status;
        store.insert_campaign(&c).await.unwrap();
        reference.insert_campaign(&c).await.unwrap();
    }
    let q = |q: &str| CampaignQuery {
        q: Some(q.to_owned()),
        ..CampaignQuery::default()
    };
    let at = t(0);
    let cases: Vec<(CampaignQuery, Vec<&str>)> = vec![
        // The search box: name, groupName, refCode, and status.
        (q("autumn"), vec!["SOON"]),
        (q("SUMM"), vec!["EDGE", "NOW-APP", "NOW-WEB"]),
        (q("soo"), vec!["SOON"]),
        (q("disab"), vec!["EDGE", "NOW-APP"]),
        (q("enable"), vec!["NOW-WEB", "PAST", "SOON"]),
        (
            q("able"),
            vec!["EDGE", "NOW-APP", "NOW-WEB", "PAST", "SOON"],
        ),
        // Exact channel and group.
        (
            CampaignQuery {
                channel: Some("web".into()),
                ..CampaignQuery::default()
            },
            vec!["NOW-WEB", "SOON"],
        ),
        (
            CampaignQuery {
                channel: Some("we".into()),
                ..CampaignQuery::default()
            },
            vec![],
        ),
        (
            CampaignQuery {
                group: Some("Summer".into()),
                ..CampaignQuery::default()
            },
            vec!["EDGE", "NOW-WEB"],
        ),
        // Period at an instant: a start at the instant is current.
        (
            CampaignQuery {
                period: Some((Period::Current, at)),
                ..CampaignQuery::default()
            },
            vec!["EDGE", "NOW-APP", "NOW-WEB"],
        ),
        (
            CampaignQuery {
                period: Some((Period::Scheduled, at)),
                ..CampaignQuery::default()
            },
            vec!["SOON"],
        ),
        (
            CampaignQuery {
                period: Some((Period::Ended, at)),
                ..CampaignQuery::default()
            },
            vec!["PAST"],
        ),
        (
            CampaignQuery {
                period: Some((Period::Ended, t(1))),
                ..CampaignQuery::default()
            },
            vec!["EDGE", "PAST"],
        ),
        // Everything together.
        (
            CampaignQuery {
                q: Some("summer".into()),
                status: Some(CampaignStatus::Enable),
                channel: Some("web".into()),
                group: Some("Summer".into()),
                period: Some((Period::Current, at)),
                ..CampaignQuery::default()
            },
            vec!["NOW-WEB"],
        ),
    ];
    for (query, expected) in cases {
        let page = store.list_campaigns(&p, &query).await.unwrap();
        assert_eq!(codes(&page.items), expected, "{query:?}");
        assert_eq!(page.total, expected.len() as u64, "{query:?}");
        assert_eq!(
            page,
            reference.list_campaigns(&p, &query).await.unwrap(),
            "{query:?}"
        );
    }
}
