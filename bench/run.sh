#!/bin/sh
# Runs the sonde vs bpftrace benchmark (see docs/PERFORMANCE.md). Needs root.
#
#   bench/run.sh [bench.py options...]     e.g. bench/run.sh --reps 3 --markdown /tmp/table.md
#
# Builds a release sonde (CARGO_TARGET_DIR, default target/; or set SONDE=/path/to/sonde to
# use that binary and skip the build), and loadgen/floor from
# bench/ (or $SONDE_BENCH_SRC) into a temporary directory; nothing is committed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
src=${SONDE_BENCH_SRC:-$here}
target=${CARGO_TARGET_DIR:-$root/target}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

gcc -O2 -Wall -o "$tmp/loadgen" "$src/loadgen.c"
gcc -O2 -Wall -o "$tmp/floor" "$src/floor.c"
gcc -O2 -Wall -o "$tmp/rss" "$src/rss.c"
if [ -z "${SONDE:-}" ]; then
    (cd "$root" && CARGO_TARGET_DIR=$target cargo build --release --quiet)
    SONDE=$target/release/sonde
fi

python3 "$here/bench.py" --sonde "$SONDE" --bpftrace "${BPFTRACE:-/usr/bin/bpftrace}" \
    --loadgen "$tmp/loadgen" --floor "$tmp/floor" --rss "$tmp/rss" "$@"
