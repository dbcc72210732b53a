//! Transports: stdio (how MCP clients start a server) and Streamable HTTP for a team, with
//! the JSON-RPC layer both share (`jsonrpc`: the answer to a message neither can decode, the
//! 2025-11-25 `task` field rmcp drops).

pub(crate) mod http;
pub mod jsonrpc;
pub mod stdio;
