//! The campaign use cases: [`CampaignService`] (admin, search, redeem,
//! cancel, quota usage, preview), its per-project compiled snapshots and
//! its quota usage cache.

mod service;
mod snapshots;
mod usage;

pub use service::{
    CampaignService, Preview, PreviewHit, PreviewQuota, RedeemResult, SearchOptions,
};
pub use snapshots::DEFAULT_REFRESH;
