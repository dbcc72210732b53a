//! Compresses Arcane's 2.8.0 OpenAPI document (`third_party/arcane/`, Arcane's BSD-3 licence
//! beside it) into `OUT_DIR`: the built-in document of `arcane-sim` and `arcane-mcp demo`
//! when no spec is given (`src/builtin.rs` inflates it once, on first use). Deflate at the
//! best level: the 0.6 MB of JSON is a small part of the binary that way.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let source = manifest.join("../../third_party/arcane/openapi-v2.8.0.json");
    println!("cargo::rerun-if-changed={}", source.display());
    let text = std::fs::read(&source).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}. The simulator embeds Arcane's document from the repository's \
             third_party/arcane/ (build it from a checkout of the whole repository)",
            source.display()
        )
    });
    let packed = miniz_oxide::deflate::compress_to_vec(&text, 10);
    // The round trip is checked here, so that inflating at run time cannot meet a damaged copy.
    let back = miniz_oxide::inflate::decompress_to_vec_with_limit(&packed, text.len())
        .expect("inflating what was just deflated");
    assert!(back == text, "deflate round trip changed the document");
    assert!(
        std::str::from_utf8(&text).is_ok(),
        "{} is not UTF-8",
        source.display()
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("openapi-v2.8.0.json.deflate"), &packed)
        .expect("writing the compressed document to OUT_DIR");
    println!(
        "cargo::rustc-env=ARCANE_SIM_BUILTIN_SPEC_LEN={}",
        text.len()
    );
}
