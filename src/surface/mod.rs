//! The three tool surfaces (docs/surfaces.md#three-surfaces): the tool definitions each one lists, and the parsing of a
//! call into what the executor needs (`action`, `params`, `confirm`). Nothing here talks to
//! Arcane; every surface is a projection of the same catalog and policy.

pub mod client_profile;

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use arcane_catalog::{Action, Catalog};
use arcane_catalog::{Confirmation, Policy};
use arcane_markdown::quoted_name;
use clap::ValueEnum;

/// The tool surface: how the catalog appears in the client's tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Surface {
    /// Two tools: arcane_find_action and arcane_execute_action.
    #[default]
    Dynamic,
    /// One tool per domain, arcane_<domain>.
    Meta,
    /// One tool per action, arcane_<domain>_<action>.
    Individual,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Dynamic => "dynamic",
            Surface::Meta => "meta",
            Surface::Individual => "individual",
        }
    }
}

/// The dynamic surface's search tool.
pub const FIND_TOOL: &str = "arcane_find_action";
/// The dynamic surface's execution tool.
pub const EXECUTE_TOOL: &str = "arcane_execute_action";
/// Longest accepted search query, in characters.
pub const MAX_QUERY_CHARS: usize = 256;
/// Default and largest number of search results.
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;
/// Nesting depth of object properties kept in an individual tool's schema; deeper levels are
/// replaced by `{"type": "object"}` and the full schema is at `arcane://tools/<id>` (calls are
/// still validated against the full schema).
pub const TOOL_SCHEMA_DEPTH: usize = 3;

/// How calls that need the user's confirmation are confirmed, in the words of the server's
/// instructions, per `--confirm-mode` (docs/security.md#confirmation): the model is told to
/// pass `"confirm": true` only where it counts.
pub fn confirm_rule(confirmation: Confirmation) -> &'static str {
    match confirmation {
        Confirmation::Ask => {
            "Destructive actions (and a few that run commands, rewrite what runs or reveal \
             credentials) are confirmed by the user: the server asks them through the client \
             before anything runs, and \"confirm\" does not skip that question. Only when the \
             client cannot show it does a call need \"confirm\": true, set after the user \
             agreed in the conversation."
        }
        Confirmation::AskUnlessConfirmed => {
            "Destructive actions (and a few that run commands, rewrite what runs or reveal \
             credentials) need the user's yes: pass \"confirm\": true only after the user \
             agreed; without it the server asks the user through the client when it can."
        }
        Confirmation::Param | Confirmation::NeverDestructive => {
            "Destructive actions (and a few that run commands, rewrite what runs or reveal \
             credentials) need \"confirm\": true; ask the user first."
        }
    }
}

/// The same rule in a tool's description (shorter: paid for in every prompt).
fn confirm_rule_short(confirmation: Confirmation) -> &'static str {
    match confirmation {
        Confirmation::Ask => {
            "Actions that need confirmation ask the user through the client; confirm: true \
             counts only when the client cannot ask."
        }
        Confirmation::AskUnlessConfirmed => {
            "Actions that need confirmation take confirm: true after the user agreed, or ask \
             the user."
        }
        Confirmation::Param | Confirmation::NeverDestructive => {
            "Actions that need confirmation need confirm: true."
        }
    }
}

/// The description of an individual tool's `confirm` property.
fn confirm_property(confirmation: Confirmation) -> &'static str {
    match confirmation {
        Confirmation::Ask => "Only when the client cannot ask the user: true once the user agreed",
        Confirmation::AskUnlessConfirmed => "true once the user agreed (else the user is asked)",
        Confirmation::Param | Confirmation::NeverDestructive => "Must be true: needs confirmation",
    }
}

/// The server's `instructions` (docs/surfaces.md#three-surfaces), for the active surface.
pub fn instructions(
    surface: Surface,
    environment: &str,
    safe_mode: bool,
    confirmation: Confirmation,
) -> String {
    let how = match surface {
        Surface::Dynamic => format!(
            "Find an action with {FIND_TOOL} (plain words: a resource and a verb), then run it with \
             {EXECUTE_TOOL} {{\"action\": \"<id>\", \"params\": {{...}}, \"confirm\": false}}."
        ),
        Surface::Meta => "One tool per domain (arcane_<domain>); call it with {\"action\": \"<name>\", \
             \"params\": {...}, \"confirm\": false}. Full schema of an action: arcane://tools/<domain>.<name>."
            .to_string(),
        Surface::Individual => "One tool per action (arcane_<domain>_<action>); parameters are top level."
            .to_string(),
    };
    let mut s = format!(
        "Operate Arcane (Docker containers, images, compose projects, volumes, networks, swarm, \
         environments, registries, GitOps, users, settings). {how} {} environmentId defaults \
         to the configured environment (\"{environment}\"). Parameters are checked before \
         anything reaches Arcane.",
        confirm_rule(confirmation)
    );
    if safe_mode {
        s.push_str(" Safe mode is on: changing actions return a preview of the request instead of running.");
    }
    s
}

/// The tool list of a surface: only served actions and domains appear.
pub fn tools(surface: Surface, catalog: &Catalog, policy: &Policy) -> Vec<Tool> {
    match surface {
        Surface::Dynamic => dynamic_tools(policy.only_reads(), policy.confirmation)
            .into_iter()
            .map(|t| flat_params(t, policy))
            .collect(),
        Surface::Meta => catalog
            .domains
            .iter()
            .filter_map(|d| {
                let served: Vec<&Action> = d
                    .actions
                    .iter()
                    .filter_map(|id| catalog.get(id))
                    .filter(|a| policy.serves(a))
                    .collect();
                (!served.is_empty()).then(|| {
                    flat_params(
                        meta_tool(&d.name, &d.title, &served, policy.confirmation),
                        policy,
                    )
                })
            })
            .collect(),
        Surface::Individual => catalog
            .actions
            .iter()
            .filter(|a| policy.serves(a))
            .map(|a| {
                let tool = individual_tool(a, policy.flat(), policy.confirmation);
                match arcane_catalog::served_output_schema(a, policy.profile) {
                    Some(Value::Object(schema)) if policy.declares_output_schema(a) => {
                        tool.with_raw_output_schema(Arc::new(schema))
                    }
                    _ => tool,
                }
            })
            .collect(),
    }
}

/// Whether `tool` takes a 2025-11-25 task (its `execution.taskSupport` is `optional`,
/// docs/tasks.md): the execute tools of the dynamic and meta surfaces, whatever action they
/// run, and on the individual surface the tool of an action that can run long
/// (`longRunning`). Others (the search, instant actions' tools) take none.
pub fn takes_task(surface: Surface, catalog: &Catalog, tool: &str) -> bool {
    match surface {
        Surface::Dynamic => tool == EXECUTE_TOOL,
        Surface::Meta => tool
            .strip_prefix("arcane_")
            .is_some_and(|d| catalog.domain(d).is_some()),
        Surface::Individual => catalog
            .resolve(tool)
            .is_some_and(|a| a.request.long_running),
    }
}

/// In the flat profile, the `params` object of a meta or dynamic tool is JSON text (a dynamic
/// object is not mappable by such clients; `parse_wrapped` accepts both forms).
fn flat_params(mut tool: Tool, policy: &Policy) -> Tool {
    if policy.flat() {
        let mut schema = (*tool.input_schema).clone();
        if let Some(p) = schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .and_then(|p| p.get_mut("params"))
        {
            *p = arcane_catalog::flat_params_property();
        }
        tool.input_schema = Arc::new(schema);
    }
    tool
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn dynamic_tools(read_only: bool, confirmation: Confirmation) -> Vec<Tool> {
    let find = Tool::new(
        FIND_TOOL,
        "Search Arcane's actions locally (containers, images, projects, volumes, networks, swarm, \
         environments, registries, GitOps, users, settings). Returns IDs, required params, flags; \
         the first 5 with their input schema.",
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "Plain words: a resource and a verb, e.g. restart container"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
    .with_title("Find an Arcane action")
    .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false));
    let exec = Tool::new(
        EXECUTE_TOOL,
        format!(
            "Run an Arcane action by ID from arcane_find_action. Parameters go in params. {} \
             Schema: arcane://tools/<id>.",
            confirm_rule_short(confirmation)
        ),
        object(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "description": "Action ID, e.g. container.restart"},
                "params": {"type": "object"},
                "confirm": {"type": "boolean", "default": false}
            },
            "required": ["action"],
            "additionalProperties": false
        })),
    )
    .with_title("Run an Arcane action")
    // In read-only mode (or a caller's view that may only read) every action it can run
    // only reads.
    .with_annotations(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(!read_only)
            .open_world(true),
    );
    vec![find, exec]
}

fn meta_tool(domain: &str, title: &str, actions: &[&Action], confirmation: Confirmation) -> Tool {
    let mut desc = format!("{title} actions:");
    for a in actions {
        desc.push(' ');
        desc.push_str(&a.name);
        if a.needs_confirmation() {
            desc.push('!');
        }
        desc.push(',');
    }
    desc.pop();
    desc.push_str(match confirmation {
        Confirmation::Ask => {
            ". ! = the user is asked to confirm (confirm: true counts only when the client \
             cannot ask)."
        }
        Confirmation::AskUnlessConfirmed => {
            ". ! = needs confirm: true once the user agreed, or the user is asked."
        }
        Confirmation::Param | Confirmation::NeverDestructive => ". ! = needs confirm: true.",
    });
    desc.push_str(" Schema: arcane://tools/");
    desc.push_str(domain);
    desc.push_str(".<action>");
    desc.push_str(&usage_lines(actions));
    let any_mutating = actions.iter().any(|a| a.safety.mutating);
    let any_destructive = actions.iter().any(|a| a.safety.destructive);
    Tool::new(
        format!("arcane_{domain}"),
        desc,
        object(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string"},
                "params": {"type": "object"},
                "confirm": {"type": "boolean"}
            },
            "required": ["action"],
            "additionalProperties": false
        })),
    )
    .with_title(title.to_string())
    .with_annotations(
        ToolAnnotations::new()
            .read_only(!any_mutating)
            .destructive(any_destructive)
            .idempotent(actions.iter().all(|a| a.safety.idempotent))
            .open_world(true),
    )
}

fn individual_tool(a: &Action, flat: bool, confirmation: Confirmation) -> Tool {
    let mut schema = tool_schema(&a.request.input_schema);
    if flat {
        schema = arcane_catalog::flat_input_schema(&schema, &a.request.input_schema);
    }
    if a.needs_confirmation()
        && a.param("confirm").is_none()
        && let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
    {
        props.insert(
            "confirm".into(),
            json!({"type": "boolean", "description": confirm_property(confirmation)}),
        );
    }
    let mut desc = a.description.trim().to_string();
    if desc.is_empty() {
        desc = a.title.clone();
    }
    push_usage(&mut desc, a);
    if schema_depth(&a.request.input_schema) > TOOL_SCHEMA_DEPTH {
        desc.push_str(&format!(" Full schema: arcane://tools/{}", a.id));
    }
    Tool::new(a.individual_tool_name(), desc, object(schema))
        .with_title(a.title.clone())
        .with_annotations(
            ToolAnnotations::new()
                .read_only(!a.safety.mutating)
                .destructive(a.safety.destructive)
                .idempotent(a.safety.idempotent)
                .open_world(true),
        )
}

/// The operators' usage notes of a domain's actions, one line each (`\nkill: Sends SIGKILL…`),
/// for a meta tool's description: many clients give the model only the tool definitions and
/// the result text, so the notes must reach it there (docs/surfaces.md#usage-notes).
fn usage_lines(actions: &[&Action]) -> String {
    let mut out = String::new();
    for a in actions {
        let usage = one_line(&a.usage);
        if !usage.is_empty() {
            out.push('\n');
            out.push_str(&a.name);
            out.push_str(": ");
            out.push_str(&usage);
        }
    }
    out
}

/// Appends an action's usage note to its individual tool's description, unless the
/// description already says it.
fn push_usage(desc: &mut String, a: &Action) {
    let usage = one_line(&a.usage);
    if !usage.is_empty() && !desc.contains(usage.as_str()) {
        if !desc.ends_with(['.', '!', '?']) {
            desc.push('.');
        }
        desc.push(' ');
        desc.push_str(&usage);
    }
}

/// A usage note on one line (an operator's YAML may fold it over several).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An input schema as shown in a tool definition: descriptions that merely repeat the property
/// name are dropped and object nesting is capped at [`TOOL_SCHEMA_DEPTH`] (the full schema is
/// served at `arcane://tools/<id>` and used for validation).
pub fn tool_schema(full: &Value) -> Value {
    shrink(full, 0, None)
}

fn shrink(v: &Value, depth: usize, name: Option<&str>) -> Value {
    let Value::Object(map) = v else {
        return v.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (k, val) in map {
        match k.as_str() {
            "properties" => {
                let Value::Object(props) = val else { continue };
                if depth >= TOOL_SCHEMA_DEPTH {
                    // Too deep for a tool definition: keep the type, say where the rest is.
                    continue;
                }
                let mut p = Map::with_capacity(props.len());
                for (pn, ps) in props {
                    p.insert(pn.clone(), shrink(ps, depth + 1, Some(pn)));
                }
                out.insert(k.clone(), Value::Object(p));
            }
            "description" | "title" => {
                let text = val.as_str().unwrap_or_default();
                if k == "title" || repeats_name(text, name) {
                    continue;
                }
                out.insert(k.clone(), Value::String(trim_description(text)));
            }
            "required" | "additionalProperties" | "patternProperties"
                if depth >= TOOL_SCHEMA_DEPTH => {}
            "items" | "additionalProperties" => {
                out.insert(k.clone(), shrink(val, depth + 1, name));
            }
            "anyOf" | "oneOf" | "allOf" => {
                let items = val
                    .as_array()
                    .map(|xs| xs.iter().map(|x| shrink(x, depth, name)).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Array(items));
            }
            _ => {
                out.insert(k.clone(), val.clone());
            }
        }
    }
    Value::Object(out)
}

/// How deep object properties nest in a schema (the input object itself is depth 0).
fn schema_depth(v: &Value) -> usize {
    match v {
        Value::Object(map) => map
            .iter()
            .map(|(k, val)| match k.as_str() {
                "properties" => val
                    .as_object()
                    .map(|p| p.values().map(|s| 1 + schema_depth(s)).max().unwrap_or(0))
                    .unwrap_or(0),
                "items" | "additionalProperties" => 1 + schema_depth(val),
                "anyOf" | "oneOf" | "allOf" => val
                    .as_array()
                    .map(|xs| xs.iter().map(schema_depth).max().unwrap_or(0))
                    .unwrap_or(0),
                _ => 0,
            })
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// A description that adds nothing to the property name ("Container ID" for `containerId`).
fn repeats_name(text: &str, name: Option<&str>) -> bool {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let t = norm(text);
    t.is_empty() || name.is_some_and(|n| norm(n) == t || format!("the{}", norm(n)) == t)
}

/// First sentence, at most 160 characters: tool definitions are paid for in every prompt.
fn trim_description(text: &str) -> String {
    let t = text.trim();
    let first = match t.find(". ") {
        Some(i) => &t[..=i],
        None => t.lines().next().unwrap_or(""),
    };
    if first.chars().count() > 160 {
        let cut: String = first.chars().take(157).collect();
        format!("{}…", cut.trim_end())
    } else {
        first.to_string()
    }
}

/// How the server writes an action's name on a surface (next steps, hints): dynamic
/// `container.get`, meta `arcane_container` (action `get`), individual `arcane_container_get`.
pub fn call_name(surface: Surface, a: &Action) -> String {
    match surface {
        Surface::Dynamic => format!("`{}`", a.id),
        Surface::Meta => format!("`{}` (action `{}`)", a.meta_tool_name(), a.name),
        Surface::Individual => format!("`{}`", a.individual_tool_name()),
    }
}

/// The tool that runs an action on a surface: `arcane_execute_action`, `arcane_<domain>` or
/// `arcane_<domain>_<action>`.
pub fn tool_name(surface: Surface, a: &Action) -> String {
    match surface {
        Surface::Dynamic => "arcane_execute_action".to_string(),
        Surface::Meta => a.meta_tool_name(),
        Surface::Individual => a.individual_tool_name(),
    }
}

/// A ready-to-adapt call line for the `arcane://tools` resource, e.g.
/// `arcane_container {"action":"kill","params":{...},"confirm":true}`.
pub fn call_line(surface: Surface, a: &Action) -> String {
    let confirm = if a.needs_confirmation() {
        ",\"confirm\":true"
    } else {
        ""
    };
    let params = if a.params.is_empty() { "{}" } else { "{...}" };
    match surface {
        Surface::Dynamic => format!(
            "arcane_execute_action {{\"action\":\"{}\",\"params\":{params}{confirm}}}",
            a.id
        ),
        Surface::Meta => format!(
            "{} {{\"action\":\"{}\",\"params\":{params}{confirm}}}",
            a.meta_tool_name(),
            a.name
        ),
        Surface::Individual => {
            let inner = if a.params.is_empty() { "" } else { "..." };
            let sep = if !inner.is_empty() && !confirm.is_empty() {
                ","
            } else {
                ""
            };
            format!(
                "{} {{{inner}{sep}{}}}",
                a.individual_tool_name(),
                confirm.trim_start_matches(',')
            )
        }
    }
}

/// A parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// `arcane_find_action`.
    Find { query: String, limit: usize },
    /// Run an action; `action` is a name as given (any accepted alias), resolved by the executor.
    Execute {
        action: String,
        params: Map<String, Value>,
        confirm: bool,
    },
}

/// Parses a `tools/call` into a [`Call`]; the error is the text of an `isError` result.
pub fn parse_call(
    surface: Surface,
    catalog: &Catalog,
    policy: &Policy,
    tool: &str,
    args: Option<&Map<String, Value>>,
) -> Result<Call, String> {
    let empty = Map::new();
    let args = args.unwrap_or(&empty);
    match surface {
        Surface::Dynamic => match tool {
            FIND_TOOL => parse_find(args),
            EXECUTE_TOOL => parse_wrapped(args, None),
            other => Err(unknown_tool(other, &[FIND_TOOL, EXECUTE_TOOL])),
        },
        Surface::Meta => {
            let Some(domain) = tool.strip_prefix("arcane_").and_then(|d| catalog.domain(d)) else {
                // The domains this policy serves something of: a withdrawn one is no suggestion.
                let names: Vec<String> = catalog
                    .domains
                    .iter()
                    .filter(|d| {
                        catalog
                            .actions
                            .iter()
                            .any(|a| a.domain == d.name && policy.serves(a))
                    })
                    .map(|d| format!("arcane_{}", d.name))
                    .collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(unknown_tool(tool, &names));
            };
            parse_wrapped(args, Some(&domain.name))
        }
        Surface::Individual => {
            let Some(action) = catalog.resolve(tool) else {
                if let Some(reason) = arcane_catalog::catalog_exclusion(catalog, tool) {
                    return Err(format!(
                        "{} is not served: {reason}.",
                        quoted_name(tool, 100)
                    ));
                }
                // Only actions this policy serves: a withdrawn one is no suggestion.
                let closest: Vec<&str> = catalog
                    .closest(tool, catalog.actions.len())
                    .into_iter()
                    .filter(|id| catalog.get(id).is_some_and(|a| policy.serves(a)))
                    .take(5)
                    .collect();
                return Err(format!(
                    "Unknown tool {}. Closest actions: {}. Their tools are `arcane_<domain>_<action>`.",
                    quoted_name(tool, 100),
                    closest.join(", ")
                ));
            };
            let mut params = args.clone();
            let mut confirm = false;
            if action.param("confirm").is_none()
                && let Some(c) = params.remove("confirm")
            {
                confirm = parse_confirm(&c)?;
            }
            Ok(Call::Execute {
                action: action.id.clone(),
                params,
                confirm,
            })
        }
    }
}

fn unknown_tool(tool: &str, known: &[&str]) -> String {
    let mut scored: Vec<(f64, &str)> = known
        .iter()
        .map(|k| (strsim::jaro_winkler(tool, k), *k))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best: Vec<&str> = scored.into_iter().take(5).map(|(_, k)| k).collect();
    format!(
        "Unknown tool {}. Available tools include: {}.",
        quoted_name(tool, 100),
        best.join(", ")
    )
}

fn parse_find(args: &Map<String, Value>) -> Result<Call, String> {
    let query = match args.get("query") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_string(),
        _ => {
            return Err(format!(
                "{FIND_TOOL} needs \"query\": plain words naming a resource and a verb, e.g. \
                 {{\"query\": \"restart container\"}}."
            ));
        }
    };
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(format!(
            "The query has {} characters; at most {MAX_QUERY_CHARS} are accepted. Use a few words: a resource and a verb.",
            query.chars().count()
        ));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => {
                return Err(format!(
                    "\"limit\" must be an integer from 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}); got {}.",
                    quoted_name(&v.to_string(), 100)
                ));
            }
        },
    };
    if let Some(k) = args.keys().find(|k| *k != "query" && *k != "limit") {
        return Err(format!(
            "{FIND_TOOL} accepts only \"query\" and \"limit\"; remove {}.",
            quoted_name(k, 100)
        ));
    }
    Ok(Call::Find { query, limit })
}

/// `{"action", "params", "confirm"}` (dynamic, and meta with the domain implied).
fn parse_wrapped(args: &Map<String, Value>, domain: Option<&str>) -> Result<Call, String> {
    let action = match args.get("action") {
        Some(Value::String(a)) if !a.trim().is_empty() => a.trim().to_string(),
        _ => {
            let example = match domain {
                Some(_) => "{\"action\": \"list\", \"params\": {}}",
                None => "{\"action\": \"container.list\", \"params\": {}}",
            };
            return Err(format!("Missing \"action\". Call shape: {example}."));
        }
    };
    let action = match domain {
        // A bare action name is relative to the tool's domain; other forms are aliases.
        Some(d) if !action.contains('.') && !action.starts_with("arcane_") => {
            format!("{d}.{action}")
        }
        _ => action,
    };
    let params = match args.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        // Some clients send the object as a JSON string.
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            _ => return Err("\"params\" must be an object of the action's parameters.".into()),
        },
        Some(_) => return Err("\"params\" must be an object of the action's parameters.".into()),
    };
    let confirm = match args.get("confirm") {
        None | Some(Value::Null) => false,
        Some(c) => parse_confirm(c)?,
    };
    if let Some(k) = args
        .keys()
        .find(|k| !matches!(k.as_str(), "action" | "params" | "confirm"))
    {
        let k = quoted_name(k, 100);
        let action = quoted_name(&action, 100);
        return Err(format!(
            "Unexpected top-level {k}: the action's parameters go inside \"params\", e.g. \
             {{\"action\": {action}, \"params\": {{{k}: …}}}}."
        ));
    }
    Ok(Call::Execute {
        action,
        params,
        confirm,
    })
}

fn parse_confirm(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => Err(format!(
            "\"confirm\" must be true or false; got {}.",
            quoted_name(&other.to_string(), 100)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn dynamic_call_shapes() {
        let cat = Catalog::default();
        let parse = |tool: &str, a: Option<Value>| {
            parse_call(
                Surface::Dynamic,
                &cat,
                &Policy::default(),
                tool,
                a.map(args).as_ref(),
            )
        };
        let call = parse(
            EXECUTE_TOOL,
            Some(json!({"action": "container.restart", "params": {"containerId": "w"}, "confirm": true})),
        )
        .unwrap();
        assert_eq!(
            call,
            Call::Execute {
                action: "container.restart".into(),
                params: args(json!({"containerId": "w"})),
                confirm: true
            }
        );
        // params as a JSON string, confirm as a string.
        let call = parse(
            EXECUTE_TOOL,
            Some(json!({"action": "x.y", "params": "{\"a\":1}", "confirm": "false"})),
        )
        .unwrap();
        assert!(matches!(call, Call::Execute { confirm: false, .. }));
        assert!(
            parse(EXECUTE_TOOL, Some(json!({"action": "x.y", "a": 1})))
                .unwrap_err()
                .contains("inside \"params\"")
        );
        assert!(
            parse(EXECUTE_TOOL, None)
                .unwrap_err()
                .contains("Missing \"action\"")
        );
        assert!(parse(FIND_TOOL, Some(json!({"query": "q", "limit": 0}))).is_err());
        assert_eq!(
            parse(FIND_TOOL, Some(json!({"query": " list containers "}))).unwrap(),
            Call::Find {
                query: "list containers".into(),
                limit: DEFAULT_LIMIT
            }
        );
        assert!(parse("nope", None).unwrap_err().contains("Unknown tool"));
    }

    /// An unknown tool's suggestions name only what the policy serves: a read-only server (or
    /// an OAuth caller's read-only view) is not offered a restart it would refuse.
    #[test]
    fn unknown_tools_suggest_only_what_is_served() {
        let cat = crate::load::sources::Sources::test_catalog();
        let err = |policy: &Policy| {
            parse_call(
                Surface::Individual,
                &cat,
                policy,
                "arcane_containr_restart",
                None,
            )
            .unwrap_err()
        };
        let all = err(&Policy::default());
        assert!(all.contains("container.restart"), "{all}");
        let reads = err(&Policy::new(true, false, &[]));
        assert!(
            !reads.contains("container.restart") && reads.contains("Closest actions: container."),
            "{reads}"
        );
    }

    #[test]
    fn tool_schemas_are_shrunk_not_broken() {
        let full = json!({"type": "object", "properties": {
            "containerId": {"type": "string", "description": "Container ID"},
            "config": {"type": "object", "description": "Config. More words here.", "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "string"}}, "required": ["c"], "additionalProperties": false}}}
            }}
        }, "additionalProperties": false});
        let s = tool_schema(&full);
        assert!(
            s["properties"]["containerId"].get("description").is_none(),
            "repeats the name"
        );
        assert_eq!(s["properties"]["config"]["description"], "Config.");
        let b = &s["properties"]["config"]["properties"]["a"]["properties"]["b"];
        assert_eq!(b["type"], "object");
        assert!(
            b.get("properties").is_none()
                && b.get("required").is_none()
                && b.get("additionalProperties").is_none()
        );
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(schema_depth(&full), 4);
    }
}
