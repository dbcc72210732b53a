//! `arcane-mcp history` and `arcane-mcp undo ID`: the changes the server made (`--history`,
//! docs/undo.md), and taking one back — the call the history recorded, run as `arcane-mcp
//! call` runs one (so a change that asks needs `--confirm`, and the undo is itself recorded:
//! undoing it again is a redo), after checking that nothing changed the state since.

use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::app::{self, App};
use crate::cmd::call;
use crate::cmd::print::print;
use crate::config::{HistoryArgs, ServeArgs, UndoArgs};
use crate::load::sources::Sources;
use crate::mcp::history::{self, Change, History};

fn changes(settings: &ServeArgs) -> Result<Vec<Change>> {
    let Some(path) = &settings.history else {
        bail!(
            "no history: start the server with --history FILE (ARCANE_MCP_HISTORY) and give \
             the same file here"
        );
    };
    let (changes, skipped) = History::read(path)?;
    if skipped > 0 {
        eprintln!(
            "{skipped} line(s) of {} are not changes and were skipped",
            path.display()
        );
    }
    Ok(changes)
}

/// `arcane-mcp history`: the newest changes first.
pub fn list(settings: &ServeArgs, args: &HistoryArgs) -> Result<ExitCode> {
    let mut changes = changes(settings)?;
    changes.reverse();
    changes.truncate(args.last);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&changes)?);
        return Ok(ExitCode::SUCCESS);
    }
    if changes.is_empty() {
        println!("No changes recorded yet.");
    }
    for c in &changes {
        let params = match &c.params {
            Value::Object(m) if !m.is_empty() => format!(" {}", Value::Object(m.clone())),
            _ => String::new(),
        };
        println!(
            "{}  {}  {}  {}{} in environment {}\n    {}",
            c.id,
            c.time,
            c.by,
            c.action,
            params,
            c.environment,
            c.undo.line()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `arcane-mcp undo ID`: runs the call that takes change ID back, unless what the change set
/// was changed again since (then only with `--force`). The `history.undo` action takes the same
/// steps (`crate::mcp::call`), from the same helpers of `crate::mcp::history`.
pub fn undo(settings: &ServeArgs, args: &UndoArgs) -> Result<ExitCode> {
    let changes = changes(settings)?;
    let change =
        history::find(&changes, &args.id, "`arcane-mcp history`").map_err(anyhow::Error::msg)?;
    let (action, params) = history::inverse(change).map_err(anyhow::Error::msg)?;
    let (base_url, auth) = crate::app::connection(settings)?;
    let sources = Sources::from_args(&settings.source, Some(&base_url));
    let app = App::build(settings, sources, base_url, auth)?;
    let runtime = app::runtime()?;
    if !args.force {
        let drifted = runtime.block_on(drift(&app, change))?;
        if !drifted.is_empty() {
            bail!(
                "{} was changed again since {}: {}. Undoing it would overwrite that; add --force \
                 to put back the state before {} anyway",
                change.action,
                change.id,
                history::drift_text(change, &drifted),
                change.id
            );
        }
    }
    eprintln!(
        "Taking back {} ({} by {} at {}): {action}",
        change.id, change.action, change.by, change.time
    );
    let result = runtime.block_on(call::call_with(&app, action, params.clone(), args.confirm));
    print(&result, args.json)
}

/// What the change set that is no longer so: the state its undo entry captures, read now.
async fn drift(app: &App, change: &Change) -> Result<Vec<(String, Option<Value>)>> {
    let snap = app.live.load();
    let Some((action, read, params)) = history::recheck(&snap.catalog, change) else {
        return Ok(Vec::new());
    };
    let result = call::call_with(app, &read.id, params, false).await;
    let Some(now) = result
        .structured_content
        .filter(|_| result.is_error != Some(true))
    else {
        bail!(
            "the state {} changed could not be read to check that nothing changed it since ({}); \
             add --force to take it back without the check",
            change.id,
            read.id
        );
    };
    Ok(history::drift(action, change, &now))
}
