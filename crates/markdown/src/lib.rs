//! arcane-markdown: the Markdown text of results (docs/output-format.md) and the escaping of
//! untrusted values inside it (docs/escaping.md). Pure functions of their inputs: no I/O, no
//! state, no dependency but `serde_json` (so the escaper's fuzz target needs only this crate).
//!
//! - escaping: [`sanitize`], the slot-specific escapers ([`inline`], [`table_cell`], …,
//!   [`code_span`], [`fenced`]) and the texts of errors ([`excerpt`], [`quoted_name`]);
//! - rendering: [`render_value`] picks the renderer of a result — lists ([`render_list`]),
//!   objects ([`render_object`]), lone values — and downloads have their own
//!   ([`render_text_download`], [`render_binary_download_meta`]). Every value from Arcane goes
//!   through an escaper; every finished text once more through [`sanitize`];
//! - units: human-readable byte sizes ([`human_bytes`]).

mod context;
mod download;
mod envelope;
mod escape;
mod fields;
mod list;
mod object;
mod render;
mod units;
mod value;

pub use context::{MAX_ROWS, RenderContext, RestHint, title};
pub use download::{render_binary_download_meta, render_text_download};
pub use escape::{
    Slot, clip, code_span, escape, excerpt, fenced, heading_text, inline, inline_strict,
    is_hidden_char, list_item_key, list_item_value, quoted_name, reveal, sanitize, table_cell,
    table_cell_strict, visible,
};
pub use list::render_list;
pub use render::{render_object, render_value};
pub use units::{human_bytes, is_byte_field};
