#!/usr/bin/env python3
"""What recording a program's allocations costs it (docs/PERFORMANCE.md, "allocrecord").

    sudo python3 bench/allocs_record.py --sonde target/release/sonde [--reps 5] [--calls 200000]

Builds bench/allocs.c (N times malloc(64)+free, its own loop time printed) and runs it, as
medians over --reps repetitions (the variants alternate inside each repetition):

- untraced;
- under `sonde tool allocrecord -c` (every call recorded to a file, with its stack id);
- under glibc's `memusage` (LD_PRELOAD: counts and a histogram in process, no record of the
  calls);
- under bpftrace (0.17 here) running the equivalent script: uprobes and uretprobes on the
  same eight functions, one line per completed call (tid, time, size, block) to /dev/null,
  no stacks (bpftrace cannot give a stack as an id).

Prints the added ns per call (the loop's time over the untraced one, divided by its 2N calls)
and each tool's ratio to sonde's.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

FUNCS = ["malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc"]

BPFTRACE = "\n".join(
    [", ".join(f"uprobe:libc:{f}" for f in FUNCS) + " /pid == cpid/ { @size[tid] = arg0; }",
     ", ".join(f"uretprobe:libc:{f}" for f in FUNCS)
     + ' /pid == cpid/ { printf("%d %d %d %d\\n", tid, nsecs, @size[tid], retval); }',
     'uprobe:libc:free /pid == cpid/ { printf("%d %d %d\\n", tid, nsecs, arg0); }',
     "END { clear(@size); }", ""])


def loop_ns(argv, env=None):
    """Runs `argv` (a tracer with the load as its command, or the load) and returns the
    loop time the load printed (its only all-digit line)."""
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    lines = [l for l in out.stdout.split("\n") if l.strip().isdigit()]
    if not lines:
        raise SystemExit(f"{argv[0]}: no loop time in its output:\n{out.stdout}\n{out.stderr}")
    return int(lines[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sonde", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200000, help="malloc+free pairs per run")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="allocs-record-")
    try:
        load = os.path.join(tmp, "allocs")
        subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", load,
                        os.path.join(HERE, "allocs.c")], check=True)
        cmd = f"{load} {args.calls}"
        script = os.path.join(tmp, "allocs.bt")
        with open(script, "w") as f:
            f.write(BPFTRACE)
        variants = {
            "untraced": [load, str(args.calls)],
            "sonde allocrecord": [args.sonde, "tool", "allocrecord", "-q", "-c", cmd, "-o",
                                  os.path.join(tmp, "rec.allocs")],
        }
        if shutil.which("memusage"):
            variants["glibc memusage"] = ["memusage", load, str(args.calls)]
        if shutil.which("bpftrace"):
            variants["bpftrace"] = ["bpftrace", "-q", "-o", "/dev/null", "-c", cmd, script]
        times = {k: [] for k in variants}
        for _ in range(args.reps):
            for name, argv in variants.items():
                times[name].append(loop_ns(argv))
        base = statistics.median(times["untraced"])
        calls = 2 * args.calls
        added = {k: (statistics.median(v) - base) / calls for k, v in times.items()}
        print(f"{calls} calls (malloc(64)+free), median of {args.reps}")
        print("| tracer | loop time (ms) | added ns per call | over sonde's |")
        print("|---|---|---|---|")
        for name, v in times.items():
            over = "" if name == "untraced" else f"{added[name] / added['sonde allocrecord']:.2f}x"
            print(f"| {name} | {statistics.median(v) / 1e6:.1f} | {added[name]:.0f} | {over} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
