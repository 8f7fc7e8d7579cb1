#!/usr/bin/env python3
"""Entering a probe in a running `sonde repl`, against restarting bpftrace (docs/PERFORMANCE.md).

Usage: repl.py [--sonde PATH] [--bpftrace PATH] [--entries N] [--markdown OUT]

`sonde repl` runs in a tmux window (a real terminal). N entries are typed one after another,
each a tracepoint probe on its own map:
    tracepoint:syscalls:sys_enter_getppid /pid == K/ { @mK = count(); }
(the session holds K probes when entry K+1 is typed). For each entry two times are taken:
  internal  what sonde prints on the `[K] attached ... in T ms` line: compiling the whole
            session's script, loading the new entry's programs and attaching them;
  screen    from `tmux send-keys Enter` until that line is on the screen (polled every 2 ms).
The reference is what a tracer without a REPL costs for the same change: bpftrace 0.17 run
afresh with the K+1 probes as one script, from exec until it prints "Attaching"/"Attached"
(it compiles, loads and attaches everything again, and the maps start empty).
Medians and the 90th percentile over the entries. Nothing here asserts a time.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

SOCK = f"sonde-bench-{os.getpid()}"


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCK, *args], capture_output=True, text=True).stdout


def screen():
    return tmux("capture-pane", "-p", "-J", "-t", "b", "-S", "-5000")


def wait_for(pred, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s = screen()
        if pred(s):
            return s
        time.sleep(0.002)
    raise SystemExit(f"timed out; screen:\n{screen()}")


def entry(k):
    return f"tracepoint:syscalls:sys_enter_getppid /pid == {k + 1}/ {{ @m{k} = count(); }}"


def sonde_times(sonde, n):
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "200", "-y", "50",
         f"SONDE_HISTORY=/dev/null {sonde} repl")
    try:
        wait_for(lambda s: "sonde> " in s)
        internal, wall = [], []
        for k in range(n):
            tmux("send-keys", "-t", "b", "-l", entry(k))
            tag = f"[{k + 1}] attached"
            t0 = time.monotonic()
            tmux("send-keys", "-t", "b", "Enter")
            s = wait_for(lambda s: tag in s)
            wall.append((time.monotonic() - t0) * 1000)
            m = re.search(re.escape(tag) + r" \d+ probes? in (\d+) ms", s)
            internal.append(float(m.group(1)) if m else float("nan"))
            wait_for(lambda s: s.rstrip().endswith("sonde>"))
        tmux("send-keys", "-t", "b", "-l", ":quit")
        tmux("send-keys", "-t", "b", "Enter")
        time.sleep(0.5)
        return internal, wall
    finally:
        tmux("kill-server")


def bpftrace_times(bpftrace, n):
    times = []
    for k in range(n):
        script = "".join(entry(j) + "\n" for j in range(k + 1))
        t0 = time.monotonic()
        p = subprocess.Popen([bpftrace, "-B", "line", "-e", script], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            if line.startswith("Attaching") or line.startswith("Attached"):
                times.append((time.monotonic() - t0) * 1000)
                break
        # Its exit is not measured (0.17 takes seconds to detach): killed at once.
        p.kill()
        p.wait()
    return times


def summary(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.9))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sonde", default="target/release/sonde")
    ap.add_argument("--bpftrace", default="bpftrace")
    ap.add_argument("--entries", type=int, default=20)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    internal, wall = sonde_times(a.sonde, a.entries)
    bt = bpftrace_times(a.bpftrace, a.entries)
    rows = [
        ("sonde repl: entry attached (sonde's own timing)", *summary(internal)),
        ("sonde repl: Enter to `attached` on screen", *summary(wall)),
        ("bpftrace 0.17 restarted with the same probes", *summary(bt)),
    ]
    md = f"{a.entries} entries, one tracepoint probe each (ms)\n\n| | median | p90 |\n|---|---:|---:|\n"
    md += "".join(f"| {r[0]} | {r[1]:.0f} | {r[2]:.0f} |\n" for r in rows)
    md += f"\nbpftrace / sonde (screen), medians: {summary(bt)[0] / summary(wall)[0]:.1f}×\n"
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    sys.exit(main())
