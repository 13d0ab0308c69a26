//! The consent pages: privacy notices, consents and purposes (the content
//! store), the data-subject lookup, and erasure.

pub mod content;
pub mod erase;
mod kinds;
pub mod subject;
