//! The campaign pages: the list, the editor, and "try it here".

pub mod codes;
pub mod editor;
mod editor_view;
mod form;
pub mod list;
pub mod revisions;
pub mod try_it;

use uuid::Uuid;

use super::guard::Fail;
use crate::core::campaign::{Campaign, CampaignInput};

/// What a client would send to save `c` unchanged (its version included,
/// so that a save over a newer version is refused as stale).
pub fn input_of(c: &Campaign) -> CampaignInput {
    c.to_input()
}

/// A campaign id from the path (not a UUID: 404, as the API answers).
pub fn campaign_id(id: &str) -> Result<Uuid, Fail> {
    Uuid::parse_str(id).map_err(|_| Fail::NotFound(format!("There is no campaign {id:?}.")))
}
