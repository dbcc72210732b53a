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

use crate::{Executor, Scope, errors, request};
use arcane_catalog::{Action, ParamResolver};
use arcane_markdown::code_span;

/// How long a fetched list answers lookups before it is fetched again.
const KEEP_FOR: Duration = Duration::from_secs(30);
/// Page size of the lookups (database lists clamp larger limits to 100).
const PAGE: u64 = 100;
/// At most this many pages are read per lookup; a bigger collection is searched in part.
const MAX_PAGES: u64 = 20;
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

/// Replaces, in `params`, every value a resolver of the catalog turns into an ID. Resolvers run
/// in catalog order (the environment first, so later lookups run in the right environment).
/// An unknown or ambiguous value is an error text naming the candidates.
pub async fn resolve_params(
    exec: &Executor,
    scope: &Scope<'_>,
    action: &Action,
    params: &mut Map<String, Value>,
    ctx: &super::CallContext,
) -> Result<(), String> {
    let auth = ctx.auth(&exec.config.auth);
    for r in &scope.catalog.resolvers {
        if r.through == action.id || action.param(&r.param).is_none() {
            continue;
        }
        // The configured default environment may be a name too.
        let default = (r.param == "environmentId").then_some(exec.config.environment.as_str());
        let Some(value) = params.get(&r.param).and_then(Value::as_str).or(default) else {
            continue;
        };
        // A dot or empty segment is refused when the request is built: no lookup for it.
        if keeps(r, value) || crate::path::is_dot_or_empty(value) {
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
            .unwrap_or(&exec.config.environment)
            .to_string();
        let id = lookup(exec, auth, r, through, &environment, value).await?;
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

async fn lookup(
    exec: &Executor,
    auth: &super::Auth,
    r: &ParamResolver,
    through: &Action,
    environment: &str,
    value: &str,
) -> Result<String, String> {
    let in_env = through.param("environmentId").is_some();
    let key = (
        through.id.clone(),
        if in_env {
            environment.to_string()
        } else {
            String::new()
        },
        credential_digest(&auth.header().1),
    );
    let mut fresh = false;
    let items = match exec.resolve_cache.get(&key) {
        Some(items) => items,
        None => {
            fresh = true;
            let items =
                Arc::new(fetch_all(exec, auth, through, in_env.then_some(environment)).await?);
            exec.resolve_cache.put(key.clone(), items.clone());
            items
        }
    };
    let found = matches(r, &items, value);
    if found.is_empty() && !fresh {
        // Created since the list was kept: look again.
        let items = Arc::new(fetch_all(exec, auth, through, in_env.then_some(environment)).await?);
        exec.resolve_cache.put(key, items.clone());
        let found = matches(r, &items, value);
        return decide(r, &through.id, environment, value, found, &items);
    }
    decide(r, &through.id, environment, value, found, &items)
}

/// The `take` values of the items matching the value in its first variant that matches.
fn matches(r: &ParamResolver, items: &[Value], value: &str) -> Vec<String> {
    let variants: Vec<String> = if r.variants.is_empty() {
        vec![value.to_string()]
    } else {
        r.variants.iter().map(|v| v.replace("{}", value)).collect()
    };
    for candidate in &variants {
        let mut ids: Vec<String> = Vec::new();
        for item in items {
            let hit = r.match_fields.iter().any(|f| match item.get(f) {
                Some(Value::String(s)) => s == candidate,
                Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(candidate)),
                _ => false,
            });
            if hit
                && let Some(id) = item.get(&r.take).and_then(Value::as_str)
                && !id.is_empty()
                && !ids.iter().any(|x| x == id)
            {
                ids.push(id.to_string());
            }
        }
        if !ids.is_empty() {
            return ids;
        }
    }
    Vec::new()
}

fn decide(
    r: &ParamResolver,
    list: &str,
    environment: &str,
    value: &str,
    found: Vec<String>,
    items: &[Value],
) -> Result<String, String> {
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        0 => {
            let names: Vec<String> = items
                .iter()
                .filter_map(|i| label(r, i))
                .take(MAX_CANDIDATES)
                .collect();
            Err(format!(
                "No {noun} {v} in environment {env}: {param} takes the {noun}'s ID or one of its \
                 names.{known} Nothing was sent. List them with {list}.",
                noun = r.noun,
                v = code_span(value),
                env = code_span(environment),
                param = r.param,
                known = if names.is_empty() {
                    String::new()
                } else {
                    format!(" Known: {}.", names.join(", "))
                },
            ))
        }
        _ => Err(format!(
            "{v} names more than one {noun} in environment {env}: {ids}. Nothing was sent. Call \
             again with one of these IDs as {param}.",
            v = code_span(value),
            noun = r.noun,
            env = code_span(environment),
            ids = found
                .iter()
                .take(MAX_CANDIDATES)
                .map(|i| code_span(i))
                .collect::<Vec<_>>()
                .join(", "),
            param = r.param,
        )),
    }
}

/// How an item is named in messages: its first match field's value (the first element of an
/// array) and its ID.
fn label(r: &ParamResolver, item: &Value) -> Option<String> {
    let id = item.get(&r.take).and_then(Value::as_str)?;
    let name = r
        .match_fields
        .iter()
        .filter(|f| **f != r.take)
        .find_map(|f| match item.get(f) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        });
    Some(match name {
        Some(n) if n != id => format!("{} ({})", code_span(&n), code_span(id)),
        _ => code_span(id),
    })
}

/// Every item of a list action, page by page, sorted by the list's default key so the pages
/// do not overlap.
async fn fetch_all(
    exec: &Executor,
    auth: &super::Auth,
    through: &Action,
    environment: Option<&str>,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    for page in 0..MAX_PAGES {
        let mut params = Map::new();
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
            &exec.config.base_url,
            &exec.config.environment,
        )
        .map_err(|e| format!("Cannot build the lookup request of {}: {e}.", through.id))?;
        let (h, v) = auth.header();
        // Lookups count against the concurrency limit like any other request.
        let Ok(_slot) = exec.slots.acquire().await else {
            return Err("The server is shutting down; nothing was sent.".into());
        };
        let resp = exec
            .reads
            .get(&prepared.url)
            .timeout(exec.config.timeout)
            .header(h, v)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "Cannot look up the ID through {}: the request to Arcane failed ({e}). \
                     Nothing was sent; retry, or pass the ID itself.",
                    through.id
                )
            })?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = crate::http::read_capped(resp, exec.config.max_response_bytes)
            .await
            .map_err(|e| {
            format!(
                "Cannot look up the ID through {}: reading Arcane's answer failed ({e}). Retry, \
                 or pass the ID itself.",
                through.id
            )
        })?;
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
        }
    }

    #[test]
    fn the_cache_tells_callers_apart_by_the_whole_digest() {
        // The audit log's fingerprint is the digest's first 6 bytes; the cache key is all 32,
        // so matching a shown fingerprint is not enough to share another caller's lists.
        let d = credential_digest("arc_key_of_alice");
        assert_eq!(
            crate::redact::fingerprint("arc_key_of_alice"),
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
        assert_eq!(matches(&r, &items, "ghcr.io/acme/api:1.2"), ["sha256:a"]);
        assert_eq!(matches(&r, &items, "nginx"), ["sha256:b"]);
        assert_eq!(matches(&r, &items, "nginx@sha256:d"), ["sha256:b"]);
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
    fn unknown_and_ambiguous_values_name_the_candidates() {
        let r = image_resolver();
        let list = "image.list";
        let items = vec![
            json!({"id": "sha256:a", "repoTags": ["x:1"]}),
            json!({"id": "sha256:b", "repoTags": ["x:1"]}),
        ];
        let e = decide(&r, list, "0", "y", Vec::new(), &items).unwrap_err();
        assert!(
            e.contains("No image `y`") && e.contains("`x:1` (`sha256:a`)"),
            "{e}"
        );
        assert!(e.contains("image.list"));
        let found = matches(&r, &items, "x:1");
        let e = decide(&r, list, "0", "x:1", found, &items).unwrap_err();
        assert!(
            e.contains("more than one image") && e.contains("`sha256:b`"),
            "{e}"
        );
    }
}
