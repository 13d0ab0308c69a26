//! The campaign domain: types (serde names as in the spec), validation into
//! a compiled campaign, promotion helpers and time zones.
//!
//! The operations over these types are in
//! [`CampaignService`](crate::service::campaign::CampaignService).

pub(crate) mod model;
mod promotion;
pub(crate) mod validate;
pub(crate) mod zones;

pub use model::*;
pub use zones::{parse_zone, TimeZones};
