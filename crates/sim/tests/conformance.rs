//! Calls every operation of both specs in `third_party/arcane/` and checks each 2xx JSON body
//! against the operation's declared response schema. The only mismatches allowed are the
//! documented divergences (docs/arcane-wire.md#compose-byte-sizes: compose byte sizes sent as strings).

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use arcane_sim::collections::is_collection_shape;
use arcane_sim::spec::Spec;
use common::*;
use reqwest::Method;
use serde_json::{Value, json};

/// Compose byte-size fields that Arcane sends as strings (docs/arcane-wire.md#compose-byte-sizes).
const BYTE_FIELDS: [&str; 5] = [
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "shm_size",
];

fn is_documented_divergence(pointer: &str, value: &Value) -> bool {
    if !value.is_string() {
        return false;
    }
    let segs: Vec<&str> = pointer.split('/').collect();
    let last = segs.last().copied().unwrap_or("");
    if BYTE_FIELDS.contains(&last) {
        return true;
    }
    let n = segs.len();
    // deploy.resources.{limits,reservations}.memory and volumes[].tmpfs.size
    (last == "memory" && n >= 4 && segs[n - 3] == "resources" && segs[n - 4] == "deploy")
        || (last == "size" && n >= 2 && segs[n - 2] == "tmpfs")
}

/// Answers that are not 2xx on a real Arcane 2.8.x for the conformance test's arguments
/// (docs/arcane-wire.md): the health check's empty 500 whenever Docker is up, and cancelling an
/// activity that is not running (the simulator's activities have all finished).
fn documented_status(method: &str, template: &str) -> Option<u16> {
    match (method, template) {
        ("HEAD", "/environments/{id}/system/health") => Some(500),
        ("POST", "/environments/{id}/activities/{activityId}/cancel") => Some(404),
        // Docker refuses to roll back a service that was never updated.
        ("POST", "/environments/{id}/swarm/services/{serviceId}/rollback") => Some(500),
        _ => None,
    }
}

/// Percent-encodes the characters some Arcane schema names carry (`BaseApiResponseStruct {}`)
/// so that `$ref`s are valid URI references for the validator.
fn fix_refs(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "$ref"
                    && let Value::String(r) = x
                {
                    *r = r
                        .replace(' ', "%20")
                        .replace('{', "%7B")
                        .replace('}', "%7D");
                } else {
                    fix_refs(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(fix_refs),
        _ => {}
    }
}

fn param_value(template: &str, method: &str, name: &str) -> String {
    let deleting = method == "DELETE";
    match name {
        "id" if template.starts_with("/environments/{id}") => "0".into(),
        "environmentId" => "0".into(),
        "containerId" => {
            if template.ends_with("/unpause") {
                "cache-1".into()
            } else {
                "web-1".into()
            }
        }
        // Scans are stored under the image's ID (docs/arcane-wire.md, vulnerabilities).
        "imageId" if template.contains("/vulnerabilities") => {
            arcane_sim::state::demo_image_id("nginx:1.27-alpine")
        }
        "imageId" | "name" if template.contains("/images/") => "nginx:1.27-alpine".into(),
        "imageId" if template.contains("/image-updates/") => "nginx:1.27-alpine".into(),
        "name" if template.contains("/swarm/stacks/") => "edge".into(),
        // Arcane finds projects by database ID only.
        "projectId" => "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01".into(),
        "volumeName" => if deleting {
            "orphaned-cache"
        } else {
            "webshop_db-data"
        }
        .into(),
        "networkId" => if deleting { "unused-net" } else { "bridge" }.into(),
        "serviceId" => "edge-proxy".into(),
        "fileName" => "agent.crt".into(),
        // The demo's first event (Arcane's log of db-1's restart).
        "eventId" => "1da17de1-b3c5-5707-a47a-7b8e7abbd383".into(),
        _ => "sim-1".into(),
    }
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `path` with every ID of a stateful collection's item (a parameter right after a
/// collection's path) replaced by the ID of an item created through that collection's `POST`.
async fn with_created_items(s: &Sim, spec: &Spec, template: &str, path: &str) -> String {
    let t_segs: Vec<&str> = template.trim_matches('/').split('/').collect();
    let mut p_segs: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(str::to_string)
        .collect();
    for i in 1..t_segs.len().min(p_segs.len()) {
        if !t_segs[i].starts_with('{') {
            continue;
        }
        let prefix_t = format!("/{}", t_segs[..i].join("/"));
        let shape = format!(
            "/{}",
            t_segs[..i]
                .iter()
                .map(|x| if x.starts_with('{') { "{}" } else { x })
                .collect::<Vec<_>>()
                .join("/")
        );
        if !is_collection_shape(spec, &shape) {
            continue;
        }
        let Some(create) = spec
            .ops
            .iter()
            .find(|o| o.method == "POST" && o.template == prefix_t)
        else {
            continue;
        };
        let body = spec
            .request_body(&create.op)
            .map(|(schema, _)| arcane_sim::synth::synth(spec, schema, "", &create.template))
            .unwrap_or(json!({}));
        let concrete = format!("/{}", p_segs[..i].join("/"));
        let created = s.post(&concrete).json(&body).await.json();
        if let Some(id) = created.pointer("/data/id").and_then(Value::as_str) {
            p_segs[i] = id.to_string();
        }
    }
    format!("/{}", p_segs.join("/"))
}

struct Report {
    calls: usize,
    checked: usize,
    divergences: Vec<String>,
    failures: Vec<String>,
}

/// The user of the sign-in routes.
const SIGNED_IN: &str = "conformance=conformance-key:admin:pw";

/// A sign-in of [`SIGNED_IN`]: its access and refresh tokens.
async fn sign_in(s: &crate::common::Sim) -> (String, String) {
    let b = s
        .post("/auth/login")
        .anonymous()
        .json(json!({"username": "conformance", "password": "pw"}))
        .await
        .expect(200);
    let text = |k: &str| b["data"][k].as_str().unwrap_or_default().to_string();
    (text("token"), text("refreshToken"))
}

async fn check_spec(path: &Path) -> Report {
    let spec = Spec::load(path).expect("spec loads");
    let mut config = arcane_sim::SimConfig::new(path);
    // A user who can sign in: the sign-in routes are answered for real (src/auth.rs).
    config.users = vec![SIGNED_IN.parse().unwrap()];
    let s = start_with(config).await;
    let mut validators: HashMap<String, jsonschema::Validator> = HashMap::new();
    let mut components = spec.doc.get("components").cloned().unwrap_or(json!({}));
    fix_refs(&mut components);
    let mut report = Report {
        calls: 0,
        checked: 0,
        divergences: Vec::new(),
        failures: Vec::new(),
    };
    for op in &spec.ops {
        s.hooks.reset().await.unwrap();
        let o = &op.op;
        let mut path = op.template.clone();
        let mut query: Vec<(String, String)> = Vec::new();
        for p in o
            .get("parameters")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            let p = spec.resolve(&p).clone();
            let name = p["name"].as_str().unwrap_or("").to_string();
            match p["in"].as_str() {
                Some("path") => {
                    path = path.replace(
                        &format!("{{{name}}}"),
                        &enc(&param_value(&op.template, &op.method, &name)),
                    )
                }
                Some("query") if name == "force" && op.method == "DELETE" => {
                    query.push((name, "true".into()))
                }
                Some("query") if p["required"] == true => {
                    let v = arcane_sim::synth::synth(&spec, &p["schema"], &name, &name);
                    let v = match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    query.push((name, v));
                }
                _ => {}
            }
        }
        // Items of the stateful collections exist once created: create one for each
        // collection the path goes through and use its ID.
        path = with_created_items(&s, &spec, &op.template, &path).await;
        // A backup is reached by its ID alone (`/volumes/backups/{backupId}/…`), outside the
        // collection of the volume it was made from: make one and use its ID.
        if op.template.contains("/volumes/backups/{backupId}")
            && is_collection_shape(&spec, "/environments/{}/volumes/{}/backups")
        {
            let created = s
                .post("/environments/0/volumes/webshop_db-data/backups")
                .await
                .json();
            if let Some(id) = created.pointer("/data/id").and_then(Value::as_str) {
                path = path.replace("/backups/sim-1", &format!("/backups/{id}"));
            }
        }
        // Personal keys are made and deleted from a signed-in session; a refresh takes a
        // refresh token of a sign-in; a sign-in the user's password.
        let auth = op.template.starts_with("/auth/me/api-keys") && op.method != "GET";
        let session = if auth || op.template == "/auth/refresh" {
            Some(sign_in(&s).await)
        } else {
            None
        };
        if let (Some((token, _)), true) = (&session, op.method == "DELETE" && auth) {
            let made = s
                .post("/auth/me/api-keys")
                .bearer(token)
                .json(json!({"name": "conformance"}))
                .await
                .json();
            let id = made
                .pointer("/data/id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            path = format!("/auth/me/api-keys/{id}");
        }
        let method = Method::from_bytes(op.method.as_bytes()).unwrap();
        let mut req = s.request(method, &path).query(&query);
        if let (Some((token, _)), true) = (&session, auth) {
            req = req.bearer(token);
        }
        if op.template == "/auth/login" {
            req = req.json(json!({"username": "conformance", "password": "pw"}));
        } else if let (Some((_, refresh)), "/auth/refresh") = (&session, op.template.as_str()) {
            req = req.json(json!({"refreshToken": refresh}));
        } else if op.method == "POST" && op.template == "/environments/{id}/projects" {
            // A project is created from a JSON-encoded `project` part holding real compose text.
            let project = json!({"name": "conformance", "composeContent": "services:\n  app:\n    image: nginx:1.27-alpine\n"});
            let v2 = spec
                .request_body(o)
                .is_some_and(|(b, _)| spec.resolve(b).pointer("/properties/project").is_some());
            req = req.json(&if v2 {
                json!({"project": project.to_string()})
            } else {
                project
            });
        } else if let Some((schema, _)) = spec.request_body(o) {
            let body = arcane_sim::synth::synth(&spec, schema, "", &op.template);
            req = req.json(&body);
        }
        report.calls += 1;
        let label = format!("{} {}", op.method, op.template);
        let resp = match req.try_send().await {
            Ok(r) => r,
            Err(e) => {
                report
                    .failures
                    .push(format!("{label}: request failed: {e}"));
                continue;
            }
        };
        let status = resp.status().as_u16();
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        // Arcane's client stream never ends by design, so its body cannot be read whole: its
        // first line is checked here (client_stream.rs checks the rest, line by line).
        if op.template == "/stream" {
            if let Some(f) = first_stream_line_fails(status, &ctype, resp).await {
                report.failures.push(format!("{label}: {f}"));
            }
            report.checked += 1;
            continue;
        }
        let bytes = resp.bytes().await.unwrap_or_default();
        if let Some(expected) = documented_status(&op.method, &op.template)
            && status == expected
        {
            report
                .divergences
                .push(format!("{label}: status {status} (documented)"));
            continue;
        }
        if !(200..300).contains(&status) {
            report.failures.push(format!(
                "{label}: status {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
            continue;
        }
        let (_, schema) = spec.success_response(o);
        let Some(schema) = schema else {
            // Streams, downloads, HEAD: no JSON schema to check; streams must end with done.
            if ctype == "application/x-json-stream" {
                let last = String::from_utf8_lossy(&bytes)
                    .lines()
                    .last()
                    .unwrap_or("")
                    .to_string();
                if last != "{\"done\":true}" {
                    report
                        .failures
                        .push(format!("{label}: stream did not end with done: {last}"));
                }
            }
            continue;
        };
        // docs/arcane-wire.md#downloads: the builds download is `application/octet-stream` although the
        // document declares JSON (a documented divergence).
        if op.template == "/environments/{id}/builds/browse/download"
            && ctype == "application/octet-stream"
        {
            report
                .divergences
                .push(format!("{label}: octet-stream download declared as JSON"));
            continue;
        }
        let body: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                report.failures.push(format!(
                    "{label}: body is not JSON ({e}), content-type {ctype}"
                ));
                continue;
            }
        };
        let key = schema.to_string();
        let validator = validators.entry(key).or_insert_with(|| {
            let mut root = schema.clone();
            fix_refs(&mut root);
            root["components"] = components.clone();
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(false)
                .build(&root)
                .expect("response schema compiles")
        });
        report.checked += 1;
        for err in validator.iter_errors(&body) {
            let pointer = err.instance_path().to_string();
            let value = body.pointer(&pointer).cloned().unwrap_or(Value::Null);
            if is_documented_divergence(&pointer, &value) {
                report
                    .divergences
                    .push(format!("{label} {pointer} = {value}"));
            } else {
                report.failures.push(format!("{label}: {pointer}: {err}"));
            }
        }
    }
    s.sim.shutdown().await;
    report
}

fn summarize(name: &str, r: &Report) {
    eprintln!(
        "{name}: {} operations called, {} JSON bodies validated, {} documented divergences, {} failures",
        r.calls,
        r.checked,
        r.divergences.len(),
        r.failures.len()
    );
    for f in r.failures.iter().take(40) {
        eprintln!("  FAIL {f}");
    }
}

/// What is wrong with the first line of the client stream (`GET /stream`), if anything: it is
/// a `200` JSON-lines answer whose first line is a JSON object with a timestamp.
async fn first_stream_line_fails(
    status: u16,
    ctype: &str,
    resp: reqwest::Response,
) -> Option<String> {
    use futures::StreamExt;
    if status != 200 || ctype != "application/x-json-stream" {
        return Some(format!("status {status}, content type {ctype:?}"));
    }
    let mut body = resp.bytes_stream();
    let mut buf = Vec::new();
    // Without a known channel the first line is the heartbeat, sent every 15 s.
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !buf.contains(&b'\n') {
            match body.next().await {
                Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                _ => break,
            }
        }
    })
    .await;
    if read.is_err() {
        return Some("no line within 20 s".into());
    }
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    match serde_json::from_slice::<Value>(line) {
        Ok(v) if v["timestamp"].is_string() => None,
        _ => Some(format!(
            "the first line is no JSON object with a timestamp: {}",
            String::from_utf8_lossy(line)
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_of_v2_8_0_conforms() {
    let r = check_spec(&spec_v2()).await;
    summarize("2.8.0", &r);
    assert_eq!(r.calls, 347);
    assert!(r.failures.is_empty(), "{} failures", r.failures.len());
    // The project details answers (get, compose, runtime, updates, list) show the divergence.
    for op in [
        "GET /environments/{id}/projects/{projectId} ",
        "/compose ",
        "/runtime ",
        "/updates ",
        "GET /environments/{id}/projects ",
    ] {
        assert!(
            r.divergences.iter().any(|d| d.contains(op)),
            "no divergence seen for {op}"
        );
    }
    assert!(
        r.divergences
            .iter()
            .any(|d| d.ends_with("/build/shm_size = \"0\"") || d.contains("/mem_limit"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_of_v1_11_2_conforms() {
    let r = check_spec(&spec_v1()).await;
    summarize("1.11.2", &r);
    assert_eq!(r.calls, 145);
    assert!(r.failures.is_empty(), "{} failures", r.failures.len());
}

/// The stateful routes look path parameters up by name (`containerId`, `volumeName`…): every
/// spec the simulator loads must name the parameter after each resource segment the same way.
#[test]
fn both_specs_name_the_path_parameters_the_routes_read() {
    let expected: HashMap<&str, &[&str]> = HashMap::from([
        ("environments", &["id"][..]),
        ("containers", &["containerId"][..]),
        // Export, tag, history and attestations take a reference (`name`).
        ("images", &["imageId", "name"][..]),
        ("check", &["imageId"][..]),
        ("projects", &["projectId"][..]),
        ("volumes", &["volumeName"][..]),
        ("networks", &["networkId"][..]),
        ("services", &["serviceId"][..]),
        ("activities", &["activityId"][..]),
        ("backups", &["backupId"][..]),
        ("gitops-syncs", &["syncId"][..]),
        ("mtls", &["fileName"][..]),
    ]);
    for path in [spec_v2(), spec_v1()] {
        let spec = Spec::load(&path).unwrap();
        let mut seen = 0;
        for op in &spec.ops {
            let segs: Vec<&str> = op.template.split('/').collect();
            for pair in segs.windows(2) {
                let Some(name) = pair[1].strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
                    continue;
                };
                if let Some(names) = expected.get(pair[0]) {
                    seen += 1;
                    assert!(
                        names.contains(&name),
                        "{}: {} names its {} parameter `{name}`, the routes read {names:?}",
                        path.display(),
                        op.template,
                        pair[0]
                    );
                }
            }
        }
        assert!(
            seen > 50,
            "{}: only {seen} parameters checked",
            path.display()
        );
    }
}
