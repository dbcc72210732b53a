//! The Markdown text of results (docs/output-format.md) and the escaping of Arcane's
//! untrusted values inside it (docs/escaping.md). Pure functions, no I/O.
//!
//! - [`escape`]: `sanitize` and the slot-specific escapers;
//! - [`markdown`]: lists, objects, lone values and downloads as Markdown;
//! - [`units`]: human-readable byte sizes.

pub mod escape;
pub mod markdown;
pub mod units;
