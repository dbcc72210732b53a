//! The prompts of every overlay layer, merged and checked against the built catalog: the
//! step of the build that makes `Catalog::prompts` (the types and rendering are `prompt.rs`).

use std::collections::BTreeMap;

use crate::model::{Catalog, UnmatchedOverlay};
use crate::overlay::{Loaded, OverlayFile};
use crate::prompt::{Part, Prompt, PromptArgument, parse_template};

/// A prompt while the layers are merged: each field with the file and line that set it.
#[derive(Default)]
struct Merged {
    title: Option<String>,
    description: Option<String>,
    arguments: Option<(Vec<PromptArgument>, String)>,
    template: Option<(String, String)>,
    exclude: Option<String>,
    first_at: String,
}

/// The prompts of every overlay layer, merged field by field (later files win), checked
/// against the catalog. A broken entry (a template that does not parse, a placeholder naming
/// no argument, a missing field, an argument declared twice or never used) fails the load with
/// `FILE:LINE`; an entry naming an action this spec lacks is reported as unmatched and left out.
pub(crate) fn assemble(
    overlays: &[Loaded<OverlayFile>],
    catalog: &Catalog,
) -> anyhow::Result<(Vec<Prompt>, Vec<UnmatchedOverlay>)> {
    let mut merged: BTreeMap<&str, Merged> = BTreeMap::new();
    for file in overlays {
        for (name, p) in &file.content.prompts {
            let at = |field: &str| {
                let line = file.lines.line_of(&["prompts", name.as_str(), field]);
                format!("{}:{line}", file.origin)
            };
            let m = merged.entry(name).or_default();
            if m.first_at.is_empty() {
                m.first_at = at("");
            }
            if let Some(t) = &p.title {
                m.title = Some(t.clone());
            }
            if let Some(d) = &p.description {
                m.description = Some(d.clone());
            }
            if let Some(a) = &p.arguments {
                m.arguments = Some((a.clone(), at("arguments")));
            }
            if let Some(t) = &p.template {
                m.template = Some((t.clone(), at("template")));
            }
            if let Some(x) = &p.exclude {
                m.exclude = Some(x.clone());
            }
        }
    }
    let mut prompts = Vec::new();
    let mut unmatched = Vec::new();
    let mut errors = Vec::new();
    for (name, m) in merged {
        if let Some(why) = &m.exclude {
            tracing::debug!(prompt = name, reason = %why, "prompt withdrawn by an overlay");
            continue;
        }
        let (Some(description), Some((template, template_at))) = (m.description, m.template) else {
            errors.push(format!(
                "{}: prompt `{name}` needs both `description` and `template` (a new prompt sets them; an entry changing a prompt of an earlier file may set fewer) — see docs/overlays.md#prompts",
                m.first_at
            ));
            continue;
        };
        let (arguments, args_at) = m.arguments.unwrap_or_default();
        let args_at = if args_at.is_empty() {
            template_at.clone()
        } else {
            args_at
        };
        let parts = match parse_template(&template) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{template_at}: prompt `{name}`: {e}"));
                continue;
            }
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut bad = false;
        for a in &arguments {
            if !seen.insert(a.name.as_str()) {
                errors.push(format!(
                    "{args_at}: prompt `{name}` declares argument `{}` twice — keep one",
                    a.name
                ));
                bad = true;
            }
        }
        for p in &parts {
            if let Part::Argument(a) = p
                && !seen.contains(a.as_str())
            {
                errors.push(format!(
                    "{template_at}: prompt `{name}`: the template uses `{{{{{a}}}}}`, which is not one of its arguments ({}) — declare it under `arguments`, or write an action as `{{{{domain.action}}}}`",
                    if seen.is_empty() { "it has none".to_string() } else { seen.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ") }
                ));
                bad = true;
            }
        }
        for a in &arguments {
            if !parts
                .iter()
                .any(|p| matches!(p, Part::Argument(x) if *x == a.name))
            {
                errors.push(format!(
                    "{args_at}: prompt `{name}`: argument `{}` is declared but the template never uses it — add `{{{{{}}}}}` to the template or remove the argument",
                    a.name, a.name
                ));
                bad = true;
            }
        }
        if bad {
            continue;
        }
        // A prompt follows an overlay's rename: an action written by its ID before the rename
        // (the built-in prompts are) is the renamed action.
        let parts = parts
            .into_iter()
            .map(|p| match p {
                Part::Action(id) if catalog.get(&id).is_none() => {
                    match catalog.resolve(&id).filter(|a| a.derived_id == id) {
                        Some(renamed) => Part::Action(renamed.id.clone()),
                        None => Part::Action(id),
                    }
                }
                other => other,
            })
            .collect();
        let prompt = Prompt {
            name: name.to_string(),
            title: m.title.unwrap_or_else(|| name.replace('-', " ")),
            description,
            arguments,
            parts,
            origin: template_at.clone(),
        };
        let missing: Vec<&str> = prompt
            .actions()
            .into_iter()
            .filter(|id| catalog.get(id).is_none_or(|a| a.id != *id))
            .collect();
        // An action an overlay excluded is withdrawn, as policy would withdraw it: the
        // prompt is left out without a warning (its job cannot be done here).
        if let Some(gone) = missing.iter().find(|id| {
            catalog
                .excluded
                .iter()
                .any(|x| x.id.as_deref() == Some(**id))
        }) {
            tracing::debug!(prompt = name, action = %gone, "prompt left out: an overlay excluded an action it names");
            continue;
        }
        if !missing.is_empty() {
            let (file, line) = template_at
                .rsplit_once(':')
                .map(|(f, l)| (f.to_string(), l.parse().unwrap_or(1)))
                .unwrap_or((template_at.clone(), 1));
            unmatched.push(UnmatchedOverlay {
                file,
                line,
                section: "prompts".into(),
                key: name.to_string(),
                closest: Vec::new(),
                reason: Some(format!(
                    "names {} which this Arcane spec lacks (closest: {}); the prompt is left out — fix the ID in the template",
                    missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
                    missing
                        .iter()
                        .flat_map(|m| catalog.closest(m, 1))
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            });
            continue;
        }
        prompts.push(prompt);
    }
    if !errors.is_empty() {
        anyhow::bail!(errors.join("\n"));
    }
    Ok((prompts, unmatched))
}
