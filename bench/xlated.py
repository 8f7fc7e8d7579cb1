#!/usr/bin/env python3
"""Translated program size, sonde against bpftrace 0.17, on the same scripts (docs/PERFORMANCE.md).

Usage: xlated.py [--sonde PATH] [--bpftrace PATH] [--markdown OUT]   (root; bpftool)

For each script, each tracer is started, and once it has attached, the BPF programs it holds
(the `prog_id:` lines of /proc/PID/fdinfo/*) are looked up with `bpftool prog show -j`: their
`bytes_xlated` (the kernel's translated size, after the verifier's rewrites) are summed. Then
the tracer is interrupted (SIGINT) and the programs it loads while it exits are added: its END
programs, which bpftrace 0.17 loads only then (sonde loads its own before tracing, so they are
in the first sum). To see those, a watcher (sonde itself, on `sys_enter_bpf`/`sys_exit_bpf`)
stops the tracer (SIGSTOP) each time a BPF_PROG_LOAD of it returns a descriptor; the program
is read while the tracer is stopped, then the tracer continues. BEGIN programs are in neither
column: both tracers unload them once they have run. The scripts: bpftrace's shipped tools (/usr/sbin/*.bt, run by both),
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


# Stops the process $1 each time one of its BPF_PROG_LOADs (command 5) returns a descriptor.
WATCHER = """
tracepoint:syscalls:sys_enter_bpf /pid == $1 && args->cmd == 5/ { @load[tid] = 1; }
tracepoint:syscalls:sys_exit_bpf /pid == $1 && @load[tid]/ {
  delete(@load[tid]);
  if (args->ret >= 0) { signal("SIGSTOP"); }
}
"""


class Proc:
    """A started command whose output is collected without blocking."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        os.set_blocking(self.p.stdout.fileno(), False)
        self.out = ""

    def drain(self):
        chunk = self.p.stdout.read()
        self.out += (chunk or b"").decode("utf-8", "replace")

    def wait_for(self, text, end):
        while time.monotonic() < end and self.p.poll() is None:
            self.drain()
            if text in self.out:
                return True
            time.sleep(0.05)
        return False

    def kill(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()


def stopped(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def sizes(ids):
    info = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"],
                                     capture_output=True, text=True).stdout)
    return {i["id"]: i["bytes_xlated"] for i in info if i["id"] in ids}


def xlated(cmd, ready, sonde, timeout=40.0):
    """Starts cmd; once `ready` is in its output, sums the translated sizes of the programs it
    holds; then interrupts it and sums those it loads while exiting. Returns
    (bytes while tracing, programs, bytes loaded at exit, programs) or None."""
    p = Proc(cmd)
    watcher = None
    end = time.monotonic() + timeout
    try:
        if not p.wait_for(ready, end):
            return None
        time.sleep(0.3)
        held = sizes(prog_ids(p.p.pid))
        if not held:
            return None
        watcher = Proc([sonde, "--unsafe", "-e", WATCHER, str(p.p.pid)])
        if not watcher.wait_for("Attached", end):
            print(f"watcher did not attach: {watcher.out}", file=sys.stderr)
            return None
        os.kill(p.p.pid, signal.SIGINT)
        at_exit = {}
        while time.monotonic() < end and p.p.poll() is None:
            p.drain()
            if stopped(p.p.pid):
                new = prog_ids(p.p.pid) - held.keys() - at_exit.keys()
                at_exit.update(sizes(new))
                os.kill(p.p.pid, signal.SIGCONT)
            time.sleep(0.01)
        if p.p.poll() is None:
            return None
        return sum(held.values()), len(held), sum(at_exit.values()), len(at_exit)
    finally:
        p.kill()
        if watcher:
            watcher.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sonde", default="target/release/sonde")
    ap.add_argument("--bpftrace", default="bpftrace")
    ap.add_argument("--markdown")
    ap.add_argument("--only", help="only the scripts whose name contains this")
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
        if a.only and a.only not in name:
            continue
        s = xlated([a.sonde, path], "Attached", a.sonde)
        b = xlated([a.bpftrace, "-B", "line", path], "Attaching", a.sonde)
        if s is None or b is None:
            print(f"{name}: left out (sonde {s}, bpftrace {b})", file=sys.stderr)
            continue
        st, bt = s[0] + s[2], b[0] + b[2]
        rows.append((name, s, b, st / bt))
        print(f"{name}: sonde {s}, bpftrace {b}: {st / bt:.2f}", file=sys.stderr)
    ratios = [r[3] for r in rows[1:]]
    md = "| script | sonde bytes (programs): tracing + at exit | " \
         "bpftrace 0.17 bytes (programs): tracing + at exit | sonde / bpftrace |\n"
    md += "|---|---:|---:|---:|\n"
    cell = lambda t: f"{t[0]} ({t[1]}) + {t[2]} ({t[3]})"
    md += "".join(f"| {r[0]} | {cell(r[1])} | {cell(r[2])} | {r[3]:.2f} |\n" for r in rows)
    if ratios:
        md += f"\nMedian ratio over the {len(ratios)} scripts after the first: " \
              f"{statistics.median(ratios):.2f}\n"
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    sys.exit(main())
