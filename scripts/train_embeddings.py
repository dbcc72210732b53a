#!/usr/bin/env python3
"""Trains the search's static embedding table for retrieval (docs/search.md, "Semantic
retrieval", third stage): the table `scripts/distill_embeddings.py` distils from
all-MiniLM-L6-v2 and fits to the built-in asks is trained further, contrastively, so that a
request lands nearer the action it asks for than any other action, scored nearly as the search
scores it (below: the asks' share is fixed, the floor of `Weights::ask_alone` and the lexical
side are left out).

    python3 -m venv /tmp/train && /tmp/train/bin/pip install numpy==2.4.6 pyyaml==6.0.3 \\
        jax==0.10.2 jaxlib==0.10.2 optax==0.2.8
    python3 scripts/distill_embeddings.py WHEEL target/search/minilm-fitted.bin   # stages 1-2
    cargo run -p arcane-catalog --example search_inputs -- target/search/inputs.jsonl \\
        tests/search_eval_independent_a.yaml tests/search_eval_heldout_{b,c,d,e,f,g}.yaml
    /tmp/train/bin/python scripts/train_embeddings.py target/search/minilm-fitted.bin \\
        target/search/inputs.jsonl

(from the repository's root; about a minute on the 2-core machine). It writes
`target/search/minilm-trained.bin` and prints its SHA-256; `scripts/reduce_embeddings.py`
(the fourth stage, which pins it) makes the table the search ships from it.

What it reads: the base table (its SHA-256 is checked against BASE_SHA256); the export of the
`search_inputs` example — for every action the weighted words of its text, its asks and its
keywords exactly as the search reads them, and the queries of the evaluation sets named on its
command line (here A to G, never the held-out sets H and I); and the five round files of asks
as they stood at ROUNDS_COMMIT (`git show`; they were merged into `overrides/asks/` after it), to
know which round (which writers) each ask comes from. An ask none of them holds (one written
later, or an operator's) counts as a round of its own, "operator".

The model: every token's vector is the base table's mapped by one shared linear map (so a
token no training text holds moves with the others) plus a residual of its own for the tokens
the training texts hold, both pulled toward no change by a small ridge penalty. A text's
vector is the normalised weighted mean of its tokens' vectors, as `semantic::Embedder::embed`.
An action's score for a request is the search's: 0.1 × the cosine with the action's text +
0.9 × (0.33 × the closest ask + 0.67 × the centre of its asks) (`Weights::asks`,
`Weights::ask_centroid`). The loss: softmax cross-entropy of the intended action among all
actions (temperature 0.05). Training requests: every built-in ask, scored against the other
asks with its own writers' asks of its own action left out (its round: a writer's asks for one
action resemble each other more than anyone's request does), and every query of the
evaluation sets given. Adam, 8 epochs of batches of 512, fixed seed, one thread of
computation: the same inputs give the same bytes on the same machine with the same versions of
jax and jaxlib (floating-point sums on another CPU may round differently).

Known imprecision, kept because the shipped table was trained with it: a round is looked up by
(action, ask text), so an ask written word for word in two rounds for one action (63 of them)
is labelled in both places with the round of the file read last (sorted names): both copies
leave that round's asks out, and the other copy's own round is not left out. Keying by position
would fix it and change the table.
"""

import collections
import hashlib
import json
import os
import subprocess
import sys

# Deterministic: one thread of computation (Eigen's, which XLA's CPU backend splits a matrix
# product over), fixed seed; added to any flags already set.
os.environ["XLA_FLAGS"] = " ".join(
    filter(None, [os.environ.get("XLA_FLAGS", ""), "--xla_cpu_multi_thread_eigen=false"])
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import yaml  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

from embedding_table import read_table, write_table  # noqa: E402

# The commit whose round files of asks the shipped table was trained with (in sorted names, as
# the glob `overrides/asks*.yaml` read them then); after it they were merged by domain.
ROUNDS_COMMIT = "91f96e102059bf342a864b0f8c9bf63427f7ea62"
ROUND_FILES = ("asks-round2.yaml", "asks-round3.yaml", "asks-round4.yaml", "asks-round5.yaml", "asks.yaml")
BASE_SHA256 = "3b0b59e29a7f08abc762a89df3c9b41705c8078c44f6e1c4ae5dd8adeb0dd9c0"
OUT = "target/search/minilm-trained.bin"

# The search's scoring (crates/catalog/src/search/weights.rs, `Weights::default`): text, closest ask,
# centre of the asks.
MIX = (0.1, 0.9 * 0.33, 0.9 * 0.67)
TEMPERATURE = 0.05
RIDGE = 1e-5
LEARNING_RATE = 3e-3
EPOCHS = 8
BATCH = 512
SEED = 0


class Tokens:
    """WordPiece over the table's names and the token weights of `semantic::Embedder`."""

    def __init__(self, names):
        self.ids = {t: i for i, t in enumerate(names)}
        self.first = self.ids["the"]
        self.n = len(names)
        self.memo = {}

    def rarity(self, i):
        n = max(self.n - self.first, 0) + 2.0
        r = max(i - self.first, 0) + 2.0
        return min(max(np.log(r) / np.log(n), 0.05), 1.0)

    def pieces(self, word):
        if word in self.memo:
            return self.memo[word]
        out, start = [], 0
        if not word or len(word) > 100:
            out = None
        while out is not None and start < len(word):
            end, found = len(word), None
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in self.ids:
                    found = self.ids[piece]
                    break
                end -= 1
            if found is None:
                out = None
                break
            out.append(found)
            start = end
        self.memo[word] = out or []
        return self.memo[word]

    def bag(self, words):
        """Weighted words → {token: weight}, as `Embedder::embed` spreads them."""
        bag = collections.defaultdict(float)
        for word, weight in words:
            ps = self.pieces(word)
            for i in ps:
                bag[i] += weight / len(ps) * self.rarity(i)
        return bag


def triplets(bags, col):
    rows, cols, vals = [], [], []
    for r, bag in enumerate(bags):
        for t, v in sorted(bag.items()):
            if t in col:
                rows.append(r)
                cols.append(col[t])
                vals.append(v)
    return (jnp.array(rows, jnp.int32), jnp.array(cols, jnp.int32), jnp.array(vals, jnp.float32), len(bags))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: train_embeddings.py BASE_TABLE INPUTS.jsonl (see the module's doc)")
    raw = open(sys.argv[1], "rb").read()
    got = hashlib.sha256(raw).hexdigest()
    if got != BASE_SHA256:
        sys.exit(f"base table: SHA-256 {got}, expected {BASE_SHA256}: not the distilled table")
    names, base = read_table(raw)
    tok = Tokens(names)

    rounds = {}
    for name in ROUND_FILES:
        text = subprocess.run(
            ["git", "show", f"{ROUNDS_COMMIT}:overrides/{name}"], check=True, capture_output=True, text=True
        ).stdout
        for action, entry in (yaml.safe_load(text) or {}).get("actions", {}).items():
            for ask in (entry or {}).get("asks", []) or []:
                rounds[(action, ask)] = name
    if not rounds:
        sys.exit("no asks found: run from the repository's root")

    actions, queries = [], []
    for line in open(sys.argv[2], encoding="utf-8"):
        d = json.loads(line)
        (actions if "action" in d else queries).append(d)
    index = {a["action"]: i for i, a in enumerate(actions)}
    text_bags = [tok.bag(a["words"]) for a in actions]
    # The pool of asks (keywords count as asks, as in the search) and each one's round.
    pool, owner, round_of, is_ask = [], [], [], []
    for i, a in enumerate(actions):
        for ask in a["asks"]:
            pool.append(tok.bag(ask["words"]))
            owner.append(i)
            round_of.append(rounds.get((a["action"], ask["text"]), "operator"))
            is_ask.append(True)
        for kw in a["keywords"]:
            pool.append(tok.bag(kw["words"]))
            owner.append(i)
            round_of.append("keywords")
            is_ask.append(False)
    extra = [q for q in queries if q["want"] and q["want"][0] in index]
    extra_bags = [tok.bag(q["words"]) for q in extra]
    print(f"{len(actions)} actions, {len(pool)} asks and keywords, {len(extra)} set queries", file=sys.stderr)

    used = sorted({t for b in text_bags + pool + extra_bags for t in b})
    col = {t: c for c, t in enumerate(used)}
    text_t = triplets(text_bags, col)
    pool_t = triplets(pool, col)
    extra_t = triplets(extra_bags, col)
    n_pool, n_actions, dims = len(pool), len(actions), base.shape[1]
    codes = {r: k for k, r in enumerate(sorted(set(round_of)))}
    n_rounds = len(codes)
    pool_owner = jnp.array(owner, jnp.int32)
    pool_round = jnp.array([codes[r] for r in round_of], jnp.int32)
    q_owner = jnp.concatenate([pool_owner, jnp.array([index[q["want"][0]] for q in extra], jnp.int32)])
    q_round = jnp.concatenate([pool_round, jnp.full(len(extra), -1, jnp.int32)])
    per = collections.defaultdict(list)
    for i, o in enumerate(owner):
        per[o].append(i)
    width = max(len(v) for v in per.values())
    padded = np.full((n_actions, width), -1, np.int32)
    for o, v in per.items():
        padded[o, : len(v)] = v
    pad_index, pad_real = jnp.array(np.maximum(padded, 0)), jnp.array(padded >= 0)
    base_used = jnp.array(base[used])

    def embed(table, t):
        rows, cols, vals, n = t
        x = jax.ops.segment_sum(table[cols] * vals[:, None], rows, num_segments=n)
        return x / (jnp.linalg.norm(x, axis=1, keepdims=True) + 1e-9)

    def loss(p, batch):
        table = base_used @ p["map"] + p["own"]
        texts, asks = embed(table, text_t), embed(table, pool_t)
        q = jnp.concatenate([asks, embed(table, extra_t)])[batch]
        qo, qr = q_owner[batch], q_round[batch]
        text_cos = q @ texts.T
        # The closest ask: not the request itself, nor its own round's asks of its action.
        cos = q @ asks.T
        out = (jnp.arange(n_pool)[None, :] == batch[:, None]) | (
            (pool_owner[None, :] == qo[:, None]) & (pool_round[None, :] == qr[:, None])
        )
        cos = jnp.where(out, -2.0, cos)
        closest = jnp.where(pad_real[None], cos[:, pad_index], -2.0).max(-1)
        has = closest > -1.5
        # The centre of each action's asks; for the request's own action, without its round.
        sums = jax.ops.segment_sum(asks, pool_owner, num_segments=n_actions)
        by_round = jax.ops.segment_sum(
            asks, pool_owner * n_rounds + pool_round, num_segments=n_actions * n_rounds
        ).reshape(n_actions, n_rounds, -1)
        own = sums[qo] - jnp.where((qr >= 0)[:, None], by_round[qo, jnp.maximum(qr, 0)], 0.0)
        centre = q @ (sums / (jnp.linalg.norm(sums, axis=1, keepdims=True) + 1e-9)).T
        own_cos = jnp.sum(q * own, 1) / (jnp.linalg.norm(own, axis=1) + 1e-9)
        centre = centre.at[jnp.arange(q.shape[0]), qo].set(own_cos)
        score = jnp.where(has, MIX[0] * text_cos + MIX[1] * closest + MIX[2] * centre, text_cos)
        ll = jax.nn.log_softmax(score / TEMPERATURE, axis=1)
        nll = -jnp.take_along_axis(ll, qo[:, None], 1).mean()
        ridge = RIDGE * (jnp.sum(p["own"] ** 2) + jnp.sum((p["map"] - jnp.eye(dims)) ** 2))
        return nll + ridge, nll

    params = {"map": jnp.eye(dims), "own": jnp.zeros((len(used), dims))}
    opt = optax.adam(LEARNING_RATE)
    state = opt.init(params)

    @jax.jit
    def step(p, s, batch):
        (_, nll), g = jax.value_and_grad(loss, has_aux=True)(p, batch)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, nll

    train = np.concatenate([np.array([i for i in range(n_pool) if is_ask[i]]), n_pool + np.arange(len(extra))])
    rng = np.random.default_rng(SEED)
    for epoch in range(EPOCHS):
        order = rng.permutation(train)
        losses = []
        for s in range(0, len(order), BATCH):
            params, state, nll = step(params, state, jnp.array(order[s : s + BATCH], jnp.int32))
            losses.append(float(nll))
        print(f"epoch {epoch + 1}: loss {np.mean(losses):.3f}", file=sys.stderr, flush=True)

    table = np.asarray(base @ np.asarray(params["map"]), np.float32)
    table[used] += np.asarray(params["own"])
    data = write_table(names, table)
    open(OUT, "wb").write(data)
    print(f"{OUT}: {len(names)} tokens x {dims} dims, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
