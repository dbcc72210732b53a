//! Where the server keeps its own files by default: `$XDG_CACHE_HOME/arcane-mcp`.

use std::path::PathBuf;

/// `$XDG_CACHE_HOME/arcane-mcp` (or `~/.cache/arcane-mcp`).
pub fn cache_home() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("arcane-mcp"))
}
