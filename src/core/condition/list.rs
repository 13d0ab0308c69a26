//! The `("a","b")` value lists of `in` / `not_in`.
//!
//! Grammar: `(` value (`,` value)* `)` with optional whitespace between
//! tokens, where a value is a string in double or single quotes; inside it a
//! backslash escapes the next character (`"say \"hi\""`). At most
//! [`MAX_IN_VALUES`] values; duplicates are allowed and count once.

use std::fmt;

/// Most values an `in` / `not_in` list may hold (the specification's limit;
/// beyond it, tag the products and use `contains`).
pub const MAX_IN_VALUES: usize = 50;

/// Why a list did not parse; renders with a caret under the fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListError {
    /// What is wrong.
    pub message: String,
    /// Byte offset of the fault in the source.
    pub offset: usize,
    /// The source list.
    pub source: String,
    /// `in_list_syntax` or `in_list_too_long`.
    pub code: &'static str,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Column in characters, so the caret lines up under multi-byte text.
        let column = self.source[..self.offset.min(self.source.len())]
            .chars()
            .count();
        write!(
            f,
            "{} at offset {}\n    {}\n    {}^",
            self.message,
            self.offset,
            self.source,
            " ".repeat(column)
        )
    }
}

/// Parses a `("a","b")` list.
pub fn parse_list(source: &str) -> Result<Vec<String>, ListError> {
    let err = |offset: usize, message: &str| ListError {
        message: message.to_owned(),
        offset,
        source: source.to_owned(),
        code: "in_list_syntax",
    };
    let bytes = source.as_bytes();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'(') {
        return Err(err(i, "expected `(` to open the list, as in (\"a\",\"b\")"));
    }
    i = skip_ws(bytes, i + 1);
    let mut values = Vec::new();
    loop {
        let quote = match bytes.get(i) {
            Some(&q @ (b'"' | b'\'')) => q,
            Some(b')') if values.is_empty() => return Err(err(i, "the list is empty")),
            Some(_) => return Err(err(i, "expected a quoted value")),
            None => return Err(err(i, "unexpected end of the list")),
        };
        let start = i;
        i += 1;
        let mut value = String::new();
        loop {
            // Work on chars, not bytes, so multi-byte text is copied intact.
            let Some(c) = source[i..].chars().next() else {
                return Err(err(start, "unterminated quoted value"));
            };
            i += c.len_utf8();
            match c {
                '\\' => {
                    let Some(next) = source[i..].chars().next() else {
                        return Err(err(start, "unterminated quoted value"));
                    };
                    i += next.len_utf8();
                    value.push(next);
                }
                c if c as u32 == u32::from(quote) => break,
                c => value.push(c),
            }
        }
        values.push(value);
        if values.len() > MAX_IN_VALUES {
            return Err(ListError {
                code: "in_list_too_long",
                ..err(start, &format!("the list has more than {MAX_IN_VALUES} values; tag the items and use `contains`"))
            });
        }
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b')') => {
                let end = skip_ws(bytes, i + 1);
                if end != bytes.len() {
                    return Err(err(end, "unexpected text after the list"));
                }
                return Ok(values);
            }
            Some(_) => return Err(err(i, "expected `,` or `)`")),
            None => return Err(err(i, "unexpected end of the list, expected `)`")),
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Writes values back as a list that [`parse_list`] reads to the same values.
pub fn format_list<S: AsRef<str>>(values: &[S]) -> String {
    let mut out = String::from("(");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for c in v.as_ref().chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(src: &str, expected: &[&str]) {
        assert_eq!(parse_list(src).unwrap(), expected, "{src}");
    }

    fn fails(src: &str, rendered: &str) {
        let e = parse_list(src).unwrap_err();
        assert_eq!(e.to_string(), rendered, "{src}");
    }

    #[test]
    fn valid_lists() {
        ok(r#"("a","b")"#, &["a", "b"]);
        ok(r#" ( "a" , 'b' ) "#, &["a", "b"]);
        ok(r#"("")"#, &[""]);
        ok(r#"("a\"b","c\\d")"#, &["a\"b", "c\\d"]);
        ok(r#"("ข้าว","x")"#, &["ข้าว", "x"]);
        ok(r#"("a,b")"#, &["a,b"]);
    }

    #[test]
    fn invalid_lists_point_at_the_fault() {
        fails(
            "a,b",
            "expected `(` to open the list, as in (\"a\",\"b\") at offset 0\n    a,b\n    ^",
        );
        fails("()", "the list is empty at offset 1\n    ()\n     ^");
        fails(
            r#"("a" "b")"#,
            "expected `,` or `)` at offset 5\n    (\"a\" \"b\")\n         ^",
        );
        fails(
            r#"("a","#,
            "unexpected end of the list at offset 5\n    (\"a\",\n         ^",
        );
        fails(
            r#"("a)"#,
            "unterminated quoted value at offset 1\n    (\"a)\n     ^",
        );
        fails(
            r#"("a") x"#,
            "unexpected text after the list at offset 6\n    (\"a\") x\n          ^",
        );
        fails(
            "(a)",
            "expected a quoted value at offset 1\n    (a)\n     ^",
        );
    }

    #[test]
    fn fifty_values_is_the_limit() {
        let fifty: Vec<String> = (0..50).map(|i| i.to_string()).collect();
        assert_eq!(parse_list(&format_list(&fifty)).unwrap().len(), 50);
        let fifty_one: Vec<String> = (0..51).map(|i| i.to_string()).collect();
        let e = parse_list(&format_list(&fifty_one)).unwrap_err();
        assert_eq!(e.code, "in_list_too_long");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(values in proptest::collection::vec(".{0,8}", 1..10)) {
            prop_assert_eq!(parse_list(&format_list(&values)).unwrap(), values);
        }

        #[test]
        fn parse_never_panics(s in ".{0,40}") {
            let _ = parse_list(&s);
        }

        #[test]
        fn parse_never_panics_on_list_alphabet(s in r#"[()"'\\, a-bé]{0,30}"#) {
            let _ = parse_list(&s);
        }
    }
}
