//! Per-image vulnerability scans and image update checks, as Arcane 2.8.x answers them
//! (docs/arcane-wire.md in arcane-mcp describes the cases): an image without a scan has no
//! result or summary (404), an empty list page (2.8.x) or a 404 (main), and no entry in the
//! batch summaries; a scan request answers at once with `status: "scanning"`.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::str_array;
use super::images::find_image;
use super::lists::{
    DOCKER_ZERO_IS_20, VULNERABILITY_SORT, answer_page, filter_values, search_match,
};
use crate::config::ArcaneVersion;
use crate::ctx::Ctx;
use crate::state::{Scan, State, repo_and_tag};

const NOT_FOUND: &str = "Vulnerability scan not found";

/// The scan of image `key` (its `sha256:` ID, with or without the prefix) in `env`.
fn find_scan<'a>(st: &'a State, env: &str, key: &str) -> Option<&'a Scan> {
    st.scans.iter().find(|s| {
        s.environment_id == env
            && (s.image_id == key || s.image_id.strip_prefix("sha256:") == Some(key))
    })
}

pub(super) fn result(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let Some(s) = find_scan(&st, ctx.env_id(), ctx.param("imageId")).cloned() else {
        drop(st);
        return ctx.problem(404, NOT_FOUND);
    };
    drop(st);
    ctx.ok(
        json!({"imageId": s.image_id, "imageName": s.image_name, "scanTime": s.scan_time,
               "status": "completed", "scannerVersion": "0.56.2", "summary": s.summary(),
               "vulnerabilities": s.vulnerabilities}),
        vec![],
    )
}

fn summary_json(s: &Scan) -> Value {
    json!({"imageId": s.image_id, "scanTime": s.scan_time, "status": "completed",
           "summary": s.summary()})
}

pub(super) fn summary(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let Some(v) = find_scan(&st, ctx.env_id(), ctx.param("imageId")).map(summary_json) else {
        drop(st);
        return ctx.problem(404, NOT_FOUND);
    };
    drop(st);
    ctx.ok(v, vec![])
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let scan = find_scan(&st, ctx.env_id(), ctx.param("imageId")).cloned();
    drop(st);
    let vulns = match scan {
        Some(s) => s.vulnerabilities,
        // 2.8.x: an empty page, exactly as for a clean image; main: 404.
        None if ctx.sh.version() == ArcaneVersion::Main => return ctx.problem(404, NOT_FOUND),
        None => Vec::new(),
    };
    let grand = vulns.len();
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let items: Vec<Value> = vulns
        .into_iter()
        .filter(|v| {
            search_match(
                ctx,
                &[
                    &field(v, "vulnerabilityId"),
                    &field(v, "pkgName"),
                    &field(v, "title"),
                ],
            )
        })
        .filter(|v| match filter_values(ctx, "severity") {
            None => true,
            Some(want) => want
                .iter()
                .any(|w| w.eq_ignore_ascii_case(&field(v, "severity"))),
        })
        .collect();
    answer_page(
        ctx,
        items,
        grand,
        DOCKER_ZERO_IS_20,
        VULNERABILITY_SORT,
        vec![],
    )
}

/// Starts a scan: the answer comes at once with `status: "scanning"`; the simulated scan is
/// finished by the next request (an image with no known vulnerabilities gets an empty scan,
/// which is what "clean" looks like).
pub(super) fn scan(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let activity = ctx.sh.next_activity();
    let mut st = ctx.sh.state();
    let image = find_image(&st, &env, ctx.param("imageId")).map(|i| st.images[i].clone());
    let (image_id, image_name) = match &image {
        Some(i) => {
            let (repo, tag) = repo_and_tag(i);
            (i.id.clone(), format!("{repo}:{tag}"))
        }
        None => (
            ctx.param("imageId").to_string(),
            ctx.param("imageId").to_string(),
        ),
    };
    if image.is_some() && find_scan(&st, &env, &image_id).is_none() {
        st.scans.push(Scan {
            image_id: image_id.clone(),
            environment_id: env,
            image_name: image_name.clone(),
            scan_time: "2025-06-01T12:05:00Z".into(),
            vulnerabilities: Vec::new(),
        });
    }
    drop(st);
    ctx.ok(
        json!({"imageId": image_id, "imageName": image_name, "scanTime": "2025-06-01T12:05:00Z",
               "status": "scanning", "scanPhase": "queued", "activityId": activity}),
        vec![],
    )
}

/// Batch summaries: images without a scan are left out of the map.
pub(super) fn summaries(ctx: &Ctx) -> Response {
    let ids = str_array(ctx.body.as_ref().and_then(|b| b.get("imageIds")));
    let st = ctx.sh.state();
    let mut map = serde_json::Map::new();
    for id in ids {
        if let Some(s) = find_scan(&st, ctx.env_id(), &id) {
            map.insert(id, summary_json(s));
        }
    }
    drop(st);
    ctx.ok(json!({"summaries": map}), vec![])
}

/// The update information of a pulled image: up to date, by digest.
fn update_info(i: &crate::state::Image) -> Value {
    let (_, tag) = repo_and_tag(i);
    let digest = i
        .repo_digests
        .first()
        .and_then(|d| d.split_once('@'))
        .map(|(_, d)| d.to_string())
        .unwrap_or_default();
    json!({"checkTime": "2025-06-01T12:00:00Z", "updateType": "digest",
           "currentVersion": tag, "latestVersion": tag, "currentDigest": digest,
           "latestDigest": digest, "hasUpdate": false, "error": "", "responseTimeMs": 42})
}

/// Update checks of several references (`by-refs`, `check-batch`): the map leaves out the
/// references not pulled locally.
pub(super) fn check_updates(ctx: &Ctx) -> Response {
    let refs: Vec<String> = match ctx.q("imageRefs") {
        Some(q) => q.split(',').map(|r| r.trim().to_string()).collect(),
        None => str_array(ctx.body.as_ref().and_then(|b| b.get("imageRefs"))),
    };
    let st = ctx.sh.state();
    let mut map = serde_json::Map::new();
    for r in refs.into_iter().filter(|r| !r.is_empty()) {
        if let Some(i) = find_image(&st, ctx.env_id(), &r) {
            map.insert(r, update_info(&st.images[i]));
        }
    }
    drop(st);
    ctx.ok(Value::Object(map), vec![])
}

/// An update check of one image reference or ID. A reference that is not pulled locally is
/// an error on 2.8.0 and `updateType: "not_pulled"` from 2.8.1 on (the simulator's main).
pub(super) fn check_update(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let found = find_image(&st, ctx.env_id(), ctx.param("imageId")).map(|i| st.images[i].clone());
    drop(st);
    match found {
        Some(i) => ctx.ok(update_info(&i), vec![]),
        None if ctx.sh.version() == ArcaneVersion::Main => ctx.ok(
            json!({"checkTime": "2025-06-01T12:00:00Z", "updateType": "not_pulled",
                   "currentVersion": "", "latestVersion": "", "currentDigest": "",
                   "latestDigest": "", "hasUpdate": false, "error": "",
                   "responseTimeMs": 0}),
            vec![],
        ),
        None => ctx.problem(
            500,
            &format!(
                "Failed to check image update: Error response from daemon: No such image: {}",
                ctx.param("imageId")
            ),
        ),
    }
}
