//! The Markdown text of results (docs/output-format.md) and the escaping of Arcane's
//! untrusted values inside it (docs/escaping.md). Pure functions, no I/O.
//!
//! - [`escape`]: `sanitize` and the slot-specific escapers;
//! - [`markdown`]: lists, objects, lone values and downloads as Markdown;
//! - [`units`]: human-readable byte sizes;
//! - [`next_steps`]: the `Next steps` section, named for the calling surface.

pub mod escape;
pub mod markdown;
pub mod next_steps;
pub mod units;
