#!/usr/bin/env python3
"""Translated program size, sonde against bpftrace 0.17, on the same scripts (docs/PERFORMANCE.md).

Usage: xlated.py [--sonde PATH] [--bpftrace PATH] [--markdown OUT]   (root; bpftool)

For each script, each tracer is started, and once it has attached, the BPF programs it holds
(the `prog_id:` lines of /proc/PID/fdinfo/*) are looked up with `bpftool prog show -j`: their
`bytes_xlated` (the kernel's translated size, after the verifier's rewrites) are summed, then
the tracer is stopped. The scripts: bpftrace's shipped tools (/usr/sbin/*.bt, run by both),
sonde's examples/*.sd that bpftrace 0.17 also runs, and the issue's 50-statement probe
(`@mK[i] = count(); if (pid > i) { @sJ = sum(i); }` × 50 in one BEGIN... here in an
`interval:s:1` probe, which both load without running it). A script either tracer cannot
attach here is left out. Ratios are sonde / bpftrace; nothing here asserts a size.
"""

import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def fifty():
    lines = []
    for i in range(50):
        lines.append(f"@m{i % 30}[{i}] = count(); if (pid > {i}) {{ @s{i % 30} = sum({i}); }}")
    return "interval:s:1 {\n" + "\n".join(lines) + "\n}\n"


def prog_ids(pid):
    ids = set()
    for fd in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(fd) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def xlated(cmd, ready, timeout=40.0):
    """Starts cmd; once `ready` is in its output, sums the translated sizes of its programs."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    os.set_blocking(p.stdout.fileno(), False)
    out = ""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end and p.poll() is None:
            chunk = p.stdout.read()
            out += (chunk or b"").decode("utf-8", "replace")
            if ready in out:
                time.sleep(0.3)
                ids = prog_ids(p.pid)
                if not ids:
                    return None
                info = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"],
                                                 capture_output=True, text=True).stdout)
                return sum(i["bytes_xlated"] for i in info if i["id"] in ids), len(ids)
            time.sleep(0.05)
        return None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sonde", default="target/release/sonde")
    ap.add_argument("--bpftrace", default="bpftrace")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    f50 = os.path.join(tmp, "fifty.bt")
    with open(f50, "w") as f:
        f.write(fifty())
    scripts = [("50-statement probe", f50)]
    scripts += [(os.path.basename(s), s) for s in sorted(glob.glob("examples/*.sd"))]
    scripts += [(os.path.basename(s), s) for s in sorted(glob.glob("/usr/sbin/*.bt"))]
    rows = []
    for name, path in scripts:
        s = xlated([a.sonde, path], "Attached")
        b = xlated([a.bpftrace, "-B", "line", path], "Attaching")
        if s is None or b is None:
            print(f"{name}: left out (sonde {s}, bpftrace {b})", file=sys.stderr)
            continue
        rows.append((name, s[0], s[1], b[0], b[1], s[0] / b[0]))
        print(f"{name}: sonde {s[0]} B in {s[1]} programs, bpftrace {b[0]} B in {b[1]}: "
              f"{s[0] / b[0]:.2f}", file=sys.stderr)
    ratios = [r[5] for r in rows[1:]]
    md = "| script | sonde bytes (programs) | bpftrace 0.17 bytes (programs) | sonde / bpftrace |\n"
    md += "|---|---:|---:|---:|\n"
    md += "".join(f"| {r[0]} | {r[1]} ({r[2]}) | {r[3]} ({r[4]}) | {r[5]:.2f} |\n" for r in rows)
    if ratios:
        md += f"\nMedian ratio over the {len(ratios)} scripts after the first: " \
              f"{statistics.median(ratios):.2f}\n"
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    sys.exit(main())
