#!/bin/sh
# Writes link/startup-order.txt: the functions of sonde a run's start-up calls (a BEGIN-only
# script, and a tracepoint with a count, a printf and an interval), in the order the linker
# is to lay them out together (build.rs). Needs root and valgrind; run after changes that
# rename or add much of the start-up path, then compare peak RSS (bench/run.sh --only begin).
#
#   link/startup-order.sh [path/to/release/sonde]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sonde=${1:-$(dirname "$here")/target/release/sonde}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

run() {
    out=$1
    shift
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/$out" "$sonde" "$@" \
        >/dev/null 2>&1
}
run begin.cg -e 'BEGIN { exit(); }'
run events.cg -e 'tracepoint:syscalls:sys_enter_getppid { @ = count(); printf("%d\n", pid); }
                  interval:ms:500 { exit(); }'

# callgrind names each function once ("fn=(id) name"), then by id; keep the functions of
# sonde's own object ("ob="), first seen first.
python3 - "$tmp/begin.cg" "$tmp/events.cg" > "$here/startup-order.txt" <<'PY'
import re, sys
seen, names = set(), []
for path in sys.argv[1:]:
    objects, functions, current = {}, {}, None
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, i, name = m.groups()
            if name:
                objects[i] = name
            if kind == "ob":
                current = objects.get(i, "")
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, i, name = m.groups()
            if name and i not in functions:
                functions[i] = name
            name = functions.get(i)
            if kind == "fn" and current.endswith("/sonde") and name and not name.startswith("0x"):
                if name not in seen:
                    seen.add(name)
                    names.append(name)
print("\n".join(names))
PY
wc -l "$here/startup-order.txt"
