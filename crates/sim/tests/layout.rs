//! The simulator's modules import one way (ARCHITECTURE.md, "Invariants"): the module graph
//! of `crates/sim/src` has no cycle, so no module imports the crate root or anything that imports it
//! (`arcane_test_support::layout`).

use std::path::Path;

use arcane_test_support::layout::{find_cycle, graph};

#[test]
fn sim_modules_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    // The graph is the real one: the pipeline reaches the routes, a route the request context.
    let server = vec!["server".to_string()];
    assert!(g[&server].contains(&vec!["routes".to_string()]), "{g:?}");
    let images = vec!["routes".to_string(), "images".to_string()];
    assert!(g[&images].contains(&vec!["ctx".to_string()]), "{g:?}");
    if let Some(cycle) = find_cycle(&g) {
        panic!(
            "crates/sim/src imports in a circle: {} — move what both sides need into a lower module",
            cycle.join(" → ")
        );
    }
}

#[test]
fn a_circle_of_imports_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("routes")).unwrap();
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).unwrap();
    write("lib.rs", "mod state;\nmod routes;\n");
    write("state.rs", "use crate::routes::store::Store;\n");
    write("routes/mod.rs", "pub mod store;\n");
    write(
        "routes/store.rs",
        "// use crate::lib; (a comment)\nuse crate::state::{self, State};\n",
    );
    let cycle = find_cycle(&graph(src)).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"state".to_string()), "{cycle:?}");
    assert!(cycle.contains(&"routes::store".to_string()), "{cycle:?}");
    // The same crate with the lower module not importing back has none.
    write("routes/store.rs", "pub struct Store;\n");
    assert_eq!(find_cycle(&graph(src)), None);
}
