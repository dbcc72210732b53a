//! Fuzzes the client profiles' decoding and shaping over Arcane 2.8.0's real actions: the flat
//! profile's JSON-text parameters (`ClientProfile::action_params`, which the engine applies
//! before validating) and results fitted to an action's output schema and flattened
//! (`arcane_catalog::OutputFitter`, `arcane_catalog::FlatOutput`).
//!
//! The first byte picks the action, the rest is a JSON value (or any text). Invariants: no
//! panic; any value encoded as JSON text decodes back to itself in every JSON-text parameter;
//! raw text is decoded when it is JSON, kept when the schema takes a string, refused otherwise
//! with one line naming the parameter; a fitted result fits (a second check finds nothing), in
//! both profiles; a flat result is first-level only (primitives, `items` of flat objects).
#![no_main]

use std::sync::LazyLock;

use arcane_catalog::OutputFitter;
use arcane_catalog::{Action, BuildInput, Catalog, ClientProfile, Layers, SpecDoc, build_catalog};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

struct World {
    catalog: Catalog,
    standard: OutputFitter,
    flat: OutputFitter,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../third_party/arcane/openapi-v2.8.0.json"
    );
    let spec = SpecDoc::from_file(std::path::Path::new(path)).expect("2.8.0 parses");
    let layers = Layers::builtin().expect("the built-in files parse");
    let catalog = build_catalog(BuildInput {
        spec: &spec,
        layers: &layers,
    })
    .expect("2.8.0 builds");
    let standard = OutputFitter::for_profile(&catalog, ClientProfile::Standard);
    let flat = OutputFitter::for_profile(&catalog, ClientProfile::Flat);
    World {
        catalog,
        standard,
        flat,
    }
});

fn primitive(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// The parameters the flat profile shows as JSON text: described with its hint there.
fn json_text_params(a: &Action) -> Vec<String> {
    let flat = arcane_catalog::flat_input_schema(&a.request.input_schema, &a.request.input_schema);
    let hint = |s: &Value| {
        s.get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| d.contains("JSON text of "))
    };
    let Some(props) = a
        .request
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(k, s)| !hint(s) && flat.pointer(&format!("/properties/{k}")).is_some_and(hint))
        .map(|(k, _)| k.clone())
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let w = &*WORLD;
    let action = &w.catalog.actions[pick as usize % w.catalog.actions.len()];
    let text = String::from_utf8_lossy(rest);
    let value = serde_json::from_str::<Value>(&text).ok();

    // Inputs: JSON text of any value decodes back to it; raw text as the schema allows.
    for name in json_text_params(action) {
        if let Some(v) = &value {
            let mut params = Map::new();
            params.insert(name.clone(), Value::String(v.to_string()));
            let got = ClientProfile::Flat
                .action_params(action, params)
                .unwrap_or_else(|e| panic!("{}: JSON text of {v} refused: {e}", action.id));
            assert_eq!(got.get(&name), Some(v), "{}: {name}", action.id);
        }
        let mut params = Map::new();
        params.insert(name.clone(), Value::String(text.to_string()));
        match ClientProfile::Flat.action_params(action, params.clone()) {
            Ok(got) => match &value {
                Some(v) => assert_eq!(got.get(&name), Some(v)),
                None => assert_eq!(got.get(&name), Some(&Value::String(text.to_string()))),
            },
            Err(e) => {
                assert!(value.is_none(), "{}: JSON {text:?} refused: {e}", action.id);
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("/{name}: ")), "{msg}");
                assert!(!msg.contains('\n'), "{msg:?}");
            }
        }
        // The standard profile passes parameters through untouched.
        assert_eq!(
            ClientProfile::Standard.action_params(action, params.clone()),
            Ok(params)
        );
    }

    // Outputs: what fitting leaves fits, in both profiles; the flat form is first-level.
    let Some(v) = value else {
        return;
    };
    let mut standard = v.clone();
    w.standard.fit_quietly(&action.id, &mut standard);
    let left = w.standard.check(&action.id, &standard);
    assert!(
        left.is_empty(),
        "{}: still does not fit: {left:?}",
        action.id
    );

    if w.flat.schema(&action.id).is_none() {
        return;
    }
    let mut flat = v;
    w.flat.fit_quietly(&action.id, &mut flat);
    let left = w.flat.check(&action.id, &flat);
    assert!(
        left.is_empty(),
        "{}: flat form does not fit: {left:?}",
        action.id
    );
    let Value::Object(m) = &flat else {
        panic!("{}: flat result {flat} is no object", action.id);
    };
    for (k, x) in m {
        match x {
            Value::Array(items) if k == "items" => {
                for item in items {
                    let Value::Object(o) = item else {
                        panic!("{}: an item {item} is no object", action.id)
                    };
                    assert!(
                        o.values().all(primitive),
                        "{}: nested item {item}",
                        action.id
                    );
                }
            }
            x => assert!(primitive(x), "{}: {k} is {x} in the flat form", action.id),
        }
    }
});
