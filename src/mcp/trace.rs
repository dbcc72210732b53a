//! The trace span of each MCP request, after OpenTelemetry's semantic conventions for MCP
//! (docs/observability.md): named `{mcp.method.name} {target}` (`tools/call arcane_execute_action`),
//! of kind server, continuing the client's trace when its `_meta` carries a W3C `traceparent`.
//! It holds what the request is — method, tool or prompt, request ID, a hash of the session,
//! the transport, the surface — and, filled in by the call, the action ID and its outcome;
//! never an argument or a result. The engine's spans (each request to Arcane, lookups, waits
//! for a slot) and the rendering are its children.
//!
//! Without an exporter the span is disabled where it is made and nothing here is computed.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
    GetSkillResult, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
// Deprecated by the protocol, still served to the clients that send it.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use sha2::Digest;
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::mcp::caller::HttpCaller;
use crate::mcp::handler::ArcaneServer;

/// How the client reaches the server, as `network.transport` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// Streamable HTTP.
    Tcp,
}

/// What a request is about, besides its method: the tool or prompt it names.
enum Target<'a> {
    None,
    Tool(&'a str),
    Prompt(&'a str),
}

/// The server, each request it handles in a span of its own. It hands every method of
/// [`ServerHandler`] to the [`ArcaneServer`] inside, as rmcp's own `Arc<T>` and `Box<T>`
/// wrappers do, so the server behaves the same with or without it.
#[derive(Clone)]
pub struct Traced {
    server: ArcaneServer,
    transport: Transport,
}

impl Traced {
    pub fn new(server: ArcaneServer, transport: Transport) -> Traced {
        Traced { server, transport }
    }

    /// The span of a request, with the client's trace as its parent when `_meta` names one
    /// (the request's own `_meta` as rmcp hands it over, or `params_meta`).
    fn span(
        &self,
        method: &'static str,
        target: Target<'_>,
        context: &RequestContext<RoleServer>,
        params_meta: Option<&MetaObject>,
    ) -> tracing::Span {
        let span = tracing::info_span!(
            target: "arcane_mcp::mcp::trace",
            "mcp.request",
            "otel.name" = Empty,
            "otel.kind" = "server",
            "otel.status_code" = Empty,
            "mcp.method.name" = method,
            "mcp.protocol.version" = Empty,
            "mcp.session.id" = Empty,
            "jsonrpc.request.id" = %context.id,
            "network.transport" = Empty,
            "network.protocol.name" = Empty,
            "gen_ai.operation.name" = Empty,
            "gen_ai.tool.name" = Empty,
            "gen_ai.prompt.name" = Empty,
            "rpc.response.status_code" = Empty,
            "error.type" = Empty,
            "arcane.surface" = Empty,
            "arcane.action.id" = Empty,
            "arcane.outcome" = Empty,
        );
        if span.is_disabled() {
            return span;
        }
        let snap = self.server.live().load();
        let target = match target {
            Target::Tool(name) => {
                // Only a served tool's name: anything else a client sends is `unknown`, as in
                // the metrics.
                let name = if snap.serves_tool(name) {
                    name
                } else {
                    "unknown"
                };
                span.record("gen_ai.tool.name", name);
                span.record("gen_ai.operation.name", "execute_tool");
                Some(name)
            }
            Target::Prompt(name) => {
                let name = plain_name(name);
                span.record("gen_ai.prompt.name", name);
                Some(name)
            }
            Target::None => None,
        };
        match target {
            Some(t) => span.record("otel.name", format!("{method} {t}").as_str()),
            None => span.record("otel.name", method),
        };
        span.record("arcane.surface", snap.surface.as_str());
        if let Some(v) = context.protocol_version() {
            span.record("mcp.protocol.version", v.to_string().as_str());
        }
        match self.transport {
            Transport::Pipe => {
                span.record("network.transport", "pipe");
            }
            Transport::Tcp => {
                span.record("network.transport", "tcp");
                span.record("network.protocol.name", "http");
            }
        }
        if let Some(session) =
            HttpCaller::of(&context.extensions).and_then(|c| c.session.as_deref())
        {
            span.record("mcp.session.id", session_hash(session).as_str());
        }
        let traceparent = context
            .meta
            .get_traceparent()
            .map(|p| (p, context.meta.get_tracestate()))
            .or_else(|| {
                params_meta.and_then(|m| m.get_traceparent().map(|p| (p, m.get_tracestate())))
            });
        if let Some((parent, state)) = traceparent {
            let carrier = Carrier { parent, state };
            let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
            // A malformed `traceparent` extracts as no parent: the span starts a trace.
            let _ = span.set_parent(cx);
        }
        span
    }
}

/// The session's ID as `mcp.session.id`: a hash, since the ID is what lets a client into
/// the session.
fn session_hash(session: &str) -> String {
    let digest = sha2::Sha256::digest(session.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A prompt name the client sent, when it is a plain short name; `unknown` otherwise.
fn plain_name(name: &str) -> &str {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain { name } else { "unknown" }
}

/// A request's `traceparent` and `tracestate`, as the propagator reads them.
struct Carrier<'a> {
    parent: &'a str,
    state: Option<&'a str>,
}

impl opentelemetry::propagation::Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.parent),
            "tracestate" => self.state,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// Records a JSON-RPC error on the request's span.
fn finish<T>(span: &tracing::Span, result: &Result<T, McpError>) {
    if let Err(e) = result {
        let code = e.code.0.to_string();
        span.record("rpc.response.status_code", code.as_str());
        span.record("error.type", code.as_str());
        span.record("otel.status_code", "error");
    }
}

/// A request method handed to the server inside its span.
macro_rules! traced {
    ($name:ident, $method:literal, $params:ty, $result:ty) => {
        async fn $name(
            &self,
            request: $params,
            context: RequestContext<RoleServer>,
        ) -> Result<$result, McpError> {
            let span = self.span($method, Target::None, &context, None);
            let result = self
                .server
                .$name(request, context)
                .instrument(span.clone())
                .await;
            finish(&span, &result);
            result
        }
    };
}

// Every method is handed on, the protocol's deprecated ones (logging, resource subscriptions)
// included, as long as rmcp serves them.
#[allow(deprecated)]
impl ServerHandler for Traced {
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let span = self.span("ping", Target::None, &context, None);
        let result = self.server.ping(context).instrument(span.clone()).await;
        finish(&span, &result);
        result
    }

    traced!(
        initialize,
        "initialize",
        InitializeRequestParams,
        InitializeResult
    );

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, McpError> {
        self.server.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.server.supported_protocol_versions()
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let span = self.span("server/discover", Target::None, &context, None);
        let result = self.server.discover(context).instrument(span.clone()).await;
        finish(&span, &result);
        result
    }

    traced!(
        complete,
        "completion/complete",
        CompleteRequestParams,
        CompleteResult
    );
    traced!(set_level, "logging/setLevel", SetLevelRequestParams, ());

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let span = self.span("prompts/get", Target::Prompt(&request.name), &context, None);
        let result = self
            .server
            .get_prompt(request, context)
            .instrument(span.clone())
            .await;
        finish(&span, &result);
        result
    }

    traced!(
        list_prompts,
        "prompts/list",
        Option<PaginatedRequestParams>,
        ListPromptsResult
    );
    traced!(
        list_resources,
        "resources/list",
        Option<PaginatedRequestParams>,
        ListResourcesResult
    );
    traced!(
        list_resource_templates,
        "resources/templates/list",
        Option<PaginatedRequestParams>,
        ListResourceTemplatesResult
    );
    traced!(
        read_resource,
        "resources/read",
        ReadResourceRequestParams,
        ReadResourceResponse
    );

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.server.accepted_subscription_filter(requested)
    }

    // A subscription lasts as long as the client listens: no span.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.server.listen(context).await
    }

    traced!(subscribe, "resources/subscribe", SubscribeRequestParams, ());
    traced!(
        unsubscribe,
        "resources/unsubscribe",
        UnsubscribeRequestParams,
        ()
    );

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = self.span(
            "tools/call",
            Target::Tool(&request.name),
            &context,
            request.meta.as_ref().map(|m| &m.0),
        );
        let result = self
            .server
            .call_tool(request, context)
            .instrument(span.clone())
            .await;
        finish(&span, &result);
        if let Ok(CallToolResponse::Complete(r)) = &result
            && r.is_error == Some(true)
        {
            // A tool's failure is a result, not a JSON-RPC error: `tool_error`, as the
            // conventions name it.
            span.record("error.type", "tool_error");
            span.record("otel.status_code", "error");
        }
        result
    }

    traced!(
        list_tools,
        "tools/list",
        Option<PaginatedRequestParams>,
        ListToolsResult
    );

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.get_tool(name)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        self.server.on_custom_request(request, context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.server.on_cancelled(notification, context).await
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.server.on_progress(notification, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.server.on_initialized(context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.server.on_roots_list_changed(context).await
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.server
            .on_custom_notification(notification, context)
            .await
    }

    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    traced!(get_task, "tasks/get", GetTaskParams, GetTaskResult);
    traced!(update_task, "tasks/update", UpdateTaskParams, ());
    traced!(cancel_task, "tasks/cancel", CancelTaskParams, ());
    traced!(
        list_skills,
        "skills/list",
        Option<PaginatedRequestParams>,
        ListSkillsResult
    );
    traced!(
        get_skill,
        "skills/get",
        GetSkillRequestParams,
        GetSkillResult
    );
    traced!(
        read_resource_directory,
        "resources/directory/read",
        ReadResourceDirectoryRequestParams,
        ReadResourceDirectoryResult
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_hashed_and_odd_prompt_names_are_not_recorded() {
        let h = session_hash("session-secret-1");
        assert_eq!(h.len(), 16);
        assert!(!h.contains("secret"));
        assert_ne!(h, session_hash("session-secret-2"));
        assert_eq!(plain_name("deploy_stack"), "deploy_stack");
        assert_eq!(plain_name("sk-live abc"), "unknown");
        assert_eq!(plain_name(&"a".repeat(65)), "unknown");
    }
}
