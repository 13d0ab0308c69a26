//! Which rendered quota keys a template can produce, when only some of its
//! names are known: the quota view's question "which stored keys can
//! refuse this campaign's redeems?", answered exactly.
//!
//! [`Template::render_key`] writes a value that is followed by text with
//! `%` and the first character of that text as `%XX` escapes, and the last
//! placeholder's value as is. So the keys a placeholder can render are
//! exactly the strings made of characters other than `%` and that
//! character, `%25` and the escape of that character (or any string, for a
//! value substituted as is). [`KeyPattern`] spells that out as an anchored
//! regular expression over the whole key, with the known names rendered
//! in place, and keeps the literal text before the first unknown name as a
//! prefix for an index range scan.

use std::borrow::Cow;

use regex::Regex;

use super::{push_escaped, Part, Template};

/// The set of keys a quota template renders for every value of its unknown
/// names, with its known names fixed. Built by
/// [`Template::key_pattern`].
#[derive(Debug, Clone)]
pub struct KeyPattern {
    prefix: String,
    fixed: bool,
    regex: Regex,
    // Capture group indexes of an unknown name used more than once, with
    // whether each occurrence is escaped: all of them must decode to the
    // same value.
    repeats: Vec<Vec<(usize, bool)>>,
}

impl Template {
    /// The keys this template renders as a quota key
    /// ([`render_key`](Self::render_key)) when the names `known` gives a
    /// value for are fixed and every other name may take any value.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use accord::template::Template;
    ///
    /// let t = Template::parse("${campaignCode}-${userId}").unwrap();
    /// let p = t.key_pattern(&|n| (n == "campaignCode").then(|| Cow::Borrowed("P-X")));
    /// assert_eq!(p.prefix(), "P%2DX-");
    /// assert!(p.matches("P%2DX-u1") && p.matches("P%2DX-any-thing"));
    /// // `P-X-u1` is the key of campaign `P`, user `X-u1`.
    /// assert!(!p.matches("P-X-u1"));
    /// ```
    pub fn key_pattern<'v>(&self, known: &dyn Fn(&str) -> Option<Cow<'v, str>>) -> KeyPattern {
        self.pattern(known, true)
    }

    /// The keys this template rendered as a quota key before values were
    /// escaped, by plain substitution ([`render`](Self::render)), with the
    /// names `known` gives a value for fixed. A stored key that matches
    /// this pattern but not [`key_pattern`](Self::key_pattern)'s was
    /// written by an earlier version and is no longer charged.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use accord::template::Template;
    ///
    /// let t = Template::parse("${campaignCode}-${userId}").unwrap();
    /// let known = |n: &str| (n == "campaignCode").then(|| Cow::Borrowed("A-B"));
    /// assert!(t.plain_key_pattern(&known).matches("A-B-u1"));
    /// assert!(!t.key_pattern(&known).matches("A-B-u1"));
    /// ```
    pub fn plain_key_pattern<'v>(
        &self,
        known: &dyn Fn(&str) -> Option<Cow<'v, str>>,
    ) -> KeyPattern {
        self.pattern(known, false)
    }

    fn pattern<'v>(
        &self,
        known: &dyn Fn(&str) -> Option<Cow<'v, str>>,
        escape: bool,
    ) -> KeyPattern {
        let mut prefix = String::new();
        let mut fixed = true;
        let mut body = String::new();
        let mut groups: Vec<(String, bool)> = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let literal = match part {
                Part::Text(text) => text.clone(),
                Part::Name(name) => {
                    let next = if escape { self.key_escape(i) } else { None };
                    let Some(value) = known(name) else {
                        fixed = false;
                        body.push('(');
                        body.push_str(&value_pattern(next));
                        body.push(')');
                        groups.push((name.clone(), next.is_some()));
                        continue;
                    };
                    let mut out = String::new();
                    match next {
                        Some(next) => push_escaped(&mut out, &value, next),
                        None => out.push_str(&value),
                    }
                    out
                }
            };
            if fixed {
                prefix.push_str(&literal);
            }
            body.push_str(&regex::escape(&literal));
        }
        let mut repeats: Vec<Vec<(usize, bool)>> = Vec::new();
        for (i, (name, _)) in groups.iter().enumerate() {
            if groups[..i].iter().any(|(n, _)| n == name) {
                continue;
            }
            let same: Vec<(usize, bool)> = groups
                .iter()
                .enumerate()
                .filter(|(_, (n, _))| n == name)
                .map(|(j, (_, escaped))| (j + 1, *escaped))
                .collect();
            if same.len() > 1 {
                repeats.push(same);
            }
        }
        // The body is escaped literals and the fixed group patterns of
        // `value_pattern`; templates are at most MAX_TEMPLATE_LEN bytes,
        // well within the regex crate's default size limit.
        let regex = Regex::new(&format!(r"\A(?s:{body})\z"))
            .unwrap_or_else(|_| Regex::new(r"[^\s\S]").expect("a regex that matches nothing"));
        KeyPattern {
            prefix,
            fixed,
            regex,
            repeats,
        }
    }
}

/// The keys one unknown value renders: anything when it is substituted as
/// is (`next` is `None`), else characters other than `%` and `next`, and
/// their escapes.
fn value_pattern(next: Option<char>) -> String {
    let Some(next) = next else {
        return ".*".to_owned();
    };
    let mut escaped = String::new();
    push_escaped(&mut escaped, &next.to_string(), next);
    if next == '%' {
        "(?:[^%]|%25)*".to_owned()
    } else {
        format!(
            "(?:[^%{}]|%25|{})*",
            regex::escape(&next.to_string()),
            regex::escape(&escaped)
        )
    }
}

impl KeyPattern {
    /// The text every matching key begins with: the template up to its
    /// first unknown name, known names rendered. Empty when the template
    /// begins with an unknown name.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The one key the template renders, when every name is known.
    pub fn fixed(&self) -> Option<&str> {
        self.fixed.then_some(self.prefix.as_str())
    }

    /// Whether some values of the unknown names render exactly `key`.
    pub fn matches(&self, key: &str) -> bool {
        if self.fixed {
            return key == self.prefix;
        }
        if self.repeats.is_empty() {
            return self.regex.is_match(key);
        }
        let Some(caps) = self.regex.captures(key) else {
            return false;
        };
        self.repeats.iter().all(|same| {
            let values: Vec<Option<String>> = same
                .iter()
                .map(|(group, escaped)| {
                    let text = caps.get(*group).map_or("", |m| m.as_str());
                    if *escaped {
                        unescape(text)
                    } else {
                        Some(text.to_owned())
                    }
                })
                .collect();
            values.windows(2).all(|w| w[0].is_some() && w[0] == w[1])
        })
    }
}

/// A value written by `push_escaped`, read back.
fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use crate::template::Template;

    fn pattern(template: &str, known: &[(&str, &str)]) -> super::KeyPattern {
        let known: Vec<(String, String)> = known
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Template::parse(template).unwrap().key_pattern(&|n| {
            known
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| Cow::Owned(v.clone()))
        })
    }

    /// Template, known names, and what is expected.
    type Case<'a, T> = (&'a str, &'a [(&'a str, &'a str)], &'a str, T);

    #[test]
    fn prefixes_and_fixed_keys() {
        // (template, known names, prefix, fixed key)
        let cases: &[Case<'_, Option<&str>>] = &[
            ("BUDGET", &[], "BUDGET", Some("BUDGET")),
            ("${c}", &[("c", "A-B")], "A-B", Some("A-B")),
            ("${c}-${u}", &[("c", "A-B")], "A%2DB-", None),
            ("${u}-${c}", &[("c", "A")], "", None),
            ("x${c}:${u}:${y}", &[("c", "S"), ("y", "2026")], "xS:", None),
            (
                "${c}-${y}",
                &[("c", "50%"), ("y", "2026")],
                "50%25-2026",
                Some("50%25-2026"),
            ),
        ];
        for (template, known, prefix, fixed) in cases {
            let p = pattern(template, known);
            assert_eq!((p.prefix(), p.fixed()), (*prefix, *fixed), "{template}");
        }
    }

    #[test]
    fn matches_exactly_what_renders() {
        // (template, known names, key, matches)
        let cases: &[Case<'_, bool>] = &[
            ("${c}-${u}", &[("c", "P")], "P-X-u1", true),
            ("${c}-${u}", &[("c", "P-X")], "P-X-u1", false),
            ("${c}-${u}", &[("c", "P-X")], "P%2DX-u1", true),
            ("${u}-${c}", &[("c", "P")], "u%2D1-P", true),
            ("${u}-${c}", &[("c", "P")], "u-1-P", false),
            ("${u}-${c}", &[("c", "P")], "u%2X-P", false),
            ("${u}-${c}", &[("c", "P")], "u%41-P", false),
            ("${u}-${c}", &[("c", "P")], "50%25-P", true),
            ("${u}-${c}", &[("c", "P")], "-P", true),
            ("${u}→${c}", &[("c", "P")], "x%E2%86%92y→P", true),
            ("${u}→${c}", &[("c", "P")], "x→y→P", false),
            ("${u}:${v}", &[], "a:b:c", true),
            ("${u}:${v}", &[], "ab", false),
            ("${u}-${u}", &[], "a%2Db-a-b", true),
            ("${u}-${u}", &[], "a-b", false),
            ("${u}-x-${u}", &[], "a-x-a", true),
            ("${u}:${w}:${u}", &[], "a:b:a", true),
            ("${u}:${w}:${u}", &[], "a:b:c", false),
            ("line\n${u}", &[], "line\nuser\n2", true),
            ("BUDGET", &[], "BUDGET-2", false),
        ];
        for (template, known, key, expected) in cases {
            assert_eq!(
                pattern(template, known).matches(key),
                *expected,
                "{template} against {key}"
            );
        }
    }

    #[test]
    fn plain_patterns_match_keys_rendered_before_escaping() {
        let known = |n: &str| (n == "c").then_some(Cow::Borrowed("A-B"));
        let t = Template::parse("${c}-${u}-${v}").unwrap();
        let plain = t.plain_key_pattern(&known);
        assert_eq!((plain.prefix(), plain.fixed()), ("A-B-", None));
        for (key, old, new) in [
            ("A-B-u-1-x", true, false),
            ("A%2DB-u%2D1-x", false, true),
            ("A%2DB-u-x", false, true),
            ("A-B-", false, false),
        ] {
            assert_eq!(
                (plain.matches(key), t.key_pattern(&known).matches(key)),
                (old, new),
                "{key}"
            );
        }
    }

    proptest! {
        /// Every rendered key matches the pattern with the same known
        /// values, and starts with its prefix; a key rendered with another
        /// known value does not match.
        #[test]
        fn rendered_keys_match(
            t in prop::sample::select(vec![
                "${c}-${u}", "${u}-${c}", "${u}:${c}:${v}", "k${c}4${u}", "${u}ab${c}",
                "-${c}--${u}-", "${u}-${c}-${u}", "${c}%2${u}",
            ]),
            c in "[abP4X2%:-]{0,4}", other in "[abP4X2%:-]{0,4}",
            u in "[abP4X2%:-]{0,5}", v in "[abP4X2%:-]{0,5}",
        ) {
            let t = Template::parse(t).unwrap();
            let key = t.render_key(&|n| Some(Cow::Owned(match n {
                "c" => c.clone(),
                "u" => u.clone(),
                _ => v.clone(),
            }))).unwrap();
            let p = t.key_pattern(&|n| (n == "c").then(|| Cow::Owned(c.clone())));
            prop_assert!(key.starts_with(p.prefix()));
            prop_assert!(p.matches(&key), "{} does not match", key);
            if other != c && !t.key_text_has_percent() {
                let p = t.key_pattern(&|n| (n == "c").then(|| Cow::Owned(other.clone())));
                prop_assert!(!p.matches(&key), "{} matches c={}", key, other);
            }
        }
    }
}
