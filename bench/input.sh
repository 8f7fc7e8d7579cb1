#!/bin/sh
# The userspace engine against awk: sonde's `input` probes (cranelift JIT) and mawk / gawk on
# the same generated file, in one run (see docs/PERFORMANCE.md). Needs no root.
#
#   bench/input.sh [LINES] [REPS]        default 10000000 lines, best of 3
#
# Jobs: a log2 histogram of column 2, and a count grouped by column 1, of a two-column file
# of LINES lines ("k<0..99> <1..1000000>"). Also times a 50-line script's compile (check, lower
# and JIT, through --dry-run). Prints wall times and the ratios awk / sonde.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lines=${1:-10000000}
reps=${2:-3}
target=${CARGO_TARGET_DIR:-$root/target}
if [ -z "${SONDE:-}" ]; then
    (cd "$root" && CARGO_TARGET_DIR=$target cargo build --release --quiet)
    SONDE=$target/release/sonde
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
data=$tmp/data.log
mawk -v n="$lines" 'BEGIN { srand(1); for (i = 0; i < n; i++) printf "k%d %d\n", int(rand() * 100), int(rand() * 1000000) + 1 }' > "$data"

# best TIME-IN-SECONDS of $reps runs of "$@" < $data
best() {
    b=""
    i=0
    while [ "$i" -lt "$reps" ]; do
        s=$(date +%s.%N)
        "$@" < "$data" > /dev/null
        e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
        i=$((i + 1))
    done
    printf '%.3f' "$b"
}

hist_sonde=$(best "$SONDE" -q -e 'input { @ = hist(num(field(2))); }')
hist_mawk=$(best mawk '{ h[int(log($2) / log(2))]++ } END { for (k in h) print k, h[k] }')
count_sonde=$(best "$SONDE" -q -e 'input { @[field(1)] = count(); }')
count_mawk=$(best mawk '{ c[$1]++ } END { for (k in c) print k, c[k] }')
if command -v gawk > /dev/null; then
    hist_gawk=$(best gawk '{ h[int(log($2) / log(2))]++ } END { for (k in h) print k, h[k] }')
    count_gawk=$(best gawk '{ c[$1]++ } END { for (k in c) print k, c[k] }')
else
    hist_gawk=nan
    count_gawk=nan
fi

# A 50-line script: 50 input probes, each aggregating something.
script=$tmp/fifty.sd
i=0
while [ "$i" -lt 50 ]; do
    echo "input /nf > $((i % 3))/ { @m$i[field($((i % 2 + 1)))] = sum(num(field(2)) + $i); }" >> "$script"
    i=$((i + 1))
done

compile_s=$(best "$SONDE" -q --dry-run "$script")
jit_ms=$("$SONDE" -q -v --dry-run "$script" 2>&1 | sed -n 's/.*in \([0-9.]*\) ms/\1/p')

ratio() { echo "scale=2; $1 / $2" | bc -l; }
echo "lines: $lines, best of $reps, $(nproc) CPUs"
echo "| job | sonde (s) | mawk (s) | gawk (s) | mawk / sonde | gawk / sonde |"
echo "|---|---|---|---|---|---|"
echo "| log2 histogram of column 2 | $hist_sonde | $hist_mawk | $hist_gawk | $(ratio "$hist_mawk" "$hist_sonde") | $( [ "$hist_gawk" = nan ] && echo - || ratio "$hist_gawk" "$hist_sonde") |"
echo "| count by column 1 | $count_sonde | $count_mawk | $count_gawk | $(ratio "$count_mawk" "$count_sonde") | $( [ "$count_gawk" = nan ] && echo - || ratio "$count_gawk" "$count_sonde") |"
echo "| 50-line script: start, check, compile, JIT, exit (--dry-run) | $compile_s | | | | |"
echo "| 50-line script: JIT alone (-v) | $(echo "scale=4; $jit_ms / 1000" | bc -l) | | | | |"
