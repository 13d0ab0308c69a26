//! The campaign side: domain types, validation and the service.
//!
//! See [`CampaignService`] for the operations and the crate's `DESIGN`
//! decisions they implement.

#[cfg(all(test, feature = "memory"))]
mod counting;
mod model;
mod promotion;
mod service;
mod snapshots;
mod usage;
mod validate;
mod zones;

pub use model::*;
pub use service::{
    CampaignService, Imported, Preview, PreviewHit, PreviewQuota, RedeemResult, SearchOptions,
};
pub use snapshots::DEFAULT_REFRESH;
pub use zones::{parse_zone, TimeZones};
