//! The one SQL implementation of the store roles, for SQLite and
//! PostgreSQL alike.
//!
//! Statements, row mapping and transaction logic are written once, generic
//! over a [`Dialect`](dialect::Dialect): [`campaign`], [`redemption`],
//! [`consent`] (content versions and purpose events), [`ledger`],
//! [`settings`], uploaded files in [`file`], and the migration bookkeeping in [`migrate`]. Statements
//! are [`query::Sql`]: text with `$n` placeholders and typed arguments.
//! What differs between the databases — column types, transactions and
//! locking, upsert and guard statements, JSON access, error codes, pool
//! options — lives in one module per dialect (`store/sqlite/dialect.rs`,
//! `store/postgres/dialect.rs`), beside the store type and its
//! constructors. `scripts/duplicates.sh` checks that the dialect folders
//! repeat no block of code.
//!
//! This file holds the small pieces the roles share: mapping driver errors
//! to [`Error`], the JSON shapes of the document columns, the campaign
//! list's `ORDER BY`, and the search columns of its `q` filter; the consent
//! half's are in [`content`]. How the stores implement the traits (every
//! write run to completion whatever happens to its caller) is in
//! [`calls`].
//!
//! Nothing here is public: driver types stay inside the store modules.

pub(crate) mod batch;
pub(crate) mod calls;
pub(crate) mod campaign;
pub(crate) mod codes;
pub(crate) mod consent;
pub(crate) mod content;
pub(crate) mod dialect;
pub(crate) mod file;
pub(crate) mod group;
pub(crate) mod history;
pub(crate) mod hold;
pub(crate) mod ledger;
pub(crate) mod marks;
pub(crate) mod migrate;
pub(crate) mod outbox;
pub(crate) mod query;
pub(crate) mod queue;
pub(crate) mod records;
pub(crate) mod redemption;
pub(crate) mod revision;
pub(crate) mod settings;
pub(crate) mod verify;

use std::fmt::Write as _;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::core::campaign::{ActionTx, Campaign, Quota};
use crate::store::{CampaignSort, SortDirection};
use crate::{Error, ErrorCode, Result};

/// What a database's error means for the caller, as its dialect reads the
/// codes ([`Dialect::fault`](dialect::Dialect::fault)).
pub(crate) enum Fault {
    /// Not now rather than never: the caller may retry.
    Transient,
    /// Text the database cannot store (PostgreSQL and NUL).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Unstorable,
    /// Anything else.
    Other,
}

/// Maps a driver error: the store cannot be reached (connection, I/O, pool
/// timeout, a database that is shutting down or locked past the busy
/// timeout) is [`Unavailable`](crate::ErrorKind::Unavailable), the caller
/// may retry; anything else is [`Internal`](crate::ErrorKind::Internal).
/// Expected constraint violations are recognised by the callers first
/// ([`is_unique_violation`]) and turned into conflicts.
pub(crate) fn db_error<D: dialect::Dialect>(e: sqlx::Error) -> Error {
    let transient = match &e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => match D::fault(&**db) {
            Fault::Transient => true,
            // A safety net: services refuse NUL before it reaches a store,
            // but text the database cannot store is the caller's, not a 500.
            Fault::Unstorable => {
                return Error::new(
                    ErrorCode::InvalidText,
                    "text must not contain the NUL character (U+0000)",
                )
            }
            Fault::Other => false,
        },
        _ => false,
    };
    if transient {
        Error::unavailable(e)
    } else {
        Error::internal(e)
    }
}

/// Whether `e` is a unique violation whose constraint (PostgreSQL) or
/// message (SQLite names the columns) mentions `what`.
pub(crate) fn is_unique_violation(e: &sqlx::Error, what: &str) -> bool {
    match e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            db.constraint().is_some_and(|c| c.contains(what)) || db.message().contains(what)
        }
        _ => false,
    }
}

/// A stored value that does not decode: a bug or a database edited by hand.
pub(crate) fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::internal(format!("stored {what} does not decode: {detail}"))
}

/// The conflict of a second campaign with the same `refCode`.
pub(crate) fn duplicate_ref_code(campaign: &Campaign) -> Error {
    Error::new(
        ErrorCode::DuplicateRefCode,
        format!(
            "a campaign with refCode {:?} already exists in this project",
            campaign.ref_code
        ),
    )
}

/// The conflict of an update naming a version that is no longer stored
/// (the memory store's wording).
pub(crate) fn stale_version(stored: i64, expected: i64) -> Error {
    Error::new(
        ErrorCode::StaleVersion,
        format!("the campaign is at version {stored}, not {expected}; reload it and apply the change again"),
    )
}

/// A missing campaign on update.
pub(crate) fn campaign_not_found() -> Error {
    Error::new(ErrorCode::CampaignNotFound, "no such campaign")
}

/// The conflict of a second campaign with the same id.
pub(crate) fn duplicate_id() -> Error {
    Error::new(
        ErrorCode::DuplicateId,
        "a campaign with this id already exists",
    )
}

/// A quota as stored in the `quotas` JSON column. The limit is kept as a
/// decimal string: the wire form of [`Quota`] writes it as a JSON number
/// through `f64`, which is exact only up to 15 significant digits.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredQuota {
    id: Option<String>,
    key: String,
    value: Decimal,
    value_field: Option<String>,
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<String>,
}

/// The `quotas` column of a campaign.
pub(crate) fn quotas_json(quotas: &[Quota]) -> Result<String> {
    let stored: Vec<StoredQuota> = quotas
        .iter()
        .map(|q| StoredQuota {
            id: q.id.clone(),
            key: q.key.clone(),
            value: q.value,
            value_field: q.value_field.clone(),
            description: q.description.clone(),
            window: q.window.clone(),
        })
        .collect();
    serde_json::to_string(&stored).map_err(Error::internal)
}

/// Reads the `quotas` column back.
pub(crate) fn quotas_from_json(json: &str) -> Result<Vec<Quota>> {
    let stored: Vec<StoredQuota> =
        serde_json::from_str(json).map_err(|e| corrupt("campaign quotas", e))?;
    Ok(stored
        .into_iter()
        .map(|q| Quota {
            id: q.id,
            key: q.key,
            value: q.value,
            value_field: q.value_field,
            description: q.description,
            window: q.window,
        })
        .collect())
}

/// The `rules` column of a campaign (rules hold only strings, booleans,
/// timestamps and decimals written as strings, which serde writes exactly).
pub(crate) fn rules_json(campaign: &Campaign) -> Result<String> {
    serde_json::to_string(&campaign.rules).map_err(Error::internal)
}

/// Reads the `rules` column back.
pub(crate) fn rules_from_json(json: &str) -> Result<Vec<crate::core::campaign::Rule>> {
    serde_json::from_str(json).map_err(|e| corrupt("campaign rules", e))
}

/// The `action_txs` column of a redemption.
pub(crate) fn action_txs_json(txs: &[ActionTx]) -> Result<String> {
    serde_json::to_string(txs).map_err(Error::internal)
}

/// Reads the `action_txs` column back.
pub(crate) fn action_txs_from_json(json: &str) -> Result<Vec<ActionTx>> {
    serde_json::from_str(json).map_err(|e| corrupt("redemption actions", e))
}

/// The lowercased copies the list's `q` filter matches against. They are
/// computed here, by the same `str::to_lowercase` the memory store uses, so
/// that case folding (Unicode, not only ASCII) is the same in every store;
/// SQLite's `lower()` folds ASCII only.
pub(crate) struct SearchColumns {
    pub name: String,
    pub ref_code: String,
    pub group_name: Option<String>,
}

impl SearchColumns {
    pub(crate) fn of(c: &Campaign) -> Self {
        SearchColumns {
            name: c.name.to_lowercase(),
            ref_code: c.ref_code.to_lowercase(),
            group_name: c.group_name.as_deref().map(str::to_lowercase),
        }
    }
}

/// The `ORDER BY` of a campaign list: the query's keys, then `ref_code`,
/// then `id` — the memory store's order. Built only from the closed set of
/// column names below, never from caller text. Text columns compare
/// bytewise in both databases (SQLite's BINARY collation; `COLLATE "C"` on
/// the PostgreSQL columns), like Rust's `str` ordering.
pub(crate) fn campaign_order_by(sort: &[(CampaignSort, SortDirection)]) -> String {
    let mut out = String::from("ORDER BY ");
    for (field, dir) in sort {
        let column = match field {
            CampaignSort::Name => "name",
            CampaignSort::RefCode => "ref_code",
            CampaignSort::Priority => "priority",
            CampaignSort::StartDate => "start_date",
            CampaignSort::EndDate => "end_date",
            CampaignSort::CreatedDate => "created_date",
            CampaignSort::LastModifiedDate => "last_modified_date",
        };
        let dir = match dir {
            SortDirection::Asc => "ASC",
            SortDirection::Desc => "DESC",
        };
        let _ = write!(out, "{column} {dir}, ");
    }
    out.push_str("ref_code ASC, id ASC");
    out
}

/// `LIMIT`/`OFFSET` of a page, as the signed integers both databases bind.
pub(crate) fn limit_offset(page: u32, size: u32) -> (i64, i64) {
    (i64::from(size), i64::from(page) * i64::from(size))
}

/// The `stacking` column of a campaign: `NULL` when it stacks with every
/// other.
pub(crate) fn stacking_json(campaign: &Campaign) -> Result<Option<String>> {
    campaign
        .stacking
        .as_ref()
        .map(|s| serde_json::to_string(s).map_err(Error::internal))
        .transpose()
}

/// Reads the `stacking` column back.
pub(crate) fn stacking_from_json(
    json: Option<&str>,
) -> Result<Option<crate::core::campaign::Stacking>> {
    json.map(|j| serde_json::from_str(j).map_err(|e| corrupt("campaign stacking", e)))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_by_appends_tie_breaks() {
        assert_eq!(campaign_order_by(&[]), "ORDER BY ref_code ASC, id ASC");
        assert_eq!(
            campaign_order_by(&[
                (CampaignSort::Priority, SortDirection::Desc),
                (CampaignSort::Name, SortDirection::Asc)
            ]),
            "ORDER BY priority DESC, name ASC, ref_code ASC, id ASC"
        );
    }

    #[test]
    fn quotas_keep_every_digit() {
        let q = Quota {
            id: None,
            key: "k".into(),
            value: "12345678901234567.891".parse().unwrap(),
            value_field: None,
            description: None,
            window: Some("P1D".into()),
        };
        let back = quotas_from_json(&quotas_json(std::slice::from_ref(&q)).unwrap()).unwrap();
        assert_eq!(back, vec![q]);
    }
}
