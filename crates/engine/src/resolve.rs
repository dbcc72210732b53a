//! Names and references → the IDs Arcane wants, before the request is built.
//!
//! Arcane finds projects by database ID only, and on 2.8.x an image reference containing `/`
//! cannot reach a route that does not decode its path parameter (docs/arcane-wire.md). The
//! catalog's resolvers (`overrides/resolvers.yaml`) say, per parameter name, which list action
//! to ask, which item fields to compare and which field to send instead. This module runs
//! them: the lists are fetched page by page, kept briefly, and fetched again when a value is
//! not found in a kept copy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::context::{CallContext, ExecConfig};
use crate::http::{Arcane, Auth};
use crate::scope::Scope;
use crate::{errors, request};
use arcane_catalog::{Action, ParamResolver};
use arcane_markdown::{code_span, quoted_name};

/// How long a fetched list answers lookups before it is fetched again.
const KEEP_FOR: Duration = Duration::from_secs(30);
/// Page size of the lookups (database lists clamp larger limits to 100).
const PAGE: u64 = 100;
/// At most this many pages are read per lookup; a bigger collection is searched in part.
const MAX_PAGES: u64 = 20;
/// Most items a lookup reads ([`MAX_PAGES`] pages).
pub(crate) const MAX_ITEMS: usize = (PAGE * MAX_PAGES) as usize;
/// Candidates named in a "not found" or "ambiguous" message.
const MAX_CANDIDATES: usize = 10;

/// (list action, environment, the credential's full SHA-256): a list fetched with one caller's
/// key never answers another caller's lookup (docs/security.md). The whole digest, not the short
/// fingerprint the audit log shows: a key forged to match a 48-bit fingerprint must not reach
/// another caller's lists.
type ListKey = (String, String, [u8; 32]);
/// When a list was fetched, and its items.
type Kept = (Instant, Arc<Vec<Value>>);

/// Lists fetched for lookups, by [`ListKey`].
#[derive(Default)]
pub struct Cache {
    lists: Mutex<HashMap<ListKey, Kept>>,
}

impl Cache {
    fn get(&self, key: &ListKey) -> Option<Arc<Vec<Value>>> {
        let lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        lists
            .get(key)
            .filter(|(at, _)| at.elapsed() < KEEP_FOR)
            .map(|(_, items)| items.clone())
    }

    fn put(&self, key: ListKey, items: Arc<Vec<Value>>) {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        lists.retain(|_, (at, _)| at.elapsed() < KEEP_FOR);
        lists.insert(key, (Instant::now(), items));
    }
}

/// Why a value was not turned into an ID: the caller's value, or the lookup itself (a resource
/// read answers the first as invalid params, the second as Arcane's failure).
#[derive(Debug)]
pub(crate) enum Unresolved {
    /// The value names no object, or more than one: the text names the candidates.
    Value(String),
    /// The list to look it up in could not be read.
    Lookup(String),
}

/// What name lookups read with: the executor's settings, the one client to Arcane, and the
/// lists already read.
pub(crate) struct Lookup<'a> {
    pub config: &'a ExecConfig,
    pub arcane: &'a Arcane,
    pub cache: &'a Cache,
}

/// Replaces, in `params`, every value a resolver of the catalog turns into an ID. Resolvers run
/// in catalog order (the environment first, so later lookups run in the right environment).
/// An unknown or ambiguous value is an error text naming the candidates.
pub async fn resolve_params(
    via: &Lookup<'_>,
    scope: &Scope<'_>,
    action: &Action,
    params: &mut Map<String, Value>,
    ctx: &CallContext,
) -> Result<(), Unresolved> {
    let auth = ctx.auth(&via.config.auth);
    // A dot or empty path segment anywhere is refused when the request is built: nothing,
    // not even a lookup, is sent for such a call.
    let refused = action.params.iter().any(|p| {
        matches!(
            p.location,
            arcane_catalog::ParamLocation::Path | arcane_catalog::ParamLocation::Environment
        ) && params
            .get(&p.name)
            .and_then(Value::as_str)
            .is_some_and(crate::path::is_dot_or_empty)
    });
    if refused {
        return Ok(());
    }
    for r in &scope.catalog.resolvers {
        if r.names_only || r.through == action.id || action.param(&r.param).is_none() {
            continue;
        }
        // The configured default environment may be a name too.
        let default = (r.param == "environmentId").then_some(via.config.environment.as_str());
        let given = params.get(&r.param).and_then(Value::as_str);
        let Some(value) = given.or(default) else {
            continue;
        };
        // A dot or empty segment is refused when the request is built: no lookup for it.
        if crate::path::is_dot_or_empty(value) {
            continue;
        }
        // A value the caller gave shaped like an ID is still looked up: another object may
        // carry it as its name, and then it is ambiguous rather than the ID's
        // (docs/security.md#names-and-ids-one-object-per-value). The operator's configured
        // default environment, when shaped like an ID, is that ID: a call that names no
        // environment names nothing that could be ambiguous.
        let id_shaped = keeps(r, value);
        if id_shaped && given.is_none() {
            continue;
        }
        // A withdrawn list is not used behind the operator's back: the value goes as given.
        let Some(through) = scope
            .catalog
            .get(&r.through)
            .filter(|a| scope.policy.serves(a))
        else {
            continue;
        };
        let environment = params
            .get("environmentId")
            .and_then(Value::as_str)
            .unwrap_or(&via.config.environment)
            .to_string();
        let id = lookup(
            List {
                via,
                auth,
                through,
                environment: &environment,
            },
            r,
            value,
            id_shaped,
        )
        .instrument(crate::trace::lookup(&through.id, &r.param))
        .await?;
        params.insert(r.param.clone(), Value::String(id));
    }
    Ok(())
}

fn keeps(r: &ParamResolver, value: &str) -> bool {
    // The pattern was checked when the catalog was built.
    r.keep
        .as_deref()
        .and_then(compiled)
        .is_some_and(|re| re.is_match(value))
}

/// Most `keep` patterns a process keeps compiled; past it (an operator's reloads each bringing
/// new patterns) the map starts again.
const MAX_COMPILED: usize = 64;

/// The compiled form of a `keep` pattern, compiled once per process rather than on every call
/// (compiling costs far more than matching). `None` for a pattern that does not compile.
/// Shared, not cloned: a cloned `Regex` starts with empty match caches, which costs more than
/// the match.
fn compiled(pattern: &str) -> Option<Arc<regex::Regex>> {
    use std::sync::{LazyLock, RwLock};
    type Compiled = HashMap<String, Option<Arc<regex::Regex>>>;
    static COMPILED: LazyLock<RwLock<Compiled>> = LazyLock::new(Default::default);
    if let Some(re) = COMPILED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(pattern)
    {
        return re.clone();
    }
    let re = regex::Regex::new(pattern).ok().map(Arc::new);
    let mut map = COMPILED.write().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_COMPILED {
        map.clear();
    }
    map.insert(pattern.to_string(), re.clone());
    re
}

/// One list a resolver reads: through which action, in which environment, with whose
/// credential, and where kept lists are.
#[derive(Clone, Copy)]
pub(crate) struct List<'a> {
    pub via: &'a Lookup<'a>,
    pub auth: &'a Auth,
    pub through: &'a Action,
    pub environment: &'a str,
}

/// The list `through` in `environment`: the kept copy when there is one, else read (and
/// kept); whether it was read now.
async fn kept_or_read(list: List<'_>) -> (Result<std::sync::Arc<Vec<Value>>, String>, bool) {
    let List {
        via,
        auth,
        through,
        environment,
    } = list;
    let (key, _) = list_key(auth, through, environment);
    let cached = via.cache.get(&key);
    tracing::Span::current().record("arcane.resolve.cached", cached.is_some());
    match cached {
        Some(items) => (Ok(items), false),
        None => (read_list(via, auth, through, environment).await, true),
    }
}

/// Looks `value` up in the list `through`. An ID-shaped value (`id_shaped`: it matches the
/// resolver's `keep`) that names nothing in the list, or whose list cannot be read, goes as
/// given, as it always did: Arcane answers for an ID it does not know, and a list that cannot
/// be read means the call itself would fail with the more telling error. One that another
/// object carries as its name is refused as ambiguous, like any value naming two objects.
async fn lookup(
    list: List<'_>,
    r: &ParamResolver,
    value: &str,
    id_shaped: bool,
) -> Result<String, Unresolved> {
    let (via, auth, through, environment) = (list.via, list.auth, list.through, list.environment);
    let (items, fresh) = match kept_or_read(list).await {
        (Ok(items), fresh) => (items, fresh),
        (Err(e), _) if id_shaped => {
            tracing::debug!(list = %through.id, error = %e, "the ambiguity check of an ID-shaped value could not read its list; the value goes as given");
            return Ok(value.to_string());
        }
        (Err(e), _) => return Err(Unresolved::Lookup(e)),
    };
    let found = matches(r, &items, value);
    // A name created since the list was kept: look again. An ID-shaped value that names
    // nothing is the common case (an ID the list holds matches it), so it is not fetched again
    // for each call.
    if found.is_empty() && !fresh && !id_shaped {
        let items = read_list(via, auth, through, environment)
            .await
            .map_err(Unresolved::Lookup)?;
        let found = matches(r, &items, value);
        return decide(r, &through.id, environment, value, id_shaped, found, &items)
            .map_err(Unresolved::Value);
    }
    decide(r, &through.id, environment, value, id_shaped, found, &items).map_err(Unresolved::Value)
}

/// The object a target's value names, for the person's question: its noun, its name and its
/// ID, read through the list its resolver uses (the kept copy when there is one). `None` when
/// the list cannot be read or the value names no single object: the question then shows the
/// value alone.
pub(crate) async fn name_of(
    list: List<'_>,
    r: &ParamResolver,
    value: &str,
) -> Option<crate::effect::Named> {
    let through = list.through;
    let items = kept_or_read(list)
        .await
        .0
        .inspect_err(|e| {
            tracing::debug!(list = %through.id, error = %e, "a target's name could not be read for the question; it shows the ID alone");
        })
        .ok()?;
    let [hit] = matches(r, &items, value).try_into().ok()?;
    let item = items
        .iter()
        .find(|i| i.get(&r.take).and_then(Value::as_str) == Some(hit.id.as_str()))?;
    let name = label_name(r, item)?;
    Some(crate::effect::Named {
        noun: r.noun.clone(),
        // Docker's container names start with `/`.
        name: name.strip_prefix('/').unwrap_or(&name).to_string(),
        id: hit.id,
    })
}

/// An item a value matched: its `take` value and the field that matched.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    id: String,
    field: String,
}

/// The items matching the value in its first variant that matches, one hit per item (by the
/// first of its fields that matched; the `take` field first, so that an item whose ID it is
/// counts as matched by its ID).
fn matches(r: &ParamResolver, items: &[Value], value: &str) -> Vec<Hit> {
    let variants: Vec<String> = if r.variants.is_empty() {
        vec![value.to_string()]
    } else {
        r.variants.iter().map(|v| v.replace("{}", value)).collect()
    };
    let fields: Vec<&String> = r
        .match_fields
        .iter()
        .filter(|f| **f == r.take)
        .chain(r.match_fields.iter().filter(|f| **f != r.take))
        .collect();
    for candidate in &variants {
        let mut hits: Vec<Hit> = Vec::new();
        for item in items {
            let field = fields.iter().find(|f| match item.get(f.as_str()) {
                Some(Value::String(s)) => s == candidate,
                Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(candidate)),
                _ => false,
            });
            if let Some(field) = field
                && let Some(id) = item.get(&r.take).and_then(Value::as_str)
                && !id.is_empty()
                && !hits.iter().any(|h| h.id == id)
            {
                hits.push(Hit {
                    id: id.to_string(),
                    field: field.to_string(),
                });
            }
        }
        if !hits.is_empty() {
            return hits;
        }
    }
    Vec::new()
}

fn decide(
    r: &ParamResolver,
    list: &str,
    environment: &str,
    value: &str,
    id_shaped: bool,
    found: Vec<Hit>,
    items: &[Value],
) -> Result<String, String> {
    match found.len() {
        1 => Ok(found.into_iter().next().map(|h| h.id).unwrap_or_default()),
        0 if id_shaped => Ok(value.to_string()),
        0 => {
            let names: Vec<String> = items
                .iter()
                .filter_map(|i| label(r, i))
                .take(MAX_CANDIDATES)
                .collect();
            // The values the model sent are shown with their invisible characters escaped
            // (`quoted_name`): a NUL or a zero-width space is what is wrong with them.
            Err(format!(
                "No {noun} {v}{env}: {param} takes the {noun}'s ID or one of its \
                 names.{known} Nothing was sent. List them with {list}.",
                noun = r.noun,
                v = quoted_name(value, 100),
                // Resolving the environment itself, "in environment" would repeat the value.
                env = if r.param == "environmentId" {
                    String::new()
                } else {
                    format!(" in environment {}", quoted_name(environment, 100))
                },
                param = r.param,
                known = if names.is_empty() {
                    String::new()
                } else {
                    format!(" Known: {}.", names.join(", "))
                },
            ))
        }
        _ => Err(ambiguous(r, environment, value, &found, items)),
    }
}

/// The refusal of a value that names more than one object: each candidate, how the value
/// matched it (its ID, or which field holds it), and what to pass to choose it — the ID of a
/// candidate the value names, or for the candidate whose ID the value is, a name of it that
/// names nothing else.
fn ambiguous(
    r: &ParamResolver,
    environment: &str,
    value: &str,
    found: &[Hit],
    items: &[Value],
) -> String {
    let v = quoted_name(value, 100);
    let mut lines = Vec::new();
    for hit in found.iter().take(MAX_CANDIDATES) {
        let item = items
            .iter()
            .find(|i| i.get(&r.take).and_then(Value::as_str) == Some(hit.id.as_str()));
        let named = item.and_then(|i| label_name(r, i));
        let called = named
            .as_deref()
            .map(|n| format!(" {}", code_span(n)))
            .unwrap_or_default();
        if hit.field == r.take {
            let choose = item.and_then(|i| sole_name(r, i, items, &hit.id));
            lines.push(match choose {
                Some(name) => format!(
                    "- {} — the {noun}{called} whose ID is {v} (pass its name: the ID is what is ambiguous)",
                    code_span(&name),
                    noun = r.noun,
                ),
                None => format!(
                    "- the {noun}{called} whose ID is {v}: no name of it names it alone, so \
                     rename the other {noun} in Arcane to reach this one",
                    noun = r.noun,
                ),
            });
        } else {
            lines.push(format!(
                "- {} — the {noun}{called} whose {field} holds {v} (its ID)",
                code_span(&hit.id),
                noun = r.noun,
                field = code_span(&hit.field),
            ));
        }
    }
    format!(
        "{v} is ambiguous: it names more than one {noun} in environment {env}. Nothing was \
         sent. Call again with {param} set to the value for the one you mean:\n{}",
        lines.join("\n"),
        noun = r.noun,
        env = quoted_name(environment, 100),
        param = r.param,
    )
}

/// An item's name as messages show it: its first match field other than `take` with a value
/// (the first element of an array).
fn label_name(r: &ParamResolver, item: &Value) -> Option<String> {
    r.match_fields
        .iter()
        .filter(|f| **f != r.take)
        .find_map(|f| match item.get(f) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
}

/// A value of one of the item's name fields that, passed again, would resolve to this item
/// alone (so not shaped like an ID another object could be named after, unless nothing is).
fn sole_name(r: &ParamResolver, item: &Value, items: &[Value], id: &str) -> Option<String> {
    let names = r
        .match_fields
        .iter()
        .filter(|f| **f != r.take)
        .flat_map(|f| match item.get(f) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        });
    names.into_iter().find(|n| {
        !n.is_empty() && {
            let hits = matches(r, items, n);
            hits.len() == 1 && hits[0].id == id
        }
    })
}

/// How an item is named in messages: its first match field's value (the first element of an
/// array) and its ID.
fn label(r: &ParamResolver, item: &Value) -> Option<String> {
    let id = item.get(&r.take).and_then(Value::as_str)?;
    let name = label_name(r, item);
    Some(match name {
        Some(n) if n != id => format!("{} ({})", code_span(&n), code_span(id)),
        _ => code_span(id),
    })
}

/// Every item of a list action, page by page, sorted by the list's default key so the pages
/// do not overlap.
pub(crate) async fn fetch_all(
    via: &Lookup<'_>,
    auth: &Auth,
    through: &Action,
    environment: Option<&str>,
    args: &Map<String, Value>,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    for page in 0..MAX_PAGES {
        let mut params = args.clone();
        if let Some(env) = environment {
            params.insert("environmentId".into(), json!(env));
        }
        if through.param("start").is_some() {
            params.insert("start".into(), json!(page * PAGE));
        }
        if through.param("limit").is_some() {
            params.insert("limit".into(), json!(PAGE));
        }
        let prepared = request::build(
            through,
            &params,
            &via.config.base_url,
            &via.config.environment,
        )
        .map_err(|e| format!("Cannot build the lookup request of {}: {e}.", through.id))?;
        let (h, v) = auth.header();
        // Lookups count against the concurrency limit like any other request.
        let Ok(_slot) = via.arcane.slot().await else {
            return Err("The server is shutting down; nothing was sent.".into());
        };
        let span = crate::trace::request("GET", &through.request.path);
        let mut req = via
            .arcane
            .reads
            .get(&prepared.url)
            .timeout(via.config.timeout)
            .header(h, v);
        for (k, v) in crate::trace::context_headers(&span) {
            req = req.header(k, v);
        }
        let resp = req.send().instrument(span.clone()).await.map_err(|e| {
            crate::trace::failed(&span, "transport");
            format!(
                "Cannot look up the ID through {}: the request to Arcane failed ({e}). \
                     Nothing was sent; retry, or pass the ID itself.",
                through.id
            )
        })?;
        let status = resp.status().as_u16();
        crate::trace::status(&span, status);
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = crate::http::read_capped(resp, via.config.max_response_bytes)
            .instrument(span.clone())
            .await
            .map_err(|e| {
            crate::trace::failed(&span, "read");
            format!(
                "Cannot look up the ID through {}: reading Arcane's answer failed ({e}). Retry, \
                 or pass the ID itself.",
                through.id
            )
        })?;
        span.record("http.response.body.size", body.len() as i64);
        if !(200..300).contains(&status) {
            let err = errors::error_detail(status, &content_type, &body);
            return Err(format!(
                "Cannot look up the ID through {}: Arcane answered {status} — {}. Nothing was \
                 sent; pass the ID itself, or fix what the answer names.",
                through.id,
                err.shown()
            ));
        }
        let v: Value = serde_json::from_slice(&body).map_err(|e| {
            format!(
                "Cannot look up the ID through {}: Arcane's answer is not JSON ({e}). Retry, or \
                 pass the ID itself.",
                through.id
            )
        })?;
        let data = match v.get("data") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let got = data.len() as u64;
        items.extend(data);
        let total = v
            .pointer("/pagination/totalItems")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if got == 0 || (page + 1) * PAGE >= total || through.param("start").is_none() {
            break;
        }
    }
    Ok(items)
}

/// Reads a resolver's list afresh (in `environment` when it is per environment) and keeps it
/// in the resolver cache.
async fn read_list(
    via: &Lookup<'_>,
    auth: &Auth,
    through: &Action,
    environment: &str,
) -> Result<Arc<Vec<Value>>, String> {
    let (key, in_env) = list_key(auth, through, environment);
    let items = Arc::new(
        fetch_all(
            via,
            auth,
            through,
            in_env.then_some(environment),
            &Map::new(),
        )
        .await?,
    );
    via.cache.put(key, items.clone());
    Ok(items)
}

/// The resolver cache's key of a list read (the list, its environment when it has one, the
/// caller's credential), and whether the list is per environment.
fn list_key(
    auth: &Auth,
    through: &Action,
    environment: &str,
) -> ((String, String, [u8; 32]), bool) {
    let in_env = through.param("environmentId").is_some();
    let env = if in_env {
        environment.to_string()
    } else {
        String::new()
    };
    (
        (through.id.clone(), env, credential_digest(&auth.header().1)),
        in_env,
    )
}

/// The full SHA-256 of a credential: the cache's notion of "the same caller".
fn credential_digest(secret: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image_resolver() -> ParamResolver {
        ParamResolver {
            param: "imageId".into(),
            through: "image.list".into(),
            match_fields: vec!["id".into(), "repoTags".into(), "repoDigests".into()],
            take: "id".into(),
            keep: Some("^sha256:".into()),
            variants: vec!["{}".into(), "{}:latest".into()],
            noun: "image".into(),
            names_only: false,
        }
    }

    #[test]
    fn the_cache_tells_callers_apart_by_the_whole_digest() {
        // The audit log's fingerprint is the digest's first 6 bytes; the cache key is all 32,
        // so matching a shown fingerprint is not enough to share another caller's lists.
        let d = credential_digest("arc_key_of_alice");
        assert_eq!(
            arcane_redact::fingerprint("arc_key_of_alice"),
            d[..6]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        assert_ne!(credential_digest("arc_key_of_mallory"), d);
        assert_eq!(credential_digest("arc_key_of_alice"), d);
    }

    #[test]
    fn matches_any_field_and_the_first_variant_that_hits() {
        let r = image_resolver();
        let items = vec![
            json!({"id": "sha256:a", "repoTags": ["ghcr.io/acme/api:1.2", "api:latest"]}),
            json!({"id": "sha256:b", "repoTags": ["nginx:latest"], "repoDigests": ["nginx@sha256:d"]}),
            json!({"id": "sha256:c", "repoTags": ["nginx:1.27"]}),
        ];
        let ids =
            |v: &str| -> Vec<String> { matches(&r, &items, v).into_iter().map(|h| h.id).collect() };
        assert_eq!(ids("ghcr.io/acme/api:1.2"), ["sha256:a"]);
        assert_eq!(ids("nginx"), ["sha256:b"]);
        assert_eq!(ids("nginx@sha256:d"), ["sha256:b"]);
        assert!(matches(&r, &items, "redis").is_empty());
        assert!(keeps(&r, &format!("sha256:{}", "0".repeat(64))));
        assert!(!keeps(&r, "nginx:sha256"));
    }

    #[test]
    fn keep_patterns_match_as_compiled_each_time() {
        let mut r = image_resolver();
        r.keep = Some("^[0-9a-f]{12}$".into());
        // The same answers on the first call and every later one (the pattern is compiled
        // once), and what a fresh compilation answers.
        let fresh = regex::Regex::new("^[0-9a-f]{12}$").unwrap();
        for _ in 0..3 {
            for (value, kept) in [
                ("0123456789ab", true),
                ("0123456789abc", false),
                ("nginx", false),
                ("", false),
            ] {
                assert_eq!(keeps(&r, value), kept, "{value}");
                assert_eq!(fresh.is_match(value), kept);
            }
        }
        // Another pattern is its own entry; one that does not compile keeps nothing; none
        // keeps nothing.
        r.keep = Some("^nginx".into());
        assert!(keeps(&r, "nginx:1"));
        assert!(!keeps(&r, "0123456789ab"));
        r.keep = Some("([".into());
        assert!(!keeps(&r, "(["));
        r.keep = None;
        assert!(!keeps(&r, "0123456789ab"));
        // Past the bound the map starts again and still answers.
        for i in 0..(MAX_COMPILED + 3) {
            r.keep = Some(format!("^p{i}$"));
            assert!(keeps(&r, &format!("p{i}")));
            assert!(!keeps(&r, &format!("p{i}x")));
        }
    }

    #[test]
    fn a_value_that_is_one_id_and_another_name_is_ambiguous_with_a_way_to_each() {
        let r = ParamResolver {
            param: "projectId".into(),
            through: "project.list".into(),
            match_fields: vec!["id".into(), "name".into()],
            take: "id".into(),
            keep: Some("^[0-9a-f-]{36}$".into()),
            variants: vec![],
            noun: "project".into(),
            names_only: false,
        };
        let a = "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01";
        let b = "0f0e0d0c-0b0a-4909-8807-060504030201";
        let items = vec![
            json!({"id": a, "name": "webshop"}),
            json!({"id": b, "name": a}),
        ];
        let found = matches(&r, &items, a);
        assert_eq!(
            found,
            [
                Hit {
                    id: a.into(),
                    field: "id".into()
                },
                Hit {
                    id: b.into(),
                    field: "name".into()
                }
            ]
        );
        let e = decide(&r, "project.list", "0", a, true, found, &items).unwrap_err();
        assert!(e.starts_with(&format!("`{a}` is ambiguous")), "{e}");
        assert!(
            e.contains(&format!(
                "- `webshop` — the project `webshop` whose ID is `{a}`"
            )),
            "{e}"
        );
        assert!(
            e.contains(&format!(
                "- `{b}` — the project `{a}` whose `name` holds `{a}` (its ID)"
            )),
            "{e}"
        );
        // Each suggested value resolves to its project alone.
        assert_eq!(matches(&r, &items, "webshop")[0].id, a);
        assert_eq!(matches(&r, &items, b).len(), 1);
        // When the ID's owner has no name of its own, the text says how to reach it.
        let items = vec![json!({"id": a}), json!({"id": b, "name": a})];
        let found = matches(&r, &items, a);
        let e = decide(&r, "project.list", "0", a, true, found, &items).unwrap_err();
        assert!(e.contains("rename the other project"), "{e}");
    }

    #[test]
    fn unknown_and_ambiguous_values_name_the_candidates() {
        let r = image_resolver();
        let list = "image.list";
        let items = vec![
            json!({"id": "sha256:a", "repoTags": ["x:1"]}),
            json!({"id": "sha256:b", "repoTags": ["x:1"]}),
        ];
        let e = decide(&r, list, "0", "y", false, Vec::new(), &items).unwrap_err();
        assert!(
            e.contains("No image `y`") && e.contains("`x:1` (`sha256:a`)"),
            "{e}"
        );
        assert!(e.contains("image.list"));
        let found = matches(&r, &items, "x:1");
        let e = decide(&r, list, "0", "x:1", false, found, &items).unwrap_err();
        assert!(
            e.contains("more than one image") && e.contains("`sha256:b`"),
            "{e}"
        );
        // An ID-shaped value that names nothing goes as given.
        assert_eq!(
            decide(&r, list, "0", "sha256:zz", true, Vec::new(), &items).unwrap(),
            "sha256:zz"
        );
    }
}
