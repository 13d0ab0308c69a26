//! Campaign revisions: list, read, compare and restore the saved states of
//! a campaign. The store writes each revision with the save it records;
//! here they are read and turned into views and JSON Patches.

use uuid::Uuid;

use super::{campaign_not_found, CampaignService};
use crate::core::campaign::diff;
use crate::core::campaign::model::Campaign;
use crate::core::campaign::revision::{CampaignRevision, RevisionDiff, RevisionView};
use crate::core::error::ErrorCode;
use crate::store::{check_page_size, CampaignStore, Page, RedemptionStore};
use crate::{Error, Result};

fn revision_not_found(id: Uuid, revision: i64) -> Error {
    Error::new(
        ErrorCode::CampaignRevisionNotFound,
        format!("campaign {id} has no revision {revision}"),
    )
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// A page of a campaign's revisions, newest first, each with what it
    /// changed. The revisions of a deleted campaign stay readable; an id
    /// with neither a campaign nor revisions is `campaign_not_found`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use accord::campaign::CampaignInput;
    /// use accord::store::memory::MemoryStore;
    /// use accord::{CampaignService, SystemClock};
    /// use pollster::block_on;
    /// use serde_json::json;
    ///
    /// let service = CampaignService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
    /// let input = json!({
    ///     "name": "Ten off", "refCode": "TEN",
    ///     "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
    ///     "rules": [{"name": "all", "when": [], "then": [
    ///         {"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "10"}]}]}]
    /// });
    /// let created = block_on(service.create_campaign(
    ///     "shop", serde_json::from_value(input.clone())?, "alice"))?;
    /// let mut edit: CampaignInput = serde_json::from_value(input)?;
    /// edit.name = "Twenty off".into();
    /// block_on(service.update_campaign("shop", created.id, edit, "bob"))?;
    ///
    /// let history = block_on(service.campaign_revisions("shop", created.id, 0, 20))?;
    /// assert_eq!(history.total, 2);
    /// let latest = &history.items[0];
    /// assert_eq!((latest.revision, latest.created_by.as_str()), (2, "bob"));
    /// let changes = latest.changes.as_ref().unwrap();
    /// assert_eq!((changes[0].op.as_str(), changes[0].path.as_str()), ("replace", "/name"));
    ///
    /// // Restoring revision 1 saves its content as version 3.
    /// let restored = block_on(service.restore_campaign_revision(
    ///     "shop", created.id, 1, Some(2), "carol"))?;
    /// assert_eq!((restored.version, restored.name.as_str()), (3, "Ten off"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn campaign_revisions(
        &self,
        project: &str,
        id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<RevisionView>> {
        check_page_size(size)?;
        let revisions = self
            .store
            .campaign_revisions(project, id, page, size)
            .await?;
        if revisions.total == 0 {
            // A campaign saved before revisions were kept shows its current
            // state as its one revision.
            let current = self
                .store
                .campaign(project, id)
                .await?
                .ok_or_else(|| campaign_not_found(id))?;
            let items = if page == 0 {
                vec![RevisionView::of(
                    &CampaignRevision::of(&current),
                    None,
                    false,
                )]
            } else {
                Vec::new()
            };
            return Ok(Page {
                items,
                page,
                size,
                total: 1,
            });
        }
        // Each revision's changes are against the one after it in the page;
        // the last one's against the revision just before the page.
        let before = match revisions.items.last() {
            Some(last) if last.revision > 1 => {
                self.store
                    .campaign_revision(project, id, last.revision - 1)
                    .await?
            }
            _ => None,
        };
        let items = &revisions.items;
        let views = (0..items.len())
            .map(|i| {
                let previous = items.get(i + 1).or(before.as_ref());
                let previous = previous.filter(|p| p.revision == items[i].revision - 1);
                RevisionView::of(&items[i], previous, false)
            })
            .collect();
        Ok(Page {
            items: views,
            page: revisions.page,
            size: revisions.size,
            total: revisions.total,
        })
    }

    /// One revision of a campaign, the whole campaign as saved and what the
    /// save changed.
    pub async fn campaign_revision(
        &self,
        project: &str,
        id: Uuid,
        revision: i64,
    ) -> Result<RevisionView> {
        let found = self.revision_or_current(project, id, revision).await?;
        let previous = if revision > 1 {
            self.store
                .campaign_revision(project, id, revision - 1)
                .await?
        } else {
            None
        };
        Ok(RevisionView::of(&found, previous.as_ref(), true))
    }

    /// The JSON Patch from revision `from` to revision `to` of a campaign
    /// (either may be the older).
    pub async fn campaign_revision_diff(
        &self,
        project: &str,
        id: Uuid,
        from: i64,
        to: i64,
    ) -> Result<RevisionDiff> {
        let a = self.revision_or_current(project, id, from).await?;
        let b = self.revision_or_current(project, id, to).await?;
        Ok(RevisionDiff {
            from,
            to,
            changes: diff(&a.campaign, &b.campaign),
        })
    }

    /// Saves revision `revision`'s content as the campaign's next version:
    /// a new revision equal to the old one (its bookkeeping aside). The
    /// content is validated again, as on every update; the refCode must
    /// still be free. `version`, when given, must be the campaign's current
    /// version (else `stale_version`). A deleted campaign is not restored
    /// (`campaign_not_found`).
    pub async fn restore_campaign_revision(
        &self,
        project: &str,
        id: Uuid,
        revision: i64,
        version: Option<i64>,
        actor: &str,
    ) -> Result<Campaign> {
        let old = self.revision_or_current(project, id, revision).await?;
        let mut input = old.campaign.to_input();
        input.version = version;
        self.update_campaign(project, id, input, actor).await
    }

    /// Revision `revision` of a campaign; a campaign saved before revisions
    /// were kept has its current version as a revision.
    async fn revision_or_current(
        &self,
        project: &str,
        id: Uuid,
        revision: i64,
    ) -> Result<CampaignRevision> {
        if let Some(found) = self.store.campaign_revision(project, id, revision).await? {
            return Ok(found);
        }
        match self.store.campaign(project, id).await? {
            Some(current) if current.version == revision => Ok(CampaignRevision::of(&current)),
            Some(_) => Err(revision_not_found(id, revision)),
            None => {
                let any = self.store.campaign_revisions(project, id, 0, 1).await?;
                if any.total == 0 {
                    Err(campaign_not_found(id))
                } else {
                    Err(revision_not_found(id, revision))
                }
            }
        }
    }
}
