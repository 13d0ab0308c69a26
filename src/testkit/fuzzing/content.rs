//! Harness of content-store list queries.

use std::cmp::Ordering;

use chrono::Duration;
use serde_json::Value;

use super::now;
use crate::core::consent::content::{ContentRecord, ContentType};
use crate::core::consent::query::ContentQuery;
use crate::store::SortDirection;
use crate::ErrorKind;

/// Most records compared (every triple is checked for transitivity).
const MAX_RECORDS: usize = 8;

/// Parses the `key=value` lines before the first empty line as a query,
/// and applies it to the records of the JSON array after it.
///
/// Invariants: a query that parses passes [`ContentQuery::check`], and its
/// parameters written back parse to the same query; a rejection is a 400;
/// the list order is a total order (reflexive, antisymmetric, transitive)
/// and sorting by it does not panic.
pub fn content_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (params, records) = text.split_once("\n\n").unwrap_or((text, ""));
    let pairs: Vec<(&str, &str)> = params
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| l.split_once('=').unwrap_or((l, "")))
        .collect();
    let query = match ContentQuery::from_pairs(pairs) {
        Ok(q) => q,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::BadRequest, "{e:?}");
            return;
        }
    };
    query.check().expect("a parsed query checks");
    let again = ContentQuery::from_pairs(to_pairs(&query)).expect("a written query parses");
    assert_eq!(again, query, "the query does not survive writing back");

    let mut records: Vec<ContentRecord> = match serde_json::from_str::<Vec<Value>>(records) {
        Ok(values) => values
            .into_iter()
            .take(MAX_RECORDS)
            .enumerate()
            .map(record)
            .collect(),
        Err(_) => return,
    };
    for r in &records {
        let _ = query.matches(r);
    }
    for a in &records {
        assert_eq!(query.compare(a, a), Ordering::Equal, "not reflexive");
        for b in &records {
            let ab = query.compare(a, b);
            assert_eq!(ab, query.compare(b, a).reverse(), "not antisymmetric");
            for c in &records {
                if ab != Ordering::Greater && query.compare(b, c) != Ordering::Greater {
                    assert_ne!(query.compare(a, c), Ordering::Greater, "not transitive");
                }
            }
        }
    }
    records.sort_by(|a, b| query.compare(a, b));
    let filtered = records.iter().filter(|r| query.matches(r)).count();
    assert!(filtered <= records.len());
}

/// The query as query-string pairs.
fn to_pairs(q: &ContentQuery) -> Vec<(String, String)> {
    let mut pairs = vec![
        ("page".to_owned(), q.page.to_string()),
        ("size".to_owned(), q.size.to_string()),
    ];
    for f in &q.filters {
        pairs.push((format!("data.{}", f.attribute), f.value.clone()));
    }
    for s in &q.sort {
        let dir = match s.direction {
            SortDirection::Asc => "asc",
            SortDirection::Desc => "desc",
        };
        pairs.push(("sort".to_owned(), format!("data.{},{dir}", s.attribute)));
    }
    pairs
}

/// Record `i`: its data the value if an object (else empty); creation
/// times repeat every three records so that ties reach the `id` key.
fn record((i, data): (usize, Value)) -> ContentRecord {
    let created = now() + Duration::seconds(i64::try_from(i % 3).unwrap_or(0));
    ContentRecord {
        id: format!("r{}", MAX_RECORDS - i),
        project_id: "fuzz".into(),
        content_type: ContentType::Consent,
        version: 1,
        seq: i64::try_from(i).unwrap_or(0),
        created_by: "fuzz".into(),
        last_modified_by: "fuzz".into(),
        created_date: created,
        last_modified_date: created,
        data: match data {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        },
    }
}
