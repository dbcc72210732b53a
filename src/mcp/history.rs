//! The history of changes (`--history FILE`, docs/undo.md): a JSON line per change made
//! through the server, with who made it and the call that takes it back, filled when it ran
//! from the catalog's `undo` entry (the state a capture read before it, the answer after). Kept
//! bounded, read back by `arcane-mcp history` and `arcane-mcp undo` and by the actions
//! `history.list` and `history.undo` (catalog/history.yaml), which share what is here: finding
//! a change, the call that takes it back, the drift check. A file that cannot be written or
//! read costs the history, never a call.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use arcane_catalog::{Action, Catalog, Filled, ParamLocation, Undo};
use arcane_markdown::{clip, code_span};

/// How many changes the file keeps (the oldest go first).
pub const KEPT: usize = 1000;

/// The longest line read back: a longer one is not a change this server wrote.
const MAX_LINE: usize = 1 << 20;

/// One change, as a line of the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Unique in the file: what `arcane-mcp undo` takes.
    pub id: String,
    /// RFC 3339, UTC.
    pub time: String,
    /// Who made it, as the audit log names them (`server-key`, `key:…`, a token's name).
    pub by: String,
    pub action: String,
    pub environment: String,
    /// The call's parameters, secrets masked.
    pub params: Value,
    pub undo: TakeBack,
    /// What the change set, of what its undo puts back from the state read before it: a later
    /// read must still show these for the undo to replace nothing but the change (drift).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub expect: Map<String, Value>,
}

/// The arguments of `read` (an undo entry's capture) taken from a change's parameters: the
/// same state read before the change and, for the drift check, again before its undo.
pub fn read_args(read: &Action, params: &Map<String, Value>) -> Map<String, Value> {
    params
        .iter()
        .filter(|(k, _)| read.param(k).is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What the change set that its undo would put back, secrets left out (they are not kept).
fn expected(action: &Action, call: &Map<String, Value>, undo: &TakeBack) -> Map<String, Value> {
    let (TakeBack::Call { .. }, Some(Undo::By(inv))) = (undo, &action.safety.undo) else {
        return Map::new();
    };
    inv.restored_from_capture(call)
        .into_iter()
        .filter_map(|name| {
            let v = call.get(name)?.clone();
            let mut probe = Value::Object(Map::from_iter([(name.to_string(), v.clone())]));
            arcane_redact::redact_for(&mut probe, &action.domain)
                .is_empty()
                .then(|| (name.to_string(), v))
        })
        .collect()
}

/// The parameters whose current value (in `now`, a fresh read of the state the undo entry
/// captures) is no longer what the change set: each with what it is now.
pub fn drift(action: &Action, change: &Change, now: &Value) -> Vec<(String, Option<Value>)> {
    let Some(Undo::By(inv)) = &action.safety.undo else {
        return Vec::new();
    };
    let empty = Map::new();
    let call = change.params.as_object().unwrap_or(&empty);
    let with = Filled {
        call,
        capture: Some(now),
        result: None,
    };
    change
        .expect
        .iter()
        .filter_map(|(name, set)| {
            let current = inv.value_of(name, with).ok().flatten();
            (current.as_ref() != Some(set)).then(|| (name.clone(), current))
        })
        .collect()
}

/// The read whose fresh answer tells whether a change's state changed since (its undo entry's
/// capture), with its arguments: `None` when the change records nothing to compare.
pub fn recheck<'c>(
    catalog: &'c Catalog,
    change: &Change,
) -> Option<(&'c Action, &'c Action, Map<String, Value>)> {
    let action = catalog.get(&change.action)?;
    let (Some(Undo::By(inv)), false) = (&action.safety.undo, change.expect.is_empty()) else {
        return None;
    };
    let read = inv.capture.as_deref().and_then(|r| catalog.get(r))?;
    let empty = Map::new();
    let args = read_args(read, change.params.as_object().unwrap_or(&empty));
    Some((action, read, args))
}

/// What [`drift`] found, as a person reads it: each parameter, what it is now and what the
/// change left it at.
pub fn drift_text(change: &Change, drifted: &[(String, Option<Value>)]) -> String {
    drifted
        .iter()
        .map(|(name, now)| {
            // Arcane's values, quoted as any value from outside is (docs/escaping.md).
            let quote = |v: Option<&Value>| {
                v.map_or("unset".to_string(), |v| {
                    code_span(&clip(&v.to_string(), 120))
                })
            };
            format!(
                "{} is now {}, not {} as the change left it",
                code_span(name),
                quote(now.as_ref()),
                quote(change.expect.get(name))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The change `id` among `changes`, or what to say: `listing` names how to list them.
pub fn find<'a>(changes: &'a [Change], id: &str, listing: &str) -> Result<&'a Change, String> {
    changes.iter().find(|c| c.id == id).ok_or_else(|| {
        format!(
            "no change {} in the history ({listing} lists them)",
            code_span(&clip(id, 64))
        )
    })
}

/// The call the history recorded to take `change` back (action, parameters), or why there is
/// none: then nothing is sent.
pub fn inverse(change: &Change) -> Result<(&str, &Map<String, Value>), String> {
    match &change.undo {
        TakeBack::Call { action, params } => Ok((action, params)),
        other => Err(format!(
            "{} ({}) {}",
            change.id,
            change.action,
            other.line()
        )),
    }
}

/// The actions of catalog/history.yaml, by their handler kind: the server answers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    List,
    Undo,
}

impl Tool {
    /// Which of them `action` is, if any.
    pub fn of(action: &Action) -> Option<Tool> {
        match action.request.handler.as_ref()?.kind.as_str() {
            "history_list" => Some(Tool::List),
            "history_undo" => Some(Tool::Undo),
            _ => None,
        }
    }
}

/// The answer of either action on a server without a history: how to turn it on.
pub const OFF: &str = "This server keeps no history of its changes, so there is nothing to list \
     or undo. Ask the operator to start it with --history FILE (ARCANE_MCP_HISTORY), as \
     docs/undo.md does: `arcane-mcp --history ~/.local/state/arcane-mcp/history.jsonl`. Changes \
     made before that are not recorded.";

/// The longest a value stays in a change's summary.
const SUMMARY_VALUE: usize = 60;

/// A change's parameters in a line (as the file keeps them: secrets masked), long values cut.
pub fn summary(params: &Value) -> String {
    let Some(m) = params.as_object() else {
        return String::new();
    };
    m.iter()
        .map(|(k, v)| format!("{k}: {}", clip(&v.to_string(), SUMMARY_VALUE)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `history.list` answers: the newest `limit` of the `changes` (oldest first, as read),
/// each in the words of the command line's list, and `undoable`: whether `history.undo` has a
/// call to send for it (the Apps view offers Undo only then, without reading the words).
pub fn listing(changes: &[Change], limit: usize) -> Value {
    let items: Vec<Value> = changes
        .iter()
        .rev()
        .take(limit)
        .map(|c| {
            serde_json::json!({
                "id": c.id,
                "time": c.time,
                "by": c.by,
                "action": c.action,
                "environment": c.environment,
                "params": summary(&c.params),
                "undo": c.undo.line(),
                "undoable": matches!(c.undo, TakeBack::Call { .. }),
            })
        })
        .collect();
    serde_json::json!({ "items": items })
}

/// What taking a change back is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum TakeBack {
    /// This call takes it back.
    Call {
        action: String,
        params: Map<String, Value>,
    },
    /// Nothing lasting changed.
    Nothing { why: String },
    /// It cannot be undone.
    Never { why: String },
    /// The catalog says nothing of undoing this action, or the call could not be filled (the
    /// state read before, or the answer, was not what the entry expects): why.
    Unknown { why: String },
}

impl TakeBack {
    /// What taking it back is, in a line (`arcane-mcp history`, `history.list`, a refusal).
    pub fn line(&self) -> String {
        match self {
            TakeBack::Call { action, .. } => format!("undo runs {action}"),
            TakeBack::Nothing { why } => format!("nothing to undo: {why}"),
            TakeBack::Never { why } => format!("cannot be undone: {why}"),
            TakeBack::Unknown { why } => format!("cannot be undone from here: {why}"),
        }
    }

    /// The call that takes back a change of `action` made in `environment`, with `call` (the
    /// parameters as sent), the state `capture` read before it and its answer `result` (both
    /// as structured results); the inverse runs where the change ran.
    pub fn of(
        catalog: &Catalog,
        action: &Action,
        environment: &str,
        call: &Map<String, Value>,
        capture: Option<&Value>,
        result: Option<&Value>,
    ) -> TakeBack {
        match &action.safety.undo {
            None => TakeBack::Unknown {
                why: format!("the catalog does not say how {} is undone", action.id),
            },
            Some(Undo::Nothing(why)) => TakeBack::Nothing { why: why.clone() },
            Some(Undo::Never(why)) => TakeBack::Never { why: why.clone() },
            Some(Undo::By(inv)) => {
                let Some(by) = catalog.get(&inv.action) else {
                    return TakeBack::Unknown {
                        why: format!("{} is not in the catalog", inv.action),
                    };
                };
                if inv.capture.is_some() && capture.is_none() {
                    return TakeBack::Unknown {
                        why: "the state before the call could not be read".into(),
                    };
                }
                // The inverse's own parameters; the environment is the change's.
                let names: Vec<&str> = by
                    .params
                    .iter()
                    .filter(|p| p.location != ParamLocation::Environment)
                    .map(|p| p.name.as_str())
                    .collect();
                let filled = Filled {
                    call,
                    capture,
                    result,
                };
                match inv.arguments(filled, &names) {
                    Ok(mut params) => {
                        // The file keeps no secret in clear: a restore that needs one is not
                        // kept (masked, it would write the mask back).
                        let mut masked = Value::Object(params.clone());
                        if !arcane_redact::redact_for(&mut masked, &action.domain).is_empty() {
                            return TakeBack::Unknown {
                                why: "putting it back needs a secret, which the history does not keep".into(),
                            };
                        }
                        if by.param("environmentId").is_some() {
                            params
                                .entry("environmentId")
                                .or_insert_with(|| Value::String(environment.to_string()));
                        }
                        TakeBack::Call {
                            action: inv.action.clone(),
                            params,
                        }
                    }
                    Err(why) => TakeBack::Unknown { why },
                }
            }
        }
    }
}

/// The history file.
#[derive(Debug)]
pub struct History {
    path: PathBuf,
    /// Lines written since the file was last cut to [`KEPT`].
    file: Mutex<usize>,
}

impl History {
    /// Opens (creates) the file; an unwritable path fails the start, as the audit log's does.
    pub fn open(path: &Path) -> Result<History> {
        // docs/undo.md keeps it under ~/.local/state/arcane-mcp/, which a fresh machine lacks.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the history's directory {}", dir.display()))?;
        }
        crate::mcp::audit_log::open_append(path)
            .with_context(|| format!("opening the history {}", path.display()))?;
        let history = History {
            path: path.to_path_buf(),
            file: Mutex::new(0),
        };
        history.cut();
        Ok(history)
    }

    /// Records a change that ran: `params` as sent in `environment` by `by`, the state
    /// `before` its undo entry captured, its answer `result` (structured).
    #[allow(clippy::too_many_arguments)]
    pub fn remember(
        &self,
        catalog: &Catalog,
        action: &Action,
        environment: &str,
        params: &Map<String, Value>,
        before: Option<&Value>,
        result: Option<&Value>,
        by: String,
    ) {
        let undo = TakeBack::of(catalog, action, environment, params, before, result);
        let expect = expected(action, params, &undo);
        self.record(&Change {
            id: new_id(),
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            by,
            action: action.id.clone(),
            environment: environment.to_string(),
            params: arcane_redact::redacted_params(
                params,
                &action.domain,
                &catalog.identifiers(action),
            ),
            undo,
            expect,
        });
    }

    /// Appends a change. A failure is logged and costs only the history.
    pub fn record(&self, change: &Change) {
        let mut line = serde_json::to_string(change).unwrap_or_default();
        line.push('\n');
        let mut written = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let appended = crate::mcp::audit_log::open_append(&self.path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        match appended {
            Ok(()) => *written += 1,
            Err(err) => {
                tracing::warn!(path = %self.path.display(), error = %err, "could not write to the history; the change cannot be undone from it");
                return;
            }
        }
        if *written >= KEPT / 10 {
            *written = 0;
            drop(written);
            self.cut();
        }
    }

    /// Every change the file holds, oldest first (the lines that are not changes logged).
    pub fn changes(&self) -> Result<Vec<Change>> {
        let (changes, skipped) = Self::read(&self.path)?;
        if skipped > 0 {
            tracing::warn!(path = %self.path.display(), skipped, "lines of the history that are not changes were skipped");
        }
        Ok(changes)
    }

    /// Every change the file holds, oldest first, and how many lines were not changes (a
    /// corrupt or foreign line is skipped, never fatal).
    pub fn read(path: &Path) -> Result<(Vec<Change>, usize)> {
        let text = std::fs::read(path)
            .with_context(|| format!("reading the history {}", path.display()))?;
        let mut changes = Vec::new();
        let mut skipped = 0;
        for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match (line.len() <= MAX_LINE)
                .then(|| serde_json::from_slice::<Change>(line).ok())
                .flatten()
            {
                Some(c) => changes.push(c),
                None => skipped += 1,
            }
        }
        Ok((changes, skipped))
    }

    /// Keeps the newest [`KEPT`] changes (a new file, renamed over the old one).
    fn cut(&self) {
        let Ok((changes, skipped)) = Self::read(&self.path) else {
            return;
        };
        if skipped > 0 {
            tracing::warn!(path = %self.path.display(), skipped, "lines of the history that are not changes were skipped");
        }
        if changes.len() <= KEPT && skipped == 0 {
            return;
        }
        let keep = &changes[changes.len().saturating_sub(KEPT)..];
        let tmp = self.path.with_extension("cut.tmp");
        let written = (|| -> std::io::Result<()> {
            // A new file, never one planted at that name, private as the history it replaces.
            let _ = std::fs::remove_file(&tmp);
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
            let mut f = o.open(&tmp)?;
            for c in keep {
                let mut line = serde_json::to_string(c).unwrap_or_default();
                line.push('\n');
                f.write_all(line.as_bytes())?;
            }
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(err) = written {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!(path = %self.path.display(), error = %err, "could not cut the history to its bound; it keeps growing");
        }
    }
}

/// A new change's ID: the time and a random part, short enough to type.
fn new_id() -> String {
    let mut b = [0u8; 4];
    // Without randomness the time alone still tells changes of different seconds apart.
    let _ = getrandom::fill(&mut b);
    let n = u32::from_le_bytes(b);
    format!(
        "{}-{:06x}",
        chrono::Utc::now().format("%Y%m%d%H%M%S"),
        n & 0xff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(n: usize) -> Change {
        Change {
            id: format!("c{n}"),
            time: "2026-12-07T00:00:00Z".into(),
            by: "server-key".into(),
            action: "container.stop".into(),
            environment: "0".into(),
            params: serde_json::json!({"containerId": "web-1"}),
            undo: TakeBack::Nothing { why: "test".into() },
            expect: Map::new(),
        }
    }

    /// The file keeps the newest [`KEPT`] changes, stays private when cut, and a line that is
    /// not a change is skipped, counted and dropped by the next cut.
    #[test]
    fn the_history_is_bounded_private_and_survives_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        std::fs::write(&path, "not a change\n").unwrap();
        assert_eq!(History::read(&path).unwrap().1, 1);
        let h = History::open(&path).unwrap();
        for n in 0..KEPT + 150 {
            h.record(&change(n));
        }
        drop(h);
        let h = History::open(&path).unwrap();
        drop(h);
        let (changes, skipped) = History::read(&path).unwrap();
        assert_eq!((changes.len(), skipped), (KEPT, 0));
        assert_eq!(changes.last().unwrap().id, format!("c{}", KEPT + 149));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
