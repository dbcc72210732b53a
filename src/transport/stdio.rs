//! MCP on stdin/stdout: how MCP clients start a server.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::time::Duration;

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

/// How long a client that started the server may take to send its first request, when the
/// server could not start: the wait is only to say why, never a hang.
const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(10);

/// The longest first line read to answer it.
const FIRST_REQUEST_BYTES: u64 = 1 << 20;

/// The server could not start (a missing key, a bad URL…): a client that started it would
/// only see "connection closed". When stdin is a client's pipe, its first request is
/// answered with a JSON-RPC error carrying `message` (masked by the caller), which clients
/// show; then the process exits as before. Nothing is waited for at a terminal.
pub fn refuse_first_request(message: &str) {
    if std::io::stdin().is_terminal() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    // A thread of its own: a client that sends nothing must not hold the exit.
    let _ = std::thread::Builder::new()
        .name("refuse".into())
        .spawn(move || {
            let mut line: Vec<u8> = Vec::new();
            let read = std::io::BufReader::new(std::io::stdin().take(FIRST_REQUEST_BYTES))
                .read_until(b'\n', &mut line);
            let _ = tx.send(read.map(|_| line));
        });
    let Ok(Ok(line)) = rx.recv_timeout(FIRST_REQUEST_WAIT) else {
        return;
    };
    let id = serde_json::from_slice::<serde_json::Value>(&line)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .filter(|id| id.is_string() || id.is_number());
    let Some(id) = id else { return };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": format!("arcane-mcp cannot start: {message}")},
    });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{answer}");
    let _ = out.flush();
}
