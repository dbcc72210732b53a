//! Search quality over the real catalog (Arcane 2.8.0's OpenAPI document + built-in layers).
//!
//! The query list below was written, with its expected IDs, before the ranking was tuned: it
//! describes what a user means, not what the ranking happens to return. The larger evaluation
//! set is `tests/search_eval.yaml` (see `docs/search.md`). The spec is read from
//! the repository's `third_party/arcane`, or from `ARCANE_SHARED_DIR`.

use std::path::PathBuf;
use std::sync::OnceLock;

use arcane_catalog::Policy;
use arcane_catalog::{Action, Catalog};
use arcane_catalog::{SearchIndex, Weights, is_weak, is_weak_with};
use arcane_mcp::load::snapshot::Snapshot;
use arcane_mcp::load::sources::Sources;
use arcane_mcp::load::spec::SpecSource;
use arcane_mcp::surface::Surface;

use crate::fixtures::arcane_dir as shared_dir;

/// (plain query, the action a user means).
const QUERIES: &[(&str, &str)] = &[
    ("restart container", "container.restart"),
    ("pull image", "image.pull"),
    ("scale swarm service", "swarm_service.scale"),
    ("list volumes", "volume.list"),
    ("deploy project", "project.up"),
    ("who am i", "auth.me"),
    ("container logs", "container.logs"),
    ("stop container", "container.stop"),
    ("start container", "container.start"),
    ("remove image", "image.delete"),
    ("prune images", "image.prune"),
    ("create network", "network.create"),
    ("delete volume", "volume.delete"),
    ("project compose file", "project.compose"),
    ("check image updates", "image_update.check"),
    ("scan image vulnerabilities", "vulnerability.scan"),
    ("list environments", "environment.list"),
    ("test environment connection", "environment.test"),
    ("swarm nodes", "swarm_node.list"),
    ("rollback swarm service", "swarm_service.rollback"),
    ("redeploy project", "project.redeploy"),
    ("down project", "project.down"),
    ("system prune", "system.prune"),
    ("docker info", "system.docker_info"),
    ("list users", "user.list"),
    ("create api key", "api_key.create"),
    ("gitops sync", "gitops_sync.list"),
    ("container registries", "container_registry.list"),
    ("templates", "template.list"),
    ("volume backup", "volume_backup.list"),
    ("restore volume backup", "volume_backup.restore"),
    ("exec command in container", "container.exec"),
    ("container stats", "container.stats"),
    ("host resource usage", "system.stats"),
    ("project runtime status", "project.runtime"),
    ("kill container", "container.kill"),
    ("pause container", "container.pause"),
    ("unpause container", "container.unpause"),
    ("network topology", "network.topology"),
    ("list images", "image.list"),
    ("image history", "image.history"),
    ("project updates", "project.updates"),
    ("containers", "container.list"),
    ("create user", "user.create"),
    ("delete project", "project.destroy"),
    ("list swarm stacks", "swarm_stack.list"),
    ("deploy stack", "swarm_stack.create"),
    ("swarm secrets", "swarm_secret.list"),
    ("rotate join token", "swarm.rotate_join_tokens"),
    ("change password", "auth.password"),
    ("logout", "auth.logout"),
    ("list webhooks", "webhook.list"),
    ("tag image", "image.tag"),
    ("build image", "image.build"),
    ("run job now", "job.run"),
    ("check for upgrade", "system.upgrade_check"),
    ("recent events", "event.list"),
    ("ignore vulnerability", "vulnerability.ignore"),
    ("swarm service logs", "swarm_service.logs"),
    ("project logs", "project.logs"),
    ("remove container", "container.delete"),
    ("rm container", "container.delete"),
    ("docker ps", "container.list"),
    ("export image", "image.export"),
    ("join swarm", "swarm.join"),
    ("docker compose up", "project.up"),
    ("global variables", "variable.list"),
    ("update settings", "settings.update"),
    ("api keys", "api_key.list"),
    ("inspect container", "container.get"),
    ("start stopped containers", "container.start_stopped"),
    ("stop all containers", "container.stop_all"),
    ("network list", "network.list"),
    ("health check", "health.get"),
    // Typos (one edit) still find the action.
    ("restrat container", "container.restart"),
    ("list netwroks", "network.list"),
    ("prune volumse", "volume.prune"),
    // Words typed without their vowels are the known word with those consonants.
    ("rstrt cntnr", "container.restart"),
    ("lst ntwrks", "network.list"),
    ("swrm srvcs", "swarm_service.list"),
    ("dlt vlm bckp", "volume_backup.delete"),
    ("shw prjct lgs", "project.logs"),
];

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let sources = Sources::of_spec(shared_dir().join("openapi-v2.8.0.json"));
        sources.build().expect("the catalog builds")
    })
}

fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        SearchIndex::build_with(catalog(), weights_to_measure()).expect("the index builds")
    })
}

/// The measured weights, or others to measure: `SEARCH_WEIGHTS="semantic=0.5,rrf_k=60"` sets
/// the semantic side's knobs for one run of the harness (docs/search.md, "Semantic retrieval").
fn weights_to_measure() -> Weights {
    Weights::from_env()
}

fn all(_: &Action) -> bool {
    true
}

fn ids(query: &str, limit: usize) -> Vec<String> {
    index()
        .search(catalog(), query, limit, &all)
        .into_iter()
        .map(|h| h.id)
        .collect()
}

#[test]
fn expected_ids_exist() {
    let missing: Vec<&str> = QUERIES
        .iter()
        .map(|(_, id)| *id)
        .filter(|id| catalog().get(id).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "expected IDs not in the catalog: {missing:?}"
    );
    assert!(QUERIES.len() >= 40);
}

#[test]
fn quality() {
    let mut first = 0;
    let mut top3 = 0;
    let mut report = String::new();
    for (query, want) in QUERIES {
        let got = ids(query, 5);
        match got.iter().position(|id| id == want) {
            Some(0) => {
                first += 1;
                top3 += 1;
            }
            Some(p) if p < 3 => {
                top3 += 1;
                report.push_str(&format!(
                    "  #{} {query:?} → want {want}, got {got:?}\n",
                    p + 1
                ));
            }
            _ => report.push_str(&format!("  MISS {query:?} → want {want}, got {got:?}\n")),
        }
    }
    let n = QUERIES.len();
    let first_pct = 100.0 * first as f64 / n as f64;
    println!("search quality: first {first}/{n} ({first_pct:.1}%), top-3 {top3}/{n}\n{report}");
    assert!(
        first_pct >= 90.0,
        "first-hit rate {first_pct:.1}% < 90%:\n{report}"
    );
    assert_eq!(
        top3, n,
        "not all queries have their action in the top 3:\n{report}"
    );
}

#[test]
fn verb_beats_noun() {
    let got = ids("restart container", 10);
    let restart = got.iter().position(|id| id == "container.restart");
    let get = got.iter().position(|id| id == "container.get");
    assert!(restart.is_some(), "{got:?}");
    assert!(get.is_none() || restart < get, "{got:?}");
}

#[test]
fn limit_is_honoured() {
    for limit in [0, 1, 3, 10, 50] {
        let got = ids("container", limit);
        assert!(got.len() <= limit, "limit {limit}: {got:?}");
    }
    assert_eq!(ids("container", 3).len(), 3);
    assert!(ids("container", 1000).len() <= catalog().actions.len());
}

#[test]
fn hits_are_sorted_and_unique() {
    let hits = index().search(catalog(), "update project", 50, &all);
    assert!(!hits.is_empty());
    for w in hits.windows(2) {
        assert!(w[0].score >= w[1].score, "{} < {}", w[0].score, w[1].score);
    }
    let mut seen = std::collections::HashSet::new();
    assert!(hits.iter().all(|h| seen.insert(h.id.clone())));
}

#[test]
fn allow_filter_is_honoured() {
    let read_only = |a: &Action| !a.safety.mutating;
    let hits = index().search(catalog(), "restart container", 20, &read_only);
    assert!(
        hits.iter()
            .all(|h| !catalog().get(&h.id).unwrap().safety.mutating)
    );
    assert!(!hits.iter().any(|h| h.id == "container.restart"));

    let no_containers = |a: &Action| a.domain != "container";
    let hits = index().search(catalog(), "containers", 20, &no_containers);
    assert!(
        hits.iter().all(|h| !h.id.starts_with("container.")),
        "{hits:?}"
    );

    let nothing = |_: &Action| false;
    assert!(
        index()
            .search(catalog(), "container", 10, &nothing)
            .is_empty()
    );
}

#[test]
fn blank_queries_return_nothing() {
    for q in ["", " ", "\t\n", "   \u{3000} "] {
        assert!(ids(q, 10).is_empty(), "{q:?}");
    }
}

#[test]
fn hostile_queries_never_fail() {
    let long = "container ".repeat(26);
    let long_unbroken = "x".repeat(256);
    let odd = [
        "\"",
        "\"\"",
        "\"restart container",
        ":",
        "id:container.restart",
        "title:restart",
        "(",
        ")",
        "(restart",
        "*",
        "container*",
        "?",
        "~",
        "restart~2",
        "^",
        "boost^10",
        "AND OR NOT",
        "AND",
        "NOT container",
        "+container -image",
        "[a TO z]",
        "{}",
        "\\",
        "/regex/",
        "&& || !",
        "🐳 container 🚀",
        "🐳",
        "conteneur redémarrer",
        "容器 重启",
        "ﬁle",
        "İstanbul",
        "\u{0}",
        "\u{200b}",
        long.as_str(),
        long_unbroken.as_str(),
    ];
    for q in odd {
        let hits = index().search(catalog(), q, 10, &all);
        assert!(hits.len() <= 10, "{q:?}");
    }
    // Syntax characters do not change what plain words find.
    assert_eq!(
        ids("\"restart\" (container)", 1),
        vec!["container.restart".to_string()]
    );
}

#[test]
fn index_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SearchIndex>();
}

/// One query of the evaluation set (`tests/search_eval.yaml`).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalQuery {
    q: String,
    want: Vec<String>,
    kind: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalSet {
    queries: Vec<EvalQuery>,
}

fn eval_set() -> Vec<EvalQuery> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/search_eval.yaml");
    let text = std::fs::read_to_string(&path).expect("tests/search_eval.yaml is readable");
    let set: EvalSet = yaml_serde::from_str(&text).expect("tests/search_eval.yaml parses");
    set.queries
}

/// Ranks of a set of queries: top-1/3/10 counts, reciprocal-rank sum, count.
#[derive(Debug, Default, Clone, Copy)]
struct Score {
    n: usize,
    top1: usize,
    top3: usize,
    top10: usize,
    rr: f64,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            self.top1 += usize::from(r == 0);
            self.top3 += usize::from(r < 3);
            self.top10 += usize::from(r < 10);
            self.rr += 1.0 / (r + 1) as f64;
        }
    }

    fn pct(&self, k: usize) -> f64 {
        100.0 * k as f64 / self.n.max(1) as f64
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name:<10} n={:<4} top-1 {:5.1}%  top-3 {:5.1}%  top-10 {:5.1}%  MRR {:.3}",
            self.n,
            self.pct(self.top1),
            self.pct(self.top3),
            self.pct(self.top10),
            self.rr / self.n.max(1) as f64
        )
    }
}

#[test]
fn eval_set_is_well_formed() {
    let set = eval_set();
    assert!(set.len() >= 300, "{} queries", set.len());
    let kinds = [
        "plain", "sentence", "intent", "synonym", "typo", "long", "short",
    ];
    let mut seen = std::collections::HashSet::new();
    for e in &set {
        assert!(!e.want.is_empty(), "{:?} accepts no action", e.q);
        for id in &e.want {
            assert!(
                catalog().get(id).is_some(),
                "{:?}: {id} is not an action",
                e.q
            );
        }
        assert!(
            kinds.contains(&e.kind.as_str()),
            "{:?}: kind {}",
            e.q,
            e.kind
        );
        assert!(seen.insert(e.q.to_lowercase()), "{:?} is listed twice", e.q);
        if e.kind == "long" {
            assert!(
                e.q.split_whitespace().count() >= 20,
                "{:?} is not long",
                e.q
            );
        }
    }
}

/// The evaluation: prints top-1/3/10 and MRR for the whole set, each half (even positions tune,
/// odd positions are held out) and each kind, lists every query whose action is not first, and
/// asserts floors on the whole set.
#[test]
fn eval_set_quality() {
    let set = eval_set();
    let mut all = Score::default();
    let mut halves = [Score::default(); 2];
    let mut kinds: std::collections::BTreeMap<&str, Score> = Default::default();
    let mut misses = String::new();
    for (i, e) in set.iter().enumerate() {
        let got = ids(&e.q, 10);
        let rank = got.iter().position(|id| e.want.contains(id));
        all.add(rank);
        halves[i % 2].add(rank);
        kinds.entry(e.kind.as_str()).or_default().add(rank);
        if rank != Some(0) {
            let half = if i % 2 == 0 { "tune" } else { "held" };
            let rank = rank.map_or("miss".to_string(), |r| format!("#{}", r + 1));
            misses.push_str(&format!(
                "  {half} {rank:>4} {:?} want {:?} got {:?}\n",
                e.q,
                e.want,
                &got[..got.len().min(3)]
            ));
        }
    }
    let mut report = String::new();
    report.push_str(&all.line("all"));
    report.push('\n');
    report.push_str(&halves[0].line("tune"));
    report.push('\n');
    report.push_str(&halves[1].line("held-out"));
    report.push('\n');
    for (kind, s) in &kinds {
        report.push_str(&s.line(kind));
        report.push('\n');
    }
    println!(
        "search evaluation ({} queries)\n{report}{misses}",
        set.len()
    );
    let intents = kinds.get("intent").copied().unwrap_or_default();
    // The goals (docs/search.md) are top-1 90%, top-3 98%, top-10 99%, intents top-3 90%.
    // These floors are what the hybrid ranking reaches (rounded down), on the whole set and on
    // the held-out half, so a change that loses ground fails. The semantic side traded 1.4
    // points of top-1 and 0.9 of top-3 here (a set written by the vocabulary's authors) for
    // 6 points on the independent set A (docs/search.md, "Semantic retrieval"); the asks won
    // it back and more (docs/search.md, "Asks"), and the trained table more again (96.7% /
    // 100% / 100%; this set is not among its training data: "The trained table").
    let held = halves[1];
    let floors = [
        ("top-1", all.pct(all.top1), 96.0),
        ("top-3", all.pct(all.top3), 99.5),
        ("top-10", all.pct(all.top10), 99.5),
        ("intents top-3", intents.pct(intents.top3), 98.0),
        ("held-out top-1", held.pct(held.top1), 95.5),
        ("held-out top-3", held.pct(held.top3), 99.5),
        ("held-out top-10", held.pct(held.top10), 99.5),
    ];
    for (name, got, floor) in floors {
        assert!(
            got >= floor,
            "{name} {got:.1}% < {floor}%:\n{report}{misses}"
        );
    }
}

/// The operator intents the search used to miss: the function word *my*, the verb *get*, a
/// force stop, putting a stack away, reaching an agent.
#[test]
fn intents_find_their_action() {
    for (query, want) in [
        ("what is eating my disk space", "system.prune"),
        ("get rid of dangling images", "image.prune"),
        ("force stop a hung container", "container.kill"),
        ("put the stack away without deleting it", "project.archive"),
        ("is the remote agent reachable", "environment.test"),
    ] {
        let got = ids(query, 3);
        assert!(got.iter().any(|id| id == want), "{query:?} → {got:?}");
        assert!(
            !(got[0].starts_with("my_api_key.") || got[0] == "image.get"),
            "{query:?} → {got:?}"
        );
    }
}

/// The causes fixed after the evaluation set's first figures, each on queries outside the set:
/// an enumeration of resources, a participle that describes a state, a rewritten phrase inside
/// a keyword, a yes/no question, the situation told before a long request.
#[test]
fn causes_generalize() {
    for (query, want) in [
        ("prune volumes, networks and images", "system.prune"),
        (
            "free up space from old images, stopped containers and unused volumes",
            "system.prune",
        ),
        ("list running containers", "container.list"),
        ("env vars of the db container", "container.get"),
        ("run a shell command in the api container", "container.exec"),
        ("is the swarm initialized", "swarm.status"),
        ("docker login to quay", "container_registry.create"),
        ("sso configuration", "oidc.config"),
        (
            "the web container keeps crashing since the last deploy, I would like to see its logs",
            "container.logs",
        ),
    ] {
        let got = ids(query, 3);
        assert_eq!(
            got.first().map(String::as_str),
            Some(want),
            "{query:?} → {got:?}"
        );
    }
    // Two resources joined by "and" are not an enumeration: each keeps its action.
    let got = ids("restart the web container and the db container", 3);
    assert_eq!(got[0], "container.restart", "{got:?}");
}

/// Results say which words matched, and how much of the query the best one explains.
#[test]
fn hits_explain_their_match() {
    let hits = index().search(catalog(), "please force stop the container", 3, &all);
    let first = &hits[0];
    assert_eq!(first.id, "container.kill");
    assert_eq!(first.matched, ["force stop", "container"], "{first:?}");
    assert!(first.coverage > 0.99, "{first:?}");
    let hits = index().search(catalog(), "force stop the nginx container", 3, &all);
    assert_eq!(hits[0].id, "container.kill");
    assert!(
        !hits[0].matched.contains(&"nginx".to_string()),
        "{:?}",
        hits[0]
    );
    let vague = index().search(catalog(), "purple elephant container banana", 3, &all);
    assert!(vague.iter().all(|h| h.coverage <= 1.0));
    let weak = index().search(catalog(), "frobnicate the quantum flux capacitor", 3, &all);
    assert!(weak.iter().all(|h| h.coverage < 0.5), "{weak:?}");
}

fn snapshot(catalog: Catalog, policy: Policy) -> Snapshot {
    Snapshot::build(catalog, Surface::Dynamic, policy).expect("the snapshot builds")
}

fn text_of(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The text of `arcane_find_action`: matched words per result, the echoed query as a code
/// span (it is the client's text), and a weak best match said so with the domains to pick from.
#[test]
fn find_text_explains_and_escapes() {
    let snap = snapshot(catalog().clone(), Policy::default());
    let r = arcane_mcp::present::find::find(&snap, "force stop the api container", 5);
    let text = text_of(&r);
    assert!(text.contains("`force stop the api container`"), "{text}");
    assert!(text.contains("container.kill — "), "{text}");
    assert!(text.contains("matched: force stop, container"), "{text}");
    assert!(!text.contains("Weak match"), "{text}");
    let s = r.structured_content.expect("structured");
    assert_eq!(s["weak"], false);
    assert_eq!(s["results"][0]["matched"][0], "force stop");

    let hostile = "x](http://evil) # `boom` <b>\u{1b}[31m";
    let text = text_of(&arcane_mcp::present::find::find(&snap, hostile, 5));
    assert!(!text.contains("\u{1b}"), "{text}");
    assert!(!text.contains("\n# "), "{text}");
    assert!(
        text.contains("``x](http://evil) # `boom` <b>``"),
        "the query is one code span: {text}"
    );

    let r = arcane_mcp::present::find::find(&snap, "frobnicate the quantum flux capacitor", 5);
    let text = text_of(&r);
    assert!(
        text.contains("Weak match") || text.contains("No action matches"),
        "{text}"
    );
    assert!(
        text.contains("Domains: ") && text.contains("container,"),
        "{text}"
    );
    assert_eq!(r.structured_content.unwrap()["weak"], true);
}

/// The weak-match notice says what is close: siblings of one domain by name, or across domains
/// the closest domains with an example action each.
#[test]
fn weak_notice_names_what_is_close() {
    let snap = snapshot(catalog().clone(), Policy::default());
    let text = text_of(&arcane_mcp::present::find::find(&snap, "delete", 5));
    let notice = text.split("Weak match: ").nth(1).expect("a weak notice");
    assert!(notice.contains("The closest domains: "), "{text}");
    assert!(notice.matches(" (e.g. ").count() >= 2, "{text}");

    // One result asked for: still weak, the next hit decides.
    let r = arcane_mcp::present::find::find(&snap, "delete", 1);
    assert_eq!(r.structured_content.as_ref().unwrap()["count"], 1);
    assert_eq!(r.structured_content.unwrap()["weak"], true);
    // A sibling that explains less of the query is not offered as close ("swarm service
    // details": the delete and create actions match two words of three).
    let text = text_of(&arcane_mcp::present::find::find(
        &snap,
        "swarm service details",
        5,
    ));
    assert!(text.contains("- swarm_service.get — "), "{text}");
    assert!(!text.contains("swarm_service.delete are close"), "{text}");
    assert!(!text.contains("swarm_service.delete, "), "{text}");

    let hits = index().search(catalog(), "gitops sync", 5, &|_: &Action| true);
    assert!(
        is_weak(&hits) && hits[0].id.starts_with("gitops_sync."),
        "{hits:?}"
    );
    assert!(hits[1].id.starts_with("gitops_sync."), "{hits:?}");
    let text = text_of(&arcane_mcp::present::find::find(&snap, "gitops sync", 5));
    let notice = text.split("Weak match: ").nth(1).expect("a weak notice");
    assert!(
        notice.starts_with(&format!("{}, {}", hits[0].id, hits[1].id))
            && notice.contains(" are close"),
        "{text}"
    );
}

/// Withdrawn domains are not offered when a match is weak.
#[test]
fn weak_match_lists_only_served_domains() {
    let policy = Policy::new(false, false, &["volume".to_string()]);
    let snap = snapshot(catalog().clone(), policy);
    let text = text_of(&arcane_mcp::present::find::find(&snap, "zzzz qqqq", 5));
    assert!(text.contains("Domains: "), "{text}");
    let domains = text.split("Domains: ").nth(1).unwrap();
    assert!(!domains.contains(" volume,"), "{domains}");
    assert!(domains.contains("volume_backup"), "{domains}");
}

/// An operator teaches the search a word with an overlay file; the built-in vocabulary is
/// data too (every layer adds to it).
#[test]
fn operator_vocabulary_teaches_words() {
    let before = ids("zap the box", 5);
    assert!(
        !before.iter().any(|id| id == "container.kill"),
        "{before:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("my-words.yaml"),
        "vocabulary:\n  synonyms:\n    box: [container]\n  phrases:\n    zap: kill\n\
         actions:\n  container.logs:\n    keywords: [what it said]\n    asks: [what did the box mumble overnight]\n",
    )
    .unwrap();
    let sources = Sources {
        spec: SpecSource {
            explicit: Some(shared_dir().join("openapi-v2.8.0.json")),
            ..Default::default()
        },
        overrides_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let taught = sources
        .build()
        .expect("the catalog builds with the operator's words");
    assert!(taught.vocabulary.synonyms.contains_key("box"));
    assert!(
        taught.vocabulary.synonyms.contains_key("remove"),
        "built-in words stay"
    );
    let idx = SearchIndex::build_with(&taught, weights_to_measure()).unwrap();
    let got: Vec<String> = idx
        .search(&taught, "zap the box", 3, &all)
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(
        got.first().map(String::as_str),
        Some("container.kill"),
        "{got:?}"
    );
    let got = idx.search(&taught, "what it said in the web container", 3, &all);
    assert_eq!(got[0].id, "container.logs", "{got:?}");
    // An ask of the operator's file reaches the action, after the built-in ones.
    let logs = taught.get("container.logs").unwrap();
    assert_eq!(
        logs.search.asks.last().map(String::as_str),
        Some("what did the box mumble overnight")
    );

    // A broken vocabulary names file and line.
    std::fs::write(
        dir.path().join("my-words.yaml"),
        "vocabulary:\n  synonyms:\n    box: container\n",
    )
    .unwrap();
    let e = format!("{:#}", sources.build().unwrap_err());
    assert!(e.contains("my-words.yaml:3"), "{e}");
}

/// A snapshot builds its search index on a thread of its own (so that a server answers
/// `initialize` before it is built): a search right after the build waits for it and finds what
/// an index built in place finds, from async code and from blocking code alike.
#[tokio::test]
async fn the_snapshot_index_is_built_on_its_own_thread() {
    let ids = |hits: &[arcane_catalog::Hit]| hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
    let direct = ids(&index().search(catalog(), "restart container", 5, &all));
    assert_eq!(
        direct.first().map(String::as_str),
        Some("container.restart")
    );

    let snap = snapshot(catalog().clone(), Policy::default());
    let built = snap.search_ready().await.expect("the index builds");
    assert!(snap.search.is_ready());
    assert_eq!(
        ids(&built.search(&snap.catalog, "restart container", 5, &all)),
        direct
    );

    let snap = snapshot(catalog().clone(), Policy::default());
    let text = text_of(&arcane_mcp::present::find::find(
        &snap,
        "restart container",
        5,
    ));
    assert!(text.contains("container.restart"), "{text}");
    assert!(snap.search.is_ready());
}

/// What `arcane_find_action` answers, in bytes and o200k tokens of its text, over the whole
/// evaluation set at the default limit: many clients give the model only the text, so it
/// carries the guidance, and it may not grow past what it cost before it did
/// (docs/search.md, "The result text"). Both figures were measured on the text without guidance.
#[test]
fn find_text_stays_within_its_budget() {
    let snap = snapshot(catalog().clone(), Policy::default());
    let (mut bytes, mut tokens) = (0usize, 0usize);
    let set = eval_set();
    for e in &set {
        let text = text_of(&arcane_mcp::present::find::find(
            &snap,
            &e.q,
            arcane_mcp::surface::DEFAULT_LIMIT,
        ));
        bytes += text.len();
        tokens += arcane_token_audit::tokens(&text);
    }
    println!(
        "find text over {} queries: {bytes} bytes, {tokens} o200k tokens (mean {} / {})",
        set.len(),
        bytes / set.len(),
        tokens / set.len()
    );
    assert!(
        bytes <= FIND_TEXT_BYTES,
        "{bytes} bytes > {FIND_TEXT_BYTES}"
    );
    assert!(
        tokens <= FIND_TEXT_TOKENS,
        "{tokens} tokens > {FIND_TEXT_TOKENS}"
    );
}

/// The find texts of the evaluation set before they carried guidance (usage, example call,
/// optional parameters): the budget.
const FIND_TEXT_BYTES: usize = 511_729;
const FIND_TEXT_TOKENS: usize = 114_986;

/// One query of an independent evaluation set (`tests/search_eval_independent_a.yaml`, or the
/// file `SEARCH_EVAL_SET` names): the action meant, the others that answer as well, the style.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IndependentQuery {
    query: String,
    expect: String,
    #[serde(default)]
    also: Vec<String>,
    style: String,
    /// Where the words come from (a public thread), for sets taken from real text.
    #[serde(default)]
    source: Option<String>,
}

/// The tuning set written by an independent author (see its header), relative to the
/// repository.
const INDEPENDENT_A: &str = "tests/search_eval_independent_a.yaml";

/// The set to evaluate: `SEARCH_EVAL_SET` (a path, absolute or relative to the repository) so
/// the same harness runs a set that is not in the repository, else set A. Returns
/// the path and whether it is set A (whose floors apply).
fn independent_set() -> (PathBuf, bool) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("SEARCH_EVAL_SET") {
        Some(p) if !p.is_empty() => {
            let p = root.join(PathBuf::from(p));
            let is_a = p.canonicalize().ok() == root.join(INDEPENDENT_A).canonicalize().ok();
            (p, is_a)
        }
        _ => (root.join(INDEPENDENT_A), true),
    }
}

fn read_independent(path: &std::path::Path) -> Vec<IndependentQuery> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: cannot be read: {e}", path.display()));
    yaml_serde::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: does not parse: {e}", path.display()))
}

/// Top-1/3/10 per style and overall, as a markdown table (the rows docs/search.md records).
fn style_table(styles: &[(String, Score)], all: &Score) -> String {
    let mut t =
        String::from("| style | n | top-1 | top-3 | top-10 | MRR |\n|---|---|---|---|---|---|\n");
    let row = |name: &str, s: &Score| {
        format!(
            "| {name} | {} | {:.1}% | {:.1}% | {:.1}% | {:.3} |\n",
            s.n,
            s.pct(s.top1),
            s.pct(s.top3),
            s.pct(s.top10),
            s.rr / s.n.max(1) as f64
        )
    };
    for (name, s) in styles {
        t.push_str(&row(name, s));
    }
    t.push_str(&row("**all**", all));
    t
}

/// The independent evaluation: every expected ID is an action, each query is ranked, and the
/// table of top-1/3/10 per style is printed with every query whose action is not first. On the
/// set A (training data of the embedding table), floors (its figures less one query per style) make
/// a change that loses ground fail; on another set (`SEARCH_EVAL_SET`) the table is the result.
/// `SEARCH_EVAL_DUMP=path` also writes each query's top 50 as JSON lines (and its first ten hits
/// with score and coverage), for measuring a ranking or the notice outside this harness.
#[test]
fn independent_set_quality() {
    let (path, is_a) = independent_set();
    let set = read_independent(&path);
    assert!(!set.is_empty(), "{}: no queries", path.display());
    let unknown: Vec<String> = set
        .iter()
        .flat_map(|e| std::iter::once(&e.expect).chain(&e.also))
        .filter(|id| catalog().get(id).is_none())
        .cloned()
        .collect();
    assert!(
        unknown.is_empty(),
        "{}: IDs that are not actions: {unknown:?}",
        path.display()
    );
    let mut styles: Vec<(String, Score)> = Vec::new();
    let mut all = Score::default();
    let mut misses = String::new();
    let mut dump = String::new();
    // notice[weak][first right]: how the weak-match notice lines up with a wrong first result.
    let mut notice = [[0usize; 2]; 2];
    // The same for other leads than CLEAR_LEAD: how it was calibrated.
    const LEADS: [f32; 7] = [0.02, 0.04, 0.05, 0.06, 0.08, 0.12, 0.2];
    let mut calibration = [[[0usize; 2]; 2]; LEADS.len()];
    // Milliseconds per search (this build's profile: a debug build is several times slower).
    let mut times: Vec<f64> = Vec::new();
    for e in &set {
        let got = ids(&e.query, 50);
        let rank = got
            .iter()
            .take(10)
            .position(|id| *id == e.expect || e.also.contains(id));
        all.add(rank);
        let started = std::time::Instant::now();
        let hits = index().search(catalog(), &e.query, 10, &|_: &Action| true);
        times.push(started.elapsed().as_secs_f64() * 1e3);
        notice[usize::from(is_weak(&hits))][usize::from(rank == Some(0))] += 1;
        for (i, lead) in LEADS.iter().enumerate() {
            calibration[i][usize::from(is_weak_with(&hits, *lead))]
                [usize::from(rank == Some(0))] += 1;
        }
        match styles.iter_mut().find(|(s, _)| *s == e.style) {
            Some((_, s)) => s.add(rank),
            None => {
                let mut s = Score::default();
                s.add(rank);
                styles.push((e.style.clone(), s));
            }
        }
        if rank != Some(0) {
            let rank = rank.map_or("miss".to_string(), |r| format!("#{}", r + 1));
            misses.push_str(&format!(
                "  {:<8} {rank:>4} {:?} want {} got {:?}\n",
                e.style,
                e.query,
                e.expect,
                &got[..got.len().min(3)]
            ));
        }
        let mut want = vec![e.expect.clone()];
        want.extend(e.also.iter().cloned());
        dump.push_str(
            &serde_json::json!({"query": e.query, "style": e.style, "source": e.source, "want": want, "got": got,
                "hits": hits.iter().map(|h| (h.id.as_str(), h.score, h.coverage)).collect::<Vec<_>>()})
                .to_string(),
        );
        dump.push('\n');
    }
    if let Some(out) = std::env::var_os("SEARCH_EVAL_DUMP") {
        std::fs::write(&out, dump).expect("SEARCH_EVAL_DUMP is writable");
    }
    let table = style_table(&styles, &all);
    let (flagged_wrong, flagged_right) = (notice[1][0], notice[1][1]);
    let wrong = notice[0][0] + notice[1][0];
    println!(
        "independent evaluation: {} ({} queries)\n{table}weak-match notice: precision {:.1}% \
         ({flagged_wrong} of {} flagged have a wrong first result), recall {:.1}% ({flagged_wrong} \
         of {wrong} wrong first results flagged)\n{misses}",
        path.display(),
        set.len(),
        100.0 * flagged_wrong as f64 / (flagged_wrong + flagged_right).max(1) as f64,
        flagged_wrong + flagged_right,
        100.0 * flagged_wrong as f64 / wrong.max(1) as f64,
    );
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "search latency over the set: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    );
    for (lead, n) in LEADS.iter().zip(&calibration) {
        let wrong = n[0][0] + n[1][0];
        println!(
            "  lead {lead:.2}: precision {:.1}%, recall {:.1}% ({} flagged)",
            100.0 * n[1][0] as f64 / (n[1][0] + n[1][1]).max(1) as f64,
            100.0 * n[1][0] as f64 / wrong.max(1) as f64,
            n[1][0] + n[1][1]
        );
    }
    if !is_a {
        return;
    }
    // Set A's figures with the trained table, less one query of the style (2.5 points of 40)
    // or one point overall. Set A trains the table now (docs/search.md, "The trained table"):
    // these floors measure nothing, they fail a change that breaks what the table learned.
    let floors: &[(&str, f64, f64, f64)] = &[
        ("terse", 95.0, 97.5, 97.5),
        ("typo", 97.5, 97.5, 97.5),
        ("sentence", 97.5, 97.5, 97.5),
        ("synonym", 92.5, 95.0, 95.0),
        ("intent", 97.5, 97.5, 97.5),
        ("long", 82.5, 97.5, 97.5),
    ];
    let mut low = Vec::new();
    for (style, f1, f3, f10) in floors {
        let s = styles
            .iter()
            .find(|(n, _)| n == style)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| panic!("set A has no {style} queries"));
        for (k, got, floor) in [
            ("top-1", s.pct(s.top1), f1),
            ("top-3", s.pct(s.top3), f3),
            ("top-10", s.pct(s.top10), f10),
        ] {
            if got < *floor {
                low.push(format!("{style} {k} {got:.1}% < {floor}%"));
            }
        }
    }
    for (k, got, floor) in [
        ("top-1", all.pct(all.top1), 95.0),
        ("top-3", all.pct(all.top3), 98.5),
        ("top-10", all.pct(all.top10), 98.5),
    ] {
        if got < floor {
            low.push(format!("all {k} {got:.1}% < {floor}%"));
        }
    }
    assert!(low.is_empty(), "{low:?}\n{table}{misses}");
}
