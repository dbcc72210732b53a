//! Downloads (docs/arcane-wire.md#downloads): volume backups, the edge mTLS CA, an
//! environment's mTLS bundle and files, workspace files; image export is in `images`.

use axum::response::Response;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::streams::download;
use crate::synth::hex_id;

const DEMO_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUYXJjYW5lLXNpbS1kZW1vLWNhMAoGCCqGSM49BAMCMB8x\nHTAbBgNVBAMMFGFyY2FuZS1zaW0gZGVtbyBDQSAwHhcNMjUwNjAxMTIwMDAwWhcN\nMzUwNjAxMTIwMDAwWjAfMR0wGwYDVQQDDBRhcmNhbmUtc2ltIGRlbW8gQ0EgMFkw\n-----END CERTIFICATE-----\n";
const EMPTY_GZIP: [u8; 20] = [
    0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

fn mtls_base_name(name: &str, env_id: &str) -> String {
    let base: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let base = base.trim_matches('-');
    format!(
        "{}-{env_id}",
        if base.is_empty() { "environment" } else { base }
    )
}

/// A volume backup's archive, or Arcane's 500 when the backup ID names no archive: Arcane copies
/// `<backupId>.tar.gz` out of the backups volume and fails with Docker's error when it is not
/// there (docs/arcane-wire.md#downloads).
fn backup(ctx: &Ctx) -> Response {
    let id = ctx.param("backupId");
    let trimmed = id.trim();
    if trimmed.is_empty() || trimmed == "." || trimmed.starts_with("..") {
        return ctx.problem(500, &format!("invalid backup id: invalid path: {id}"));
    }
    let prefix = format!("/environments/{}/volumes/", ctx.env_id());
    let exists = ctx.sh.state().collections.items.iter().any(|(key, items)| {
        key.starts_with(&prefix)
            && key.ends_with("/backups")
            && items
                .iter()
                .any(|b| b.get("id").and_then(Value::as_str) == Some(id))
    });
    if !exists {
        return ctx.problem(
            500,
            &format!(
                "failed to download: Error response from daemon: Could not find the file \
                 /volume/{trimmed}.tar.gz in container {}",
                &hex_id("arcane-backup-helper")[..12]
            ),
        );
    }
    download(
        ctx,
        "application/x-gzip",
        &format!("attachment; filename={id}.tar.gz"),
        EMPTY_GZIP.to_vec(),
    )
}

pub(super) fn answer(ctx: &Ctx, shape: &str) -> Response {
    match shape {
        "/environments/{}/images/{}/export" => super::images::export(ctx),
        "/environments/{}/volumes/backups/{}/download" => backup(ctx),
        "/edge-mtls/ca" => download(
            ctx,
            "application/x-pem-file",
            "attachment; filename=\"ca.crt\"",
            DEMO_PEM.as_bytes().to_vec(),
        ),
        "/environments/{}/deployment/mtls/bundle" | "/environments/{}/deployment/mtls/{}" => {
            let st = ctx.sh.state();
            let Some(env) = st
                .environments
                .iter()
                .find(|e| e.id == ctx.env_id())
                .cloned()
            else {
                drop(st);
                return ctx.problem(404, "Environment not found");
            };
            drop(st);
            let base = mtls_base_name(&env.name, &env.id);
            if shape.ends_with("/bundle") {
                let mut zip = vec![0x50, 0x4b, 0x05, 0x06];
                zip.extend_from_slice(&[0u8; 18]);
                return download(
                    ctx,
                    "application/zip",
                    &format!("attachment; filename=\"{base}-mtls.zip\""),
                    zip,
                );
            }
            let file = ctx.param("fileName");
            let name = match file {
                "agent.crt" => format!("{base}.pem"),
                "agent.key" => format!("{base}.key"),
                "ca.crt" => "ca.crt".to_string(),
                _ => return ctx.problem(404, "Requested mTLS asset was not found"),
            };
            let body = if file == "agent.key" {
                "-----BEGIN PRIVATE KEY-----\nYXJjYW5lLXNpbSBkZW1vIGtleSwgbm90IGEgcmVhbCBrZXk=\n-----END PRIVATE KEY-----\n".to_string()
            } else {
                DEMO_PEM.to_string()
            };
            download(
                ctx,
                "application/x-pem-file",
                &format!("attachment; filename=\"{name}\""),
                body.into_bytes(),
            )
        }
        _ => {
            let rel = ctx
                .q("relativePath")
                .or_else(|| ctx.q("path"))
                .unwrap_or("file.txt");
            let base = rel
                .rsplit('/')
                .next()
                .filter(|b| !b.is_empty())
                .unwrap_or("file.txt");
            download(
                ctx,
                "application/octet-stream",
                &format!("attachment; filename={base}"),
                format!("contents of {rel}\n").into_bytes(),
            )
        }
    }
}
