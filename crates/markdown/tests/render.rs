//! Exact renderings of representative results, and hostile values through
//! the renderer, checked by parsing.

use crate::support;

use arcane_markdown::sanitize;
use arcane_markdown::{
    RenderContext, RestHint, render_binary_download_meta, render_list, render_object,
    render_text_download, render_value,
};
use arcane_markdown::{human_bytes, is_byte_field};
use serde_json::{Value, json};
use support::*;

fn container_page() -> Value {
    json!({
        "items": [
            {"id": "4f2a9c1e8b7d", "names": ["/web-1"], "image": "nginx:1.25", "imageId": "sha256:aa11",
             "command": "nginx -g 'daemon off;'", "created": 1714560000, "state": "running",
             "status": "Up 3 hours (healthy)",
             "ports": [{"IP": "0.0.0.0", "PrivatePort": 80, "PublicPort": 8080, "Type": "tcp"}],
             "labels": {"com.docker.compose.project": "shop"}, "sizeRw": 1500000000u64},
            {"id": "9d8e7f6a5b4c", "names": ["/db"], "image": "postgres:16", "imageId": "sha256:bb22",
             "command": "docker-entrypoint.sh postgres", "created": 1714556400, "state": "exited",
             "status": "Exited (0) 2 hours ago", "ports": [], "labels": {}, "sizeRw": 0},
            {"id": "1a2b3c4d5e6f", "names": ["/<none>:<none>"], "image": "<none>:<none>", "imageId": "sha256:cc33",
             "command": "sh", "created": 1714552800, "state": "created", "status": "Created",
             "ports": [], "labels": {}, "sizeRw": 2048},
        ],
        "pagination": {"totalItems": 12, "totalPages": 4, "currentPage": 1, "itemsPerPage": 3, "grandTotalItems": 12},
        "counts": {"runningContainers": 7, "stoppedContainers": 5, "totalContainers": 12},
        "warnings": ["environment edge-2 did not answer"]
    })
}

#[test]
fn container_page_with_pagination_and_counts() {
    let ctx = RenderContext {
        title: "Containers",
        full_item_action: Some("`container.get`"),
        ..Default::default()
    };
    let want = "\
# Containers

3 item(s) — 12 total, page 1 of 4

| id | names | state | status | image | created |
|---|---|---|---|---|---|
| 4f2a9c1e8b7d | /web-1 | running | Up 3 hours (healthy) | nginx:1.25 | 2024-05-01 10:40 UTC |
| 9d8e7f6a5b4c | /db | exited | Exited (0) 2 hours ago | postgres:16 | 2024-05-01 09:40 UTC |
| 1a2b3c4d5e6f | `/<none>:<none>` | created | Created | `<none>:<none>` | 2024-05-01 08:40 UTC |

Other fields: imageId, command, ports, labels, sizeRw. `container.get` returns a full item.

counts: runningContainers 7, stoppedContainers 5, totalContainers 12.

warnings (1):

- environment edge-2 did not answer
";
    assert_eq!(render_value(&ctx, &container_page()), want);
    assert_eq!(render_list(&ctx, &container_page()), want);
}

#[test]
fn declared_columns_and_meta_surface_action_name() {
    let cols = vec![
        "names".to_owned(),
        "state".to_owned(),
        "ports.0.PublicPort".to_owned(),
    ];
    let ctx = RenderContext {
        title: "Containers",
        columns: Some(&cols),
        full_item_action: Some("`arcane_container` (action `get`)"),
        ..Default::default()
    };
    let page = json!({"items": container_page()["items"].clone()});
    let want = "\
# Containers

3 item(s)

| names | state | ports.0.PublicPort |
|---|---|---|
| /web-1 | running | 8080 |
| /db | exited | |
| `/<none>:<none>` | created | |

Other fields: id, image, imageId, command, created, status, labels, sizeRw. `arcane_container` (action `get`) returns a full item.
";
    assert_eq!(render_list(&ctx, &page), want);
}

#[test]
fn empty_lists() {
    let ctx = RenderContext {
        title: "Containers",
        empty_hint: Some(
            "No containers match. If search, label, standalone or updates was set, drop it to widen the list; …",
        ),
        ..Default::default()
    };
    let v = json!({"items": [], "pagination": {"totalItems": 0, "totalPages": 0, "currentPage": 1, "itemsPerPage": 20}});
    assert_eq!(
        render_value(&ctx, &v),
        "# Containers\n\nNo containers match. If search, label, standalone or updates was set, drop it to widen the list; …\n"
    );
    let ctx = RenderContext {
        title: "Images",
        ..Default::default()
    };
    assert_eq!(
        render_value(&ctx, &json!({"items": []})),
        "# Images\n\nNo items.\n"
    );
    assert_eq!(render_value(&ctx, &json!([])), "# Images\n\nNo items.\n");
    // A page past the end: the list is not empty, this page is.
    let v = json!({"items": [], "pagination": {"totalItems": 12, "totalPages": 2, "currentPage": 3, "itemsPerPage": 10}});
    assert_eq!(
        render_value(&ctx, &v),
        "# Images\n\n0 item(s) — 12 total, page 3 of 2\n\nNo items on this page.\n"
    );
}

fn volume_rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("vol-{i:02}"), "driver": "local", "size": 1000 * i}))
        .collect()
}

#[test]
fn sixty_rows_cut_to_fifty() {
    let ctx = RenderContext {
        title: "Volumes",
        full_item_action: Some("`volume.get`"),
        ..Default::default()
    };
    let v = json!({"items": volume_rows(60), "pagination": {"totalItems": 125, "totalPages": 3, "currentPage": 2, "itemsPerPage": 60}});
    let mut want = String::from(
        "# Volumes\n\n60 item(s) — 125 total, page 2 of 3\n\n| name | driver | size |\n|---|---|---|\n| vol-00 | local | 0 |\n",
    );
    for i in 1..50 {
        want.push_str(&format!(
            "| vol-{i:02} | local | {} ({}.0 kB) |\n",
            i * 1000,
            i
        ));
    }
    want.push_str("\n10 more row(s) of this page are not shown. To read them, call the list again with `start` 110 and `limit` 10.\n");
    let got = render_value(&ctx, &v);
    assert_eq!(got, want);
    let events = parse(&got);
    assert_eq!(table_cells(&events)[0].len(), 51, "header and 50 rows");

    // Without pagination the page starts at 0; a list that cannot page names
    // its filters instead.
    let ctx = RenderContext {
        title: "Volumes",
        rest_hint: RestHint::Filters("set `search` or `driver`."),
        ..Default::default()
    };
    let got = render_value(&ctx, &json!({"items": volume_rows(51)}));
    assert!(
        got.ends_with("| vol-49 | local | 49000 (49.0 kB) |\n\n1 more row(s) of this page are not shown. To see them, narrow the list: set `search` or `driver`.\n"),
        "{got}"
    );
    let ctx = RenderContext {
        title: "Volumes",
        ..Default::default()
    };
    let got = render_value(&ctx, &json!({"items": volume_rows(55)}));
    assert!(got.ends_with("with `start` 50 and `limit` 5.\n"), "{got}");
}

#[test]
fn object_with_nested_multiline_and_null_fields() {
    let obj = json!({
        "created": "2024-05-01T12:00:00Z",
        "status": "running",
        "name": "shop",
        "id": "p-42",
        "description": null,
        "composeContent": "services:\n  web:\n    image: nginx\n",
        "serviceCount": 2,
        "tags": ["prod", "*edge*"],
        "labels": {"team": "payments", "tier": "frontend"},
        "services": [{"name": "web", "status": "running"}],
        "diskUsageBytes": 1234567,
        "enabled": true,
        "env": [],
        "empty": ""
    });
    let ctx = RenderContext {
        title: "Project shop",
        ..Default::default()
    };
    let want = "\
# Project shop

- id: p-42
- name: shop
- status: running
- enabled: true
- created: 2024-05-01T12:00:00Z
- serviceCount: 2
- tags: prod, `*edge*`
- labels: team=payments, tier=frontend
- services: `[{\"name\":\"web\",\"status\":\"running\"}]`
- diskUsageBytes: 1234567 (1.2 MB)

## composeContent

```text
services:
  web:
    image: nginx
```
";
    assert_eq!(render_object(&ctx, &obj), want);
    assert_eq!(render_value(&ctx, &obj), want);
}

/// What makes an object's text cheaper than its JSON: unset values left out at every depth,
/// small maps on one line, maps of maps as `parent.child` lines, short nested values as compact
/// JSON, lists of flat objects (short lists in a cell included) as a table, and compact JSON in
/// the blocks of long nested values; every value that is left in parses back exactly.
#[test]
fn object_text_is_compact_and_keeps_every_set_value() {
    let long: Vec<String> = (0..30).map(|i| format!("layer-{i}")).collect();
    let obj = json!({
        "id": "c-1",
        "state": {"status": "exited", "running": false, "exitCode": 1, "finishedAt": "0001-01-01T00:00:00Z", "error": ""},
        "finishedAt": "0001-01-01T00:00:00Z",
        "mounts": [],
        "options": {},
        "hostConfig": {"restartPolicy": {"name": "always", "maximumRetryCount": 0}, "memory": 268435456, "binds": []},
        "networkSettings": {"networks": {"front": {"ipAddress": "10.0.0.2", "aliases": ["web", "www"], "links": null}}},
        "endpoints": [
            {"name": "front", "ip": "10.0.0.2", "primary": true, "ports": ["80", "443"]},
            {"name": "back", "ip": "10.0.1.2", "gateway": null, "ports": []},
            {"name": "admin", "ip": "10.0.2.2", "primary": false},
            {"name": "metrics", "ip": "10.0.3.2", "primary": false},
        ],
        "layers": long,
        "odd": {"a=b": "x", "c": "1, 2"},
        "dotted": {"com.example": {"x": 1}},
        "blank": {"error": "", "at": null, "list": [{}]},
    });
    let ctx = RenderContext {
        title: "Container c-1",
        ..Default::default()
    };
    let layers = serde_json::to_string(&obj["layers"]).unwrap();
    let want = format!(
        "\
# Container c-1

- id: c-1
- state: status=exited, running=false, exitCode=1
- hostConfig: memory=268435456 (268.4 MB)
- hostConfig.restartPolicy: name=always, maximumRetryCount=0
- networkSettings.networks.front: ipAddress=10.0.0.2
- networkSettings.networks.front.aliases: web, www
- odd: `{{\"a=b\":\"x\",\"c\":\"1, 2\"}}`
- dotted: `{{\"com.example\":{{\"x\":1}}}}`
- blank.list: `[{{}}]`

## endpoints

| name | ip | primary | ports |
|---|---|---|---|
| front | 10.0.0.2 | true | 80, 443 |
| back | 10.0.1.2 | | |
| admin | 10.0.2.2 | false | |
| metrics | 10.0.3.2 | false | |

## layers

```json
{layers}
```
"
    );
    assert_eq!(render_object(&ctx, &obj), want);

    let all_unset = json!({"a": null, "b": "", "c": [], "d": {"e": {"f": ""}}});
    assert_eq!(
        render_object(&ctx, &all_unset),
        "# Container c-1\n\nNo field has a value.\n"
    );
}

/// Fields the action names are left out of the text (at any depth, in each element of a list),
/// the text says which; identity and state fields are shown whatever the action says, and a
/// name that matches nothing is not mentioned.
#[test]
fn object_text_leaves_out_what_the_action_names() {
    let obj = json!({
        "id": "n-1",
        "status": "ok",
        "containers": {"c1": {"Name": "web"}},
        "containersList": [
            {"id": "c1", "name": "web", "endpointId": "e1", "ip": "10.0.0.2"},
            {"id": "c2", "name": "db", "endpointId": "e2", "ip": "10.0.0.3"},
            {"id": "c3", "name": "cache", "ip": "10.0.0.4"},
        ],
        "driver": "bridge",
    });
    let omit: Vec<String> = [
        "containers",
        "containersList.endpointId",
        "id",
        "status",
        "gone",
        "driver.x",
    ]
    .map(String::from)
    .to_vec();
    let ctx = RenderContext {
        title: "Network n-1",
        omit: &omit,
        ..Default::default()
    };
    let want = "\
# Network n-1

- id: n-1
- status: ok
- driver: bridge

Not shown here: containers, containersList.endpointId.

## containersList

| id | name | ip |
|---|---|---|
| c1 | web | 10.0.0.2 |
| c2 | db | 10.0.0.3 |
| c3 | cache | 10.0.0.4 |
";
    assert_eq!(render_object(&ctx, &obj), want);
    // Nothing to leave out: no note.
    let plain = json!({"id": "n-2", "driver": "bridge"});
    assert_eq!(
        render_object(&ctx, &plain),
        "# Network n-1\n\n- id: n-2\n- driver: bridge\n"
    );
}

#[test]
fn byte_sizes() {
    assert_eq!(human_bytes(0), "0 B");
    assert_eq!(human_bytes(999), "999 B");
    assert_eq!(human_bytes(1000), "1.0 kB");
    assert_eq!(human_bytes(1_500_000_000), "1.5 GB");
    assert_eq!(human_bytes(1_449_999), "1.4 MB");
    assert_eq!(human_bytes(1_450_000), "1.5 MB");
    assert_eq!(human_bytes(999_949), "999.9 kB");
    assert_eq!(human_bytes(999_950), "1.0 MB");
    assert_eq!(human_bytes(u64::MAX), "18.4 EB");
    for f in [
        "size",
        "sizeRw",
        "sizeRootFs",
        "virtualSize",
        "sharedSize",
        "memory",
        "memoryUsage",
        "memoryLimit",
        "sizeBytes",
        "rxBytes",
        "diskUsageBytes",
    ] {
        assert!(is_byte_field(f), "{f}");
    }
    for f in [
        "pageSize",
        "batchSize",
        "memoryPercent",
        "cpuPercent",
        "itemsPerPage",
        "created",
        "containers",
        "sizeCount",
    ] {
        assert!(!is_byte_field(f), "{f}");
    }
    let ctx = RenderContext {
        title: "Image",
        ..Default::default()
    };
    assert_eq!(
        render_object(&ctx, &json!({"size": 1.5e9, "memory": 2.5})),
        "# Image\n\n- size: 1500000000.0 (1.5 GB)\n- memory: 2.5\n"
    );
    let v = json!({"id": "sha256:1", "size": 1500000000u64, "virtualSize": 2500, "sharedSize": -1, "pageSize": 5000, "memoryUsage": 999});
    assert_eq!(
        render_object(&ctx, &v),
        "# Image\n\n- id: sha256:1\n- size: 1500000000 (1.5 GB)\n- virtualSize: 2500 (2.5 kB)\n- sharedSize: -1\n- pageSize: 5000\n- memoryUsage: 999\n"
    );
}

#[test]
fn lone_values_and_downloads() {
    let ctx = RenderContext {
        title: "Version",
        ..Default::default()
    };
    assert_eq!(
        render_value(&ctx, &json!({"value": "1.2.3"})),
        "# Version\n\n1.2.3\n"
    );
    assert_eq!(
        render_value(&ctx, &json!({"value": 42})),
        "# Version\n\n42\n"
    );
    assert_eq!(
        render_value(&ctx, &json!({"value": "# not a heading"})),
        "# Version\n\n\\# not a heading\n"
    );
    assert_eq!(
        render_value(&ctx, &json!({"value": "a\nb"})),
        "# Version\n\n```text\na\nb\n```\n"
    );
    assert_eq!(
        render_value(&ctx, &json!({"value": null})),
        "# Version\n\nNo value.\n"
    );
    assert_eq!(render_value(&ctx, &json!(true)), "# Version\n\ntrue\n");
    // A setting object that happens to have a `value` field stays an object.
    assert_eq!(
        render_value(&ctx, &json!({"key": "theme", "value": "dark"})),
        "# Version\n\n- key: theme\n- value: dark\n"
    );

    assert_eq!(
        render_text_download(
            "compose.yaml",
            1234,
            "application/yaml",
            "services:\n  web:\n    image: nginx\n"
        ),
        "# compose.yaml\n\n- size: 1234 bytes (1.2 kB)\n- type: application/yaml\n\n```yaml\nservices:\n  web:\n    image: nginx\n```\n"
    );
    let log = "\x1b[32mINFO\x1b[0m started\r\n```\nnot a fence end\n";
    let md = render_text_download("web.log", 60, "text/plain", log);
    assert_eq!(
        md,
        "# web.log\n\n- size: 60 bytes\n- type: text/plain\n\n````text\nINFO started\r\n```\nnot a fence end\n````\n"
    );
    assert_eq!(
        render_binary_download_meta("backup.tar.gz", 1_500_000_000, "application/gzip"),
        "# backup.tar.gz\n\n- size: 1500000000 bytes (1.5 GB)\n- type: application/gzip\n\nThe file is attached as a separate embedded resource for the user; its content is not shown here.\n"
    );
    // A hostile file name cannot break the heading.
    let md = render_binary_download_meta("x #", 1, "<b>t</b>");
    assert_eq!(blocks(&parse(&md)).headings, 1);
    assert!(forbidden(&parse(&md)).is_empty(), "{md}");
}

#[test]
fn long_cells_are_trimmed_but_identifiers_are_not() {
    let long = "x".repeat(100);
    let id = "f".repeat(64);
    let ctx = RenderContext {
        title: "T",
        ..Default::default()
    };
    let v = json!({"items": [{"id": id, "networkName": long, "description": long, "names": ["a", "b"]}]});
    let md = render_list(&ctx, &v);
    let events = parse(&md);
    let t = &table_cells(&events)[0];
    let head: Vec<&str> = t[0].iter().map(|c| c.text.as_str()).collect();
    assert_eq!(head, ["id", "names", "description", "networkName"]);
    assert_eq!(t[1][0].text, id);
    assert_eq!(t[1][1].text, "a, b");
    assert_eq!(t[1][2].text, format!("{}…", "x".repeat(60)));
    assert_eq!(t[1][3].text, long);
}

/// Container-like items whose every string is hostile.
fn hostile_items(corpus: &[String]) -> Vec<Value> {
    corpus
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let other = &corpus[(i + 7) % corpus.len()];
            json!({
                "id": v,
                "names": [v, other],
                "image": other,
                "state": v,
                "status": other,
                "projectName": v,
                "labels": {v.clone(): other, "com.docker.compose.project": v},
                "created": i,
                v.clone(): other,
            })
        })
        .collect()
}

#[test]
fn hostile_values_in_a_list() {
    let corpus = hostile_corpus();
    let items = hostile_items(&corpus);
    let counts: serde_json::Map<String, Value> = corpus
        .iter()
        .take(20)
        .map(|k| (k.clone(), json!(1)))
        .collect();
    let warnings: Vec<&String> = corpus.iter().take(30).collect();
    for (title, chunk) in [
        ("Containers", &items[..40]),
        ("Containers #", &items[40..80]),
        ("x", &items[80..120]),
        ("y", &items[120..]),
    ] {
        let v = json!({"items": chunk, "counts": counts, "warnings": warnings});
        let ctx = RenderContext {
            title,
            full_item_action: Some("`container.get`"),
            ..Default::default()
        };
        let md = render_value(&ctx, &v);
        let events = parse(&md);
        assert!(
            forbidden(&events).is_empty(),
            "{md}\n{:?}",
            forbidden(&events)
        );
        let b = blocks(&events);
        assert_eq!(
            (b.headings, b.tables, b.code_blocks, b.lists),
            (1, 1, 0, 1),
            "{md}"
        );
        assert_eq!(b.items, 6, "five warnings and the rest: {md}");
        assert_eq!(heading_texts(&events)[0].text, title);
        let t = &table_cells(&events)[0];
        let head: Vec<&str> = t[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(head, ["id", "names", "state", "status", "image", "created"]);
        assert_eq!(t.len(), chunk.len() + 1);
        for (row, item) in t[1..].iter().zip(chunk) {
            assert_eq!(row.len(), 6, "{md}");
            let s = |k: &str| expected_inline(item[k].as_str().unwrap_or_default());
            assert_eq!(row[0].text, s("id"), "{md}");
            let names: Vec<String> = item["names"]
                .as_array()
                .unwrap_or(&Vec::new())
                .iter()
                .map(|n| expected_inline(n.as_str().unwrap_or_default()))
                .collect();
            let names: Vec<String> = names
                .into_iter()
                .map(|n| if n.is_empty() { "\"\"".to_owned() } else { n })
                .collect();
            assert_eq!(row[1].text, names.join(", "), "{md}");
        }
        // Hostile field names are listed, literally, in the closing note.
        let note = paragraph_texts(&events)
            .into_iter()
            .find(|p| p.text.starts_with("Other fields: "))
            .map(|p| p.text)
            .unwrap_or_default();
        for item in chunk {
            for key in item.as_object().map(|o| o.keys()).into_iter().flatten() {
                let e = expected_inline(key);
                if !["id", "names", "state", "status", "image", "created"].contains(&key.as_str())
                    && !e.is_empty()
                {
                    assert!(note.contains(&e), "{e:?} missing from {note:?}");
                }
            }
        }
        for it in item_texts(&events).iter().take(5) {
            assert!(
                warnings.iter().any(|w| {
                    let e = expected_inline(w);
                    it.text == e || (e.chars().count() > 200 && it.text.ends_with('…'))
                }),
                "warning {:?} in {md}",
                it.text
            );
        }
    }
}

fn line(key: &str, value: &str) -> String {
    if value.is_empty() {
        format!("{key}:")
    } else {
        format!("{key}: {value}")
    }
}

#[test]
fn hostile_values_in_declared_columns() {
    let corpus = hostile_corpus();
    let items = hostile_items(&corpus);
    let cols = vec![
        "projectName".to_owned(),
        "labels".to_owned(),
        "labels.com.docker.compose.project".to_owned(),
    ];
    let ctx = RenderContext {
        title: "Projects",
        columns: Some(&cols),
        ..Default::default()
    };
    for chunk in items.chunks(50) {
        let md = render_list(&ctx, &json!({ "items": chunk }));
        let events = parse(&md);
        assert!(
            forbidden(&events).is_empty(),
            "{md}\n{:?}",
            forbidden(&events)
        );
        let t = &table_cells(&events)[0];
        assert_eq!(t.len(), chunk.len() + 1);
        for (row, item) in t[1..].iter().zip(chunk) {
            assert_eq!(row.len(), 3, "{md}");
            let v = expected_inline(item["projectName"].as_str().unwrap_or_default());
            assert_eq!(row[0].text, v, "{md}");
            assert_eq!(row[2].text, v, "{md}");
        }
    }
}

#[test]
fn hostile_values_in_objects() {
    let corpus = hostile_corpus();
    for (i, v) in corpus.iter().enumerate() {
        let other = &corpus[(i + 11) % corpus.len()];
        let mut obj = serde_json::Map::new();
        // Longer than a field's line takes as JSON, so nested values get a JSON block.
        let pad = "p".repeat(300);
        obj.insert("id".into(), json!(v));
        obj.insert(v.clone(), json!(other));
        obj.insert("names".into(), json!([v, other, v, pad]));
        obj.insert("nested".into(), json!({v.clone(): [other, pad]}));
        obj.insert("gone".into(), Value::Null);
        assert_eq!(obj.len(), 5, "corpus values are not field names used here");
        let ctx = RenderContext {
            title: v,
            ..Default::default()
        };
        let md = render_object(&ctx, &Value::Object(obj.clone()));
        let events = parse(&md);
        assert!(
            forbidden(&events).is_empty(),
            "{md}\n{:?}",
            forbidden(&events)
        );

        let (ev, eo) = (expected_inline(v), expected_inline(other));
        let (nl_v, nl_o) = (has_newline(v), has_newline(other));
        let mut lines = Vec::new();
        let mut sections = vec![];
        // Empty text says nothing and is left out.
        if nl_v {
            sections.push("id".to_owned())
        } else if !v.is_empty() {
            lines.push(line("id", &ev))
        }
        let el = |e: &String| {
            if e.is_empty() {
                "\"\"".to_owned()
            } else {
                e.clone()
            }
        };
        if nl_v || nl_o {
            sections.push("names".to_owned());
        } else {
            lines.push(format!(
                "names: {}, {}, {}, {pad}",
                el(&ev),
                el(&eo),
                el(&ev)
            ));
        }
        if nl_o {
            sections.push(ev.clone())
        } else if !other.is_empty() {
            lines.push(line(&ev, &eo))
        }
        // A map under a plain name is written as `nested.<name>`, its list on that line when
        // short enough, else in a section of that name; any other name keeps the map whole.
        let plain = !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let nested_json = if !plain {
            sections.push("nested".to_owned());
            Some(obj["nested"].clone())
        } else if nl_o {
            sections.push(format!("nested.{ev}"));
            Some(obj["nested"][v.as_str()].clone())
        } else {
            lines.push(format!("nested.{ev}: {}, {pad}", el(&eo)));
            None
        };

        let b = blocks(&events);
        let has_title = !sanitize(v).trim().is_empty();
        assert_eq!(b.tables, 0, "{md}");
        assert_eq!(b.lists, 1, "{md}");
        assert_eq!(b.code_blocks, sections.len(), "{md}");
        assert_eq!(b.headings, usize::from(has_title) + sections.len(), "{md}");
        let items: Vec<String> = item_texts(&events).into_iter().map(|t| t.text).collect();
        assert_eq!(items, lines, "{md}");
        let headings: Vec<String> = heading_texts(&events).into_iter().map(|t| t.text).collect();
        assert_eq!(&headings[usize::from(has_title)..], &sections[..], "{md}");

        // The nested value is literal JSON of Arcane's exact value.
        if let Some(nested) = nested_json {
            let json_text = code_blocks(&events).pop().unwrap_or_default();
            let back: Value = serde_json::from_str(&json_text).unwrap_or(Value::Null);
            assert_eq!(back, nested, "{md}");
        }
    }
}

fn has_newline(s: &str) -> bool {
    sanitize(s).contains('\n')
}

/// Every numeric field name of the 2.8.0 document's response schemas (through `$ref`s, lists,
/// maps and `allOf`/`oneOf`/`anyOf`), with the schemas it appears in.
fn numeric_response_fields(spec: &Value) -> std::collections::BTreeMap<String, Vec<String>> {
    fn walk(
        spec: &Value,
        s: &Value,
        owner: &str,
        seen: &mut std::collections::HashSet<String>,
        out: &mut std::collections::BTreeMap<String, Vec<String>>,
    ) {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r).to_string();
            if seen.insert(name.clone()) {
                let target = &spec["components"]["schemas"][&name];
                walk(spec, target, &name, seen, out);
            }
            return;
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let types: Vec<&str> = match v.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if types.iter().any(|t| *t == "integer" || *t == "number") {
                    let owners = out.entry(k.clone()).or_default();
                    if !owners.iter().any(|o| o == owner) {
                        owners.push(owner.to_string());
                    }
                }
                walk(spec, v, owner, seen, out);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = s.get(key).filter(|v| v.is_object()) {
                walk(spec, inner, owner, seen, out);
            }
        }
        for key in ["allOf", "oneOf", "anyOf"] {
            for inner in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                walk(spec, inner, owner, seen, out);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for ops in spec["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
    {
        for op in ops.as_object().into_iter().flat_map(|o| o.values()) {
            for resp in op["responses"]
                .as_object()
                .into_iter()
                .flat_map(|r| r.values())
            {
                for content in resp["content"]
                    .as_object()
                    .into_iter()
                    .flat_map(|c| c.values())
                {
                    walk(spec, &content["schema"], "response", &mut seen, &mut out);
                }
            }
        }
    }
    out
}

/// The numeric fields of 2.8.0's responses that hold a byte count. Every other numeric field
/// of those responses is in [`NOT_BYTE_COUNTS`]: a field a new Arcane adds fails the test
/// below until it is put in one of the two, so `is_byte_field` cannot silently fall behind.
const BYTE_COUNTS: &[&str] = &[
    "MemTotal",
    "MemoryBytes",
    "SizeBytes",
    "SwapBytes",
    // Volume usage data (bytes); Swarm's address pools also have a `Size`, a prefix length
    // below 1000, which never reaches the units (sizes under 1000 are shown as they are).
    "Size",
    "alloc",
    "buildCacheSpaceReclaimed",
    "chunkSize",
    "containerSpaceReclaimed",
    "heapAlloc",
    "heapIdle",
    "heapInuse",
    "heapReleased",
    "heapSys",
    "imageSpaceReclaimed",
    "maxSyncBinarySize",
    "maxSyncTotalSize",
    "mcacheInuse",
    "mem_limit",
    "mem_reservation",
    "memory",
    "memswap_limit",
    "mspanInuse",
    "nextGc",
    "shmSize",
    "shm_size",
    "size",
    "spaceReclaimed",
    "stackInuse",
    "stackSys",
    "sys",
    "totalAlloc",
    "totalImageSize",
    "virtualSize",
    "volumeSpaceReclaimed",
];

/// Numeric fields of 2.8.0's responses that count, time, number or rate something else.
const NOT_BYTE_COUNTS: &[&str] = &[
    "Containers",
    "ContainersPaused",
    "ContainersRunning",
    "ContainersStopped",
    "DataPathPort",
    "Delay",
    "ElectionTick",
    "ForceRotate",
    "ForceUpdate",
    "Hard",
    "HeartbeatPeriod",
    "HeartbeatTick",
    "Images",
    "Index",
    "Interval",
    "KeepOldSnapshots",
    "LocalLBIndex",
    "LogEntriesForSlowFollowers",
    "Managers",
    "MaxAttempts",
    "MaxConcurrent",
    "MaxFailureRatio",
    "MaxReplicas",
    "MemorySwappiness",
    "Mode",
    "Monitor",
    "NCPU",
    "NEventsListener",
    "NFd",
    "NGoroutines",
    "NanoCPUs",
    "NodeCertExpiry",
    "Nodes",
    "OomScoreAdj",
    "Parallelism",
    "Pids",
    "PublishedPort",
    "Rate",
    "RefCount",
    "Replicas",
    "Retries",
    "SnapshotInterval",
    "Soft",
    "StartInterval",
    "StartPeriod",
    "StopGracePeriod",
    "SubnetSize",
    "TargetPort",
    "TaskHistoryRetentionLimit",
    "Timeout",
    "TotalCompletions",
    "Value",
    "Weight",
    "Window",
    "activeSyncs",
    "archivedProjects",
    "assignedUserCount",
    "checked",
    "checkedImageCount",
    "containerExec",
    "containerLogsActive",
    "containerPort",
    "containerStats",
    "count",
    "cpu_count",
    "cpu_percent",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpu_shares",
    "cpus",
    "created",
    "critical",
    "currentPage",
    "daysRemaining",
    "delay",
    "deleted",
    "delivered",
    "digestUpdates",
    "duration",
    "durationMs",
    "error",
    "errorCount",
    "errorsCount",
    "exitCode",
    "expiresIn",
    "failed",
    "failedCount",
    "failingStreak",
    "fallbackOrder",
    "fontSize",
    "gcCpuFraction",
    "globalIPv6PrefixLen",
    "gomaxprocs",
    "goroutines",
    "grandTotalItems",
    "gwPriority",
    "gw_priority",
    "hard",
    "heapObjects",
    "high",
    "hostPort",
    "id",
    "imageCount",
    "imagesInuse",
    "imagesUnused",
    "imagesWithUpdates",
    "info",
    "interval",
    "inuse",
    "ipPrefixLen",
    "itemsPerPage",
    "limit",
    "low",
    "maxSyncFiles",
    "max_attempts",
    "max_failure_ratio",
    "max_replicas_per_node",
    "medium",
    "mem_swappiness",
    "mode",
    "monitor",
    "nanoCpus",
    "numCgoCall",
    "numCpu",
    "numForcedGc",
    "numGc",
    "observedPulls",
    "oom_score_adj",
    "parallelism",
    "passkeyCount",
    "pauseTotalNs",
    "pids",
    "pids_limit",
    "preDeployTimeoutSec",
    "priority",
    "privatePort",
    "progress",
    "projectLogsActive",
    "publicPort",
    "publishedPort",
    "recoveryCodesRemaining",
    "refCount",
    "relevanceScore",
    "remaining",
    "replicas",
    "responseTimeMs",
    "restarted",
    "retries",
    "runningContainers",
    "runningCount",
    "runningProjects",
    "runningReplicas",
    "scale",
    "scannedImages",
    "serviceCount",
    "serviceLogsActive",
    "services",
    "single",
    "skipped",
    "slot",
    "soft",
    "starCount",
    "startInterval",
    "startPeriod",
    "start_interval",
    "start_period",
    "status",
    "stop_grace_period",
    "stoppedContainers",
    "stoppedProjects",
    "success",
    "successCount",
    "successfulSyncs",
    "syncInterval",
    "systemStats",
    "target",
    "targetPort",
    "timeout",
    "tokenTtlSeconds",
    "total",
    "totalChunks",
    "totalContainers",
    "totalImages",
    "totalItems",
    "totalPages",
    "totalProjects",
    "totalSyncs",
    "unknown",
    "unused",
    "updated",
    "updatingContainers",
    "updatingProjects",
    "uptimeSeconds",
    "used",
    "v2Score",
    "v3Score",
    "value",
    "warning",
    "weight",
    "window",
    "windowSeconds",
    "wsWorkerGoroutines",
];

#[test]
fn every_byte_count_of_the_2_8_0_responses_gets_units() {
    let spec: Value =
        serde_json::from_slice(&std::fs::read(arcane_test_support::spec_v2()).unwrap()).unwrap();
    let fields = numeric_response_fields(&spec);
    assert!(fields.len() > 150, "the walk found {} fields", fields.len());
    let unclassified: Vec<String> = fields
        .iter()
        .filter(|(k, _)| {
            !BYTE_COUNTS.contains(&k.as_str()) && !NOT_BYTE_COUNTS.contains(&k.as_str())
        })
        .map(|(k, owners)| format!("{k} (in {})", owners.join(", ")))
        .collect();
    assert!(
        unclassified.is_empty(),
        "numeric response fields of 2.8.0 that are in neither BYTE_COUNTS nor NOT_BYTE_COUNTS: {unclassified:?}"
    );
    for name in fields.keys() {
        assert_eq!(
            is_byte_field(name),
            BYTE_COUNTS.contains(&name.as_str()),
            "is_byte_field({name:?}) disagrees with the classification"
        );
    }
    // And the text shows the units, on an object's line, in a list's table and in a table of
    // nested rows, also for compose sizes sent as decimal text; identifiers stay as they are.
    let ctx = RenderContext {
        title: "T",
        ..Default::default()
    };
    for name in BYTE_COUNTS.iter().filter(|n| fields.contains_key(**n)) {
        let text = render_object(&ctx, &json!({ *name: 2_500_000u64 }));
        assert!(text.contains("2500000 (2.5 MB)"), "{name}: {text}");
        let text = render_object(&ctx, &json!({ *name: "268435456" }));
        assert!(text.contains("268435456 (268.4 MB)"), "{name}: {text}");
        let rows = json!({"rows": [{ *name: 2_500_000u64 }, { *name: 3_000 }, { *name: "4000" }]});
        let text = render_object(&ctx, &rows);
        assert!(
            text.contains("2500000 (2.5 MB)")
                && text.contains("3000 (3.0 kB)")
                && text.contains("4000 (4.0 kB)"),
            "{name}: {text}"
        );
        let list = render_list(&ctx, &json!({"items": [{"id": "a", *name: 2_500_000u64}]}));
        assert!(list.contains("2500000 (2.5 MB)"), "{name}: {list}");
    }
    for name in NOT_BYTE_COUNTS {
        let text = render_object(&ctx, &json!({ *name: 2_500_000u64 }));
        assert!(!text.contains("MB"), "{name}: {text}");
    }
    let ids = render_object(
        &ctx,
        &json!({"sizeId": "123456789", "id": 123456789, "size": "12a34"}),
    );
    assert!(!ids.contains(" MB") && !ids.contains(" kB"), "{ids}");
}

/// A Unix time in a time field (Docker's `Created`, in seconds or milliseconds) is shown as
/// its date and time, in an object's line and in a list's table; a count outside the years 2000–2100,
/// or in any other field, is left as it is.
#[test]
fn unix_times_are_shown_as_dates() {
    let ctx = RenderContext {
        title: "T",
        ..Default::default()
    };
    let text = render_object(
        &ctx,
        &json!({"created": 1713000000, "createdAt": 1713000000123u64, "replicas": 1713000000,
                "time": 42}),
    );
    assert!(text.contains("- created: 2024-04-13 09:20 UTC\n"), "{text}");
    assert!(
        text.contains("- createdAt: 2024-04-13 09:20 UTC\n"),
        "{text}"
    );
    assert!(text.contains("- replicas: 1713000000\n"), "{text}");
    assert!(text.contains("- time: 42\n"), "{text}");
    let list = render_list(
        &ctx,
        &json!({"items": [{"id": "sha256:ab", "created": 1714518400}]}),
    );
    assert!(list.contains("| 2024-04-30 23:06 UTC |"), "{list}");
}
