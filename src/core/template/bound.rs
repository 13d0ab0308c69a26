//! A quota key with the names its campaign fixes rendered once.
//!
//! A campaign's quota key (`${campaignCode}-${userId}`) is rendered for
//! every hit of every search. Some of its names have one value per
//! compiled campaign (its code, its id, its own channel); [`BoundKey`]
//! holds their rendering, escaped exactly as [`Template::render_key`]
//! escapes them, so a rendering for a request substitutes only the names
//! that vary and gives the same key, byte for byte.

use std::borrow::Cow;

use super::{push_escaped, Part, Template, TemplateError};

/// A quota key template with its fixed names rendered. Built by
/// [`Template::bind_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BoundKey {
    parts: Vec<KeyPart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyPart {
    Text(String),
    /// A name resolved per rendering, and the character its value escapes
    /// (none: substituted as is).
    Name {
        name: String,
        escape: Option<char>,
    },
}

/// Appends a key's value as [`Template::render_key`] does.
fn push_value(out: &mut String, value: &str, escape: Option<char>) {
    match escape {
        Some(special) => push_escaped(out, value, special),
        None => out.push_str(value),
    }
}

impl Template {
    /// This quota key with the names `fixed` gives a value for rendered
    /// once; the others are resolved by each [`BoundKey::render`].
    pub(crate) fn bind_key<'v>(&self, fixed: &dyn Fn(&str) -> Option<Cow<'v, str>>) -> BoundKey {
        let mut parts: Vec<KeyPart> = Vec::with_capacity(self.parts.len());
        for (i, part) in self.parts.iter().enumerate() {
            let text = match part {
                Part::Text(text) => Cow::Borrowed(text.as_str()),
                Part::Name(name) => {
                    let escape = self.key_escape(i);
                    let Some(value) = fixed(name) else {
                        parts.push(KeyPart::Name {
                            name: name.clone(),
                            escape,
                        });
                        continue;
                    };
                    let mut text = String::new();
                    push_value(&mut text, &value, escape);
                    Cow::Owned(text)
                }
            };
            match parts.last_mut() {
                Some(KeyPart::Text(before)) => before.push_str(&text),
                _ => parts.push(KeyPart::Text(text.into_owned())),
            }
        }
        BoundKey { parts }
    }
}

impl BoundKey {
    /// The key, as [`Template::render_key`] renders it with the fixed
    /// names' values and `resolve` for the others: the first name
    /// `resolve` returns `None` for fails with
    /// [`TemplateError::Unresolved`].
    pub(crate) fn render<'v>(
        &self,
        resolve: &dyn Fn(&str) -> Option<Cow<'v, str>>,
    ) -> Result<String, TemplateError> {
        // Values are usually short (ids, codes, dates): one guess, so most
        // renderings allocate once.
        let guess: usize = self
            .parts
            .iter()
            .map(|p| match p {
                KeyPart::Text(text) => text.len(),
                KeyPart::Name { .. } => 16,
            })
            .sum();
        let mut out = String::with_capacity(guess);
        for part in &self.parts {
            match part {
                KeyPart::Text(text) => out.push_str(text),
                KeyPart::Name { name, escape } => {
                    let value = resolve(name)
                        .ok_or_else(|| TemplateError::Unresolved { name: name.clone() })?;
                    push_value(&mut out, &value, *escape);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::Template;

    /// Values with the characters that escaping touches.
    fn value() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-c%:\\-é]{0,4}").unwrap()
    }

    /// Quota-key templates over three names with text between them.
    fn template() -> impl Strategy<Value = String> {
        let part = prop_oneof![
            Just("${a}"),
            Just("${b}"),
            Just("${c}"),
            Just("-"),
            Just(":"),
            Just("é"),
            Just("x")
        ];
        proptest::collection::vec(part, 1..7).prop_map(|parts| parts.concat())
    }

    proptest! {
        /// Binding any subset of the names, then rendering the rest, gives
        /// what rendering the whole template gives, or the same error.
        #[test]
        fn a_bound_key_renders_as_the_template(
            source in template(),
            values in proptest::collection::vec(value(), 3),
            fixed in proptest::collection::vec(any::<bool>(), 3),
            known in proptest::collection::vec(any::<bool>(), 3),
        ) {
            let t = Template::parse(&source).unwrap();
            let index = |name: &str| usize::from(name.as_bytes()[0] - b'a');
            // A fixed name always resolves; others only when known.
            let all = |name: &str| {
                let i = index(name);
                (fixed[i] || known[i]).then(|| Cow::Owned(values[i].clone()))
            };
            let bound = t.bind_key(&|name: &str| {
                let i = index(name);
                fixed[i].then(|| Cow::Owned(values[i].clone()))
            });
            let asked_fixed = std::cell::Cell::new(false);
            let got = bound.render(&|name| {
                let i = index(name);
                asked_fixed.set(asked_fixed.get() || fixed[i]);
                known[i].then(|| Cow::Owned(values[i].clone()))
            });
            prop_assert!(!asked_fixed.get(), "a fixed name is not resolved again");
            prop_assert_eq!(got, t.render_key(&all));
        }
    }

    #[test]
    fn fixed_values_are_escaped_as_in_the_whole_key() {
        let t = Template::parse("${campaignCode}-${userId}").unwrap();
        let bound = t.bind_key(&|n| (n == "campaignCode").then_some(Cow::Borrowed("P-X%")));
        assert_eq!(
            bound.render(&|_| Some(Cow::Borrowed("u-1"))).unwrap(),
            "P%2DX%25-u-1"
        );
        // The fixed name before the last one does not make it the last.
        let t = Template::parse("${userId}-${campaignCode}").unwrap();
        let bound = t.bind_key(&|n| (n == "campaignCode").then_some(Cow::Borrowed("C1")));
        assert_eq!(
            bound.render(&|_| Some(Cow::Borrowed("u-1"))).unwrap(),
            "u%2D1-C1"
        );
        let err = bound.render(&|_| None).unwrap_err();
        assert_eq!(
            err.to_string(),
            t.render_key(&|_| None).unwrap_err().to_string()
        );
    }
}
