//! Fuzzes the operator's YAML files: the text as an overlay file and as a declaration file
//! (`Layers::add_overlay_text` / `add_declaration_text`: the strict event pass of
//! `crates/catalog/src/yaml.rs`, the JSON Schema, the typed value), then a catalog built from
//! a part of Arcane 2.8.0's document with the built-in overlays and whichever of the two the
//! text is. Also the plain YAML check (`check_yaml`, the simulator's state and compose files).
//!
//! Invariants: no panic; every refusal is lines of `fuzz.yaml:LINE: …` with a line of the
//! file; a text `check_yaml` accepts builds a value of at most its node budget (aliases
//! expanded: the pass exists to stop expansion bombs); a built catalog keeps every catalog
//! invariant (`catalog_checks`).
#![no_main]

mod catalog_checks;

use std::sync::LazyLock;

use arcane_catalog::{BuildInput, Layers, SpecDoc, YAML_DATA_FILE, build_catalog, check_yaml};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The container, project and volume operations of Arcane 2.8.0 (63 of them) with every
/// component: what most overlay entries are about, at a twentieth of a full build's cost.
static SPEC: LazyLock<SpecDoc> = LazyLock::new(|| {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../third_party/arcane/openapi-v2.8.0.json"
    );
    let text = std::fs::read_to_string(path).expect("third_party/arcane/openapi-v2.8.0.json");
    let mut doc = SpecDoc::parse(&text, "openapi-v2.8.0.json").expect("2.8.0 parses");
    let paths = doc.root["paths"].as_object_mut().expect("paths");
    paths.retain(|p, _| {
        ["/containers", "/projects", "/volumes"]
            .iter()
            .any(|k| p.contains(k))
    });
    doc
});

static BUILTIN: LazyLock<Layers> = LazyLock::new(|| catalog_checks::builtin_layers(Some(&SPEC)));

fn nodes(v: &Value) -> u64 {
    1 + match v {
        Value::Array(xs) => xs.iter().map(nodes).sum(),
        Value::Object(m) => m.values().map(nodes).sum(),
        _ => 0,
    }
}

/// Every line of a refusal names the file and a line of it.
fn names_a_line(e: &str, text: &str) {
    let last = text.split('\n').count() + 1;
    for l in e.lines() {
        let rest = l
            .strip_prefix("fuzz.yaml:")
            .unwrap_or_else(|| panic!("{l:?} of {e:?}"));
        let (n, _) = rest
            .split_once(':')
            .unwrap_or_else(|| panic!("{l:?}: no line"));
        let n: usize = n
            .parse()
            .unwrap_or_else(|_| panic!("{l:?}: no line number"));
        assert!((1..=last).contains(&n), "{l:?}: line {n} of {last}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    if check_yaml(text, "fuzz.yaml", &YAML_DATA_FILE).is_ok()
        && let Ok(v) = yaml_serde::from_str::<Value>(text)
    {
        assert!(
            nodes(&v) <= YAML_DATA_FILE.max_nodes,
            "accepted text expands to {}",
            nodes(&v)
        );
    }

    let mut layers = BUILTIN.clone();
    let mut declared = false;
    match layers.add_overlay_text(text, "fuzz.yaml") {
        Ok(()) => {}
        Err(e) => names_a_line(&format!("{e:#}"), text),
    }
    match layers.add_declaration_text(text, "fuzz.yaml") {
        Ok(()) => declared = true,
        Err(e) => names_a_line(&format!("{e:#}"), text),
    }
    if layers.overlays.len() == BUILTIN.overlays.len() && !declared {
        return;
    }
    let Ok(catalog) = build_catalog(BuildInput {
        spec: &SPEC,
        layers: &layers,
    }) else {
        return;
    };
    catalog_checks::check(&catalog, &SPEC.root, declared);
});
