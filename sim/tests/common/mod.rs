//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use arcane_sim::hooks::HooksClient;
use arcane_sim::{ArcaneVersion, RunningSim, SimConfig};
use serde_json::Value;

/// The finder of Arcane's documents (`third_party/arcane`, or `$ARCANE_SHARED_DIR`), shared with
/// the other crates' tests.
pub use arcane_test_support::{spec_v1, spec_v2};

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("client")
}

pub struct Sim {
    pub sim: RunningSim,
    pub http: reqwest::Client,
    /// The simulator's test hooks (`/__sim/…`).
    pub hooks: HooksClient,
}

pub async fn start() -> Sim {
    start_with(SimConfig::new(spec_v2())).await
}

pub async fn start_with(config: SimConfig) -> Sim {
    let sim = arcane_sim::start(config).await.expect("simulator starts");
    let http = client();
    let hooks = HooksClient::with_client(http.clone(), sim.base_url());
    Sim { sim, http, hooks }
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

    /// Switches the imitated Arcane (`"2.8"` or `"main"`) through the config hook.
    pub async fn set_version(&self, version: &str) {
        let version: ArcaneVersion = version.parse().expect("a known Arcane version");
        self.hooks
            .set_version(version)
            .await
            .expect("version switched");
        let config = self.hooks.config().await.expect("config hook");
        assert_eq!(config["arcaneVersion"], version.as_str());
    }
}
