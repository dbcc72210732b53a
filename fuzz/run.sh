#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one after the other:
#   fuzz/run.sh SECONDS [TARGET...]
# Installs cargo-fuzz when missing, builds the targets with the nightly toolchain, seeds the
# corpora from the repository's files (fuzz/seed.py), and gives each target its dictionary.
# Exits non-zero when a target crashes (a panic, a failed invariant, a timeout or running out
# of memory) and prints where the crashing input was written (fuzz/artifacts/TARGET/); replay
# one with `fuzz/target/<triple>/release/TARGET fuzz/artifacts/TARGET/crash-…`.
#
# Settings (environment):
#   FUZZ_SANITIZER  none (default) or address: the code under test is safe Rust, where
#                   panics and overflow checks find the bugs; AddressSanitizer halves the speed.
#   FUZZ_PROFILE    release (default; optimized, with debug assertions) or dev (unoptimized:
#                   builds faster, runs slower; what CI uses for its short smoke run).
#   FUZZ_JOBS       cargo build jobs (default 1: the machine is shared).
#   FUZZ_BUILD_ONLY 1: install, seed and build, run nothing (CI builds while other steps run).
#   FUZZ_MAX_SEEDS  run each target on at most this many of its seeds (the smallest), in a
#                   scratch corpus under target/: libFuzzer replays a whole corpus before its
#                   time limit counts, which for the unoptimized openapi and overlay targets is
#                   minutes; CI's smoke run sets it.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
all=(escape error_text path_segment openapi overlay redact client_profile jsonlines websocket jsonrpc oauth)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi
sanitizer=${FUZZ_SANITIZER:-none}
profile=${FUZZ_PROFILE:-release}
export CARGO_BUILD_JOBS=${FUZZ_JOBS:-1}

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: libFuzzer targets need a nightly toolchain: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz (crates.io)"
    # Unoptimized: it only drives cargo, and builds in about half the time (CI installs it
    # on every run).
    cargo install cargo-fuzz --locked --debug
fi

echo "== seeding fuzz/corpus from the repository's files"
python3 seed.py

build=(cargo +nightly fuzz build --sanitizer "$sanitizer")
[ "$profile" = dev ] && build+=(--dev)
echo "== ${build[*]}"
start=$(date +%s)
"${build[@]}"
echo "== built in $(($(date +%s) - start)) s"
[ "${FUZZ_BUILD_ONLY:-}" = 1 ] && exit 0

triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
dir=release
[ "$profile" = dev ] && dir=debug
bin="target/$triple/$dir"

# Each target's dictionary (libFuzzer takes one: the parts are joined) and longest input.
dicts() {
    case $1 in
        escape | websocket) echo markdown ;;
        error_text | jsonlines) echo markdown json ;;
        path_segment) echo path ;;
        openapi) echo json openapi yaml ;;
        overlay) echo yaml json ;;
        redact) echo redact json ;;
        client_profile) echo json ;;
        jsonrpc) echo jsonrpc json ;;
        oauth) echo json yaml ;;
    esac
}
max_len() {
    case $1 in
        openapi) echo 65536 ;;
        overlay | jsonrpc | oauth) echo 16384 ;;
        *) echo 4096 ;;
    esac
}

mkdir -p logs target/dicts
failed=()
printf '%-15s %8s %12s %8s %7s %s\n' target seconds executions corpus crashes log > logs/summary.txt
for t in "${targets[@]}"; do
    dict=target/dicts/$t.dict
    : > "$dict"
    for d in $(dicts "$t"); do cat "dict/$d.dict" >> "$dict"; done
    mkdir -p "corpus/$t" "artifacts/$t"
    corpus="corpus/$t"
    if [ -n "${FUZZ_MAX_SEEDS:-}" ]; then
        corpus="target/smoke-corpus/$t"
        rm -rf "$corpus"
        mkdir -p "$corpus"
        # The seeds' names are content hashes: no spaces. Smallest first.
        for f in $(ls -Sr "corpus/$t" | head -n "$FUZZ_MAX_SEEDS"); do cp "corpus/$t/$f" "$corpus/"; done
    fi
    echo "== $t: ${seconds} s"
    status=0
    "$bin/$t" "$corpus" \
        -max_total_time="$seconds" -max_len="$(max_len "$t")" -dict="$dict" \
        -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" > "logs/$t.log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log" | tail -1)
    corpus=$(find "$corpus" -type f | wc -l)
    crashes=0
    if [ "$status" -ne 0 ]; then
        crashes=1
        failed+=("$t")
        echo "!! $t failed (exit $status); the input:" >&2
        grep -E 'Test unit written to|^SUMMARY|panicked at' "logs/$t.log" >&2 || tail -20 "logs/$t.log" >&2
    fi
    printf '%-15s %8s %12s %8s %7s %s\n' "$t" "$seconds" "${execs:-?}" "$corpus" "$crashes" "fuzz/logs/$t.log" | tee -a logs/summary.txt
done
echo "== summary (fuzz/logs/summary.txt)"
cat logs/summary.txt
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz/run.sh: crashes in: ${failed[*]} — inputs under fuzz/artifacts/<target>/" >&2
    exit 1
fi
