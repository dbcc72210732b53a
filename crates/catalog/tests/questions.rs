//! Questions lead to reads (docs/search.md, "Questions lead to reads"): over the real catalog
//! (Arcane 2.8.0's document and the built-in layers), a query in question form never gets a
//! changing action first, and a request still gets the action that does it.

use arcane_catalog::Action;

use crate::{all, catalog, index};

fn first(query: &str) -> &'static Action {
    let hits = index().search(catalog(), query, 10, &all);
    let id = &hits
        .first()
        .unwrap_or_else(|| panic!("{query:?} finds nothing"))
        .id;
    catalog().get(id).expect("a hit is an action")
}

fn changes(a: &Action) -> bool {
    a.safety.mutating || a.safety.destructive
}

fn top(query: &str) -> Vec<String> {
    index()
        .search(catalog(), query, 3, &all)
        .into_iter()
        .map(|h| h.id)
        .collect()
}

/// Questions of every form the rule reads — interrogatives, yes/no openers, "how much/many",
/// a lead-in before the interrogative, a question mark — about every kind of resource, many
/// naming a verb of a changing action ("restart", "delete", "prune", "deploy", "pull").
#[test]
fn questions_get_a_read_action_first() {
    let questions = [
        "why did the db container stop",
        "why won't my stack come back up after the redeploy",
        "what happens when I restart a container",
        "what would pruning the images remove",
        "which volumes would a prune delete",
        "which swarm services were updated last",
        "who deleted the staging environment",
        "where do the deploy logs of a project go",
        "when was the backup of the data volume made",
        "how many images are dangling",
        "how much space do the build caches take",
        "how big is the postgres volume",
        "is it safe to delete the data volume",
        "is the proxy container restarting all the time",
        "are the swarm nodes all ready",
        "does the blog project need to be redeployed",
        "do I have any stopped containers",
        "has the image pull finished",
        "can you tell me which registries are configured",
        "I would like to know what the updater will change",
        "pending image updates on the main host?",
        "anything to prune on this server?",
    ];
    let mut wrong = Vec::new();
    for q in questions {
        assert!(index().is_question(q), "{q:?} reads as a question");
        let a = first(q);
        if changes(a) {
            wrong.push(format!("{q:?} → {} first ({:?})", a.id, top(q)));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The rule is what decides: the same words as a request get the changing action.
#[test]
fn the_question_form_is_what_turns_the_ranking() {
    for (request, question) in [
        (
            "restart the web container",
            "what happens when I restart the web container",
        ),
        ("prune images", "what would pruning images remove"),
        (
            "delete the data volume",
            "is it safe to delete the data volume?",
        ),
        (
            "redeploy the blog project",
            "does the blog project need a redeploy",
        ),
    ] {
        assert!(!index().is_question(request), "{request:?}");
        assert!(
            changes(first(request)),
            "{request:?} → {:?}: the request finds its changing action",
            top(request)
        );
        assert!(index().is_question(question), "{question:?}");
        assert!(
            !changes(first(question)),
            "{question:?} → {:?}",
            top(question)
        );
    }
}

/// Imperative requests, polite requests, "how do I…" and "can I…" still find the changing
/// action that does what they ask.
#[test]
fn requests_find_their_changing_action_first() {
    for (query, want) in [
        (
            "delete the old images",
            &["image.delete", "image.prune"][..],
        ),
        ("restart web", &["container.restart", "project.restart"]),
        ("restart the api container", &["container.restart"]),
        ("delete the web container", &["container.delete"]),
        ("prune unused volumes", &["volume.prune"]),
        ("pull the latest nginx image", &["image.pull"]),
        (
            "could you restart the web container?",
            &["container.restart"],
        ),
        ("please stop all containers", &["container.stop_all"]),
        ("how do I prune unused volumes", &["volume.prune"]),
        (
            "how to roll back a swarm service",
            &["swarm_service.rollback"],
        ),
        ("can I delete this volume?", &["volume.delete"]),
        ("kill the hung worker container", &["container.kill"]),
    ] {
        assert!(!index().is_question(query), "{query:?} is a request");
        let got = top(query);
        assert!(
            got.first().is_some_and(|id| want.contains(&id.as_str())),
            "{query:?} → {got:?}, want one of {want:?}"
        );
        assert!(changes(first(query)), "{query:?}");
    }
}

/// The rule holds wherever a question has a read action among its candidates, including under
/// a policy that withdraws actions (the best *served* read action leads).
#[test]
fn no_changing_action_outranks_the_best_read_action() {
    let only_some = |a: &Action| a.domain != "container";
    for q in [
        "why does the container keep restarting",
        "which images take the most space",
        "is the project running",
        "how many users are there?",
    ] {
        for allow in [&all as &dyn Fn(&Action) -> bool, &only_some] {
            let hits = index().search(catalog(), q, 10, allow);
            let Some(read) = hits
                .iter()
                .position(|h| !changes(catalog().get(&h.id).unwrap()))
            else {
                continue;
            };
            assert_eq!(read, 0, "{q:?} → {hits:?}");
            for w in hits.windows(2) {
                assert!(
                    w[0].score >= w[1].score,
                    "{q:?}: scores stay sorted: {hits:?}"
                );
            }
        }
    }
}
