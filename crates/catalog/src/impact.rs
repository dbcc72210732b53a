//! What a call can change — its impact class — and so whether the person is asked
//! (docs/security.md#impact-classes).
//!
//! The promise rests on a principle, not on a list somebody remembered: every class but
//! `routine` is asked, and a mutating action that no rule and no overlay classes is
//! `unclassed` — asked too — so a new Arcane version's new writes are confirmed until an
//! operator says otherwise. The rules are `classify.rs`'s; overlays (`impact`,
//! `impactReason`) say what a rule can't, and `routine` is only ever declared, with its
//! reason.

use serde::{Deserialize, Serialize};

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
