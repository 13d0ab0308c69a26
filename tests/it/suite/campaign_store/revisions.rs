//! Campaign revisions: every save writes one, in the same atomic step as
//! the save; a refused save writes none; a delete keeps them.

use std::sync::Arc;

use accord::campaign::{CampaignRevision, CampaignStatus, StatusChange};
use accord::store::CampaignStore;
use accord::ErrorKind;
use uuid::Uuid;

use super::catalog::assert_err;
use super::data::{campaign, project, t};
use super::Store;

pub async fn revisions_record_every_save<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "REV");
    store.insert_campaign(&c).await.unwrap();
    let mut v2 = c.clone();
    v2.version = 2;
    "Renamed".clone_into(&mut v2.name);
    "bob".clone_into(&mut v2.last_modified_by);
    v2.last_modified_date = t(3600, 42);
    v2.status_schedule = vec![StatusChange {
        at: t(7200, 1),
        status: CampaignStatus::Disable,
    }];
    store.update_campaign(&v2, 1).await.unwrap();
    let mut v3 = v2.clone();
    v3.version = 3;
    v3.priority = 7;
    "carol".clone_into(&mut v3.last_modified_by);
    v3.last_modified_date = t(7200, 7);
    store.update_campaign(&v3, 2).await.unwrap();

    // Newest first, each the whole campaign as saved: every field
    // round-trips (micros, the quota limit's digits, the schedule).
    let all = store.campaign_revisions(&p, c.id, 0, 20).await.unwrap();
    assert_eq!(all.total, 3);
    assert_eq!(
        all.items,
        vec![
            CampaignRevision::of(&v3),
            CampaignRevision::of(&v2),
            CampaignRevision::of(&c)
        ]
    );
    assert_eq!(all.items[1].created_by, "bob");
    assert_eq!(all.items[1].created_date, t(3600, 42));
    assert_eq!(all.items[1].revision, 2);

    // Paged.
    let second = store.campaign_revisions(&p, c.id, 1, 2).await.unwrap();
    assert_eq!((second.total, second.items.len()), (3, 1));
    assert_eq!(second.items[0].revision, 1);
    let beyond = store.campaign_revisions(&p, c.id, 5, 2).await.unwrap();
    assert_eq!((beyond.total, beyond.items.len()), (3, 0));

    // One by number; per project and campaign.
    assert_eq!(
        store.campaign_revision(&p, c.id, 2).await.unwrap(),
        Some(CampaignRevision::of(&v2))
    );
    assert_eq!(store.campaign_revision(&p, c.id, 4).await.unwrap(), None);
    assert_eq!(
        store.campaign_revision(&project(), c.id, 1).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .campaign_revisions(&p, Uuid::new_v4(), 0, 20)
            .await
            .unwrap()
            .total,
        0
    );

    // A delete keeps the history; a campaign created again under the same
    // id (an import) starts a new one.
    assert!(store.delete_campaign(&p, c.id).await.unwrap());
    assert_eq!(
        store
            .campaign_revisions(&p, c.id, 0, 20)
            .await
            .unwrap()
            .total,
        3
    );
    let mut again = campaign(&p, "REV-AGAIN");
    again.id = c.id;
    store.insert_campaign(&again).await.unwrap();
    let fresh = store.campaign_revisions(&p, c.id, 0, 20).await.unwrap();
    assert_eq!(fresh.items, vec![CampaignRevision::of(&again)]);
}

pub async fn refused_saves_write_no_revision<S: Store>(store: Arc<S>) {
    let p = project();
    let a = campaign(&p, "KEEP-A");
    let b = campaign(&p, "KEEP-B");
    store.insert_campaign(&a).await.unwrap();
    store.insert_campaign(&b).await.unwrap();

    // Stale version, a refCode taken, a create over the limit, a duplicate
    // code on create: each refused whole.
    let mut stale = a.clone();
    stale.version = 2;
    assert_err(
        store.update_campaign(&stale, 5).await,
        ErrorKind::Conflict,
        "stale_version",
    );
    let mut clash = a.clone();
    clash.version = 2;
    "KEEP-B".clone_into(&mut clash.ref_code);
    assert_err(
        store.update_campaign(&clash, 1).await,
        ErrorKind::Conflict,
        "duplicate_ref_code",
    );
    let over = campaign(&p, "OVER");
    assert_err(
        store.insert_campaign_within(&over, 2).await,
        ErrorKind::LimitExceeded,
        "too_many_campaigns",
    );
    let dup = campaign(&p, "KEEP-A");
    assert_err(
        store.insert_campaign(&dup).await,
        ErrorKind::Conflict,
        "duplicate_ref_code",
    );
    assert_eq!(
        store
            .campaign_revisions(&p, a.id, 0, 20)
            .await
            .unwrap()
            .items,
        vec![CampaignRevision::of(&a)]
    );
    for id in [over.id, dup.id] {
        assert_eq!(
            store.campaign_revisions(&p, id, 0, 20).await.unwrap().total,
            0
        );
    }
}
