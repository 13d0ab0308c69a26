//! Canonical JSON (RFC 8785, for the values the consent ledger holds; see
//! [`super::ledger`]) written straight from the values, without building a
//! [`Value`] tree to hold the text's pieces first: the ledger seals an
//! entry on every consent event, inside the event's write.
//!
//! - Object members are sorted by the UTF-16 code units of their names.
//!   Names whose characters are all below U+E000 (every name the ledger
//!   writes) sort the same by their UTF-8 bytes, which is cheaper: below
//!   U+E000 a UTF-16 code unit is the code point, and UTF-8 bytes sort in
//!   code point order; only a character above U+FFFF (a surrogate pair in
//!   UTF-16, from U+D800) against one from U+E000 to U+FFFF differs.
//! - Strings are escaped as ECMAScript's `JSON.stringify` does (and
//!   serde_json): `"`, `\`, `\b \f \n \r \t`, the other controls below
//!   U+0020 as `\u00xx` in lowercase hex; nothing else.
//! - Numbers as serde_json writes them: integers in decimal.

use std::fmt::Write;

use serde_json::{Map, Value};

/// Writes `value` as canonical JSON.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

/// Appends the canonical JSON of `value` to `out`.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_object(map, |_| true, out),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(v, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        Value::Number(n) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "{n}");
        }
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Null => out.push_str("null"),
    }
}

/// Appends the canonical JSON of the object of the members of `map` whose
/// names `keep` keeps.
pub fn write_object(map: &Map<String, Value>, keep: impl Fn(&str) -> bool, out: &mut String) {
    let mut members: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| keep(k)).collect();
    if members.iter().all(|(k, _)| k.bytes().all(|b| b < 0xEE)) {
        // All below U+E000 (lead bytes from 0xEE start U+E000): byte order
        // is UTF-16 order (see the module docs).
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    } else {
        members.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    }
    out.push('{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        write_value(v, out);
    }
    out.push('}');
}

/// Appends `s` as a JSON string.
pub fn write_string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // `b` is ASCII: `i` is a character boundary.
        out.push_str(&s[start..i]);
        if short.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(short);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Appends `n` in decimal.
pub fn write_int(n: i64, out: &mut String) {
    let _ = write!(out, "{n}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The writer's text is serde_json's for every string (serde_json
    /// escapes as `JSON.stringify` does), and members come in UTF-16 order
    /// whichever path sorts them.
    #[test]
    fn strings_and_order_match_the_reference() {
        let mut samples: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        samples.extend(
            [
                "",
                "plain",
                "é\u{7f}\u{2028}",
                "a\"b\\c\u{0}\u{1f}",
                "\u{ff61}\u{1f600}",
            ]
            .map(String::from),
        );
        for s in &samples {
            let mut out = String::new();
            write_string(s, &mut out);
            assert_eq!(out, Value::String(s.clone()).to_string(), "{s:?}");
        }
        for keys in [
            &["b", "a", "\u{e9}"][..],
            &["\u{ff61}", "\u{1f600}", "z", "\u{d7ff}"],
        ] {
            let map: Map<String, Value> =
                keys.iter().map(|k| ((*k).to_owned(), json!(1))).collect();
            let mut want: Vec<&str> = keys.to_vec();
            want.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            let text = canonical_json(&Value::Object(map));
            let got: Vec<usize> = want
                .iter()
                .map(|k| text.find(&format!("\"{k}\"")).unwrap())
                .collect();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "{text}");
        }
    }
}
