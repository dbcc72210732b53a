//! The MCP side: rmcp's `ServerHandler` over the live snapshot, the person's confirmation,
//! pacing of answers, the prompts, MCP tasks (both protocol forms), the audit log of mutating
//! calls, and the trace span of each request.

pub(crate) mod audit_log;
pub(crate) mod call;
pub mod caller;
pub mod confirm;
pub mod core_tasks;
pub mod handler;
pub mod history;
pub mod pacing;
pub mod prompts;
pub mod tasks;
pub mod trace;
