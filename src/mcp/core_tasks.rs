//! The 2025-11-25 core protocol's form of MCP tasks (docs/tasks.md), which rmcp 3.11's types and
//! routing do not carry: a task-augmented `tools/call` (its `task` field, read by the transport
//! that decoded the request into an [`Augmented`]), `tasks/get`, `tasks/result`, `tasks/list`
//! and `tasks/cancel` in that form's shapes, `execution.taskSupport` on the tools that take a
//! task, and the `tasks` capability. Every session's transport is a [`CoreForm`]: it hands those
//! requests to rmcp as custom requests (rmcp would drop the `task` field, answer `tasks/get` of
//! a client without the 2026-07-28 extension with -32021, and has no `execution` in a tool),
//! which the handler answers here ([`handle`]) over the one task store (`crate::mcp::tasks`)
//! the extension's handlers read too, so a task of either form is the same task.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, CustomRequest,
    CustomResult, ErrorCode, Extensions, GetExtensions, GetMeta, JsonRpcMessage, ListToolsResult,
    ProtocolVersion, ServerJsonRpcMessage, ServerResult, Task,
};
use rmcp::service::RequestContext;
use rmcp::transport::Transport;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use crate::load::snapshot::Snapshot;
use crate::mcp::tasks::{Ended, RELATED_TASK, Tasks};
use crate::surface;

/// What this form needs of the handler (`crate::mcp::handler` implements it).
pub(crate) trait Server: Send + Sync {
    /// The live snapshot, as a call loads it.
    fn snapshot(&self) -> std::sync::Arc<Snapshot>;
    /// The one task store.
    fn tasks(&self) -> &Tasks;
    /// Who asks: whose tasks are theirs, and which actions their view still serves.
    fn asker(&self, context: &RequestContext<RoleServer>) -> crate::mcp::tasks::Asker;
    /// The tools as `tools/list` answers them to this request's client.
    fn tools_listed(&self, context: &RequestContext<RoleServer>) -> ListToolsResult;
    /// Runs a `tools/call` that asked for a task with the TTL `ttl_ms`.
    fn call_as_task(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        ttl_ms: Option<u64>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send;
}

/// The one protocol version that defines this form (its `tasks` capability and tools'
/// `execution`).
const VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How long `tasks/cancel` waits for the call to stop (its request to Arcane closed) before it
/// answers with the task's state: the spec wants it `cancelled` by then, and a closed stream
/// ends its call at once.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// A 2025-11-25 task-augmented request's `task` field (`{"ttl": ms}`), which rmcp's request
/// type drops: the transport that decoded the request puts it in the request's extensions
/// (stdio), or in the HTTP request's (the gate), where rmcp hands it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Augmented {
    /// The TTL asked for, in milliseconds.
    pub ttl_ms: Option<u64>,
    /// The field is no `{"ttl": whole milliseconds}` object: refused (-32602), nothing run.
    pub malformed: bool,
}

impl Augmented {
    /// The `task` field of the request behind `extensions`, when it had one.
    pub fn of(extensions: &Extensions) -> Option<Augmented> {
        extensions
            .get::<Augmented>()
            .or_else(|| {
                extensions
                    .get::<http::request::Parts>()?
                    .extensions
                    .get::<Augmented>()
            })
            .copied()
    }
}

/// The server's `tasks` capability of 2025-11-25: `tasks/list`, `tasks/cancel` and
/// task-augmented `tools/call`.
pub fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// The answer to a 2025-11-25 `initialize` with the `tasks` capability in it, which rmcp's
/// `ServerCapabilities` has no field for; any other message as it is.
fn declared(message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    let JsonRpcMessage::Response(mut response) = message else {
        return message;
    };
    let ServerResult::InitializeResult(init) = &response.result else {
        return JsonRpcMessage::Response(response);
    };
    if init.protocol_version != VERSION {
        return JsonRpcMessage::Response(response);
    }
    if let Ok(mut value) = serde_json::to_value(init)
        && let Some(caps) = value.get_mut("capabilities").and_then(Value::as_object_mut)
    {
        caps.insert("tasks".into(), capability());
        response.result = ServerResult::CustomResult(CustomResult(value));
    }
    JsonRpcMessage::Response(response)
}

/// A task as 2025-11-25 shows it: `ttl` and `pollInterval` in milliseconds, without the
/// extension's `Ms` suffixes.
fn task_json(task: &Task) -> Value {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(task.task_id));
    t.insert("status".into(), json!(task.status));
    if let Some(m) = &task.status_message {
        t.insert("statusMessage".into(), json!(m));
    }
    t.insert("createdAt".into(), json!(task.created_at));
    t.insert("lastUpdatedAt".into(), json!(task.last_updated_at));
    t.insert("ttl".into(), json!(task.ttl_ms));
    if let Some(p) = task.poll_interval_ms {
        t.insert("pollInterval".into(), json!(p));
    }
    Value::Object(t)
}

/// The `taskId` of a request's params.
fn task_id(params: Option<&Value>) -> Result<&str, McpError> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::invalid_params(
                "missing taskId: send {\"taskId\": \"…\"}, the ID of a task this server made \
                 for you",
                None,
            )
        })
}

/// An rmcp server transport that hands the 2025-11-25 form's requests to the handler as custom
/// requests of the same method (their params whole, their `_meta` and extensions kept), and
/// declares the form's `tasks` capability in a 2025-11-25 `initialize` answer.
pub struct CoreForm<T> {
    inner: T,
    /// Whether the session's `initialize` declared the 2026-07-28 extension: then rmcp answers
    /// its `tasks/get` and `tasks/cancel`.
    extension: bool,
    /// The protocol version the session agreed on.
    version: Option<ProtocolVersion>,
}

impl<T> CoreForm<T> {
    pub fn new(inner: T) -> CoreForm<T> {
        CoreForm {
            inner,
            extension: false,
            version: None,
        }
    }

    /// The custom request `request` becomes, when it is one of this form's.
    fn custom(&self, request: &mut ClientRequest) -> Option<CustomRequest> {
        let extension = request
            .get_meta()
            .client_capabilities()
            .map_or(self.extension, |c| c.supports_tasks());
        // A 2026-07-28 request's `tasks/get` and `tasks/cancel` are the extension's, whether or
        // not the client declared it (rmcp answers -32021 when it did not).
        let legacy = request
            .get_meta()
            .protocol_version()
            .or_else(|| self.version.clone())
            .is_none_or(|v| v < ProtocolVersion::V_2026_07_28);
        let method = match request {
            // Only a session that agreed on 2025-11-25 was told it may ask for a task; older
            // ones have the field ignored, as the specification says.
            ClientRequest::CallToolRequest(c)
                if self.version.as_ref() == Some(&VERSION)
                    && Augmented::of(&c.extensions).is_some() =>
            {
                "tools/call"
            }
            ClientRequest::GetTaskRequest(_) if !extension && legacy => "tasks/get",
            ClientRequest::CancelTaskRequest(_) if !extension && legacy => "tasks/cancel",
            ClientRequest::ListToolsRequest(_) if self.version.as_ref() == Some(&VERSION) => {
                "tools/list"
            }
            _ => return None,
        };
        let params = serde_json::to_value(&*request)
            .ok()
            .and_then(|mut v| v.get_mut("params").map(Value::take));
        let meta = request.get_meta().clone();
        let mut custom = CustomRequest::new(method, params);
        custom.extensions = std::mem::take(request.extensions_mut());
        custom.extensions.insert(meta);
        Some(custom)
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for CoreForm<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Response(r) = &item
            && let ServerResult::InitializeResult(init) = &r.result
        {
            self.version = Some(init.protocol_version.clone());
        }
        self.inner.send(declared(item))
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(r) = &mut message {
            if let ClientRequest::InitializeRequest(init) = &r.request {
                self.extension = init.params.capabilities.supports_tasks();
            }
            if let Some(custom) = self.custom(&mut r.request) {
                r.request = ClientRequest::CustomRequest(custom);
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Answers a custom request of this form (any other: method not found, as rmcp would).
pub(crate) async fn handle(
    server: &impl Server,
    request: CustomRequest,
    context: RequestContext<RoleServer>,
) -> Result<CustomResult, McpError> {
    let params = request.params.as_ref();
    if request.method.starts_with("tasks/") && context.protocol_version() != Some(VERSION) {
        // Only 2025-11-25 has this form: an older protocol has no tasks, and 2026-07-28's
        // extension removed `tasks/result` and `tasks/list` (its `tasks/get` and `tasks/cancel`
        // are rmcp's).
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{} is not a method of protocol {}",
                arcane_markdown::clip(&request.method, 100),
                context
                    .protocol_version()
                    .map_or_else(|| "unknown".to_string(), |v| v.to_string())
            ),
            None,
        ));
    }
    let answered = match request.method.as_str() {
        "tools/call" => {
            let asked = Augmented::of(&context.extensions).unwrap_or(Augmented {
                ttl_ms: None,
                malformed: false,
            });
            if asked.malformed {
                return Err(McpError::invalid_params(
                    "tools/call's `task` must be an object, {} or {\"ttl\": milliseconds} with a \
                     whole number of milliseconds; nothing was run",
                    None,
                ));
            }
            let call = request
                .params_as::<CallToolRequestParams>()
                .ok()
                .flatten()
                .ok_or_else(|| {
                    McpError::invalid_params(
                        "tools/call needs {\"name\": …, \"arguments\": {…}}",
                        None,
                    )
                })?;
            call_as_task(server, call, context, asked).await?
        }
        "tasks/get" => {
            let t = server
                .tasks()
                .get(&server.asker(&context), task_id(params)?)?;
            task_json(&t.task)
        }
        "tasks/cancel" => cancel(server, task_id(params)?, &context).await?,
        "tasks/result" => result(server, params, &context).await?,
        "tasks/list" => list(server, params, &context)?,
        "tools/list" => with_execution(server, server.tools_listed(&context)),
        other => {
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                arcane_markdown::clip(other, 100).to_string(),
                None,
            ));
        }
    };
    Ok(CustomResult(answered))
}

/// A `tools/call` with a `task` field: a `CreateTaskResult` once the call is checked and
/// confirmed (before anything is sent). A call that ends before its task exists (invalid,
/// refused by the person or by a limit) is an error with the plain call's text.
async fn call_as_task(
    server: &impl Server,
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    asked: Augmented,
) -> Result<Value, McpError> {
    let snap = server.snapshot();
    if !surface::takes_task(snap.surface, &snap.catalog, &params.name) {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{} takes no task (its execution.taskSupport in tools/list is forbidden): call \
                 it without `task`; it answers at once",
                Value::from(arcane_markdown::clip(&params.name, 100))
            ),
            None,
        ));
    }
    drop(snap);
    match server.call_as_task(params, context, asked.ttl_ms).await? {
        CallToolResponse::Task(created) => Ok(json!({"task": task_json(&created.task)})),
        CallToolResponse::Complete(result) => {
            let text = crate::present::result_text(&result);
            Err(McpError::invalid_request(
                format!("No task was made: {text}"),
                serde_json::to_value(&result).ok(),
            ))
        }
        _ => Err(McpError::internal_error(
            "the call needed an answer the 2025-11-25 form cannot ask for",
            None,
        )),
    }
}

/// `tasks/result`: waits until the task has ended, then the plain call's answer as this
/// session gets it (rmcp's own shaping of a `tools/call` result per protocol), with the task
/// named in `_meta` as the spec asks; or the error its request would have answered.
async fn result(
    server: &impl Server,
    params: Option<&Value>,
    context: &RequestContext<RoleServer>,
) -> Result<Value, McpError> {
    let id = task_id(params)?;
    let asker = server.asker(context);
    let ended = tokio::select! {
        ended = server.tasks().result(&asker, id) => ended?,
        _ = context.ct.cancelled() => {
            return Err(McpError::internal_error("tasks/result was cancelled", None));
        }
    };
    let result = match ended {
        Ended::Result(result) => result,
        Ended::Error(e) => return Err(e),
    };
    let mut shaped = ServerResult::CallToolResult(result);
    if context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    {
        shaped.fill_missing_cache_hints();
    } else {
        shaped.strip_result_type_for_legacy_peer();
        shaped.strip_non_object_output_for_legacy_peer();
    }
    let mut value =
        serde_json::to_value(&shaped).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    if let Some(v) = value.as_object_mut() {
        let meta = v.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
        }
    }
    Ok(value)
}

/// `tasks/list`: the caller's own tasks, a page at a time.
fn list(
    server: &impl Server,
    params: Option<&Value>,
    context: &RequestContext<RoleServer>,
) -> Result<Value, McpError> {
    let cursor = params.and_then(|p| p.get("cursor")).and_then(Value::as_str);
    let (page, next) = server.tasks().list(&server.asker(context), cursor)?;
    let mut v = json!({"tasks": page.iter().map(|t| task_json(&t.task)).collect::<Vec<_>>()});
    if let Some(next) = next {
        v["nextCursor"] = json!(next);
    }
    Ok(v)
}

/// `tasks/cancel`: refused for a task that has ended (-32602, as the spec says); else the call
/// is stopped and the task answered once it is `cancelled`.
async fn cancel(
    server: &impl Server,
    id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Value, McpError> {
    let asker = server.asker(context);
    let tasks = server.tasks();
    let before = tasks.get(&asker, id)?;
    if before.status().is_terminal() {
        return Err(McpError::invalid_params(
            format!(
                "Cannot cancel task: already in terminal status '{}'",
                json!(before.status()).as_str().unwrap_or_default()
            ),
            None,
        ));
    }
    tasks.cancel(&asker, id)?;
    tasks.settled(id, CANCEL_WAIT).await;
    Ok(task_json(&tasks.get(&asker, id)?.task))
}

/// A 2025-11-25 `tools/list`: every tool, with `execution.taskSupport: "optional"` on those
/// that take a task.
fn with_execution(server: &impl Server, list: ListToolsResult) -> Value {
    // rmcp's own shaping of a `tools/list` answer to a 2025-11-25 peer, first.
    let mut shaped = ServerResult::ListToolsResult(list);
    shaped.strip_result_type_for_legacy_peer();
    shaped.strip_non_object_output_for_legacy_peer();
    let mut value = serde_json::to_value(&shaped).unwrap_or_else(|_| json!({"tools": []}));
    let snap = server.snapshot();
    if let Some(tools) = value.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
            let takes = tool
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| surface::takes_task(snap.surface, &snap.catalog, n));
            if takes {
                tool.insert("execution".into(), json!({"taskSupport": "optional"}));
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2025_11_25_initialize_declares_the_tasks_capability_and_others_do_not() {
        let init = |v: ProtocolVersion| {
            let mut info = rmcp::model::ServerConfig::new(Default::default());
            info.protocol_version = v;
            ServerJsonRpcMessage::response(
                ServerResult::InitializeResult(info),
                rmcp::model::RequestId::Number(1),
            )
        };
        let out = serde_json::to_value(declared(init(VERSION))).unwrap();
        assert_eq!(
            out["result"]["capabilities"]["tasks"],
            capability(),
            "{out}"
        );
        assert_eq!(out["result"]["protocolVersion"], "2025-11-25");
        let older = serde_json::to_value(declared(init(ProtocolVersion::V_2025_06_18))).unwrap();
        assert!(
            older["result"]["capabilities"].get("tasks").is_none(),
            "{older}"
        );
    }

    #[test]
    fn a_task_shows_ttl_and_poll_interval_in_milliseconds() {
        let t = Task::new("t1", rmcp::model::TaskStatus::Working, "a", "b")
            .with_ttl_ms(5000)
            .with_poll_interval_ms(1000)
            .with_status_message("working");
        assert_eq!(
            task_json(&t),
            json!({"taskId": "t1", "status": "working", "statusMessage": "working",
                "createdAt": "a", "lastUpdatedAt": "b", "ttl": 5000, "pollInterval": 1000})
        );
    }
}
