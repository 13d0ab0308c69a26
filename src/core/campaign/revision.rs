//! Campaign revisions: every saved state of a campaign, and the difference
//! between two of them as an RFC 6902 JSON Patch.
//!
//! Revision `n` of a campaign is the campaign as saved at `version = n`;
//! redemptions record that number (`campaignVersion`), so the revision a
//! redemption was decided by is always the one to read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::Campaign;

/// A campaign as saved at one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CampaignRevision {
    /// The campaign's id.
    pub campaign_id: Uuid,
    /// The revision number: the campaign's `version` when it was saved.
    pub revision: i64,
    /// `sub` of whoever saved it.
    pub created_by: String,
    /// When it was saved.
    pub created_date: DateTime<Utc>,
    /// The whole campaign as it was saved (`active` is `false`: it is a
    /// property of an instant, not of a revision).
    pub campaign: Campaign,
}

impl CampaignRevision {
    /// The revision that saving `campaign` makes.
    pub fn of(campaign: &Campaign) -> Self {
        CampaignRevision {
            campaign_id: campaign.id,
            revision: campaign.version,
            created_by: campaign.last_modified_by.clone(),
            created_date: campaign.last_modified_date,
            campaign: Campaign {
                active: false,
                ..campaign.clone()
            },
        }
    }
}

/// One operation of an RFC 6902 JSON Patch: `add`, `remove` or `replace`
/// at a JSON Pointer (RFC 6901). `oldValue` is an extension member (RFC
/// 6902 §4 has appliers ignore members they do not know): the value that
/// `remove` or `replace` took away, so a reader sees both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PatchOp {
    /// `add`, `remove` or `replace`.
    pub op: String,
    /// JSON Pointer of the changed member, e.g. `/rules/0/name`.
    pub path: String,
    /// The new value (`add`, `replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The value before (`remove`, `replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_value: Option<Value>,
}

/// A revision as the revision routes show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevisionView {
    /// The revision number: the campaign's `version` when it was saved
    /// (what a redemption records as `campaignVersion`).
    pub revision: i64,
    /// `sub` of whoever saved it (the token's subject, or the admin
    /// console's signed-in user).
    pub created_by: String,
    /// When it was saved.
    pub created_date: DateTime<Utc>,
    /// What this save changed: the JSON Patch from the revision before it
    /// to this one (empty for revision 1, the creation). Absent when the
    /// revision before it is not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<PatchOp>>,
    /// The whole campaign as saved (when one revision is read; absent in
    /// lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<Campaign>,
}

impl RevisionView {
    /// The view of `revision`, its changes computed against `previous` (the
    /// revision before it, when kept).
    pub fn of(
        revision: &CampaignRevision,
        previous: Option<&CampaignRevision>,
        with_campaign: bool,
    ) -> Self {
        let changes = if revision.revision <= 1 {
            Some(Vec::new())
        } else {
            previous.map(|p| diff(&p.campaign, &revision.campaign))
        };
        RevisionView {
            revision: revision.revision,
            created_by: revision.created_by.clone(),
            created_date: revision.created_date,
            changes,
            campaign: with_campaign.then(|| revision.campaign.clone()),
        }
    }
}

/// The difference between two revisions of a campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevisionDiff {
    /// The revision the patch applies to.
    pub from: i64,
    /// The revision the patch produces.
    pub to: i64,
    /// The RFC 6902 JSON Patch from `from` to `to`, bookkeeping fields
    /// (`version`, `active`, `lastModifiedBy`, `lastModifiedDate`) left out.
    pub changes: Vec<PatchOp>,
}

/// Fields that change with every save and say nothing about what changed:
/// left out of a diff.
const BOOKKEEPING: [&str; 4] = ["version", "active", "lastModifiedBy", "lastModifiedDate"];

/// The JSON Patch that turns campaign `from` into campaign `to`, without the
/// bookkeeping fields (`version`, `active`, `lastModifiedBy`,
/// `lastModifiedDate`). Objects are compared member by member (members in
/// name order); arrays element by element, extra elements added or removed
/// at the end (removals last element first, so each path is valid when
/// applied in order).
pub fn diff(from: &Campaign, to: &Campaign) -> Vec<PatchOp> {
    let mut ops = Vec::new();
    diff_values(&content(from), &content(to), &mut String::new(), &mut ops);
    ops
}

fn content(c: &Campaign) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        for field in BOOKKEEPING {
            map.remove(field);
        }
    }
    v
}

/// Escapes one JSON Pointer token (RFC 6901 §3).
fn token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn op(op: &str, path: &str, value: Option<&Value>, old: Option<&Value>) -> PatchOp {
    PatchOp {
        op: op.to_owned(),
        path: path.to_owned(),
        value: value.cloned(),
        old_value: old.cloned(),
    }
}

fn diff_values(a: &Value, b: &Value, path: &mut String, ops: &mut Vec<PatchOp>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => diff_objects(x, y, path, ops),
        (Value::Array(x), Value::Array(y)) => {
            let common = x.len().min(y.len());
            for i in 0..common {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                diff_values(&x[i], &y[i], path, ops);
                path.truncate(len);
            }
            for (i, v) in y.iter().enumerate().skip(common) {
                ops.push(op("add", &format!("{path}/{i}"), Some(v), None));
            }
            for i in (common..x.len()).rev() {
                ops.push(op("remove", &format!("{path}/{i}"), None, Some(&x[i])));
            }
        }
        _ if a == b => {}
        _ => ops.push(op("replace", path, Some(b), Some(a))),
    }
}

fn diff_objects(
    x: &Map<String, Value>,
    y: &Map<String, Value>,
    path: &mut String,
    ops: &mut Vec<PatchOp>,
) {
    let mut names: Vec<&String> = x.keys().chain(y.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let len = path.len();
        path.push('/');
        path.push_str(&token(name));
        match (x.get(name), y.get(name)) {
            (Some(a), Some(b)) => diff_values(a, b, path, ops),
            (None, Some(b)) => ops.push(op("add", path, Some(b), None)),
            (Some(a), None) => ops.push(op("remove", path, None, Some(a))),
            (None, None) => {}
        }
        path.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Applies `ops` to `doc` as RFC 6902 says (add/remove/replace only).
    fn apply(mut doc: Value, ops: &[PatchOp]) -> Value {
        for o in ops {
            let (parent, last) = o.path.rsplit_once('/').unwrap();
            let last = last.replace("~1", "/").replace("~0", "~");
            let target = doc.pointer_mut(parent).unwrap();
            match (target, o.op.as_str()) {
                (Value::Object(m), "add" | "replace") => {
                    m.insert(last, o.value.clone().unwrap());
                }
                (Value::Object(m), "remove") => {
                    m.remove(&last);
                }
                (Value::Array(a), "add") => {
                    a.insert(last.parse().unwrap(), o.value.clone().unwrap());
                }
                (Value::Array(a), "replace") => {
                    a[last.parse::<usize>().unwrap()] = o.value.clone().unwrap();
                }
                (Value::Array(a), "remove") => {
                    a.remove(last.parse().unwrap());
                }
                other => panic!("cannot apply {o:?} to {other:?}"),
            }
        }
        doc
    }

    #[test]
    fn patches_turn_one_document_into_the_other() {
        // (from, to, expected ops as (op, path))
        let cases = [
            (json!({"a": 1}), json!({"a": 1}), vec![]),
            (json!({"a": 1}), json!({"a": 2}), vec![("replace", "/a")]),
            (json!({"a": 1}), json!({}), vec![("remove", "/a")]),
            (json!({}), json!({"a/b~": 1}), vec![("add", "/a~1b~0")]),
            (
                json!({"l": [1, 2, 3]}),
                json!({"l": [1]}),
                vec![("remove", "/l/2"), ("remove", "/l/1")],
            ),
            (
                json!({"l": [{"n": "x"}]}),
                json!({"l": [{"n": "y"}, 5]}),
                vec![("replace", "/l/0/n"), ("add", "/l/1")],
            ),
            (
                json!({"a": null}),
                json!({"a": [1]}),
                vec![("replace", "/a")],
            ),
        ];
        for (from, to, want) in cases {
            let mut ops = Vec::new();
            diff_values(&from, &to, &mut String::new(), &mut ops);
            let got: Vec<(&str, &str)> = ops
                .iter()
                .map(|o| (o.op.as_str(), o.path.as_str()))
                .collect();
            assert_eq!(got, want, "{from} -> {to}");
            assert_eq!(apply(from.clone(), &ops), to, "{from} -> {to}");
        }
    }
}
