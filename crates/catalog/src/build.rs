//! Building the catalog: OpenAPI operations → derived actions → declarations → overlays.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

use crate::derive::{self, clean_input_schema, derive_flags, derive_name, schema_is_array};
use crate::impact::{Impact, Reclass};
use crate::model::{
    Action, BodyEncoding, Catalog, EncodedJson, Excluded, Output, Param, ParamLocation, Request,
    ResultKind, Safety, UnmatchedOverlay,
};
use crate::overlay::{ActionOverlay, Layers, Loaded, OverlayFile, ParamOverlay};
use crate::spec::{RefResolver, SpecDoc};

/// HTTP methods an OpenAPI path item can hold, in the order collisions are settled.
const METHODS: [&str; 7] = ["get", "head", "post", "put", "patch", "delete", "options"];

/// The longest tool name MCP clients accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Everything a catalog is built from.
pub struct BuildInput<'a> {
    pub spec: &'a SpecDoc,
    pub layers: &'a Layers,
}

/// One operation of the spec, before overlays.
struct Operation<'a> {
    method: String,
    path: String,
    op: &'a Value,
    path_item: &'a Value,
}

/// Builds the catalog. Fails on an inconsistency an operator must fix (duplicate IDs, an
/// overlay renaming two actions to one ID, an invalid ID); the error names the file.
pub fn build_catalog(input: BuildInput<'_>) -> Result<Catalog> {
    let root = &input.spec.root;
    let resolver = RefResolver::new(root);
    let ops = operations(root, &resolver);

    // Derive every action, then settle collisions.
    let mut actions = derive_all(&ops, &resolver);
    resolver.check(&input.spec.origin)?;
    settle_collisions(&mut actions);
    for a in &mut actions {
        a.derived_id = a.id.clone();
    }

    // Declarations: hand-written actions (later files replace earlier ones with the same ID).
    let mut declared: BTreeMap<String, Action> = BTreeMap::new();
    for file in &input.layers.declarations {
        for d in &file.content.actions {
            declared.insert(d.id.clone(), action_from_declaration(d, &file.origin)?);
        }
    }
    for (id, a) in declared {
        if let Some(pos) = actions.iter().position(|x| x.id == id) {
            // A declaration wins over a derived action of the same ID: it knows more.
            tracing::debug!(id = %id, "declaration replaces the derived action");
            actions[pos] = a;
        } else {
            actions.push(a);
        }
    }

    // Overlays: every file's domain section first (renames change IDs), then every file's
    // action section, in file order, so later files win.
    let mut domain_meta: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut excluded = Vec::new();
    let mut unmatched = Vec::new();
    // Domain entries naming no domain, as (file, key); settled against the final domains too.
    let mut unmatched_domains: Vec<(&Loaded<OverlayFile>, &String)> = Vec::new();
    let mut vocabulary = crate::vocabulary::Vocabulary::default();
    let mut presets = BTreeMap::new();
    // The last file's `encodedJson` of each action, applied once after every overlay (so an
    // operator's list replaces the built-in one instead of stacking on it).
    let mut encodings: BTreeMap<String, (&Loaded<OverlayFile>, &String, &[EncodedJson])> =
        BTreeMap::new();
    for file in &input.layers.overlays {
        for (from, d) in &file.content.domains {
            if !actions.iter().any(|a| &a.domain == from) {
                unmatched_domains.push((file, from));
            }
            if let Some(to) = &d.rename {
                for a in actions.iter_mut().filter(|a| &a.domain == from) {
                    a.domain = to.clone();
                    a.id = format!("{}.{}", a.domain, a.name);
                }
            }
            let target = d.rename.clone().unwrap_or_else(|| from.clone());
            let entry = domain_meta
                .entry(target.clone())
                .or_insert_with(|| (derive::humanize_domain(&target), String::new()));
            if let Some(t) = &d.title {
                entry.0 = t.clone();
            }
            if let Some(desc) = &d.description {
                entry.1 = desc.clone();
            }
            if let Some(words) = &d.keywords {
                vocabulary
                    .domain_keywords
                    .entry(target)
                    .or_default()
                    .extend(words.iter().cloned());
            }
        }
        vocabulary.merge(&file.content.vocabulary);
        presets.extend(
            file.content
                .presets
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
    }
    // Shared parameter corrections first, so that an action's own entry wins.
    for file in &input.layers.overlays {
        for (name, po) in &file.content.shared_params {
            for a in actions.iter_mut().filter(|a| {
                a.params
                    .iter()
                    .any(|p| &p.name == name && p.location == crate::model::ParamLocation::Query)
            }) {
                // The parameter is there: nothing can misfit.
                let _ = apply_param(a, name, po);
            }
        }
    }
    let mut param_misfits = Vec::new();
    // Where each action's `confirmDiff` was last set, for the errors of `check_confirm_diffs`.
    let mut diff_origins: HashMap<String, (String, usize, String)> = HashMap::new();
    // Where each action's `undo` was last set, for the errors of `undo_check::check_all`.
    let mut undo_origins: HashMap<String, (String, usize, String)> = HashMap::new();
    // Impact classes declared by the built-in files and by the operator's, by derived ID.
    let mut classes = Classes::default();
    for file in &input.layers.overlays {
        for (key, ov) in &file.content.actions {
            let found = actions.iter().position(|a| {
                a.id == *key
                    || a.request.operation_id.as_deref() == Some(key.as_str())
                    || a.derived_id == *key
            });
            let Some(i) = found else {
                unmatched.push((file, "actions", key));
                continue;
            };
            if let Some(reason) = &ov.exclude {
                let a = actions.remove(i);
                excluded.push(Excluded {
                    id: Some(a.id.clone()),
                    operation_id: a.request.operation_id.clone().unwrap_or_default(),
                    method: a.request.method.clone(),
                    path: a.request.path.clone(),
                    reason: reason.clone(),
                });
                continue;
            }
            let keywords_before = actions[i].search.keywords.len();
            let problems = apply_overlay(&mut actions[i], ov);
            if !crate::model::is_built_in(&file.origin) {
                let a = &mut actions[i];
                let added = a.search.keywords[keywords_before..].to_vec();
                a.search.operator_keywords.extend(added);
            }
            for (name, problem) in problems {
                param_misfits.push(UnmatchedOverlay {
                    file: file.origin.clone(),
                    line: file
                        .lines
                        .line_of(&["actions", key.as_str(), "params", name.as_str()]),
                    section: "actions".into(),
                    key: key.clone(),
                    closest: Vec::new(),
                    reason: Some(problem),
                });
            }
            if let Some(list) = &ov.encoded_json {
                let id = actions[i].derived_id.clone();
                encodings.insert(id, (file, key, list.as_slice()));
            }
            if let Some(class) = ov.impact {
                let at = format!(
                    "{}:{}",
                    file.origin,
                    file.lines.line_of(&["actions", key.as_str(), "impact"])
                );
                let declared = (class, ov.impact_reason.clone(), at);
                let layer = if crate::model::is_built_in(&file.origin) {
                    &mut classes.built_in
                } else {
                    &mut classes.operator
                };
                layer.insert(actions[i].derived_id.clone(), declared);
            }
            if let Some(u) = &ov.undo {
                let at = file.lines.line_of(&["actions", key.as_str(), "undo"]);
                let undo = u
                    .read()
                    .map_err(|e| anyhow::anyhow!("{}:{at}: {key}: undo {e}", file.origin))?;
                actions[i].safety.undo = Some(undo);
                undo_origins.insert(
                    actions[i].derived_id.clone(),
                    (file.origin.clone(), at, key.clone()),
                );
            }
            if ov.confirm_diff.is_some() {
                let at = file
                    .lines
                    .line_of(&["actions", key.as_str(), "confirmDiff"]);
                diff_origins.insert(
                    actions[i].derived_id.clone(),
                    (file.origin.clone(), at, key.clone()),
                );
            }
        }
    }
    // A declaration that does not fit its action is reported like an entry matching nothing:
    // it may be written for another Arcane version.
    let mut misfits = param_misfits;
    for (id, (file, key, list)) in encodings {
        // An action excluded by a later file has nothing to expose.
        if let Some(a) = actions.iter_mut().find(|a| a.derived_id == id) {
            for problem in crate::encoded::expose(a, list) {
                misfits.push(UnmatchedOverlay {
                    file: file.origin.clone(),
                    line: file
                        .lines
                        .line_of(&["actions", key.as_str(), "encodedJson"]),
                    section: "actions".into(),
                    key: key.clone(),
                    closest: Vec::new(),
                    reason: Some(problem),
                });
            }
        }
    }

    let reclassed = classes.apply(&mut actions);

    // Invariants an operator's overlay could break: say which.
    let mut seen: HashMap<&str, &Action> = HashMap::new();
    for a in &actions {
        if !is_valid_id(&a.id) {
            bail!(
                "action ID {:?} ({} {}) is not of the form domain.action in lower snake_case; fix the overlay that sets it",
                a.id,
                a.request.method,
                a.request.path
            );
        }
        if let Some(prev) = seen.insert(&a.id, a) {
            bail!(
                "two actions have the ID {}: {} {} and {} {}; give one of them another `id` in an overlay",
                a.id,
                prev.request.method,
                prev.request.path,
                a.request.method,
                a.request.path
            );
        }
    }
    check_text_omits(&actions)?;
    let diff_misfits = check_confirm_diffs(&mut actions, &diff_origins)?;
    let withdrawn: HashSet<&str> = excluded.iter().filter_map(|e| e.id.as_deref()).collect();
    let undo_misfits = crate::undo_check::check_all(&mut actions, &undo_origins, &withdrawn)?;
    check_confirm_scopes(&mut actions)?;
    let known: HashSet<String> = actions.iter().map(|a| a.id.clone()).collect();
    for a in &mut actions {
        a.output.related.retain(|r| known.contains(r) && r != &a.id);
        a.output.follow_ups.retain(|f| known.contains(&f.action));
        if a.output
            .full_item
            .as_ref()
            .is_some_and(|f| !known.contains(f))
        {
            a.output.full_item = None;
        }
    }

    let mut catalog = Catalog::new(
        input.spec.version().to_string(),
        input.spec.origin.clone(),
        actions,
        &domain_meta,
        excluded,
    );
    // Resolvers: the last entry for a parameter wins; one whose list action this spec lacks is
    // skipped with a warning, and one with a bad `keep` fails the load.
    let mut resolvers: Vec<crate::model::ParamResolver> = Vec::new();
    for file in &input.layers.overlays {
        for r in &file.content.resolvers {
            if let Some(k) = &r.keep {
                regex::Regex::new(k).map_err(|e| {
                    anyhow::anyhow!(
                        "{}: resolver for {}: `keep` is not a valid regular expression: {e}",
                        file.origin,
                        r.param
                    )
                })?;
            }
            if catalog.get(&r.through).is_none() {
                // Another Arcane version may lack the list; the value is then sent as given.
                tracing::warn!(file = %file.origin, param = %r.param, through = %r.through,
                    "resolver's list action is not in this spec; the parameter is not looked up");
                continue;
            }
            resolvers.retain(|x| x.param != r.param);
            resolvers.push(r.clone());
        }
    }
    catalog.resolvers = resolvers;
    catalog.reclassed = reclassed;
    // An operator's hints (later files) are tried before the built-in ones.
    catalog.error_hints = input
        .layers
        .overlays
        .iter()
        .rev()
        .flat_map(|f| f.content.error_hints.iter().cloned())
        .collect();
    for (file, key) in unmatched_domains {
        if catalog.domain(key).is_none() {
            unmatched.push((file, "domains", key));
        }
    }
    let entries: usize = input
        .layers
        .overlays
        .iter()
        .map(|f| f.content.actions.len() + f.content.domains.len())
        .sum();
    catalog.applied_overlays = entries - unmatched.len();
    catalog.unmatched_overlays = unmatched
        .into_iter()
        .map(|(file, section, key)| {
            // Built-in entries are written for the Arcane version we ship against: on another
            // version many match nothing (1,022 on 1.11.2) and a closest name is no fix for a
            // file the operator cannot edit; the search for one was most of such a build.
            let closest = if crate::model::is_built_in(&file.origin) {
                Vec::new()
            } else if section == "domains" {
                closest_domains(&catalog, key, 3)
            } else {
                catalog
                    .closest(key, 3)
                    .into_iter()
                    .map(str::to_string)
                    .collect()
            };
            UnmatchedOverlay {
                file: file.origin.clone(),
                line: file.lines.line_of(&[section, key.as_str()]),
                section: section.to_string(),
                key: key.clone(),
                closest,
                reason: None,
            }
        })
        .chain(misfits)
        .chain(diff_misfits)
        .chain(undo_misfits)
        .collect();
    catalog.vocabulary = vocabulary;
    catalog.presets = presets;
    let (prompts, prompt_misfits) =
        crate::prompt_layers::assemble(&input.layers.overlays, &catalog)?;
    catalog.prompts = prompts;
    catalog.unmatched_overlays.extend(prompt_misfits);
    Ok(catalog)
}

/// Declared impact classes (class, reason, `FILE:LINE`), by derived ID: the built-in files'
/// and the operator's apart, so that an operator's change of class can be told.
#[derive(Default)]
struct Classes {
    built_in: HashMap<String, (Impact, Option<String>, String)>,
    operator: HashMap<String, (Impact, Option<String>, String)>,
}

impl Classes {
    /// Gives every action its class: the operator's, else the built-in files', else the
    /// rules' (an unrecognised write is `unclassed`, and asked). A declared class settles
    /// `destructive` too, so the annotation and the question agree. Returns the operator's
    /// changes of class.
    fn apply(&self, actions: &mut [Action]) -> Vec<Reclass> {
        let mut reclassed = Vec::new();
        for a in actions.iter_mut() {
            let built_in = self.built_in.get(&a.derived_id);
            let base = built_in.map_or_else(|| crate::classify::derive(a), |d| d.0);
            let declared = match self.operator.get(&a.derived_id) {
                Some((class, reason, at)) => {
                    if *class != base {
                        reclassed.push(Reclass {
                            id: a.id.clone(),
                            was: base,
                            now: *class,
                            at: at.clone(),
                            reason: reason.clone(),
                        });
                    }
                    Some((*class, reason.clone()))
                }
                None => built_in.map(|(c, r, _)| (*c, r.clone())),
            };
            match declared {
                Some((class, reason)) => {
                    a.safety.impact = class;
                    a.safety.impact_reason = reason;
                    a.safety.destructive = class == Impact::Destroys;
                    if class == Impact::Destroys {
                        a.safety.mutating = true;
                    }
                }
                None => a.safety.impact = base,
            }
        }
        reclassed
    }
}

/// Domain names closest to an unknown one, best first (only fair matches).
fn closest_domains(catalog: &Catalog, name: &str, n: usize) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = catalog
        .domains
        .iter()
        .map(|d| (strsim::jaro_winkler(name, &d.name), d.name.as_str()))
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(n)
        .map(|(_, d)| d.to_string())
        .collect()
}

/// Whether an ID is `domain.action` in lower snake_case.
pub fn is_valid_id(id: &str) -> bool {
    let mut parts = id.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            let mut cs = p.chars();
            cs.next().is_some_and(|c| c.is_ascii_lowercase())
                && cs.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// Applies an action's overlay entry; the parameter entries that fit nothing, with why.
fn apply_overlay(a: &mut Action, ov: &ActionOverlay) -> Vec<(String, String)> {
    if let Some(id) = &ov.id
        && let Some((d, n)) = id.split_once('.')
    {
        a.domain = d.to_string();
        a.name = n.to_string();
        a.id = id.clone();
    }
    macro_rules! set {
        ($field:ident) => {
            if let Some(v) = &ov.$field {
                a.$field = v.clone();
            }
        };
        ($group:ident . $field:ident) => {
            if let Some(v) = &ov.$field {
                a.$group.$field = v.clone();
            }
        };
    }
    set!(title);
    set!(description);
    set!(usage);
    set!(output.related);
    set!(output.follow_ups);
    set!(safety.mutating);
    set!(safety.destructive);
    set!(safety.idempotent);
    if ov.example.is_some() {
        a.request.example = ov.example.clone();
    }
    if ov.columns.is_some() {
        a.output.columns = ov.columns.clone();
    }
    if ov.empty_hint.is_some() {
        a.output.empty_hint = ov.empty_hint.clone();
    }
    if ov.full_item.is_some() {
        a.output.full_item = ov.full_item.clone();
    }
    if let Some(omits) = &ov.text_omits {
        a.output.text_omits = omits.clone();
    }
    if ov.default_sort.is_some() {
        a.request.default_sort = ov.default_sort.clone();
    }
    if ov.reveals_secret.is_some() {
        a.safety.reveals_secret = ov.reveals_secret.clone();
    }
    if let Some(rule) = ov.confirm {
        a.safety.confirm_always = rule == crate::overlay::ConfirmRule::Always;
    }
    if let Some(diff) = &ov.confirm_diff {
        a.safety.confirm_diff = diff.clone();
    }
    if let Some(kind) = ov.result {
        a.output.kind = kind;
    }
    if let Some(long) = ov.long_running {
        a.request.long_running = long;
    }
    if let Some(w) = &ov.widen {
        a.output.widenings.extend(w.iter().cloned());
    }
    if let Some(k) = &ov.keywords {
        a.search.keywords.extend(k.iter().cloned());
    }
    if let Some(k) = &ov.asks {
        a.search.asks.extend(k.iter().cloned());
    }
    if ov.no_effect.is_some() {
        a.safety.no_effect = ov.no_effect.clone();
    }
    if let Some(notes) = &ov.confirm_scope {
        a.safety.confirm_scope = notes.clone();
    }
    let mut problems = Vec::new();
    if let Some(params) = &ov.params {
        for (name, po) in params {
            if let Err(why) = apply_param(a, name, po) {
                problems.push((name.clone(), why));
            }
        }
    }
    if a.safety.destructive {
        a.safety.mutating = true;
    }
    problems
}

/// Applies one parameter correction: its description and its closed set of values (`enum`),
/// in the parameter's schema and in the action's input schema alike. `name` may be a dotted
/// path into an object parameter (`images.mode`). A description for a parameter the action
/// lacks changes nothing (descriptions are cosmetic); an `enum` that finds no property is an
/// error, since the check it asks for would silently not happen.
fn apply_param(a: &mut Action, name: &str, po: &ParamOverlay) -> Result<(), String> {
    let mut path = name.split('.');
    let top = path.next().unwrap_or_default();
    let rest: Vec<&str> = path.collect();
    /// The property schema at `rest` below `schema` (through `properties`).
    fn below<'s>(
        mut schema: &'s mut Value,
        rest: &[&str],
    ) -> Option<&'s mut serde_json::Map<String, Value>> {
        for key in rest {
            schema = schema.get_mut("properties")?.get_mut(*key)?;
        }
        schema.as_object_mut()
    }
    let set = |s: &mut serde_json::Map<String, Value>| {
        if let Some(d) = po.description() {
            s.insert("description".into(), Value::String(d.to_string()));
        }
        if let Some(values) = po.values() {
            s.insert("enum".into(), Value::Array(values.to_vec()));
        }
    };
    let Some(p) = a.params.iter_mut().find(|p| p.name == top) else {
        return if po.values().is_some() {
            Err(format!(
                "{} has no parameter {top:?} for this `enum`; see `arcane-mcp catalog --show {}`",
                a.id, a.id
            ))
        } else if po.takes_path().is_some() {
            Err(format!(
                "`takesPath` is set on parameter `{name}`, which {} does not have",
                a.id
            ))
        } else {
            Ok(())
        };
    };
    if let Some(takes_path) = po.takes_path() {
        if p.location == ParamLocation::Path && rest.is_empty() {
            p.takes_path = takes_path;
        } else {
            return Err(format!(
                "`takesPath` is set on parameter `{name}` of {}, which is not a path parameter",
                a.id
            ));
        }
    }
    if rest.is_empty()
        && let Some(d) = po.description()
    {
        p.description = d.to_string();
    }
    let in_param = below(&mut p.schema, &rest).map(&set).is_some();
    let in_input = a
        .request
        .input_schema
        .get_mut("properties")
        .and_then(|ps| ps.get_mut(top))
        .and_then(|s| below(s, &rest))
        .map(&set)
        .is_some();
    if po.values().is_some() && !(in_param && in_input) {
        return Err(format!(
            "{} has no property {name:?} for this `enum` (the parameter {top:?} has no such \
             field); see `arcane-mcp catalog --show {}`",
            a.id, a.id
        ));
    }
    Ok(())
}

/// Settles derived-ID collisions: the first by method order keeps the ID; the others take the
/// method's verb before the action (`update_workspace`), and failing that the operationId.
fn settle_collisions(actions: &mut [Action]) {
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, a) in actions.iter().enumerate() {
        groups.entry(a.id.clone()).or_default().push(i);
    }
    let mut taken: HashSet<String> = actions.iter().map(|a| a.id.clone()).collect();
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    groups.sort();
    for mut group in groups {
        group.sort_by_key(|&i| {
            METHODS
                .iter()
                .position(|m| m.eq_ignore_ascii_case(&actions[i].request.method))
        });
        for &i in &group[1..] {
            let a = &actions[i];
            let verb = match a.request.method.as_str() {
                "PUT" | "PATCH" => "update",
                "DELETE" => "delete",
                "POST" => "create",
                "HEAD" => "head",
                _ => "get",
            };
            let candidate = if a.name.starts_with(verb) {
                None
            } else {
                Some(format!("{}_{}", verb, a.name))
            };
            let name = match candidate {
                Some(c) if !taken.contains(&format!("{}.{}", a.domain, c)) => c,
                _ => derive::snake(a.request.operation_id.as_deref().unwrap_or(&a.name)),
            };
            let a = &mut actions[i];
            a.name = name;
            a.id = format!("{}.{}", a.domain, a.name);
            taken.insert(a.id.clone());
        }
    }
}

/// Every operation of the document, in its order.
fn operations<'a>(root: &'a Value, resolver: &RefResolver<'a>) -> Vec<Operation<'a>> {
    let mut ops = Vec::new();
    if let Some(paths) = root.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            let item = resolver.deref(item);
            for m in METHODS {
                if let Some(op) = item.get(m) {
                    ops.push(Operation {
                        method: m.to_ascii_uppercase(),
                        path: path.clone(),
                        op,
                        path_item: item,
                    });
                }
            }
        }
    }
    ops
}

/// Derives every operation's action, in the operations' order, on up to one thread per core:
/// deriving one reads only the document, and derivation is most of a catalog build (the
/// server's startup and every reload).
fn derive_all(ops: &[Operation<'_>], resolver: &RefResolver<'_>) -> Vec<Action> {
    let derive = |part: &[Operation<'_>]| -> Vec<Action> {
        part.iter()
            .map(|o| action_from_operation(o, resolver))
            .collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if threads < 2 || ops.len() < 64 {
        return derive(ops);
    }
    let chunk = ops.len().div_ceil(threads);
    std::thread::scope(|s| {
        let started: Vec<_> = ops
            .chunks(chunk)
            .map(|part| {
                let handle = std::thread::Builder::new()
                    .name("derive".into())
                    .spawn_scoped(s, move || derive(part));
                (part, handle)
            })
            .collect();
        started
            .into_iter()
            .flat_map(|(part, handle)| match handle {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => derive(part),
            })
            .collect()
    })
}

fn action_from_operation(o: &Operation<'_>, resolver: &RefResolver<'_>) -> Action {
    let op = o.op;
    let (kind, response_schema) = result_kind(o, resolver);
    let answers_array = response_schema.as_ref().is_some_and(schema_is_array);
    let (domain, name) = derive_name(&o.method, &o.path, answers_array);
    let (mutating, destructive, idempotent) = derive_flags(&o.method, &name);
    let summary = op
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let description = op
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or(summary)
        .trim()
        .to_string();
    let title = if summary.is_empty() {
        format!(
            "{} {}",
            derive::humanize_domain(&name),
            domain.replace('_', " ")
        )
    } else {
        summary.to_string()
    };
    let (params, body) = build_params(o, resolver);
    let input_schema = input_schema_of(&params);
    let required = required_of(&params);
    let sortable = params
        .iter()
        .any(|p| p.name == "sort" && p.location == ParamLocation::Query);
    Action {
        id: format!("{domain}.{name}"),
        domain,
        name,
        title,
        description,
        params,
        source: "openapi".into(),
        request: Request {
            method: o.method.clone(),
            path: o.path.clone(),
            operation_id: op
                .get("operationId")
                .and_then(Value::as_str)
                .map(str::to_string),
            body,
            input_schema,
            required,
            sortable,
            ..Request::default()
        },
        safety: Safety {
            mutating,
            destructive,
            idempotent,
            ..Safety::default()
        },
        output: Output {
            kind,
            list: answers_array,
            response_schema,
            ..Output::default()
        },
        ..Action::default()
    }
}

/// The result kind from the first 2xx response's content types, and its JSON schema.
fn result_kind(o: &Operation<'_>, resolver: &RefResolver<'_>) -> (ResultKind, Option<Value>) {
    let Some(responses) = o.op.get("responses").and_then(Value::as_object) else {
        return (ResultKind::Json, None);
    };
    let success = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .min_by_key(|(code, _)| code.to_string());
    let Some((code, resp)) = success else {
        return (ResultKind::Json, None);
    };
    let resp = resolver.deref(resp);
    let content = resp.get("content").and_then(Value::as_object);
    let types: Vec<&str> = content
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if o.method == "HEAD" || code == "204" || code == "205" {
        return (ResultKind::Empty, None);
    }
    if let Some(t) = types.iter().find(|t| is_json_type(t)) {
        let schema = content
            .and_then(|c| c.get(*t))
            .and_then(|m| m.get("schema"))
            .map(|s| resolver.inline(s));
        return (ResultKind::Json, schema);
    }
    if types
        .iter()
        .any(|t| t.contains("json-stream") || t.contains("ndjson") || t.contains("jsonl"))
    {
        return (ResultKind::Stream, None);
    }
    // No declared content (Arcane's streams and downloads both look like this) or a file type.
    (ResultKind::Download, None)
}

fn is_json_type(t: &str) -> bool {
    t == "application/json"
        || (t.starts_with("application/") && t.ends_with("+json") && !t.contains("problem"))
}

/// The parameters of an operation: path and query, then the body.
fn build_params(o: &Operation<'_>, resolver: &RefResolver<'_>) -> (Vec<Param>, BodyEncoding) {
    let env_param = o.path.starts_with("/environments/{id}");
    let mut params: Vec<Param> = Vec::new();
    let mut raw: Vec<&Value> = Vec::new();
    for list in [o.path_item.get("parameters"), o.op.get("parameters")]
        .into_iter()
        .flatten()
    {
        if let Some(arr) = list.as_array() {
            raw.extend(arr.iter().map(|p| resolver.deref(p)));
        }
    }
    for p in raw {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") if env_param && name == "id" => ParamLocation::Environment,
            Some("path") => ParamLocation::Path,
            Some("query") => ParamLocation::Query,
            Some("header") => ParamLocation::Header,
            _ => continue, // cookies are never sent by this server
        };
        let description = p
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (client_name, schema, required) = if location == ParamLocation::Environment {
            (
                "environmentId".to_string(),
                derive::environment_param_schema(),
                false,
            )
        } else {
            let mut schema =
                clean_input_schema(&resolver.inline(p.get("schema").unwrap_or(&json!({}))));
            add_description(&mut schema, &description);
            let required = location == ParamLocation::Path
                || p.get("required").and_then(Value::as_bool).unwrap_or(false);
            (name.to_string(), schema, required)
        };
        // An operation-level parameter overrides a path-level one of the same name.
        params.retain(|q| q.wire_name != name || q.location != location);
        params.push(Param {
            name: client_name,
            wire_name: name.to_string(),
            location,
            required,
            description,
            schema,
            takes_path: false,
        });
    }

    let mut encoding = BodyEncoding::None;
    if let Some(body) = o.op.get("requestBody").map(|b| resolver.deref(b)) {
        let body_required = body
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let content = body.get("content").and_then(Value::as_object);
        let pick = |pred: &dyn Fn(&str) -> bool| {
            content.and_then(|c| c.iter().find(|(t, _)| pred(t)).map(|(_, m)| m))
        };
        let json_media = pick(&|t| is_json_type(t)).map(|m| (m, BodyEncoding::Json));
        let form_media = || {
            pick(&|t| t.starts_with("multipart/") || t == "application/x-www-form-urlencoded")
                .map(|m| (m, BodyEncoding::Multipart))
        };
        if let Some((media, enc)) = json_media.or_else(form_media) {
            encoding = enc;
            let schema =
                clean_input_schema(&resolver.inline(media.get("schema").unwrap_or(&json!({}))));
            let location = if enc == BodyEncoding::Json {
                ParamLocation::BodyProperty
            } else {
                ParamLocation::FormField
            };
            lift_body(&mut params, &schema, body_required, location);
        } else if content.is_some_and(|c| !c.is_empty()) {
            encoding = BodyEncoding::OctetStream;
            params.push(Param {
                name: "body".into(),
                wire_name: "body".into(),
                location: ParamLocation::Body,
                required: body_required,
                description: "Raw request body, base64-encoded".into(),
                schema: json!({"type": "string", "contentEncoding": "base64", "description": "Raw request body, base64-encoded"}),
                takes_path: false,
            });
        }
    }
    (params, encoding)
}

/// Lifts a JSON object body's properties to the top level. A property named like a path or
/// query parameter is renamed `body_<name>` (the collision rule of ARCHITECTURE.md); a
/// non-object body becomes one `body` parameter.
fn lift_body(params: &mut Vec<Param>, schema: &Value, body_required: bool, loc: ParamLocation) {
    let props = schema.get("properties").and_then(Value::as_object);
    let is_object = props.is_some_and(|p| !p.is_empty());
    if !is_object {
        let whole = if loc == ParamLocation::FormField {
            ParamLocation::FormField
        } else {
            ParamLocation::Body
        };
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("Request body")
            .to_string();
        params.push(Param {
            name: "body".into(),
            wire_name: "body".into(),
            location: whole,
            required: body_required,
            description,
            schema: schema.clone(),
            takes_path: false,
        });
        return;
    }
    let required: HashSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props.into_iter().flatten() {
        let taken = params.iter().any(|p| p.name == *name);
        let client = if taken {
            format!("body_{name}")
        } else {
            name.clone()
        };
        let mut prop_schema = prop.clone();
        let is_binary = |s: &Value| s.get("format").and_then(Value::as_str) == Some("binary");
        // `format: binary` stays: the executor sends such fields as file parts.
        if loc == ParamLocation::FormField && is_binary(prop) {
            prop_schema = json!({
                "type": "string",
                "format": "binary",
                "description": format!("{} (file contents as text; prefix with base64: for binary)",
                    prop.get("description").and_then(Value::as_str).unwrap_or("File")),
            });
        } else if loc == ParamLocation::FormField && prop.get("items").is_some_and(is_binary) {
            prop_schema = json!({
                "type": "array",
                "items": {"type": "string", "format": "binary"},
                "description": format!("{} (one file per item, contents as text; prefix an item with base64: for binary)",
                    prop.get("description").and_then(Value::as_str).unwrap_or("Files")),
            });
        }
        params.push(Param {
            name: client,
            wire_name: name.clone(),
            location: loc,
            required: body_required && required.contains(name.as_str()),
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            schema: prop_schema,
            takes_path: false,
        });
    }
}

fn add_description(schema: &mut Value, description: &str) {
    if description.is_empty() {
        return;
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.entry("description")
            .or_insert_with(|| Value::String(description.to_string()));
    }
}

/// The names of the parameters a call must give.
fn required_of(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.clone())
        .collect()
}

/// The self-contained input schema of a parameter list.
pub fn input_schema_of(params: &[Param]) -> Value {
    let mut props = Map::new();
    for p in params {
        props.insert(p.name.clone(), p.schema.clone());
    }
    let required: Vec<Value> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| Value::String(p.name.clone()))
        .collect();
    let mut schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

fn action_from_declaration(d: &crate::overlay::Declaration, origin: &str) -> Result<Action> {
    let Some((domain, name)) = d.id.split_once('.') else {
        bail!("{origin}: declaration ID {:?} is not domain.action", d.id);
    };
    let mut params = Vec::new();
    if d.handler.path.starts_with("/environments/{id}") {
        params.push(Param {
            name: "environmentId".into(),
            wire_name: "id".into(),
            location: ParamLocation::Environment,
            required: false,
            description: "Environment ID; defaults to the configured environment".into(),
            schema: derive::environment_param_schema(),
            takes_path: false,
        });
    }
    let required: HashSet<&str> = d
        .params
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = d.params.get("properties").and_then(Value::as_object) {
        for (pname, schema) in props {
            let in_path = d.handler.path.contains(&format!("{{{pname}}}"));
            params.push(Param {
                name: pname.clone(),
                wire_name: pname.clone(),
                location: if in_path {
                    ParamLocation::Path
                } else {
                    ParamLocation::Handler
                },
                required: required.contains(pname.as_str()) || in_path,
                description: schema
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                schema: schema.clone(),
                takes_path: false,
            });
        }
    }
    let runs_commands = d.handler.kind == "ws_exec";
    let input_schema = input_schema_of(&params);
    let required = required_of(&params);
    Ok(Action {
        id: d.id.clone(),
        domain: domain.to_string(),
        name: name.to_string(),
        title: d.title.clone(),
        description: d.description.clone(),
        usage: d.usage.clone(),
        params,
        request: Request {
            method: "GET".into(),
            path: d.handler.path.clone(),
            handler: Some(d.handler.clone()),
            input_schema,
            required,
            ..Request::default()
        },
        // A handler that runs a command can do anything the container can: whatever its file
        // says, it changes state and the person confirms every call (docs/security.md).
        safety: Safety {
            mutating: d.mutating || d.destructive || runs_commands,
            destructive: d.destructive,
            idempotent: d.idempotent,
            confirm_always: runs_commands,
            ..Safety::default()
        },
        output: Output {
            kind: ResultKind::Handler,
            related: d.related.clone(),
            follow_ups: d.follow_ups.clone(),
            ..Output::default()
        },
        source: origin.to_string(),
        derived_id: d.id.clone(),
        ..Action::default()
    })
}

/// A field an object's text may leave out: a dotted path of non-empty names whose last name is
/// not a path parameter of any action (an ID or name a later call takes stays in the text).
fn check_text_omits(actions: &[Action]) -> anyhow::Result<()> {
    let taken: HashSet<&str> = actions
        .iter()
        .flat_map(|a| a.params.iter())
        .filter(|p| matches!(p.location, ParamLocation::Path | ParamLocation::Environment))
        .map(|p| p.name.as_str())
        .collect();
    for a in actions {
        for path in &a.output.text_omits {
            if path.split('.').any(str::is_empty) {
                bail!(
                    "action {}: textOmits entry {path:?} is not a field path (names joined by \
                     dots, e.g. services or containersList.endpointId); fix the overlay that sets it",
                    a.id
                );
            }
            let last = path.rsplit('.').next().unwrap_or(path);
            if taken.contains(last) {
                bail!(
                    "action {}: textOmits names {path:?}, but {last} is what later calls take \
                     (a path parameter); an object's text keeps it. Remove it from the overlay",
                    a.id
                );
            }
        }
    }
    Ok(())
}

/// Checks the lists of every `confirmScope`: listing what a call would remove must never change
/// anything, so a list that is not a plain read fails the load; one this Arcane version lacks
/// is dropped (the note is still said, without the list).
fn check_confirm_scopes(actions: &mut [Action]) -> Result<()> {
    let reads: HashMap<String, bool> = actions
        .iter()
        .map(|a| {
            (
                a.id.clone(),
                !a.safety.mutating && a.output.kind == ResultKind::Json,
            )
        })
        .collect();
    for a in actions.iter_mut() {
        for note in &mut a.safety.confirm_scope {
            let Some(list) = &note.lists else { continue };
            match reads.get(&list.from) {
                Some(true) => {}
                Some(false) => bail!(
                    "{}: confirmScope lists through {}, which is not a plain read (it changes state, or does not answer JSON); name a list action",
                    a.id,
                    list.from
                ),
                None => {
                    tracing::warn!(action = %a.id, from = %list.from,
                        "confirmScope's list action is not in this spec; the note is said without a list");
                    note.lists = None;
                }
            }
        }
    }
    Ok(())
}

/// Checks every `confirmDiff` against the finished list of actions: the reading action reads
/// (not mutating, a JSON answer) and takes nothing the call cannot give it — reading the
/// current document must never change anything, so anything else fails the load. An entry
/// that does not fit this Arcane version (a parameter or a reading action the document lacks)
/// is dropped and reported like an overlay entry that matches nothing; the question then shows
/// the new document whole, as without the entry.
fn check_confirm_diffs(
    actions: &mut [Action],
    origins: &HashMap<String, (String, usize, String)>,
) -> Result<Vec<UnmatchedOverlay>> {
    type Reader = (bool, ResultKind, Vec<(String, bool, ParamLocation)>);
    let readers: HashMap<String, Reader> = actions
        .iter()
        .map(|a| {
            let params = a
                .params
                .iter()
                .map(|p| (p.name.clone(), p.required, p.location))
                .collect();
            (a.id.clone(), (a.safety.mutating, a.output.kind, params))
        })
        .collect();
    let mut misfits = Vec::new();
    for a in actions
        .iter_mut()
        .filter(|a| !a.safety.confirm_diff.is_empty())
    {
        let (file, line, key) = origins
            .get(&a.derived_id)
            .cloned()
            .unwrap_or_else(|| ("an overlay".into(), 0, a.id.clone()));
        let mut misfit = |reason: String| {
            misfits.push(UnmatchedOverlay {
                file: file.clone(),
                line,
                section: "actions".into(),
                key: key.clone(),
                closest: Vec::new(),
                reason: Some(reason),
            })
        };
        let mut kept = Vec::new();
        for d in std::mem::take(&mut a.safety.confirm_diff) {
            if a.param(&d.param).is_none() {
                misfit(format!(
                    "confirmDiff names the parameter {:?}, which {} does not have here ({})",
                    d.param,
                    a.id,
                    a.params
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            }
            let Some((mutating, kind, params)) = readers.get(&d.from) else {
                misfit(format!(
                    "confirmDiff's reading action {} is not in this catalog",
                    d.from
                ));
                continue;
            };
            if *mutating || *kind != ResultKind::Json {
                bail!(
                    "{file}:{line}: {}: confirmDiff reads the current {} through {}, which is not a plain read (it changes state, or does not answer JSON); name the action that returns the document (a GET)",
                    a.id,
                    d.param,
                    d.from
                );
            }
            for (name, required, location) in params {
                if *required && *location != ParamLocation::Environment && a.param(name).is_none() {
                    bail!(
                        "{file}:{line}: {}: confirmDiff's {} needs the parameter {name}, which {} does not take; name a reading action whose parameters the call carries",
                        a.id,
                        d.from,
                        a.id
                    );
                }
            }
            kept.push(d);
        }
        a.safety.confirm_diff = kept;
    }
    Ok(misfits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{MAX_INLINED_DEPTH, MAX_INLINED_NODES};
    use std::path::Path;

    fn build(doc: &SpecDoc) -> Result<Catalog> {
        let layers = Layers::builtin().unwrap();
        build_catalog(BuildInput {
            spec: doc,
            layers: &layers,
        })
    }

    #[test]
    fn a_fan_out_of_references_fails_the_build() {
        let text = arcane_test_support::bombs::fan_out_spec();
        assert!(text.len() < 5_000, "{}", text.len());
        let doc = SpecDoc::parse(&text, "bomb.json").unwrap();
        let err = format!("{:#}", build(&doc).unwrap_err());
        assert!(err.starts_with("bomb.json: "), "{err}");
        assert!(
            err.contains(&format!("more than {MAX_INLINED_NODES}")),
            "{err}"
        );
        assert!(err.contains("/api/openapi.json"), "{err}");
    }

    #[test]
    fn a_chain_of_references_deeper_than_the_budget_fails_the_build() {
        // Each schema is one reference to the next: no nesting of its own, only depth.
        let n = MAX_INLINED_DEPTH * 4;
        let schemas: Vec<String> = (0..n)
            .map(|i| format!(r##""S{i}":{{"$ref":"#/components/schemas/S{}"}}"##, i + 1))
            .chain([format!(r#""S{n}":{{"type":"string"}}"#)])
            .collect();
        let text = format!(
            r##"{{"openapi":"3.1.0","info":{{"version":"1"}},"paths":{{"/things":{{"get":{{"responses":{{"200":{{"description":"ok","content":{{"application/json":{{"schema":{{"$ref":"#/components/schemas/S0"}}}}}}}}}}}}}}}},"components":{{"schemas":{{{}}}}}}}"##,
            schemas.join(",")
        );
        let doc = SpecDoc::parse(&text, "chain.json").unwrap();
        let err = format!("{:#}", build(&doc).unwrap_err());
        assert!(
            err.contains(&format!("deeper than {MAX_INLINED_DEPTH}")),
            "{err}"
        );
    }

    /// What Arcane's real documents use of the budgets (docs/security.md states these numbers).
    #[test]
    fn real_documents_use_a_small_part_of_the_budget() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../third_party/arcane/");
        for name in ["openapi-v2.8.0.json", "openapi-v1.11.2.yaml"] {
            let doc = SpecDoc::from_file(Path::new(&format!("{root}{name}"))).unwrap();
            let resolver = RefResolver::new(&doc.root);
            let ops = operations(&doc.root, &resolver);
            derive_all(&ops, &resolver);
            let (nodes, depth) = resolver.produced();
            eprintln!("{name}: {nodes} inlined values, {depth} levels deep");
            assert!(nodes * 10 < MAX_INLINED_NODES, "{name}: {nodes}");
            assert!(depth * 4 < MAX_INLINED_DEPTH, "{name}: {depth}");
            let catalog = build(&doc).unwrap();
            if name.contains("2.8.0") {
                // The built-in overlays let four image routes take a reference with `/`.
                for id in [
                    "image.tag",
                    "image.export",
                    "image.history",
                    "image.attestations",
                ] {
                    assert!(
                        catalog.get(id).unwrap().param("name").unwrap().takes_path,
                        "{id}"
                    );
                }
                let get = catalog.get("container.get").unwrap();
                assert!(!get.param("containerId").unwrap().takes_path);
                let misfits: Vec<_> = catalog
                    .unmatched_overlays
                    .iter()
                    .filter(|u| u.reason.is_some())
                    .collect();
                assert!(misfits.is_empty(), "{misfits:?}");
            }
        }
    }
}
