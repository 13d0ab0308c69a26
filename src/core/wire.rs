//! Small pieces of the JSON wire format shared by both halves of the crate.
//!
//! - [`string_enum!`](crate::string_enum): enums whose unknown values are
//!   kept (as `Unknown(text)`) instead of failing deserialization, so that
//!   validation can report *every* bad value with its field path rather than
//!   serde stopping at the first.
//! - [`Scalar`]: a JSON string or number kept as written, for cart fields that
//!   the specification shows both ways (`"price": "10.5"` and `"price": 10.5`).
//! - [`decimal_number`]: `Decimal` written as a JSON number whose text is
//!   the exact decimal, and read exactly from a number or a string.
//! - [`parse_decimal`]: the one exact text → `Decimal` conversion.
//!
//! JSON numbers are never floats in this crate: serde_json's
//! `arbitrary_precision` feature keeps each number's text, so
//! `999.99999999999999999` stays that value instead of becoming `1000.0`.

use std::fmt;

use crate::ErrorCode;
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a string enum with wire names and an `Unknown(String)` variant
/// that keeps whatever else was sent.
#[macro_export]
#[doc(hidden)]
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value that is not one of the known ones, kept as sent so
            /// that validation can name it.
            Unknown(String),
        }

        impl $name {
            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $wire, )+
                    $name::Unknown(s) => s.as_str(),
                }
            }

            /// Parses a wire name; unknown names become `Unknown`.
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $wire => $name::$variant, )+
                    other => $name::Unknown(other.to_owned()),
                }
            }

            /// Whether this is a known value.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Unknown(_))
            }

            /// The known wire names, in declaration order.
            pub const WIRE: &'static [&'static str] = &[$($wire),+];

            /// The known wire names, for error messages: `"ENABLE", "DISABLE"`.
            pub fn expected() -> String {
                Self::WIRE
                    .iter()
                    .map(|w| format!("\"{w}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }

        // The OpenAPI schema lists the known values: `Unknown` only exists
        // so that validation can name a bad value, never as valid input.
        #[cfg(feature = "http")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some(Self::WIRE.iter().copied()))
                    .into()
            }
        }

        #[cfg(feature = "http")]
        impl ::utoipa::ToSchema for $name {}
    };
}

/// A JSON scalar kept as written: cart numbers arrive as strings or as
/// numbers, and an unparsable one (`"abc"`) must not fail the request — a
/// NUMBER condition on it is simply false.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scalar {
    /// Sent as a JSON string.
    Text(String),
    /// Sent as a JSON number (kept in serde_json's exact text form).
    Number(serde_json::Number),
}

impl Scalar {
    /// The value as text: a string as is, a number in its JSON form.
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Scalar::Text(s) => std::borrow::Cow::Borrowed(s),
            // A number keeps the text it was read from (arbitrary precision).
            Scalar::Number(n) => std::borrow::Cow::Borrowed(n.as_str()),
        }
    }

    /// The value as a Decimal, when it is one (`"10.50"`, `10.5`, `1e3`).
    pub fn to_decimal(&self) -> Option<Decimal> {
        parse_decimal(&self.as_text())
    }
}

impl From<&str> for Scalar {
    fn from(s: &str) -> Self {
        Scalar::Text(s.to_owned())
    }
}

impl From<String> for Scalar {
    fn from(s: String) -> Self {
        Scalar::Text(s)
    }
}

impl From<i64> for Scalar {
    fn from(n: i64) -> Self {
        Scalar::Number(n.into())
    }
}

impl From<Decimal> for Scalar {
    fn from(d: Decimal) -> Self {
        Scalar::Text(d.to_string())
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_text())
    }
}

impl Serialize for Scalar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Text(t) => s.serialize_str(t),
            Scalar::Number(n) => n.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Scalar::Text(s)),
            serde_json::Value::Number(n) => Ok(Scalar::Number(n)),
            // A boolean is no price, quantity or code: refused as a value
            // of the wrong type (400 naming the field), as the schema says.
            other => Err(serde::de::Error::custom(format_args!(
                "expected a string or a number, found {}",
                json_kind(&other)
            ))),
        }
    }
}

#[cfg(feature = "http")]
impl utoipa::PartialSchema for Scalar {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .description(Some(
                "A string or a JSON number (a decimal may be sent either way; a number is read with its exact decimal text, never through binary floating point). A string that is not a decimal makes every NUMBER condition on it false.",
            ))
            .into()
    }
}

#[cfg(feature = "http")]
impl utoipa::ToSchema for Scalar {}

/// The JSON type name of a value, for messages.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Parses a decimal the way every NUMBER comparison does: surrounding
/// whitespace is ignored, plain (`-12.50`) and scientific (`1.5e3`) forms are
/// accepted, anything else is `None`.
///
/// The value is exact or `None`: a text whose value `Decimal` cannot hold
/// exactly (more than 28 significant digits, a magnitude beyond
/// ±79,228,162,514,264,337,593,543,950,335, or more than 28 digits after the
/// point once trailing zeros are dropped) is not a number here, never a
/// rounded one. Trailing zeros are kept as the scale when they fit
/// (`10.50` has scale 2).
pub fn parse_decimal(s: &str) -> Option<Decimal> {
    let s = s.trim();
    if s.is_empty() || s.len() > MAX_NUMBER_TEXT {
        return None;
    }
    if let Some(d) = parse_plain(s) {
        return Some(d);
    }
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => {
            let exp = &s[at + 1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // |exponent| <= 64 characters long fits no i64 only when absurd:
            // anything past ±100 is beyond Decimal's range or scale unless
            // the mantissa is zero.
            let exp: i64 = exp.parse().unwrap_or(if exp.starts_with('-') {
                i64::MIN
            } else {
                i64::MAX
            });
            (&s[..at], exp)
        }
        None => (s, 0),
    };
    let (negative, digits, scale) = plain_parts(mantissa)?;
    exact(negative, &digits, scale, exponent)
}

/// Whether [`parse_decimal`] reads the text of a JSON number, decided for
/// the common short form without reading it: a JSON number of at most 28
/// characters with no exponent has at most 28 digits, which a `Decimal`
/// always holds at their scale.
pub fn is_exact_json_number(s: &str) -> bool {
    (s.len() <= 28 && !s.bytes().any(|b| matches!(b, b'e' | b'E'))) || parse_decimal(s).is_some()
}

/// The common form, `[+-]digits[.digits]` with at most 28 digits, read
/// without allocating: the same value and scale as the general path below
/// (which handles exponents, long digit strings and every refusal); `None`
/// hands the text to it.
fn parse_plain(s: &str) -> Option<Decimal> {
    let bytes = s.as_bytes();
    let (negative, rest) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut mantissa: i128 = 0;
    let mut digits = 0u32;
    let mut scale = 0u32;
    let mut point = false;
    for &b in rest {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                if digits > 28 {
                    return None;
                }
                mantissa = mantissa * 10 + i128::from(b - b'0');
                if point {
                    scale += 1;
                }
            }
            b'.' if !point => point = true,
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    if mantissa == 0 {
        return Some(Decimal::ZERO);
    }
    if negative {
        mantissa = -mantissa;
    }
    Decimal::try_from_i128_with_scale(mantissa, scale).ok()
}

/// The longest number text read, in bytes: no exact `Decimal` needs more
/// (29 digits, a sign, a point, an exponent) unless padded with zeros.
pub const MAX_NUMBER_TEXT: usize = 64;

/// `-012.340` → (true, "012340", 3): sign, every digit, digits after the
/// point. `None` unless it is `[+-]digits[.digits]` with at least one digit.
fn plain_parts(s: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, f),
        None => (rest, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits = String::with_capacity(int.len() + frac.len());
    digits.push_str(int);
    digits.push_str(frac);
    // The text is at most MAX_NUMBER_TEXT bytes long.
    Some((negative, digits, i64::try_from(frac.len()).ok()?))
}

/// The exact value of `digits` × 10^(exponent − scale), if `Decimal` holds
/// it: trailing zeros are dropped only when the value does not fit with
/// them.
fn exact(negative: bool, digits: &str, scale: i64, exponent: i64) -> Option<Decimal> {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(Decimal::ZERO);
    }
    let mut scale = scale.saturating_sub(exponent);
    let mut digits = std::borrow::Cow::Borrowed(digits);
    // A negative scale: the digits are followed by that many zeros.
    if scale < 0 {
        if i64::try_from(digits.len()).ok()?.saturating_sub(scale) > 29 {
            return None;
        }
        let zeros = usize::try_from(-scale).ok()?;
        digits = std::borrow::Cow::Owned(format!("{digits}{}", "0".repeat(zeros)));
        scale = 0;
    }
    // Too many digits or too fine a scale: drop trailing zeros, which
    // changes the scale but not the value.
    while (digits.len() > 29 || scale > 28) && scale > 0 && digits.ends_with('0') {
        let shorter = digits.len() - 1;
        digits = std::borrow::Cow::Owned(digits[..shorter].to_owned());
        scale -= 1;
    }
    if digits.len() > 29 || scale > 28 {
        return None;
    }
    let mut m: i128 = digits.parse().ok()?;
    if negative {
        m = -m;
    }
    Decimal::try_from_i128_with_scale(m, u32::try_from(scale).ok()?).ok()
}

/// Serde for a `Decimal` that travels as a JSON number whose text is the
/// exact decimal (`0.1`, `12345678901234567.89`, never a float's nearest
/// value), trailing zeros dropped; read exactly from a JSON number or a
/// numeric string, and refused (never rounded) when `Decimal` cannot hold
/// the value exactly.
pub mod decimal_number {
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// The JSON number whose text is `d`, trailing zeros dropped.
    pub fn to_number(d: &Decimal) -> serde_json::Number {
        let text = d.normalize().to_string();
        // Decimal's text is always a valid JSON number (`-0` included).
        text.parse().expect("a decimal's text is a JSON number")
    }

    /// Writes `d` as a JSON number with its exact text.
    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        to_number(d).serialize(s)
    }

    /// How the message of a value that is not an exact decimal begins: the
    /// HTTP adapter answers a body holding one with 422 `invalid_number`
    /// at the field, like any other invalid value.
    pub const NOT_EXACT: &str = "expected a decimal number of at most 28 significant digits";

    /// The message of a value that is not an exact decimal.
    pub(crate) fn not_exact(v: &super::Scalar) -> String {
        let text = v.as_text();
        let shown: String = text.chars().take(super::MAX_NUMBER_TEXT).collect();
        let more = if shown.len() < text.len() { "…" } else { "" };
        format!(
            "{NOT_EXACT} and a magnitude below 79228162514264337593543950336, found {shown}{more}"
        )
    }

    /// Reads a JSON number or numeric string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        let v = super::Scalar::deserialize(d)?;
        v.to_decimal()
            .ok_or_else(|| serde::de::Error::custom(not_exact(&v)))
    }

    /// The same for `Option<Decimal>` (`null` is `None`).
    pub mod option {
        use super::Decimal;
        use serde::{Deserialize, Deserializer, Serializer};

        /// Writes `d` as a JSON number or `null`.
        #[allow(clippy::ref_option)]
        pub fn serialize<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        /// Reads a JSON number, numeric string or `null`.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
            match Option::<crate::core::wire::Scalar>::deserialize(d)? {
                None => Ok(None),
                Some(v) => v
                    .to_decimal()
                    .map(Some)
                    .ok_or_else(|| serde::de::Error::custom(super::not_exact(&v))),
            }
        }
    }
}

/// Rewrites every number under `value` the way a double holds it: an
/// integer that fits `i64`/`u64` as is, any other number as the shortest
/// text of the nearest `f64` (`10.50` → `10.5`, `1e2` → `100.0`).
///
/// Content attributes are free JSON, stored and queried as doubles on
/// every store (the SQLite store matches a number by these texts); their
/// numbers are not money, which never goes through here. A number beyond
/// the doubles' range is left as sent; `-0` becomes `0` (PostgreSQL's
/// `jsonb` has no negative zero).
pub fn double_numbers(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                *n = i.into();
                return;
            }
            if n.as_u64().is_some() {
                return;
            }
            let double = n.as_f64().map(|f| if f == 0.0 { 0.0 } else { f });
            if let Some(d) = double.and_then(serde_json::Number::from_f64) {
                *n = d;
            }
        }
        serde_json::Value::Array(xs) => xs.iter_mut().for_each(double_numbers),
        serde_json::Value::Object(m) => m.values_mut().for_each(double_numbers),
        _ => {}
    }
}

/// [`double_numbers`] on a copy of content data.
pub fn double_data(
    data: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut data = data.clone();
    data.values_mut().for_each(double_numbers);
    data
}

/// Deserializes a string field that clients sometimes send as a number or a
/// boolean (`"value": 100`), keeping its text.
pub fn string_or_scalar<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Scalar::deserialize(d)?.as_text().into_owned())
}

/// [`string_or_scalar`] for optional fields.
pub fn opt_string_or_scalar<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<Scalar>::deserialize(d)?.map(|s| s.as_text().into_owned()))
}

/// Whether a JSON value holds the NUL character in a string or a key:
/// the cheap test before [`find_nul`] builds paths.
pub fn contains_nul(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(xs) => xs.iter().any(contains_nul),
        serde_json::Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// Reports every string (object keys included) under `value` that holds
/// the NUL character, with its path below `path`.
///
/// NUL is refused everywhere text is stored: PostgreSQL cannot store it in
/// `text` or `jsonb`, and accepting it in some stores only would make the
/// stores disagree. No legitimate consent or campaign text needs it.
pub fn find_nul(
    value: &serde_json::Value,
    path: &str,
    problems: &mut crate::core::error::Problems,
) {
    fn join(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    }
    match value {
        serde_json::Value::String(s) if s.contains('\0') => problems.push(
            path,
            ErrorCode::InvalidText,
            "text must not contain the NUL character (U+0000)",
        ),
        serde_json::Value::Array(xs) => {
            for (i, x) in xs.iter().enumerate() {
                find_nul(x, &format!("{path}[{i}]"), problems);
            }
        }
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                if k.contains('\0') {
                    problems.push(
                        join(path, k),
                        ErrorCode::InvalidText,
                        "names must not contain the NUL character (U+0000)",
                    );
                }
                find_nul(v, &join(path, k), problems);
            }
        }
        _ => {}
    }
}

/// [`find_nul`] on anything serializable, as one validation error.
pub fn reject_nul<T: Serialize>(value: &T) -> crate::Result<()> {
    let mut problems = crate::core::error::Problems::new();
    if let Ok(v) = serde_json::to_value(value) {
        find_nul(&v, "", &mut problems);
    }
    problems.into_result()
}

#[cfg(test)]
mod tests;
