//! Deriving an action from an OpenAPI operation: its ID, flags and input schema.
//!
//! Every rule here is general (keyed on path shape, method and English word forms), never on a
//! specific operationId or path: specific knowledge belongs in the overlays.

use serde_json::{Map, Value, json};

/// Where the environment parameter sits: `/environments/{id}/…`.
const ENV_PREFIX: [&str; 2] = ["environments", "{id}"];

/// The derived `(domain, action)` of an operation.
///
/// * The `{id}` of `/environments/{id}/…` is stripped first: what follows names the resource.
/// * With a path parameter, the literal just before the last parameter is the collection
///   (`containers/{containerId}`), and the literals after it are the verb (`restart`). A
///   singular literal before a parameter (`check/{imageId}`) is a verb taking an argument.
/// * Without one, the first plural literal is the collection and later literals the verb
///   (`containers/counts` → `container.counts`); under `/environments/{id}` a lone singular
///   word is a verb on the environment (`/environments/{id}/test` → `environment.test`).
/// * The domain is the collection, singular, prefixed by the literal before it when there is
///   one (`swarm/services` → `swarm_service`, `volumes/backups` → `volume_backup`).
/// * With no verb, the method and shape decide: collection GET → `list` (or `get` when the
///   answer is not an array), POST → `create`, item GET → `get`, PUT/PATCH → `update`,
///   DELETE → `delete`.
pub fn derive_name(method: &str, path: &str, answers_array: bool) -> (String, String) {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let env_scoped = segs.len() > 2 && segs[..2] == ENV_PREFIX;
    let rest: &[&str] = if env_scoped { &segs[2..] } else { &segs };
    let is_param = |s: &str| s.starts_with('{');

    let mut nouns: Vec<&str> = Vec::new();
    let mut verbs: Vec<&str> = Vec::new();
    let mut item = false;

    if let Some(lp) = rest.iter().rposition(|s| is_param(s)) {
        let head = &rest[..lp];
        let tail: Vec<&str> = rest[lp + 1..].to_vec();
        let before = head.iter().rposition(|s| !is_param(s));
        match before {
            Some(b) if lp == b + 1 && !is_plural(head[b]) && b > 0 => {
                // `check/{imageId}`: a verb with an argument; the resource is what precedes it.
                verbs.push(head[b]);
                verbs.extend(tail.iter().copied());
                nouns.extend(head[..b].iter().copied().filter(|s| !is_param(s)));
                trim_to_first_collection(&mut nouns, &mut verbs);
            }
            _ => {
                nouns.extend(head.iter().copied().filter(|s| !is_param(s)));
                verbs.extend(tail.iter().copied());
                item = verbs.is_empty();
            }
        }
    } else if env_scoped && rest.len() == 1 && !is_plural(rest[0]) {
        nouns.push("environments");
        verbs.push(rest[0]);
    } else {
        match rest.iter().position(|s| is_plural(s)) {
            Some(i) => {
                nouns.extend(&rest[..=i]);
                verbs.extend(&rest[i + 1..]);
            }
            None => {
                nouns.push(rest.first().copied().unwrap_or("arcane"));
                verbs.extend(rest.iter().skip(1));
            }
        }
    }

    let domain = domain_from_nouns(&nouns);
    let action = if verbs.is_empty() {
        match (method, item) {
            ("GET", true) => "get",
            ("GET", false) if answers_array => "list",
            ("GET", false) => "get",
            ("POST", _) => "create",
            ("PUT" | "PATCH", _) => "update",
            ("DELETE", _) => "delete",
            ("HEAD", _) => "head",
            _ => "call",
        }
        .to_string()
    } else {
        verbs.iter().map(|v| snake(v)).collect::<Vec<_>>().join("_")
    };
    (domain, action)
}

/// In `images/vulnerabilities/…` keeps the resource at the first collection and moves the rest
/// to the verb, as the parameter-less rule does.
fn trim_to_first_collection<'a>(nouns: &mut Vec<&'a str>, verbs: &mut Vec<&'a str>) {
    if let Some(i) = nouns.iter().position(|s| is_plural(s))
        && i + 1 < nouns.len()
    {
        let moved: Vec<&str> = nouns.drain(i + 1..).collect();
        let mut new_verbs = moved;
        new_verbs.append(verbs);
        *verbs = new_verbs;
    }
}

fn domain_from_nouns(nouns: &[&str]) -> String {
    match nouns {
        [] => "arcane".to_string(),
        [one] => singular(&snake(one)),
        [.., a, b] => format!("{}_{}", singular(&snake(a)), singular(&snake(b))),
    }
}

/// Whether a path literal reads as a plural noun (a collection).
pub fn is_plural(word: &str) -> bool {
    let w = word.rsplit(['-', '_']).next().unwrap_or(word);
    w.len() > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
}

/// English singular of a snake_case word (only the last part changes).
pub fn singular(word: &str) -> String {
    let (prefix, last) = match word.rfind('_') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let s = if !is_plural(last) {
        last.to_string()
    } else if let Some(stem) = last.strip_suffix("ies") {
        format!("{stem}y")
    } else if last.ends_with("sses")
        || last.ends_with("xes")
        || last.ends_with("ches")
        || last.ends_with("shes")
    {
        last[..last.len() - 2].to_string()
    } else {
        last[..last.len() - 1].to_string()
    };
    format!("{prefix}{s}")
}

/// `image-updates` → `image_updates`; `containerId` → `container_id`.
pub fn snake(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 4);
    let mut prev_lower = false;
    for c in word.chars() {
        if c == '-' || c == ' ' || c == '.' {
            out.push('_');
            prev_lower = false;
        } else if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    out.trim_matches('_').to_string()
}

/// Words in an action name that mark it as destroying something.
const DESTRUCTIVE_WORDS: &[&str] = &[
    "delete",
    "remove",
    "kill",
    "prune",
    "destroy",
    "leave",
    "reset",
    "down",
    "purge",
    "wipe",
    "restore",
    "revoke",
    "clear",
    "uninstall",
];

/// Words that make a POST a safe read (it computes or searches, it changes nothing).
const READ_WORDS: &[&str] = &[
    "search",
    "render",
    "convert",
    "validate",
    "preview",
    "test",
    "summaries",
    "summary",
    "login",
];

/// `(mutating, destructive, idempotent)` from method and name.
pub fn derive_flags(method: &str, action: &str) -> (bool, bool, bool) {
    let words: Vec<&str> = action.split('_').collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    let mutating = match method {
        "GET" | "HEAD" | "OPTIONS" => false,
        "POST" => !has(READ_WORDS),
        _ => true,
    };
    let destructive = mutating && (method == "DELETE" || has(DESTRUCTIVE_WORDS));
    let idempotent = matches!(method, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS") || !mutating;
    (mutating, destructive, idempotent)
}

/// `swarm_service` → `Swarm service`.
pub fn humanize_domain(domain: &str) -> String {
    let mut s = domain.replace('_', " ");
    if let Some(first) = s.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    s
}

/// Cleans a request schema for use as input: drops read-only properties (huma's `$schema`),
/// `examples` and `$schema` keywords, recursively. Keeps everything a client needs to build a
/// valid request.
pub fn clean_input_schema(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, val) in map {
                match k.as_str() {
                    "examples" | "example" | "$schema" | "readOnly" | "writeOnly" | "xml"
                    | "externalDocs" | "deprecated" | "$id" | "$comment" => continue,
                    "properties" => {
                        let mut props = Map::new();
                        if let Value::Object(p) = val {
                            for (name, schema) in p {
                                if schema.get("readOnly").and_then(Value::as_bool) == Some(true) {
                                    continue;
                                }
                                props.insert(name.clone(), clean_input_schema(schema));
                            }
                        }
                        out.insert(k.clone(), Value::Object(props));
                    }
                    "required" => {
                        // Filtered below once properties are known.
                        out.insert(k.clone(), val.clone());
                    }
                    _ => {
                        out.insert(k.clone(), clean_input_schema(val));
                    }
                }
            }
            if let (Some(Value::Array(req)), Some(Value::Object(props))) =
                (out.get("required"), out.get("properties"))
            {
                let kept: Vec<Value> = req
                    .iter()
                    .filter(|r| r.as_str().is_some_and(|n| props.contains_key(n)))
                    .cloned()
                    .collect();
                if kept.is_empty() {
                    out.remove("required");
                } else {
                    out.insert("required".into(), Value::Array(kept));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(clean_input_schema).collect()),
        other => other.clone(),
    }
}

/// Whether a response schema describes a list: Arcane's envelope with an array `data`, or a
/// bare array.
pub fn schema_is_array(schema: &Value) -> bool {
    let is_arr = |s: &Value| match s.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    };
    if is_arr(schema) {
        return true;
    }
    schema.pointer("/properties/data").is_some_and(is_arr)
}

/// The input schema of the `environmentId` parameter.
pub fn environment_param_schema() -> Value {
    json!({
        "type": "string",
        "description": "Environment ID; defaults to the configured environment"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(method: &str, path: &str, arr: bool) -> String {
        let (d, a) = derive_name(method, path, arr);
        format!("{d}.{a}")
    }

    #[test]
    fn container_actions() {
        assert_eq!(
            id("GET", "/environments/{id}/containers", true),
            "container.list"
        );
        assert_eq!(
            id("POST", "/environments/{id}/containers", false),
            "container.create"
        );
        assert_eq!(
            id("GET", "/environments/{id}/containers/{containerId}", false),
            "container.get"
        );
        assert_eq!(
            id(
                "DELETE",
                "/environments/{id}/containers/{containerId}",
                false
            ),
            "container.delete"
        );
        assert_eq!(
            id(
                "POST",
                "/environments/{id}/containers/{containerId}/restart",
                false
            ),
            "container.restart"
        );
        assert_eq!(
            id("GET", "/environments/{id}/containers/counts", false),
            "container.counts"
        );
    }

    #[test]
    fn nested_and_namespaced() {
        assert_eq!(
            id(
                "POST",
                "/environments/{id}/swarm/services/{serviceId}/scale",
                false
            ),
            "swarm_service.scale"
        );
        assert_eq!(
            id("GET", "/environments/{id}/swarm/services", true),
            "swarm_service.list"
        );
        assert_eq!(
            id("GET", "/environments/{id}/swarm/info", false),
            "swarm.info"
        );
        assert_eq!(
            id(
                "GET",
                "/environments/{id}/volumes/backups/{backupId}/download",
                false
            ),
            "volume_backup.download"
        );
        assert_eq!(
            id(
                "POST",
                "/environments/{id}/volumes/{volumeName}/backups/{backupId}/restore",
                false
            ),
            "volume_backup.restore"
        );
        assert_eq!(
            id("POST", "/environments/{id}/images/pull", false),
            "image.pull"
        );
        assert_eq!(
            id(
                "GET",
                "/environments/{id}/image-updates/check/{imageId}",
                false
            ),
            "image_update.check"
        );
        assert_eq!(
            id("PUT", "/customize/git-repositories/{id}", false),
            "customize_git_repository.update"
        );
    }

    #[test]
    fn environment_verbs() {
        assert_eq!(
            id("POST", "/environments/{id}/test", false),
            "environment.test"
        );
        assert_eq!(id("GET", "/environments/{id}", false), "environment.get");
        assert_eq!(id("GET", "/environments", true), "environment.list");
        assert_eq!(
            id(
                "GET",
                "/environments/{id}/projects/{projectId}/updates",
                false
            ),
            "project.updates"
        );
        assert_eq!(
            id("PUT", "/environments/{id}/projects/{projectId}", false),
            "project.update"
        );
    }

    #[test]
    fn words() {
        assert_eq!(singular("repositories"), "repository");
        assert_eq!(singular("container_registries"), "container_registry");
        assert_eq!(singular("services"), "service");
        assert_eq!(singular("status"), "status");
        assert_eq!(snake("image-updates"), "image_updates");
        assert_eq!(snake("getAppVersion"), "get_app_version");
        assert!(!is_plural("status"));
        assert!(is_plural("counts"));
    }

    #[test]
    fn flags() {
        assert_eq!(derive_flags("GET", "list"), (false, false, true));
        assert_eq!(derive_flags("POST", "kill"), (true, true, false));
        assert_eq!(derive_flags("DELETE", "delete"), (true, true, true));
        assert_eq!(derive_flags("POST", "restart"), (true, false, false));
        assert_eq!(derive_flags("POST", "search"), (false, false, true));
    }
}
