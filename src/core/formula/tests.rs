//! Table tests: each case is one line, `(formula, expected)`; `expected` is
//! the result, or the error code then the whole rendered error.

use std::str::FromStr;

use rust_decimal::Decimal;

use super::*;
use crate::core::error::{Error, ErrorKind};

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).expect("test decimals are valid")
}

/// The names every case may use.
fn lookup(name: &str) -> Lookup {
    match name {
        "a" => Lookup::Number(dec("2")),
        "b" => Lookup::Number(dec("3")),
        "c" => Lookup::Number(dec("4")),
        "half" => Lookup::Number(dec("0.5")),
        "neg" => Lookup::Number(dec("-7")),
        "zero" => Lookup::Number(Decimal::ZERO),
        "max" => Lookup::Number(Decimal::MAX),
        "text" => Lookup::parse(" 12.5 "),
        "sku" => Lookup::parse("A-1"),
        _ => Lookup::Missing,
    }
}

fn render(e: &FormulaError) -> String {
    format!("{}\n{e}", e.code())
}

/// Parses and evaluates `input`; also checks that every formula that
/// parses prints to a canonical form that parses back to the same tree
/// and the same result.
fn check(input: &str, expected: &str) {
    let actual = match Formula::parse(input) {
        Err(e) => render(&e),
        Ok(f) => {
            let printed = f.to_string();
            let again = Formula::parse(&printed)
                .unwrap_or_else(|e| panic!("{input:?} printed as {printed:?}: {e}"));
            assert_eq!(again.expr, f.expr, "{input:?} printed as {printed:?}");
            assert_eq!(again.to_string(), printed, "printing is not canonical");
            let result = f.eval(&lookup).map_err(|e| e.kind().clone());
            assert_eq!(again.eval(&lookup).map_err(|e| e.kind().clone()), result);
            match f.eval(&lookup) {
                Ok(n) => n.to_string(),
                Err(e) => render(&e),
            }
        }
    };
    assert_eq!(actual, expected, "\ninput: {input:?}");
}

const ARITHMETIC: &[(&str, &str)] = &[
    // precedence and associativity
    ("1 + 2 * 3", "7"),
    ("(1 + 2) * 3", "9"),
    ("10 - 4 - 3", "3"),
    ("10 - (4 - 3)", "9"),
    ("100 / 10 / 5", "2"),
    ("1 - 2 + 3", "2"),
    ("2 * 3 % 4", "2"),
    ("7 % 4 * 2", "6"),
    ("2 + 12 / 4 - 1", "4"),
    ("${a} + ${b} * ${c}", "14"),
    // unary signs
    ("-2 * 3", "-6"),
    ("-(1 + 2)", "-3"),
    ("--1", "1"),
    ("- -1", "1"),
    ("+1", "1"),
    ("-+-1", "1"),
    ("2 - -3", "5"),
    ("2 * -3", "-6"),
    ("-${neg}", "7"),
    // numbers keep Decimal's scale; division has 28 significant digits
    (".5 + 0.25", "0.75"),
    ("007", "7"),
    ("1.50", "1.50"),
    ("10 * 0.5", "5.0"),
    ("${half} * 3", "1.5"),
    ("1 / 4", "0.25"),
    ("1 / 3", "0.3333333333333333333333333333"),
    ("2 / 3", "0.6666666666666666666666666667"),
    ("0.0000000000000000000000000001", "0.0000000000000000000000000001"),
    ("79228162514264337593543950335", "79228162514264337593543950335"),
    ("${max} - 1", "79228162514264337593543950334"),
    // % takes the sign of the dividend
    ("7 % 3", "1"),
    ("-7 % 3", "-1"),
    ("7 % -3", "1"),
    ("-7 % -3", "-1"),
    ("${neg} % 3", "-1"),
    ("7.5 % 2", "1.5"),
    // functions
    ("floor(2.7)", "2"),
    ("floor(-2.1)", "-3"),
    ("floor(5)", "5"),
    ("ceil(2.1)", "3"),
    ("ceil(-2.7)", "-2"),
    ("abs(-2.5)", "2.5"),
    ("abs(3)", "3"),
    ("round(2.4)", "2"),
    ("round(2.5)", "3"),
    ("round(-2.5)", "-3"),
    ("round(3.5)", "4"),
    ("round(2.5, 0)", "3"),
    ("round(1.005, 2)", "1.01"),
    ("round(-1.005, 2)", "-1.01"),
    ("round(1.2345, 3)", "1.235"),
    ("round(1.2344, 3)", "1.234"),
    ("round(2, 2)", "2"),
    ("round(1 / 3, 4)", "0.3333"),
    ("round(0.125, 28)", "0.125"),
    ("round(2.55, 1.0)", "2.6"),
    ("min(3, 1, 2)", "1"),
    ("max(3, 1, 2)", "3"),
    ("min(5)", "5"),
    ("max(-1, -2)", "-1"),
    ("min(1.0, 1)", "1.0"),
    ("max(1, 1.0)", "1"),
    ("max(0, min(${a} * 10, 15))", "15"),
    ("floor(${half} * 7) * 50", "150"),
    // names: text values are read as NUMBER comparisons read them
    ("${text} * 2", "25.0"),
    ("${x} * 0 + 1", "formula_unknown_name\nformula error:\n    ${x} * 0 + 1\n    ^^^^\nerror: no value for `${x}`"),
    // whitespace, including a no-break space
    (" \t1\n+\r\n2 ", "3"),
    ("1\u{a0}+ 2", "3"),
    // 32 levels is the most
    ("((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))", "1"),
];

#[test]
fn arithmetic() {
    for (input, expected) in ARITHMETIC {
        check(input, expected);
    }
}

const ERRORS: &[(&str, &str)] = &[
    ("2 # 3", "formula_syntax
formula error:
    2 # 3
      ^
error: unexpected character `#`"),
    ("$x", "formula_syntax
formula error:
    $x
    ^
error: unexpected character `$`"),
    ("2 × 3", "formula_syntax
formula error:
    2 × 3
      ^
error: unexpected character `×`"),
    ("2 . 3", "formula_syntax
formula error:
    2 . 3
      ^
error: unexpected character `.`"),
    ("2 +", "formula_syntax
formula error:
    2 +
       ^
error: unexpected end of the formula; expected a number, a `${name}`, a function call or `(`"),
    ("", "formula_syntax
formula error:
    
    ^
error: unexpected end of the formula; expected a number, a `${name}`, a function call or `(`"),
    ("(1", "formula_syntax
formula error:
    (1
      ^
error: unexpected end of the formula; expected an operator or `)`"),
    ("abs", "formula_syntax
formula error:
    abs
       ^
error: unexpected end of the formula; expected `(` after the function name"),
    ("min(1, 2", "formula_syntax
formula error:
    min(1, 2
            ^
error: unexpected end of the formula; expected an operator, `,` or `)`"),
    ("2 3", "formula_syntax
formula error:
    2 3
      ^
error: unexpected `3`; expected an operator or the end of the formula"),
    ("(1 ${a})", "formula_syntax
formula error:
    (1 ${a})
       ^^^^
error: unexpected `${a}`; expected an operator or `)`"),
    ("1 + )", "formula_syntax
formula error:
    1 + )
        ^
error: unexpected `)`; expected a number, a `${name}`, a function call or `(`"),
    ("min(1 2)", "formula_syntax
formula error:
    min(1 2)
          ^
error: unexpected `2`; expected an operator, `,` or `)`"),
    ("floor(1,)", "formula_syntax
formula error:
    floor(1,)
            ^
error: unexpected `)`; expected a number, a `${name}`, a function call or `(`"),
    ("abs 2", "formula_syntax
formula error:
    abs 2
        ^
error: unexpected `2`; expected `(` after the function name"),
    ("1 + sqrt(2)", "formula_syntax
formula error:
    1 + sqrt(2)
        ^^^^
error: unknown function `sqrt`; the functions are floor, ceil, round, min, max and abs"),
    ("Floor(2)", "formula_syntax
formula error:
    Floor(2)
    ^^^^^
error: unknown function `Floor`; the functions are floor, ceil, round, min, max and abs"),
    ("1 + abs(1, 2)", "formula_syntax
formula error:
    1 + abs(1, 2)
        ^^^^^^^^^
error: `abs` takes 1 argument, not 2"),
    ("floor()", "formula_syntax
formula error:
    floor()
    ^^^^^^^
error: `floor` takes 1 argument, not 0"),
    ("min()", "formula_syntax
formula error:
    min()
    ^^^^^
error: `min` takes at least 1 argument, not 0"),
    ("round(1, 2, 3)", "formula_syntax
formula error:
    round(1, 2, 3)
    ^^^^^^^^^^^^^^
error: `round` takes 1 or 2 arguments, not 3"),
    ("1 + 1.", "formula_syntax
formula error:
    1 + 1.
        ^^
error: invalid number `1.`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("1.2.3", "formula_syntax
formula error:
    1.2.3
    ^^^^^
error: invalid number `1.2.3`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("1e3 + 1", "formula_syntax
formula error:
    1e3 + 1
    ^^^
error: invalid number `1e3`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("2x", "formula_syntax
formula error:
    2x
    ^^
error: invalid number `2x`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("79228162514264337593543950336", "formula_syntax
formula error:
    79228162514264337593543950336
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
error: invalid number `79228162514264337593543950336`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("0.00000000000000000000000000001", "formula_syntax
formula error:
    0.00000000000000000000000000001
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
error: invalid number `0.00000000000000000000000000001`; numbers are written like 12, 0.5 or .5 and must fit a 28-digit decimal"),
    ("1 + ${}", "formula_syntax
formula error:
    1 + ${}
        ^^^
error: invalid name ``; a name is 1 to 128 characters of A-Z a-z 0-9 _ . -, starting with a letter or _"),
    ("${ a }", "formula_syntax
formula error:
    ${ a }
    ^^^^^^
error: invalid name ` a `; a name is 1 to 128 characters of A-Z a-z 0-9 _ . -, starting with a letter or _"),
    ("1 + ${price * 2", "formula_syntax
formula error:
    1 + ${price * 2
        ^^
error: unterminated `${`; a name ends with `}`"),
    ("price * 2", "formula_syntax
formula error:
    price * 2
    ^^^^^
error: `price` is not a function call; write a name as `${price}`"),
    ("round(1, 29)", "formula_syntax
formula error:
    round(1, 29)
             ^^
error: the digits of `round` must be a whole number from 0 to 28, written as a number"),
    ("round(1, 1.5)", "formula_syntax
formula error:
    round(1, 1.5)
             ^^^
error: the digits of `round` must be a whole number from 0 to 28, written as a number"),
    ("round(1, -1)", "formula_syntax
formula error:
    round(1, -1)
             ^^
error: the digits of `round` must be a whole number from 0 to 28, written as a number"),
    ("round(1, ${a})", "formula_syntax
formula error:
    round(1, ${a})
             ^^^^
error: the digits of `round` must be a whole number from 0 to 28, written as a number"),
    ("${a} + ${nobody}", "formula_unknown_name
formula error:
    ${a} + ${nobody}
           ^^^^^^^^^
error: no value for `${nobody}`"),
    ("${sku} * 2", "formula_not_a_number
formula error:
    ${sku} * 2
    ^^^^^^
error: `${sku}` is `A-1`, not a number"),
    ("${a} / (${b} - ${b})", "formula_division_by_zero
formula error:
    ${a} / (${b} - ${b})
           ^^^^^^^^^^^^^
error: division by zero"),
    ("5 % ${zero}", "formula_division_by_zero
formula error:
    5 % ${zero}
        ^^^^^^^
error: division by zero"),
    ("1 + ${max} * 2", "formula_overflow
formula error:
    1 + ${max} * 2
        ^^^^^^^^^^
error: the result is too large for a 28-digit decimal"),
    ("-${max} - 1", "formula_overflow
formula error:
    -${max} - 1
    ^^^^^^^^^^^
error: the result is too large for a 28-digit decimal"),
    ("${max} / 0.1", "formula_overflow
formula error:
    ${max} / 0.1
    ^^^^^^^^^^^^
error: the result is too large for a 28-digit decimal"),
    // multi-line sources name the line; control characters show as spaces
    ("1 +\n  2 / 0", "formula_division_by_zero
formula error at line 2:
      2 / 0
          ^
error: division by zero"),
    ("1 +\t#", "formula_syntax
formula error:
    1 + #
        ^
error: unexpected character `#`"),
    // the first error in the source wins, whichever stage finds it
    ("1 + ) #", "formula_syntax
formula error:
    1 + ) #
        ^
error: unexpected `)`; expected a number, a `${name}`, a function call or `(`"),
];

#[test]
fn errors() {
    for (input, expected) in ERRORS {
        check(input, expected);
    }
}

#[test]
fn budgets() {
    let deep = format!(
        "{}1{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    check(
        &deep,
        &format!(
            "formula_too_deep\nformula error:\n    {deep}\n    {}^\nerror: the formula nests deeper than 32 levels",
            " ".repeat(MAX_DEPTH)
        ),
    );
    let signs = format!("{}1", "-".repeat(MAX_DEPTH + 1));
    check(
        &signs,
        &format!(
            "formula_too_deep\nformula error:\n    {signs}\n    {}^\nerror: the formula nests deeper than 32 levels",
            " ".repeat(MAX_DEPTH)
        ),
    );
    check(
        &"1".repeat(MAX_FORMULA_LEN + 1),
        "formula_too_long\nformula error: the formula is 1025 bytes long; at most 1024 are allowed",
    );
    let err = Formula::parse(&"(".repeat(100_000)).unwrap_err();
    assert_eq!(err.span(), MAX_FORMULA_LEN..100_000);
    // Without the length check the parser still stops at the depth bound.
    let bomb = "(".repeat(100_000);
    let fault = parser::parse(&bomb).unwrap_err();
    assert_eq!(fault.kind, FormulaErrorKind::TooDeep { max: MAX_DEPTH });
    let bomb = "abs(-".repeat(50_000);
    let fault = parser::parse(&bomb).unwrap_err();
    assert_eq!(fault.kind, FormulaErrorKind::TooDeep { max: MAX_DEPTH });
}

#[test]
fn step_budget() {
    let src = "1 + 2 * 3";
    let f = Formula::parse(src).unwrap();
    assert_eq!(eval::eval(&f.expr, &lookup, 5), Ok(dec("7")));
    let fault = eval::eval(&f.expr, &lookup, 4).unwrap_err();
    let err = FormulaError::new(fault, src);
    assert_eq!(
        render(&err),
        "formula_budget_exceeded\nformula error:\n    1 + 2 * 3\n            ^\nerror: evaluating the formula took more than 4 steps"
    );
}

#[test]
fn longest_chain_evaluates_prints_and_drops() {
    // Chains are loops in the parser but a left-deep tree: the longest one
    // the length allows must not trouble the recursive evaluator or printer.
    let src = vec!["1"; MAX_FORMULA_LEN / 2].join("+");
    assert!(src.len() <= MAX_FORMULA_LEN);
    let f = Formula::parse(&src).unwrap();
    assert_eq!(
        f.eval(&lookup).ok(),
        Some(Decimal::from(MAX_FORMULA_LEN / 2))
    );
    assert_eq!(f.to_string().replace(" + ", "+"), src);
}

#[test]
fn canonical_printing() {
    let cases: &[(&str, &str)] = &[
        ("1+2*3", "1 + 2 * 3"),
        ("(1+2)*3", "(1 + 2) * 3"),
        ("1-(2-3)", "1 - (2 - 3)"),
        ("1-2-3", "1 - 2 - 3"),
        // a chain is one node, so grouping its start is another tree
        ("(1-2)-3", "(1 - 2) - 3"),
        ("1+(2+3)", "1 + (2 + 3)"),
        ("2*(3*4)", "2 * (3 * 4)"),
        ("2*(3/4)", "2 * (3 / 4)"),
        ("(2*3)%4", "(2 * 3) % 4"),
        ("2*3%4/5", "2 * 3 % 4 / 5"),
        ("1*2+3*4-5", "1 * 2 + 3 * 4 - 5"),
        ("-(1)", "-1"),
        ("-(-1)", "--1"),
        ("-(1+2)", "-(1 + 2)"),
        ("-(2*3)", "-(2 * 3)"),
        ("(-2)*3", "-2 * 3"),
        ("2*-3", "2 * -3"),
        ("1 - -1", "1 - -1"),
        ("+5", "5"),
        ("((${a}))", "${a}"),
        (".5", "0.5"),
        ("007.50", "7.50"),
        ("round( ${a} ,2 )", "round(${a}, 2)"),
        ("round(1, 2.0)", "round(1, 2)"),
        ("round((1))", "round(1)"),
        ("min(1,2 , 3)", "min(1, 2, 3)"),
        ("abs(-(1+2)*3)", "abs(-(1 + 2) * 3)"),
    ];
    for (input, expected) in cases {
        let f = Formula::parse(input).unwrap();
        assert_eq!(f.to_string(), *expected, "input: {input:?}");
        assert_eq!(f.source(), *input);
    }
}

#[test]
fn names_in_order_once() {
    let f = Formula::parse("${b} * min(${a}, ${b}) + round(${c.d-e}, 2) - ${a}").unwrap();
    assert_eq!(f.names().collect::<Vec<_>>(), ["b", "a", "c.d-e"]);
    assert_eq!(Formula::parse("1 + 2").unwrap().names().count(), 0);
}

#[test]
fn lookup_parse() {
    assert_eq!(Lookup::parse(" 1.5e3 "), Lookup::Number(dec("1500")));
    assert_eq!(Lookup::parse("x"), Lookup::NotANumber("x".to_owned()));
    assert_eq!(Lookup::from(Decimal::ONE), Lookup::Number(Decimal::ONE));
}

#[test]
fn into_crate_error() {
    let cases: &[(&str, ErrorKind, &str)] = &[
        ("1 +", ErrorKind::Validation, "formula_syntax"),
        ("1 / 0", ErrorKind::Validation, "formula_division_by_zero"),
        ("${nobody}", ErrorKind::Validation, "formula_unknown_name"),
        (
            "--------------------------------------1",
            ErrorKind::LimitExceeded,
            "formula_too_deep",
        ),
    ];
    for (input, kind, code) in cases {
        let err = Formula::parse(input).and_then(|f| f.eval(&lookup).map(|_| f));
        let err: Error = err.unwrap_err().into();
        assert_eq!((err.kind(), err.code()), (*kind, *code), "input: {input:?}");
    }
    let long: Error = Formula::parse(&" ".repeat(2000)).unwrap_err().into();
    assert_eq!(long.kind(), ErrorKind::LimitExceeded);
    let zero: Error = Formula::parse("1 / 0")
        .unwrap()
        .eval(&lookup)
        .unwrap_err()
        .into();
    assert_eq!(
        zero.message(),
        "formula error:\n    1 / 0\n        ^\nerror: division by zero"
    );
}

#[test]
fn constant_errors_are_found_before_any_input() {
    let err = |s: &str| {
        Formula::parse(s)
            .unwrap()
            .constant_error()
            .map(|e| e.code())
    };
    assert_eq!(err("1 / 0"), Some("formula_division_by_zero"));
    assert_eq!(err("${price} + 1 / 0"), Some("formula_division_by_zero"));
    assert_eq!(err("${price} / (2 - 2)"), Some("formula_division_by_zero"));
    assert_eq!(err("${price} % 0"), Some("formula_division_by_zero"));
    assert_eq!(
        err("floor(${price}) + 79228162514264337593543950335 * 10"),
        Some("formula_overflow")
    );
    assert_eq!(err("${price} / 2"), None);
    assert_eq!(err("${price} / ${amount}"), None);
    assert_eq!(err("1 + 2"), None);
}
