//! The Markdown text of results (SPEC §6) and the escaping of Arcane's
//! untrusted values inside it (SPEC §7). Pure functions, no I/O.
//!
//! - [`escape`]: `sanitize` and the slot-specific escapers;
//! - [`markdown`]: lists, objects, lone values and downloads as Markdown;
//! - [`units`]: human-readable byte sizes.

pub mod escape;
pub mod markdown;
pub mod units;
