//! arcane-mcp: an MCP server for Arcane, built as a data-driven interpreter.
//!
//! The data's path, one folder per stage (ARCHITECTURE.md): [`load`] finds Arcane's document
//! and the overlay files and keeps the live snapshot → the `arcane-catalog` crate builds the
//! catalog, its search index and policy → [`surface`] (tool lists, call parsing) → the
//! `arcane-engine` crate (a typed outcome) → [`present`] (Markdown via `arcane-markdown`,
//! output-schema fitting, next steps) → [`mcp`] (the rmcp handler, confirmation, pacing, the
//! audit log; [`resources`] beside it) → `transport` (stdio, Streamable HTTP). [`config`] is the
//! command line, [`app`] turns it into the running parts, [`cmd`] holds one file per
//! subcommand, [`logging`] writes to stderr, [`telemetry`] exports traces and metrics when asked. Nothing of the workspace's other crates is
//! re-exported: code names `arcane_catalog::`, `arcane_markdown::` and `arcane_engine::`.

pub mod app;
pub mod cmd;
pub mod config;
pub mod load;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod present;
pub mod resources;
pub mod surface;
pub mod telemetry;
pub mod transport;
