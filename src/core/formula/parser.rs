//! Recursive descent over the grammar in the module docs.
//!
//! Operator chains (`a + b + c`) are loops that build one
//! [`Chain`](ExprKind::Chain) node, so only nesting recurses:
//! parentheses, call arguments and signs. Each of those counts against
//! [`MAX_DEPTH`] before recursing, so no input, however long, can exhaust
//! the stack here.

use rust_decimal::prelude::ToPrimitive;

use super::ast::{BinOp, Expr, ExprKind, Func, Span};
use super::error::{Fault, FormulaErrorKind};
use super::lexer::{Lexer, Tok, Token};
use super::MAX_DEPTH;

const OPERAND: &str = "a number, a `${name}`, a function call or `(`";
const AFTER_TOP: &str = "an operator or the end of the formula";
const AFTER_GROUP: &str = "an operator or `)`";
const AFTER_ARG: &str = "an operator, `,` or `)`";
const OPEN_ARGS: &str = "`(` after the function name";

/// The largest digits `round` accepts: Decimal's maximum scale.
const MAX_ROUND_DIGITS: u32 = 28;

/// Parses a whole formula. Does not check the length; the caller does.
pub(crate) fn parse(src: &str) -> Result<Expr, Fault> {
    let mut p = Parser {
        lexer: Lexer::new(src),
        peeked: None,
        depth: 0,
        end: src.len(),
    };
    let expr = p.expr()?;
    match p.bump()? {
        None => Ok(expr),
        Some(t) => Err(p.unexpected(&t, AFTER_TOP)),
    }
}

struct Parser<'s> {
    lexer: Lexer<'s>,
    peeked: Option<Token>,
    depth: usize,
    end: usize,
}

impl Parser<'_> {
    fn peek(&mut self) -> Result<Option<&Tok>, Fault> {
        if self.peeked.is_none() {
            self.peeked = self.lexer.next_token()?;
        }
        Ok(self.peeked.as_ref().map(|t| &t.tok))
    }

    fn bump(&mut self) -> Result<Option<Token>, Fault> {
        match self.peeked.take() {
            Some(t) => Ok(Some(t)),
            None => self.lexer.next_token(),
        }
    }

    fn unexpected(&self, found: &Token, expected: &'static str) -> Fault {
        Fault::new(
            FormulaErrorKind::UnexpectedToken {
                found: self.lexer.text(found.span).to_owned(),
                expected,
            },
            found.span,
        )
    }

    fn unexpected_end(&self, expected: &'static str) -> Fault {
        Fault::new(
            FormulaErrorKind::UnexpectedEnd { expected },
            Span::new(self.end, self.end),
        )
    }

    /// Counts one level of nesting opened by the token at `span`.
    fn enter(&mut self, span: Span) -> Result<(), Fault> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Fault::new(
                FormulaErrorKind::TooDeep { max: MAX_DEPTH },
                span,
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// `expr = term { ("+" | "-") term }`
    fn expr(&mut self) -> Result<Expr, Fault> {
        let first = self.term()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek()? {
                Some(Tok::Plus) => BinOp::Add,
                Some(Tok::Minus) => BinOp::Sub,
                _ => return Ok(chain(first, rest)),
            };
            self.bump()?;
            rest.push((op, self.term()?));
        }
    }

    /// `term = unary { ("*" | "/" | "%") unary }`
    fn term(&mut self) -> Result<Expr, Fault> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek()? {
                Some(Tok::Star) => BinOp::Mul,
                Some(Tok::Slash) => BinOp::Div,
                Some(Tok::Percent) => BinOp::Rem,
                _ => return Ok(chain(first, rest)),
            };
            self.bump()?;
            rest.push((op, self.unary()?));
        }
    }

    /// `unary = ("-" | "+") unary | primary`; a unary `+` leaves no node.
    fn unary(&mut self) -> Result<Expr, Fault> {
        let negate = match self.peek()? {
            Some(Tok::Minus) => true,
            Some(Tok::Plus) => false,
            _ => return self.primary(),
        };
        let sign = self.bump()?.expect("peeked a sign").span;
        self.enter(sign)?;
        let operand = self.unary()?;
        self.leave();
        let span = sign.to(operand.span);
        Ok(if negate {
            Expr::new(ExprKind::Neg(Box::new(operand)), span)
        } else {
            Expr { span, ..operand }
        })
    }

    /// `primary = number | name | call | "(" expr ")"`
    fn primary(&mut self) -> Result<Expr, Fault> {
        let Some(token) = self.bump()? else {
            return Err(self.unexpected_end(OPERAND));
        };
        match token.tok {
            Tok::Num(n) => Ok(Expr::new(ExprKind::Num(n), token.span)),
            Tok::Name(name) => Ok(Expr::new(ExprKind::Name(name), token.span)),
            Tok::LParen => {
                self.enter(token.span)?;
                let inner = self.expr()?;
                let close = self.expect_close(AFTER_GROUP)?;
                self.leave();
                Ok(Expr {
                    span: token.span.to(close),
                    ..inner
                })
            }
            Tok::Ident(ref word) => self.call(word, token.span),
            _ => Err(self.unexpected(&token, OPERAND)),
        }
    }

    fn expect_close(&mut self, expected: &'static str) -> Result<Span, Fault> {
        match self.bump()? {
            Some(Token {
                tok: Tok::RParen,
                span,
            }) => Ok(span),
            Some(t) => Err(self.unexpected(&t, expected)),
            None => Err(self.unexpected_end(expected)),
        }
    }

    /// `call = ident "(" [ expr { "," expr } ] ")"`, arity checked here so
    /// that a saved formula is known to be callable.
    fn call(&mut self, word: &str, name_span: Span) -> Result<Expr, Fault> {
        let func = match word {
            "floor" => Some(Func::Floor),
            "ceil" => Some(Func::Ceil),
            "abs" => Some(Func::Abs),
            "min" => Some(Func::Min),
            "max" => Some(Func::Max),
            "round" => None,
            _ if self.peek()? == Some(&Tok::LParen) => {
                return Err(Fault::new(
                    FormulaErrorKind::UnknownFunction {
                        name: word.to_owned(),
                    },
                    name_span,
                ));
            }
            _ => {
                return Err(Fault::new(
                    FormulaErrorKind::BareName {
                        name: word.to_owned(),
                    },
                    name_span,
                ))
            }
        };
        let open = match self.bump()? {
            Some(Token {
                tok: Tok::LParen,
                span,
            }) => span,
            Some(t) => return Err(self.unexpected(&t, OPEN_ARGS)),
            None => return Err(self.unexpected_end(OPEN_ARGS)),
        };
        self.enter(open)?;
        let mut args = Vec::new();
        let close = if self.peek()? == Some(&Tok::RParen) {
            self.expect_close(AFTER_ARG)?
        } else {
            loop {
                args.push(self.expr()?);
                match self.bump()? {
                    Some(Token {
                        tok: Tok::Comma, ..
                    }) => {}
                    Some(Token {
                        tok: Tok::RParen,
                        span,
                    }) => break span,
                    Some(t) => return Err(self.unexpected(&t, AFTER_ARG)),
                    None => return Err(self.unexpected_end(AFTER_ARG)),
                }
            }
        };
        self.leave();
        let span = name_span.to(close);
        let found = args.len();
        let arity = |function, expected| {
            Fault::new(
                FormulaErrorKind::Arity {
                    function,
                    expected,
                    found,
                },
                span,
            )
        };
        match func {
            None => {
                let mut args = args.into_iter();
                match (args.next(), args.next(), args.next()) {
                    (Some(x), None, None) => {
                        Ok(Expr::new(ExprKind::Round(Box::new(x), None), span))
                    }
                    (Some(x), Some(d), None) => {
                        let digits = round_digits(&d)?;
                        Ok(Expr::new(ExprKind::Round(Box::new(x), Some(digits)), span))
                    }
                    _ => Err(arity("round", "1 or 2 arguments")),
                }
            }
            Some(f @ (Func::Min | Func::Max)) if args.is_empty() => {
                Err(arity(f.name(), "at least 1 argument"))
            }
            Some(f @ (Func::Floor | Func::Ceil | Func::Abs)) if args.len() != 1 => {
                Err(arity(f.name(), "1 argument"))
            }
            Some(f) => Ok(Expr::new(ExprKind::Call(f, args), span)),
        }
    }
}

/// `first` alone, or the chain of `first` and `rest`.
fn chain(first: Expr, rest: Vec<(BinOp, Expr)>) -> Expr {
    match rest.last() {
        None => first,
        Some((_, last)) => {
            let span = first.span.to(last.span);
            Expr::new(ExprKind::Chain(Box::new(first), rest), span)
        }
    }
}

/// The digits of `round` are a literal so that a saved formula is known to
/// round sensibly; `2.0` is accepted as 2.
fn round_digits(arg: &Expr) -> Result<u32, Fault> {
    let invalid = || Fault::new(FormulaErrorKind::InvalidDigits, arg.span);
    match &arg.kind {
        ExprKind::Num(n) if n.fract().is_zero() => n
            .to_u32()
            .filter(|d| *d <= MAX_ROUND_DIGITS)
            .ok_or_else(invalid),
        _ => Err(invalid()),
    }
}
