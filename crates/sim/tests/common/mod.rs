//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use arcane_sim::hooks::HooksClient;
use arcane_sim::{ArcaneVersion, RunningSim, SimConfig};

mod client;

pub use client::{Reply, TestClient};

/// The finder of Arcane's documents (`third_party/arcane`, or `$ARCANE_SHARED_DIR`), shared with
/// the other crates' tests.
pub use arcane_test_support::{spec_v1, spec_v2};

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("client")
}

/// A simulator started for one test: `s.get(path)`, `s.post(path)`… call its `/api` with its
/// key ([`TestClient`], through `Deref`); `s.hooks` drives its test hooks.
pub struct Sim {
    pub sim: RunningSim,
    pub http: reqwest::Client,
    /// The simulator's `/api`, with its key.
    pub api: TestClient,
    /// The simulator's test hooks (`/__sim/…`).
    pub hooks: HooksClient,
}

impl std::ops::Deref for Sim {
    type Target = TestClient;
    fn deref(&self) -> &TestClient {
        &self.api
    }
}

pub async fn start() -> Sim {
    start_with(SimConfig::new(spec_v2())).await
}

pub async fn start_with(config: SimConfig) -> Sim {
    let sim = arcane_sim::start(config).await.expect("simulator starts");
    let http = client();
    let hooks = HooksClient::with_client(http.clone(), sim.base_url());
    let api = TestClient::new(http.clone(), sim.base_url(), sim.api_key());
    Sim {
        sim,
        http,
        api,
        hooks,
    }
}

impl Sim {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.sim.base_url(), path)
    }

    /// Queues the fault(s) `spec` (one object or an array, as `POST /__sim/faults` takes them);
    /// the number added.
    pub async fn fault(&self, spec: serde_json::Value) -> u64 {
        self.hooks.add_faults(&spec).await.expect("fault accepted")
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
