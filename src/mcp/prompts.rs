//! MCP prompts (docs/prompts.md): the catalog's prompts that this server's policy can serve,
//! `prompts/get` with the client's arguments checked, and the completion of their arguments.
//!
//! A prompt is served only when every action its template names is served: one naming an
//! action that read-only mode, a preset or an allow/deny list withdrew is neither listed nor
//! given, so a prompt never starts a job the server would refuse half-way.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptResult, Prompt, PromptArgument,
    PromptMessage, Role,
};
use serde_json::{Map, Value};

use crate::load::snapshot::Snapshot;
use crate::surface::{self, Surface, call_name};
use arcane_engine::Executor;
use arcane_markdown::quoted_name;

/// The actions of `p` this server does not serve, each with the reason.
fn withdrawn(snap: &Snapshot, p: &arcane_catalog::Prompt) -> Vec<(String, String)> {
    p.actions()
        .into_iter()
        .filter_map(|id| match snap.catalog.get(id) {
            None => Some((id.to_string(), "not in this catalog".to_string())),
            Some(a) => snap.policy.withdrawn(a).map(|why| (id.to_string(), why)),
        })
        .collect()
}

/// The catalog's prompts this server serves, in name order.
pub fn served(snap: &Snapshot) -> impl Iterator<Item = &arcane_catalog::Prompt> {
    snap.catalog
        .prompts
        .iter()
        .filter(|p| withdrawn(snap, p).is_empty())
}

/// `prompts/list`.
pub fn list(snap: &Snapshot) -> Vec<Prompt> {
    served(snap)
        .map(|p| {
            let args = p
                .arguments
                .iter()
                .map(|a| {
                    PromptArgument::new(a.name.clone())
                        .with_description(a.description.clone())
                        .with_required(a.required)
                })
                .collect();
            Prompt::new(p.name.clone(), Some(p.description.clone()), Some(args))
                .with_title(p.title.clone())
        })
        .collect()
}

/// How the surface's tools run the actions a prompt names: the line above every prompt's text.
pub fn how_to_call(s: Surface) -> String {
    match s {
        Surface::Dynamic => format!(
            "Run each action named below with `{}` (`{{\"action\": \"<id>\", \"params\": {{...}}}}`); `{}` finds any other and shows the parameters an action takes.",
            surface::EXECUTE_TOOL,
            surface::FIND_TOOL
        ),
        Surface::Meta => "Each action named below is one `action` of its domain's tool (`{\"action\": \"<name>\", \"params\": {...}}`).".to_string(),
        Surface::Individual => "Each action named below is a tool of its own.".to_string(),
    }
}

/// The text of a served prompt with checked arguments, its actions spelled as the surface
/// names them.
pub fn text(
    snap: &Snapshot,
    p: &arcane_catalog::Prompt,
    args: &std::collections::BTreeMap<String, String>,
) -> String {
    let name = |id: &str| match snap.catalog.get(id) {
        Some(a) => call_name(snap.surface, a),
        // Not reached for a served prompt (every action is there); named as written.
        None => format!("`{id}`"),
    };
    format!(
        "{}\n\n{}",
        how_to_call(snap.surface),
        p.render(args, &name, &arcane_markdown::code_span)
    )
}

/// `prompts/get`: the prompt's one user message, or an error saying what to send instead.
pub fn get(
    snap: &Snapshot,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<GetPromptResult, McpError> {
    let Some(p) = snap.catalog.prompts.iter().find(|p| p.name == name) else {
        return Err(McpError::invalid_params(
            format!(
                "no prompt {}; prompts/list names the prompts served here",
                quoted_name(name, 80)
            ),
            None,
        ));
    };
    let missing = withdrawn(snap, p);
    if !missing.is_empty() {
        let what: Vec<String> = missing
            .iter()
            .map(|(id, why)| format!("`{id}` ({why})"))
            .collect();
        return Err(McpError::invalid_params(
            format!(
                "prompt `{}` is not served here: its job needs {}, which this server does not serve",
                p.name,
                what.join(", ")
            ),
            None,
        ));
    }
    let args = p
        .check_arguments(arguments)
        .map_err(|e| McpError::invalid_params(format!("prompt `{}`: {e}", p.name), None))?;
    let text = text(snap, p, &args);
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(p.description.clone()),
    )
}

/// `completion/complete` for a prompt's argument: the names of the objects its `complete`
/// source names, in the environment another argument of the prompt names (else the default
/// one). An unknown prompt or argument, or a failing read, gives no values.
pub async fn complete(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    r: &rmcp::model::PromptReference,
    req: &CompleteRequestParams,
) -> CompleteResult {
    let Some(p) = served(snap).find(|p| p.name == r.name) else {
        return CompleteResult::new(CompletionInfo::default());
    };
    let Some(source) = p
        .arguments
        .iter()
        .find(|a| a.name == req.argument.name)
        .and_then(|a| a.complete)
    else {
        return CompleteResult::new(CompletionInfo::default());
    };
    let given = req.context.as_ref().and_then(|c| c.arguments.as_ref());
    let env = p
        .arguments
        .iter()
        .filter(|a| a.complete == Some(arcane_catalog::CompletionSource::Environments))
        .find_map(|a| given.and_then(|g| g.get(&a.name)))
        .filter(|v| !v.is_empty() && v.chars().count() <= arcane_catalog::MAX_ARGUMENT_CHARS)
        .cloned()
        .unwrap_or_else(|| exec.config().environment.clone());
    let partial = arcane_markdown::clip(&req.argument.value, arcane_catalog::MAX_ARGUMENT_CHARS);
    let values = crate::resources::names_of(snap, exec, ctx, source.param(), &env).await;
    crate::resources::completion(values, &partial)
}
