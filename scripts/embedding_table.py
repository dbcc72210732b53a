"""The search's static embedding table file (`crates/catalog/data/minilm-static.bin`, read by
`crates/catalog/src/semantic.rs`), shared by `distill_embeddings.py` (which writes the base
table) and `train_embeddings.py` (which reads it and writes the trained one).

Format: the magic, then little-endian u32 token count, dimensions and names' byte length; the
token names joined by newlines (UTF-8); one f32 scale per token; the vectors as int8, row by
row (a token's vector is its row times its scale).
"""

import io
import struct
import sys

import numpy as np

MAGIC = b"ARCSEMB1"


def read_table(raw):
    """The names and the dequantised vectors (float32) of a table file's bytes."""
    if raw[:8] != MAGIC:
        sys.exit("the base table is not an ARCSEMB1 file")
    n, dims, names_len = struct.unpack("<III", raw[8:20])
    names = raw[20 : 20 + names_len].decode("utf-8").split("\n")
    at = 20 + names_len
    scales = np.frombuffer(raw[at : at + 4 * n], dtype="<f4")
    vectors = np.frombuffer(raw[at + 4 * n : at + 4 * n + n * dims], dtype=np.int8).reshape(n, dims)
    return names, vectors.astype(np.float32) * scales[:, None]


def write_table(names, table):
    """A table file's bytes: each token's row quantised to int8 with its own scale (its largest
    magnitude maps to 127; an all-zero row gets scale 1)."""
    scale = np.abs(table).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(table / scale[:, None]), -127, 127).astype(np.int8)
    blob = "\n".join(names).encode("utf-8")
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(struct.pack("<III", len(names), table.shape[1], len(blob)))
    buf.write(blob)
    buf.write(scale.astype("<f4").tobytes())
    buf.write(q.tobytes())
    return buf.getvalue()
