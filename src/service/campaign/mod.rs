//! The campaign use cases: [`CampaignService`] (admin, search, redeem,
//! cancel, quota usage, preview), its per-project compiled snapshots and
//! its quota usage cache.

mod service;
mod snapshots;
mod usage;

pub use service::{
    CampaignService, CodeInfo, Imported, Preview, PreviewHit, PreviewQuota, QuotaUsagePage,
    QuotaUsageQuery, RedeemResult, SearchOptions, DEFAULT_QUOTA_PAGE_SIZE, MAX_HTTP_GENERATE,
};
pub use service::{HoldRequest, DEFAULT_HOLD_TTL_SECONDS, MAX_LIVE_HOLDS_LISTED};
pub use snapshots::DEFAULT_REFRESH;
