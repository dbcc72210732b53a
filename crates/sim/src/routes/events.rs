//! Arcane's event log: list (all, or one environment's), severity counts, delete, and the
//! events Arcane 2.8.0 writes when a container action is asked for
//! (`backend/internal/event/service.go`, `backend/internal/container/service.go`;
//! docs/arcane-wire.md#event-log).

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{change, message, refuse};
use super::lists::{DB, Sorting, answer_page, filter_values};
use crate::ctx::Ctx;
use crate::state::{State, timestamp};
use crate::synth::uuid;

/// The event list's sortable columns (the model's `sortable:"true"` fields).
const EVENT_SORT: Sorting = Sorting {
    keys: &[
        "type",
        "severity",
        "title",
        "resourceType",
        "resourceId",
        "resourceName",
        "userId",
        "username",
        "timestamp",
    ],
    docker_order_changes: false,
};

fn field<'a>(e: &'a Value, k: &str) -> &'a str {
    e.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Arcane's type filter: a value with a `.` is an exact type, one without a category prefix.
fn type_matches(filter: &[String], ty: &str) -> bool {
    filter.iter().any(|f| {
        if f.contains('.') {
            f == ty
        } else {
            ty.strip_prefix(f.as_str())
                .is_some_and(|r| r.starts_with('.'))
        }
    })
}

fn list_where(ctx: &Ctx, env: Option<&str>) -> Response {
    let search = ctx.q("search").map(|s| s.trim().to_lowercase());
    let st = ctx.sh.state();
    let all: Vec<&Value> = st
        .events
        .iter()
        .filter(|e| env.is_none_or(|env| field(e, "environmentId") == env))
        .collect();
    let grand = all.len();
    let exact = |k: &str, e: &Value| {
        filter_values(ctx, k).is_none_or(|v| v.iter().any(|v| v == field(e, k)))
    };
    let items: Vec<Value> = all
        .into_iter()
        .filter(|e| match search.as_deref() {
            None | Some("") => true,
            // Arcane's LIKE over title, description, resource name and username.
            Some(s) => ["title", "description", "resourceName", "username"]
                .iter()
                .any(|k| field(e, k).to_lowercase().contains(s)),
        })
        .filter(|e| exact("severity", e) && exact("resourceType", e) && exact("username", e))
        .filter(|e| env.is_some() || exact("environmentId", e))
        .filter(|e| filter_values(ctx, "type").is_none_or(|f| type_matches(&f, field(e, "type"))))
        .cloned()
        .collect();
    drop(st);
    answer_page(ctx, items, grand, DB, EVENT_SORT, vec![])
}

/// `GET /events`.
pub(super) fn list(ctx: &Ctx) -> Response {
    list_where(ctx, None)
}

/// `GET /events/environment/{environmentId}`.
pub(super) fn list_of_environment(ctx: &Ctx) -> Response {
    let env = ctx.param("environmentId").to_string();
    list_where(ctx, Some(&env))
}

/// `GET /events/stats`: every event counted by severity; an unknown one counts as info.
pub(super) fn stats(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let mut c = json!({"total": 0, "info": 0, "success": 0, "warning": 0, "error": 0});
    for e in &st.events {
        let s = match field(e, "severity") {
            s @ ("success" | "warning" | "error") => s,
            _ => "info",
        };
        c[s] = json!(c[s].as_i64().unwrap_or(0) + 1);
        c["total"] = json!(c["total"].as_i64().unwrap_or(0) + 1);
    }
    drop(st);
    ctx.ok(c, vec![])
}

/// `POST /events` (Arcane 1.11's; 2.8.0 has none): the body, stored as an event.
pub(super) fn create(ctx: &Ctx) -> Response {
    let mut e = match &ctx.body {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => json!({}),
    };
    e.as_object_mut().map(|o| o.remove("$schema"));
    let mut st = ctx.sh.state();
    push(&mut st, e);
    let out = st.events.last().cloned().unwrap_or_default();
    drop(st);
    ctx.ok(out, vec![])
}

/// `DELETE /events/{eventId}`.
pub(super) fn delete(ctx: &Ctx) -> Response {
    let id = ctx.param("eventId");
    change(ctx, |st| {
        let before = st.events.len();
        st.events.retain(|e| field(e, "id") != id);
        if st.events.len() == before {
            return Err(refuse(500, "Failed to delete event: event not found"));
        }
        Ok(message("Event deleted successfully"))
    })
}

/// The title, description and severity Arcane gives a container action's event.
fn container_event_text(action: &str) -> (&'static str, &'static str, &'static str) {
    match action {
        "start" => (
            "Container started: %s",
            "Container '%s' has been started",
            "success",
        ),
        "stop" => (
            "Container stopped: %s",
            "Container '%s' has been stopped",
            "info",
        ),
        "restart" => (
            "Container restarted: %s",
            "Container '%s' has been restarted",
            "info",
        ),
        // Arcane has no text for these: its fallbacks.
        _ => (
            "Event: %s",
            "%s operation performed on container '%s'",
            "info",
        ),
    }
}

fn push(st: &mut State, mut e: Value) {
    let n = st.events.len() as u64;
    let at = timestamp(n + 1);
    e["id"] = json!(uuid(&format!("event:{n}")));
    e["timestamp"] = json!(at);
    e["createdAt"] = json!(at);
    e["updatedAt"] = json!(at);
    st.events.push(e);
}

/// Logs a container action as Arcane 2.8.0 does, before it runs: the resource is the ID or
/// name the caller gave, and the name is the word `name` (2.8.0 passes that literal); a
/// failed action adds a `container.error` event with Docker's error.
pub(super) fn log_container_action(
    st: &mut State,
    ctx: &Ctx,
    action: &str,
    container: &str,
    error: Option<&str>,
) {
    let user = ctx
        .caller
        .as_ref()
        .map(|c| c.user.name.clone())
        .unwrap_or_default();
    let ty = format!("container.{action}");
    let (title, description, severity) = container_event_text(action);
    let (title, description) = if title.starts_with("Event:") {
        (
            format!("Event: {ty}"),
            format!("{ty} operation performed on container 'name'"),
        )
    } else {
        (
            title.replace("%s", "name"),
            description.replace("%s", "name"),
        )
    };
    push(
        st,
        json!({"type": ty, "severity": severity, "title": title, "description": description,
               "resourceType": "container", "resourceId": container, "resourceName": "name",
               "userId": format!("user-{user}"), "username": user, "environmentId": "0",
               "metadata": {"action": action, "containerId": container}}),
    );
    if let Some(err) = error {
        push(
            st,
            json!({"type": "container.error", "severity": "error", "title": "Container error",
                   "description": format!("Failed to perform operation on container: {err}"),
                   "resourceType": "container", "resourceId": container, "resourceName": "",
                   "userId": format!("user-{user}"), "username": user, "environmentId": "0",
                   "metadata": {"action": action, "error": err}}),
        );
    }
}
