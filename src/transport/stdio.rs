//! MCP on stdin/stdout: how MCP clients start a server.

use anyhow::Result;

use crate::app::App;
use crate::transport::jsonrpc::Lines;

/// Serves MCP on stdin/stdout with hot reload until the client disconnects.
pub async fn serve(app: App) -> Result<()> {
    // Pipes are read and written on the runtime's I/O driver rather than one blocking-pool
    // hand-off per read and write: a burst of calls no longer queues every answer behind
    // those threads (docs/measurements.md). Lines rmcp would drop unanswered (a lone
    // surrogate, broken JSON) get a JSON-RPC error (`transport::jsonrpc`).
    let (read, write) = rmcp::transport::stdio_pipes();
    app.serve_on(Lines::new(read, write), "stdio").await
}
