//! Statements both SQL stores run: SQL text with numbered placeholders
//! (`$1`, `$2`, …; PostgreSQL's own form, which sqlx's SQLite driver reads
//! as numbered parameters too) and typed arguments. Each dialect binds an
//! argument in its own column type (a UUID is `uuid` in PostgreSQL and
//! hyphenated `TEXT` in SQLite; a timestamp `timestamptz` or integer
//! microseconds; a decimal `numeric` or its exact text), and reads a row's
//! columns back into the same Rust types ([`SqlRow`]). So the statements,
//! the row mapping and the transaction logic are written once, and no value
//! goes through a type that would lose precision.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::corrupt;
use crate::Result;

/// One argument of a statement, typed as the domain holds it.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(Option<String>),
    I32(i32),
    I64(Option<i64>),
    Uuid(Uuid),
    Time(Option<DateTime<Utc>>),
    Decimal(Decimal),
    /// A JSON document (`jsonb` in PostgreSQL, checked `TEXT` in SQLite).
    Json(Option<String>),
    Bytes(Vec<u8>),
}

/// A JSON document's text, bound or read as the dialect's JSON type.
#[derive(Debug, Clone)]
pub(crate) struct Json<T>(pub T);

macro_rules! arg_from {
    ($($t:ty => |$v:ident| $e:expr;)*) => {
        $(impl From<$t> for Arg {
            fn from($v: $t) -> Arg {
                $e
            }
        })*
    };
}

arg_from! {
    &str => |v| Arg::Text(Some(v.to_owned()));
    String => |v| Arg::Text(Some(v));
    &String => |v| Arg::Text(Some(v.clone()));
    Option<String> => |v| Arg::Text(v);
    &Option<String> => |v| Arg::Text(v.clone());
    Option<&str> => |v| Arg::Text(v.map(str::to_owned));
    i32 => |v| Arg::I32(v);
    i64 => |v| Arg::I64(Some(v));
    Option<i64> => |v| Arg::I64(v);
    Uuid => |v| Arg::Uuid(v);
    DateTime<Utc> => |v| Arg::Time(Some(v));
    Option<DateTime<Utc>> => |v| Arg::Time(v);
    Decimal => |v| Arg::Decimal(v);
    &[u8] => |v| Arg::Bytes(v.to_vec());
    Json<String> => |v| Arg::Json(Some(v.0));
    Json<Option<String>> => |v| Arg::Json(v.0);
}

/// The arguments whose column type is the dialect's choice.
pub(crate) enum Typed<'a> {
    Uuid(Uuid),
    Time(Option<DateTime<Utc>>),
    Decimal(Decimal),
    Json(Option<&'a str>),
}

/// The driver's arguments `args`: text, integers and bytes as both
/// drivers bind them, the [`Typed`] ones through the dialect's `typed`.
pub(crate) fn arguments<'q, A>(
    args: impl IntoIterator<Item = &'q Arg>,
    typed: impl Fn(&mut A, Typed<'q>) -> Result<(), sqlx::error::BoxDynError>,
) -> Result<A, sqlx::Error>
where
    A: sqlx::Arguments<'q> + Default,
    Option<&'q str>: sqlx::Encode<'q, A::Database> + sqlx::Type<A::Database>,
    i32: sqlx::Encode<'q, A::Database> + sqlx::Type<A::Database>,
    Option<i64>: sqlx::Encode<'q, A::Database> + sqlx::Type<A::Database>,
    &'q [u8]: sqlx::Encode<'q, A::Database> + sqlx::Type<A::Database>,
{
    let mut out = A::default();
    for arg in args {
        match arg {
            Arg::Text(v) => out.add(v.as_deref()),
            Arg::I32(v) => out.add(*v),
            Arg::I64(v) => out.add(*v),
            Arg::Bytes(v) => out.add(v.as_slice()),
            Arg::Uuid(v) => typed(&mut out, Typed::Uuid(*v)),
            Arg::Time(v) => typed(&mut out, Typed::Time(*v)),
            Arg::Decimal(v) => typed(&mut out, Typed::Decimal(*v)),
            Arg::Json(v) => typed(&mut out, Typed::Json(v.as_deref())),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(out)
}

/// A statement: its text and its arguments, `$n` being the n-th.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sql {
    text: String,
    args: Vec<Arg>,
}

impl Sql {
    /// A statement whose text already holds its placeholders; bind the
    /// arguments in order with [`bind`](Self::bind).
    pub(crate) fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
        }
    }

    /// Adds the next argument.
    #[must_use]
    pub(crate) fn bind(mut self, arg: impl Into<Arg>) -> Sql {
        self.args.push(arg.into());
        self
    }

    /// Appends text.
    pub(crate) fn push(&mut self, text: &str) -> &mut Sql {
        self.text.push_str(text);
        self
    }

    /// Puts text before the statement (its placeholders keep their
    /// numbers).
    pub(crate) fn prepend(&mut self, text: &str) -> &mut Sql {
        self.text.insert_str(0, text);
        self
    }

    /// Appends the placeholder of a new argument.
    pub(crate) fn push_bind(&mut self, arg: impl Into<Arg>) -> &mut Sql {
        self.args.push(arg.into());
        let n = self.args.len();
        self.text.push('$');
        self.text.push_str(&n.to_string());
        self
    }

    /// Appends `a, b, c`: one placeholder per argument.
    pub(crate) fn push_list<A: Into<Arg>>(
        &mut self,
        args: impl IntoIterator<Item = A>,
    ) -> &mut Sql {
        for (i, arg) in args.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push_bind(arg);
        }
        self
    }

    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The arguments, `$1` first.
    #[cfg(feature = "postgres")]
    pub(crate) fn args(&self) -> &[Arg] {
        &self.args
    }

    /// The statement with anonymous placeholders: each `$n` outside quotes
    /// and comments becomes `?`, and the arguments are listed in the order
    /// the placeholders appear (an argument used twice, twice).
    ///
    /// SQLite looks a numbered parameter up by name, walking every name
    /// of the statement, once when the statement is prepared and once per
    /// argument bound: a statement with hundreds of arguments (a batch of
    /// rows) spends most of its time there. Anonymous parameters have no
    /// name to look up.
    #[cfg(feature = "sqlite")]
    pub(crate) fn anonymous(&self) -> Result<(String, Vec<&Arg>), sqlx::Error> {
        let text = self.text.as_bytes();
        let mut out = String::with_capacity(self.text.len());
        let mut args = Vec::with_capacity(self.args.len());
        let mut quote = None;
        let mut comment = false;
        let mut copied = 0;
        let mut i = 0;
        while i < text.len() {
            let b = text[i];
            i += 1;
            match (quote, comment, b) {
                // A comment ends at the end of its line, a quote at the
                // same quote (a doubled one ends it and opens it again).
                (_, true, b) => comment = b != b'\n',
                (Some(q), _, b) => quote = (b != q).then_some(q),
                (None, _, b'\'' | b'"') => quote = Some(b),
                (None, _, b'-') if text.get(i) == Some(&b'-') => comment = true,
                (None, _, b'$') if text.get(i).is_some_and(u8::is_ascii_digit) => {
                    let start = i;
                    while text.get(i).is_some_and(u8::is_ascii_digit) {
                        i += 1;
                    }
                    let n: usize = self.text[start..i].parse().unwrap_or(0);
                    let arg = n
                        .checked_sub(1)
                        .and_then(|n| self.args.get(n))
                        .ok_or_else(|| {
                            sqlx::Error::Protocol(format!(
                                "placeholder ${n} of a statement with {} arguments",
                                self.args.len()
                            ))
                        })?;
                    out.push_str(&self.text[copied..start - 1]);
                    out.push('?');
                    copied = i;
                    args.push(arg);
                }
                _ => {}
            }
        }
        out.push_str(&self.text[copied..]);
        Ok((out, args))
    }
}

/// A row as each dialect reads it: one typed getter per kind of column, in
/// the dialect's representation. `Ok(None)` is SQL `NULL`; a value that
/// does not decode is a corrupt store.
pub(crate) trait SqlRow: Send + Sync + 'static {
    fn text(&self, column: &str) -> Result<Option<String>>;
    fn i64(&self, column: &str) -> Result<Option<i64>>;
    fn i32(&self, column: &str) -> Result<Option<i32>>;
    fn uuid(&self, column: &str) -> Result<Option<Uuid>>;
    fn time(&self, column: &str) -> Result<Option<DateTime<Utc>>>;
    fn decimal(&self, column: &str) -> Result<Option<Decimal>>;
    fn json(&self, column: &str) -> Result<Option<String>>;
    fn bytes(&self, column: &str) -> Result<Option<Vec<u8>>>;

    /// One column, typed by the caller: `row.col::<Uuid>("id")`.
    fn col<T: Column>(&self, column: &str) -> Result<T>
    where
        Self: Sized,
    {
        T::read(self, column)
    }
}

/// One column of a row; a value of the wrong type is a corrupt store.
pub(crate) fn get<'r, R, T>(row: &'r R, column: &str) -> Result<T>
where
    R: sqlx::Row,
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    T: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    row.try_get(column).map_err(|e| corrupt(column, e))
}

/// The [`SqlRow`] getters of the types both drivers decode natively,
/// written once for every dialect's `impl SqlRow`.
macro_rules! native_getters {
    () => {
        fn text(&self, column: &str) -> $crate::Result<Option<String>> {
            $crate::store::sql::query::get(self, column)
        }

        fn i64(&self, column: &str) -> $crate::Result<Option<i64>> {
            $crate::store::sql::query::get(self, column)
        }

        fn i32(&self, column: &str) -> $crate::Result<Option<i32>> {
            $crate::store::sql::query::get(self, column)
        }

        fn bytes(&self, column: &str) -> $crate::Result<Option<Vec<u8>>> {
            $crate::store::sql::query::get(self, column)
        }
    };
}

pub(crate) use native_getters;

/// A Rust type a column is read into.
pub(crate) trait Column: Sized {
    fn read(row: &impl SqlRow, column: &str) -> Result<Self>;
}

macro_rules! column {
    ($($t:ty => $getter:ident),* $(,)?) => {
        $(
            impl Column for Option<$t> {
                fn read(row: &impl SqlRow, column: &str) -> Result<Self> {
                    row.$getter(column)
                }
            }

            impl Column for $t {
                fn read(row: &impl SqlRow, column: &str) -> Result<Self> {
                    row.$getter(column)?.ok_or_else(|| corrupt(column, "NULL"))
                }
            }
        )*
    };
}

column! {
    String => text,
    i64 => i64,
    i32 => i32,
    Uuid => uuid,
    DateTime<Utc> => time,
    Decimal => decimal,
    Vec<u8> => bytes,
}

impl Column for Json<String> {
    fn read(row: &impl SqlRow, column: &str) -> Result<Self> {
        Ok(Json(
            row.json(column)?.ok_or_else(|| corrupt(column, "NULL"))?,
        ))
    }
}

impl Column for Json<Option<String>> {
    fn read(row: &impl SqlRow, column: &str) -> Result<Self> {
        Ok(Json(row.json(column)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_number_the_arguments_in_order() {
        let mut sql = Sql::new("SELECT 1 FROM t WHERE a = $1").bind("x");
        sql.push(" AND b IN (").push_list([1i64, 2]).push(")");
        assert_eq!(sql.text(), "SELECT 1 FROM t WHERE a = $1 AND b IN ($2, $3)");
        assert_eq!(sql.args.len(), 3);
    }

    #[cfg(feature = "sqlite")]
    fn texts(args: &[&Arg]) -> Vec<String> {
        args.iter()
            .map(|a| match a {
                Arg::Text(Some(t)) => t.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn anonymous_placeholders_list_the_arguments_as_they_appear() {
        let sql = Sql::new(
            "SELECT '$1', \"$2\" FROM t -- $1 here is a comment\n\
             WHERE a = $2 AND b = $1 AND c = $10 AND d = $ AND e = json_extract(x, '$.k')",
        )
        .bind("one")
        .bind("two");
        let mut ten = sql.clone();
        for n in 3..=10 {
            ten = ten.bind(format!("a{n}"));
        }
        let (text, args) = ten.anonymous().unwrap();
        assert_eq!(
            text,
            "SELECT '$1', \"$2\" FROM t -- $1 here is a comment\n\
             WHERE a = ? AND b = ? AND c = ? AND d = $ AND e = json_extract(x, '$.k')"
        );
        assert_eq!(texts(&args), ["two", "one", "a10"]);
        // A placeholder without its argument is an error, not a NULL.
        let e = sql.anonymous().unwrap_err();
        assert!(e.to_string().contains("placeholder $10"), "{e}");
        assert!(Sql::new("SELECT $0").anonymous().is_err());
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn a_quote_doubled_inside_a_string_does_not_end_it() {
        let sql = Sql::new("SELECT 'it''s $1' || $1").bind("x");
        let (text, args) = sql.anonymous().unwrap();
        assert_eq!(text, "SELECT 'it''s $1' || ?");
        assert_eq!(texts(&args), ["x"]);
    }
}
