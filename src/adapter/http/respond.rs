//! How answers look on the wire beside their bodies: lists as bare JSON
//! arrays with their total in `X-Total-Count`, and path segments in the
//! links the server writes.

use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::store::Page;

/// The header carrying the total of a list.
pub(crate) const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

/// A page as the wire shows it: a bare JSON array, the total in
/// `X-Total-Count`.
pub(crate) fn page_response<T: serde::Serialize>(page: Page<T>) -> Response {
    (
        [(TOTAL_COUNT, HeaderValue::from(page.total))],
        Json(page.items),
    )
        .into_response()
}

/// A whole list as the wire shows it: a bare JSON array, its length in
/// `X-Total-Count` (like the paged lists).
pub(crate) fn list_response<T: serde::Serialize>(items: Vec<T>) -> Response {
    let total = items.len() as u64;
    page_response(Page {
        items,
        page: 0,
        size: u32::try_from(total).unwrap_or(u32::MAX),
        total,
    })
}

/// Percent-encodes a path segment.
pub(crate) fn percent_encode(segment: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}
