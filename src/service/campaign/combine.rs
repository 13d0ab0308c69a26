//! The stacking check of redeem: the campaigns a client applies to one
//! order together must be a combination their stacking rules allow. A
//! child of the service module; the decision itself is the engine's
//! (`engine::stacking`), pure.

use super::CampaignService;
use crate::core::campaign::model::Campaign;
use crate::core::engine::stacking;
use crate::core::limits::{MAX_ACTION_REFS, MAX_REF_CODE_LEN};
use crate::store::{CampaignStore, RedemptionStore};
use crate::{Error, ErrorKind, FieldError, Result};

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// Refuses (409 `stacking_conflict`) a redeem of `campaign` together
    /// with the campaigns named in `with` (their `refCode`s), when their
    /// stacking rules forbid the combination. Each must exist in the
    /// project (422 `unknown_campaign` naming every one that does not).
    pub(super) async fn check_combination(
        &self,
        project: &str,
        campaign: &Campaign,
        with: &[String],
    ) -> Result<()> {
        if with.is_empty() {
            return Ok(());
        }
        if with.len() > MAX_ACTION_REFS {
            let message = format!("withCampaigns names more than {MAX_ACTION_REFS} campaigns");
            return Err(Error::limit("request_too_large", message.clone())
                .with_fields(vec![FieldError::new("withCampaigns", "too_many", message)]));
        }
        let mut others = Vec::with_capacity(with.len());
        let mut problems = Vec::new();
        for (i, code) in with.iter().enumerate() {
            let found = if code.len() > MAX_REF_CODE_LEN {
                None
            } else {
                self.store.campaign_by_code(project, code).await?
            };
            match found {
                Some(c) => others.push(c),
                None => problems.push(FieldError::new(
                    format!("withCampaigns[{i}]"),
                    "unknown_campaign",
                    format!("no campaign with refCode {code:?}"),
                )),
            }
        }
        if !problems.is_empty() {
            let message = problems[0].message.clone();
            return Err(
                Error::new(ErrorKind::Validation, "unknown_campaign", message)
                    .with_fields(problems),
            );
        }
        let others: Vec<&Campaign> = others.iter().collect();
        stacking::check_combination(campaign, &others)
    }
}
