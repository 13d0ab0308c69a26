//! The campaign half of the store behaviour suite: campaign definitions,
//! lists, the catalog version, redeem, cancel, quota usage, concurrency and
//! durability. Every function takes the store under test and isolates itself
//! in projects of its own (random ids), so tests run in parallel on one
//! database.
//!
//! The memory store is the reference model: list tests also run every
//! query against a fresh [`MemoryStore`](accord::store::memory::MemoryStore)
//! loaded with the same rows and require the same page.
//!
//! [`campaign_store_tests!`] turns every behaviour below into a test of the
//! runner file that invokes it (see `tests/it/suite/mod.rs`).

mod catalog;
mod checked;
mod concurrency;
mod data;
mod races;
mod redemptions;
mod revisions;

use accord::store::{CampaignStore, RedemptionStore};

pub use catalog::*;
pub use checked::*;
pub use concurrency::*;
pub use data::*;
pub use races::*;
pub use redemptions::*;
pub use revisions::*;

/// What the suite needs of a store.
pub trait Store: CampaignStore + RedemptionStore + 'static {}

impl<S: CampaignStore + RedemptionStore + 'static> Store for S {}

/// Expands to one `#[tokio::test]` per behaviour of this suite.
/// `$fixture` is an `async fn() -> Option<(Arc<S>, suite::Guard)>`: `None`
/// skips (it must say why); the guard (a temporary directory, …) lives as
/// long as the test.
macro_rules! campaign_store_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(campaign_store, $fixture;
            insert_get_and_by_code,
            duplicate_ref_code_is_a_conflict,
            update_checks_version,
            delete_removes,
            catalog_version_changes_on_every_write,
            list_filters,
            list_sorts_by_every_key,
            list_pages,
            list_search_box_and_admin_filters,
            concurrent_inserts_of_one_code_one_wins,
            concurrent_creates_never_pass_the_campaign_limit,
            concurrent_updates_of_one_version_one_wins,
            redeem_records_with_charges,
            quota_exceeded_writes_nothing,
            amount_over_limit_on_fresh_key,
            multi_key_all_or_nothing,
            idempotent_replay_charges_nothing,
            cancel_gives_back_once,
            list_redemptions_filters_and_order,
            campaign_quota_usage_lists_keys,
            quota_usage_by_prefix_pages_a_key_range,
            charged_keys_lists_every_key_then_the_new_ones,
            checked_redeem_records_only_the_stored_version,
            concurrent_checked_redeems_answer_each_member,
            concurrent_redeems_never_oversell,
            mixed_concurrent_redeems_each_all_or_nothing,
            concurrent_same_key_records_once,
            concurrent_cancels_give_back_once,
            writes_dropped_midway_leave_the_store_whole,
            cancels_racing_redeems_keep_usage_within_bounds,
            revisions_record_every_save,
            refused_saves_write_no_revision,
        );
    };
}

pub(crate) use campaign_store_tests;
