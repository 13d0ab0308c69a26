//! Import of campaigns exported from another database (`accord export` /
//! `accord import`): a campaign keeps its id, so importing the same file
//! again changes nothing.

use uuid::Uuid;

use super::CampaignService;
use crate::core::campaign::CampaignInput;
use crate::core::engine::validate::{build, Stamp};
use crate::store::{CampaignStore, RedemptionStore};
use crate::Result;

/// What importing one record did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Imported {
    /// There was no record with its id: it was created with that id.
    Created,
    /// The record with its id differed: it was replaced (a new version).
    Updated,
    /// The record with its id was already the same: nothing was written.
    Unchanged,
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// Saves `input` as campaign `id` of `project`: created with that id if
    /// the project has none, replaced if it differs, left alone if it is
    /// the same. Validation and the refCode's uniqueness apply as on
    /// create and update; the input's `version` is ignored.
    pub async fn import_campaign(
        &self,
        project: &str,
        id: Uuid,
        mut input: CampaignInput,
        actor: &str,
    ) -> Result<Imported> {
        crate::core::limits::check_project_id(project)?;
        input.version = None;
        if let Some(existing) = self.store.campaign(project, id).await? {
            let mut stored = existing.to_input();
            stored.version = None;
            if stored == input {
                return Ok(Imported::Unchanged);
            }
            self.update_campaign(project, id, input, actor).await?;
            return Ok(Imported::Updated);
        }
        let (mut campaign, _) = build(
            input,
            None,
            &Stamp {
                project,
                actor,
                now: self.clock.now(),
            },
        )?;
        campaign.id = id;
        self.store
            .insert_campaign_within(&campaign, self.max_campaigns)
            .await?;
        self.snapshots.invalidate(project);
        Ok(Imported::Created)
    }
}
