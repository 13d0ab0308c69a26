//! Campaign administration: create, update, delete, read and list.

use uuid::Uuid;

use super::{campaign_not_found, CampaignService};
use crate::core::campaign::{Campaign, CampaignInput};
use crate::core::engine::validate::{build, Stamp};
use crate::core::error::ErrorCode;
use crate::store::{check_page_size, CampaignQuery, CampaignStore, Page, RedemptionStore};
use crate::{Error, Result};

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// Creates a campaign (version 1). `actor` becomes `createdBy`.
    pub async fn create_campaign(
        &self,
        project: &str,
        input: CampaignInput,
        actor: &str,
    ) -> Result<Campaign> {
        crate::core::limits::check_project_id(project)?;
        let now = self.clock.now();
        let (campaign, _) = build(
            input,
            None,
            &Stamp {
                project,
                actor,
                now,
            },
        )?;
        self.store
            .insert_campaign_within(&campaign, self.max_campaigns)
            .await?;
        self.snapshots.invalidate(project);
        Ok(campaign)
    }
    /// Replaces a campaign; its version increases by one. When the input
    /// names a `version`, it must be the stored one (else `stale_version`).
    pub async fn update_campaign(
        &self,
        project: &str,
        id: Uuid,
        input: CampaignInput,
        actor: &str,
    ) -> Result<Campaign> {
        crate::core::limits::check_project_id(project)?;
        let existing = self
            .store
            .campaign(project, id)
            .await?
            .ok_or_else(|| campaign_not_found(id))?;
        if let Some(v) = input.version {
            if v != existing.version {
                return Err(Error::new(
                    ErrorCode::StaleVersion,
                    format!("the campaign is at version {}, not {v}; reload it and apply the change again", existing.version),
                ));
            }
        }
        let now = self.clock.now();
        let (campaign, _) = build(
            input,
            Some(&existing),
            &Stamp {
                project,
                actor,
                now,
            },
        )?;
        self.store
            .update_campaign(&campaign, existing.version)
            .await?;
        self.snapshots.invalidate(project);
        Ok(campaign)
    }
    /// Deletes a campaign. Its redemptions and quota usage stay.
    pub async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<()> {
        if !self.store.delete_campaign(project, id).await? {
            return Err(campaign_not_found(id));
        }
        self.snapshots.invalidate(project);
        Ok(())
    }
    /// One campaign, with `active` computed now.
    pub async fn campaign(&self, project: &str, id: Uuid) -> Result<Campaign> {
        let c = self
            .store
            .campaign(project, id)
            .await?
            .ok_or_else(|| campaign_not_found(id))?;
        Ok(c.with_active(self.clock.now()))
    }
    /// A page of campaigns, with `active` computed now.
    pub async fn list_campaigns(
        &self,
        project: &str,
        query: &CampaignQuery,
    ) -> Result<Page<Campaign>> {
        check_page_size(query.size)?;
        let now = self.clock.now();
        Ok(self
            .store
            .list_campaigns(project, query)
            .await?
            .map(|c| c.with_active(now)))
    }
}
