//! Evaluation in checked Decimal arithmetic, within a step budget.

use rust_decimal::{Decimal, RoundingStrategy};

use super::ast::{BinOp, Expr, ExprKind, Func, Span};
use super::error::{Fault, FormulaErrorKind};
use super::Lookup;

/// Evaluates `expr`, visiting at most `budget` nodes.
pub(crate) fn eval(
    expr: &Expr,
    resolve: &dyn Fn(&str) -> Lookup,
    budget: usize,
) -> Result<Decimal, Fault> {
    Evaluator {
        resolve,
        budget,
        left: budget,
    }
    .eval(expr)
}

struct Evaluator<'r> {
    resolve: &'r dyn Fn(&str) -> Lookup,
    budget: usize,
    left: usize,
}

fn fault(kind: FormulaErrorKind, span: Span) -> Fault {
    Fault::new(kind, span)
}

impl Evaluator<'_> {
    fn eval(&mut self, expr: &Expr) -> Result<Decimal, Fault> {
        let span = expr.span;
        self.left = self
            .left
            .checked_sub(1)
            .ok_or_else(|| fault(FormulaErrorKind::BudgetExceeded { max: self.budget }, span))?;
        match &expr.kind {
            ExprKind::Num(n) => Ok(*n),
            ExprKind::Name(name) => match (self.resolve)(name) {
                Lookup::Number(n) => Ok(n),
                Lookup::NotANumber(text) => Err(fault(
                    FormulaErrorKind::NotANumber {
                        name: name.clone(),
                        text,
                    },
                    span,
                )),
                Lookup::Missing => Err(fault(
                    FormulaErrorKind::UnknownName { name: name.clone() },
                    span,
                )),
            },
            ExprKind::Neg(e) => Ok(-self.eval(e)?),
            ExprKind::Chain(first, rest) => {
                let mut acc = self.eval(first)?;
                for (op, operand) in rest {
                    let b = self.eval(operand)?;
                    // An overflow points at the chain so far: what overflowed.
                    acc = apply(*op, acc, b, operand.span)?.ok_or_else(|| {
                        fault(FormulaErrorKind::Overflow, first.span.to(operand.span))
                    })?;
                }
                Ok(acc)
            }
            ExprKind::Round(e, digits) => Ok(self.eval(e)?.round_dp_with_strategy(
                digits.unwrap_or(0),
                RoundingStrategy::MidpointAwayFromZero,
            )),
            ExprKind::Call(func, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.eval(arg)?);
                }
                let mut values = values.into_iter();
                let first = values
                    .next()
                    .expect("the parser checks that every call has an argument");
                Ok(match func {
                    // Neither can overflow: a value with a fraction has a
                    // scale of at least 1, so is ten times inside the range.
                    Func::Floor => first.floor(),
                    Func::Ceil => first.ceil(),
                    Func::Abs => first.abs(),
                    // Ties keep the first (`min(1.0, 1)` is `1.0`).
                    Func::Min => values.fold(first, |m, v| if v < m { v } else { m }),
                    Func::Max => values.fold(first, |m, v| if v > m { v } else { m }),
                })
            }
        }
    }
}

/// `a op b`; `Ok(None)` on overflow. Division by zero is reported with the
/// divisor's span, since the divisor is the culprit.
fn apply(op: BinOp, a: Decimal, b: Decimal, divisor: Span) -> Result<Option<Decimal>, Fault> {
    Ok(match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div | BinOp::Rem if b.is_zero() => {
            return Err(fault(FormulaErrorKind::DivisionByZero, divisor))
        }
        BinOp::Div => a.checked_div(b),
        BinOp::Rem => a.checked_rem(b),
    })
}
