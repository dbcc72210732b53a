//! The structure stage: how a query's words line up with an action's ID and keyword phrases
//! (the resource, the verb, a bare resource's list), why an action matched, and whether the
//! first result is clearly the one meant.

use super::index::{Entry, SearchIndex};
use super::query::Group;
use super::words::participle;

/// The lead (share of its score) the best hit needs over the next one to be clearly the one
/// meant; calibrated on the sets A to G, each ranked with the table trained without it
/// (docs/search.md, "Confidence").
pub const CLEAR_LEAD: f32 = 0.08;

/// Whether the best hit is a weak match: there is none, or it is not clearly better than the
/// next one (a changing action a question ruled out is no rival: [`Hit::passed_over`]). How
/// much of the query it explains is not asked: with the semantic side, a request whose words
/// name no action is found as often as one whose words do, and counting coverage flagged more
/// right first results than wrong ones (docs/search.md, "Confidence").
pub fn is_weak(hits: &[Hit]) -> bool {
    is_weak_with(hits, CLEAR_LEAD)
}

/// [`is_weak`] with another lead (for calibrating [`CLEAR_LEAD`]).
pub fn is_weak_with(hits: &[Hit], lead: f32) -> bool {
    let Some((first, rest)) = hits.split_first() else {
        return true;
    };
    rest.iter()
        .find(|h| !h.passed_over)
        .is_some_and(|next| first.score - next.score < lead * first.score.abs())
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Canonical action ID.
    pub id: String,
    /// Relevance; only the order matters.
    pub score: f32,
    /// The query's words (as typed; a rewritten phrase as typed) that this action's ID,
    /// keywords or title match, in query order: why it was found.
    pub matched: Vec<String>,
    /// Share (0..1) of the query's meaningful words that the action's ID, keywords or title
    /// match. A low value on the best hit means the query was not understood well.
    pub coverage: f32,
    /// A changing action a question's best read action was moved above ("Questions lead to
    /// reads"): ruled out by the question, so not a rival the first result must lead.
    pub passed_over: bool,
}

/// How the query lines up with one action.
pub(super) struct Fit {
    pub(super) score: f32,
    /// Groups the ID or keywords explain.
    pub(super) used: Vec<bool>,
    /// The query names the action's resource and no verb: by convention, its list is meant.
    pub(super) noun_only: bool,
    /// The query holds every word of one of the operator's keywords for the action.
    pub(super) operator_keyword: bool,
}

impl SearchIndex {
    /// The structure score: how the query's words line up with the action's ID and keywords.
    ///
    /// Each query word gets at most one role for an action: it names the resource (a domain
    /// word, a domain keyword, or a qualifier such as "compose" in "compose project"), or the
    /// action (a name word or an action keyword phrase). An action keyword phrase may reuse the
    /// resource's words ("status of container").
    pub(super) fn fit(&self, e: &Entry, groups: &[Group]) -> Fit {
        let w = &self.weights;
        let n: f32 = groups
            .iter()
            .map(|g| g.weight)
            .sum::<f32>()
            .max(f32::EPSILON);
        let mut role: Vec<Role> = groups
            .iter()
            .map(|g| if g.listed { Role::Listed } else { Role::None })
            .collect();
        let mut cover = 0.0_f32;
        let mut surface = 0.0_f32;
        let mut domain_match = 0.0_f32;
        let mut domain_words = 0.0_f32;
        let mut name_match = 0.0_f32;
        // Name matches by an order, not a participle ("deployed" in "stacks that are deployed").
        let mut ordered = false;
        let mut lead = 0.0_f32;
        let mut name_words = 0.0_f32;
        let d_len = e.domain_words.len().max(1) as f32;
        let n_len = e.name_words.len().max(1) as f32;
        // Domain words first: a word that names the resource is not also its verb.
        for word in &e.domain_words {
            if let Some((i, aw, exact)) = best_group(groups, &role, &word.stem, &word.raw) {
                role[i] = Role::Domain;
                cover += aw * groups[i].weight;
                domain_match += aw * groups[i].weight;
                domain_words += aw * groups[i].precision_share();
                surface += f32::from(u8::from(exact));
            }
        }
        let domain_named = domain_match >= d_len * w.synonym;
        for word in &e.name_words {
            // Once the resource is named, another word for it ("compose" in "list compose
            // projects") qualifies the resource; it does not name the action.
            let found = best_group(groups, &role, &word.stem, &word.raw)
                .filter(|(i, _, _)| !(domain_named && self.names_domain(&groups[*i], e)));
            if let Some((i, aw, exact)) = found {
                // "the paused container": a participle describes the resource's state.
                let state = participle(&groups[i].typed) && !participle(&word.raw);
                let aw = if state { aw * 0.5 } else { aw };
                ordered |= !state;
                if groups[i].lead && !state {
                    lead += aw * groups[i].weight;
                }
                role[i] = Role::Name;
                cover += aw * groups[i].weight;
                name_match += aw * groups[i].weight;
                name_words += aw * groups[i].precision_share();
                surface += f32::from(u8::from(exact));
            }
        }
        // Keyword phrases: the domain's stand for the domain's words, the action's for its name.
        if domain_match < d_len {
            for phrase in &self.domain_keywords[e.domain] {
                if let Some((m, fresh)) =
                    match_phrase(phrase, groups, &mut role, Role::Domain, false)
                {
                    cover += w.keyword * fresh;
                    let share = w.keyword * m / phrase.len() as f32;
                    domain_match = domain_match.max(d_len * share);
                    domain_words = domain_words.max(d_len * share);
                }
            }
        }
        let mut operator_keyword = false;
        for ((phrase, states), operator) in e
            .keywords
            .iter()
            .zip(&e.keyword_states)
            .zip(&e.operator_keywords)
        {
            let halve = !states;
            if let Some((m, fresh)) = match_phrase(phrase, groups, &mut role, Role::Keyword, halve)
            {
                operator_keyword |= *operator;
                cover += w.keyword * fresh;
                let share = w.keyword * m / phrase.len() as f32;
                name_match = name_match.max(n_len * share);
                name_words = name_words.max(n_len * share);
                ordered = true;
                // An action's keyword says which action, and so half says which resource
                // ("is the server overloaded" is about the host's stats).
                domain_words = domain_words.max(d_len * share / 2.0);
            }
        }
        // An enumeration of resources ("containers, images and networks") is explained by an
        // action of none of them whose prose names them, like a description-only word.
        for (i, g) in groups.iter().enumerate() {
            if g.listed
                && !self.names_domain(g, e)
                && g.alts.iter().any(|a| e.prose.contains(&a.stem))
            {
                cover += w.weak_word * g.weight;
                role[i] = Role::Keyword;
            }
        }
        // Words left that name the resource again qualify it.
        if domain_match > 0.0 {
            for (i, g) in groups.iter().enumerate() {
                if role[i] == Role::None && self.names_domain(g, e) {
                    role[i] = Role::Domain;
                    cover += w.synonym * g.weight;
                }
            }
        }
        let mut score = w.cover * cover / n
            + w.precision * (domain_words + name_words) / (d_len + n_len)
            + w.domain_hit * domain_match / d_len
            + w.surface * surface / n
            + w.verb * lead / n;
        // The query names the resource and no verb (no content word left is the name of any
        // action, a state such as "running" aside): the list action is what is meant.
        let noun_only = !ordered
            && domain_match > 0.0
            && groups
                .iter()
                .zip(&role)
                .filter(|(g, r)| **r == Role::None && !g.function && !participle(&g.typed))
                .all(|(g, _)| !g.alts.iter().any(|a| self.verbs.contains(&a.stem)));
        if noun_only {
            let list = if e.list_verb {
                1.0
            } else if e.returns_list {
                0.5
            } else {
                0.0
            };
            score += w.list * list * cover / n;
        }
        Fit {
            score,
            noun_only,
            operator_keyword,
            used: role
                .iter()
                .map(|r| !matches!(r, Role::None | Role::Listed))
                .collect(),
        }
    }

    /// Whether a query word names the action's resource: a domain word or a one-word domain
    /// keyword among its alternatives.
    fn names_domain(&self, g: &Group, e: &Entry) -> bool {
        g.alts.iter().any(|a| {
            e.domain_words.iter().any(|d| d.stem == a.stem)
                || self.domain_keywords[e.domain]
                    .iter()
                    .any(|k| k.len() == 1 && k[0] == a.stem)
        })
    }

    /// Why an action matched: the words its ID, keywords or title explain, and their share.
    pub(super) fn explain(&self, e: &Entry, groups: &[Group]) -> (Vec<String>, f32) {
        let fit = self.fit(e, groups);
        let mut matched = Vec::new();
        let mut covered = 0.0_f32;
        let mut total = 0.0_f32;
        for (g, used) in groups.iter().zip(&fit.used) {
            if !g.function {
                total += g.weight;
            }
            let in_title = g.alts.iter().any(|a| e.title.contains(&a.stem));
            if *used || in_title {
                if !g.function {
                    covered += g.weight;
                }
                if !matched.contains(&g.typed) {
                    matched.push(g.typed.clone());
                }
            }
        }
        let coverage = if total > 0.0 {
            covered / total
        } else if matched.is_empty() {
            0.0
        } else {
            1.0
        };
        (matched, coverage)
    }
}

/// What a query word does for one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    /// Names the resource (domain word, domain keyword, qualifier).
    Domain,
    /// Names the action (a word of its name).
    Name,
    /// Part of a matched keyword phrase of the action.
    Keyword,
    /// An item of an enumeration of resources: names no single action.
    Listed,
}

/// The best group not yet given a role that names a stem: (group, alternative weight, typed
/// in the very form of the ID word).
fn best_group(
    groups: &[Group],
    role: &[Role],
    stem: &str,
    raw: &str,
) -> Option<(usize, f32, bool)> {
    groups
        .iter()
        .enumerate()
        .filter(|(i, _)| role[*i] == Role::None)
        .filter_map(|(i, g)| g.matches(stem, raw).map(|(aw, exact)| (i, aw, exact)))
        .max_by(|a, b| (a.1 * groups[a.0].weight).total_cmp(&(b.1 * groups[b.0].weight)))
}

/// Whether every word of a keyword phrase is named by a content group; if so, the groups that
/// had no role take `as_role` and (summed alternative weight, summed match weight of those
/// groups) is returned. A
/// phrase may reuse words that already have a role ("status of container" holds the word that
/// names the domain); only new words add to the cover. A word of a rewritten phrase also
/// matches by what was typed.
fn match_phrase(
    phrase: &[String],
    groups: &[Group],
    role: &mut [Role],
    as_role: Role,
    halve_participles: bool,
) -> Option<(f32, f32)> {
    let mut picked: Vec<(usize, f32, f32)> = Vec::with_capacity(phrase.len());
    for s in phrase {
        let best = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.function && !g.listed)
            .filter_map(|(i, g)| {
                // A group matches one word of the phrase, except a rewritten phrase, which
                // stands for every word typed ("environment variables" → `variables`).
                let again = picked.iter().any(|p| p.0 == i);
                let alt = g
                    .alts
                    .iter()
                    .filter(|a| a.stem == *s)
                    .map(|a| a.weight)
                    .reduce(f32::max);
                let origin = g.origin.iter().any(|o| o == s).then_some(1.0_f32);
                let m = match (alt, origin) {
                    _ if again => origin,
                    (Some(a), Some(o)) => Some(a.max(o)),
                    (a, o) => a.or(o),
                };
                // "the running containers": a participle describes a state; it does not ask
                // for what a keyword without one stands for ("docker run").
                let state = halve_participles && participle(&g.typed);
                let m = m.map(|m| if state { m * 0.5 } else { m });
                m.map(|m| (i, m, m * g.weight))
            })
            .max_by(|a, b| {
                // Prefer a word without a role, then the stronger match.
                (role[a.0] == Role::None, a.2)
                    .partial_cmp(&(role[b.0] == Role::None, b.2))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })?;
        picked.push(best);
    }
    let mut fresh = 0.0;
    for (i, _, m) in &picked {
        if role[*i] == Role::None {
            fresh += m;
            role[*i] = as_role;
        }
    }
    Some((picked.iter().map(|p| p.1).sum(), fresh))
}

#[cfg(test)]
mod tests {
    use super::super::query::Alt;
    use super::*;

    fn group(stems: &[&str], weight: f32, function: bool) -> Group {
        Group {
            alts: stems
                .iter()
                .map(|s| Alt {
                    stem: s.to_string(),
                    raw: s.to_string(),
                    weight: 1.0,
                })
                .collect(),
            weight,
            typed: stems[0].to_string(),
            qualifier: false,
            origin: Vec::new(),
            function,
            listed: false,
            context: false,
            lead: false,
        }
    }

    #[test]
    fn keyword_phrases_need_every_word() {
        let groups = [
            group(&["forc"], 1.0, false),
            group(&["stop"], 1.0, false),
            group(&["contain"], 0.8, false),
            group(&["the"], 0.25, true),
        ];
        let phrase = ["forc".to_string(), "stop".to_string()];
        let mut role = [Role::None; 4];
        let (m, fresh) = match_phrase(&phrase, &groups, &mut role, Role::Keyword, false).unwrap();
        assert_eq!((m, fresh), (2.0, 2.0));
        assert_eq!(role, [Role::Keyword, Role::Keyword, Role::None, Role::None]);
        // Words that already name the resource may be reused, but add nothing to the cover.
        let mut role = [Role::None, Role::None, Role::Domain, Role::None];
        let status = ["stop".to_string(), "contain".to_string()];
        let (m, fresh) = match_phrase(&status, &groups, &mut role, Role::Keyword, false).unwrap();
        assert_eq!((m, fresh), (2.0, 1.0));
        // A missing word, or one that is only a function word, fails the phrase.
        let mut role = [Role::None; 4];
        let missing = ["forc".to_string(), "kill".to_string()];
        assert!(match_phrase(&missing, &groups, &mut role, Role::Keyword, false).is_none());
        let function = ["the".to_string()];
        assert!(match_phrase(&function, &groups, &mut role, Role::Keyword, false).is_none());
        assert_eq!(role, [Role::None; 4]);
    }
}
