//! Loading: where the catalog comes from and how the live one is kept — the sources (spec
//! and overlay files), the spec's finding and fetching, the on-disk catalog cache, the
//! snapshot a call reads, and the watcher that rebuilds it on change.

pub mod cache;
mod dirs;
pub mod reload;
pub mod snapshot;
pub mod sources;
pub mod spec;
