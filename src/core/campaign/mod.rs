//! The campaign domain: types (serde names as in the spec), promotion
//! helpers and time zones. Validation, which compiles a campaign, is the
//! engine's ([`crate::core::engine`]).
//!
//! The operations over these types are in
//! [`CampaignService`](crate::service::campaign::CampaignService).

pub mod codes;
pub(crate) mod model;
mod promotion;
pub(crate) mod zones;

pub use model::*;
pub use zones::{parse_zone, TimeZones};
