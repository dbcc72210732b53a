//! Rebuild when a built-in data file changes: `include_dir!` embeds `overrides/` and `catalog/`
//! and `include_str!` the schemas, but on stable Rust cargo does not see files a macro reads
//! from a directory, so an edited overlay would otherwise leave a stale binary. The three
//! directories stay at the repository's top level (operators and docs name them there).

fn main() {
    for dir in ["overrides", "catalog", "schemas"] {
        println!("cargo:rerun-if-changed=../../{dir}");
    }
}
