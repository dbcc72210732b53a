//! Transports: stdio (how MCP clients start a server) and Streamable HTTP for a team, with
//! the one answer to a message neither can decode (`jsonrpc`).

pub(crate) mod http;
pub mod jsonrpc;
pub mod stdio;
