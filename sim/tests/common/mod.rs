//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use arcane_sim::{RunningSim, SimConfig};
use serde_json::Value;

/// `../shared/arcane` beside the repository (overridable with `ARCANE_SHARED_DIR`).
pub fn shared_dir() -> PathBuf {
    if let Ok(d) = std::env::var("ARCANE_SHARED_DIR") {
        return PathBuf::from(d);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/arcane")
}

pub fn spec_v2() -> PathBuf {
    shared_dir().join("openapi-v2.8.0.json")
}

pub fn spec_v1() -> PathBuf {
    shared_dir().join("openapi-v1.11.2.yaml")
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("client")
}

pub struct Sim {
    pub sim: RunningSim,
    pub http: reqwest::Client,
}

pub async fn start() -> Sim {
    start_with(SimConfig::new(spec_v2())).await
}

pub async fn start_with(config: SimConfig) -> Sim {
    let sim = arcane_sim::start(config).await.expect("simulator starts");
    Sim {
        sim,
        http: client(),
    }
}

impl Sim {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.sim.base_url(), path)
    }

    /// An authenticated request to `/api{path}`.
    pub fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(&format!("/api{path}")))
            .header("X-API-Key", self.sim.api_key())
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let r = self
            .api(reqwest::Method::GET, path)
            .send()
            .await
            .expect("request");
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post_json(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .api(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .expect("request");
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn hook_get(&self, path: &str) -> Value {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Switches the imitated Arcane (`"2.8"` or `"main"`) through `/__sim/config`.
    pub async fn set_version(&self, version: &str) {
        let (st, b) = self
            .hook_post(
                "/__sim/config",
                serde_json::json!({"arcaneVersion": version}),
            )
            .await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["arcaneVersion"], version);
    }

    pub async fn hook_post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }
}
