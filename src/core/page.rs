//! Lists: one page of a list, page sizes and sort direction, shared by the
//! store traits, the consent queries and the adapters.

use serde::{Deserialize, Serialize};

/// Default page size of every list.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// Largest page size a list accepts.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    /// The items of the page.
    pub items: Vec<T>,
    /// Zero-based page number.
    pub page: u32,
    /// Page size asked for.
    pub size: u32,
    /// Number of items over all pages.
    pub total: u64,
}

impl<T> Page<T> {
    /// Pages a fully materialised, already sorted list (memory store).
    pub fn slice(all: Vec<T>, page: u32, size: u32) -> Page<T> {
        let total = all.len() as u64;
        let start = usize::try_from(u64::from(page) * u64::from(size)).unwrap_or(usize::MAX);
        let items = all.into_iter().skip(start).take(size as usize).collect();
        Page {
            items,
            page,
            size,
            total,
        }
    }

    /// Maps the items.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            page: self.page,
            size: self.size,
            total: self.total,
        }
    }
}

/// Checks a page size: 1 to [`MAX_PAGE_SIZE`].
pub fn check_page_size(size: u32) -> crate::Result<()> {
    if size == 0 || size > MAX_PAGE_SIZE {
        return Err(crate::Error::bad_request(
            "invalid_page_size",
            format!("size must be between 1 and {MAX_PAGE_SIZE}, got {size}"),
        ));
    }
    Ok(())
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortDirection {
    /// Ascending (default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}
