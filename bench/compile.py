#!/usr/bin/env python3
"""Compile time for generated scripts, sonde against bpftrace 0.17 (docs/PERFORMANCE.md).

Usage: compile.py [--sonde PATH] [--bpftrace PATH] [--sizes 100,500,...] [--reps N]
                  [--markdown OUT] [--json OUT]

Scripts of N one-line probes, each with its own map:
  tp:    tracepoint:syscalls:sys_enter_openat /pid == K/ { @mK[comm] = count(); }
  BEGIN: BEGIN /pid == K/ { @mK[comm] = count(); }
(bpftrace 0.17 refuses more than one BEGIN probe: sonde alone there), and one long probe: BEGIN { @mK[i] = count(); if (pid > i) { @sJ = sum(i); } ... } with 400
statements (K, J cycle through 30 names: a program may use at most 64 maps).

For each, the wall time (fork/exec to reaped) of
  sonde --check          parse and type-check against the running kernel;
  sonde --dump bpf       the whole compiler (BPF and ELF), the disassembly to /dev/null;
  bpftrace --emit-elf F  bpftrace 0.17's dry run: parse, semantic passes, LLVM, ELF.
Neither tracer loads anything. The two alternate inside each repetition (sonde first in even
ones); medians over the repetitions. Nothing here asserts a time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def tp_script(n):
    return "".join(
        f"tracepoint:syscalls:sys_enter_openat /pid == {k}/ {{ @m{k}[comm] = count(); }}\n"
        for k in range(n)
    )


def begin_script(n):
    return "".join(f"BEGIN /pid == {k}/ {{ @m{k}[comm] = count(); }}\n" for k in range(n))


def long_probe(n):
    body = "".join(
        f"  @m{k % 30}[{k}] = count(); if (pid > {k}) {{ @s{k % 30} = sum({k}); }}\n"
        for k in range(n)
    )
    return "BEGIN {\n" + body + "  exit();\n}\n"


def timed(cmd, timeout):
    """Wall seconds of `cmd` (output discarded), or None when it failed or timed out."""
    start = time.monotonic()
    try:
        p = subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None
    took = time.monotonic() - start
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        sys.stderr.write(f"{' '.join(cmd[:3])}...: exit {p.returncode}: {err[:1]}\n")
        return None
    return took


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x):
    if x is None:
        return "n/a"
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


def ratio(a, b):
    return f"{a / b:.3f}" if a is not None and b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sonde", default="target/release/sonde")
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--sizes", default="100,500,1000,2000,5000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--markdown", help="write the table here")
    ap.add_argument("--json", help="write raw samples here")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = tempfile.mkdtemp(prefix="sonde-compile-")
    cases = []
    for n in sizes:
        cases.append((f"{n} tracepoint probes", tp_script(n), True))
    for n in sizes:
        cases.append((f"{n} BEGIN probes", begin_script(n), False))
    cases.append(("one probe of 400 statements", long_probe(400), True))
    samples = {}
    for name, text, with_bpftrace in cases:
        path = os.path.join(tmp, "script.bt")
        with open(path, "w") as f:
            f.write(text)
        elf = os.path.join(tmp, "out.elf")
        runs = {
            "sonde --check": [args.sonde, "--check", path],
            "sonde --dump bpf": [args.sonde, "--dump", "bpf", path],
            "bpftrace --emit-elf": [args.bpftrace, "--emit-elf", elf, path],
        }
        if not with_bpftrace:
            del runs["bpftrace --emit-elf"]
        got = {k: [] for k in runs}
        for rep in range(args.reps):
            order = list(runs) if rep % 2 == 0 else list(reversed(runs))
            for k in order:
                got[k].append(timed(runs[k], args.timeout))
            # bpftrace's minutes-long cases get one repetition.
            if rep == 0 and (got.get("bpftrace --emit-elf", [0])[0] or 0) > 60:
                break
        samples[name] = got
        print(name, {k: fmt(median(v)) for k, v in got.items()}, file=sys.stderr)
    lines = [
        "| script | sonde `--check` | sonde `--dump bpf` | bpftrace `--emit-elf` "
        "| `--dump bpf` / bpftrace |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, got in samples.items():
        c, d, b = (median(got.get(k, [])) for k in
                   ("sonde --check", "sonde --dump bpf", "bpftrace --emit-elf"))
        lines.append(f"| {name} | {fmt(c)} | {fmt(d)} | {fmt(b)} | {ratio(d, b)} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)


if __name__ == "__main__":
    main()
