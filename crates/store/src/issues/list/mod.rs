//! Task lists: the filters, full-text search, the page and its count.
//!
//! A page is chosen in two steps: the numbers and text sizes of the matching
//! tasks, newest first, read from the index of the filter, then the chosen
//! rows by their numbers, so neither a sparse filter nor a page of long
//! descriptions reads more than the page.

pub(crate) mod filter;
pub(crate) mod json;
pub(crate) mod matching;
pub(crate) mod page;
pub(crate) mod query;
pub(crate) mod rollup;
