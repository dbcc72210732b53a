//! The upgrade preview: what changes between the catalogs of two Arcane documents built with
//! the same overlays (`arcane-mcp catalog --spec NEW --diff OLD`).
//!
//! Actions are paired as the same *operation* first (same method, same path shape and same
//! operationId, even if the derived ID moved), then as renames: the same method and path shape
//! under a new operationId, or the same operationId on a new path. What stays unpaired was
//! added or removed. Path shapes ignore the names of path parameters (`/containers/{id}` and
//! `/containers/{containerId}` are one shape), since Arcane renames them between versions.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use crate::model::{Action, Catalog, UnmatchedOverlay};

/// One side of a change: an action as each catalog knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRef {
    pub id: String,
    pub method: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

impl ActionRef {
    fn of(a: &Action) -> ActionRef {
        ActionRef {
            id: a.id.clone(),
            method: a.request.method.clone(),
            path: a.request.path.clone(),
            operation_id: a.request.operation_id.clone(),
        }
    }
}

/// An action that changed its name or its place.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Renamed {
    pub old: ActionRef,
    pub new: ActionRef,
    /// `new ID`, `new operationId` or `new path`.
    pub how: String,
}

/// Flags and required parameters that changed on an action present in both.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlagChange {
    /// The action's ID in the new catalog.
    pub id: String,
    /// e.g. `read → mutating`, `now destructive`, `new required parameter `force``.
    pub changes: Vec<String>,
}

/// Everything the preview reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogDiff {
    pub old_version: String,
    pub old_spec: String,
    pub old_actions: usize,
    pub new_version: String,
    pub new_spec: String,
    pub new_actions: usize,
    /// Actions present in both under the same ID, method, path shape and operationId.
    pub unchanged: usize,
    pub added: Vec<ActionRef>,
    pub removed: Vec<ActionRef>,
    pub renamed: Vec<Renamed>,
    pub flag_changes: Vec<FlagChange>,
    /// Overlay entries that match under the old document but not under the new one.
    pub overlays_stop_matching: Vec<UnmatchedOverlay>,
    /// The new catalog's writes no rule and no overlay classes: asked until an operator
    /// classes them (docs/security.md#impact-classes).
    pub unclassed: Vec<ActionRef>,
}

/// A path with its parameter names erased: `/containers/{id}` → `/containers/{}`.
fn shape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if in_param => {}
            _ => out.push(c),
        }
    }
    out
}

/// Compares two catalogs built from two documents with the same overlays.
pub fn diff(old: &Catalog, new: &Catalog) -> CatalogDiff {
    let mut old_left: Vec<Option<&Action>> = old.actions.iter().map(Some).collect();
    let mut new_left: Vec<Option<&Action>> = new.actions.iter().map(Some).collect();
    let mut pairs: Vec<(&Action, &Action, Option<&'static str>)> = Vec::new();

    // Passes from the strictest identity to the loosest; each pairs what is still unpaired.
    type Key = fn(&Action) -> Option<String>;
    let passes: [(Key, Option<&'static str>); 3] = [
        (
            |a| {
                Some(format!(
                    "{} {} {}",
                    a.request.method,
                    shape(&a.request.path),
                    a.request.operation_id.as_deref().unwrap_or("")
                ))
            },
            None,
        ),
        (
            |a| Some(format!("{} {}", a.request.method, shape(&a.request.path))),
            Some("new operationId"),
        ),
        (|a| a.request.operation_id.clone(), Some("new path")),
    ];
    for (key, how) in passes {
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, a) in new_left.iter().enumerate() {
            if let Some(k) = a.and_then(key) {
                index.entry(k).or_default().push(i);
            }
        }
        for slot in old_left.iter_mut() {
            let Some(o) = *slot else { continue };
            let Some(k) = key(o) else { continue };
            let Some(candidates) = index.get_mut(&k) else {
                continue;
            };
            // Prefer the candidate with the same ID when a key is shared.
            let pick = candidates
                .iter()
                .position(|&i| new_left[i].is_some_and(|n| n.id == o.id))
                .or_else(|| candidates.iter().position(|&i| new_left[i].is_some()));
            if let Some(pos) = pick {
                let i = candidates.remove(pos);
                let n = new_left[i].take().expect("candidate is unpaired");
                *slot = None;
                pairs.push((o, n, how));
            }
        }
    }

    let mut unchanged = 0;
    let mut renamed = Vec::new();
    let mut flag_changes = Vec::new();
    for (o, n, how) in pairs {
        let how = match how {
            Some(h) => Some(h),
            None if o.id != n.id => Some("new ID"),
            None => None,
        };
        match how {
            Some(h) => renamed.push(Renamed {
                old: ActionRef::of(o),
                new: ActionRef::of(n),
                how: h.to_string(),
            }),
            None => unchanged += 1,
        }
        let changes = flag_changes_of(o, n);
        if !changes.is_empty() {
            flag_changes.push(FlagChange {
                id: n.id.clone(),
                changes,
            });
        }
    }
    renamed.sort_by(|a, b| a.new.id.cmp(&b.new.id));
    flag_changes.sort_by(|a, b| a.id.cmp(&b.id));

    let was_unmatched: BTreeSet<(&str, &str, &str)> = old
        .unmatched_overlays
        .iter()
        .map(|u| (u.file.as_str(), u.section.as_str(), u.key.as_str()))
        .collect();
    let overlays_stop_matching = new
        .unmatched_overlays
        .iter()
        .filter(|u| !was_unmatched.contains(&(u.file.as_str(), u.section.as_str(), u.key.as_str())))
        .cloned()
        .collect();

    CatalogDiff {
        old_version: old.arcane_version.clone(),
        old_spec: old.spec_origin.clone(),
        old_actions: old.actions.len(),
        new_version: new.arcane_version.clone(),
        new_spec: new.spec_origin.clone(),
        new_actions: new.actions.len(),
        unchanged,
        added: new_left.into_iter().flatten().map(ActionRef::of).collect(),
        removed: old_left.into_iter().flatten().map(ActionRef::of).collect(),
        renamed,
        flag_changes,
        overlays_stop_matching,
        unclassed: new.unclassed().map(ActionRef::of).collect(),
    }
}

fn flag_changes_of(o: &Action, n: &Action) -> Vec<String> {
    let mut out = Vec::new();
    if !o.safety.mutating && n.safety.mutating {
        out.push("read → mutating".to_string());
    }
    if o.safety.mutating && !n.safety.mutating {
        out.push("mutating → read".to_string());
    }
    if !o.safety.destructive && n.safety.destructive {
        out.push("now destructive".to_string());
    }
    if o.safety.destructive && !n.safety.destructive {
        out.push("no longer destructive".to_string());
    }
    if o.safety.impact != n.safety.impact {
        let asked = |i: crate::impact::Impact| if i.asks() { "asked" } else { "not asked" };
        out.push(format!(
            "impact {} → {} ({})",
            o.safety.impact,
            n.safety.impact,
            asked(n.safety.impact)
        ));
    }
    for r in &n.request.required {
        if !o.request.required.contains(r) {
            out.push(format!("new required parameter `{r}`"));
        }
    }
    out
}

impl CatalogDiff {
    /// The text form printed by `arcane-mcp catalog --diff`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Upgrade preview: Arcane {} ({}) → {} ({})",
            self.old_version, self.old_spec, self.new_version, self.new_spec
        );
        let _ = writeln!(
            out,
            "actions: {} → {} (unchanged {}, renamed {}, added {}, removed {})",
            self.old_actions,
            self.new_actions,
            self.unchanged,
            self.renamed.len(),
            self.added.len(),
            self.removed.len()
        );
        let line = |r: &ActionRef| {
            format!(
                "{}  {} {}{}",
                r.id,
                r.method,
                r.path,
                r.operation_id
                    .as_deref()
                    .map(|o| format!("  ({o})"))
                    .unwrap_or_default()
            )
        };
        let _ = writeln!(out, "\nadded ({}):", self.added.len());
        for a in &self.added {
            let _ = writeln!(out, "  + {}", line(a));
        }
        let _ = writeln!(out, "\nremoved ({}):", self.removed.len());
        for a in &self.removed {
            let _ = writeln!(out, "  - {}", line(a));
        }
        let _ = writeln!(out, "\nrenamed ({}):", self.renamed.len());
        for r in &self.renamed {
            let detail = match r.how.as_str() {
                "new operationId" => format!(
                    "{} → {}",
                    r.old.operation_id.as_deref().unwrap_or("-"),
                    r.new.operation_id.as_deref().unwrap_or("-")
                ),
                "new path" => format!("{} → {}", r.old.path, r.new.path),
                _ => format!("{} {}", r.new.method, r.new.path),
            };
            let _ = writeln!(
                out,
                "  ~ {} → {}  ({}: {detail})",
                r.old.id, r.new.id, r.how
            );
        }
        let _ = writeln!(out, "\nflag changes ({}):", self.flag_changes.len());
        for f in &self.flag_changes {
            let _ = writeln!(out, "  ! {}: {}", f.id, f.changes.join("; "));
        }
        let _ = writeln!(
            out,
            "\noverlay entries that stop matching ({}):",
            self.overlays_stop_matching.len()
        );
        for u in &self.overlays_stop_matching {
            let _ = writeln!(out, "  {u}");
        }
        let _ = writeln!(
            out,
            "\nunclassed writes, asked until an overlay gives them an `impact` ({}):",
            self.unclassed.len()
        );
        for a in &self.unclassed {
            let _ = writeln!(out, "  ? {}", line(a));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::shape;

    #[test]
    fn shapes_ignore_parameter_names() {
        assert_eq!(
            shape("/environments/{id}/containers/{containerId}/start"),
            "/environments/{}/containers/{}/start"
        );
        assert_eq!(
            shape("/environments/{environmentId}/containers/{id}/start"),
            shape("/environments/{id}/containers/{containerId}/start")
        );
    }
}
