//! The syntax tree, and its canonical printing.
//!
//! A run of operators of one precedence level (`a + b - c`) is one
//! [`ExprKind::Chain`] node rather than a left-deep tower of binary nodes,
//! so the depth of a tree is bounded by the nesting the parser counts
//! against [`MAX_DEPTH`](super::MAX_DEPTH), never by the length of the
//! formula: evaluating, printing and dropping recurse over that depth only.
//!
//! Printing uses the fewest parentheses that parse back to the same tree:
//! an operand of a chain is parenthesized when its precedence is not higher
//! than the chain's (`(a + b) * c`, `a - (b - c)`, and `(a + b) + c` too:
//! equal in value, but not the same tree, and the tree is what
//! round-trips).

use std::fmt;

use rust_decimal::Decimal;

/// A byte range of the source. `Copy`, unlike `Range<usize>`, so that every
/// node can carry one cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// From the start of `self` to the end of `other`.
    pub(crate) fn to(self, other: Span) -> Span {
        Span::new(self.start, other.end)
    }
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    pub(crate) fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => ADDITIVE,
            BinOp::Mul | BinOp::Div | BinOp::Rem => MULTIPLICATIVE,
        }
    }
}

pub(crate) const ADDITIVE: u8 = 1;
pub(crate) const MULTIPLICATIVE: u8 = 2;
const UNARY: u8 = 3;
const ATOM: u8 = 4;

/// A function taking a list of arguments (`round` has its own node, since
/// its digits are a literal, not an expression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Floor,
    Ceil,
    Abs,
    Min,
    Max,
}

impl Func {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Abs => "abs",
            Func::Min => "min",
            Func::Max => "max",
        }
    }
}

/// A node with the span of the source it was parsed from.
///
/// Equality ignores spans: two trees are the same when they have the same
/// shape and values, whatever spacing produced them.
#[derive(Debug, Clone)]
pub(crate) struct Expr {
    pub(crate) kind: ExprKind,
    pub(crate) span: Span,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

/// The kinds of node. Number literals are never negative: `-2` is `Neg(2)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExprKind {
    Num(Decimal),
    Name(String),
    Neg(Box<Expr>),
    /// `first op₁ e₁ op₂ e₂ …`, evaluated left to right; `rest` is not
    /// empty and its operators share one precedence level.
    Chain(Box<Expr>, Vec<(BinOp, Expr)>),
    Call(Func, Vec<Expr>),
    /// `round(x)` keeps `None` apart from `round(x, 0)` so that printing
    /// gives back what was written.
    Round(Box<Expr>, Option<u32>),
}

impl Expr {
    pub(crate) fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }

    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Chain(_, rest) => rest.first().map_or(ATOM, |(op, _)| op.precedence()),
            ExprKind::Neg(_) => UNARY,
            ExprKind::Num(_) | ExprKind::Name(_) | ExprKind::Call(..) | ExprKind::Round(..) => ATOM,
        }
    }

    /// Calls `visit` with every name, in source order (repeats included).
    pub(crate) fn for_each_name<'a>(&'a self, visit: &mut dyn FnMut(&'a str)) {
        match &self.kind {
            ExprKind::Num(_) => {}
            ExprKind::Name(name) => visit(name),
            ExprKind::Neg(e) | ExprKind::Round(e, _) => e.for_each_name(visit),
            ExprKind::Chain(first, rest) => {
                first.for_each_name(visit);
                for (_, e) in rest {
                    e.for_each_name(visit);
                }
            }
            ExprKind::Call(_, args) => {
                for arg in args {
                    arg.for_each_name(visit);
                }
            }
        }
    }

    fn write_operand(&self, f: &mut fmt::Formatter<'_>, min_precedence: u8) -> fmt::Result {
        if self.precedence() < min_precedence {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Num(n) => write!(f, "{n}"),
            ExprKind::Name(name) => write!(f, "${{{name}}}"),
            ExprKind::Neg(e) => {
                f.write_str("-")?;
                e.write_operand(f, UNARY)
            }
            ExprKind::Chain(first, rest) => {
                let above = self.precedence() + 1;
                first.write_operand(f, above)?;
                for (op, e) in rest {
                    write!(f, " {} ", op.symbol())?;
                    e.write_operand(f, above)?;
                }
                Ok(())
            }
            ExprKind::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                f.write_str(")")
            }
            ExprKind::Round(e, None) => write!(f, "round({e})"),
            ExprKind::Round(e, Some(digits)) => write!(f, "round({e}, {digits})"),
        }
    }
}
