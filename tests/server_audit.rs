//! The audit log of mutating calls (`--audit-log`, docs/security.md): secrets that arrive as
//! JSON text are masked, and every target is recorded as given. (The token audit of tool
//! definitions is a developer tool's: `crates/token-audit`.)

use crate::server_support;

/// Secrets planted in the calls below; none may reach an audit line.
const AUDIT_SECRETS: &[&str] = &[
    "envpw-SECRET1",
    "composepw-SECRET2",
    "specpw-SECRET3",
    "rawtok-SECRET4",
];

/// `project.create`'s raw `project` parameter: JSON text carrying a `.env` file and a compose
/// file with secrets.
fn raw_project(name: &str) -> String {
    serde_json::json!({
        "name": name,
        "composeContent": "services:\n  db:\n    image: postgres:16-alpine\n    environment:\n      - DB_PASSWORD=composepw-SECRET2\n      - LOG_LEVEL=info\n",
        "envContent": "DB_PASSWORD=envpw-SECRET1\nMODE=prod\n",
    })
    .to_string()
}

/// Runs `calls` (tool, arguments) through an in-process server with an audit log and `args`;
/// returns the audit lines.
async fn audited(args: &[&str], calls: Vec<(&str, serde_json::Value)>) -> Vec<serde_json::Value> {
    let sim = server_support::Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut all = vec!["--audit-log", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let client = server_support::spawn(&sim.base(), sim.sim.api_key(), &all).await;
    for (tool, a) in calls {
        server_support::call(&client, tool, a).await;
    }
    client.cancel().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

/// A secret inside JSON text — the flat profile's JSON-text parameters, `project.create`'s raw
/// `project` text — is masked in the audit line as in a preview: the text is read as JSON
/// first. Before, the text was masked as text and `DB_PASSWORD=…` after a quote stayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_lines_hold_no_secret_of_json_text_parameters() {
    use serde_json::json;
    let spec = json!({"Name": "api", "TaskTemplate": {"ContainerSpec": {
        "Image": "nginx:1.27",
        "Env": ["DB_PASSWORD=specpw-SECRET3", "LOG_LEVEL=info"],
        "Args": ["--token", "rawtok-SECRET4"],
    }}});
    // The standard profile: the raw `project` text, and the fields form.
    let standard = audited(
        &[],
        vec![
            (
                "arcane_execute_action",
                json!({"action": "project.create", "params": {"project": raw_project("audit-raw")}}),
            ),
            (
                "arcane_execute_action",
                json!({"action": "swarm_service.create", "params": {"spec": spec.to_string()}}),
            ),
        ],
    )
    .await;
    // The flat profile: every parameter object is JSON text, on the dynamic and the individual
    // surface.
    let params_text = json!({"project": raw_project("audit-flat")}).to_string();
    let flat = audited(
        &["--client-profile", "flat"],
        vec![
            (
                "arcane_execute_action",
                json!({"action": "project.create", "params": params_text}),
            ),
            (
                "arcane_execute_action",
                json!({"action": "swarm_service.create",
                       "params": json!({"spec": spec.to_string()}).to_string()}),
            ),
        ],
    )
    .await;
    let individual = audited(
        &["--client-profile", "flat", "--tool-surface", "individual"],
        vec![(
            "arcane_swarm_service_create",
            json!({"spec": spec.to_string()}),
        )],
    )
    .await;
    for (profile, lines, actions) in [
        (
            "standard",
            &standard,
            &["project.create", "swarm_service.create"][..],
        ),
        (
            "flat",
            &flat,
            &["project.create", "swarm_service.create"][..],
        ),
        (
            "flat individual",
            &individual,
            &["swarm_service.create"][..],
        ),
    ] {
        let seen: Vec<&str> = lines
            .iter()
            .map(|l| l["action"].as_str().unwrap())
            .collect();
        assert_eq!(seen, actions, "{profile}: {lines:?}");
        for line in lines.iter() {
            let text = line.to_string();
            let leaked: Vec<&&str> = AUDIT_SECRETS
                .iter()
                .filter(|s| text.contains(**s))
                .collect();
            assert!(leaked.is_empty(), "{profile}: {leaked:?} in {text}");
            assert!(text.contains(arcane_redact::MASK), "{profile}: {text}");
            // What is not secret stays readable.
            assert!(text.contains("LOG_LEVEL=info"), "{profile}: {text}");
        }
    }
    // The decoded parameters are what the line shows: the project's name, its mode.
    let project = &standard[0]["params"]["project"];
    assert_eq!(project["name"], "audit-raw", "{project}");
    assert_eq!(project["envContent"], "DB_PASSWORD=********\nMODE=prod\n");
}

/// Found by an outside attack (docs/security.md): `volume.delete` of a volume whose name looks like a credential
/// wrote `"targets":{}` and `"params":{"volumeName":"********"}` — no record of what was
/// deleted. The targets are the path parameters, recorded as given; secrets elsewhere stay
/// masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_lines_name_every_target_as_given() {
    use serde_json::json;
    let lines = audited(
        &[],
        vec![
            (
                "arcane_execute_action",
                json!({"action": "volume.delete", "confirm": true,
                       "params": {"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01"}}),
            ),
            (
                "arcane_execute_action",
                json!({"action": "network.delete", "confirm": true,
                       "params": {"networkId": "AKIAIOSFODNN7EXAMPLE"}}),
            ),
            (
                "arcane_execute_action",
                json!({"action": "project.create",
                       "params": {"project": raw_project("audit-target")}}),
            ),
        ],
    )
    .await;
    let seen: Vec<&str> = lines
        .iter()
        .map(|l| l["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        seen,
        ["volume.delete", "network.delete", "project.create"],
        "{lines:?}"
    );
    assert_eq!(
        lines[0]["targets"],
        json!({"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01"}),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[0]["params"]["volumeName"],
        "sk-proj-abcdefghijklmnopqrstuvwxyz01"
    );
    assert_eq!(
        lines[1]["targets"],
        json!({"networkId": "AKIAIOSFODNN7EXAMPLE"}),
        "{}",
        lines[1]
    );
    // No path parameter, no target; the secrets of its body stay masked.
    assert_eq!(lines[2]["targets"], json!({}), "{}", lines[2]);
    let text = lines[2].to_string();
    for secret in AUDIT_SECRETS {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}
