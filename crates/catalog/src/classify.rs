//! The rules that give a write its impact class from what the action itself says: its name,
//! its path, the names of what it takes (docs/security.md#impact-classes). General rules, never
//! keyed to one action: what they cannot tell is declared in `overrides/impact.yaml`.

use serde_json::Value;

use crate::impact::Impact;
use crate::model::Action;

/// Words of an input property's name, at any depth, that can take the host: privileges,
/// mounts, devices, the network mode, a command, an image to run, compose or build text, a
/// repository to deploy from.
const HOST_WORDS: &[&str] = &[
    "privileged",
    "binds",
    "devices",
    "networkmode",
    "pidmode",
    "ipcmode",
    "capadd",
    "securityopt",
    "entrypoint",
    "cmd",
    "command",
    "containerspec",
    "tasktemplate",
    "dockerfile",
    "dockerfileinline",
    "content",
    "composecontent",
    "overridecontent",
    "envcontent",
    "manifest",
    "repositoryid",
    "gitrepo",
];

/// Ends of such a name: `preDeployExtraMounts`, `preDeployRunnerImage`, `image`.
const HOST_ENDINGS: &[&str] = &["mounts", "image"];

/// Path words of resources that deploy what they point at.
const HOST_PATHS: &[&str] = &["git-repositories", "gitops-syncs", "templates"];

/// Top-level input names that hand out or change access, act in an account's name, or give
/// Arcane an address to trust or send to (nested ones, such as a pull's registry
/// credentials, are used, not granted).
const ACCESS_WORDS: &[&str] = &[
    "url",
    "apiurl",
    "username",
    "userid",
    "password",
    "newpassword",
    "permission",
    "permissions",
    "assignments",
    "issuerurl",
    "subjectmatch",
    "subjectclaim",
    "claimvalue",
    "accesstoken",
    "jointoken",
    "remoteaddrs",
    "sshkey",
    "awssecretaccesskey",
    "regenerateapikey",
    "rotatemanagertoken",
    "rotateworkertoken",
    "rotatemanagerunlockkey",
];

/// Path words of the resources that are access: accounts, roles, credentials, sign-in,
/// swarm membership, the agents' pairing, registries' credentials, webhooks (a URL that
/// acts without signing in).
const ACCESS_PATHS: &[&str] = &[
    "users",
    "roles",
    "role-mappings",
    "federated-credentials",
    "api-keys",
    "auth",
    "oidc",
    "mfa",
    "passkeys",
    "sessions",
    "pair",
    "join",
    "join-environments",
    "init",
    "unlock",
    "join-tokens",
    "container-registries",
    "registries",
    "sync-registries",
    "notifications",
    "webhooks",
    "binding",
];

/// Words of an action's name that change what runs.
const WORKLOAD_WORDS: &[&str] = &[
    "update", "upgrade", "redeploy", "recreate", "rollback", "scale", "deploy", "up", "apply",
    "run", "build", "commit", "promote", "demote", "import",
];

/// The class the rules give an action (before overlays declare one): [`Impact::Reads`] for a
/// read, [`Impact::Unclassed`] for a write no rule recognises.
pub fn derive(a: &Action) -> Impact {
    if !a.safety.mutating {
        return Impact::Reads;
    }
    if a.safety.destructive {
        return Impact::Destroys;
    }
    let path_words: Vec<&str> = a
        .request
        .path
        .split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let on_path = |list: &[&str]| path_words.iter().any(|w| list.contains(w));
    let mut names = Vec::new();
    for p in &a.params {
        collect_names(&p.schema, &mut names, 0);
    }
    let top: Vec<String> = a.params.iter().map(|p| fold(&p.name)).collect();
    names.extend(top.iter().cloned());
    let runs_command = a
        .request
        .handler
        .as_ref()
        .is_some_and(|h| h.kind == "ws_exec");
    if runs_command
        || on_path(HOST_PATHS)
        || names.iter().any(|n| {
            HOST_WORDS.contains(&n.as_str()) || HOST_ENDINGS.iter().any(|e| n.ends_with(e))
        })
    {
        return Impact::TakesHost;
    }
    if on_path(ACCESS_PATHS)
        || top
            .iter()
            .any(|n| ACCESS_WORDS.contains(&n.as_str()) || n.starts_with("role"))
    {
        return Impact::GrantsAccess;
    }
    if a.name.split('_').any(|w| WORKLOAD_WORDS.contains(&w)) {
        return Impact::ChangesWorkload;
    }
    Impact::Unclassed
}

/// `preDeployNetworkMode` → `predeploynetworkmode`: names compared without case or `_`/`-`.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Every property name of a schema, folded, to a bounded depth (schemas are inlined, with
/// their own bounds; this one keeps a pathological schema cheap).
fn collect_names(schema: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, s) in props {
            out.push(fold(name));
            collect_names(s, out, depth + 1);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(s) = map.get(key) {
            collect_names(s, out, depth + 1);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            for s in list {
                collect_names(s, out, depth + 1);
            }
        }
    }
}
