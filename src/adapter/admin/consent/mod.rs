//! The consent pages: privacy notices, consents and purposes (the content
//! store), and the data-subject lookup.

pub mod content;
mod kinds;
pub mod subject;
