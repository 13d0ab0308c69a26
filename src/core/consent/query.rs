//! Content-store list queries: filters, paging and sort, parsed from the
//! query string, and their meaning — which every store must reproduce
//! exactly (the memory store calls [`ContentQuery::matches`] and
//! [`ContentQuery::compare`]; SQL stores translate them as described here).
//!
//! # Parameters
//!
//! - `data.<attr>=<v>`: filter; repeatable, all filters AND together.
//! - `page`: zero-based page, default 0.
//! - `size`: 1 to [`MAX_PAGE_SIZE`], default [`DEFAULT_PAGE_SIZE`].
//! - `sort=data.<attr>[,asc|desc]`: repeatable, in priority order.
//!
//! Anything else (a typo such as `date.status`) is a 400 rather than being
//! ignored: a filter silently dropped would return other people's records.
//! `<attr>` must match `[A-Za-z_][A-Za-z0-9_]*` (at most 64 characters), so
//! a store may put it in a JSON path; bind it as a parameter all the same.
//!
//! # Filter `data.a=v` matches when the attribute value `x` is
//!
//! - a string equal to `v` (exact, case-sensitive), or, when `v` is an
//!   RFC 3339 timestamp, a string equal to that instant in the form
//!   timestamps of `data` are stored in ([`format_time`](super::format_time)): the same
//!   instant written with any offset or precision finds the same records
//!   (`2026-01-01T10:00:00+07:00`, `2026-01-01T03:00:00Z` and
//!   `2026-01-01T03:00:00.000Z` all find `acceptanceDate`
//!   `2026-01-01T03:00:00.000000Z`; digits below the microsecond are
//!   dropped, as on write; a `+` sent unencoded in a URL, which arrives as
//!   a space, is read as `+`);
//! - a number and `v` is a plain decimal (`-?[0-9]+(\.[0-9]+)?`) of the same
//!   numeric value (`2` matches `2` and `2.0`);
//! - a boolean and `v` is `true` / `false` accordingly;
//! - an array with at least one element matching by the rules above
//!   ("contains").
//!
//! `null`, a missing attribute and objects never match.
//!
//! # Sort
//!
//! Per key, values rank numbers (by numeric value), then strings (by
//! Unicode code point, i.e. UTF-8 bytes: PostgreSQL needs `COLLATE "C"`),
//! then booleans (`false` first). `desc` reverses this whole order. `null`,
//! missing, arrays and objects come **last in both directions**. After the
//! keys, ties are broken by `createdDate` then `id`, ascending; that is also
//! the order without `sort`.

use std::cmp::Ordering;

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::content::ContentRecord;
use crate::core::error::FieldError;
use crate::core::page::{SortDirection, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use crate::{Error, Result};

pub use crate::core::limits::{MAX_FILTERS, MAX_SORT_KEYS};
/// Longest attribute name of a filter or sort key.
pub const MAX_ATTRIBUTE_LEN: usize = crate::core::limits::MAX_ATTRIBUTE_NAME_LEN;

/// One `data.<attribute>=<value>` filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentFilter {
    /// Attribute name (without `data.`).
    pub attribute: String,
    /// The value, as written in the query.
    pub value: String,
}

/// One `sort=data.<attribute>,<direction>` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentSort {
    /// Attribute name (without `data.`).
    pub attribute: String,
    /// Direction; `asc` by default.
    pub direction: SortDirection,
}

/// A content-store list query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentQuery {
    /// Filters; all must match.
    pub filters: Vec<ContentFilter>,
    /// Zero-based page.
    pub page: u32,
    /// Page size, 1 to [`MAX_PAGE_SIZE`].
    pub size: u32,
    /// Sort keys in priority order.
    pub sort: Vec<ContentSort>,
}

impl Default for ContentQuery {
    fn default() -> Self {
        ContentQuery {
            filters: Vec::new(),
            page: 0,
            size: DEFAULT_PAGE_SIZE,
            sort: Vec::new(),
        }
    }
}

/// Whether `s` may name an attribute in a filter or sort key.
pub fn is_attribute_name(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= MAX_ATTRIBUTE_LEN
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn attribute_of<'a>(
    field: &'a str,
    problems: &mut Vec<FieldError>,
    param: &str,
) -> Option<&'a str> {
    let attr = field.strip_prefix("data.");
    match attr {
        Some(a) if is_attribute_name(a) => Some(a),
        _ => {
            let code = if param == "sort" {
                "invalid_sort"
            } else {
                "invalid_filter"
            };
            problems.push(FieldError::new(
                param,
                code,
                format!("{field:?} is not data.<attribute> with an attribute name of letters, digits and _"),
            ));
            None
        }
    }
}

impl ContentQuery {
    /// Parses the query-string pairs of a list request. Every problem is
    /// reported at once, as a [`BadRequest`](crate::ErrorKind::BadRequest)
    /// whose code is that of the first problem: `invalid_filter`,
    /// `invalid_page`, `invalid_page_size`, `invalid_sort`,
    /// `unknown_parameter`, `duplicate_parameter`, `too_many_filters`,
    /// `too_many_sort_keys`.
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<ContentQuery>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut query = ContentQuery::default();
        let mut problems = Vec::new();
        let (mut seen_page, mut seen_size) = (false, false);
        for (key, value) in pairs {
            let (k, v) = (key.as_ref(), value.as_ref());
            match k {
                "page" | "size" => {
                    let seen = if k == "page" {
                        &mut seen_page
                    } else {
                        &mut seen_size
                    };
                    if std::mem::replace(seen, true) {
                        problems.push(FieldError::new(
                            k,
                            "duplicate_parameter",
                            format!("{k} is given more than once"),
                        ));
                        continue;
                    }
                    match (k, v.parse::<u32>()) {
                        ("page", Ok(n)) => query.page = n,
                        ("page", Err(_)) => problems.push(FieldError::new(
                            "page",
                            "invalid_page",
                            format!("page must be a whole number from 0, got {v:?}"),
                        )),
                        (_, Ok(n)) if (1..=MAX_PAGE_SIZE).contains(&n) => query.size = n,
                        _ => problems.push(FieldError::new(
                            "size",
                            "invalid_page_size",
                            format!("size must be between 1 and {MAX_PAGE_SIZE}, got {v:?}"),
                        )),
                    }
                }
                "sort" => {
                    let (field, dir) = match v.split_once(',') {
                        None => (v, Some(SortDirection::Asc)),
                        Some((field, direction)) => (field, parse_direction(direction)),
                    };
                    let attr = attribute_of(field.trim(), &mut problems, "sort");
                    match (attr, dir) {
                        (Some(a), Some(direction)) => query.sort.push(ContentSort {
                            attribute: a.to_owned(),
                            direction,
                        }),
                        (_, None) => problems.push(FieldError::new(
                            "sort",
                            "invalid_sort",
                            format!("the direction of {v:?} must be asc or desc"),
                        )),
                        (None, Some(_)) => {}
                    }
                }
                _ if k.starts_with("data.") => {
                    if let Some(a) = attribute_of(k, &mut problems, k) {
                        query.filters.push(ContentFilter {
                            attribute: a.to_owned(),
                            value: v.to_owned(),
                        });
                    }
                }
                _ => problems.push(FieldError::new(
                    k,
                    "unknown_parameter",
                    format!(
                        "unknown parameter {k:?}; filters are written data.<attribute>=<value>"
                    ),
                )),
            }
        }
        problems.extend(query.limit_problems());
        into_bad_request(problems).map(|()| query)
    }

    /// Checks a query built in code the way [`from_pairs`](Self::from_pairs)
    /// checks a parsed one (attribute names, size, counts).
    pub fn check(&self) -> Result<()> {
        let mut problems = Vec::new();
        for f in &self.filters {
            if !is_attribute_name(&f.attribute) {
                problems.push(FieldError::new(
                    format!("data.{}", f.attribute),
                    "invalid_filter",
                    "the attribute name must be letters, digits and _",
                ));
            }
        }
        for s in &self.sort {
            if !is_attribute_name(&s.attribute) {
                problems.push(FieldError::new(
                    "sort",
                    "invalid_sort",
                    "the attribute name must be letters, digits and _",
                ));
            }
        }
        if self.size == 0 || self.size > MAX_PAGE_SIZE {
            problems.push(FieldError::new(
                "size",
                "invalid_page_size",
                format!(
                    "size must be between 1 and {MAX_PAGE_SIZE}, got {}",
                    self.size
                ),
            ));
        }
        problems.extend(self.limit_problems());
        into_bad_request(problems)
    }

    fn limit_problems(&self) -> Vec<FieldError> {
        let mut problems = Vec::new();
        if self.filters.len() > MAX_FILTERS {
            problems.push(FieldError::new(
                "data",
                "too_many_filters",
                format!("at most {MAX_FILTERS} filters are allowed"),
            ));
        }
        if self.sort.len() > MAX_SORT_KEYS {
            problems.push(FieldError::new(
                "sort",
                "too_many_sort_keys",
                format!("at most {MAX_SORT_KEYS} sort keys are allowed"),
            ));
        }
        problems
    }

    /// Adds a filter.
    #[must_use]
    pub fn with_filter(mut self, attribute: &str, value: &str) -> Self {
        self.filters.push(ContentFilter {
            attribute: attribute.to_owned(),
            value: value.to_owned(),
        });
        self
    }

    /// Adds a sort key.
    #[must_use]
    pub fn with_sort(mut self, attribute: &str, direction: SortDirection) -> Self {
        self.sort.push(ContentSort {
            attribute: attribute.to_owned(),
            direction,
        });
        self
    }

    /// Sets page and size.
    #[must_use]
    pub fn with_page(mut self, page: u32, size: u32) -> Self {
        self.page = page;
        self.size = size;
        self
    }

    /// Whether a record's `data` passes every filter.
    pub fn matches(&self, record: &ContentRecord) -> bool {
        self.filters.iter().all(|f| filter_matches(&record.data, f))
    }

    /// The list order of two records: the sort keys, then `createdDate`,
    /// then `id`.
    pub fn compare(&self, a: &ContentRecord, b: &ContentRecord) -> Ordering {
        self.sort
            .iter()
            .map(|k| compare_key(&a.data, &b.data, k))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.created_date.cmp(&b.created_date))
            .then_with(|| a.id.cmp(&b.id))
    }
}

fn parse_direction(d: &str) -> Option<SortDirection> {
    match d.trim().to_ascii_lowercase().as_str() {
        "asc" => Some(SortDirection::Asc),
        "desc" => Some(SortDirection::Desc),
        _ => None,
    }
}

fn into_bad_request(problems: Vec<FieldError>) -> Result<()> {
    let Some(first) = problems.first() else {
        return Ok(());
    };
    let code = match first.code.as_str() {
        "invalid_filter" => "invalid_filter",
        "invalid_page" => "invalid_page",
        "invalid_page_size" => "invalid_page_size",
        "invalid_sort" => "invalid_sort",
        "unknown_parameter" => "unknown_parameter",
        "duplicate_parameter" => "duplicate_parameter",
        "too_many_filters" => "too_many_filters",
        "too_many_sort_keys" => "too_many_sort_keys",
        _ => "invalid_query",
    };
    let message = if problems.len() == 1 {
        first.to_string()
    } else {
        format!("{first} (and {} more)", problems.len() - 1)
    };
    Err(Error::bad_request(code, message).with_fields(problems))
}

/// A plain decimal as the filter grammar allows it: `-?[0-9]+(\.[0-9]+)?`.
/// (SQL stores translate a filter's numeric value through this same
/// function, so that "the same value" means the same thing everywhere.)
pub(crate) fn plain_decimal(s: &str) -> Option<Decimal> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    let ok = !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if ok {
        s.parse().ok()
    } else {
        None
    }
}

/// A JSON number as a decimal (numbers beyond `Decimal`'s range compare as
/// `f64`, see [`compare_numbers`]).
fn number_decimal(n: &serde_json::Number) -> Option<Decimal> {
    crate::core::wire::parse_decimal(&n.to_string())
}

/// The stored form of the instant a filter value names, when it is an
/// RFC 3339 timestamp and that form is another text (see the module docs).
/// Timestamps of the content types' own attributes are stored in this form
/// ([`format_time`](super::content::format_time)); extra attributes keep
/// the text they were sent with, and match that text.
///
/// A `+` written unencoded in a query string arrives as a space (form
/// encoding), so `…T10:00:00 07:00` is read as `…T10:00:00+07:00`: no
/// timestamp has a space there.
pub(crate) fn instant_text(wanted: &str) -> Option<String> {
    // An RFC 3339 timestamp is short; anything longer is not one.
    if wanted.len() > 64 {
        return None;
    }
    let parsed = super::content::parse_time(wanted).or_else(|| {
        let (time, offset) = wanted.rsplit_once(' ')?;
        let offset_like = offset.len() == 5 && offset.as_bytes()[2] == b':';
        (offset_like && time.contains('T'))
            .then(|| super::content::parse_time(&format!("{time}+{offset}")))
            .flatten()
    });
    parsed
        .map(super::content::format_time)
        .filter(|t| t != wanted)
}

fn scalar_matches(stored: &Value, wanted: &str, instant: Option<&str>) -> bool {
    match stored {
        Value::String(text) => text == wanted || instant == Some(text.as_str()),
        Value::Number(number) => {
            let (have, want) = (number_decimal(number), plain_decimal(wanted));
            have.is_some() && have == want
        }
        Value::Bool(flag) => wanted == if *flag { "true" } else { "false" },
        _ => false,
    }
}

fn filter_matches(data: &Map<String, Value>, f: &ContentFilter) -> bool {
    let instant = instant_text(&f.value);
    let instant = instant.as_deref();
    match data.get(&f.attribute) {
        Some(Value::Array(items)) => items.iter().any(|x| scalar_matches(x, &f.value, instant)),
        Some(x) => scalar_matches(x, &f.value, instant),
        None => false,
    }
}

fn rank(v: Option<&Value>) -> u8 {
    match v {
        Some(Value::Number(_)) => 0,
        Some(Value::String(_)) => 1,
        Some(Value::Bool(_)) => 2,
        _ => 3,
    }
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    if let (Some(x), Some(y)) = (number_decimal(a), number_decimal(b)) {
        x.cmp(&y)
    } else {
        let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
        x.total_cmp(&y)
    }
}

fn compare_key(
    left: &Map<String, Value>,
    right: &Map<String, Value>,
    key: &ContentSort,
) -> Ordering {
    let (x, y) = (left.get(&key.attribute), right.get(&key.attribute));
    let (rank_x, rank_y) = (rank(x), rank(y));
    // Nulls (and non-scalars) last whatever the direction.
    if rank_x == 3 || rank_y == 3 {
        return (rank_x == 3).cmp(&(rank_y == 3));
    }
    let ord = rank_x.cmp(&rank_y).then_with(|| match (x, y) {
        (Some(Value::Number(m)), Some(Value::Number(n))) => compare_numbers(m, n),
        (Some(Value::String(m)), Some(Value::String(n))) => m.cmp(n),
        (Some(Value::Bool(m)), Some(Value::Bool(n))) => m.cmp(n),
        _ => Ordering::Equal,
    });
    match key.direction {
        SortDirection::Asc => ord,
        SortDirection::Desc => ord.reverse(),
    }
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
