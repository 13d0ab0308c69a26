//! A search or redeem request, prepared once for evaluation.
//!
//! Preparing resolves each custom attribute to a [`Field`] (or a collection of
//! them) and each cart item's fields, so conditions never look at JSON and
//! each value's decimal form is parsed at most once per request.

use serde_json::Value;
use std::borrow::Cow;
use std::cell::RefCell;

use super::plan::{InputRef, Symbols};
use serde_json::Map;

use crate::core::campaign::{Cart, CartItem, RedeemRequest, SearchRequest};
use crate::core::condition::{Field, Input};
use crate::core::error::ErrorCode;
use crate::core::limits::{
    MAX_ATTRIBUTES, MAX_ATTRIBUTE_ARRAY_LEN, MAX_CART_ITEMS, MAX_REQUEST_STRING_LEN,
    MAX_TAGS_PER_ITEM,
};
use crate::core::wire::Scalar;
use crate::{Error, FieldError, Result};

/// A custom attribute as conditions see it.
#[derive(Debug, Clone)]
pub(crate) enum Attr<'r> {
    One(Field<'r>),
    Many(Vec<Field<'r>>),
    /// `null` or an object: present in JSON, but not comparable.
    Missing,
}

impl<'r> Attr<'r> {
    fn from_json(v: &'r Value) -> Attr<'r> {
        match v {
            Value::Array(xs) => {
                Attr::Many(xs.iter().filter_map(scalar_cow).map(Field::new).collect())
            }
            other => scalar_cow(other).map_or(Attr::Missing, |t| Attr::One(Field::new(t))),
        }
    }

    fn input(&self) -> Input<'_> {
        match self {
            Attr::One(f) => Input::One(f),
            Attr::Many(fs) => Input::Many(fs),
            Attr::Missing => Input::Missing,
        }
    }
}

/// The text of a JSON scalar, borrowed when it is a string; numbers and
/// booleans in JSON form.
fn scalar_cow(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s)),
        // A number keeps the text it was read from (arbitrary precision).
        Value::Number(n) => Some(Cow::Borrowed(n.as_str())),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// One cart item, prepared.
#[derive(Debug, Clone, Default)]
pub(crate) struct Item<'r> {
    pub(crate) name: Option<Field<'r>>,
    pub(crate) sku: Option<Field<'r>>,
    pub(crate) amount: Option<Field<'r>>,
    pub(crate) price: Option<Field<'r>>,
    pub(crate) tags: Vec<Field<'r>>,
}

impl<'r> Item<'r> {
    fn new(item: &'r CartItem) -> Item<'r> {
        let field = |s: &'r Option<Scalar>| s.as_ref().map(|s| Field::new(s.as_text()));
        Item {
            name: item.name.as_deref().map(Field::new),
            sku: field(&item.sku),
            amount: field(&item.amount),
            price: field(&item.price),
            tags: item.tags.iter().map(|t| Field::new(t.as_str())).collect(),
        }
    }

    /// The item's value of a name, for benefit placeholders.
    pub(crate) fn lookup(&self, name: &str) -> Option<&str> {
        let f = match name {
            "sku" => &self.sku,
            "amount" => &self.amount,
            "price" => &self.price,
            "name" => &self.name,
            _ => return None,
        };
        f.as_ref().map(Field::text)
    }
}

/// The parts of a search or redeem request that the engine reads,
/// borrowed: a redeem request is evaluated in place, never copied into a
/// search request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestView<'r> {
    pub(crate) name: Option<&'r str>,
    pub(crate) channel: Option<&'r str>,
    pub(crate) attribute: &'r Map<String, Value>,
    pub(crate) cart: &'r Cart,
}

impl<'r> From<&'r SearchRequest> for RequestView<'r> {
    fn from(r: &'r SearchRequest) -> Self {
        RequestView {
            name: r.name.as_deref(),
            channel: r.channel.as_deref(),
            attribute: &r.attribute,
            cart: &r.cart,
        }
    }
}

impl<'r> From<&'r RedeemRequest> for RequestView<'r> {
    fn from(r: &'r RedeemRequest) -> Self {
        RequestView {
            name: None,
            channel: r.channel.as_deref(),
            attribute: &r.attribute,
            cart: &r.cart,
        }
    }
}

/// A request, prepared for evaluation against one snapshot.
#[derive(Debug)]
pub struct Prepared<'r> {
    pub(crate) request: RequestView<'r>,
    /// Custom attributes by slot of the snapshot's symbols; names no
    /// condition reads are not prepared at all.
    attrs: Vec<Attr<'r>>,
    total_price: Option<Field<'r>>,
    currency: Option<Field<'r>>,
    channel: Option<Field<'r>>,
    pub(crate) items: Vec<Item<'r>>,
    /// Attributes read by name (placeholders, quota keys), each looked up
    /// in the request's map once: every hit's quota key reads `userId`.
    named: RefCell<Vec<Named<'r>>>,
}

/// An attribute's name, and its text (`None`: not a scalar).
type Named<'r> = (&'r str, Option<Cow<'r, str>>);

/// Most attribute names [`Prepared::attribute_text`] remembers; further
/// ones are looked up in the request every time.
const NAMED: usize = 8;

impl<'r> Prepared<'r> {
    /// Prepares a request; fails when it exceeds a request limit.
    pub(crate) fn new(request: RequestView<'r>, symbols: &Symbols) -> Result<Prepared<'r>> {
        check_request(request, true)?;
        Ok(Prepared::checked(request, symbols))
    }

    /// Prepares a request already checked against the request limits
    /// ([`check_request`]; a redeem's at its parse).
    pub(crate) fn checked(request: RequestView<'r>, symbols: &Symbols) -> Prepared<'r> {
        let cart = request.cart;
        let mut attrs = vec![Attr::Missing; symbols.len()];
        for (name, value) in request.attribute {
            if let Some(slot) = symbols.get(name) {
                attrs[slot as usize] = Attr::from_json(value);
            }
        }
        Prepared {
            request,
            attrs,
            total_price: cart.total_price.as_ref().map(|s| Field::new(s.as_text())),
            currency: cart.currency.as_ref().map(|s| Field::new(s.as_text())),
            channel: request.channel.map(Field::new),
            items: cart.items.iter().map(Item::new).collect(),
            named: RefCell::new(Vec::new()),
        }
    }

    /// The input of a request-level condition.
    pub(crate) fn input(&self, input: InputRef) -> Input<'_> {
        match input {
            InputRef::TotalPrice => self.total_price.as_ref().map_or(Input::Missing, Input::One),
            InputRef::Currency => self.currency.as_ref().map_or(Input::Missing, Input::One),
            InputRef::Slot(slot) => self
                .attrs
                .get(slot as usize)
                .map_or(Input::Missing, Attr::input),
            // Item inputs are read through `item_input`.
            InputRef::Sku | InputRef::Amount | InputRef::Price | InputRef::Tags => Input::Missing,
        }
    }

    /// The custom attribute of a slot.
    pub(crate) fn attr(&self, slot: u32) -> &Attr<'r> {
        self.attrs.get(slot as usize).unwrap_or(&Attr::Missing)
    }

    /// The request's channel.
    pub(crate) fn channel(&self) -> Option<&Field<'r>> {
        self.channel.as_ref()
    }

    /// Calls `f` with every value of `input`: a request-level input's value
    /// (each element of an array attribute), or an item input's value on
    /// each item (each tag of each item).
    pub(crate) fn each_value(&self, input: InputRef, mut f: impl FnMut(&Field<'_>)) {
        let mut of = |input: Input<'_>| match input {
            Input::One(v) => f(v),
            Input::Many(vs) => vs.iter().for_each(&mut f),
            Input::Missing => {}
        };
        if input.is_item() {
            for item in &self.items {
                of(item_input(item, input));
            }
        } else {
            of(self.input(input));
        }
    }

    /// Every value the index looks up: each custom attribute value, each
    /// item's sku and each of its tags.
    pub(crate) fn indexed_values(&self) -> impl Iterator<Item = (InputRef, &Field<'r>)> + '_ {
        let attrs = self.attrs.iter().enumerate().flat_map(|(slot, attr)| {
            let slot = InputRef::Slot(u32::try_from(slot).expect("slots fit u32"));
            let fields: &[Field<'r>] = match attr {
                Attr::One(f) => std::slice::from_ref(f),
                Attr::Many(fs) => fs,
                Attr::Missing => &[],
            };
            fields.iter().map(move |f| (slot, f))
        });
        let items = self.items.iter().flat_map(|item| {
            item.sku
                .iter()
                .map(|f| (InputRef::Sku, f))
                .chain(item.tags.iter().map(|f| (InputRef::Tags, f)))
        });
        attrs.chain(items)
    }

    /// The request's attribute value as text, for placeholders.
    pub(crate) fn attribute_text(&self, name: &str) -> Option<Cow<'r, str>> {
        if let Some((_, text)) = self.named.borrow().iter().find(|(n, _)| *n == name) {
            return text.clone();
        }
        let (key, value) = self.request.attribute.get_key_value(name)?;
        let text = scalar_cow(value);
        let mut named = self.named.borrow_mut();
        if named.len() < NAMED {
            named.push((key.as_str(), text.clone()));
        }
        text
    }

    /// The cart's value of a name, for placeholders.
    pub(crate) fn cart_text(&self, name: &str) -> Option<&str> {
        match name {
            "totalPrice" => self.total_price.as_ref().map(Field::text),
            "currency" => self.currency.as_ref().map(Field::text),
            _ => None,
        }
    }
}

/// The input of an item condition on one item.
pub(crate) fn item_input<'a>(item: &'a Item<'_>, input: InputRef) -> Input<'a> {
    fn opt<'a>(f: Option<&'a Field<'_>>) -> Input<'a> {
        f.map_or(Input::Missing, Input::One)
    }
    match input {
        InputRef::Sku => opt(item.sku.as_ref()),
        InputRef::Amount => opt(item.amount.as_ref()),
        InputRef::Price => opt(item.price.as_ref()),
        InputRef::Tags => Input::Many(&item.tags),
        InputRef::TotalPrice | InputRef::Currency | InputRef::Slot(_) => Input::Missing,
    }
}

/// A request over a size limit: 413 `request_too_large`, naming the field.
fn too_large(field: impl Into<String>, code: ErrorCode, what: &str, limit: usize) -> Error {
    let message = format!("{what} exceeds the limit of {limit}");
    Error::new(ErrorCode::RequestTooLarge, message.clone())
        .with_fields(vec![FieldError::new(field, code, message)])
}

/// Checks the request limits of [`crate::core::limits`], and that no text holds
/// the NUL character (see [`crate::core::wire::find_nul`]): quota keys and
/// redemptions are built from request text.
pub fn check_limits(request: &SearchRequest) -> Result<()> {
    check_request(request.into(), true)
}

/// [`check_limits`] on a borrowed request; `nul`: also look for NUL (a
/// redeem's parse has looked already, in every field of the request).
pub(crate) fn check_request(request: RequestView<'_>, nul: bool) -> Result<()> {
    check_sizes(request)?;
    let mut problems = crate::core::error::Problems::new();
    if nul {
        nul_problems(request, &mut problems);
    }
    check_numbers(request, &mut problems);
    if let Some(Value::String(user)) = request.attribute.get("userId") {
        if user.len() > crate::core::limits::MAX_USER_ID_LEN {
            problems.push(
                "attribute.userId",
                ErrorCode::TooLong,
                format!(
                    "userId is at most {} bytes long",
                    crate::core::limits::MAX_USER_ID_LEN
                ),
            );
        }
    }
    problems.into_result()
}

fn nul_problems(request: RequestView<'_>, problems: &mut crate::core::error::Problems) {
    for (name, value) in request.attribute {
        // Paths are built only for a value that has a NUL.
        if !name.contains('\0') && !crate::core::wire::contains_nul(value) {
            continue;
        }
        let path = format!("attribute.{name}");
        if name.contains('\0') {
            problems.push(
                path.clone(),
                ErrorCode::InvalidText,
                "names must not contain the NUL character (U+0000)",
            );
        }
        crate::core::wire::find_nul(value, &path, problems);
    }
    let text = |s: Option<&str>| s.is_some_and(|s| s.contains('\0'));
    let cart = request.cart;
    let scalar = |s: &Option<Scalar>| matches!(s, Some(Scalar::Text(t)) if t.contains('\0'));
    for (field, bad) in [
        ("channel", text(request.channel)),
        ("name", text(request.name)),
        ("cart.currency", scalar(&cart.currency)),
        ("cart.totalPrice", scalar(&cart.total_price)),
    ] {
        if bad {
            problems.push(
                field,
                ErrorCode::InvalidText,
                "text must not contain the NUL character (U+0000)",
            );
        }
    }
    for (i, item) in cart.items.iter().enumerate() {
        if text(item.name.as_deref())
            || scalar(&item.sku)
            || scalar(&item.amount)
            || scalar(&item.price)
            || item.tags.iter().any(|t| t.contains('\0'))
        {
            problems.push(
                format!("cart.items[{i}]"),
                ErrorCode::InvalidText,
                "text must not contain the NUL character (U+0000)",
            );
        }
    }
}

/// Every JSON number a condition or a quota could read must be an exact
/// `Decimal`: one beyond its range or precision is refused (422
/// `invalid_number` at the field), never rounded. Numbers nested in an
/// object attribute are never compared and are not checked.
fn check_numbers(request: RequestView<'_>, problems: &mut crate::core::error::Problems) {
    let mut check = |field: &dyn Fn() -> String, n: &serde_json::Number| {
        if !crate::core::wire::is_exact_json_number(n.as_str()) {
            let message = crate::core::wire::decimal_number::not_exact(&Scalar::Number(n.clone()));
            problems.push(field(), ErrorCode::InvalidNumber, message);
        }
    };
    for (name, value) in request.attribute {
        match value {
            Value::Number(n) => check(&|| format!("attribute.{name}"), n),
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    if let Value::Number(n) = x {
                        check(&|| format!("attribute.{name}[{i}]"), n);
                    }
                }
            }
            _ => {}
        }
    }
    let cart = request.cart;
    for (field, value) in [
        ("cart.totalPrice", &cart.total_price),
        ("cart.currency", &cart.currency),
    ] {
        if let Some(Scalar::Number(n)) = value {
            check(&|| field.to_owned(), n);
        }
    }
    for (i, item) in cart.items.iter().enumerate() {
        for (field, value) in [
            ("sku", &item.sku),
            ("amount", &item.amount),
            ("price", &item.price),
        ] {
            if let Some(Scalar::Number(n)) = value {
                check(&|| format!("cart.items[{i}].{field}"), n);
            }
        }
    }
}

const MANY: ErrorCode = ErrorCode::TooMany;
const LONG: ErrorCode = ErrorCode::TooLong;

fn long(s: &str) -> bool {
    s.len() > MAX_REQUEST_STRING_LEN
}

fn check_sizes(request: RequestView<'_>) -> Result<()> {
    check_attribute_sizes(request.attribute)?;
    check_cart_sizes(request.cart)?;
    for (field, value) in [("channel", request.channel), ("name", request.name)] {
        if value.is_some_and(long) {
            return Err(too_large(
                field,
                LONG,
                &format!("the length of {field}"),
                MAX_REQUEST_STRING_LEN,
            ));
        }
    }
    Ok(())
}

fn check_attribute_sizes(attribute: &serde_json::Map<String, Value>) -> Result<()> {
    if attribute.len() > MAX_ATTRIBUTES {
        return Err(too_large(
            "attribute",
            MANY,
            "the number of attributes",
            MAX_ATTRIBUTES,
        ));
    }
    for (name, value) in attribute {
        if long(name) {
            return Err(too_large(
                "attribute",
                LONG,
                "the length of an attribute name",
                MAX_REQUEST_STRING_LEN,
            ));
        }
        let field = || format!("attribute.{name}");
        match value {
            Value::String(s) if long(s) => {
                return Err(too_large(
                    field(),
                    LONG,
                    &format!("the length of attribute {name:?}"),
                    MAX_REQUEST_STRING_LEN,
                ))
            }
            Value::Array(xs) => {
                if xs.len() > MAX_ATTRIBUTE_ARRAY_LEN {
                    return Err(too_large(
                        field(),
                        MANY,
                        &format!("the length of array attribute {name:?}"),
                        MAX_ATTRIBUTE_ARRAY_LEN,
                    ));
                }
                if let Some(i) = xs
                    .iter()
                    .position(|x| matches!(x, Value::String(s) if long(s)))
                {
                    return Err(too_large(
                        format!("attribute.{name}[{i}]"),
                        LONG,
                        &format!("the length of a value of attribute {name:?}"),
                        MAX_REQUEST_STRING_LEN,
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_cart_sizes(cart: &crate::core::campaign::Cart) -> Result<()> {
    if cart.items.len() > MAX_CART_ITEMS {
        return Err(too_large(
            "cart.items",
            MANY,
            "the number of cart items",
            MAX_CART_ITEMS,
        ));
    }
    // A number's text is measured too (serde_json keeps it as sent); one
    // too long to be an exact decimal is refused by `check_numbers` anyway.
    let scalar_long = |s: &Option<Scalar>| s.as_ref().is_some_and(|s| long(&s.as_text()));
    for (field, value) in [
        ("cart.totalPrice", &cart.total_price),
        ("cart.currency", &cart.currency),
    ] {
        if scalar_long(value) {
            return Err(too_large(
                field,
                LONG,
                "the length of a cart field",
                MAX_REQUEST_STRING_LEN,
            ));
        }
    }
    for (i, item) in cart.items.iter().enumerate() {
        if item.tags.len() > MAX_TAGS_PER_ITEM {
            return Err(too_large(
                format!("cart.items[{i}].tags"),
                MANY,
                "the number of tags of a cart item",
                MAX_TAGS_PER_ITEM,
            ));
        }
        let field = if scalar_long(&item.sku) {
            Some("sku".to_owned())
        } else if scalar_long(&item.amount) {
            Some("amount".to_owned())
        } else if scalar_long(&item.price) {
            Some("price".to_owned())
        } else if item.name.as_deref().is_some_and(long) {
            Some("name".to_owned())
        } else {
            item.tags
                .iter()
                .position(|t| long(t))
                .map(|t| format!("tags[{t}]"))
        };
        if let Some(field) = field {
            return Err(too_large(
                format!("cart.items[{i}].{field}"),
                LONG,
                "the length of a cart item field",
                MAX_REQUEST_STRING_LEN,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::core::campaign::SearchRequest;

    fn refused(body: serde_json::Value) -> Vec<(String, String)> {
        let request: SearchRequest = serde_json::from_value(body).unwrap();
        let err = super::check_limits(&request).unwrap_err();
        err.fields()
            .iter()
            .map(|f| (f.field.clone(), f.code.to_string()))
            .collect()
    }

    /// JSON numbers keep their text (serde_json's `arbitrary_precision`):
    /// one that no `Decimal` holds exactly is refused at its field.
    #[test]
    fn numbers_beyond_decimal_are_refused_at_their_field() {
        let body: SearchRequest = serde_json::from_str(
            r#"{"cart": {"totalPrice": 999.99999999999999999, "items": [{"price": 12345678901234567.89}]},
                "attribute": {"n": 1.000000000000000000000000001}}"#,
        )
        .unwrap();
        assert!(super::check_limits(&body).is_ok());
        let fields = refused(
            serde_json::from_str(
                r#"{"cart": {"totalPrice": 1.00000000000000000000000000001,
                         "items": [{"price": 1e40}, {"amount": 79228162514264337593543950336}]},
                "attribute": {"n": 0.00000000000000000000000000000001, "ns": [1, 1e-40]}}"#,
            )
            .unwrap(),
        );
        let want = [
            "attribute.n",
            "attribute.ns[1]",
            "cart.totalPrice",
            "cart.items[0].price",
            "cart.items[1].amount",
        ];
        for w in want {
            assert!(
                fields.iter().any(|(f, c)| f == w && c == "invalid_number"),
                "{w} in {fields:?}"
            );
        }
        let long = format!("{{\"cart\": {{\"totalPrice\": {}}}}}", "1".repeat(5000));
        let body: SearchRequest = serde_json::from_str(&long).unwrap();
        assert!(super::check_limits(&body).is_err());
    }
}
