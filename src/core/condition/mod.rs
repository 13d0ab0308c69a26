//! Conditions, compiled once and evaluated many times.
//!
//! A [`Condition`] as saved is text; compiling it
//! parses its value once — NUMBER values to `Decimal`, `in` lists to hash
//! sets, regexes to automata — so that evaluating it against a request does
//! no parsing of the campaign at all.
//!
//! # Semantics
//!
//! Every input is seen as a collection of values: a scalar is a collection of
//! one, `tags` and custom attributes sent as JSON arrays are collections.
//! Each op is a *positive test* on one value, possibly *negated*:
//!
//! | op | test on one value | negated |
//! |---|---|---|
//! | `eq`, `contains` | equal to the value | |
//! | `neq`, `not_contains` | equal to the value | yes |
//! | `gt`, `gte`, `lt`, `lte` | ordered against the value | |
//! | `in` | one of the list | |
//! | `not_in` | one of the list | yes |
//! | `matches` | the regex matches the whole value | |
//! | `not_matches` | the regex matches the whole value | yes |
//!
//! A positive op holds when **some** value passes the test. A negated op
//! holds when the input is present, **every** value can be compared, and
//! **none** passes. A missing input (absent attribute, `null`, an object)
//! fails every op, and a value that cannot be compared (a NUMBER test on
//! `"abc"`) never passes and makes a negated op fail: a promotion applies
//! only where its condition is shown to hold.
//!
//! `NUMBER` compares as `Decimal` (`"1.0"` equals `"1"`); `STRING` compares
//! exact text, ordering ops by Unicode code point. Regexes ignore the value
//! type and match the text of the value, whole (`^(?:pattern)$`).

pub mod list;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;

use regex::{Regex, RegexBuilder};
use rust_decimal::Decimal;

use crate::core::campaign::{Condition, ConditionType, Op, ValueType};
use crate::core::error::ErrorCode;
use crate::core::error::FieldError;
use crate::core::hash::FxHashSet;
use crate::core::wire::parse_decimal;

/// Longest regex pattern a condition may hold, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;
/// Memory budget of one compiled regex (bytes), so a pattern cannot make
/// compilation or matching expensive.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Longest condition value, in bytes.
pub const MAX_VALUE_LEN: usize = 4096;

/// What a condition reads from the request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// `cart.totalPrice`
    TotalPrice,
    /// `cart.currency`
    Currency,
    /// `cart.items[].sku`
    Sku,
    /// `cart.items[].amount`
    Amount,
    /// `cart.items[].price`
    Price,
    /// `cart.items[].tags`
    Tags,
    /// `attribute.<name>`
    Custom(Box<str>),
}

impl Target {
    /// Whether the target is a field of a cart item.
    pub fn is_item(&self) -> bool {
        matches!(
            self,
            Target::Sku | Target::Amount | Target::Price | Target::Tags
        )
    }
}

/// An ordering comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `<`
    Lt,
    /// `<=`
    Lte,
}

impl Cmp {
    fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Cmp::Eq => ord == Equal,
            Cmp::Gt => ord == Greater,
            Cmp::Gte => ord != Less,
            Cmp::Lt => ord == Less,
            Cmp::Lte => ord != Greater,
        }
    }
}

/// The positive test of a compiled condition.
#[derive(Debug, Clone)]
pub enum Test {
    /// Text comparison.
    Str(Cmp, Box<str>),
    /// Decimal comparison.
    Num(Cmp, Decimal),
    /// Text membership.
    StrSet(FxHashSet<Box<str>>),
    /// Decimal membership (normalized, so `1.0` and `1` are one value).
    NumSet(FxHashSet<Decimal>),
    /// Whole-text regex match.
    Regex(Regex),
}

/// One value of the request, with its decimal form parsed at most once.
///
/// The text borrows the request where it can (strings are not copied to
/// prepare a request); numbers sent as JSON numbers own their text form.
#[derive(Debug, Clone, Default)]
pub struct Field<'a> {
    text: Cow<'a, str>,
    num: OnceCell<Option<Decimal>>,
}

impl<'a> Field<'a> {
    /// A value with the given text.
    pub fn new(text: impl Into<Cow<'a, str>>) -> Self {
        Field {
            text: text.into(),
            num: OnceCell::new(),
        }
    }

    /// The text of the value.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The value as a decimal, when it is one.
    pub fn num(&self) -> Option<Decimal> {
        *self.num.get_or_init(|| parse_decimal(&self.text))
    }
}

/// `10^i` for every scale difference two decimals can have.
pub(crate) const POW10: [i128; 29] = {
    let mut p = [1i128; 29];
    let mut i = 1;
    while i < 29 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// `a.cmp(&b)`, exactly, but cheaper for decimals of different scales
/// (`100` against `123.45`): both mantissas are brought to the larger scale
/// in an `i128`, which holds them unless the value is beyond about 10^10 at
/// 28 decimal places; then `Decimal`'s own comparison decides.
pub fn cmp_decimal(a: Decimal, b: Decimal) -> std::cmp::Ordering {
    let (sa, sb) = (a.scale(), b.scale());
    let (ma, mb) = (a.mantissa(), b.mantissa());
    let up = |m: i128, by: u32| POW10.get(by as usize).and_then(|p| m.checked_mul(*p));
    let scaled = match sa.cmp(&sb) {
        std::cmp::Ordering::Equal => Some((ma, mb)),
        std::cmp::Ordering::Less => up(ma, sb - sa).map(|x| (x, mb)),
        std::cmp::Ordering::Greater => up(mb, sa - sb).map(|y| (ma, y)),
    };
    match scaled {
        Some((x, y)) => x.cmp(&y),
        None => a.cmp(&b),
    }
}

/// An input as a condition sees it.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// Absent, `null`, or not comparable (a JSON object).
    Missing,
    /// One value.
    One(&'a Field<'a>),
    /// A collection (`tags`, a JSON array attribute).
    Many(&'a [Field<'a>]),
}

impl Input<'_> {
    /// The input as text for explanations: `null`, `a`, `[a, b]`.
    pub fn describe(&self) -> Option<String> {
        match self {
            Input::Missing => None,
            Input::One(f) => Some(f.text().to_owned()),
            Input::Many(fs) => Some(format!(
                "[{}]",
                fs.iter().map(Field::text).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

impl Test {
    /// The positive test on one value; `None` when it cannot be compared.
    pub fn check(&self, field: &Field<'_>) -> Option<bool> {
        match self {
            Test::Str(cmp, v) => Some(cmp.holds(field.text().cmp(v))),
            Test::Num(cmp, v) => field.num().map(|n| cmp.holds(cmp_decimal(n, *v))),
            Test::StrSet(set) => Some(set.contains(field.text())),
            Test::NumSet(set) => field.num().map(|n| set.contains(&n.normalize())),
            Test::Regex(re) => Some(re.is_match(field.text())),
        }
    }
}

/// A condition ready to evaluate.
#[derive(Debug, Clone)]
pub struct CompiledCondition {
    /// What it reads.
    pub target: Target,
    /// The positive test.
    pub test: Test,
    /// Whether the op is the negation of the test.
    pub negated: bool,
}

impl CompiledCondition {
    /// Evaluates the condition on an input, with the semantics of the module docs.
    pub fn eval(&self, input: Input<'_>) -> bool {
        self.eval_with(input, &mut |test, field| test.check(field))
    }

    /// Evaluates with a custom per-value test (the engine memoises regexes).
    pub fn eval_with(
        &self,
        input: Input<'_>,
        check: &mut dyn FnMut(&Test, &Field<'_>) -> Option<bool>,
    ) -> bool {
        match input {
            Input::Missing => false,
            Input::One(f) => match check(&self.test, f) {
                None => false,
                Some(b) => b != self.negated,
            },
            Input::Many(fs) => {
                if self.negated {
                    let mut all_comparable_none_pass = true;
                    for f in fs {
                        if check(&self.test, f) != Some(false) {
                            all_comparable_none_pass = false;
                            break;
                        }
                    }
                    all_comparable_none_pass
                } else {
                    fs.iter().any(|f| check(&self.test, f) == Some(true))
                }
            }
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::TotalPrice => f.write_str("cart.totalPrice"),
            Target::Currency => f.write_str("cart.currency"),
            Target::Sku => f.write_str("cart.items[].sku"),
            Target::Amount => f.write_str("cart.items[].amount"),
            Target::Price => f.write_str("cart.items[].price"),
            Target::Tags => f.write_str("cart.items[].tags"),
            Target::Custom(name) => write!(f, "attribute.{name}"),
        }
    }
}

/// Compiles a condition; `path` prefixes the field paths of the problems
/// found (`rules[0].when[1].conditions[2]`). Every problem is reported.
pub fn compile(c: &Condition, path: &str) -> Result<CompiledCondition, Vec<FieldError>> {
    let mut problems = Vec::new();
    let target = target(c, path, &mut problems);
    if !c.value_type.is_known() {
        problems.push(FieldError::new(
            format!("{path}.valueType"),
            ErrorCode::InvalidEnum,
            format!(
                "unknown valueType {:?}; expected one of {}",
                c.value_type.as_str(),
                ValueType::expected()
            ),
        ));
    }
    if c.value.len() > MAX_VALUE_LEN {
        problems.push(FieldError::new(
            format!("{path}.value"),
            ErrorCode::TooLong,
            format!("the value is longer than {MAX_VALUE_LEN} bytes"),
        ));
    }
    let number = c.value_type == ValueType::Number;
    let value_path = || format!("{path}.value");
    let (test, negated) = match &c.op {
        Op::Eq | Op::Neq | Op::Contains | Op::NotContains => {
            let negated = matches!(c.op, Op::Neq | Op::NotContains);
            (
                scalar_test(Cmp::Eq, c, number, &value_path, &mut problems),
                negated,
            )
        }
        Op::Gt => (
            scalar_test(Cmp::Gt, c, number, &value_path, &mut problems),
            false,
        ),
        Op::Gte => (
            scalar_test(Cmp::Gte, c, number, &value_path, &mut problems),
            false,
        ),
        Op::Lt => (
            scalar_test(Cmp::Lt, c, number, &value_path, &mut problems),
            false,
        ),
        Op::Lte => (
            scalar_test(Cmp::Lte, c, number, &value_path, &mut problems),
            false,
        ),
        Op::In | Op::NotIn => {
            let test = match list::parse_list(&c.value) {
                Ok(values) if number => {
                    let mut set = FxHashSet::with_capacity_and_hasher(
                        values.len(),
                        std::hash::BuildHasherDefault::default(),
                    );
                    for v in &values {
                        match parse_decimal(v) {
                            Some(d) => {
                                set.insert(d.normalize());
                            }
                            None => problems.push(FieldError::new(
                                value_path(),
                                ErrorCode::InvalidNumber,
                                format!(
                                    "{v:?} in the list is not a number, and valueType is NUMBER"
                                ),
                            )),
                        }
                    }
                    Some(Test::NumSet(set))
                }
                Ok(values) => Some(Test::StrSet(
                    values.into_iter().map(String::into_boxed_str).collect(),
                )),
                Err(e) => {
                    problems.push(e.to_field_error(value_path()));
                    None
                }
            };
            (test, c.op == Op::NotIn)
        }
        Op::Matches | Op::NotMatches => (
            regex_test(&c.value, &value_path, &mut problems),
            c.op == Op::NotMatches,
        ),
        Op::Unknown(op) => {
            problems.push(FieldError::new(
                format!("{path}.op"),
                ErrorCode::InvalidEnum,
                format!("unknown op {op:?}; expected one of {}", Op::expected()),
            ));
            (None, false)
        }
    };
    match (target, test) {
        (Some(target), Some(test)) if problems.is_empty() => Ok(CompiledCondition {
            target,
            test,
            negated,
        }),
        _ => Err(problems),
    }
}

fn target(c: &Condition, path: &str, problems: &mut Vec<FieldError>) -> Option<Target> {
    let attr = c.attribute.as_str();
    let bad_attr = |problems: &mut Vec<FieldError>, allowed: &str| {
        problems.push(FieldError::new(
            format!("{path}.attribute"),
            ErrorCode::InvalidAttribute,
            format!(
                "attribute {attr:?} is not allowed for type {:?}; allowed: {allowed}",
                c.kind.as_str()
            ),
        ));
        None
    };
    match &c.kind {
        ConditionType::Cart => match attr {
            "totalPrice" => Some(Target::TotalPrice),
            "currency" => Some(Target::Currency),
            _ => bad_attr(problems, "totalPrice, currency"),
        },
        ConditionType::CartItem => match attr {
            "sku" => Some(Target::Sku),
            "amount" => Some(Target::Amount),
            "price" => Some(Target::Price),
            "tags" => Some(Target::Tags),
            _ => bad_attr(problems, "sku, amount, price, tags"),
        },
        ConditionType::Custom => {
            if attr.is_empty() {
                problems.push(FieldError::new(
                    format!("{path}.attribute"),
                    ErrorCode::Required,
                    "attribute is required",
                ));
                None
            } else if attr.len() > 256 {
                problems.push(FieldError::new(
                    format!("{path}.attribute"),
                    ErrorCode::TooLong,
                    "attribute names are at most 256 bytes",
                ));
                None
            } else {
                Some(Target::Custom(attr.into()))
            }
        }
        ConditionType::Unknown(t) => {
            problems.push(FieldError::new(
                format!("{path}.type"),
                ErrorCode::InvalidEnum,
                format!(
                    "unknown condition type {t:?}; expected one of {}",
                    ConditionType::expected()
                ),
            ));
            None
        }
    }
}

fn scalar_test(
    cmp: Cmp,
    c: &Condition,
    number: bool,
    value_path: &dyn Fn() -> String,
    problems: &mut Vec<FieldError>,
) -> Option<Test> {
    if number {
        let parsed = parse_decimal(&c.value).map(|d| Test::Num(cmp, d));
        if parsed.is_none() {
            problems.push(FieldError::new(
                value_path(),
                ErrorCode::InvalidNumber,
                format!("{:?} is not a number, and valueType is NUMBER", c.value),
            ));
        }
        parsed
    } else {
        Some(Test::Str(cmp, c.value.as_str().into()))
    }
}

/// Most distinct patterns kept by [`compile_regex`]'s cache.
const REGEX_CACHE_CAPACITY: usize = 4096;

/// Compiles a pattern with full-match semantics (`^(?:pattern)$`) and the
/// size budgets, through a process-wide cache: identical patterns in many
/// campaigns compile once and share one automaton, which keeps snapshot
/// builds fast and lets the engine memoise a pattern's result per value
/// across campaigns (clones of a `Regex` share its pattern string, so its
/// address identifies the pattern).
pub fn compile_regex(pattern: &str) -> Result<Regex, regex::Error> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(re) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(pattern)
    {
        return Ok(re.clone());
    }
    // The pattern must be valid on its own: wrapping it can close an
    // unbalanced group (`a)|(b` becomes `^(?:a)|(b)$`, valid, and not a
    // full match of anything the author wrote). A size limit of 0 makes
    // this a syntax check only: a valid pattern fails as too big, cheaply.
    if let Err(e @ regex::Error::Syntax(_)) = RegexBuilder::new(pattern).size_limit(0).build() {
        return Err(e);
    }
    // Compile outside the lock: a slow pattern must not block other saves.
    let re = RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()?;
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= REGEX_CACHE_CAPACITY {
        cache.clear();
    }
    Ok(cache.entry(pattern.to_owned()).or_insert(re).clone())
}

fn regex_test(
    pattern: &str,
    value_path: &dyn Fn() -> String,
    problems: &mut Vec<FieldError>,
) -> Option<Test> {
    if pattern.len() > MAX_PATTERN_LEN {
        problems.push(FieldError::new(
            value_path(),
            ErrorCode::TooLong,
            format!("the pattern is longer than {MAX_PATTERN_LEN} bytes"),
        ));
        return None;
    }
    match compile_regex(pattern) {
        Ok(re) => Some(Test::Regex(re)),
        Err(e) => {
            // Report against the pattern as written, not the anchored form.
            let detail = match Regex::new(pattern) {
                Err(inner) => inner.to_string(),
                Ok(_) => e.to_string(),
            };
            problems.push(FieldError::new(
                value_path(),
                ErrorCode::InvalidRegex,
                detail,
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
