//! The stacking check of redeem: the campaigns a client applies to one
//! order together must be a combination their stacking rules allow. A
//! child of the service module; the decision itself is the engine's
//! (`engine::stacking`), pure.

use crate::core::campaign::model::Campaign;
use crate::core::engine::stacking;
use crate::{Error, ErrorCode, FieldError, Result};

/// Refuses (409 `stacking_conflict`) a redeem of `campaign` together with
/// the campaigns named in `with` (their `refCode`s), when their stacking
/// rules forbid the combination. Each must be among `found`, the
/// campaigns the redeem read (422 `unknown_campaign` naming every one that
/// is not).
pub(super) fn check_combination(
    campaign: &Campaign,
    with: &[String],
    found: &[Campaign],
) -> Result<()> {
    if with.is_empty() {
        return Ok(());
    }
    let mut others = Vec::with_capacity(with.len());
    let mut problems = Vec::new();
    for (i, code) in with.iter().enumerate() {
        match found.iter().find(|c| c.ref_code == *code) {
            Some(c) => others.push(c),
            None => problems.push(FieldError::new(
                format!("withCampaigns[{i}]"),
                ErrorCode::UnknownCampaign,
                format!("no campaign with refCode {code:?}"),
            )),
        }
    }
    if !problems.is_empty() {
        let message = problems[0].message.clone();
        return Err(Error::new(ErrorCode::UnknownCampaign, message).with_fields(problems));
    }
    stacking::check_combination(campaign, &others)
}
