//! The chaos suite's short run (docs/measurements.md#chaos): `examples/chaos/suite.rs`, the
//! same code and assertions as the long run, for 20 s with 6 HTTP and 2 stdio sessions. The
//! only clock in it is the hang guard of each call.

#[path = "../examples/chaos/suite.rs"]
#[allow(dead_code)]
mod suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_under_faults_and_broken_reloads_keep_every_promise() {
    let cfg = suite::Config::short(
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_arcane-mcp")),
        crate::fixtures::spec_v2(),
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    );
    let report = suite::run(cfg).await.expect("the chaos suite runs");
    let summary = report.summary();
    println!("{summary}");
    assert!(report.calls() > 0, "{summary}");
    assert!(report.violations().is_empty(), "{summary}");
}
