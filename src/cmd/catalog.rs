//! `arcane-mcp catalog`: what the catalog built from the spec and overlays contains.

use std::process::ExitCode;

use crate::cmd::print::write_stdout;
use crate::config::{CatalogArgs, ServeArgs};
use crate::load::sources::Sources;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::load::spec::SpecSource;
use arcane_catalog::Catalog;

/// The JSON form printed by `arcane-mcp catalog --json`.
pub fn catalog_json(cat: &Catalog) -> Value {
    let actions: Vec<Value> = cat.actions.iter().map(action_json).collect();
    json!({
        "arcaneVersion": cat.arcane_version,
        "spec": cat.spec_origin,
        "actions": actions,
        "domains": cat.domains,
        "excluded": cat.excluded,
        "unmatchedOverlays": cat.unmatched_overlays,
    })
}

/// One action in full.
pub fn action_json(a: &arcane_catalog::Action) -> Value {
    json!({
        "id": a.id,
        "domain": a.domain,
        "title": a.title,
        "description": a.description,
        "usage": a.usage,
        "example": a.request.example,
        "method": a.request.method,
        "path": a.request.path,
        "operationId": a.request.operation_id,
        "derivedId": a.derived_id,
        "mutating": a.safety.mutating,
        "destructive": a.safety.destructive,
        "impact": a.safety.impact,
        "impactReason": a.safety.impact_reason,
        "idempotent": a.safety.idempotent,
        "undo": a.safety.undo,
        "kind": a.output.kind.as_str(),
        "list": a.output.list,
        "required": a.request.required,
        "params": a.params,
        "inputSchema": a.request.input_schema,
        "related": a.output.related,
        "followUps": a.output.follow_ups,
        "columns": a.output.columns,
        "emptyHint": a.output.empty_hint,
        "fullItem": a.output.full_item,
        "defaultSort": a.request.default_sort,
        "encodedJson": a.request.encoded,
        "revealsSecret": a.safety.reveals_secret,
        "longRunning": a.request.long_running,
        "source": a.source,
    })
}

/// The human summary: version, counts by kind, flags, exclusions.
pub fn summary(cat: &Catalog) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Arcane {} ({})", cat.arcane_version, cat.spec_origin);
    let _ = writeln!(
        out,
        "{} actions in {} domains",
        cat.actions.len(),
        cat.domains.len()
    );
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &cat.actions {
        *kinds.entry(a.output.kind.as_str()).or_default() += 1;
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "by result: {}", kinds.join(", "));
    let mutating = cat.actions.iter().filter(|a| a.safety.mutating).count();
    let destructive = cat.actions.iter().filter(|a| a.safety.destructive).count();
    let _ = writeln!(
        out,
        "read-only {}, mutating {mutating} (destructive {destructive})",
        cat.actions.len() - mutating
    );
    let mut classes: BTreeMap<arcane_catalog::Impact, usize> = BTreeMap::new();
    for a in cat.actions.iter().filter(|a| a.safety.mutating) {
        *classes.entry(a.safety.impact).or_default() += 1;
    }
    let classes: Vec<String> = classes.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(
        out,
        "impact of the mutating ones (every class but routine is asked): {}",
        classes.join(", ")
    );
    let mut undo: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unsaid = Vec::new();
    for a in cat.actions.iter().filter(|a| a.safety.mutating) {
        match &a.safety.undo {
            Some(arcane_catalog::Undo::By(_)) => *undo.entry("by an inverse").or_default() += 1,
            Some(arcane_catalog::Undo::Nothing(_)) => {
                *undo.entry("nothing to undo").or_default() += 1
            }
            Some(arcane_catalog::Undo::Never(_)) => {
                *undo.entry("cannot be undone").or_default() += 1
            }
            None => unsaid.push(a.id.as_str()),
        }
    }
    let undo: Vec<String> = undo.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "undo of the mutating ones: {}", undo.join(", "));
    if !unsaid.is_empty() {
        let _ = writeln!(
            out,
            "no `undo` said ({}; the question does not say whether they can be undone): {}",
            unsaid.len(),
            unsaid.join(", ")
        );
    }
    let unclassed: Vec<&str> = cat.unclassed().map(|a| a.id.as_str()).collect();
    if !unclassed.is_empty() {
        let _ = writeln!(
            out,
            "unclassed, asked until an overlay gives them an `impact` ({}): {}",
            unclassed.len(),
            unclassed.join(", ")
        );
    }
    if cat.excluded.is_empty() {
        let _ = writeln!(out, "excluded: none");
    } else {
        let _ = writeln!(out, "excluded ({}):", cat.excluded.len());
        for e in &cat.excluded {
            let _ = writeln!(
                out,
                "  {} {} ({}): {}",
                e.method, e.path, e.operation_id, e.reason
            );
        }
    }
    if cat.unmatched_overlays.is_empty() {
        let _ = writeln!(out, "unmatched overlay entries: none");
    } else {
        let _ = writeln!(
            out,
            "unmatched overlay entries ({}) — these change nothing:",
            cat.unmatched_overlays.len()
        );
        for u in &cat.unmatched_overlays {
            let _ = writeln!(out, "  {u}");
        }
    }
    let _ = writeln!(out, "domains:");
    for d in &cat.domains {
        let _ = writeln!(out, "  {:<28} {:>3}  {}", d.name, d.actions.len(), d.title);
    }
    out
}

/// `--show ID`: one action, pretty JSON; an unknown name gets the closest IDs.
pub fn show(cat: &Catalog, name: &str) -> Result<String> {
    match cat.resolve(name) {
        Some(a) => Ok(serde_json::to_string_pretty(&action_json(a))?),
        None => {
            if let Some(e) = cat
                .excluded
                .iter()
                .find(|e| e.id.as_deref() == Some(name) || e.operation_id == name)
            {
                return Err(anyhow!("{name} is excluded: {}", e.reason));
            }
            Err(anyhow!(
                "no action {name:?}; closest: {}",
                cat.closest(name, 5).join(", ")
            ))
        }
    }
}

/// `catalog --diff OLD`: the upgrade preview from OLD (a spec file, `live` for the Arcane at
/// `arcane_url`, or an Arcane base URL) to the catalog of `new`, with the same overlays.
pub fn upgrade_preview(
    new: &Sources,
    old: &str,
    arcane_url: Option<&str>,
    json: bool,
) -> Result<String> {
    let old_spec = if old.starts_with("http://") || old.starts_with("https://") {
        SpecSource {
            arcane_url: Some(old.to_string()),
            ..Default::default()
        }
    } else if old == "live" && !std::path::Path::new(old).exists() {
        let url = arcane_url.ok_or_else(|| {
            anyhow!("--diff live compares with the Arcane at ARCANE_URL; set ARCANE_URL (or --arcane-url)")
        })?;
        SpecSource {
            arcane_url: Some(url.to_string()),
            ..Default::default()
        }
    } else {
        SpecSource {
            explicit: Some(old.into()),
            ..Default::default()
        }
    };
    let old_sources = Sources {
        spec: old_spec,
        ..new.clone()
    };
    let old_cat = old_sources
        .build()
        .map_err(|e| anyhow!("the old catalog ({old}): {e:#}"))?;
    let new_cat = new.build().map_err(|e| anyhow!("the new catalog: {e:#}"))?;
    let diff = arcane_catalog::diff(&old_cat, &new_cat);
    Ok(if json {
        format!("{}\n", serde_json::to_string_pretty(&diff)?)
    } else {
        diff.text()
    })
}

/// `arcane-mcp catalog [--json | --show ID | --diff OLD]`.
pub fn run(settings: &ServeArgs, args: &CatalogArgs) -> Result<ExitCode> {
    let url = settings.spec_url()?;
    let sources = Sources::from_args(&settings.source, url.as_deref());
    if let Some(old) = &args.diff {
        write_stdout(&upgrade_preview(&sources, old, url.as_deref(), args.json)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let cat = sources.build()?;
    let text = if let Some(name) = &args.show {
        show(&cat, name)? + "\n"
    } else if args.json {
        serde_json::to_string_pretty(&catalog_json(&cat))? + "\n"
    } else {
        summary(&cat)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
