//! The real catalog the examples read: Arcane 2.8.0's document and the built-in layers (no
//! operator files), as the catalog crate's tests build it.

use arcane_catalog::{BuildInput, Catalog, Layers, SpecDoc, build_catalog};

pub fn real_catalog() -> anyhow::Result<Catalog> {
    let spec = SpecDoc::from_file(&arcane_test_support::spec_v2())?;
    let layers = Layers::builtin()?;
    build_catalog(BuildInput {
        spec: &spec,
        layers: &layers,
    })
}
