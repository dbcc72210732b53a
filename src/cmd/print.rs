//! What the commands print: a tool result as the model gets it, and every write to stdout.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Result, bail};
use rmcp::model::{CallToolResult, ContentBlock};

/// Prints a result as the model gets it: its text blocks (or structuredContent with `json`)
/// on stdout; other blocks are named on stderr. Exit status 1 when the result is an error.
pub fn print(result: &CallToolResult, json: bool) -> Result<ExitCode> {
    let mut text = String::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&t.text);
            }
            ContentBlock::ResourceLink(r) => {
                eprintln!("(the result also links the resource {})", r.uri)
            }
            ContentBlock::Resource(_) => {
                eprintln!("(the result also embeds a resource for the user)")
            }
            _ => eprintln!("(the result also carries a media block)"),
        }
    }
    let out = match (&result.structured_content, json) {
        (Some(sc), true) => serde_json::to_string_pretty(sc)?,
        _ => text,
    };
    write_stdout(&format!("{}\n", out.trim_end_matches('\n')))?;
    Ok(if result.is_error == Some(true) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes what a command prints to stdout: every subcommand's output goes through here. A
/// reader that stopped early (`arcane-mcp catalog --json | head`) closes the pipe; that is not
/// a failure of the command, which ends quietly (`println!` would panic on it).
pub fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => bail!("writing to stdout: {e}"),
        _ => Ok(()),
    }
}
