//! `arcane-mcp history` and `arcane-mcp undo ID`: the changes the server made (`--history`,
//! docs/undo.md), and taking one back — the call the history recorded, run as `arcane-mcp
//! call` runs one (so a change that asks needs `--confirm`, and the undo is itself recorded:
//! undoing it again is a redo).

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cmd::call;
use crate::config::{CallArgs, HistoryArgs, ServeArgs, UndoArgs};
use crate::mcp::history::{Change, History, TakeBack};

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

/// What taking a change back is, in a line.
fn take_back(undo: &TakeBack) -> String {
    match undo {
        TakeBack::Call { action, .. } => format!("undo runs {action}"),
        TakeBack::Nothing { why } => format!("nothing to undo: {why}"),
        TakeBack::Never { why } => format!("cannot be undone: {why}"),
        TakeBack::Unknown { why } => format!("cannot be undone from here: {why}"),
    }
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
            take_back(&c.undo)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `arcane-mcp undo ID`: runs the call that takes change ID back.
pub fn undo(settings: &ServeArgs, args: &UndoArgs) -> Result<ExitCode> {
    let changes = changes(settings)?;
    let change = changes.iter().find(|c| c.id == args.id).with_context(|| {
        format!(
            "no change {} in the history (`arcane-mcp history` lists them)",
            args.id
        )
    })?;
    let TakeBack::Call { action, params } = &change.undo else {
        bail!(
            "{} ({}) {}",
            change.id,
            change.action,
            take_back(&change.undo)
        );
    };
    eprintln!(
        "Taking back {} ({} by {} at {}): {action}",
        change.id, change.action, change.by, change.time
    );
    let call_args = CallArgs {
        action: action.clone(),
        param: Vec::new(),
        params: Some(Value::Object(params.clone()).to_string()),
        confirm: args.confirm,
        json: args.json,
    };
    call::run(settings, &call_args)
}
