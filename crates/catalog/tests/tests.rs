//! The catalog crate's one integration-test binary (`cargo test --workspace --test catalog`),
//! laid out as the server's `tests/tests.rs`: every `tests/*.rs` file is a module here, and the
//! root's `every_test_file_is_a_module` fails when one is not.

mod borders;
mod derivation;
mod questions;
mod semantic;

use std::sync::OnceLock;

use arcane_catalog::{Action, BuildInput, Catalog, Layers, SearchIndex, SpecDoc, build_catalog};

// The real catalog (Arcane 2.8.0's document and the built-in layers) and its search index,
// built once for the modules that search it.
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let spec = SpecDoc::from_file(&arcane_test_support::spec_v2())
            .expect("Arcane's 2.8.0 document reads");
        let layers = Layers::builtin().expect("the built-in layers load");
        build_catalog(BuildInput {
            spec: &spec,
            layers: &layers,
        })
        .expect("the catalog builds")
    })
}

pub(crate) fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    // `SEARCH_WEIGHTS` measures other weights on these tests too (docs/search.md).
    INDEX.get_or_init(|| {
        SearchIndex::build_with(catalog(), arcane_catalog::Weights::from_env())
            .expect("the index builds")
    })
}

pub(crate) fn all(_: &Action) -> bool {
    true
}
