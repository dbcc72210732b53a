//! The history of changes (`--history FILE`, docs/undo.md): a JSON line per change made
//! through the server, with who made it and the call that takes it back, filled when it ran
//! from the catalog's `undo` entry (the state a capture read before it, the answer after). Kept
//! bounded, read back by `arcane-mcp history` and `arcane-mcp undo`. A file that cannot be
//! written or read costs the history, never a call.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use arcane_catalog::{Action, Catalog, Filled, ParamLocation, Undo};

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
