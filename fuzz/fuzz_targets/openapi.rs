//! Fuzzes the OpenAPI document → catalog path: `SpecDoc::parse` (JSON when the text starts
//! with `{`, YAML otherwise, with the strict YAML pass before any value is built) and, for a
//! document it accepts, `build_catalog` with the built-in overlays. Whatever the text: no
//! panic, a refusal names the document, and a built catalog keeps every catalog invariant
//! (`catalog_checks`); building twice gives the same actions (the catalog cache relies on it).
#![no_main]

mod catalog_checks;

use std::sync::LazyLock;

use arcane_catalog::{BuildInput, Layers, SpecDoc, build_catalog};
use libfuzzer_sys::fuzz_target;

static LAYERS: LazyLock<Layers> = LazyLock::new(|| catalog_checks::builtin_layers(None));

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let spec = match SpecDoc::parse(text, "fuzz.json") {
        Ok(s) => s,
        Err(e) => {
            assert!(format!("{e:#}").contains("fuzz.json"), "{e:#}");
            return;
        }
    };
    let input = || BuildInput {
        spec: &spec,
        layers: &LAYERS,
    };
    let Ok(catalog) = build_catalog(input()) else {
        return;
    };
    catalog_checks::check(&catalog, &spec.root, false);
    let again = build_catalog(input()).expect("a second build of the same input succeeds");
    let ids = |c: &arcane_catalog::Catalog| -> Vec<(String, String, String)> {
        c.actions
            .iter()
            .map(|a| {
                (
                    a.id.clone(),
                    a.request.method.clone(),
                    a.request.path.clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        ids(&catalog),
        ids(&again),
        "two builds of one document differ"
    );
});
