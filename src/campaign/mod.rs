//! The campaign side: domain types, validation and the service.

mod model;

pub use model::*;
