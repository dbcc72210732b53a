//! What a call can change — its impact class — and so whether the person is asked
//! (docs/security.md#impact-classes).
//!
//! The promise rests on a principle, not on a list somebody remembered: every class but
//! `routine` is asked, and a mutating action that no rule and no overlay classes is
//! `unclassed` — asked too — so a new Arcane version's new writes are confirmed until an
//! operator says otherwise. Rules read what the action itself says (its name, its path, the
//! names of what it takes); overlays (`impact`, `impactReason`) say what a rule can't, and
//! `routine` is only ever declared, with its reason.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Action;

/// What a call can change. Ordered from least to most for display; which ones ask is
/// [`Impact::asks`].
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Impact {
    /// Changes nothing (a read).
    #[default]
    Reads,
    /// Reversible and grants no new trust: start, stop, restart, pull, scan, a sync of
    /// something already configured. Only ever declared, with a reason.
    Routine,
    /// Recreates, updates, upgrades or redeploys what runs.
    ChangesWorkload,
    /// Users, roles, role mappings, federated credentials, sign-in settings, API keys,
    /// credentials, swarm membership: who may do what.
    GrantsAccess,
    /// Can run an image, mount the host, set privileges or the network mode, or deploy from
    /// a repository: anything that can take the machine.
    TakesHost,
    /// Deletes or removes something (the MCP `destructiveHint`).
    Destroys,
    /// A write no rule and no overlay classed: asked until an operator classes it.
    Unclassed,
}

impl Impact {
    /// The five classes an overlay may declare, as written there.
    pub const DECLARABLE: [Impact; 5] = [
        Impact::Routine,
        Impact::ChangesWorkload,
        Impact::GrantsAccess,
        Impact::TakesHost,
        Impact::Destroys,
    ];

    /// Whether the person is asked before a call of this class runs.
    pub fn asks(self) -> bool {
        !matches!(self, Impact::Reads | Impact::Routine)
    }

    /// The class as written in overlays and listings (`takes-host`).
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::Reads => "reads",
            Impact::Routine => "routine",
            Impact::ChangesWorkload => "changes-workload",
            Impact::GrantsAccess => "grants-access",
            Impact::TakesHost => "takes-host",
            Impact::Destroys => "destroys",
            Impact::Unclassed => "unclassed",
        }
    }

    /// Why the person is asked, in words a person knows: the question's reason.
    pub fn why_asked(self) -> &'static str {
        match self {
            Impact::Reads | Impact::Routine => "needs the user's confirmation",
            Impact::ChangesWorkload => "changes what runs (recreates, updates or redeploys it)",
            Impact::GrantsAccess => "changes who may do what (access, roles or credentials)",
            Impact::TakesHost => {
                "can take the host (it runs an image, mounts, sets privileges or the network, or deploys from a repository)"
            }
            Impact::Destroys => "is destructive",
            Impact::Unclassed => {
                "is a change nobody has classed yet, so it is asked (docs/security.md#impact-classes)"
            }
        }
    }
}

impl std::fmt::Display for Impact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// Top-level input names that hand out or change access (nested ones, such as a pull's
/// registry credentials, are used, not granted).
const ACCESS_WORDS: &[&str] = &[
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
    if !a.mutating {
        return Impact::Reads;
    }
    if a.destructive {
        return Impact::Destroys;
    }
    let path_words: Vec<&str> = a
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
    let runs_command = a.handler.as_ref().is_some_and(|h| h.kind == "ws_exec");
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

/// An operator's overlay that gave an action another class than the built-in one: logged at
/// startup and listed by `check` (docs/security.md#reclassing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reclass {
    pub id: String,
    /// The class without the operator's files.
    pub was: Impact,
    pub now: Impact,
    /// `FILE:LINE` of the entry.
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for Reclass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} reclassed {} → {}{} ({})",
            self.at,
            self.id,
            self.was,
            self.now,
            if self.now.asks() {
                ""
            } else {
                ": no longer asked"
            },
            self.reason.as_deref().unwrap_or("no reason given")
        )
    }
}
