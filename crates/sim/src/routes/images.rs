//! Images: list, get, remove, pull and build (streams), prune and export (a download).

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{by_unique_prefix, change, get_one, message, refuse, take_marked};
use super::lists::{DOCKER_ZERO_IS_20, IMAGE_SORT, answer_page, bool_filter, search_match, select};
use crate::ctx::Ctx;
use crate::state::{self, State};
use crate::streams::{download, json_stream};
use crate::synth::hex_id;

/// Finds an image by ID (with or without `sha256:`, or a unique prefix), or by reference.
pub(crate) fn find_image(st: &State, env: &str, key: &str) -> Option<usize> {
    let bare = key.strip_prefix("sha256:").unwrap_or(key);
    let with_latest = if key.contains(':') || key.contains('@') {
        key.to_string()
    } else {
        format!("{key}:latest")
    };
    st.images
        .iter()
        .position(|i| {
            i.environment_id == env
                && (i.id == key
                    || i.id.strip_prefix("sha256:") == Some(bare)
                    || i.repo_tags.iter().any(|t| *t == key || *t == with_latest)
                    || i.repo_digests.iter().any(|d| d == key))
        })
        .or_else(|| {
            by_unique_prefix(&st.images, env, bare, |i| {
                i.id.strip_prefix("sha256:").unwrap_or(&i.id)
            })
        })
}

pub(crate) fn image_in_use(st: &State, i: &state::Image) -> bool {
    st.containers.iter().any(|c| {
        c.environment_id == i.environment_id
            && (c.image_id == i.id || i.repo_tags.contains(&c.image))
    })
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let (items, grand) = select(
        &st.images,
        ctx.env_id(),
        |i| {
            let tags = i.repo_tags.join(" ");
            search_match(ctx, &[&tags, &i.id]) && bool_filter(ctx, "inUse", image_in_use(&st, i))
        },
        |i| state::image_summary(i, image_in_use(&st, i)),
    );
    drop(st);
    answer_page(ctx, items, grand, DOCKER_ZERO_IS_20, IMAGE_SORT, vec![])
}

fn no_such_image(key: &str) -> String {
    format!("Error response from daemon: No such image: {key}")
}

pub(super) fn get(ctx: &Ctx) -> Response {
    let key = ctx.param("imageId");
    get_one(
        ctx,
        |st| find_image(st, ctx.env_id(), key).map(|i| state::image_details(&st.images[i])),
        404,
        || format!("Image not found: inspect not found: {}", no_such_image(key)),
    )
}

pub(super) fn remove(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let key = ctx.param("imageId");
    change(ctx, |st| {
        let Some(i) = find_image(st, ctx.env_id(), key) else {
            // Docker refuses a reference it cannot parse (a still-encoded `%3A`) before looking.
            if key.contains('%') {
                return Err(refuse(
                    500,
                    "Failed to remove image: Error response from daemon: invalid reference format: repository name must be lowercase",
                ));
            }
            return Err(refuse(
                500,
                format!("Failed to remove image: {}", no_such_image(key)),
            ));
        };
        if !force && image_in_use(st, &st.images[i]) {
            let short = st.images[i].id.trim_start_matches("sha256:")[..12].to_string();
            let user = st
                .containers
                .iter()
                .find(|c| {
                    c.image_id == st.images[i].id || st.images[i].repo_tags.contains(&c.image)
                })
                .map(|c| c.id[..12.min(c.id.len())].to_string())
                .unwrap_or_default();
            return Err(refuse(
                500,
                format!(
                    "Failed to remove image: Error response from daemon: conflict: unable to delete {short} (must be forced) - image is being used by stopped container {user}"
                ),
            ));
        }
        st.images.remove(i);
        Ok(message("Image removed successfully"))
    })
}

fn image_ref(name: &str, tag: Option<&str>) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if last.contains(':') || name.contains('@') {
        name.to_string()
    } else {
        format!(
            "{name}:{}",
            tag.filter(|t| !t.is_empty()).unwrap_or("latest")
        )
    }
}

pub(super) fn pull_lines(reference: &str) -> Vec<String> {
    let tag = reference
        .rsplit_once(':')
        .map(|(_, t)| t)
        .unwrap_or("latest");
    let repo = reference
        .rsplit_once(':')
        .map(|(r, _)| r)
        .unwrap_or(reference);
    let layers: Vec<String> = (0..3)
        .map(|n| hex_id(&format!("layer:{reference}:{n}"))[..12].to_string())
        .collect();
    let mut lines = vec![format!(
        "{tag}: Pulling from {}",
        if repo.contains('/') {
            repo.to_string()
        } else {
            format!("library/{repo}")
        }
    )];
    for l in &layers {
        lines.push(format!("{l}: Pulling fs layer"));
    }
    for l in &layers {
        lines.push(format!("{l}: Download complete"));
        lines.push(format!("{l}: Pull complete"));
    }
    lines.push(format!(
        "Digest: sha256:{}",
        hex_id(&format!("digest:{reference}"))
    ));
    lines.push(format!("Status: Downloaded newer image for {reference}"));
    lines
}

pub(super) fn pull(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let name = ctx.body_str("imageName").unwrap_or("").to_string();
    let reference = image_ref(&name, ctx.body_str("tag"));
    let lines = pull_lines(&reference);
    let r2 = reference.clone();
    json_stream(
        ctx,
        lines,
        Ok(()),
        Some(Box::new(move |st: &mut State| add_image(st, &env, &r2))),
    )
}

/// Adds a pulled image to an environment unless it is there already.
pub(crate) fn add_image(st: &mut State, env: &str, reference: &str) {
    if st
        .images
        .iter()
        .any(|i| i.environment_id == env && i.repo_tags.iter().any(|t| t == reference))
    {
        return;
    }
    let repo = reference
        .rsplit_once(':')
        .map(|(r, _)| r)
        .unwrap_or(reference);
    st.images.push(state::Image {
        id: state::demo_image_id(reference),
        environment_id: env.to_string(),
        repo_tags: vec![reference.to_string()],
        repo_digests: vec![format!(
            "{repo}@sha256:{}",
            hex_id(&format!("digest:{reference}"))
        )],
        size: 52_428_800,
        created: 1_717_600_000,
        labels: Default::default(),
        extra: Default::default(),
    });
}

pub(super) fn build(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let tag = ctx
        .body
        .as_ref()
        .and_then(|b| {
            b.get("tags")
                .and_then(|t| t.get(0))
                .and_then(Value::as_str)
                .or_else(|| b.get("tag").and_then(Value::as_str))
        })
        .unwrap_or("sim-build:latest")
        .to_string();
    let lines = vec![
        "#0 building with \"default\" instance using docker driver".to_string(),
        "#1 [internal] load build definition from Dockerfile".to_string(),
        "#1 DONE 0.0s".to_string(),
        "#2 [1/2] FROM docker.io/library/alpine:3.20".to_string(),
        "#2 DONE 0.1s".to_string(),
        "#3 [2/2] RUN echo built".to_string(),
        "#3 DONE 0.2s".to_string(),
        format!("#4 naming to docker.io/library/{tag} done"),
    ];
    let t2 = tag.clone();
    json_stream(
        ctx,
        lines,
        Ok(()),
        Some(Box::new(move |st: &mut State| add_image(st, &env, &t2))),
    )
}

/// Removes the unused images of `env` (only the untagged ones when `dangling_only`) and
/// returns them; `POST …/images/prune` and the system prune share it.
pub(crate) fn prune_unused(st: &mut State, env: &str, dangling_only: bool) -> Vec<state::Image> {
    let marks: Vec<bool> = st
        .images
        .iter()
        .map(|i| {
            i.environment_id == env
                && !image_in_use(st, i)
                && (!dangling_only || i.repo_tags.is_empty())
        })
        .collect();
    take_marked(&mut st.images, &marks)
}

/// The prune mode Arcane 2.8.0 resolves (its image handler's `resolvePruneImageModeInternal`):
/// the body's `mode` (trimmed) when set, else the body's `dangling`, else its
/// `filters.dangling`, else the query's `dangling` — a boolean that is `false` when absent, so a
/// prune without any of them removes **every** unused image, not only dangling ones.
fn prune_mode(ctx: &Ctx) -> String {
    let legacy = |dangling: bool| if dangling { "dangling" } else { "all" }.to_string();
    let query = ctx.q("dangling").is_some_and(|v| v == "true" || v == "1");
    let Some(body) = ctx.body.as_ref().filter(|b| b.is_object()) else {
        return legacy(query);
    };
    if let Some(mode) = body
        .get("mode")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        return mode.to_string();
    }
    if let Some(d) = body.get("dangling").and_then(Value::as_bool) {
        return legacy(d);
    }
    if let Some(vals) = body.pointer("/filters/dangling").and_then(Value::as_array) {
        for v in vals.iter().filter_map(Value::as_str) {
            match v {
                "true" | "1" => return "dangling".into(),
                "false" | "0" => return "all".into(),
                _ => {}
            }
        }
    }
    legacy(query)
}

pub(super) fn prune(ctx: &Ctx) -> Response {
    // Arcane's image service: `none` and unknown modes are refused, `olderThan` needs `until`
    // (each a 500 "Failed to prune images: …").
    let mode = prune_mode(ctx);
    let until = ctx
        .body
        .as_ref()
        .and_then(|b| b.get("until"))
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    let refused = match mode.as_str() {
        "dangling" | "all" => None,
        "olderThan" if until.is_empty() => {
            Some("image prune mode olderThan requires until".to_string())
        }
        // The simulator's images carry no creation time to filter on: olderThan with an
        // `until` prunes like `all`.
        "olderThan" => None,
        "none" => Some("image prune mode none is not allowed".to_string()),
        other => Some(format!("unsupported image prune mode: {other}")),
    };
    if let Some(why) = refused {
        return ctx.problem(500, &format!("Failed to prune images: {why}"));
    }
    change(ctx, |st| {
        let gone = prune_unused(st, ctx.env_id(), mode == "dangling");
        let space: i64 = gone.iter().map(|i| i.size).sum();
        let deleted: Vec<&str> = gone.iter().map(|i| i.id.as_str()).collect();
        Ok(json!({"imagesDeleted": deleted, "spaceReclaimed": space}))
    })
}

pub(super) fn export(ctx: &Ctx) -> Response {
    let reference = ctx.param("name");
    let st = ctx.sh.state();
    let Some(i) = find_image(&st, ctx.env_id(), reference) else {
        drop(st);
        return ctx.problem(
            500,
            &format!("failed to export image: {}", no_such_image(reference)),
        );
    };
    let img = st.images[i].clone();
    drop(st);
    let file: String = reference
        .chars()
        .map(|c| if matches!(c, '/' | ':' | '@') { '_' } else { c })
        .collect();
    let manifest = json!([{"Config": format!("{}.json", img.id.trim_start_matches("sha256:")), "RepoTags": img.repo_tags, "Layers": []}]);
    let tar = tar_archive(&[(
        "manifest.json",
        serde_json::to_vec(&manifest).unwrap_or_default(),
    )]);
    download(
        ctx,
        "application/x-tar",
        &format!("attachment; filename=\"{file}.tar\""),
        tar,
    )
}

/// A minimal ustar archive.
pub fn tar_archive(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        let mut h = [0u8; 512];
        h[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
        h[136..148].copy_from_slice(format!("{:011o}\0", 1_717_171_717u64).as_bytes());
        h[148..156].copy_from_slice(b"        ");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// `GET …/images/counts`.
pub(super) fn counts(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let images: Vec<&state::Image> = st
        .images
        .iter()
        .filter(|i| i.environment_id == ctx.env_id())
        .collect();
    let in_use = images.iter().filter(|i| image_in_use(&st, i)).count();
    let size: i64 = images.iter().map(|i| i.size).sum();
    let v = json!({"imagesInuse": in_use, "imagesUnused": images.len() - in_use,
                   "totalImages": images.len(), "totalImageSize": size});
    drop(st);
    ctx.ok(v, vec![])
}
