#!/usr/bin/env bash
# Build everything a user installs, for one platform, into dist/ (docs/install.md, "Building
# the packages"):
#
#   dist/arcane-mcp-vVERSION-TRIPLE.tar.gz   the release archive (binary, README, licences)
#   dist/arcane_mcp-VERSION-*.whl            the PyPI wheel carrying the binary (maturin, bin)
#   dist/arcane-mcp-server-VERSION.tgz       the npm launcher package (`npm pack`)
#   dist/arcane-mcp-server-PLATFORM-VERSION.tgz  the npm package with the binary
#   dist/chart/arcane-mcp-VERSION.tgz        the Helm chart, packaged
#   dist/SHA256SUMS
#
# Usage: scripts/dist.sh [--target TRIPLE] [--profile PROFILE] [--skip-chart]
#   --target TRIPLE    build for a Rust target other than the host's (the release workflow
#                      does, on each platform's runner); default: the host.
#   --profile PROFILE  the Cargo profile of the binary: release (the default, what is
#                      published) or dev, which .ci/run uses: the same packages around the
#                      debug binary, built in about a minute instead of a release build's 10+.
#   --skip-chart       leave the chart out (the release builds it once, not per platform).
# Environment: DIST (default ./dist), CARGO_TARGET_DIR (cargo's), DIST_TOOLS and
# DIST_TOOLS_NPM (the pinned tools of scripts/dist-tools.txt and scripts/dist-tools-npm/;
# made under target/ by scripts/dist-tools.sh when missing).
#
# The binary is built once (`cargo build --profile PROFILE --locked`); maturin's own cargo call
# (same profile, same flags) then finds it fresh and only packs it, so the wheel carries the
# very binary of the archive and of the npm package.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

TARGET=""
PROFILE=release
SKIP_CHART=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) TARGET="${2:?--target needs a Rust target triple}"; shift 2 ;;
    --profile) PROFILE="${2:?--profile needs a Cargo profile: release or dev}"; shift 2 ;;
    --skip-chart) SKIP_CHART=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "dist.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

# Windows runners have `python`, not always `python3`.
if ! type -P python3 >/dev/null; then python3() { python "$@"; }; fi

HOST="$(rustc -vV | sed -n 's/^host: //p')"
TARGET="${TARGET:-$HOST}"
DIST="${DIST:-$ROOT/dist}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VERSION="$(python3 -c 'import tomllib,sys; print(tomllib.load(open(sys.argv[1],"rb"))["package"]["version"])' Cargo.toml)"

# The npm package of a Rust target: Node's process.platform-process.arch names.
case "$TARGET" in
  x86_64-unknown-linux-*) NPM_PLATFORM=linux-x64 ;;
  aarch64-unknown-linux-*) NPM_PLATFORM=linux-arm64 ;;
  aarch64-apple-darwin) NPM_PLATFORM=darwin-arm64 ;;
  x86_64-apple-darwin) NPM_PLATFORM=darwin-x64 ;;
  x86_64-pc-windows-msvc) NPM_PLATFORM=win32-x64 ;;
  *) echo "dist.sh: no npm package is defined for $TARGET (packaging/npm/arcane-mcp-server/package.json lists them)" >&2; exit 2 ;;
esac
EXE=arcane-mcp
[[ "$TARGET" == *windows* ]] && EXE=arcane-mcp.exe

# Where cargo puts the binary: target/PROFILE_DIR for the host, target/TRIPLE/PROFILE_DIR
# otherwise, PROFILE_DIR being `debug` for the dev profile and the profile's name for others.
case "$PROFILE" in
  release) PROFILE_DIR=release ;;
  dev) PROFILE_DIR=debug ;;
  *) echo "dist.sh: --profile must be release or dev, not '$PROFILE'" >&2; exit 2 ;;
esac
TARGET_ARGS=()
BIN="$TARGET_DIR/$PROFILE_DIR/$EXE"
if [[ "$TARGET" != "$HOST" ]]; then
  TARGET_ARGS=(--target "$TARGET")
  BIN="$TARGET_DIR/$TARGET/$PROFILE_DIR/$EXE"
fi

# The pinned packaging tools (maturin; helm's engine, the Kubernetes and prometheus-operator
# schemas for the chart).
source scripts/dist-tools.sh

case "$DIST" in /|"$ROOT"|"$HOME") echo "dist.sh: DIST=$DIST would be emptied; choose a folder of its own" >&2; exit 2 ;; esac
rm -rf "$DIST"
mkdir -p "$DIST"
# Absolute: maturin and npm pack write to it from the staging folders.
DIST="$(cd "$DIST" && pwd)"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT

echo "== cargo build --profile $PROFILE --locked --bin arcane-mcp ${TARGET_ARGS[*]}"
cargo build --profile "$PROFILE" --locked --bin arcane-mcp "${TARGET_ARGS[@]}"
[[ -x "$BIN" ]] || { echo "dist.sh: cargo built no $BIN" >&2; exit 1; }

echo "== the release archive"
# The same layout as the release workflow's archives (and so the Homebrew formula's).
name="arcane-mcp-v$VERSION-$TARGET"
mkdir -p "$STAGE/$name"
cp README.md LICENSE "$STAGE/$name/"
cp third_party/arcane/LICENSE "$STAGE/$name/LICENSE-arcane"
cp "$BIN" "$STAGE/$name/"
if [[ "$TARGET" == *windows* ]]; then
  (cd "$STAGE" && python3 -m zipfile -c "$DIST/$name.zip" "$name")
else
  tar -C "$STAGE" -czf "$DIST/$name.tar.gz" "$name"
fi

echo "== the PyPI wheel (maturin, bindings = \"bin\")"
# Linux: the release binaries are static (musl), so one wheel serves glibc and musl systems
# alike; a glibc host build gets maturin's manylinux tag for the glibc it links.
COMPAT=()
[[ "$TARGET" == *linux-musl ]] && COMPAT=(--compatibility manylinux_2_17 musllinux_1_2)
# maturin reads licence files beside pyproject.toml: stage the project with them.
cp -r packaging/pypi "$STAGE/pypi"
cp LICENSE "$STAGE/pypi/LICENSE"
cp third_party/arcane/LICENSE "$STAGE/pypi/LICENSE-arcane"
python3 - "$STAGE/pypi/pyproject.toml" "$ROOT/Cargo.toml" <<'PY'
import json, re, sys
path, manifest = sys.argv[1], sys.argv[2]
text = open(path).read()
text, n = re.subn(r"(?m)^manifest-path = .*$", "manifest-path = " + json.dumps(manifest), text)
assert n == 1, "packaging/pypi/pyproject.toml has no manifest-path line"
open(path, "w").write(text)
PY
(cd "$STAGE/pypi" && CARGO_TARGET_DIR="$TARGET_DIR" "$DIST_TOOLS/bin/maturin" build --profile "$PROFILE" \
  "${TARGET_ARGS[@]}" "${COMPAT[@]}" --out "$DIST")

echo "== the npm packages (npm pack)"
# arcane-mcp-server-PLATFORM: the binary, installed by npm only where os/cpu match (the launcher's
# optionalDependencies list every platform).
node scripts/npm-platform.mjs "$NPM_PLATFORM" "$VERSION" "$BIN" "$STAGE/npm-platform"
cp LICENSE "$STAGE/npm-platform/LICENSE"
(cd "$STAGE/npm-platform" && npm pack --silent --pack-destination "$DIST" >/dev/null)
# arcane-mcp-server: the launcher.
cp -r packaging/npm/arcane-mcp-server "$STAGE/npm-launcher"
cp packaging/pypi/README.md "$STAGE/npm-launcher/README.md"
cp LICENSE "$STAGE/npm-launcher/LICENSE"
(cd "$STAGE/npm-launcher" && npm pack --silent --pack-destination "$DIST" >/dev/null)

if [[ $SKIP_CHART == 0 ]]; then
  echo "== the Helm chart (linted, rendered, validated, packaged)"
  "$DIST_TOOLS/bin/python" scripts/chart.py package charts/arcane-mcp "$DIST/chart"
fi

# sha256sum's format (`sha256sum -c` reads it), written by Python: macOS runners lack sha256sum.
python3 - "$DIST" <<'PY'
import hashlib, pathlib, sys
dist = pathlib.Path(sys.argv[1])
files = sorted(p for p in dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(dist).as_posix()}\n" for p in files]
(dist / "SHA256SUMS").write_text("".join(lines))
PY
echo "== dist/ for $TARGET (version $VERSION)"
cat "$DIST/SHA256SUMS"
