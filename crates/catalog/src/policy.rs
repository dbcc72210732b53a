//! Which actions the server serves: read-only mode and exclusions withdraw actions from tool
//! lists, search, resources and calls alike (enforced server-side, not only as hints).

use crate::model::{Action, Catalog};

/// The shapes of tool schemas and results, for what a client can map (docs/output-schemas.md).
/// A profile changes only shapes, never what a call does. With the `clap` feature it is a
/// command-line value (`--client-profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ClientProfile {
    /// Schemas and results as Arcane's document describes them (nested objects, arrays).
    #[default]
    Standard,
    /// First-level only, for clients such as Salesforce Agentforce that map only top-level
    /// fields: nested inputs are JSON-text parameters, results are lifted to top-level fields.
    #[cfg_attr(feature = "clap", value(alias = "agentforce"))]
    Flat,
}

impl ClientProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientProfile::Standard => "standard",
            ClientProfile::Flat => "flat",
        }
    }
}

/// How the person confirms a call that needs it (`--confirm-mode`,
/// docs/security.md#confirmation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Confirmation {
    /// Ask the person through the client whenever it can show a question, whatever the
    /// arguments say; `"confirm": true` is the rule only for a client that cannot ask.
    Ask,
    /// Ask through the client unless the call carries `"confirm": true` (the model's word).
    AskUnlessConfirmed,
    /// `"confirm": true` only; the client is never asked.
    #[default]
    Param,
    /// Destructive actions are withdrawn.
    NeverDestructive,
}

/// The active withdrawal rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `--read-only`: every mutating action is withdrawn.
    pub read_only: bool,
    /// `--safe-mode`: mutating calls answer with a preview instead of being sent.
    pub safe_mode: bool,
    /// `--exclude-tools` entries, trimmed, non-empty: action IDs, tool names or domains.
    pub exclude: Vec<String>,
    /// `--output-schemas`: declare and enforce output schemas on the individual surface.
    pub output_schemas: bool,
    /// `--client-profile`: the shapes of schemas and results (never what a call does).
    pub profile: ClientProfile,
    /// `--tools` entries: when any, only the actions they name are served.
    pub allow: Vec<String>,
    /// `--confirm-mode`: how a call that needs confirmation is confirmed.
    pub confirmation: Confirmation,
    /// `--preset`: its name, and its rules once looked up in the catalog's overlays.
    pub preset: Option<(String, Option<crate::model::Preset>)>,
    /// One caller's narrowing beyond the server's rules (an OAuth grant), when this policy is
    /// that caller's view ([`Policy::narrowed`]).
    caller: Option<CallerRules>,
}

/// What one caller may run, narrower than what the server serves: an OAuth access token
/// without `arcane:write`, and the users file's `preset` and `tools` of the rule it matched
/// (docs/oauth.md). Compared and hashed as a whole: callers with equal narrowings share one
/// view of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Narrowing {
    /// Only reading actions: no change and no credential reveal (`arcane:read` alone).
    pub read_only: bool,
    /// A preset of the overlays, by name.
    pub preset: Option<String>,
    /// Allow-list entries (action IDs, tool names, domains); none means no allow-list.
    pub tools: Vec<String>,
}

impl Narrowing {
    /// Whether it withdraws anything the server serves.
    pub fn narrows(&self) -> bool {
        self.read_only || self.preset.is_some() || !self.tools.is_empty()
    }
}

/// A [`Narrowing`] looked up in a catalog: its preset's rules, or why there are none (a name
/// the overlays do not define withdraws every action: a typo must not serve more).
#[derive(Debug, Clone)]
struct CallerRules {
    read_only: bool,
    allow: Vec<String>,
    preset: Option<(String, Result<crate::model::Preset, String>)>,
}

/// Whose rules withdraw an action: the words of the refusal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Whose {
    Server,
    Caller,
}

impl Policy {
    /// A policy from the configured settings.
    pub fn new(read_only: bool, safe_mode: bool, exclude: &[String]) -> Policy {
        Policy {
            read_only,
            safe_mode,
            exclude: exclude
                .iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            output_schemas: false,
            profile: ClientProfile::Standard,
            allow: Vec::new(),
            preset: None,
            confirmation: Confirmation::default(),
            caller: None,
        }
    }

    /// This policy as one caller's view: what the server serves and `narrowing` allows. The
    /// tool lists, search, resources, prompts and next steps of that view follow it as they
    /// follow the server's rules.
    pub fn narrowed(&self, narrowing: &Narrowing, catalog: &Catalog) -> Policy {
        // A blank entry is not dropped: it names nothing, so an allow-list or preset of blanks
        // serves nothing rather than everything (the users file refuses blanks at load).
        let trimmed = |entries: &[String]| -> Vec<String> {
            entries.iter().map(|e| e.trim().to_string()).collect()
        };
        let preset = narrowing.preset.as_deref().map(str::trim).map(|name| {
            let rules = catalog.presets.get(name).cloned().ok_or_else(|| {
                let known: Vec<&str> = catalog.presets.keys().map(String::as_str).collect();
                format!(
                    "the preset {name:?} of the OAuth users file (--oauth-users) is not \
                         defined, so nothing is served to this caller; the overlays define: {}",
                    known.join(", ")
                )
            });
            (name.to_string(), rules)
        });
        Policy {
            caller: Some(CallerRules {
                read_only: narrowing.read_only,
                allow: trimmed(&narrowing.tools),
                preset,
            }),
            ..self.clone()
        }
    }

    /// Whether every action this policy serves only reads: read-only mode, or a caller's view
    /// that may only read.
    pub fn only_reads(&self) -> bool {
        self.read_only || self.caller.as_ref().is_some_and(|c| c.read_only)
    }

    /// The same policy with an allow-list (`--tools`) and a preset name (`--preset`).
    pub fn with_allow(mut self, allow: &[String], preset: Option<&str>) -> Policy {
        self.allow = allow
            .iter()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        self.preset = preset
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| (p.to_string(), None));
        self
    }

    /// The same policy with a confirmation mode (`--confirm-mode`).
    pub fn with_confirm(mut self, confirmation: Confirmation) -> Policy {
        self.confirmation = confirmation;
        self
    }

    /// Whether the person is asked through the client (when it can show a question).
    pub fn asks(&self) -> bool {
        matches!(
            self.confirmation,
            Confirmation::Ask | Confirmation::AskUnlessConfirmed
        )
    }

    /// Whether `"confirm": true` from the model confirms a call: always when the client is
    /// not asked; only with `elicit-unless-confirmed` when it can be.
    pub fn takes_confirm_param(&self, client_can_ask: bool) -> bool {
        !client_can_ask || self.confirmation != Confirmation::Ask
    }

    /// Whether the person is asked about `action` when the client can ask: in the asking
    /// modes; and with `never-destructive`, for every action it still serves that needs
    /// confirming (an asked impact class, `confirm: always`) — the strictest mode must not
    /// let the model's `"confirm": true` run what the default mode would ask about.
    pub fn asks_for(&self, action: &Action) -> bool {
        self.asks()
            || (self.confirmation == Confirmation::NeverDestructive && action.needs_confirmation())
    }

    /// [`Policy::takes_confirm_param`] for `action`: under `never-destructive`, an action
    /// that needs confirming is confirmed only by the person when the client can ask.
    pub fn takes_confirm_param_for(&self, action: &Action, client_can_ask: bool) -> bool {
        if self.confirmation == Confirmation::NeverDestructive && action.needs_confirmation() {
            return !client_can_ask;
        }
        self.takes_confirm_param(client_can_ask)
    }

    /// Looks the preset up in the catalog's overlays; an unknown name is an error naming the
    /// defined ones (at startup, or a failed reload that keeps the last good snapshot).
    pub fn resolve_preset(mut self, catalog: &Catalog) -> anyhow::Result<Policy> {
        if let Some((name, rules)) = &mut self.preset {
            let Some(found) = catalog.presets.get(name.as_str()) else {
                let known: Vec<&str> = catalog.presets.keys().map(String::as_str).collect();
                anyhow::bail!(
                    "preset {name:?} (ARCANE_MCP_PRESET) is not defined; the overlays define: {} \
                     (built in: overrides/presets.yaml; add your own in an overlay's `presets`)",
                    known.join(", ")
                );
            };
            *rules = Some(found.clone());
        }
        Ok(self)
    }

    /// The same policy with output schemas on or off.
    pub fn with_output_schemas(mut self, on: bool) -> Policy {
        self.output_schemas = on;
        self
    }

    /// The same policy with a client profile.
    pub fn with_profile(mut self, profile: ClientProfile) -> Policy {
        self.profile = profile;
        self
    }

    /// Whether the flat client profile is active.
    pub fn flat(&self) -> bool {
        self.profile == ClientProfile::Flat
    }

    /// Whether an action's tool declares an output schema: on the individual surface, with
    /// output schemas on, and not for a mutating action in safe mode (it answers a preview).
    pub fn declares_output_schema(&self, a: &Action) -> bool {
        self.output_schemas && !(self.safe_mode && a.safety.mutating)
    }

    /// Why an action is withdrawn, or `None` when it is served: the server's rules, then (in
    /// a caller's view) the caller's narrowing.
    pub fn withdrawn(&self, a: &Action) -> Option<String> {
        self.by_server(a).or_else(|| self.by_caller(a))
    }

    /// Why the caller's narrowing alone withdraws an action (`None` outside a caller's view,
    /// and for every action it allows).
    pub fn by_caller(&self, a: &Action) -> Option<String> {
        let c = self.caller.as_ref()?;
        if c.read_only && (a.safety.mutating || a.safety.reveals_secret.is_some()) {
            return Some(format!(
                "{} needs the scope arcane:write, and your access token grants only arcane:read: \
                 sign in again granting arcane:write (or ask for a reading action)",
                a.id
            ));
        }
        if !c.allow.is_empty() && !c.allow.iter().any(|e| matches_entry(e, a)) {
            return Some(format!(
                "{} is not in your allow-list (the `tools` of your OAuth users file rule)",
                a.id
            ));
        }
        match &c.preset {
            Some((_, Err(unknown))) => Some(format!("{} is not served: {unknown}", a.id)),
            Some((name, Ok(p))) => preset_withdraws(Whose::Caller, name, p, a),
            None => None,
        }
    }

    /// Why the server's own rules withdraw an action.
    fn by_server(&self, a: &Action) -> Option<String> {
        if self.read_only && a.safety.mutating {
            return Some(format!(
                "{} changes state and the server runs in read-only mode (ARCANE_MCP_READ_ONLY); \
                 only reading actions are served",
                a.id
            ));
        }
        if self.read_only && a.safety.reveals_secret.is_some() {
            return Some(format!(
                "{} hands out a credential and the server runs in read-only mode \
                 (ARCANE_MCP_READ_ONLY); actions that reveal credentials are not served",
                a.id
            ));
        }
        if self.confirmation == Confirmation::NeverDestructive && a.safety.destructive {
            return Some(format!(
                "{} is destructive and the server refuses destructive actions \
                 (ARCANE_MCP_CONFIRM=never-destructive)",
                a.id
            ));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|e| matches_entry(e, a)) {
            return Some(format!(
                "{} is not in the server's allow-list (ARCANE_MCP_TOOLS)",
                a.id
            ));
        }
        if let Some((name, Some(p))) = &self.preset
            && let Some(why) = preset_withdraws(Whose::Server, name, p, a)
        {
            return Some(why);
        }
        let entry = self.exclude.iter().find(|e| matches_entry(e, a))?;
        Some(format!(
            "{} is excluded by the server's configuration (ARCANE_MCP_EXCLUDE_TOOLS entry {entry:?})",
            a.id
        ))
    }

    /// Whether an action is served.
    pub fn serves(&self, a: &Action) -> bool {
        self.withdrawn(a).is_none()
    }

    /// Whether any rule here can withdraw an action (read-only, an allow-list, a preset, an
    /// exclusion, `never-destructive`, a caller's narrowing): without one, every action is
    /// served and nothing needs asking about.
    pub fn withdraws_any(&self) -> bool {
        self.read_only
            || !self.exclude.is_empty()
            || !self.allow.is_empty()
            || self.preset.is_some()
            || self.confirmation == Confirmation::NeverDestructive
            || self.caller.is_some()
    }

    /// Exclusion entries (`--exclude-tools`, a preset's `exclude`) that name no action or
    /// domain of the catalog: each means an action the operator meant to withdraw may be
    /// served, so the snapshot is refused (at startup, or a reload that keeps the last good
    /// one) rather than warned about.
    pub fn unknown_exclusions<'a>(&'a self, catalog: &Catalog) -> Vec<&'a str> {
        let preset = self
            .preset
            .iter()
            .filter_map(|(_, p)| p.as_ref())
            .flat_map(|p| p.exclude.iter());
        self.exclude
            .iter()
            .chain(preset)
            .filter(|e| !catalog.actions.iter().any(|a| matches_entry(e, a)))
            .map(String::as_str)
            .collect()
    }

    /// Exclusion entries that name no action or domain of the catalog (worth a warning).
    pub fn unknown_entries<'a>(&'a self, catalog: &Catalog) -> Vec<&'a str> {
        let preset = self
            .preset
            .iter()
            .filter_map(|(_, p)| p.as_ref())
            .flat_map(|p| p.tools.iter().chain(&p.exclude));
        self.exclude
            .iter()
            .chain(&self.allow)
            .chain(preset)
            .filter(|e| !catalog.actions.iter().any(|a| matches_entry(e, a)))
            .map(String::as_str)
            .collect()
    }
}

/// Why preset `name` (the server's, or a caller's) withdraws an action, or `None`.
fn preset_withdraws(
    whose: Whose,
    name: &str,
    p: &crate::model::Preset,
    a: &Action,
) -> Option<String> {
    let (id, about) = (&a.id, &p.description);
    let server = whose == Whose::Server;
    if p.read_only && a.safety.mutating {
        return Some(if server {
            format!(
                "{id} changes state and the server's preset {name:?} ({about}) serves only \
                 reading actions"
            )
        } else {
            format!(
                "{id} changes state and your preset {name:?} ({about}) serves only reading actions"
            )
        });
    }
    // A credential is handed out only by a preset that names the action itself (not its
    // domain, not "every read").
    if a.safety.reveals_secret.is_some() && !p.tools.iter().any(|e| names_action(e, a)) {
        return Some(if server {
            format!(
                "{id} hands out a credential and the server's preset {name:?} ({about}) does not \
                 name it (ARCANE_MCP_PRESET)"
            )
        } else {
            format!(
                "{id} hands out a credential and your preset {name:?} ({about}) does not name it"
            )
        });
    }
    let allowed = (!p.reads && p.tools.is_empty())
        || (p.reads && !a.safety.mutating)
        || p.tools.iter().any(|e| matches_entry(e, a));
    if !allowed {
        return Some(if server {
            format!("{id} is not part of the server's preset {name:?} ({about}; ARCANE_MCP_PRESET)")
        } else {
            format!("{id} is not part of your preset {name:?} ({about})")
        });
    }
    let entry = p.exclude.iter().find(|e| matches_entry(e, a))?;
    Some(if server {
        format!("{id} is excluded by the server's preset {name:?} (entry {entry:?})")
    } else {
        format!("{id} is excluded by your preset {name:?} (entry {entry:?})")
    })
}

/// An exclusion entry names an action (ID, tool names, operationId) or its whole domain
/// (`container` or `arcane_container`).
fn matches_entry(entry: &str, a: &Action) -> bool {
    let stripped = entry.strip_prefix("arcane_").unwrap_or(entry);
    names_action(entry, a) || stripped == a.domain
}

/// An entry names the action itself: its ID, tool name or operationId.
fn names_action(entry: &str, a: &Action) -> bool {
    let stripped = entry.strip_prefix("arcane_").unwrap_or(entry);
    entry == a.id
        || stripped == a.id
        || entry == a.individual_tool_name()
        || a.request.operation_id.as_deref() == Some(entry)
}

/// The reason an unresolvable name is not served when it names an operation the catalog
/// excludes (an overlay exclusion), by ID or operationId.
pub fn catalog_exclusion<'a>(catalog: &'a Catalog, name: &str) -> Option<&'a str> {
    let name = name.trim();
    catalog
        .excluded
        .iter()
        .find(|e| {
            e.operation_id == name
                || e.id.as_deref().is_some_and(|id| {
                    id == name
                        || name
                            .strip_prefix("arcane_")
                            .is_some_and(|rest| rest == id || rest == id.replacen('.', "_", 1))
                })
        })
        .map(|e| e.reason.as_str())
}
