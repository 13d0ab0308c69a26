//! The one public error of the formula interpreter, and the private
//! [`Fault`] that each stage (lexer, parser, evaluator) reports: a kind and a
//! span, to which [`FormulaError::new`] adds the source line for the caret.

use std::fmt;
use std::ops::Range;

use super::ast::Span;
use crate::core::error::{Error, ErrorKind};

/// What went wrong with a formula. Each variant's doc shows an input that
/// triggers it; [`FormulaError::code`] groups them into stable codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormulaErrorKind {
    /// A character no token starts with: `2 # 3`, `$x`, `2 × 3`.
    #[error("unexpected character `{ch}`")]
    UnexpectedChar {
        /// The character.
        ch: char,
    },
    /// The formula ends where more is needed: `2 +`, `(1`, `` (empty).
    #[error("unexpected end of the formula; expected {expected}")]
    UnexpectedEnd {
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A token where another was needed: `2 3`, `(1 2)`, `1 + )`.
    #[error("unexpected `{found}`; expected {expected}")]
    UnexpectedToken {
        /// The source text of the token found.
        found: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A call of a function that does not exist: `sqrt(2)`, `Floor(1)`.
    #[error("unknown function `{name}`; the functions are floor, ceil, round, min, max and abs")]
    UnknownFunction {
        /// The name called.
        name: String,
    },
    /// A function called with the wrong number of arguments: `abs(1, 2)`,
    /// `min()`, `round(1, 2, 3)`.
    #[error("`{function}` takes {expected}, not {found}")]
    Arity {
        /// The function.
        function: &'static str,
        /// The accepted counts, in words: `1 argument`, `1 or 2 arguments`.
        expected: &'static str,
        /// How many were given.
        found: usize,
    },
    /// A malformed or out-of-range number: `1.`, `1.2.3`, `1e3`, `2x`,
    /// `100000000000000000000000000000`.
    #[error(
        "invalid number `{text}`; numbers are written like 12, 0.5 or .5 and must fit \
         a 28-digit decimal"
    )]
    InvalidNumber {
        /// The source text of the number.
        text: String,
    },
    /// A `${…}` whose content is not a valid name: `${}`, `${1st}`,
    /// `${ a }` (see [`is_valid_name`](crate::core::template::is_valid_name)).
    #[error(
        "invalid name `{name}`; a name is 1 to 128 characters of A-Z a-z 0-9 _ . -, \
         starting with a letter or _"
    )]
    InvalidName {
        /// The content between `${` and `}`.
        name: String,
    },
    /// A `${` with no `}` after it: `${price * 2`.
    #[error("unterminated `${{`; a name ends with `}}`")]
    UnterminatedName,
    /// A bare word that is not a function call: `price * 2` (meant
    /// `${price} * 2`), `abs 2`.
    #[error("`{name}` is not a function call; write a name as `${{{name}}}`")]
    BareName {
        /// The word.
        name: String,
    },
    /// The digits of `round` are not a whole-number literal from 0 to 28:
    /// `round(1, 29)`, `round(1, 1.5)`, `round(1, ${d})`, `round(1, -1)`.
    #[error("the digits of `round` must be a whole number from 0 to 28, written as a number")]
    InvalidDigits,
    /// The source is longer than [`MAX_FORMULA_LEN`](super::MAX_FORMULA_LEN).
    #[error("the formula is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// Length of the source, in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Parentheses, calls and signs nest deeper than
    /// [`MAX_DEPTH`](super::MAX_DEPTH): `((((…1…))))` 33 deep.
    #[error("the formula nests deeper than {max} levels")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// The resolver has no value for a name: `${nobody} + 1`.
    #[error("no value for `${{{name}}}`")]
    UnknownName {
        /// The name.
        name: String,
    },
    /// The resolver's value for a name is not a number: `${sku} * 2` with
    /// `sku` = `"A-1"`.
    #[error("`${{{name}}}` is `{text}`, not a number")]
    NotANumber {
        /// The name.
        name: String,
        /// The text found for it.
        text: String,
    },
    /// `/` or `%` by zero: `1 / 0`, `${a} % (${b} - ${b})`.
    #[error("division by zero")]
    DivisionByZero,
    /// A result outside Decimal's range (about ±7.9e28):
    /// `79228162514264337593543950335 + 1`.
    #[error("the result is too large for a 28-digit decimal")]
    Overflow,
    /// Evaluation took more than [`MAX_EVAL_STEPS`](super::MAX_EVAL_STEPS)
    /// steps. No formula within [`MAX_FORMULA_LEN`](super::MAX_FORMULA_LEN)
    /// can today; the bound stays as a guard for future functions.
    #[error("evaluating the formula took more than {max} steps")]
    BudgetExceeded {
        /// The limit.
        max: usize,
    },
}

/// A stage's report: what and where, without the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) kind: FormulaErrorKind,
    pub(crate) span: Span,
}

impl Fault {
    pub(crate) fn new(kind: FormulaErrorKind, span: Span) -> Self {
        Fault { kind, span }
    }
}

/// The line of the source that an error points at, ready to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snippet {
    /// 1-based line number; shown only for multi-line sources.
    line_no: Option<usize>,
    /// The line, control characters shown as spaces so that one character
    /// is one column.
    line: String,
    /// Characters before the caret.
    column: usize,
    /// Carets to draw (at least one).
    width: usize,
}

impl Snippet {
    fn new(source: &str, span: Span) -> Option<Snippet> {
        let start = span.start.min(source.len());
        let end = span.end.clamp(start, source.len());
        if !source.is_char_boundary(start) || !source.is_char_boundary(end) {
            return None;
        }
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let line = source[line_start..line_end]
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>();
        let line_no = source
            .contains('\n')
            .then(|| source[..start].matches('\n').count() + 1);
        Some(Snippet {
            line_no,
            line: line.trim_end().to_owned(),
            column: source[line_start..start].chars().count(),
            width: source[start..end.min(line_end)].chars().count().max(1),
        })
    }
}

/// Why a formula could not be parsed or evaluated: a [kind](Self::kind),
/// the [span](Self::span) of the source it concerns, and a rendering that
/// draws a caret under that span:
///
/// ```text
/// formula error:
///     ${price} / (${qty} - 2)
///                ^^^^^^^^^^^^
/// error: division by zero
/// ```
///
/// `kind().to_string()` is the one-line message without the drawing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaError {
    kind: FormulaErrorKind,
    span: Range<usize>,
    snippet: Option<Snippet>,
}

impl FormulaError {
    /// Attaches the source line that the fault points at.
    pub(crate) fn new(fault: Fault, source: &str) -> Self {
        FormulaError {
            snippet: Snippet::new(source, fault.span),
            span: fault.span.start..fault.span.end,
            kind: fault.kind,
        }
    }

    /// A source too long to look at, so without a drawing: its span is the
    /// part past the limit.
    pub(crate) fn too_long(len: usize, max: usize) -> Self {
        FormulaError {
            kind: FormulaErrorKind::TooLong { len, max },
            span: max..len,
            snippet: None,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &FormulaErrorKind {
        &self.kind
    }

    /// The byte range of the source concerned (empty at the end of the
    /// source for [`FormulaErrorKind::UnexpectedEnd`]).
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The stable snake_case code: `formula_syntax` for every lexing and
    /// parsing mistake, `formula_too_long`, `formula_too_deep`,
    /// `formula_unknown_name`, `formula_not_a_number`,
    /// `formula_division_by_zero`, `formula_overflow`,
    /// `formula_budget_exceeded`.
    pub fn code(&self) -> &'static str {
        use FormulaErrorKind as K;
        match self.kind {
            K::UnexpectedChar { .. }
            | K::UnexpectedEnd { .. }
            | K::UnexpectedToken { .. }
            | K::UnknownFunction { .. }
            | K::Arity { .. }
            | K::InvalidNumber { .. }
            | K::InvalidName { .. }
            | K::UnterminatedName
            | K::BareName { .. }
            | K::InvalidDigits => "formula_syntax",
            K::TooLong { .. } => "formula_too_long",
            K::TooDeep { .. } => "formula_too_deep",
            K::UnknownName { .. } => "formula_unknown_name",
            K::NotANumber { .. } => "formula_not_a_number",
            K::DivisionByZero => "formula_division_by_zero",
            K::Overflow => "formula_overflow",
            K::BudgetExceeded { .. } => "formula_budget_exceeded",
        }
    }

    /// Whether this is a size or work budget ([`ErrorKind::LimitExceeded`])
    /// rather than a mistake in the formula or its inputs.
    fn is_limit(&self) -> bool {
        matches!(
            self.kind,
            FormulaErrorKind::TooLong { .. }
                | FormulaErrorKind::TooDeep { .. }
                | FormulaErrorKind::BudgetExceeded { .. }
        )
    }
}

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(s) = &self.snippet else {
            return write!(f, "formula error: {}", self.kind);
        };
        match s.line_no {
            Some(n) => writeln!(f, "formula error at line {n}:")?,
            None => writeln!(f, "formula error:")?,
        }
        writeln!(f, "    {}", s.line)?;
        writeln!(f, "    {}{}", " ".repeat(s.column), "^".repeat(s.width))?;
        write!(f, "error: {}", self.kind)
    }
}

impl std::error::Error for FormulaError {}

impl From<FormulaError> for Error {
    /// [`ErrorKind::LimitExceeded`] for [`TooLong`](FormulaErrorKind::TooLong),
    /// [`TooDeep`](FormulaErrorKind::TooDeep) and
    /// [`BudgetExceeded`](FormulaErrorKind::BudgetExceeded),
    /// [`ErrorKind::Validation`] otherwise; the code is
    /// [`FormulaError::code`] and the message the full rendering, caret
    /// included.
    fn from(err: FormulaError) -> Self {
        let kind = if err.is_limit() {
            ErrorKind::LimitExceeded
        } else {
            ErrorKind::Validation
        };
        Error::new(kind, err.code(), err.to_string())
    }
}
