//! Signing in as Arcane 2.8.0 does (its `backend/internal/auth/handler.go` and
//! `backend/internal/apikey/handler.go`): `POST /auth/login` (a user's name and password → an
//! access token and a refresh token), `POST /auth/refresh` (a new pair; the old refresh token is
//! spent), `GET /auth/me`, and the personal API keys of `/auth/me/api-keys` — created and
//! deleted only from a signed-in session, usable (or refused) at once.

use axum::response::Response;
use serde_json::{Value, json};

use crate::accounts::PersonalKey;
use crate::config::{Caller, SimRole, SimUser};
use crate::ctx::Ctx;

/// Arcane's user object of a simulated user.
fn user_json(u: &SimUser) -> Value {
    json!({
        "id": format!("user-{}", u.name),
        "username": u.name,
        "displayName": u.name,
        "isGlobalAdmin": u.role == SimRole::Admin,
        "canDelete": false,
        "requiresPasswordChange": false,
        "timeFormat": "24h",
        "roleAssignments": [],
        "permissionsByEnv": {},
        "preferences": {},
    })
}

fn text<'a>(ctx: &'a Ctx, name: &str) -> Option<&'a str> {
    ctx.body.as_ref()?.get(name)?.as_str()
}

/// `POST /auth/login`.
pub fn login(ctx: &Ctx) -> Response {
    let (Some(name), Some(password)) = (text(ctx, "username"), text(ctx, "password")) else {
        return ctx.problem(422, "validation failed");
    };
    let Some(user) = ctx
        .sh
        .users()
        .into_iter()
        .find(|u| u.name == name && u.password.as_deref() == Some(password))
    else {
        return ctx.problem(401, "Invalid username or password");
    };
    let (token, refresh, exp) = ctx.sh.accounts().sign_in(&user.name);
    ctx.ok(
        json!({
            "success": true,
            "status": "authenticated",
            "token": token,
            "refreshToken": refresh,
            "expiresAt": crate::state::unix_to_rfc3339(exp),
            "user": user_json(&user),
        }),
        vec![],
    )
}

/// `POST /auth/refresh`: a new pair; the refresh token given is spent.
pub fn refresh(ctx: &Ctx) -> Response {
    let Some(given) = text(ctx, "refreshToken") else {
        return ctx.problem(422, "validation failed");
    };
    let mut accounts = ctx.sh.accounts();
    let Some(user) = accounts.spend_refresh(given) else {
        return ctx.problem(401, "Invalid or expired refresh token");
    };
    let (token, refresh, exp) = accounts.sign_in(&user);
    drop(accounts);
    ctx.ok(
        json!({
            "token": token,
            "refreshToken": refresh,
            "expiresAt": crate::state::unix_to_rfc3339(exp),
        }),
        vec![],
    )
}

/// `GET /auth/me`.
pub fn me(ctx: &Ctx) -> Response {
    match &ctx.caller {
        Some(c) => ctx.ok(user_json(&c.user), vec![]),
        None => ctx.problem(401, "Not authenticated"),
    }
}

fn key_json(k: &PersonalKey, with_key: bool) -> Value {
    let mut v = json!({
        "id": k.id,
        "name": k.name,
        "keyPrefix": &k.key[..12],
        "kind": "personal",
        "isStatic": false,
        "isBootstrap": false,
        "createdAt": crate::state::unix_to_rfc3339(k.created),
        "updatedAt": crate::state::unix_to_rfc3339(k.created),
        "permissions": [],
        "userId": format!("user-{}", k.user),
        "expiresAt": k.expires_at,
    });
    if with_key {
        v["key"] = json!(k.key);
    }
    v
}

/// The caller of a personal-key change: a signed-in session, as Arcane requires; else the
/// status and text of the refusal.
fn interactive(ctx: &Ctx) -> Result<&SimUser, (u16, &'static str)> {
    match &ctx.caller {
        Some(Caller {
            user,
            session: true,
        }) => Ok(user),
        Some(_) => Err((
            403,
            "personal API keys can only be managed from an interactive session",
        )),
        None => Err((401, "Not authenticated")),
    }
}

/// `GET /auth/me/api-keys`: the caller's personal keys (never the keys themselves).
pub fn list_keys(ctx: &Ctx) -> Response {
    let Some(c) = &ctx.caller else {
        return ctx.problem(401, "Not authenticated");
    };
    let keys: Vec<Value> = ctx
        .sh
        .accounts()
        .keys_of(&c.user.name)
        .iter()
        .map(|k| key_json(k, false))
        .collect();
    ctx.ok(Value::Array(keys), vec![])
}

/// `POST /auth/me/api-keys`: a new personal key, shown once.
pub fn create_key(ctx: &Ctx) -> Response {
    let user = match interactive(ctx) {
        Ok(u) => u.name.clone(),
        Err((status, text)) => return ctx.problem(status, text),
    };
    let Some(name) = text(ctx, "name").filter(|n| !n.is_empty() && n.chars().count() <= 255) else {
        return ctx.problem(422, "validation failed");
    };
    let expires = text(ctx, "expiresAt").map(str::to_string);
    let k = ctx.sh.accounts().create_key(&user, name, expires);
    let v = key_json(&k, true);
    ctx.ok(v, vec![])
}

/// `DELETE /auth/me/api-keys/{id}`: only the caller's own; refused at once afterwards.
pub fn delete_key(ctx: &Ctx) -> Response {
    let user = match interactive(ctx) {
        Ok(u) => u.name.clone(),
        Err((status, text)) => return ctx.problem(status, text),
    };
    let id = ctx.param("id").to_string();
    if !ctx.sh.accounts().delete_key(&user, &id) {
        return ctx.problem(404, "API key not found");
    }
    ctx.ok(json!({"message": "API key deleted successfully"}), vec![])
}
