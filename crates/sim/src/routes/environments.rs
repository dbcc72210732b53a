//! Environments: list, get and the connection test.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::get_one;
use super::lists::{DB, ENVIRONMENT_SORT, answer_page, search_match};
use crate::ctx::Ctx;
use crate::state;

pub(super) fn list(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let grand = st.environments.len();
    let items: Vec<Value> = st
        .environments
        .iter()
        .filter(|e| search_match(ctx, &[&e.name, &e.api_url]))
        .map(state::environment_json)
        .collect();
    drop(st);
    answer_page(ctx, items, grand, DB, ENVIRONMENT_SORT, vec![])
}

fn not_found() -> String {
    "Environment not found".to_string()
}

pub(super) fn get(ctx: &Ctx) -> Response {
    get_one(
        ctx,
        |st| {
            let e = st.environments.iter().find(|e| e.id == ctx.env_id())?;
            Some(state::environment_json(e))
        },
        404,
        not_found,
    )
}

pub(super) fn test(ctx: &Ctx) -> Response {
    get_one(
        ctx,
        |st| {
            let e = st.environments.iter().find(|e| e.id == ctx.env_id())?;
            Some(if e.agent_connected && e.enabled {
                json!({"status": "online", "message": "Connection successful"})
            } else {
                json!({"status": "offline", "message": format!("Connection failed: Get \"{}/api/health\": dial tcp: connect: connection refused", e.api_url)})
            })
        },
        404,
        not_found,
    )
}
