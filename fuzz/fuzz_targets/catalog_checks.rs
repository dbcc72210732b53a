//! What the catalog targets check in a built catalog: the invariants ARCHITECTURE.md states for
//! every catalog (IDs `domain.action` and unique, self-contained object input schemas, no
//! operation silently dropped). Shared by `openapi` and `overlay`.
// Each target uses part of this module.
#![allow(dead_code)]

use std::collections::HashSet;

use arcane_catalog::{BuildInput, Catalog, Layers, SpecDoc, build_catalog};
use serde_json::Value;

/// The built-in overlays as the catalog targets build with them: without the declarations (a
/// declaration may replace a derived action, which the "no operation dropped" check cannot tell
/// from a loss) and without the search-only text (`asks`, `keywords`: thousands of requests
/// only the search index reads). With `spec`, also without the entries that match none of its
/// operations: each unmatched entry costs a closest-ID search, and for the overlay target's
/// part of the document the built-in files' other 290 actions made one unoptimised build in
/// CI's smoke run take 15 s.
pub fn builtin_layers(spec: Option<&SpecDoc>) -> Layers {
    let mut l = Layers::builtin().expect("the built-in files parse");
    l.declarations.clear();
    for file in &mut l.overlays {
        for a in file.content.actions.values_mut() {
            a.asks = None;
            a.keywords = None;
        }
    }
    let Some(spec) = spec else {
        return l;
    };
    let built = build_catalog(BuildInput { spec, layers: &l }).expect("the built-in catalog");
    for u in built.unmatched_overlays.iter().filter(|u| u.reason.is_none()) {
        for file in l.overlays.iter_mut().filter(|f| f.origin == u.file) {
            if u.section == "actions" {
                file.content.actions.remove(&u.key);
            } else if u.section == "domains" {
                file.content.domains.remove(&u.key);
            }
        }
    }
    l
}

const METHODS: [&str; 7] = ["get", "head", "post", "put", "patch", "delete", "options"];

/// Whether an ID is `domain.action` in lower snake_case (the build refuses any other).
fn valid_id(id: &str) -> bool {
    let part = |p: &str| {
        let mut cs = p.chars();
        cs.next().is_some_and(|c| c.is_ascii_lowercase())
            && cs.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    matches!(id.split_once('.'), Some((d, n)) if part(d) && part(n))
}

fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref),
        Value::Array(xs) => xs.iter().any(has_ref),
        _ => false,
    }
}

/// Every invariant of a catalog built from `root` (the document) with declarations `declared`
/// (IDs a declaration may have taken from a derived action).
pub fn check(catalog: &Catalog, root: &Value, declarations: bool) {
    let mut ids = HashSet::new();
    for a in &catalog.actions {
        assert!(valid_id(&a.id), "invalid ID {:?}", a.id);
        assert!(ids.insert(a.id.as_str()), "ID {:?} twice", a.id);
        assert_eq!(a.id, format!("{}.{}", a.domain, a.name), "{:?}", a.id);
        assert!(
            catalog.get(&a.id).is_some_and(|b| b.id == a.id),
            "{:?} not found by its ID",
            a.id
        );
        let s = &a.request.input_schema;
        assert_eq!(s.get("type"), Some(&Value::from("object")), "{}: {s}", a.id);
        assert_eq!(
            s.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{}: {s}",
            a.id
        );
        assert!(!has_ref(s), "{}: a $ref survives in {s}", a.id);
        for r in &a.request.required {
            assert!(
                s.pointer(&format!(
                    "/properties/{}",
                    r.replace('~', "~0").replace('/', "~1")
                ))
                .is_some(),
                "{}: required {r:?} is no property",
                a.id
            );
        }
    }
    if declarations {
        // A declaration replaces a derived action of its ID: an operation may go that way.
        return;
    }
    // No operation is silently dropped: each written-out operation is an action or excluded.
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        return;
    };
    for (path, item) in paths {
        for m in METHODS {
            if item.get(m).is_none() || item.get("$ref").is_some() {
                continue;
            }
            let method = m.to_ascii_uppercase();
            let served = catalog
                .actions
                .iter()
                .any(|a| a.request.method == method && &a.request.path == path);
            let excluded = catalog
                .excluded
                .iter()
                .any(|e| e.method == method && &e.path == path);
            assert!(
                served || excluded,
                "{method} {path} is neither an action nor excluded"
            );
        }
    }
}
