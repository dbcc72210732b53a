//! arcane-markdown: the Markdown text of results (docs/output-format.md) and the escaping of
//! untrusted values inside it (docs/escaping.md). Pure functions of their inputs: no I/O, no
//! state, no dependency but `serde_json` (so the escaper's fuzz target needs only this crate).
//!
//! - escaping: [`sanitize`], the slot-specific escapers ([`inline`], [`table_cell`], …,
//!   [`code_span`], [`fenced`]) and the texts of errors ([`excerpt`], [`quoted_name`]);
//! - rendering: lists, objects, lone values and downloads ([`render_value`] and friends);
//! - units: human-readable byte sizes ([`human_bytes`]).

mod escape;
mod markdown;
mod units;

pub use escape::{
    Slot, clip, code_span, escape, excerpt, fenced, heading_text, inline, inline_strict,
    list_item_key, list_item_value, quoted_name, sanitize, table_cell, table_cell_strict, visible,
};
pub use markdown::{
    MAX_ROWS, RenderContext, RestHint, render_binary_download_meta, render_list, render_object,
    render_text_download, render_value, title,
};
pub use units::{human_bytes, is_byte_field};
