//! Code pools: the codes of a campaign, each usable a limited number of
//! times (see [`crate::core::campaign::codes`]).
//!
//! A code's use is part of the redemption: [`RedemptionStore::redeem`]
//! takes the use of the plan's code (`Redemption::code`) in the same
//! atomic step as the quota charges, through a conditional update that
//! never lets `used` pass `usage_limit`, and `cancel_redemption` gives it
//! back, and `RedemptionStore::code` finds the code a redeem names. This
//! trait holds the pool's own reads and writes.
//!
//! [`RedemptionStore::redeem`]: super::RedemptionStore::redeem

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Page;
use crate::core::campaign::codes::{CodePlan, ImportedCode, PromoCode};
use crate::Result;

/// Codes to store in one call, all or nothing.
#[derive(Debug, Clone)]
pub struct CodeBatch {
    /// Project.
    pub project_id: String,
    /// The campaign owning the codes.
    pub campaign_id: Uuid,
    /// The codes' `createdDate`.
    pub created_date: DateTime<Utc>,
    /// Where the codes come from.
    pub source: CodeSource,
    /// Told how many codes are stored so far, after each batch of rows.
    pub progress: Option<Progress>,
}

/// Where the codes of a [`CodeBatch`] come from.
#[derive(Debug, Clone)]
pub enum CodeSource {
    /// Drawn from a generator: a code already taken in the project is
    /// drawn again, at most [`CodeGenerator::max_draws`] draws in all
    /// (else `code_space_exhausted`).
    ///
    /// [`CodeGenerator::max_draws`]: crate::core::campaign::codes::CodeGenerator::max_draws
    Generated(CodePlan),
    /// Imported: any code already in the project refuses the whole batch
    /// with `duplicate_code` (listing up to 100 of them).
    Imported(Vec<ImportedCode>),
}

/// A progress callback: the number of codes stored so far.
#[derive(Clone)]
pub struct Progress(pub Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

impl Progress {
    /// Tells the callback, if any.
    pub fn tell(progress: Option<&Progress>, stored: u64) {
        if let Some(p) = progress {
            (p.0)(stored);
        }
    }
}

/// Codes and redemptions store rows in batches of this many.
pub const CODE_INSERT_BATCH: usize = 1000;

/// The codes of a campaign's pool.
pub trait CodeStore: Send + Sync {
    /// Stores the batch's codes in one transaction; the number stored.
    fn insert_codes(&self, batch: &CodeBatch) -> impl Future<Output = Result<u64>> + Send;

    /// A page of a campaign's codes, in normalized order.
    fn list_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> impl Future<Output = Result<Page<PromoCode>>> + Send;

    /// At most `limit` codes of a campaign whose normalized form sorts
    /// after `after` (from the first when `None`), in normalized order: the
    /// walk of an export, one index range per call.
    fn codes_after(
        &self,
        project: &str,
        campaign_id: Uuid,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<PromoCode>>> + Send;

    /// Activates or deactivates a code of a campaign; the code as it now
    /// is, `None` when the campaign has no such code.
    fn set_code_active(
        &self,
        project: &str,
        campaign_id: Uuid,
        normalized: &str,
        active: bool,
    ) -> impl Future<Output = Result<Option<PromoCode>>> + Send;
}
