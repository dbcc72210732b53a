//! Lists: Arcane's sort keys, search and filters, and the one pagination and list envelope
//! every list answers with (docs/arcane-wire.md#list-envelopes-and-paging).

use std::cmp::Ordering;

use axum::response::Response;
use serde_json::{Value, json};

use crate::config::ArcaneVersion;
use crate::ctx::Ctx;
use crate::state::InEnv;

/// How a list pages.
#[derive(Clone, Copy)]
pub enum Paging {
    /// Docker-backed, paged in memory; `zero_is_20`: limit 0 means 20 (images, volumes).
    Docker { zero_is_20: bool },
    /// Database-backed: limit ≤ 0 → 20, > 100 → 100; `grandTotalItems` is 0 unless
    /// `reports_grand_total` (projects report it).
    Db { reports_grand_total: bool },
}

/// How a list sorts: the keys Arcane binds for it (the first is main's default), and whether
/// Docker hands its items over in an order that changes between requests (2.8.x leaves that
/// order when the sort key is empty or unknown).
#[derive(Clone, Copy)]
pub struct Sorting {
    pub keys: &'static [&'static str],
    pub docker_order_changes: bool,
}

pub const CONTAINER_SORT: Sorting = Sorting {
    keys: &["name", "image", "state", "status", "ports", "created"],
    docker_order_changes: false,
};
pub const IMAGE_SORT: Sorting = Sorting {
    keys: &["repo", "tag", "size", "created", "inUse"],
    docker_order_changes: false,
};
pub const VOLUME_SORT: Sorting = Sorting {
    keys: &[
        "name",
        "driver",
        "mountpoint",
        "scope",
        "created",
        "createdAt",
        "inUse",
        "size",
    ],
    docker_order_changes: true,
};
pub const NETWORK_SORT: Sorting = Sorting {
    keys: &["name", "driver", "scope", "created", "inUse"],
    docker_order_changes: true,
};
pub const SWARM_SERVICE_SORT: Sorting = Sorting {
    keys: &["name", "image", "mode", "replicas", "created", "updated"],
    docker_order_changes: false,
};
pub const PROJECT_SORT: Sorting = Sorting {
    keys: &["name", "status", "serviceCount", "path", "createdAt"],
    docker_order_changes: false,
};
/// Database lists sort only by their sortable columns, never by `id`.
pub const ENVIRONMENT_SORT: Sorting = Sorting {
    keys: &["name", "status", "enabled", "apiUrl"],
    docker_order_changes: false,
};
pub const VULNERABILITY_SORT: Sorting = Sorting {
    keys: &[
        "vulnerabilityId",
        "pkgName",
        "severity",
        "installedVersion",
        "fixedVersion",
    ],
    docker_order_changes: false,
};
/// A list without fixed sort keys (synthesized answers, database collections, ports):
/// sortable by any field of its items except `id`.
pub const GENERIC_SORT: Sorting = Sorting {
    keys: &[],
    docker_order_changes: false,
};

/// A deterministic permutation of `items` for request number `seq` (Docker's changing order).
fn docker_order(items: &mut [Value], seq: u64) {
    let mut x = seq
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    for i in (1..items.len()).rev() {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = ((x >> 33) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// Sorts, pages and reports pagination for a list.
/// `items` are after search and filters; `grand_total` is the count before them.
pub fn paginate(
    ctx: &Ctx,
    mut items: Vec<Value>,
    grand_total: usize,
    paging: Paging,
    sorting: Sorting,
) -> (Vec<Value>, Value) {
    let start = ctx
        .q("start")
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(0)
        .max(0);
    let mut limit = ctx
        .q("limit")
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(20);
    if limit < -1 {
        limit = 20;
    }
    match paging {
        Paging::Docker { zero_is_20 } => {
            if limit == 0 && zero_is_20 {
                limit = 20;
            }
        }
        Paging::Db { .. } => {
            if limit <= 0 {
                limit = 20;
            } else if limit > 100 {
                limit = 100;
            }
        }
    }
    sort_items(ctx, &mut items, paging, sorting);
    let total = items.len() as i64;
    let (page, pagination) = if limit > 0 {
        let s = (start as usize).min(items.len());
        let e = s.saturating_add(limit as usize).min(items.len());
        // Go's int64 arithmetic wraps (Arcane's backend/pkg/pagination/types.go): a limit near
        // the int64 maximum gives 0 pages, reported as 1, instead of an overflow.
        let total_pages = (total.wrapping_add(limit).wrapping_sub(1) / limit).max(1);
        (
            items[s..e].to_vec(),
            json!({"totalPages": total_pages, "totalItems": total, "currentPage": start / limit + 1,
                   "itemsPerPage": limit, "grandTotalItems": grand_total}),
        )
    } else {
        (
            items,
            json!({"totalPages": 1, "totalItems": total, "currentPage": 1, "itemsPerPage": total,
                   "grandTotalItems": grand_total}),
        )
    };
    let mut pagination = pagination;
    if matches!(
        paging,
        Paging::Db {
            reports_grand_total: false
        }
    ) {
        pagination["grandTotalItems"] = json!(0);
    }
    (page, pagination)
}

/// Arcane's list ordering (docs/arcane-wire.md, sorting). A key sorts only when it is one of
/// the list's keys; only the exact order `desc` reverses; strings compare byte-wise.
/// 2.8.x: no valid key leaves the incoming order (Docker's, which changes between requests for
/// some lists), and equal keys keep it (a stable sort without tie-break). main: an empty or
/// unknown key falls back to the first key, with tie-breaks.
fn sort_items(ctx: &Ctx, items: &mut [Value], paging: Paging, sorting: Sorting) {
    let main = ctx.sh.version() == ArcaneVersion::Main;
    if sorting.docker_order_changes {
        docker_order(items, ctx.sh.next_list_seq());
    }
    let sort = ctx.q("sort").unwrap_or("");
    let valid = if sorting.keys.is_empty() {
        !sort.is_empty() && sort != "id" && items.iter().any(|i| i.get(sort).is_some())
    } else {
        sorting.keys.contains(&sort)
    };
    let desc = ctx.q("order") == Some("desc");
    let key: Option<&str> = if valid {
        Some(sort)
    } else if main {
        match paging {
            // main's database lists order by `id` when nothing valid is asked for.
            Paging::Db { .. } => Some("id"),
            Paging::Docker { .. } => sorting.keys.first().copied(),
        }
    } else {
        None
    };
    let Some(key) = key else {
        return;
    };
    items.sort_by(|a, b| {
        let mut o = cmp_field(a, b, key);
        if main {
            let first = sorting.keys.first().copied().unwrap_or("id");
            o = o
                .then_with(|| cmp_field(a, b, first))
                .then_with(|| cmp_field(a, b, "id"));
        }
        if desc { o.reverse() } else { o }
    });
}

fn sort_value(v: &Value, key: &str) -> Value {
    if key == "name"
        && v.get("name").is_none()
        && let Some(n) = v.get("names").and_then(|n| n.get(0))
    {
        return n.clone();
    }
    v.get(key).cloned().unwrap_or(Value::Null)
}

fn cmp_field(a: &Value, b: &Value, key: &str) -> Ordering {
    match (sort_value(a, key), sort_value(b, key)) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .partial_cmp(&y.as_f64())
            .unwrap_or(Ordering::Equal),
        // Go's strings.Compare: byte-wise, so case-sensitive.
        (Value::String(x), Value::String(y)) => x.cmp(&y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(&y),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (x, y) => x.to_string().cmp(&y.to_string()),
    }
}

/// Case-insensitive substring search over some fields.
pub(crate) fn search_match(ctx: &Ctx, fields: &[&str]) -> bool {
    match ctx.q("search").map(|s| s.trim().to_lowercase()) {
        None => true,
        Some(s) if s.is_empty() => true,
        Some(s) => fields.iter().any(|f| f.to_lowercase().contains(&s)),
    }
}

/// A comma-separated filter (values OR'd); `None` when absent or empty.
pub(crate) fn filter_values(ctx: &Ctx, key: &str) -> Option<Vec<String>> {
    let v = ctx.q(key)?.trim();
    if v.is_empty() {
        return None;
    }
    Some(v.split(',').map(|s| s.trim().to_string()).collect())
}

pub(crate) fn bool_filter(ctx: &Ctx, key: &str, actual: bool) -> bool {
    match filter_values(ctx, key) {
        None => true,
        Some(vals) => vals.iter().any(|v| v.parse::<bool>().ok() == Some(actual)),
    }
}

/// A Docker-backed list where limit 0 means all (containers, networks, swarm services).
pub const DOCKER: Paging = Paging::Docker { zero_is_20: false };
/// A Docker-backed list where limit 0 means 20 (images, volumes, vulnerabilities).
pub const DOCKER_ZERO_IS_20: Paging = Paging::Docker { zero_is_20: true };

/// A database-backed list (`grandTotalItems` 0).
pub const DB: Paging = Paging::Db {
    reports_grand_total: false,
};

/// Sorts and pages `items` (after search and filters; `grand_total` counted before them) and
/// answers Arcane's list envelope: `data`, then `members` (e.g. `counts`), then `pagination`.
pub fn answer_page(
    ctx: &Ctx,
    items: Vec<Value>,
    grand_total: usize,
    paging: Paging,
    sorting: Sorting,
    mut members: Vec<(&str, Value)>,
) -> Response {
    let (page, pagination) = paginate(ctx, items, grand_total, paging, sorting);
    members.push(("pagination", pagination));
    ctx.ok(Value::Array(page), members)
}

/// The items of `env` that `keep` accepts, as `view` shows them, and how many items `env` has
/// before `keep` (the list's `grandTotalItems`).
pub fn select<T: InEnv>(
    items: &[T],
    env: &str,
    keep: impl Fn(&T) -> bool,
    view: impl Fn(&T) -> Value,
) -> (Vec<Value>, usize) {
    let mut grand = 0;
    let selected = items
        .iter()
        .filter(|i| i.env() == env)
        .inspect(|_| grand += 1)
        .filter(|i| keep(i))
        .map(view)
        .collect();
    (selected, grand)
}

/// The `{inuse, unused, total}` counts of an environment's volumes or networks.
pub fn usage_counts<T: InEnv>(items: &[T], env: &str, used: impl Fn(&T) -> bool) -> Value {
    let (mut inuse, mut total) = (0, 0);
    for i in items.iter().filter(|i| i.env() == env) {
        total += 1;
        if used(i) {
            inuse += 1;
        }
    }
    json!({"inuse": inuse, "unused": total - inuse, "total": total})
}
