//! The Markdown text of results (docs/output-format.md): the escaping and rendering are the
//! `arcane-markdown` crate.

// Transitional (ARCHITECTURE.md, "Crates"): `escape`, `markdown` and `units` moved to the
// `arcane-markdown` crate. These modules keep the old `crate::render::…` paths (and
// `arcane_mcp::render::…` in tests) compiling while other modules move to direct
// `arcane_markdown::` paths.
pub mod escape {
    pub use arcane_markdown::{
        Slot, clip, code_span, escape, excerpt, fenced, heading_text, inline, inline_strict,
        list_item_key, list_item_value, quoted_name, sanitize, table_cell, table_cell_strict,
    };
}
/// Transitional: see [`escape`].
pub mod markdown {
    pub use arcane_markdown::{
        RenderContext, RestHint, render_binary_download_meta, render_list, render_object,
        render_text_download, render_value, title,
    };
}
/// Transitional: see [`escape`].
pub mod units {
    pub use arcane_markdown::{human_bytes, is_byte_field};
}
