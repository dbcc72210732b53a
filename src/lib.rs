//! arcane-mcp: an MCP server for Arcane, built as a data-driven interpreter.
//!
//! The data's path through the crate, one module per stage (see ARCHITECTURE.md):
//! [`spec`] → [`catalog`] → search → surfaces → execution → rendering → output schemas →
//! resources → the MCP glue → [`reload`].

pub mod catalog;
pub mod exec;
pub mod http;
pub mod spec;
pub mod reload;
pub mod config;
pub mod inspect;
pub mod render;

/// Runs the MCP server over stdio until the client disconnects.
pub fn serve(_args: config::ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("the MCP server is not built yet (issue 4)")
}
