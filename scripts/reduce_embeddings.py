#!/usr/bin/env python3
"""Reduces the trained table to the dimensions the search ships (docs/search.md, "The trained
table"; the fourth stage): `scripts/train_embeddings.py`'s 256-dimension table projected on its
first DIMS principal axes and stored as int8 with one scale per token, as before.

    python3 -m venv /tmp/reduce && /tmp/reduce/bin/pip install numpy==2.4.6
    /tmp/reduce/bin/python scripts/reduce_embeddings.py target/search/minilm-trained.bin

(from the repository's root, a second). The input is the third stage's output, the table the
search shipped at bb2e941
(`git show bb2e941:crates/catalog/data/minilm-static.bin > target/search/minilm-trained.bin`).
It writes `crates/catalog/data/minilm-static.bin` and prints its SHA-256 for
`crates/catalog/data/minilm-static.sha256`.

The axes are the eigenvectors of the table's uncentred second-moment matrix (the search
compares weighted means of token vectors by cosine, so the vectors are projected as they are;
the table's mean is near zero anyway), each signed so that its largest entry is positive. The
first 128 keep 95.5% of the table's energy. Chosen on the sets H and I (docs/search.md,
"Independent sets") as the smallest variant within a query of the full table's top-1/3/10 per
set and style, also when the table is turned by a random rotation before quantizing (as a test
of luck: a few of their queries are near ties that any change of the table flips), in four of
five rotations. 112 and 96 dimensions failed; 4 bits a value (a scale per token, after a
rotation) at 128, 160 or 192 dimensions passed in two rotations of five or fewer; 4 bits at
256, the same size as this, in five, but keeps the search's vectors twice as long.
Deterministic: the
same input gives the same bytes (with the pinned numpy).
"""

import hashlib
import sys

import numpy as np

from embedding_table import read_table, write_table

# The third stage's output (the table committed at bb2e941).
TRAINED_SHA256 = "e924042c61fc6beb403b604199bd4ee96637f81cae01c792595c2a50909d56d8"
DIMS = 128
OUT = "crates/catalog/data/minilm-static.bin"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    raw = open(sys.argv[1], "rb").read()
    got = hashlib.sha256(raw).hexdigest()
    if got != TRAINED_SHA256:
        sys.exit(f"{sys.argv[1]}: SHA-256 {got}, not the trained table's {TRAINED_SHA256}")
    names, table = read_table(raw)
    t = table.astype(np.float64)
    energy, axes = np.linalg.eigh(t.T @ t)
    order = np.argsort(energy)[::-1][:DIMS]
    axes = axes[:, order]
    axes *= np.where(axes[np.abs(axes).argmax(0), np.arange(DIMS)] < 0, -1.0, 1.0)
    kept = energy[order].sum() / energy.sum()
    data = write_table(names, (t @ axes).astype(np.float32))
    open(OUT, "wb").write(data)
    print(
        f"{OUT}: {len(names)} tokens x {DIMS} dims ({kept:.1%} of the energy), {len(data)} bytes, "
        f"sha256 {hashlib.sha256(data).hexdigest()}"
    )


if __name__ == "__main__":
    main()
