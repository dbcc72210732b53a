//! End-to-end (`scripts/e2e.sh`): OAuth resource-server mode (docs/oauth.md)
//! against a real OpenID Provider: `oidc-provider`
//! (tests/oidc/, pinned by its package-lock; `scripts/e2e.sh` installs it) started by each test on
//! loopback, the real binary in front of the simulator. Tokens the provider mints (client
//! credentials, JWT access tokens for our resource) are accepted and run as the users file's
//! Arcane user; tokens for another audience or issuer, expired, tampered, `alg: none`, HMAC
//! with the public key, an unknown key are refused with 401; `arcane:read` cannot write; an
//! unmapped subject gets 403; a rotated key is picked up; opaque tokens go through
//! introspection. The MCP Python and TypeScript SDKs' own OAuth clients (tests/python/
//! oauth_client.py, tests/typescript/oauth_idp.mjs) discover, get tokens from the provider —
//! client credentials, and the authorization-code flow with registration and its sign-in
//! pages — and call as the mapped users.

use std::process::Stdio;

use base64::Engine;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::process_support::{HttpServer, INIT, free_port, http_client, post_call_2026, raw_post, repo};
use crate::server_support::{Sim, call, shape, text};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The OpenID Provider of tests/oidc/provider.mjs, killed when dropped.
struct Idp {
    _child: tokio::process::Child,
    /// Its stdout, kept open: a closed pipe would end the provider at its next write.
    _stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    issuer: String,
    http: reqwest::Client,
}

impl Idp {
    /// Starts the provider; `opaque` is the resource whose tokens are opaque.
    async fn start(opaque: &str) -> Idp {
        Idp::start_with(opaque, &[]).await
    }

    /// Starts the provider with `env` (provider.mjs's `OIDC_ISSUER_PATH`, `OIDC_DISCOVERY`).
    async fn start_with(opaque: &str, env: &[(&str, &str)]) -> Idp {
        let dir = repo().join("tests/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "this test needs oidc-provider: run `npm ci --prefix tests/oidc --no-audit --no-fund` \
             (Node.js 20 or later)"
        );
        let mut child = tokio::process::Command::new("node")
            .current_dir(&dir)
            .args(["provider.mjs", "http://127.0.0.1:1/unused", opaque])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(crate::fixtures::GUARD, lines.next_line())
            .await
            .expect("the provider starts (hang guard)")
            .unwrap()
            .expect("the provider prints its issuer");
        let v: Value = serde_json::from_str(&line).unwrap();
        Idp {
            _child: child,
            _stdout: lines,
            issuer: v["issuer"].as_str().unwrap().to_string(),
            http: reqwest::Client::new(),
        }
    }

    /// A client-credentials access token of `client` for `resource` with `scope`.
    async fn token(&self, client: (&str, &str), scope: &str, resource: &str) -> String {
        let r = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client.0, Some(client.1))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        v["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("a token: {v}"))
            .to_string()
    }

    /// A JWS of `claims` signed by the provider's current key (or, `fresh`, by a key it never
    /// published), with extra header fields.
    async fn sign(&self, claims: Value, header: Value, fresh: bool) -> String {
        let key = if fresh { "fresh" } else { "current" };
        self.http
            .post(format!("{}/__test/sign", self.issuer))
            .json(&json!({"claims": claims, "header": header, "key": key}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    async fn rotate(&self) {
        let r = self
            .http
            .post(format!("{}/__test/rotate", self.issuer))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    /// The provider's published keys.
    async fn jwks(&self) -> Value {
        self.http
            .get(format!("{}/jwks", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A 2026-07-28 `tools/call` of `action` with `token`: the status, the `WWW-Authenticate`
/// header and the body.
async fn call_with(base: &str, token: &str, action: &str, params: Value) -> (u16, String, String) {
    let (status, h, text) = post_call_2026(base, token, "phone", action, params).await;
    let challenge = h
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, challenge, text)
}

/// The users of the simulator and the users file that maps the provider's clients to them.
fn users_file(dir: &std::path::Path, rules: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("alice.key"), "alice-key\n").unwrap();
    let path = dir.join("users.yaml");
    std::fs::write(&path, rules).unwrap();
    path
}

const RULES: &str = "users:\n  - match: {sub: ci}\n    arcaneKeyFile: alice.key\n  - match: {groups: ops}\n    arcaneKeyEnv: OPS_ARCANE_KEY\n    tools: [container]\n";

async fn sim_with_users() -> Sim {
    use arcane_sim::{SimRole, SimUser};
    Sim::start_with_users(vec![
        SimUser {
            name: "alice".into(),
            key: "alice-key".into(),
            role: SimRole::Admin,
            password: None,
        },
        SimUser {
            name: "ops".into(),
            key: "ops-key".into(),
            role: SimRole::Admin,
            password: None,
        },
    ])
    .await
}

/// Starts the server in OAuth mode on `port` for the provider, with `extra` arguments.
async fn server(sim: &Sim, idp: &Idp, port: u16, extra: &[&str]) -> HttpServer {
    let public = format!("http://127.0.0.1:{port}");
    let mut args = vec![
        "--public-url",
        &public,
        "--oauth-issuer",
        &idp.issuer,
        "--auth-token",
        "ci-static-token",
    ];
    args.extend_from_slice(extra);
    HttpServer::start_at(
        port,
        &sim.base(),
        Some(sim.sim.api_key()),
        &args,
        &[("OPS_ARCANE_KEY", "ops-key")],
    )
    .await
}

/// The users of the requests that reached the simulator since the last reset.
async fn users_seen(sim: &Sim) -> Vec<String> {
    sim.requests()
        .await
        .iter()
        .map(|r| r["user"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_of_a_real_openid_provider() {
    let sim = sim_with_users().await;
    let idp = Idp::start("http://127.0.0.1:1/opaque").await;
    let dir = tempfile::tempdir().unwrap();
    let users = users_file(dir.path(), RULES);
    let audit = dir.path().join("audit.jsonl");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let server = server(
        &sim,
        &idp,
        port,
        &[
            "--oauth-users",
            users.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
        ],
    )
    .await;
    let base = server.base.clone();
    let http = reqwest::Client::new();

    // The protected-resource metadata, at both well-known paths.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let m: Value = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(m["resource"], resource.as_str(), "{path}: {m}");
        assert_eq!(m["authorization_servers"], json!([idp.issuer]), "{m}");
        assert_eq!(
            m["scopes_supported"],
            json!(["arcane:read", "arcane:write"])
        );
        assert_eq!(m["bearer_methods_supported"], json!(["header"]));
    }

    // No token: the challenge points to the metadata.
    let (status, h, _) = raw_post(&base, &[], INIT.to_string()).await;
    assert_eq!(status, 401);
    assert_eq!(
        h["www-authenticate"].to_str().unwrap(),
        format!(
            r#"Bearer resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", scope="arcane:read arcane:write""#
        )
    );

    // A token the provider minted for us: calls run as the users file's alice, in a session
    // and in 2026-07-28 requests alike.
    let full = idp
        .token(("ci", "ci-secret"), "arcane:read arcane:write", &resource)
        .await;
    sim.reset().await;
    let client = http_client(&base, &full, &[]).await;
    let (tool, args) = shape("dynamic", "container.list", json!({}), false);
    let listed = text(&call(&client, &tool, args).await);
    assert!(listed.contains("web-1"), "{listed}");
    client.cancel().await.unwrap();
    let (status, _, body) = call_with(
        &base,
        &full,
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let seen = users_seen(&sim).await;
    assert!(
        !seen.is_empty() && seen.iter().all(|u| u == "alice"),
        "{seen:?}"
    );
    assert!(
        sim.requests()
            .await
            .iter()
            .any(|r| r["method"] == "POST" && r["path"].as_str().unwrap().ends_with("/restart")),
        "the restart reached Arcane"
    );
    // The audit log names the token's subject and issuer.
    let line = std::fs::read_to_string(&audit).unwrap();
    let line: Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
    assert_eq!(line["oauth"]["subject"], "ci", "{line}");
    assert_eq!(line["oauth"]["issuer"], idp.issuer.as_str(), "{line}");
    assert_eq!(line["oauth"]["scope"], "arcane:write", "{line}");
    assert!(!line.to_string().contains(&full), "never the token");

    // A group claim maps ops-bot to the ops key; its rule's allow-list narrows it to containers.
    let ops = idp
        .token(
            ("ops-bot", "ops-secret"),
            "arcane:read arcane:write",
            &resource,
        )
        .await;
    sim.reset().await;
    let (status, _, body) = call_with(
        &base,
        &ops,
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(users_seen(&sim).await, vec!["ops".to_string()]);
    let (_, _, body) = call_with(&base, &ops, "image.list", json!({})).await;
    assert!(
        body.contains("not in your allow-list") && body.contains("rule 2"),
        "{body}"
    );

    // arcane:read alone: reads run, a change is refused naming the scope, nothing is sent.
    let read = idp
        .token(("ci", "ci-secret"), "arcane:read", &resource)
        .await;
    sim.reset().await;
    let (status, _, body) = call_with(&base, &read, "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("web-1"), "{body}");
    let (status, _, body) = call_with(
        &base,
        &read,
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("needs the scope arcane:write"), "{body}");
    assert!(
        !sim.requests().await.iter().any(|r| r["method"] == "POST"),
        "a refused change reaches nobody"
    );

    // Tokens that must not pass: 401 with invalid_token, and the reason in the body.
    let (header, payload, _) = {
        let mut p = full.split('.');
        (
            p.next().unwrap().to_string(),
            p.next().unwrap().to_string(),
            p.next().unwrap().to_string(),
        )
    };
    let claims: Value = serde_json::from_slice(&B64.decode(&payload).unwrap()).unwrap();
    let valid = |extra: Value| {
        let mut c = claims.clone();
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let other_audience = idp
        .token(
            ("ci", "ci-secret"),
            "arcane:read arcane:write",
            "https://other.example.com/mcp",
        )
        .await;
    let other_issuer = idp
        .sign(
            valid(json!({"iss": "https://evil.example.com"})),
            json!({}),
            false,
        )
        .await;
    let expired = idp
        .sign(
            valid(json!({"exp": now() - 3600, "iat": now() - 7200})),
            json!({}),
            false,
        )
        .await;
    let not_yet = idp
        .sign(valid(json!({"nbf": now() + 3600})), json!({}), false)
        .await;
    let tampered = {
        let forged = B64.encode(serde_json::to_vec(&valid(json!({"sub": "admin"}))).unwrap());
        let sig = full.rsplit('.').next().unwrap();
        format!("{header}.{forged}.{sig}")
    };
    let none = format!(
        "{}.{}.",
        B64.encode(br#"{"alg":"none","typ":"at+jwt"}"#),
        B64.encode(serde_json::to_vec(&claims).unwrap())
    );
    // HMAC confusion: HS256 keyed with the provider's public key, which anyone can read.
    let hmac = {
        let jwks = idp.jwks().await;
        let public = serde_json::to_vec(&jwks["keys"][0]).unwrap();
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = jwks["keys"][0]["kid"].as_str().map(str::to_string);
        jsonwebtoken::encode(
            &h,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&public),
        )
        .unwrap()
    };
    let unknown_kid = idp.sign(claims.clone(), json!({}), true).await;
    for (name, token, says) in [
        (
            "another audience",
            other_audience.as_str(),
            "issued for another service",
        ),
        ("another issuer", &other_issuer, "another issuer"),
        ("expired", &expired, "expired"),
        ("not yet valid", &not_yet, "not valid yet"),
        ("tampered", &tampered, "signature does not verify"),
        ("alg none", &none, "never `none`"),
        ("HMAC with the public key", &hmac, "HS256"),
        ("an unknown key", &unknown_kid, "does not publish"),
        ("not a JWT", "opaque-garbage", "not a JWT"),
    ] {
        let (status, challenge, body) = call_with(&base, token, "container.list", json!({})).await;
        assert_eq!(status, 401, "{name}: {body}");
        assert!(
            challenge.contains(r#"error="invalid_token""#),
            "{name}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata="),
            "{name}: {challenge}"
        );
        assert!(body.contains(says), "{name}: {body}");
    }

    // A valid token without either scope: 403 insufficient_scope (step up).
    let no_scope = idp
        .sign(valid(json!({"scope": "openid"})), json!({}), false)
        .await;
    let (status, challenge, _) = call_with(&base, &no_scope, "container.list", json!({})).await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    assert!(
        challenge.contains(r#"scope="arcane:read arcane:write""#),
        "{challenge}"
    );

    // A subject no rule maps: 403 saying so; the file, edited, is read again.
    let mallory = idp
        .sign(valid(json!({"sub": "mallory"})), json!({}), false)
        .await;
    let (status, _, body) = call_with(&base, &mallory, "container.list", json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("\"mallory\"") && body.contains("no rule"),
        "{body}"
    );
    std::fs::write(
        &users,
        format!("{RULES}  - match: {{sub: mallory}}\n    arcaneKeyFile: alice.key\n    preset: read-only\n"),
    )
    .unwrap();
    let (status, _, body) = call_with(&base, &mallory, "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    let (_, _, body) = call_with(
        &base,
        &mallory,
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert!(
        body.contains("read-only") && body.contains("mallory"),
        "{body}"
    );
    // A broken edit keeps the rules that were serving.
    std::fs::write(&users, "users:\n  - match: {sub: mallory}\n").unwrap();
    let (status, _, body) = call_with(&base, &mallory, "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");

    // The static token still works beside OAuth.
    let (status, _, body) = call_with(&base, "ci-static-token", "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");

    let log = server.stop().await;
    for secret in [&full, &ops, "alice-key", "ops-key"] {
        assert!(!log.contains(secret), "a secret in the log:\n{log}");
    }
}

/// The provider rotates its key: a token of the new key is accepted once the server fetches
/// the keys again (its `kid` is unknown to the cached set), one of the old key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_signing_key_is_picked_up() {
    let sim = sim_with_users().await;
    let idp = Idp::start("http://127.0.0.1:1/opaque").await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let server = server(&sim, &idp, port, &[]).await;
    let old = idp
        .token(("ci", "ci-secret"), "arcane:read", &resource)
        .await;
    let (status, _, body) = call_with(&server.base, &old, "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    // Without a users file, calls run with the server's key.
    assert!(
        users_seen(&sim).await.iter().all(|u| u == "arcane"),
        "{:?}",
        users_seen(&sim).await
    );
    idp.rotate().await;
    let new = idp
        .token(("ci", "ci-secret"), "arcane:read", &resource)
        .await;
    assert_ne!(
        jsonwebtoken::decode_header(&new).unwrap().kid,
        jsonwebtoken::decode_header(&old).unwrap().kid
    );
    let (status, _, body) = call_with(&server.base, &new, "container.list", json!({})).await;
    assert_eq!(status, 200, "the new key is fetched: {body}");
    let (status, _, body) = call_with(&server.base, &old, "container.list", json!({})).await;
    assert_eq!(status, 401, "the old key is gone: {body}");
}

/// Opaque access tokens are validated by RFC 7662 introspection, as the resource server's own
/// client; a token for another audience or an inactive one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected() {
    let sim = sim_with_users().await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let idp = Idp::start(&resource).await;
    let dir = tempfile::tempdir().unwrap();
    let users = users_file(dir.path(), RULES);
    let secret = dir.path().join("rs-secret");
    std::fs::write(&secret, "rs-secret\n").unwrap();
    let introspection = format!("{}/token/introspection", idp.issuer);
    let server = server(
        &sim,
        &idp,
        port,
        &[
            "--oauth-users",
            users.to_str().unwrap(),
            "--oauth-introspection-url",
            &introspection,
            "--oauth-introspection-client-id",
            "resource-server",
            "--oauth-introspection-secret-file",
            secret.to_str().unwrap(),
        ],
    )
    .await;
    let opaque = idp
        .token(("ops-bot", "ops-secret"), "arcane:read", &resource)
        .await;
    assert_eq!(opaque.split('.').count(), 1, "an opaque token: {opaque}");
    sim.reset().await;
    let (status, _, body) = call_with(&server.base, &opaque, "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(users_seen(&sim).await, vec!["ops".to_string()]);
    let (_, _, body) = call_with(
        &server.base,
        &opaque,
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert!(body.contains("arcane:write"), "{body}");
    let (status, _, body) = call_with(
        &server.base,
        "not-a-token-it-issued",
        "container.list",
        json!({}),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("not active"), "{body}");
}

/// The tools `token`'s caller lists, as JSON.
async fn tools_of(base: &str, token: &str) -> Vec<Value> {
    let client = http_client(base, token, &[]).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    client.cancel().await.ok();
    tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect()
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// Each OAuth caller's tool list shows only what it may run (docs/oauth.md#scopes), on the
/// individual surface where each tool is one action: an `arcane:read` token lists no tool that
/// changes anything, a rule's preset lists only the preset, an `arcane:write` token with no
/// narrowing lists exactly what the static token lists. A withdrawn tool called anyway is
/// refused naming the scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_oauth_caller_lists_only_what_it_may_run() {
    let sim = sim_with_users().await;
    let idp = Idp::start("http://127.0.0.1:1/opaque").await;
    let dir = tempfile::tempdir().unwrap();
    let users = users_file(
        dir.path(),
        "users:\n  - match: {sub: ci}\n    arcaneKeyFile: alice.key\n  - match: {groups: ops}\n    arcaneKeyEnv: OPS_ARCANE_KEY\n    preset: minimal\n",
    );
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let server = server(
        &sim,
        &idp,
        port,
        &[
            "--oauth-users",
            users.to_str().unwrap(),
            "--tool-surface",
            "individual",
        ],
    )
    .await;
    let base = server.base.clone();
    let write = idp
        .token(("ci", "ci-secret"), "arcane:read arcane:write", &resource)
        .await;
    let read = idp
        .token(("ci", "ci-secret"), "arcane:read", &resource)
        .await;
    let ops = idp
        .token(
            ("ops-bot", "ops-secret"),
            "arcane:read arcane:write",
            &resource,
        )
        .await;

    let everything = tools_of(&base, "ci-static-token").await;
    assert!(names(&everything).contains(&"arcane_container_restart"));
    assert_eq!(
        tools_of(&base, &write).await,
        everything,
        "a write token with no rule narrowing it lists what the server serves"
    );

    let reads = tools_of(&base, &read).await;
    assert!(
        names(&reads).contains(&"arcane_container_list"),
        "{:?}",
        names(&reads)
    );
    assert!(!names(&reads).contains(&"arcane_container_restart"));
    assert!(reads.len() < everything.len());
    let catalog = crate::server_support::catalog();
    for t in &reads {
        let name = t["name"].as_str().unwrap();
        let a = catalog.resolve(name).unwrap();
        assert!(
            !a.safety.mutating && a.safety.reveals_secret.is_none(),
            "{name} is listed for an arcane:read token"
        );
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{name}");
    }
    // Every reading tool the server lists is still listed, unchanged.
    let readable: Vec<&Value> = everything
        .iter()
        .filter(|t| {
            let a = catalog.resolve(t["name"].as_str().unwrap()).unwrap();
            !a.safety.mutating && a.safety.reveals_secret.is_none()
        })
        .collect();
    assert_eq!(reads.iter().collect::<Vec<_>>(), readable);

    // The users file's preset: exactly the preset's actions (overrides/presets.yaml).
    let mut preset = names(&tools_of(&base, &ops).await)
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    preset.sort();
    assert_eq!(
        preset,
        [
            "arcane_container_get",
            "arcane_container_list",
            "arcane_container_logs",
            "arcane_container_restart",
            "arcane_environment_list",
            "arcane_project_down",
            "arcane_project_get",
            "arcane_project_list",
            "arcane_project_up",
        ]
    );

    // Called anyway: the scope is named, nothing is sent.
    sim.reset().await;
    let client = http_client(&base, &read, &[]).await;
    let r = call(
        &client,
        "arcane_container_restart",
        json!({"containerId": "web-1", "confirm": true}),
    )
    .await;
    let refused = text(&r);
    assert_eq!(r.is_error, Some(true), "{refused}");
    assert!(refused.contains("arcane:write"), "{refused}");
    client.cancel().await.ok();
    let client = http_client(&base, &ops, &[]).await;
    let r = call(&client, "arcane_image_list", json!({})).await;
    let refused = text(&r);
    assert!(
        refused.contains("not part of your preset \"minimal\"") && refused.contains("rule 2"),
        "{refused}"
    );
    client.cancel().await.ok();
    assert!(
        !sim.requests()
            .await
            .iter()
            .any(|r| r["path"].as_str().unwrap_or("").ends_with("/restart")),
        "nothing reached Arcane"
    );
    server.stop().await;
}

/// Runs an MCP SDK's OAuth script — `python` (tests/python/oauth_client.py, the Python SDK) or
/// `typescript` (tests/typescript/oauth_idp.mjs) — with `args`; the JSON report it prints.
pub(crate) async fn sdk_report(sdk: &str, args: &[&str]) -> Value {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let (program, script, install) = match sdk {
        "python" => (
            python.clone(),
            repo().join("tests/python/oauth_client.py"),
            format!("`{python} -m pip install '{}'`", crate::e2e_sdk::PY_MCP),
        ),
        _ => (
            "node".to_string(),
            repo().join("tests/typescript/oauth_idp.mjs"),
            "`npm ci --prefix tests/typescript --no-audit --no-fund`".to_string(),
        ),
    };
    let out = tokio::process::Command::new(&program)
        .arg(&script)
        .args(args)
        .current_dir(script.parent().unwrap())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("this test needs {program} ({e}); then {install}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "no report from {} (does it need {install}?):\n{stdout}\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The rules for the SDKs' tokens: the client-credentials client `ci` runs as Arcane's `ops`,
/// the person signed in at the provider as `alice` (her login is the token's `sub`) as `alice`.
const SDK_RULES: &str = "users:\n  - match: {sub: ci}\n    arcaneKeyEnv: OPS_ARCANE_KEY\n  - match: {sub: alice}\n    arcaneKeyFile: alice.key\n";

/// An MCP SDK's own OAuth client against the server in resource-server mode with the real
/// provider: from the 401 it reads our protected-resource metadata and the provider's, gets a
/// client-credentials token for our resource, then registers at the provider, signs alice in
/// on its pages, exchanges the code with PKCE and refreshes; every call runs as the users
/// file's Arcane user of each token.
async fn an_sdk_against_the_provider(sdk: &str, idp_env: &[(&str, &str)]) {
    let sim = sim_with_users().await;
    let idp = Idp::start_with("http://127.0.0.1:1/opaque", idp_env).await;
    // The provider's endpoints are below its issuer's path, when it has one.
    let at = url::Url::parse(&idp.issuer)
        .unwrap()
        .path()
        .trim_end_matches('/')
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let users = users_file(dir.path(), SDK_RULES);
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let server = server(
        &sim,
        &idp,
        port,
        &["--oauth-users", users.to_str().unwrap()],
    )
    .await;
    sim.reset().await;
    let report = sdk_report(sdk, &["idp", &server.base, &idp.issuer]).await;
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(
        report["steps"],
        json!(["ci", "alice", "alice refreshed"]),
        "{report:#}"
    );
    // The token was asked for our resource, with the scopes our challenge names.
    assert_eq!(
        report["alice_authorization"]["resource"],
        resource.as_str(),
        "{report:#}"
    );
    assert_eq!(
        report["alice_authorization"]["scope"], "arcane:read arcane:write",
        "{report:#}"
    );
    assert_eq!(
        report["provider_pages"],
        json!(["login", "consent"]),
        "{report:#}"
    );
    // What the SDK asked of whom: our metadata, then the provider's registration and tokens.
    let asked: Vec<String> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r["origin"], r["method"], r["path"], r["status"]
            )
            .replace('"', "")
        })
        .collect();
    for want in [
        "server POST /mcp 401".to_string(),
        "server GET /.well-known/oauth-protected-resource/mcp 200".to_string(),
        format!("provider POST {at}/reg 201"),
        format!("provider POST {at}/token 200"),
    ] {
        assert!(asked.contains(&want), "{want}: {asked:#?}");
    }
    // Each token ran as its own Arcane user: ops for the client, then alice.
    let seen = users_seen(&sim).await;
    assert!(
        seen.first().map(String::as_str) == Some("ops")
            && seen.last().map(String::as_str) == Some("alice")
            && seen.iter().all(|u| u == "ops" || u == "alice"),
        "{seen:?}"
    );
    let log = server.stop().await;
    assert!(!log.contains("alice-key"), "a secret in the log:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_against_a_real_openid_provider() {
    an_sdk_against_the_provider("python", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_against_a_real_openid_provider() {
    an_sdk_against_the_provider("typescript", &[]).await;
}

/// An issuer with a path (as Keycloak's `/realms/…` and Authentik's `/application/o/…/` have)
/// whose metadata is only where RFC 8414 §3.1 puts it, between the host and the path: the
/// server finds the keys there (it once looked only at the two names appended to the issuer,
/// so every token was refused), and the SDK's discovery finds the provider there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_with_a_path_and_only_rfc8414_metadata() {
    an_sdk_against_the_provider(
        "python",
        &[
            ("OIDC_ISSUER_PATH", "/realms/arcane"),
            ("OIDC_DISCOVERY", "rfc8414"),
        ],
    )
    .await;
}

/// The README's "sign in with your identity provider" recipe, started as written
/// (`crate::recipes` reads it from README.md): its variables and flags, its users file — no key
/// of the server's own. Substituted: Arcane's URL, the public URL's host and port (loopback,
/// where `http://` is allowed), the listening port, the host clients use, the issuer (this
/// provider), the users file's path and the key file it names. `OPS_ARCANE_KEY` is set, as the
/// users file asks. A token of alice (`preferred_username`) runs as her key, a token of the
/// provider's `ops-bot` client (`groups: [ops]`) as the ops key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_identity_provider_recipe_starts_as_written() {
    use crate::recipes::{Served, Subs, command, readme_block, shell_lines};
    let sim = sim_with_users().await;
    let idp = Idp::start("http://127.0.0.1:1/opaque").await;
    let lines = shell_lines(&readme_block("ARCANE_MCP_OAUTH_USERS="));
    assert_eq!(lines.len(), 1, "{lines:?}");
    let users_text = readme_block("arcaneKeyEnv: OPS_ARCANE_KEY");
    let dir = tempfile::tempdir().unwrap();
    let alice = dir.path().join("alice");
    std::fs::write(&alice, "alice-key\n").unwrap();
    let users = dir.path().join("users.yaml");
    let written = users_text.replace("/run/secrets/alice", alice.to_str().unwrap());
    assert_ne!(
        written, users_text,
        "the users file names /run/secrets/alice"
    );
    std::fs::write(&users, written).unwrap();
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let subs = Subs::new(&[
        ("https://arcane.example.com", sim.base()),
        ("https://mcp.example.com", public.clone()),
        (
            "https://auth.example.com/application/o/arcane-mcp/",
            idp.issuer.clone(),
        ),
        ("/etc/arcane-mcp/users.yaml", users.display().to_string()),
        ("0.0.0.0:8000", format!("0.0.0.0:{port}")),
        ("mcp.example.com", "127.0.0.1".into()),
    ]);
    let served = Served::start(command(&lines[0], &subs, &[("OPS_ARCANE_KEY", "ops-key")])).await;
    subs.all_used();
    let resource = format!("{public}/mcp");
    // Alice: a token of the provider's key whose `preferred_username` is hers.
    let minted = idp
        .token(("ci", "ci-secret"), "arcane:read arcane:write", &resource)
        .await;
    let payload = minted.split('.').nth(1).unwrap();
    let mut claims: Value = serde_json::from_slice(&B64.decode(payload).unwrap()).unwrap();
    claims["preferred_username"] = json!("alice");
    let alice_token = idp.sign(claims, json!({}), false).await;
    let ops_token = idp
        .token(
            ("ops-bot", "ops-secret"),
            "arcane:read arcane:write",
            &resource,
        )
        .await;
    for (token, user) in [(&alice_token, "alice"), (&ops_token, "ops")] {
        sim.reset().await;
        let (status, _, body) = call_with(&public, token, "container.list", json!({})).await;
        assert_eq!(status, 200, "{user}: {body}\n{}", served.log());
        assert!(body.contains("web-1"), "{user}: {body}");
        let seen = crate::recipes::users_seen(&sim).await;
        assert_eq!(seen, [user], "{user}");
    }
}
