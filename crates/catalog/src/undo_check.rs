//! Checks each action's `undo` (crate::undo) against the finished catalog: the inverse and
//! the capture exist and are what they must be, and every name and path fits this document.

use std::collections::{HashMap, HashSet};

use anyhow::{Result, bail};
use serde_json::Value;

use crate::model::{Action, ParamLocation, ResultKind, UnmatchedOverlay};
use crate::undo::{Origin, Pick, Step, Undo};

/// Checks every action's `undo` against the finished list of actions (`origins`: where each
/// was set, by derived ID). A mistake fails the load with its file and line; an entry written
/// for another Arcane version is dropped (the action then says nothing of undoing) and
/// returned to be reported like an entry that matches nothing.
pub fn check_all(
    actions: &mut [Action],
    origins: &HashMap<String, (String, usize, String)>,
    withdrawn: &HashSet<&str>,
) -> Result<Vec<UnmatchedOverlay>> {
    // An inverse or capture an overlay withdrew cannot run here: the action says nothing of
    // undoing, and the operator who withdrew it is not told the built-in entry misfits.
    for a in actions.iter_mut() {
        if let Some(Undo::By(inv)) = &a.safety.undo {
            let needs = std::iter::once(inv.action.as_str()).chain(inv.capture.as_deref());
            if needs.into_iter().any(|id| withdrawn.contains(id)) {
                a.safety.undo = None;
            }
        }
    }
    let verdicts: Vec<_> = {
        let by_id: HashMap<&str, &Action> = actions.iter().map(|a| (a.id.as_str(), a)).collect();
        actions
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let undo = a.safety.undo.as_ref()?;
                Some((i, check(a, undo, |id| by_id.get(id).copied())))
            })
            .collect()
    };
    let mut misfits = Vec::new();
    for (i, verdict) in verdicts {
        let a = &mut actions[i];
        let (file, line, key) = origins
            .get(&a.derived_id)
            .cloned()
            .unwrap_or_else(|| ("an overlay".into(), 0, a.id.clone()));
        match verdict {
            Err(e) => bail!("{file}:{line}: {key}: {e}"),
            Ok(Some(reason)) => {
                a.safety.undo = None;
                misfits.push(UnmatchedOverlay {
                    file,
                    line,
                    section: "actions".into(),
                    key,
                    closest: Vec::new(),
                    reason: Some(reason),
                });
            }
            Ok(None) if !a.safety.mutating => {
                bail!(
                    "{file}:{line}: {key}: {} changes nothing; `undo` is for actions that change something",
                    a.id
                )
            }
            Ok(None) => {}
        }
    }
    Ok(misfits)
}

/// Whether a path can be read in an answer of this (structured result's) schema: each field
/// is one the schema lists where it lists any, and a selector steps into a list.
fn path_fits(schema: &Value, steps: &[Step]) -> Result<(), String> {
    let mut nodes = vec![schema];
    for s in steps {
        if s.field == "*" {
            return Ok(()); // a parameter's name, known only for a call
        }
        let here: Vec<&Value> = nodes.iter().flat_map(|n| branches(n)).collect();
        let listed: Vec<&str> = here
            .iter()
            .filter_map(|b| b.get("properties")?.as_object())
            .flat_map(|p| p.keys().map(String::as_str))
            .collect();
        let next: Vec<&Value> = here
            .iter()
            .filter_map(|b| b.get("properties")?.get(&s.field))
            .collect();
        if next.is_empty() {
            if listed.is_empty() {
                return Ok(()); // a free-form object: nothing to check against
            }
            return Err(format!(
                "the answer has no {:?} (it has {})",
                s.field,
                listed.join(", ")
            ));
        }
        nodes = next;
        if s.select.is_some() {
            let items: Vec<&Value> = nodes
                .iter()
                .flat_map(|n| branches(n))
                .filter_map(|b| b.get("items"))
                .collect();
            if items.is_empty() {
                return Err(format!(
                    "{:?} is not a list, so [..=..] cannot pick in it",
                    s.field
                ));
            }
            nodes = items;
        }
    }
    Ok(())
}

/// A schema and the branches of its `anyOf`/`allOf`, one level down.
fn branches(schema: &Value) -> Vec<&Value> {
    let mut out = vec![schema];
    for key in ["anyOf", "allOf", "oneOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            out.extend(list);
        }
    }
    out
}

/// Checks one action's `undo` against the finished catalog. `Err` is a mistake in the entry
/// (wrong in any Arcane version); `Ok(Some(reason))` an entry written for another version (an
/// action or parameter this document lacks): the entry is dropped and reported like one that
/// matches nothing.
fn check<'a>(
    action: &Action,
    undo: &Undo,
    find: impl Fn(&str) -> Option<&'a Action>,
) -> Result<Option<String>, String> {
    let Undo::By(inv) = undo else {
        return Ok(None);
    };
    let Some(by) = find(&inv.action) else {
        return Ok(Some(format!(
            "undo's action {} is not in this catalog",
            inv.action
        )));
    };
    if !by.safety.mutating {
        return Err(format!(
            "undo names {}, which changes nothing; name the action that takes the change back",
            by.id
        ));
    }
    if let Some(capture) = &inv.capture {
        let Some(read) = find(capture) else {
            return Ok(Some(format!(
                "undo's capture {capture} is not in this catalog"
            )));
        };
        if read.safety.mutating || read.output.kind != ResultKind::Json {
            return Err(format!(
                "undo captures the state through {capture}, which is not a plain read (it changes state, or does not answer JSON); name a GET"
            ));
        }
        for p in &read.params {
            if p.required
                && p.location != ParamLocation::Environment
                && action.param(&p.name).is_none()
            {
                return Err(format!(
                    "undo's capture {capture} needs the parameter {}, which {} does not take; name a read whose parameters the call carries",
                    p.name, action.id
                ));
            }
        }
    }
    for (name, source) in &inv.params {
        if name != "*" && by.param(name).is_none() {
            return Ok(Some(format!(
                "undo fills {name}, which {} does not have here",
                by.id
            )));
        }
        for r in source.refs() {
            for n in r.call_param().into_iter().chain(r.picked_params()) {
                if action.param(n).is_none() {
                    return Ok(Some(format!(
                        "undo reads call.{n}, which {} does not have here",
                        action.id
                    )));
                }
            }
            match r.origin {
                Origin::Capture if inv.capture.is_none() => {
                    return Err(format!(
                        "{name} reads capture.… but the entry has no `capture`"
                    ));
                }
                Origin::Result if action.output.kind != ResultKind::Json => {
                    return Err(format!(
                        "{name} reads result.… but {} does not answer JSON",
                        action.id
                    ));
                }
                _ => {}
            }
            let answer = match r.origin {
                Origin::Call => None,
                Origin::Capture => inv.capture.as_deref().and_then(&find),
                Origin::Result => Some(action),
            };
            if let Some(schema) = answer.and_then(crate::output_schema::output_schema)
                && let Err(e) = path_fits(&schema, &r.steps)
            {
                return Ok(Some(format!("{name}: {}: {e}", r.written())));
            }
            let starred = r
                .steps
                .iter()
                .any(|s| s.field == "*" || matches!(s.select, Some((_, Pick::Star))));
            if starred && name != "*" {
                return Err(format!("{name}: `*` in a path is for the `*` key only"));
            }
        }
    }
    if !inv.params.contains_key("*") {
        for p in &by.params {
            let filled = inv.params.contains_key(&p.name) || action.param(&p.name).is_some();
            if p.required && p.location != ParamLocation::Environment && !filled {
                return Err(format!(
                    "undo's {} needs the parameter {}, which neither `params` fills nor {} takes",
                    by.id, p.name, action.id
                ));
            }
        }
    }
    Ok(None)
}
