//! The `Next steps` section that may end a successful result's text (docs/output-format.md).
//!
//! At most four lines: the action's declared follow-ups (with their notes), then its related
//! actions with their titles. A follow-up with a condition (`when`, overlay data) is suggested
//! only when the result holds one of its values — an exited container suggests its logs and a
//! start, a running one a restart, a stop and exec — and an action that a follow-up offers
//! only under a condition is not offered through `related` when the condition fails.
//! Suggestions that need confirmation say how it is given; in safe mode mutating ones say they
//! only preview. Actions the server does not serve (read-only mode, exclusions) are never
//! suggested. After a bulk removal (a destructive action that names no target: a prune), no
//! other bulk removal is suggested: the person chose how much to remove, and a next step is
//! no place to offer more (`system.prune` after `image.prune`). Names are written by the caller's `name` function, so they follow the calling
//! surface.

use arcane_catalog::{Action, Catalog, ResultKind};
use arcane_markdown::inline;
use serde_json::Value;

/// The most lines the section holds.
pub const MAX_NEXT_STEPS: usize = 4;

/// How the server names and filters actions for the calling surface.
pub struct Naming<'a> {
    /// How the surface spells an action, e.g. "`container.get`" or
    /// "`arcane_container` (action `get`)". Already Markdown.
    pub name: &'a dyn Fn(&Action) -> String,
    /// Whether the server serves the action (read-only mode and exclusions withdraw actions).
    pub served: &'a dyn Fn(&Action) -> bool,
    /// Safe mode: mutating suggestions only preview.
    pub safe_mode: bool,
    /// `--confirm-mode elicit`: the user is asked to confirm whatever the call says.
    pub asks: bool,
}

/// Whether a result of this action gets a next-steps section at all: not for downloads, log
/// and exec output (they are shown as they are); previews are the caller's call.
pub fn applies_to(action: &Action) -> bool {
    match action.output.kind {
        ResultKind::Download => false,
        ResultKind::Handler => !action
            .request
            .handler
            .as_ref()
            .is_some_and(|h| h.kind == "ws_logs" || h.kind == "ws_exec"),
        _ => true,
    }
}

/// The section's Markdown (starting with a blank line), or `None` when there is nothing to
/// suggest or the action's results never carry one. `result` is the result's
/// structuredContent, which the follow-ups' conditions read (`None`: no condition holds).
pub fn next_steps(
    action: &Action,
    catalog: &Catalog,
    naming: &Naming<'_>,
    result: Option<&Value>,
) -> Option<String> {
    if !applies_to(action) {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = vec![action.id.as_str()];
    let holds = |f: &arcane_catalog::FollowUp| match &f.when {
        None => true,
        Some(c) => result.is_some_and(|r| c.holds(r)),
    };
    // An action offered only under conditions that all fail here is not offered at all.
    let unfit: Vec<&str> = action
        .output
        .follow_ups
        .iter()
        .filter(|f| f.when.is_some())
        .map(|f| f.action.as_str())
        .filter(|id| {
            !action
                .output
                .follow_ups
                .iter()
                .any(|f| f.action == *id && holds(f))
        })
        .collect();
    seen.extend(&unfit);
    let follow = action
        .output
        .follow_ups
        .iter()
        .filter(|f| holds(f))
        .map(|f| (f.action.as_str(), Some(f.note.as_str())));
    let related = action.output.related.iter().map(|r| (r.as_str(), None));
    for (id, note) in follow.chain(related) {
        if lines.len() == MAX_NEXT_STEPS {
            break;
        }
        if seen.contains(&id) {
            continue;
        }
        let Some(target) = catalog.get(id) else {
            continue;
        };
        if !(naming.served)(target) || (bulk_removal(action) && bulk_removal(target)) {
            continue;
        }
        seen.push(id);
        let what = match note {
            Some(n) if !n.is_empty() => inline(n).into_owned(),
            _ => inline(&target.title).into_owned(),
        };
        let mut line = format!("- {} — {what}", (naming.name)(target));
        if target.needs_confirmation() {
            // With `elicit` the user is asked when the client can, and `confirm: true` counts
            // only when it cannot: the line promises neither.
            // The class says why (docs/security.md#impact-classes); `destroys` reads as
            // "destructive", as the tools' annotations say.
            let class = match target.safety.impact {
                arcane_catalog::Impact::Destroys => "destructive: ".to_string(),
                c if c.asks() => format!("{c}: "),
                _ => String::new(),
            };
            let how = if naming.asks {
                "needs the user's confirmation"
            } else {
                "needs `confirm: true`"
            };
            line.push_str(&format!(" ({class}{how})"));
        }
        if naming.safe_mode && target.safety.mutating {
            line.push_str(" (safe mode: preview only)");
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return None;
    }
    Some(format!("\n\n**Next steps**\n{}", lines.join("\n")))
}

/// A destructive action that names no target: it removes whatever matches (a prune).
fn bulk_removal(action: &Action) -> bool {
    action.safety.destructive && action.targets().next().is_none()
}
