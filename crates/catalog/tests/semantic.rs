//! The hybrid search over the real catalog (docs/search.md, "Semantic retrieval"): the
//! semantic side finds what no word of the query names, the fusion keeps the lexical side's
//! answers, the verb of the request decides within a resource, negated words count less, the
//! confidence says when the first result is not clearly the one meant, a reload re-embeds only
//! what changed, the operator's words reach the semantic side, and the meaning decides where
//! the words leave the query unexplained.

use arcane_catalog::semantic::EmbeddingCache;
use arcane_catalog::{Hit, SearchIndex, Weights, is_weak};

use crate::{all, catalog, index};

fn ids_with(index: &SearchIndex, query: &str, limit: usize) -> Vec<String> {
    index
        .search(catalog(), query, limit, &all)
        .into_iter()
        .map(|h| h.id)
        .collect()
}

fn rank(ids: &[String], id: &str) -> Option<usize> {
    ids.iter().position(|x| x == id)
}

fn index_with(w: Weights) -> SearchIndex {
    SearchIndex::build_with(catalog(), w).expect("the index builds")
}

fn lexical_only() -> SearchIndex {
    index_with(Weights {
        semantic: 0.0,
        ..Weights::default()
    })
}

/// A word no field of the catalog holds ("pods", a chat service) is understood by meaning:
/// the semantic side ranks the action it means high where the lexical side cannot.
#[test]
fn meaning_finds_what_no_word_names() {
    let sem = index().semantic_ranking("show the pods", 10);
    assert!(
        sem.iter().take(10).any(|id| id.starts_with("container.")),
        "{sem:?}"
    );
    let sem = index().semantic_ranking("send alerts to slack", 10);
    assert!(
        sem.iter().take(10).any(|id| id.starts_with("notification")),
        "{sem:?}"
    );
}

/// Fusion: both sides count. Plain requests keep their lexical answer first, with either fusion
/// (the weighted sum and reciprocal rank fusion), and the semantic side turned off changes the
/// ranking of a query the lexical side reads badly.
#[test]
fn fusion_keeps_plain_answers_and_adds_meaning() {
    let rrf = index_with(Weights {
        rrf_k: 60.0,
        semantic: 1.0,
        ..Weights::default()
    });
    let lex = lexical_only();
    for (q, want) in [
        ("restart container", "container.restart"),
        ("list images", "image.list"),
        ("prune volumes", "volume.prune"),
        ("pull image", "image.pull"),
    ] {
        for (name, ix) in [("weighted", index()), ("rrf", &rrf), ("lexical", &lex)] {
            let got = ids_with(ix, q, 3);
            assert_eq!(
                got.first().map(String::as_str),
                Some(want),
                "{name}: {q}: {got:?}"
            );
        }
    }
    // The semantic side moves something: over a handful of queries with words the catalog
    // does not hold, the fused ranking differs from the lexical one.
    let queries = [
        "notify the team on slack when a deploy fails",
        "which pods are eating memory",
        "wipe out the leftover junk from old builds",
    ];
    let differs = queries
        .iter()
        .any(|q| ids_with(index(), q, 5) != ids_with(&lex, q, 5));
    assert!(differs, "the semantic side changed no ranking");
}

/// The verb of the request decides between the actions of one resource ("make a network" is a
/// create, not the list), and a verb of the `verbs` map counts as the kinds it names.
#[test]
fn the_request_verb_decides_within_a_resource() {
    assert_eq!(ids_with(index(), "make a network", 3)[0], "network.create");
    assert_eq!(
        ids_with(index(), "provision a new volume", 3)[0],
        "volume.create"
    );
    let got = ids_with(index(), "halt the web container", 3);
    assert_eq!(got[0], "container.stop", "{got:?}");
}

/// A negated clause counts less: "stop does not work, kill it" asks for kill; "without
/// deleting the volumes" does not ask for a delete.
#[test]
fn negated_words_count_less() {
    let got = ids_with(
        index(),
        "a normal stop does not work on the api container, kill it",
        3,
    );
    assert_eq!(got[0], "container.kill", "{got:?}");
    let lex = index_with(Weights {
        negated: 1.0,
        ..Weights::default()
    });
    let q = "take the project down without deleting volumes";
    let with_rule = ids_with(index(), q, 5);
    let without = ids_with(&lex, q, 5);
    let delete = |ids: &[String]| rank(ids, "project.delete").unwrap_or(99);
    assert!(
        delete(&with_rule) >= delete(&without),
        "{with_rule:?} vs {without:?}"
    );
    assert_eq!(with_rule[0], "project.down", "{with_rule:?}");
}

/// A word typed without vowels stands for the known word with its consonants ("prjct lgs"),
/// but a word the language model knows whole ("try") or a function word's consonants ("pls",
/// "shw": please, show) stands for nothing.
#[test]
fn words_without_vowels_expand_unless_they_are_words() {
    let matched = |q: &str| {
        index()
            .search(catalog(), q, 5, &all)
            .into_iter()
            .flat_map(|h| h.matched)
            .collect::<Vec<_>>()
    };
    let m = matched("shw prjct lgs");
    assert!(
        m.contains(&"prjct".to_string()) && m.contains(&"lgs".to_string()),
        "{m:?}"
    );
    for (q, word) in [
        ("shw prjct lgs", "shw"),
        ("pls restart web container", "pls"),
        ("try to restart the web container", "try"),
    ] {
        assert!(
            !matched(q).contains(&word.to_string()),
            "{q:?} expanded {word:?}"
        );
    }
}

fn hit(id: &str, score: f32, coverage: f32) -> Hit {
    Hit {
        id: id.to_string(),
        score,
        matched: Vec::new(),
        coverage,
        passed_over: false,
    }
}

/// The confidence: weak when there is no hit or the best one leads the next by too little,
/// whatever their domains and however much of the query the best explains.
#[test]
fn confidence_says_when_the_first_is_not_clearly_meant() {
    assert!(is_weak(&[]));
    // One hit, or a clear lead, is not weak even when it explains little of the query.
    assert!(!is_weak(&[hit("container.list", 5.0, 0.3)]));
    assert!(!is_weak(&[
        hit("container.logs", 5.0, 0.2),
        hit("project.logs", 3.0, 1.0),
    ]));
    // A near tie across domains, or between siblings of one.
    assert!(is_weak(&[
        hit("container.logs", 5.0, 1.0),
        hit("project.logs", 4.95, 1.0),
    ]));
    assert!(is_weak(&[
        hit("container.start", 5.0, 1.0),
        hit("container.start_stopped", 4.99, 1.0),
        hit("project.up", 2.0, 1.0),
    ]));
    // A changing action a question ruled out (moved below the read answer with its score) is
    // no rival: the lead is over the next hit that is not.
    let mut ruled_out = hit("container.restart", 5.0, 1.0);
    ruled_out.passed_over = true;
    assert!(!is_weak(&[
        hit("container.logs", 5.0, 1.0),
        ruled_out.clone(),
        hit("container.list", 3.0, 1.0),
    ]));
    assert!(!is_weak(&[hit("container.logs", 5.0, 1.0), ruled_out]));
    // The lead is a share of the best score.
    assert!(is_weak(&[
        hit("container.start", 10.0, 1.0),
        hit("container.start_stopped", 9.5, 1.0),
    ]));
    assert!(!is_weak(&[
        hit("container.start", 10.0, 1.0),
        hit("container.start_stopped", 9.0, 1.0),
    ]));
    // Over the real catalog: a plain request is confident; a verb with no resource ("remove
    // it", "delete") nearly ties.
    assert!(!is_weak(&index().search(
        catalog(),
        "restart container",
        5,
        &all
    )));
    assert!(is_weak(&index().search(catalog(), "remove it", 5, &all)));
    assert!(is_weak(&index().search(catalog(), "delete", 5, &all)));
    // A question whose words lead to a changing action gets the read answer first, and the
    // action it passed over is marked.
    let h = index().search(catalog(), "why does my container keep restarting", 5, &all);
    assert!(h.iter().any(|h| h.passed_over), "{h:?}");
    assert!(!h[0].passed_over, "{h:?}");
}

/// A reload (a new catalog, one action's text changed, one ask added) re-embeds that action
/// and that ask only; the same catalog again re-embeds nothing.
#[test]
fn a_reload_re_embeds_only_what_changed() {
    let cache = EmbeddingCache::default();
    let w = Weights::default();
    SearchIndex::build_cached(catalog(), w, &cache).expect("the index builds");
    let first = cache.computed();
    let actions = catalog().actions.len();
    let asks: usize = catalog()
        .actions
        .iter()
        .map(|a| a.search.asks.len() + a.search.keywords.len())
        .sum();
    // Every action's text once, every ask and action keyword once (two of the same words share
    // a vector).
    assert!(
        first > actions && first <= actions + asks,
        "{first} vectors for {actions} actions and {asks} asks"
    );
    SearchIndex::build_cached(catalog(), w, &cache).expect("the index builds");
    assert_eq!(
        cache.computed(),
        first,
        "nothing changed, nothing re-embedded"
    );
    let mut changed = catalog().clone();
    // Words the index knows already: new words would change how every ask holding them is
    // weighed (a word no field knows counts more), and re-embed those asks too.
    changed.actions[0]
        .description
        .push_str(" Also lists the container images.");
    SearchIndex::build_cached(&changed, w, &cache).expect("the index builds");
    assert_eq!(cache.computed(), first + 1, "one action changed");
    changed.actions[1]
        .search
        .asks
        .push("what about the container images".into());
    SearchIndex::build_cached(&changed, w, &cache).expect("the index builds");
    assert_eq!(cache.computed(), first + 2, "one ask added");
}

/// The operator's words reach the semantic side: a synonym of an overlay changes the query's
/// meaning, a keyword the action's.
#[test]
fn operator_words_reach_the_semantic_side() {
    let q = "zorblat the gadget";
    let before = index().semantic_ranking(q, 5);
    let mut taught = catalog().clone();
    taught
        .vocabulary
        .synonyms
        .insert("zorblat".into(), vec!["restart".into()]);
    taught
        .vocabulary
        .synonyms
        .insert("gadget".into(), vec!["container".into()]);
    let ix = SearchIndex::build(&taught).expect("the index builds");
    let after = ix.semantic_ranking(q, 5);
    assert_ne!(before, after);
    assert!(rank(&after, "container.restart").is_some(), "{after:?}");

    let mut keyed = catalog().clone();
    let a = keyed
        .actions
        .iter_mut()
        .find(|a| a.id == "volume.sizes")
        .expect("volume.sizes exists");
    a.search.keywords.push("treasure chest".into());
    let ix = SearchIndex::build(&keyed).expect("the index builds");
    let n = catalog().actions.len();
    let before = rank(
        &index().semantic_ranking("treasure chest", n),
        "volume.sizes",
    );
    let after = rank(&ix.semantic_ranking("treasure chest", n), "volume.sizes");
    assert!(after < before, "{after:?} vs {before:?}");
    assert!(
        after.is_some_and(|r| r < 10),
        "{after:?} (before: {before:?})"
    );
}

/// Where the lexical side's best action explains every word of the query, the meaning counts
/// its `sure_` weights ([`Weights::sure_semantic`], [`Weights::sure_asks`]): at 0 the ranking
/// is the lexical side's own. Where words are left unexplained, the meaning counts fully.
#[test]
fn meaning_decides_where_the_words_do_not() {
    let sure_off = index_with(Weights {
        sure_semantic: 0.0,
        sure_asks: 0.0,
        ..Weights::default()
    });
    let lex = lexical_only();
    for q in [
        "gitops sync",
        "list swarm services",
        "inspect container details",
        "deploy stack",
    ] {
        assert_eq!(ids_with(&sure_off, q, 3), ids_with(&lex, q, 3), "{q}");
    }
    let unexplained = [
        "notify the team on slack when a deploy fails",
        "which pods are eating memory",
        "wipe out the leftover junk from old builds",
    ];
    assert!(
        unexplained
            .iter()
            .any(|q| ids_with(&sure_off, q, 5) != ids_with(&lex, q, 5)),
        "the meaning changed no ranking of a query the words leave unexplained"
    );
    // With the adopted weights too, a plain request keeps its lexical answer first. ("deploy
    // stack" is not one: a compose project's up and a swarm stack's create both answer it.)
    for q in [
        "list swarm services",
        "inspect container details",
        "pull an image",
        "delete the volume",
    ] {
        assert_eq!(ids_with(index(), q, 1), ids_with(&lex, q, 1), "{q}");
    }
}

/// An operator's `asks` (whole requests people make for an action) reach the search: a request
/// in words no field of the action holds finds it first once it is one of its asks, and the
/// same request does not before.
#[test]
fn an_operators_asks_reach_the_search() {
    let q = "how much room is the treasure chest hogging";
    let before = ids_with(index(), q, 10);
    assert_ne!(
        before.first().map(String::as_str),
        Some("volume.sizes"),
        "{before:?}"
    );
    let mut taught = catalog().clone();
    let a = taught
        .actions
        .iter_mut()
        .find(|a| a.id == "volume.sizes")
        .expect("volume.sizes exists");
    a.search
        .asks
        .push("how much room is the treasure chest hogging".into());
    let ix = SearchIndex::build(&taught).expect("the index builds");
    let after = ids_with(&ix, q, 10);
    assert_eq!(
        after.first().map(String::as_str),
        Some("volume.sizes"),
        "{after:?}"
    );
    // Close wording finds it too: the ask is compared by meaning, not by its exact text.
    let near = ids_with(&ix, "treasure chest hogging room", 10);
    assert_eq!(
        near.first().map(String::as_str),
        Some("volume.sizes"),
        "{near:?}"
    );
}

/// A request of a resource's words alone says no action: its list is meant, whatever the asks of
/// the resource's other actions share with its name (the lexical side's list preference, said
/// as an implicit ask of the list action and kept first by the fusion). For every domain with a
/// list action.
#[test]
fn a_bare_resource_asks_for_its_list() {
    let mut wrong = Vec::new();
    let mut n = 0;
    for a in catalog().actions.iter().filter(|a| a.name == "list") {
        let q = a.domain.replace('_', " ");
        // "image build" is also the request to build an image (`image.build`).
        if catalog()
            .actions
            .iter()
            .any(|b| format!("{} {}", b.domain, b.name).replace('_', " ") == q)
        {
            continue;
        }
        n += 1;
        let got = ids_with(index(), &q, 3);
        if got.first() != Some(&a.id) {
            wrong.push(format!("{q:?} → {got:?}"));
        }
    }
    assert!(n > 30, "{n} list actions");
    assert!(wrong.is_empty(), "{} of {n}: {wrong:#?}", wrong.len());
}

/// A rewritten phrase ("env vars" → variables) keeps the words typed on the semantic side, as a
/// synonym keeps its word: what the request said reaches the meaning too.
#[test]
fn a_rewritten_phrase_keeps_its_words_for_the_meaning() {
    let words: Vec<String> = index()
        .semantic_words("env vars of the db container")
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert!(words.iter().any(|w| w == "variable"), "{words:?}");
    assert!(words.iter().any(|w| w == "env"), "{words:?}");
    assert_eq!(
        ids_with(index(), "env vars of the db container", 1),
        ["container.get"]
    );
}
