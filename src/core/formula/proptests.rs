//! Property tests: printing round-trips, evaluation agrees with a reference
//! evaluator written directly in Decimal, and no input panics.

use proptest::prelude::*;
use rust_decimal::Decimal;

use super::ast::{BinOp, Expr, ExprKind, Func, Span};
use super::*;

fn small_decimal() -> impl Strategy<Value = Decimal> {
    (0i64..100_000, 0u32..=4).prop_map(|(m, scale)| Decimal::new(m, scale))
}

fn literal() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        4 => small_decimal(),
        1 => (0i64..=i64::MAX, 0u32..=28).prop_map(|(m, scale)| Decimal::new(m, scale)),
        1 => Just(Decimal::MAX),
    ]
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.-]{0,6}"
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

/// Any tree the parser can produce (literals are never negative).
fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        literal().prop_map(|n| node(ExprKind::Num(n))),
        name().prop_map(|n| node(ExprKind::Name(n))),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        let one = prop_oneof![Just(Func::Floor), Just(Func::Ceil), Just(Func::Abs)];
        let many = prop_oneof![Just(Func::Min), Just(Func::Max)];
        prop_oneof![
            inner.clone().prop_map(|e| node(ExprKind::Neg(Box::new(e)))),
            (
                inner.clone(),
                prop::bool::ANY,
                prop::collection::vec((0..3usize, inner.clone()), 1..4)
            )
                .prop_map(|(first, additive, rest)| {
                    // One chain's operators share a precedence level.
                    let ops = if additive {
                        &[BinOp::Add, BinOp::Sub, BinOp::Add][..]
                    } else {
                        &[BinOp::Mul, BinOp::Div, BinOp::Rem][..]
                    };
                    let rest = rest.into_iter().map(|(i, e)| (ops[i], e)).collect();
                    node(ExprKind::Chain(Box::new(first), rest))
                }),
            (one, inner.clone()).prop_map(|(f, e)| node(ExprKind::Call(f, vec![e]))),
            (many, prop::collection::vec(inner.clone(), 1..4))
                .prop_map(|(f, args)| node(ExprKind::Call(f, args))),
            (inner, prop::option::of(0u32..=28))
                .prop_map(|(e, d)| node(ExprKind::Round(Box::new(e), d))),
        ]
    })
}

/// A tree of the reference evaluator, independent of the crate's AST and
/// printed with every parenthesis, so that a printing bug cannot hide a
/// parsing or evaluation bug.
#[derive(Debug, Clone)]
enum Ref {
    Num(Decimal),
    Name(usize),
    Neg(Box<Ref>),
    Bin(char, Box<Ref>, Box<Ref>),
}

const NAMES: [&str; 4] = ["a", "b", "c", "item.price"];

fn ref_tree() -> impl Strategy<Value = Ref> {
    let leaf = prop_oneof![
        3 => small_decimal().prop_map(Ref::Num),
        1 => Just(Ref::Num(Decimal::ZERO)),
        3 => (0..NAMES.len()).prop_map(Ref::Name),
    ];
    leaf.prop_recursive(6, 64, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Ref::Neg(Box::new(e))),
            (
                prop::sample::select(vec!['+', '-', '*', '/']),
                inner.clone(),
                inner
            )
                .prop_map(|(op, l, r)| Ref::Bin(op, Box::new(l), Box::new(r))),
        ]
    })
}

fn ref_source(r: &Ref) -> String {
    match r {
        Ref::Num(n) => n.to_string(),
        Ref::Name(i) => format!("${{{}}}", NAMES[*i]),
        Ref::Neg(e) => format!("-({})", ref_source(e)),
        Ref::Bin(op, l, r) => format!("({}) {op} ({})", ref_source(l), ref_source(r)),
    }
}

/// `None` on division by zero or overflow.
fn ref_eval(r: &Ref, env: &[Decimal; 4]) -> Option<Decimal> {
    match r {
        Ref::Num(n) => Some(*n),
        Ref::Name(i) => Some(env[*i]),
        Ref::Neg(e) => Some(-ref_eval(e, env)?),
        Ref::Bin(op, l, r) => {
            let a = ref_eval(l, env)?;
            let b = ref_eval(r, env)?;
            match op {
                '+' => a.checked_add(b),
                '-' => a.checked_sub(b),
                '*' => a.checked_mul(b),
                _ => a.checked_div(b),
            }
        }
    }
}

fn env_value() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        4 => (-1_000_000i64..1_000_000, 0u32..=6).prop_map(|(m, s)| Decimal::new(m, s)),
        1 => Just(Decimal::ZERO),
        1 => (any::<i64>(), 0u32..=28).prop_map(|(m, s)| Decimal::new(m, s)),
        1 => Just(Decimal::MAX),
        1 => Just(Decimal::MIN),
    ]
}

/// Depth bombs of every nesting construct.
fn bomb() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["(", "-", "+", "abs(", "min(1, ", "round(", "(-"]),
        MAX_DEPTH + 1..600,
    )
        .prop_map(|(open, n)| format!("{}1", open.repeat(n)))
}

proptest! {
    #[test]
    fn printing_round_trips(e in expr()) {
        let printed = e.to_string();
        prop_assume!(printed.len() <= MAX_FORMULA_LEN);
        let f = Formula::parse(&printed)
            .map_err(|err| TestCaseError::fail(format!("{printed:?} does not parse:\n{err}")))?;
        prop_assert_eq!(&f.expr, &e);
        prop_assert_eq!(f.to_string(), printed);
    }

    #[test]
    fn eval_agrees_with_reference(
        tree in ref_tree(),
        env in [env_value(), env_value(), env_value(), env_value()],
    ) {
        let source = ref_source(&tree);
        prop_assume!(source.len() <= MAX_FORMULA_LEN);
        let f = Formula::parse(&source)
            .map_err(|err| TestCaseError::fail(format!("{source:?} does not parse:\n{err}")))?;
        let resolve = |name: &str| {
            NAMES
                .iter()
                .position(|n| *n == name)
                .map_or(Lookup::Missing, |i| Lookup::Number(env[i]))
        };
        let actual = f.eval(&resolve);
        match (ref_eval(&tree, &env), actual) {
            (Some(expected), Ok(actual)) => prop_assert_eq!(actual, expected),
            (None, Err(err)) => prop_assert!(
                matches!(
                    err.kind(),
                    FormulaErrorKind::DivisionByZero | FormulaErrorKind::Overflow
                ),
                "{}", err
            ),
            (expected, actual) => prop_assert!(
                false,
                "{source}: reference {expected:?}, formula {actual:?}"
            ),
        }
    }

    #[test]
    fn parse_never_panics(s in ".*") {
        check_no_panic(&s);
    }

    #[test]
    fn parse_never_panics_on_formula_alphabet(s in "[0-9.${}a-z_()+*/%, \n-]{0,80}") {
        check_no_panic(&s);
    }

    #[test]
    fn depth_bombs_are_too_deep(s in bomb()) {
        let err = if s.len() <= MAX_FORMULA_LEN {
            Formula::parse(&s).map(|_| ()).unwrap_err().kind().clone()
        } else {
            parser::parse(&s).map(|_| ()).unwrap_err().kind
        };
        prop_assert_eq!(err, FormulaErrorKind::TooDeep { max: MAX_DEPTH });
    }
}

/// Whatever the input: no panic, and when it parses, it evaluates (to a
/// value or an error) and prints to something that parses back the same;
/// when it does not, the error renders and its span lies in the input.
fn check_no_panic(s: &str) {
    match Formula::parse(s) {
        Ok(f) => {
            let _ = f.eval(&|name| {
                if name.len() % 2 == 0 {
                    Lookup::Number(Decimal::from(name.len()))
                } else {
                    Lookup::Missing
                }
            });
            // Canonical spacing may make a long formula too long to reparse.
            let printed = f.to_string();
            if printed.len() <= MAX_FORMULA_LEN {
                let again = Formula::parse(&printed).expect("printed formulas parse");
                assert_eq!(again.expr, f.expr);
            }
        }
        Err(e) => {
            let _ = e.to_string();
            let span = e.span();
            assert!(
                span.start <= span.end && span.end <= s.len(),
                "{span:?} for {s:?}"
            );
        }
    }
}
