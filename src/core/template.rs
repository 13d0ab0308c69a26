//! `${name}` text templating, for quota keys and benefit values that are not
//! formulas.
//!
//! # Syntax
//!
//! ```text
//! template    = { text | placeholder } ;
//! placeholder = "${" name "}" ;
//! name        = ( letter | "_" ) { letter | digit | "_" | "." | "-" } ;   (* 1 to 128 characters *)
//! text        = any characters, except that "${" always opens a placeholder ;
//! ```
//!
//! - A placeholder runs from `${` to the **next** `}`; what lies between must
//!   be a valid name ([`is_valid_name`]), exactly: no surrounding spaces.
//! - A `$` that is not followed by `{` is literal text, so `$${price}`
//!   renders as `$` followed by the price, and `US$ 5` needs no escaping.
//! - There is deliberately **no escape** for a literal `${`. `$${` cannot be
//!   one, because `$${price}` ("a dollar sign, then the price") is the far
//!   likelier intent, and quota keys and benefit values have no need for a
//!   literal `${`. Text therefore never holds `${`, and every template
//!   prints back ([`Display`](fmt::Display)) to a source that parses to the
//!   same template.
//! - A name that the resolver does not know is an error
//!   ([`TemplateError::Unresolved`]), never an empty string: a quota key
//!   missing `${userId}` must not silently become one key shared by everyone.
//!
//! [`is_valid_name`] is the one definition of a name; the formula lexer uses
//! it too, so a name that works in a quota key works in a formula.
//!
//! ```
//! use std::borrow::Cow;
//! use accord::template::Template;
//!
//! let key = Template::parse("${campaignCode}:${userId}:${year}").unwrap();
//! assert_eq!(key.names().collect::<Vec<_>>(), ["campaignCode", "userId", "year"]);
//! let rendered = key
//!     .render(&|name| match name {
//!         "campaignCode" => Some(Cow::Borrowed("SUMMER")),
//!         "userId" => Some(Cow::Borrowed("u-42")),
//!         "year" => Some(Cow::Owned(2025.to_string())),
//!         _ => None,
//!     })
//!     .unwrap();
//! assert_eq!(rendered, "SUMMER:u-42:2025");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::core::error::{Error, ErrorCode};

/// The longest template source accepted, in bytes. Quota keys and benefit
/// values are short; the bound keeps parsing and storage of hostile input
/// cheap.
pub const MAX_TEMPLATE_LEN: usize = 4096;

/// The longest name accepted, in bytes (names are ASCII).
pub const MAX_NAME_LEN: usize = 128;

/// Whether `name` is a valid placeholder name: 1 to [`MAX_NAME_LEN`]
/// characters of `A-Z a-z 0-9 _ . -`, the first a letter or `_`.
///
/// The one definition of a name, shared by templates and formulas.
///
/// ```
/// use accord::template::is_valid_name;
/// assert!(is_valid_name("userId"));
/// assert!(is_valid_name("_item.sku-2"));
/// assert!(!is_valid_name("2fast"));
/// assert!(!is_valid_name("user id"));
/// assert!(!is_valid_name(""));
/// ```
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' => {}
        _ => return false,
    }
    bytes.len() <= MAX_NAME_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Why a template could not be parsed or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `${` with no `}` after it: `"${userId"` (`at` is the byte offset of
    /// the `$`).
    #[error("unterminated `${{` at byte {at}: a placeholder ends with `}}`")]
    Unterminated {
        /// Byte offset of the `$` of the `${`.
        at: usize,
    },
    /// A placeholder with nothing in it: `"key:${}"`.
    #[error("empty placeholder `${{}}` at byte {at}")]
    EmptyName {
        /// Byte offset of the `$` of the `${`.
        at: usize,
    },
    /// A placeholder whose content is not a valid name: `"${user id}"`,
    /// `"${1st}"`.
    #[error(
        "invalid name `{name}` at byte {at}: a name is 1 to 128 characters of \
         A-Z a-z 0-9 _ . -, starting with a letter or _"
    )]
    InvalidName {
        /// The content of the placeholder.
        name: String,
        /// Byte offset of the `$` of the `${`.
        at: usize,
    },
    /// The source is longer than [`MAX_TEMPLATE_LEN`] bytes.
    #[error("the template is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// Length of the source, in bytes.
        len: usize,
        /// [`MAX_TEMPLATE_LEN`].
        max: usize,
    },
    /// At render time, the resolver knew no value for a name: rendering
    /// `"${userId}"` for a request without `userId`.
    #[error("no value for `${{{name}}}`")]
    Unresolved {
        /// The name that had no value.
        name: String,
    },
}

impl TemplateError {
    /// The stable snake_case code: `template_syntax` (unterminated, empty
    /// or invalid name), `template_too_long` or `template_unresolved`.
    pub fn code(&self) -> ErrorCode {
        match self {
            TemplateError::Unterminated { .. }
            | TemplateError::EmptyName { .. }
            | TemplateError::InvalidName { .. } => ErrorCode::TemplateSyntax,
            TemplateError::TooLong { .. } => ErrorCode::TemplateTooLong,
            TemplateError::Unresolved { .. } => ErrorCode::TemplateUnresolved,
        }
    }
}

impl TemplateError {
    /// The byte range of the template text at fault, when there is one:
    /// the placeholder of a syntax error, the part past the limit of a
    /// template too long.
    pub fn span(&self) -> Option<std::ops::Range<usize>> {
        match self {
            TemplateError::Unterminated { at } => Some(*at..*at + 2),
            TemplateError::EmptyName { at } => Some(*at..*at + 3),
            TemplateError::InvalidName { name, at } => Some(*at..*at + name.len() + 3),
            TemplateError::TooLong { len, max } => Some(*max..*len),
            TemplateError::Unresolved { .. } => None,
        }
    }
}

impl From<TemplateError> for Error {
    /// The error of [`TemplateError::code`]: a budget
    /// ([`TemplateError::TooLong`]) is
    /// [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded), any
    /// other fault [`ErrorKind::Validation`](crate::ErrorKind::Validation).
    fn from(err: TemplateError) -> Self {
        Error::new(err.code(), err.to_string())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Name(String),
}

/// A parsed `${name}` template. See the [module docs](self) for the syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    // Unique names in order of first use, kept apart so that `names` needs
    // no allocation per call.
    names: Vec<String>,
}

impl Template {
    /// Parses a template, or says where it is wrong.
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError::TooLong {
                len: source.len(),
                max: MAX_TEMPLATE_LEN,
            });
        }
        let mut parts = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut rest = source;
        let mut offset = 0;
        while let Some(open) = rest.find("${") {
            let at = offset + open;
            let after = &rest[open + 2..];
            let close = after.find('}').ok_or(TemplateError::Unterminated { at })?;
            let name = &after[..close];
            if name.is_empty() {
                return Err(TemplateError::EmptyName { at });
            }
            if !is_valid_name(name) {
                return Err(TemplateError::InvalidName {
                    name: name.to_owned(),
                    at,
                });
            }
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            parts.push(Part::Name(name.to_owned()));
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
            let consumed = open + 2 + close + 1;
            rest = &rest[consumed..];
            offset += consumed;
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template { parts, names })
    }

    /// Every name the template uses, in order of first use, each once.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Whether the template has any `${name}`; one without renders to its
    /// source unchanged.
    pub fn has_placeholders(&self) -> bool {
        !self.names.is_empty()
    }

    /// Substitutes every `${name}` with what `resolve` returns for it.
    ///
    /// `resolve` is called once per placeholder occurrence. The first name
    /// it returns `None` for fails the rendering with
    /// [`TemplateError::Unresolved`].
    pub fn render<'v>(
        &self,
        resolve: &dyn Fn(&str) -> Option<Cow<'v, str>>,
    ) -> Result<String, TemplateError> {
        // Names are usually short values (ids, codes, dates): one guess,
        // so most renderings allocate once.
        let guess: usize = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text(text) => text.len(),
                Part::Name(_) => 16,
            })
            .sum();
        let mut out = String::with_capacity(guess);
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Name(name) => {
                    let value = resolve(name)
                        .ok_or_else(|| TemplateError::Unresolved { name: name.clone() })?;
                    out.push_str(&value);
                }
            }
        }
        Ok(out)
    }
}

impl Template {
    /// Whether two placeholders follow each other with no text between
    /// (`${a}${b}`): such a key cannot tell `a`=`x`,`b`=`yz` from
    /// `a`=`xy`,`b`=`z`, so a quota key may not have them.
    pub fn has_adjacent_placeholders(&self) -> bool {
        self.parts
            .windows(2)
            .any(|w| matches!(w, [Part::Name(_), Part::Name(_)]))
    }

    /// Renders a quota key: like [`render`](Self::render), each substituted
    /// value encoded so that distinct values never give the same key.
    ///
    /// In a value followed by text, `%` and the first character of that
    /// text become `%XX`, one per UTF-8 byte (uppercase hex): with
    /// `${a}-${b}`, `a`=`P-X`, `b`=`u1` gives `P%2DX-u1` and `a`=`P`,
    /// `b`=`X-u1` gives `P-X-u1`. The last placeholder's value is
    /// substituted as is, and so is a value holding neither character.
    ///
    /// The key determines every value provided no two placeholders are
    /// adjacent ([`has_adjacent_placeholders`](Self::has_adjacent_placeholders))
    /// and the text holds no `%` ([`key_text_has_percent`](Self::key_text_has_percent)):
    /// reading the key from the left, a `%` always opens an escape of three
    /// characters, and a value ends at the first other character that
    /// begins the text after it; the last value is what lies before the
    /// fixed end of the template.
    pub fn render_key<'v>(
        &self,
        resolve: &dyn Fn(&str) -> Option<Cow<'v, str>>,
    ) -> Result<String, TemplateError> {
        let mut out = String::with_capacity(64);
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Name(name) => {
                    let value = resolve(name)
                        .ok_or_else(|| TemplateError::Unresolved { name: name.clone() })?;
                    match self.key_escape(i) {
                        Some(next) => push_escaped(&mut out, &value, next),
                        None => out.push_str(&value),
                    }
                }
            }
        }
        Ok(out)
    }

    /// The character that the value of the name at part `i` escapes in a
    /// quota key: the first of the text after it, unless it is the last
    /// name (whose value is substituted as is).
    fn key_escape(&self, i: usize) -> Option<char> {
        let last = !self.parts[i + 1..]
            .iter()
            .any(|p| matches!(p, Part::Name(_)));
        match self.parts.get(i + 1) {
            Some(Part::Text(text)) if !last => text.chars().next(),
            _ => None,
        }
    }

    /// Whether the template's own text holds a `%` (`${a}%${b}`): a quota
    /// key may not, since `%` opens the escapes of
    /// [`render_key`](Self::render_key).
    pub fn key_text_has_percent(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Text(text) if text.contains('%')))
    }
}

/// Appends `value` with every `%` and `special` written `%XX` per UTF-8 byte.
fn push_escaped(out: &mut String, value: &str, special: char) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if !value.contains(['%', special]) {
        out.push_str(value);
        return;
    }
    for c in value.chars() {
        if c == '%' || c == special {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xF)]));
            }
        } else {
            out.push(c);
        }
    }
}

impl FromStr for Template {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Template::parse(s)
    }
}

impl fmt::Display for Template {
    /// The template's source (text never holds `${`, so it parses back to
    /// the same template).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(text) => f.write_str(text)?,
                Part::Name(name) => write!(f, "${{{name}}}")?,
            }
        }
        Ok(())
    }
}

mod bound;
mod pattern;
pub(crate) use bound::BoundKey;
pub use pattern::KeyPattern;

#[cfg(test)]
mod tests;
