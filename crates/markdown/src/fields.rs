//! What a field's name says: which fields identify an item or give its state (shown first;
//! identifiers are never trimmed), the fields of a list's items in order, and how a name is
//! written in running text.

use serde_json::{Map, Value};

use crate::escape::{inline_strict, sanitize};

/// Identity fields first, in this order.
pub(crate) const IDENTITY: [&str; 13] = [
    "id",
    "name",
    "names",
    "repotags",
    "repo",
    "repository",
    "displayname",
    "title",
    "hostname",
    "username",
    "email",
    "key",
    "slug",
];

/// Then state.
pub(crate) const STATUS: [&str; 5] = ["state", "status", "health", "enabled", "running"];

/// Fields a later call needs whole: IDs, names, tags and digests.
pub(crate) fn is_identifier_field(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let l = last.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "id" | "name"
            | "names"
            | "repotags"
            | "repodigests"
            | "digest"
            | "tag"
            | "tags"
            | "uuid"
            | "hostname"
            | "username"
            | "key"
            | "slug"
            | "ref"
    ) || last.ends_with("Id")
        || last.ends_with("ID")
        || last.ends_with("_id")
        || last.ends_with("Name")
        || last.ends_with("Names")
        || last.ends_with("_name")
        || last.ends_with("Digest")
}

/// Field names in order of first appearance across the items.
pub(crate) fn field_union(objects: &[&Map<String, Value>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut fields = Vec::new();
    for obj in objects {
        for k in obj.keys() {
            if seen.insert(k.as_str()) {
                fields.push(k.clone());
            }
        }
    }
    fields
}

/// A field name inside running text; an empty name is shown as `""` so
/// that the list keeps its shape.
pub(crate) fn field_label(name: &str) -> String {
    if sanitize(name).is_empty() {
        "\"\"".to_owned()
    } else {
        inline_strict(name).into_owned()
    }
}
