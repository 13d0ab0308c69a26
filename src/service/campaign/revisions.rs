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
