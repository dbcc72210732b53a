# Sourced by scripts/dist.sh and scripts/test-dist.sh: makes sure the pinned packaging tools are
# there, and sets DIST_TOOLS (a virtualenv with scripts/dist-tools.txt) and DIST_TOOLS_NPM (a
# folder with the node_modules of scripts/dist-tools-npm/package-lock.json). Each is made
# under CARGO_TARGET_DIR (default target/) when missing or when its pins changed.
: "${TARGET_DIR:?dist-tools.sh needs TARGET_DIR}"
DIST_TOOLS="${DIST_TOOLS:-$TARGET_DIR/dist-tools}"
if [[ ! -x "$DIST_TOOLS/bin/maturin" ]] || ! cmp -s scripts/dist-tools.txt "$DIST_TOOLS/dist-tools.txt"; then
  echo "== tools: a virtualenv at $DIST_TOOLS with scripts/dist-tools.txt"
  python3 -m venv "$DIST_TOOLS"
  "$DIST_TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/dist-tools.txt
  cp scripts/dist-tools.txt "$DIST_TOOLS/dist-tools.txt"
fi
DIST_TOOLS_NPM="${DIST_TOOLS_NPM:-$TARGET_DIR/dist-tools-npm}"
if ! cmp -s scripts/dist-tools-npm/package-lock.json "$DIST_TOOLS_NPM/package-lock.json" ||
   [[ ! -d "$DIST_TOOLS_NPM/node_modules" ]]; then
  echo "== tools: npm ci of scripts/dist-tools-npm into $DIST_TOOLS_NPM"
  mkdir -p "$DIST_TOOLS_NPM"
  cp scripts/dist-tools-npm/package.json scripts/dist-tools-npm/package-lock.json "$DIST_TOOLS_NPM/"
  npm ci --prefix "$DIST_TOOLS_NPM" --no-audit --no-fund --loglevel=error >/dev/null
fi
export DIST_TOOLS DIST_TOOLS_NPM
