//! Small pieces of the JSON wire format shared by both halves of the crate.
//!
//! - [`string_enum!`](crate::string_enum): enums whose unknown values are
//!   kept (as `Unknown(text)`) instead of failing deserialization, so that
//!   validation can report *every* bad value with its field path rather than
//!   serde stopping at the first.
//! - [`Scalar`]: a JSON string or number kept as written, for cart fields that
//!   the specification shows both ways (`"price": "10.5"` and `"price": 10.5`).
//! - [`decimal_number`]: `Decimal` written as a JSON number and read from a
//!   number or a string.

use std::fmt;

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
            Scalar::Number(n) => std::borrow::Cow::Owned(n.to_string()),
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
pub fn parse_decimal(s: &str) -> Option<Decimal> {
    let s = s.trim();
    if s.is_empty() || s.len() > 64 {
        return None;
    }
    if s.contains(['e', 'E']) {
        Decimal::from_scientific(s).ok()
    } else {
        s.parse::<Decimal>().ok()
    }
}

/// Serde for a `Decimal` that travels as a JSON number: written as an integer
/// when it is one, else as the nearest `f64` (whose shortest form is the
/// decimal itself for every value with at most 15 significant digits); read
/// from a JSON number or a numeric string.
pub mod decimal_number {
    use rust_decimal::prelude::ToPrimitive;
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d` as a JSON number.
    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        let n = d.normalize();
        if n.scale() == 0 {
            if let Some(i) = n.to_i64() {
                return s.serialize_i64(i);
            }
        }
        match n.to_f64() {
            // Near Decimal's bounds the nearest f64 lies beyond them
            // (Decimal::MAX becomes 7.922816251426434e28) and would not
            // read back: write the exact text, which reads back.
            Some(f) if Decimal::try_from(f).is_ok() => s.serialize_f64(f),
            _ => s.serialize_str(&n.to_string()),
        }
    }

    /// Reads a JSON number or numeric string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        let v = super::Scalar::deserialize(d)?;
        v.to_decimal().ok_or_else(|| {
            serde::de::Error::custom(format_args!("expected a decimal number, found {v:?}"))
        })
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
            match Option::<crate::wire::Scalar>::deserialize(d)? {
                None => Ok(None),
                Some(v) => v.to_decimal().map(Some).ok_or_else(|| {
                    serde::de::Error::custom(format_args!("expected a decimal number, found {v:?}"))
                }),
            }
        }
    }
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
pub fn find_nul(value: &serde_json::Value, path: &str, problems: &mut crate::error::Problems) {
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
            "invalid_text",
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
                        "invalid_text",
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
    let mut problems = crate::error::Problems::new();
    if let Ok(v) = serde_json::to_value(value) {
        find_nul(&v, "", &mut problems);
    }
    problems.into_result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros_free::dec;

    mod rust_decimal_macros_free {
        macro_rules! dec {
            ($s:literal) => {
                <rust_decimal::Decimal as std::str::FromStr>::from_str($s).unwrap()
            };
        }
        pub(crate) use dec;
    }

    string_enum! {
        /// Test enum.
        enum Color {
            /// Red.
            Red = "RED",
            /// Blue.
            Blue = "BLUE",
        }
    }

    #[test]
    fn string_enum_keeps_unknown_values() {
        let c: Vec<Color> = serde_json::from_str(r#"["RED","BLUE","GREEN"]"#).unwrap();
        assert_eq!(
            c,
            vec![Color::Red, Color::Blue, Color::Unknown("GREEN".into())]
        );
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"["RED","BLUE","GREEN"]"#
        );
        assert_eq!(Color::expected(), r#""RED", "BLUE""#);
        assert!(!c[2].is_known());
    }

    #[test]
    fn scalar_keeps_form_and_parses_decimals() {
        let v: Vec<Scalar> = serde_json::from_str(r#"["10.50", 10.5, 3, "abc"]"#).unwrap();
        assert_eq!(v[0].to_decimal(), Some(dec!("10.50")));
        assert_eq!(v[1].to_decimal(), Some(dec!("10.5")));
        assert_eq!(v[2].to_decimal(), Some(dec!("3")));
        assert_eq!(v[3].to_decimal(), None);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"["10.50",10.5,3,"abc"]"#
        );
        assert!(serde_json::from_str::<Scalar>("null").is_err());
        let err = serde_json::from_str::<Scalar>("true").unwrap_err();
        assert!(err.to_string().contains("found a boolean"), "{err}");
        assert!(serde_json::from_str::<Scalar>("[1]").is_err());
    }

    #[test]
    fn nul_is_found_with_its_path() {
        let v = serde_json::json!({"a": ["ok", "x\0y"], "b\0": 1, "c": {"d": "\0"}});
        let err = reject_nul(&v).unwrap_err();
        let fields: Vec<&str> = err.fields().iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["a[1]", "b\u{0}", "c.d"]);
        assert!(reject_nul(&serde_json::json!({"a": "fine"})).is_ok());
    }

    #[test]
    fn parse_decimal_forms() {
        assert_eq!(parse_decimal(" -12.50 "), Some(dec!("-12.50")));
        assert_eq!(parse_decimal("1.5e3"), Some(dec!("1500")));
        assert_eq!(parse_decimal(""), None);
        assert_eq!(parse_decimal("1,000"), None);
        assert_eq!(parse_decimal("NaN"), None);
        assert_eq!(parse_decimal("1e999999"), None);
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Q {
        #[serde(with = "decimal_number")]
        v: Decimal,
    }

    #[test]
    fn decimal_number_round_trip() {
        let q: Q = serde_json::from_str(r#"{"v": "50"}"#).unwrap();
        assert_eq!(serde_json::to_string(&q).unwrap(), r#"{"v":50}"#);
        let q: Q = serde_json::from_str(r#"{"v": 99.99}"#).unwrap();
        assert_eq!(q.v, dec!("99.99"));
        assert_eq!(serde_json::to_string(&q).unwrap(), r#"{"v":99.99}"#);
        assert!(serde_json::from_str::<Q>(r#"{"v": "x"}"#).is_err());
    }

    #[test]
    fn decimal_number_near_the_bounds_reads_back() {
        // The nearest f64 of Decimal::MAX is beyond it; such values are
        // written as text so that what is written reads back. (Found by
        // fuzzing: a saved quota of this value could not be re-posted.)
        for v in [Decimal::MAX, Decimal::MIN, Decimal::MAX - Decimal::ONE] {
            let json = serde_json::to_string(&Q { v }).unwrap();
            let back: Q = serde_json::from_str(&json).unwrap();
            assert_eq!(back.v, v, "{json}");
            let value = serde_json::to_value(Q { v }).unwrap();
            assert_eq!(serde_json::from_value::<Q>(value).unwrap().v, v);
        }
        // Ordinary values stay numbers.
        let value = serde_json::to_value(Q { v: dec!("7.9e27") }).unwrap();
        assert!(value["v"].is_number(), "{value}");
    }
}
