//! The wire pieces' tests.

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
fn the_plain_form_reads_as_the_general_path_does() {
    for s in [
        "0",
        "-0",
        "+0",
        "0.00",
        "-0.000",
        "007",
        "1.",
        ".5",
        "-.5",
        "+1.50",
        "12.345",
        "-99999.0001",
        "1234567890123456789012345678",
        "0.1234567890123456789012345678",
        "9999999999999999999999999999",
        "-9999999999999999999.999999999",
        "00000000000000000000000000001",
        "1.0000000000000000000000000000",
        ".",
        "-",
        "",
        "1..2",
        "1.2.3",
        "--1",
        "1a",
        " 1",
    ] {
        let Some((negative, digits, scale)) = plain_parts(s) else {
            assert_eq!(parse_plain(s), None, "{s:?}");
            continue;
        };
        let general = exact(negative, &digits, scale, 0);
        if let Some(fast) = parse_plain(s) {
            let general = general.unwrap_or_else(|| panic!("{s:?}: only the fast path reads it"));
            assert_eq!(fast, general, "{s:?}");
            assert_eq!(fast.to_string(), general.to_string(), "{s:?}: scale");
        }
    }
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
    // Every value is a number, whose text is the decimal.
    let value = serde_json::to_value(Q { v: Decimal::MAX }).unwrap();
    assert!(value["v"].is_number(), "{value}");
    assert_eq!(value["v"].to_string(), "79228162514264337593543950335");
}

#[test]
fn decimal_numbers_are_exact_both_ways() {
    for text in [
        "12345678901234567.89",
        "1234567.1234567891",
        "1.000000000000000000000000001",
        "999.99999999999999999",
        "0.0000000000000000000000000001",
        "-7922816251426433759354395033.5",
    ] {
        let q: Q = serde_json::from_str(&format!(r#"{{"v": {text}}}"#)).unwrap();
        assert_eq!(q.v, text.parse::<Decimal>().unwrap(), "{text}");
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            format!(r#"{{"v":{text}}}"#)
        );
    }
    // Trailing zeros are dropped on the way out; the value is the same.
    let q: Q = serde_json::from_str(r#"{"v": 10.50}"#).unwrap();
    assert_eq!(serde_json::to_string(&q).unwrap(), r#"{"v":10.5}"#);
    // Beyond Decimal's precision or range: refused, never rounded.
    for text in [
        "1.00000000000000000000000000001",
        "79228162514264337593543950336",
        "1e29",
        "1e-29",
        "\"0.123456789012345678901234567891\"",
    ] {
        let err = serde_json::from_str::<Q>(&format!(r#"{{"v": {text}}}"#)).unwrap_err();
        assert!(
            err.to_string().contains("28 significant digits"),
            "{text}: {err}"
        );
    }
}

#[test]
fn parse_decimal_is_exact() {
    assert_eq!(parse_decimal("10.50").map(|d| d.scale()), Some(2));
    assert_eq!(parse_decimal("1.5E+3"), Some(dec!("1500")));
    assert_eq!(parse_decimal("-2.5e-2"), Some(dec!("-0.025")));
    assert_eq!(parse_decimal("0e99999"), Some(Decimal::ZERO));
    assert_eq!(
        parse_decimal("12e26"),
        Some(dec!("1200000000000000000000000000"))
    );
    assert_eq!(
        parse_decimal("1e28"),
        Some(dec!("10000000000000000000000000000"))
    );
    // Trailing zeros beyond the scale limit are only zeros.
    let padded = format!("1.{}", "0".repeat(40));
    assert_eq!(parse_decimal(&padded), Some(Decimal::ONE));
    assert_eq!(parse_decimal("1.00000000000000000000000000001"), None);
    assert_eq!(
        parse_decimal("79228162514264337593543950335"),
        Some(Decimal::MAX)
    );
    assert_eq!(parse_decimal("79228162514264337593543950336"), None);
    assert_eq!(
        parse_decimal("1e-28"),
        Some(dec!("0.0000000000000000000000000001"))
    );
    assert_eq!(parse_decimal("1e-29"), None);
    assert_eq!(parse_decimal("1e9223372036854775807"), None);
    assert_eq!(parse_decimal("1e-9223372036854775808"), None);
    assert_eq!(parse_decimal("1e99999999999999999999"), None);
    for bad in [
        "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "1_000", "0x10", "--1",
    ] {
        assert_eq!(parse_decimal(bad), None, "{bad}");
    }
    assert_eq!(parse_decimal(".5"), Some(dec!("0.5")));
    assert_eq!(parse_decimal("+5."), Some(dec!("5")));
}

#[test]
fn double_numbers_are_the_doubles_forms() {
    let mut v: serde_json::Value =
        serde_json::from_str("[10.50, 1e2, -0, -0.0, 7, 18446744073709551615, 0.1]").unwrap();
    v.as_array_mut()
        .unwrap()
        .iter_mut()
        .for_each(double_numbers);
    assert_eq!(
        v.to_string(),
        "[10.5,100.0,0,0.0,7,18446744073709551615,0.1]"
    );
}

#[test]
fn a_short_json_number_is_exact_without_being_read() {
    for s in [
        "0",
        "-0.5",
        "9999999999999999999999999999",
        "-999999999999999999999999999",
        "0.00000000000000000000000001",
        "1.0000000000000000000000000000",
        "1.00000000000000000000000000001",
        "79228162514264337593543950335",
        "79228162514264337593543950336",
        "1e28",
        "1E29",
        "-1.5e-3",
        "12e26",
    ] {
        assert_eq!(is_exact_json_number(s), parse_decimal(s).is_some(), "{s}");
    }
}
