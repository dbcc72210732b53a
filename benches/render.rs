//! Rendering a 50-row container page: the common case of a list call; and its redaction,
//! which the text of a result goes through first.

use arcane_markdown::{RenderContext, render_value};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

fn container(i: usize) -> Value {
    json!({
        "id": format!("{:064x}", i * 7919 + 12345),
        "names": [format!("/stack_web_{i}")],
        "image": format!("ghcr.io/example/app-{}:1.{}.0", i % 7, i % 13),
        "imageId": format!("sha256:{:064x}", i * 104_729),
        "command": "docker-entrypoint.sh node server.js --port 8080",
        "created": 1_714_560_000 + i as u64 * 3600,
        "state": if i.is_multiple_of(5) { "exited" } else { "running" },
        "status": if i.is_multiple_of(5) { "Exited (0) 2 hours ago".to_owned() } else { format!("Up {i} hours (healthy)") },
        "ports": [{"IP": "0.0.0.0", "PrivatePort": 80, "PublicPort": 8000 + i, "Type": "tcp"}],
        "labels": {
            "com.docker.compose.project": "stack",
            "com.docker.compose.service": format!("web_{i}"),
            "org.opencontainers.image.source": "https://github.com/example/app"
        },
        "sizeRw": 1_500_000 + i as u64 * 10_000,
        "sizeRootFs": 250_000_000 + i as u64,
        "hostConfig": {"networkMode": "stack_default"},
        "networkSettings": {"networks": {"stack_default": {"ipAddress": format!("172.18.0.{}", i + 2)}}},
        "mounts": [{"type": "volume", "name": "stack_data", "destination": "/data"}],
    })
}

fn page() -> Value {
    json!({
        "items": (0..50).map(container).collect::<Vec<_>>(),
        "pagination": {"totalItems": 137, "totalPages": 3, "currentPage": 1, "itemsPerPage": 50, "grandTotalItems": 137},
        "counts": {"runningContainers": 110, "stoppedContainers": 27, "totalContainers": 137},
    })
}

fn bench(c: &mut Criterion) {
    let value = page();
    let ctx = RenderContext {
        title: "Containers",
        full_item_action: Some("`container.get`"),
        ..Default::default()
    };
    c.bench_function("render_container_page_50x15", |b| {
        b.iter(|| render_value(black_box(&ctx), black_box(&value)))
    });
    // What the text of a result costs before rendering: the redacted view of the same page
    // (borrowed when nothing is secret), and the same with a secret on every row (copied).
    c.bench_function("redact_container_page_50x15", |b| {
        b.iter(|| {
            matches!(
                arcane_redact::redacted_view(black_box(&value), "container"),
                std::borrow::Cow::Owned(_)
            )
        })
    });
    let mut with_secrets = value.clone();
    for item in with_secrets["items"].as_array_mut().into_iter().flatten() {
        item["env"] = json!(["POSTGRES_PASSWORD=s3cr3t", "PATH=/usr/bin"]);
    }
    c.bench_function("redact_container_page_50x15_with_secrets", |b| {
        b.iter(|| {
            matches!(
                arcane_redact::redacted_view(black_box(&with_secrets), "container"),
                std::borrow::Cow::Owned(_)
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
