//! The formula interpreter: benefit values flagged `isFormula` are
//! arithmetic over request values, evaluated exactly in
//! [`Decimal`], never in floating point.
//!
//! ```
//! use accord::formula::{Formula, Lookup};
//! use rust_decimal::Decimal;
//!
//! let f = Formula::parse("floor(${amount} / 3) * 50").unwrap();
//! assert_eq!(f.names().collect::<Vec<_>>(), ["amount"]);
//! let points = f
//!     .eval(&|name| match name {
//!         "amount" => Lookup::parse("7"),
//!         _ => Lookup::Missing,
//!     })
//!     .unwrap();
//! assert_eq!(points, Decimal::from(100));
//! ```
//!
//! # Grammar
//!
//! ```text
//! formula = expr ;
//! expr    = term { ( "+" | "-" ) term } ;                 (* left-associative *)
//! term    = unary { ( "*" | "/" | "%" ) unary } ;         (* left-associative *)
//! unary   = ( "-" | "+" ) unary | primary ;
//! primary = number | name | call | "(" expr ")" ;
//! call    = ( "floor" | "ceil" | "abs" ) "(" expr ")"
//!         | "round" "(" expr [ "," digits ] ")"
//!         | ( "min" | "max" ) "(" expr { "," expr } ")" ;
//! digits  = a number literal, a whole number from 0 to 28 ;
//! number  = digit { digit } [ "." digit { digit } ]
//!         | "." digit { digit } ;
//! name    = "${" name-chars "}" ;   (* as in templates: template::is_valid_name *)
//! ```
//!
//! - **Whitespace** (any Unicode white space) is insignificant between tokens.
//! - **Numbers** are plain decimals: `12`, `0.5` and `.5` are accepted;
//!   `5.`, `1e3`, `1_000` and `2x` are [`InvalidNumber`]. They are parsed
//!   exactly, so one with more than 28 digits after the point, or beyond
//!   Decimal's range (about 7.9e28), is an error rather than silently
//!   rounded. There are no negative literals: `-2` is unary minus on `2`.
//! - **Names** are `${name}`, with the one name rule of
//!   [`template::is_valid_name`](crate::core::template::is_valid_name). A bare word
//!   (`price * 2`) is [`BareName`]. Function names are lower case.
//! - Wrong argument counts ([`Arity`]), unknown functions and a `round`
//!   whose digits are not a literal from 0 to 28 ([`InvalidDigits`]) are
//!   parse errors, so a formula saved with a campaign is known to be
//!   well-formed.
//!
//! # Evaluation
//!
//! - `+ - *` are Decimal's checked operations: a result beyond Decimal's
//!   range is [`Overflow`]; a product whose scale would pass 28 digits is
//!   rounded to fit, as Decimal does.
//! - `/` gives at most 28 significant digits (`1 / 3` is
//!   `0.3333333333333333333333333333`); apply `round` for money.
//! - `%` takes the sign of the dividend: `-7 % 3` is `-1`, `7 % -3` is `1`.
//! - `/` or `%` by zero is [`DivisionByZero`], pointing at the divisor.
//! - `floor` and `ceil` round toward −∞ and +∞; `round(x)` is
//!   `round(x, 0)`, and rounds a midpoint **away from zero**
//!   (`round(2.5)` is `3`, `round(-2.5)` is `-3`, `round(1.005, 2)` is
//!   `1.01`), which is what commerce expects; Decimal holds `1.005`
//!   exactly, so there is no binary-fraction surprise. `round` never adds
//!   trailing zeros (`round(2, 2)` is `2`).
//! - `min` and `max` take one argument or more; on ties the first wins.
//! - Results keep Decimal's scale (`10 * 0.5` is `5.0`); callers normalize
//!   for display if they wish.
//! - A name resolves through the caller's function: [`Lookup::Missing`] is
//!   [`UnknownName`], [`Lookup::NotANumber`] is [`NotANumber`], each
//!   pointing at the `${name}`.
//!
//! # Budgets
//!
//! [`MAX_FORMULA_LEN`] bytes of source, [`MAX_DEPTH`] levels of nesting
//! (parentheses, calls and signs) and [`MAX_EVAL_STEPS`] nodes evaluated
//! bound the work of any input, so parsing and evaluating are safe on
//! hostile formulas (no stack exhaustion, no panic).
//!
//! [`InvalidNumber`]: FormulaErrorKind::InvalidNumber
//! [`BareName`]: FormulaErrorKind::BareName
//! [`Arity`]: FormulaErrorKind::Arity
//! [`InvalidDigits`]: FormulaErrorKind::InvalidDigits
//! [`Overflow`]: FormulaErrorKind::Overflow
//! [`DivisionByZero`]: FormulaErrorKind::DivisionByZero
//! [`UnknownName`]: FormulaErrorKind::UnknownName
//! [`NotANumber`]: FormulaErrorKind::NotANumber

mod ast;
mod error;
mod eval;
mod lexer;
mod parser;

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

pub use error::{FormulaError, FormulaErrorKind};

/// The longest formula source accepted, in bytes.
pub const MAX_FORMULA_LEN: usize = 1024;

/// The deepest nesting accepted: each parenthesis, function call and sign
/// (`-`, `+`) opens one level. `-(1)` is 2 deep; `1 + 2 + 3` is 0 deep,
/// however long.
pub const MAX_DEPTH: usize = 32;

/// The most nodes one evaluation may visit.
pub const MAX_EVAL_STEPS: usize = 10_000;

/// A parsed formula: its source and syntax tree. See the [module
/// docs](self) for the grammar and the arithmetic.
#[derive(Debug, Clone)]
pub struct Formula {
    source: String,
    expr: ast::Expr,
    names: Vec<String>,
}

/// What a name stands for, as told by the caller's resolver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A number.
    Number(Decimal),
    /// A value that is not a number; the text found, for the error message.
    NotANumber(String),
    /// No value under that name.
    Missing,
}

impl Lookup {
    /// A value given as text, read as every NUMBER comparison reads it
    /// ([`wire::parse_decimal`](crate::core::wire::parse_decimal): surrounding
    /// white space ignored, `1.5e3` accepted).
    pub fn parse(text: &str) -> Lookup {
        crate::core::wire::parse_decimal(text)
            .map_or_else(|| Lookup::NotANumber(text.to_owned()), Lookup::Number)
    }
}

impl From<Decimal> for Lookup {
    fn from(n: Decimal) -> Self {
        Lookup::Number(n)
    }
}

impl Formula {
    /// Parses a formula, or says where it is wrong.
    pub fn parse(source: &str) -> Result<Formula, FormulaError> {
        if source.len() > MAX_FORMULA_LEN {
            return Err(FormulaError::too_long(source.len(), MAX_FORMULA_LEN));
        }
        let expr = parser::parse(source).map_err(|f| FormulaError::new(f, source))?;
        let mut names: Vec<String> = Vec::new();
        expr.for_each_name(&mut |name| {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        });
        Ok(Formula {
            source: source.to_owned(),
            expr,
            names,
        })
    }

    /// The source, as given to [`parse`](Self::parse).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every name the formula uses, in source order, each once.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Evaluates the formula, asking `resolve` for each name (once per
    /// occurrence; evaluation stops at the first error).
    pub fn eval(&self, resolve: &dyn Fn(&str) -> Lookup) -> Result<Decimal, FormulaError> {
        eval::eval(&self.expr, resolve, MAX_EVAL_STEPS)
            .map_err(|f| FormulaError::new(f, &self.source))
    }
}

impl Formula {
    /// The error of a part of the formula that fails whatever the input: a
    /// part that reads no name and fails to evaluate (`1 / 0`, an
    /// overflow such as `79228162514264337593543950335 * 10`), or a division
    /// or remainder by such a part that is zero (`${price} / 0`). A formula
    /// with one fails on every request; `None` when there is none.
    pub fn constant_error(&self) -> Option<FormulaError> {
        constant_fault(&self.expr).map(|f| FormulaError::new(f, &self.source))
    }
}

fn constant_fault(expr: &ast::Expr) -> Option<error::Fault> {
    use ast::{BinOp, ExprKind};
    let mut reads_a_name = false;
    expr.for_each_name(&mut |_| reads_a_name = true);
    if !reads_a_name {
        return eval::eval(expr, &|_| Lookup::Missing, MAX_EVAL_STEPS).err();
    }
    match &expr.kind {
        ExprKind::Num(_) | ExprKind::Name(_) => None,
        ExprKind::Neg(e) | ExprKind::Round(e, _) => constant_fault(e),
        ExprKind::Call(_, args) => args.iter().find_map(constant_fault),
        ExprKind::Chain(first, rest) => constant_fault(first).or_else(|| {
            rest.iter().find_map(|(op, operand)| {
                if let Some(fault) = constant_fault(operand) {
                    return Some(fault);
                }
                let divides = matches!(op, BinOp::Div | BinOp::Rem);
                let mut constant = true;
                operand.for_each_name(&mut |_| constant = false);
                let zero = constant
                    && eval::eval(operand, &|_| Lookup::Missing, MAX_EVAL_STEPS)
                        .is_ok_and(|v| v.is_zero());
                (divides && zero).then(|| {
                    error::Fault::new(error::FormulaErrorKind::DivisionByZero, operand.span)
                })
            })
        }),
    }
}

impl FromStr for Formula {
    type Err = FormulaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Formula::parse(s)
    }
}

impl fmt::Display for Formula {
    /// The canonical form: single spaces around binary operators, the
    /// fewest parentheses that keep the tree (`(1 + 2) * 3`,
    /// `1 - (2 - 3)`), numbers as Decimal prints them (`.5` as `0.5`). It
    /// parses back to the same tree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
