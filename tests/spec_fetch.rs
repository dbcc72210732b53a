//! The spec fetched from Arcane (`GET {ARCANE_URL}/api/openapi.json`), cached on disk, and the
//! stale cache used when Arcane cannot be reached.

use crate::fixtures;

use arcane_mcp::load::spec::SpecSource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetched_then_cached_then_served_from_the_cache() {
    arcane_engine::ensure_crypto_provider();
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(fixtures::spec_v1()))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache").join("openapi.json");
    let source = SpecSource {
        arcane_url: Some(sim.base_url()),
        cache_path: Some(cache.clone()),
        ..Default::default()
    };
    // The fetch blocks (it runs its own runtime), so it runs off the async workers.
    let load =
        |s: SpecSource| async move { tokio::task::spawn_blocking(move || s.load()).await.unwrap() };
    let doc = load(source.clone()).await.unwrap();
    assert_eq!(doc.version(), "1.11.2");
    assert!(doc.origin.ends_with("/api/openapi.json"));
    assert!(
        !cache.exists(),
        "a document is cached only once a catalog was built from it"
    );
    let sources = arcane_mcp::load::sources::Sources {
        spec: source.clone(),
        ..Default::default()
    };
    let catalog = tokio::task::spawn_blocking(move || sources.build())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(catalog.arcane_version, "1.11.2");
    assert!(cache.is_file(), "the fetched document is cached");
    sim.shutdown().await;

    // Arcane is gone: the cached copy serves.
    let doc = load(source.clone()).await.unwrap();
    assert_eq!(doc.version(), "1.11.2");

    // Another Arcane URL (a mistyped port) is not served the cached copy of this one, and the
    // error says why; the default cache file is one per URL.
    let elsewhere = SpecSource {
        arcane_url: Some("http://127.0.0.1:9".into()),
        ..source.clone()
    };
    let msg = format!("{:#}", load(elsewhere).await.unwrap_err());
    assert!(
        msg.contains("fetched from another Arcane URL") && msg.contains("ARCANE_URL"),
        "{msg}"
    );
    let a = arcane_mcp::load::spec::default_cache_file(dir.path(), "http://arcane:3552");
    let b = arcane_mcp::load::spec::default_cache_file(dir.path(), "http://arcane:3553");
    assert_ne!(a, b);

    // No cache either: a clear error naming what to set.
    let no_cache = SpecSource {
        cache_path: Some(dir.path().join("absent.json")),
        ..source
    };
    let err = load(no_cache).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("ARCANE_URL") && msg.contains("--spec"),
        "{msg}"
    );
}

/// `catalog --spec NEW --diff live` compares with the spec the Arcane at ARCANE_URL serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_preview_against_the_live_arcane() {
    arcane_engine::ensure_crypto_provider();
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(fixtures::spec_v1()))
        .await
        .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .env("ARCANE_URL", sim.base_url())
        .args(["catalog", "--json", "--diff", "live", "--spec"])
        .arg(fixtures::spec_v2())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["oldVersion"], "1.11.2");
    assert_eq!(v["newVersion"], "2.8.0");
    assert!(
        v["oldSpec"]
            .as_str()
            .unwrap()
            .ends_with("/api/openapi.json"),
        "{}",
        v["oldSpec"]
    );
    let n = |k: &str| v[k].as_array().unwrap().len() as u64;
    assert_eq!(
        v["unchanged"].as_u64().unwrap() + n("renamed") + n("added"),
        v["newActions"].as_u64().unwrap()
    );
    assert!(n("removed") > 0 && n("added") > n("removed"));
    sim.shutdown().await;

    // Without ARCANE_URL, `live` says what to set.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .args(["catalog", "--diff", "live", "--spec"])
        .arg(fixtures::spec_v2())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("set ARCANE_URL"));
}

/// A one-route HTTPS server (a thread per connection, rustls' server side): every request is
/// answered with `body` as JSON. Its certificate (`tests/fixtures/tls/server.pem`, for
/// `127.0.0.1` and `localhost`) is signed by `tests/fixtures/tls/ca.pem`, which no trust store
/// holds. Returns the base URL.
fn https_server(body: String) -> String {
    use std::io::{Read, Write};
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    arcane_engine::ensure_crypto_provider();
    let tls_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(tls_dir.join("server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(tls_dir.join("server.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            let config = config.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let timeout = Some(std::time::Duration::from_secs(10));
                let _ = tcp.set_read_timeout(timeout);
                let _ = tcp.set_write_timeout(timeout);
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                // A client that rejects the certificate ends here (the handshake fails).
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(head.as_bytes());
                let _ = tls.write_all(body.as_bytes());
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    format!("https://127.0.0.1:{port}")
}

/// The spec fetch uses the server's one TLS configuration: a private CA given with `--ca-cert`
/// is trusted, `--insecure-skip-verify` accepts any certificate, and without either the
/// unknown CA is refused. The same configuration serves the executor's HTTP client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_over_https_trusts_the_configured_ca() {
    let spec: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(fixtures::spec_v1()).unwrap()).unwrap();
    let base = https_server(spec.to_string());
    let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls/ca.pem");
    let load = |tls: Option<std::sync::Arc<rustls::ClientConfig>>| {
        let source = SpecSource {
            arcane_url: Some(base.clone()),
            tls,
            ..Default::default()
        };
        async move {
            tokio::task::spawn_blocking(move || source.load())
                .await
                .unwrap()
        }
    };

    let with_ca = arcane_engine::tls_config(Some(&ca), false).unwrap();
    let doc = load(Some(with_ca.clone())).await.unwrap();
    assert_eq!(doc.version(), "1.11.2");
    assert!(
        doc.origin.starts_with("https://127.0.0.1:"),
        "{}",
        doc.origin
    );

    let insecure = arcane_engine::tls_config(None, true).unwrap();
    assert_eq!(load(Some(insecure)).await.unwrap().version(), "1.11.2");

    // Neither: the platform's trust store does not know the test CA.
    let err = load(None).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("cannot fetch the OpenAPI document"), "{msg}");
    let err = load(Some(arcane_engine::tls_config(None, false).unwrap()))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("cannot fetch"), "{err:#}");

    // The executor's HTTP client is built on the same configuration.
    let client = arcane_engine::client_builder(&with_ca).build().unwrap();
    let resp = client
        .get(format!("{base}/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["info"]["version"], "1.11.2");
}
