//! The campaign domain: types (serde names as in the spec), promotion
//! helpers, time zones, revisions and scheduled status changes. Validation,
//! which compiles a campaign, is the engine's ([`crate::core::engine`]).
//!
//! The operations over these types are in
//! [`CampaignService`](crate::service::campaign::CampaignService).

pub mod codes;
mod exchange;
mod hold;
pub(crate) mod model;
mod promotion;
pub(crate) mod revision;
pub(crate) mod schedule;
pub(crate) mod window;
pub(crate) mod zones;

pub use exchange::*;
pub use hold::{Hold, HoldStatus, MAX_HOLD_TTL_SECONDS};
pub use model::*;
pub use revision::{diff, CampaignRevision, PatchOp, RevisionDiff, RevisionView};
pub use schedule::{status_at, StatusChange, MAX_STATUS_CHANGES};
pub use window::{QuotaWindow, WindowError, MAX_WINDOW_SECONDS};
pub use zones::{parse_zone, TimeZones};
