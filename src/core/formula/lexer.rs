//! Turns the source into tokens, one at a time, so that the first error
//! reported is the first in the source, whichever stage finds it.

use rust_decimal::Decimal;

use super::ast::Span;
use super::error::{Fault, FormulaErrorKind};
use crate::core::template::is_valid_name;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Num(Decimal),
    Name(String),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LParen,
    RParen,
    Comma,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) span: Span,
}

pub(crate) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

/// Continues a number or a word: a number running into one of these
/// (`1e3`, `2x`, `1.2.3`) is one bad number, not two tokens.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

impl<'s> Lexer<'s> {
    pub(crate) fn new(src: &'s str) -> Self {
        Lexer { src, pos: 0 }
    }

    /// The source text of `span`.
    pub(crate) fn text(&self, span: Span) -> &'s str {
        self.src.get(span.start..span.end).unwrap_or("")
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    /// The next token, `None` at the end.
    pub(crate) fn next_token(&mut self) -> Result<Option<Token>, Fault> {
        let rest = &self.src[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else {
            return Ok(None);
        };
        let single = |tok| (tok, start + 1);
        let (tok, end) = match c {
            '+' => single(Tok::Plus),
            '-' => single(Tok::Minus),
            '*' => single(Tok::Star),
            '/' => single(Tok::Slash),
            '%' => single(Tok::Percent),
            '(' => single(Tok::LParen),
            ')' => single(Tok::RParen),
            ',' => single(Tok::Comma),
            '0'..='9' => self.number(start)?,
            '.' if self.byte(start + 1).is_some_and(|b| b.is_ascii_digit()) => {
                self.number(start)?
            }
            '$' if self.byte(start + 1) == Some(b'{') => self.name(start)?,
            'a'..='z' | 'A'..='Z' | '_' => {
                let end = self.word_end(start);
                (Tok::Ident(self.src[start..end].to_owned()), end)
            }
            other => {
                let span = Span::new(start, start + other.len_utf8());
                return Err(Fault::new(
                    FormulaErrorKind::UnexpectedChar { ch: other },
                    span,
                ));
            }
        };
        self.pos = end;
        Ok(Some(Token {
            tok,
            span: Span::new(start, end),
        }))
    }

    fn word_end(&self, start: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut end = start;
        while bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            end += 1;
        }
        end
    }

    /// `digits [ "." digits ] | "." digits`, parsed exactly.
    fn number(&self, start: usize) -> Result<(Tok, usize), Fault> {
        let bytes = self.src.as_bytes();
        let digits = |mut at: usize| {
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            at
        };
        let mut end = digits(start);
        let mut well_formed = true;
        if bytes.get(end) == Some(&b'.') {
            let after_point = digits(end + 1);
            well_formed = after_point > end + 1;
            end = after_point;
        }
        if bytes.get(end).copied().is_some_and(is_word_byte) {
            well_formed = false;
            while bytes.get(end).copied().is_some_and(is_word_byte) {
                end += 1;
            }
        }
        let text = &self.src[start..end];
        let invalid = || {
            Fault::new(
                FormulaErrorKind::InvalidNumber {
                    text: text.to_owned(),
                },
                Span::new(start, end),
            )
        };
        if !well_formed {
            return Err(invalid());
        }
        // `from_str_exact` rather than `from_str`: the latter rounds digits
        // beyond Decimal's precision away without a word. Leading zeros are
        // dropped first because it counts them against that precision.
        Decimal::from_str_exact(&trim_leading_zeros(text))
            .map(|n| (Tok::Num(n), end))
            .map_err(|_| invalid())
    }

    /// `"${" name "}"`: everything up to the next `}` must be a valid name.
    fn name(&self, start: usize) -> Result<(Tok, usize), Fault> {
        let inner = start + 2;
        let Some(close) = self.src[inner..].find('}').map(|i| inner + i) else {
            return Err(Fault::new(
                FormulaErrorKind::UnterminatedName,
                Span::new(start, inner),
            ));
        };
        let name = &self.src[inner..close];
        if !is_valid_name(name) {
            return Err(Fault::new(
                FormulaErrorKind::InvalidName {
                    name: name.to_owned(),
                },
                Span::new(start, close + 1),
            ));
        }
        Ok((Tok::Name(name.to_owned()), close + 1))
    }
}

/// `007.5` → `7.5`, `000` → `0`, `00.5` and `.5` → `0.5`.
fn trim_leading_zeros(text: &str) -> String {
    let trimmed = text.trim_start_matches('0');
    if trimmed.is_empty() || trimmed.starts_with('.') {
        format!("0{trimmed}")
    } else {
        trimmed.to_owned()
    }
}
