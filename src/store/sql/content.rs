//! What the SQLite and PostgreSQL consent stores share: the errors of the
//! content contract (the memory store's codes and wording), the `data`
//! column's JSON, and the two translations of [`crate::core::consent::query`]
//! that SQL cannot do by itself exactly:
//!
//! - [`FilterValue`]: what a filter's text can equal — a string (or the
//!   stored form of the instant it names), a number of the same decimal value (through the same
//!   [`plain_decimal`](crate::core::consent::query) the memory store uses), a
//!   boolean.
//! - [`number_sort_key`]: a text whose byte order is the exact numeric
//!   order of JSON numbers (SQLite sorts numbers with it; PostgreSQL has
//!   `numeric`).

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde_json::{Map, Number, Value};

use super::corrupt;
use crate::core::consent::query::{instant_text, plain_decimal};
use crate::core::consent::ContentType;
use crate::{Error, Result};

/// A second record with the same (project, type, id).
pub(crate) fn duplicate_content_id() -> Error {
    Error::conflict(
        "duplicate_content_id",
        "a content record with this id already exists",
    )
}

/// A replace of a record that does not exist.
pub(crate) fn content_not_found(t: ContentType, id: &str) -> Error {
    Error::not_found(
        "content_not_found",
        format!("there is no {t} with id {id:?}"),
    )
}

/// A replace that did not build on the current version.
pub(crate) fn stale_content_version(stored: i64, expected: i64) -> Error {
    Error::conflict(
        "stale_version",
        format!("the record is at version {stored}, not {expected}"),
    )
}

/// A second purpose event with the same (project, id).
pub(crate) fn duplicate_event_id() -> Error {
    Error::conflict(
        "duplicate_event_id",
        "a purpose event with this id already exists",
    )
}

/// A stored content type.
pub(crate) fn content_type_from_db(s: &str) -> Result<ContentType> {
    ContentType::parse(s).ok_or_else(|| corrupt("content type", s))
}

/// The `data` column of a version.
pub(crate) fn data_json(data: &Map<String, Value>) -> Result<String> {
    serde_json::to_string(data).map_err(Error::internal)
}

/// Reads the `data` column back.
pub(crate) fn data_from_json(json: &str) -> Result<Map<String, Value>> {
    let mut data: Map<String, Value> =
        serde_json::from_str(json).map_err(|e| corrupt("content data", e))?;
    // PostgreSQL's jsonb writes numbers in its own form (`1e2` as `100`):
    // every store answers each number in the one form of a double.
    data.values_mut()
        .for_each(crate::core::wire::double_numbers);
    Ok(data)
}

/// What the text of a filter `data.a=v` can equal (see
/// [`crate::core::consent::query`]): a string always; a number when `v` is a
/// plain decimal; a boolean when `v` is `true` or `false`.
pub(crate) struct FilterValue<'a> {
    /// The text as written: equal strings match.
    pub text: &'a str,
    /// When the text is a timestamp, that instant's stored form: equal
    /// strings match too (see [`crate::core::consent::query`]).
    pub instant: Option<String>,
    /// Its decimal value: numbers of that value match.
    pub number: Option<Decimal>,
    /// Its boolean: that boolean matches.
    pub boolean: Option<bool>,
}

impl<'a> FilterValue<'a> {
    pub(crate) fn of(text: &'a str) -> Self {
        FilterValue {
            text,
            instant: instant_text(text),
            number: plain_decimal(text),
            boolean: match text {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
        }
    }

    /// Every JSON text serde_json writes for a number whose value is
    /// [`number`](Self::number): the memory store matches a stored number
    /// when `parse_decimal(n.to_string())` equals it, and serde_json holds a
    /// number as an `i64`, a `u64` or an `f64` (written in its shortest
    /// round-trip form). So the matches are the integer itself, and the one
    /// `f64` nearest the value if its shortest form has exactly that value
    /// (both zeros for zero). SQLite compares these texts to the number's
    /// text in the stored JSON, which is exact where comparing doubles is
    /// not: SQLite's own text-to-double conversion can be one unit in the
    /// last place off.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn number_texts(&self) -> Vec<String> {
        let Some(d) = self.number else {
            return Vec::new();
        };
        let mut texts = Vec::new();
        let n = d.normalize();
        if n.scale() == 0 {
            if let Some(i) = n.to_i64() {
                texts.push(i.to_string());
            } else if let Some(u) = n.to_u64() {
                texts.push(u.to_string());
            }
        }
        // Decimal's Display is a plain decimal, which Rust parses to the
        // correctly rounded nearest double.
        if let Ok(nearest) = d.to_string().parse::<f64>() {
            let doubles = if nearest == 0.0 {
                vec![0.0, -0.0]
            } else {
                vec![nearest]
            };
            for x in doubles {
                if let Some(number) = Number::from_f64(x) {
                    let text = number.to_string();
                    if crate::core::wire::parse_decimal(&text) == Some(d) {
                        texts.push(text);
                    }
                }
            }
        }
        texts
    }
}

/// Exponents are stored biased by this much in [`number_sort_key`], in five
/// digits.
const EXPONENT_BIAS: i64 = 50_000;

/// A text key of a JSON number's text whose byte order is the numbers'
/// exact decimal order (`-0` equals `0`); `None` for a text that is not a
/// JSON number.
///
/// A non-zero value is written `±0.d₁d₂…dₙ × 10^e` with `d₁ ≠ 0` and
/// `dₙ ≠ 0`. Positive values are `"2"`, `e` biased in five digits, then
/// the digits: a larger exponent is larger, and for one exponent the digit
/// strings compare like the fractions they are. Negative values are `"0"`,
/// the exponent's complement, the digits' nine's complement and a closing
/// `"~"` (after every digit), which reverses both comparisons. Zero is
/// `"1"`, between the two.
///
/// This is the order the memory store uses: it compares numbers as
/// `Decimal`s (exactly, since the shortest form of a double and an
/// integer's digits always fit), or as `f64` when one does not fit (then
/// the two values are far apart and `f64` orders them the same way).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn number_sort_key(text: &str) -> Option<String> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits_only(int) || !digits_only(frac) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let leading = digits.bytes().take_while(|b| *b == b'0').count();
    let significant = digits[leading..].trim_end_matches('0');
    if significant.is_empty() {
        return Some("1".to_owned());
    }
    let int_len = i64::try_from(int.len()).ok()?;
    let leading = i64::try_from(leading).ok()?;
    let e = (int_len - leading)
        .saturating_add(exponent)
        .saturating_add(EXPONENT_BIAS)
        .clamp(0, 2 * EXPONENT_BIAS - 1);
    Some(if negative {
        let complement: String = significant
            .bytes()
            .map(|b| char::from(b'9' - (b - b'0')))
            .collect();
        format!("0{:05}{complement}~", 2 * EXPONENT_BIAS - 1 - e)
    } else {
        format!("2{e:05}{significant}")
    })
}

/// The `number_keys` column of a SQLite version: `{attribute: key}` for
/// every top-level number of `data` (see [`number_sort_key`]).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn number_keys_json(data: &Map<String, Value>) -> Result<String> {
    let keys: Map<String, Value> = data
        .iter()
        .filter_map(|(k, v)| match v {
            Value::Number(n) => number_sort_key(&n.to_string()).map(|key| (k.clone(), key.into())),
            _ => None,
        })
        .collect();
    serde_json::to_string(&keys).map_err(Error::internal)
}

/// The JSON path of a top-level attribute, for SQLite's JSON functions.
/// Attribute names are letters, digits and `_`
/// ([`ContentQuery::check`](crate::core::consent::ContentQuery::check)), so
/// quoting them is enough; the path is bound as a parameter all the same.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn json_path(attribute: &str) -> String {
    format!("$.\"{attribute}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::consent::{ContentQuery, ContentRecord};
    use crate::store::SortDirection;
    use chrono::DateTime;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn texts(v: &str) -> Vec<String> {
        FilterValue::of(v).number_texts()
    }

    #[test]
    fn number_texts_of_a_filter() {
        assert_eq!(texts("2"), ["2", "2.0"]);
        assert_eq!(texts("2.50"), ["2.5"]);
        assert_eq!(texts("-0"), ["0", "0.0", "-0.0"]);
        assert_eq!(texts("0.1"), ["0.1"]);
        assert_eq!(texts("18446744073709551615"), ["18446744073709551615"]);
        // Whatever form serde_json writes 1e20 in (`1e+20`).
        let e20 = Number::from_f64(1e20).unwrap().to_string();
        assert_eq!(texts("100000000000000000000"), [e20]);
        // 2^53 + 1 is an integer, but no double has that value.
        assert_eq!(texts("9007199254740993"), ["9007199254740993"]);
        // More digits than any shortest double form.
        assert!(texts("0.10000000000000000001").is_empty());
        assert!(texts("x").is_empty() && texts("1e3").is_empty() && texts(".5").is_empty());
    }

    #[test]
    fn sort_keys_of_some_numbers() {
        assert_eq!(number_sort_key("0").as_deref(), Some("1"));
        assert_eq!(number_sort_key("-0.0").as_deref(), Some("1"));
        assert_eq!(number_sort_key("100"), number_sort_key("1e2"));
        assert_eq!(number_sort_key("1e+2"), number_sort_key("1e2"));
        assert_eq!(number_sort_key("1.5E-3"), number_sort_key("0.0015"));
        assert_eq!(number_sort_key("2.50"), number_sort_key("2.5"));
        assert_eq!(number_sort_key("25").as_deref(), Some("25000225"));
        assert_eq!(number_sort_key("-25").as_deref(), Some("04999774~"));
        assert_eq!(number_sort_key("abc"), None);
        assert_eq!(number_sort_key("1e"), None);
    }

    fn record(v: Value) -> ContentRecord {
        ContentRecord {
            id: "x".into(),
            project_id: "p".into(),
            content_type: ContentType::Purpose,
            version: 1,
            seq: 1,
            created_by: "a".into(),
            last_modified_by: "a".into(),
            created_date: DateTime::UNIX_EPOCH,
            last_modified_date: DateTime::UNIX_EPOCH,
            data: [("n".to_owned(), v)].into_iter().collect(),
        }
    }

    fn number() -> impl Strategy<Value = Number> {
        prop_oneof![
            any::<i64>().prop_map(Number::from),
            any::<u64>().prop_map(Number::from),
            (-1000i64..1000).prop_map(Number::from),
            any::<f64>().prop_filter_map("finite", Number::from_f64),
            (-1e6..1e6f64).prop_filter_map("finite", Number::from_f64),
            (-3i32..3, -40i32..40).prop_filter_map("finite", |(m, e)| Number::from_f64(
                f64::from(m) * 10f64.powi(e)
            )),
        ]
    }

    proptest! {
        /// The key order is the memory store's order of numbers.
        #[test]
        fn sort_key_order_is_the_memory_order(a in number(), b in number()) {
            let q = ContentQuery::default().with_sort("n", SortDirection::Asc);
            let memory = q.compare(&record(Value::Number(a.clone())), &record(Value::Number(b.clone())));
            let ka = number_sort_key(&a.to_string()).unwrap();
            let kb = number_sort_key(&b.to_string()).unwrap();
            prop_assert_eq!(ka.cmp(&kb), memory, "{} {} {} {}", a, b, ka, kb);
        }

        /// A number matches a filter exactly when its text is one of the
        /// filter's number texts.
        #[test]
        fn number_texts_are_the_memory_matches(n in number(), pick in any::<bool>(), other in number()) {
            // The filter is the number itself in plain form (when it has
            // one), or some other number's.
            let source = if pick { &n } else { &other };
            let Some(d) = crate::core::wire::parse_decimal(&source.to_string()) else {
                return Ok(());
            };
            let filter = d.to_string();
            let q = ContentQuery::default().with_filter("n", &filter);
            let memory = q.matches(&record(Value::Number(n.clone())));
            let sql = texts(&filter).contains(&n.to_string());
            prop_assert_eq!(sql, memory, "{} vs filter {}", n, filter);
        }
    }

    #[test]
    fn equal_keys_only_for_equal_values() {
        let a = number_sort_key("0.30000000000000004").unwrap();
        let b = number_sort_key("0.3").unwrap();
        assert_eq!(a.cmp(&b), Ordering::Greater);
        assert_eq!(
            number_sort_key("-0.30000000000000004")
                .unwrap()
                .cmp(&number_sort_key("-0.3").unwrap()),
            Ordering::Less
        );
    }
}
