//! The campaign pages: the list, the editor, and "try it here".

pub mod editor;
mod editor_view;
mod form;
pub mod list;
pub mod try_it;

use uuid::Uuid;

use super::guard::Fail;
use crate::core::campaign::{Campaign, CampaignInput};

/// What a client would send to save `c` unchanged (its version included,
/// so that a save over a newer version is refused as stale).
pub fn input_of(c: &Campaign) -> CampaignInput {
    CampaignInput {
        name: c.name.clone(),
        description: c.description.clone(),
        image_url: c.image_url.clone(),
        start_date: Some(c.start_date),
        end_date: Some(c.end_date),
        ref_code: c.ref_code.clone(),
        status: c.status.clone(),
        priority: Some(c.priority),
        channel: c.channel.clone(),
        group_name: c.group_name.clone(),
        stacking: c.stacking.clone(),
        time_zone: c.time_zone.clone(),
        quotas: c.quotas.clone(),
        rules: c.rules.clone(),
        version: Some(c.version),
    }
}

/// A campaign id from the path (not a UUID: 404, as the API answers).
pub fn campaign_id(id: &str) -> Result<Uuid, Fail> {
    Uuid::parse_str(id).map_err(|_| Fail::NotFound(format!("There is no campaign {id:?}.")))
}
