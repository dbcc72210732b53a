//! `arcane-mcp find`: a search of the catalog, parsed as an `arcane_find_action` call.

use std::process::ExitCode;

use anyhow::Result;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::app;
use crate::cmd::print::print;
use crate::config::{FindArgs, ServeArgs};
use crate::load::snapshot::Snapshot;
use crate::load::sources::Sources;
use crate::present::error_result;
use crate::surface::{self, Call, FIND_TOOL, Surface};

/// `arcane-mcp find`: a search of the catalog.
pub fn run(settings: &ServeArgs, args: &FindArgs) -> Result<ExitCode> {
    let url = settings.spec_url()?;
    let sources = Sources::from_args(&settings.source, url.as_deref());
    let snap = snapshot(settings, &sources)?;
    print(&find(&snap, &args.words, args.limit), args.json)
}

/// A search, parsed as an `arcane_find_action` call.
pub fn find(snap: &Snapshot, words: &[String], limit: usize) -> CallToolResult {
    let mut args = Map::new();
    args.insert("query".into(), Value::String(words.join(" ")));
    args.insert("limit".into(), Value::from(limit));
    match surface::parse_call(
        Surface::Dynamic,
        &snap.catalog,
        &snap.policy,
        FIND_TOOL,
        Some(&args),
    ) {
        Ok(Call::Find { query, limit }) => crate::present::find::find(snap, &query, limit),
        Ok(Call::Execute { .. }) => error_result(format!("{FIND_TOOL} did not parse as a search")),
        Err(text) => error_result(text),
    }
}

/// Builds the snapshot a search needs (no Arcane connection).
pub(crate) fn snapshot(args: &ServeArgs, sources: &Sources) -> Result<Snapshot> {
    // The find tool exists on the dynamic surface; results name actions as it does.
    let cache = crate::load::cache::CatalogCache::from_args(args);
    let (catalog, _) = crate::load::cache::load_or_build(sources, cache.as_ref())?;
    Snapshot::build(catalog, Surface::Dynamic, app::policy(args))
}
