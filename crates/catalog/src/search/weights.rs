//! The ranking's weights and their measured values (docs/search.md); `SEARCH_WEIGHTS` changes
//! them for measuring.

/// The weights of the ranking. [`Weights::default`] holds the measured values; see
/// `docs/search.md` for how they were measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Field weights of the text stage (BM25 per field, multiplied).
    pub f_domain: f32,
    pub f_name: f32,
    pub f_title: f32,
    pub f_keywords: f32,
    pub f_description: f32,
    pub f_usage: f32,
    pub f_params: f32,
    /// The text score, relative to the best candidate's (0..1).
    pub text: f32,
    /// Share of the query's words the action's ID or keywords explain.
    pub cover: f32,
    /// Share of the ID's words the query names.
    pub precision: f32,
    /// Share of the domain's words the query names: the resource outweighs a verb.
    pub domain_hit: f32,
    /// Share of the query's words matching an ID word in the very form typed.
    pub surface: f32,
    /// A query that names only the resource prefers its list action (scaled by the cover).
    pub list: f32,
    /// A keyword phrase of the action (or its domain) counts this much of an ID word.
    pub keyword: f32,
    /// A synonym next to the word typed.
    pub synonym: f32,
    /// A typo correction (a known word one edit away from an unknown one).
    pub typo: f32,
    /// A function word (my, get, show…) next to a content word.
    pub function_word: f32,
    /// A word of a qualifier ("on this server"): where, not what.
    pub qualifier: f32,
    /// A word found only in descriptions, usage notes or parameter names (never in an ID,
    /// title or keyword): it says little about which action is meant.
    pub weak_word: f32,
    /// How much a word's spread counts (0: not at all, 1: fully): a word that names one action
    /// ("overloaded", "kill") says more than one that names thirty ("container", "server").
    pub idf: f32,
    /// A word negated or told aside ("does not work", "(it is the db)") counts this much.
    pub negated: f32,
    /// The verb of the request naming the action's name word: how much it adds (× its share of
    /// the query), so it decides between the actions of one resource.
    pub verb: f32,
    /// How much the semantic side counts against the lexical one. With [`Weights::rrf_k`] 0,
    /// the fused score is the lexical score plus this × the cosine of query and action; with a
    /// positive `rrf_k`, reciprocal rank fusion: `1/(k + lexical rank) + semantic/(k + semantic
    /// rank)`. 0 turns the semantic side off.
    pub semantic: f32,
    /// The `k` of reciprocal rank fusion; 0 for the weighted sum.
    pub rrf_k: f32,
    /// Actions the semantic side adds to the lexical candidates (its best ones).
    pub semantic_pool: usize,
    /// A query word no field of the index knows ("pods", "slack"): dropped by the lexical side,
    /// it counts this much on the semantic side.
    pub unknown_word: f32,
    /// How much an action's best-matching ask (overlay `asks`: a whole request people make for
    /// it) counts in its cosine against the action's own text: `(1 − asks) × text + asks × ask`.
    pub asks: f32,
    /// How much the centre of an action's asks counts against its closest ask in its ask
    /// cosine: `(1 − ask_centroid) × closest + ask_centroid × centre`, the centre being the
    /// normalised mean of the action's ask vectors. The closest ask finds a request worded as
    /// one of them; the centre is what they have in common, which a request worded like none
    /// of them still shares (docs/search.md, "Asks").
    pub ask_centroid: f32,
    /// The least an action's ask cosine is, as a share of its closest ask's: a request worded
    /// nearly as one of its asks (an operator's taught request, say) is found by that ask
    /// alone, however far the action's other asks are from it. With `ask_centroid` 0.67 and
    /// this 0.5, it decides only where the centre's cosine is below about a quarter of the
    /// closest ask's (docs/search.md, "Asks").
    pub ask_alone: f32,
    /// The semantic weight when the lexical side's best action explains every word of the
    /// query ("gitops sync", "inspect container details"): between it and [`Weights::semantic`]
    /// by the share of the query that best action leaves unexplained. The meaning decides where
    /// the words did not.
    pub sure_semantic: f32,
    /// How the semantic weight grows with the unexplained share `u`: `sure_semantic +
    /// (semantic − sure_semantic) × u^unsure_power`. Above 1, a query the words explain
    /// mostly ("what it said in the web container", an operator's keyword matched) keeps
    /// close to the sure weight, and the meaning takes over as the words explain less.
    pub unsure_power: f32,
    /// The asks' weight ([`Weights::asks`]) when the lexical side's best action explains every
    /// word of the query; between it and `asks` as for [`Weights::sure_semantic`].
    pub sure_asks: f32,
    /// How much a query's word counts against the asks by how few actions' asks hold it
    /// (0: not at all, its rarity alone; 1: its rarity × its ask IDF).
    pub ask_idf: f32,
}

impl Weights {
    /// The defaults with the knobs `SEARCH_WEIGHTS` names changed (`"semantic=12,asks=0.8"`):
    /// how the search tests and benchmarks measure other weights without a rebuild. Panics on
    /// a malformed value or an unknown name (only tests call it).
    pub fn from_env() -> Weights {
        let mut w = Weights::default();
        let Ok(spec) = std::env::var("SEARCH_WEIGHTS") else {
            return w;
        };
        for pair in spec.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("SEARCH_WEIGHTS: {pair:?} is not name=value"));
            let v: f32 = v
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SEARCH_WEIGHTS: {v:?} is not a number"));
            match k.trim() {
                "semantic" => w.semantic = v,
                "rrf_k" => w.rrf_k = v,
                "semantic_pool" => w.semantic_pool = v as usize,
                "unknown_word" => w.unknown_word = v,
                "verb" => w.verb = v,
                "negated" => w.negated = v,
                "asks" => w.asks = v,
                "ask_centroid" => w.ask_centroid = v,
                "ask_alone" => w.ask_alone = v,
                "sure_semantic" => w.sure_semantic = v,
                "unsure_power" => w.unsure_power = v,
                "sure_asks" => w.sure_asks = v,
                "ask_idf" => w.ask_idf = v,
                other => panic!("SEARCH_WEIGHTS: unknown weight {other:?}"),
            }
        }
        w
    }
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            f_domain: 2.0,
            f_name: 2.5,
            f_title: 2.0,
            f_keywords: 1.5,
            f_description: 0.7,
            f_usage: 0.4,
            f_params: 0.3,
            text: 1.0,
            cover: 2.0,
            precision: 1.5,
            domain_hit: 0.3,
            surface: 0.2,
            list: 0.5,
            keyword: 0.9,
            synonym: 0.8,
            typo: 0.7,
            function_word: 0.25,
            qualifier: 0.5,
            weak_word: 0.5,
            idf: 0.5,
            negated: 0.25,
            verb: 0.5,
            semantic: 64.0,
            rrf_k: 0.0,
            semantic_pool: 24,
            unknown_word: 1.0,
            asks: 0.9,
            ask_centroid: 0.67,
            ask_alone: 0.5,
            sure_semantic: 8.0,
            unsure_power: 2.0,
            sure_asks: 0.7,
            ask_idf: 0.0,
        }
    }
}
