#!/usr/bin/env python3
"""sonde vs bpftrace, side by side in one run (see docs/PERFORMANCE.md for the method).

Usage: bench.py --sonde PATH --bpftrace PATH --loadgen PATH --floor PATH --rss PATH [--reps N] [--json OUT]
                [--markdown OUT] [--quick]

Every measurement alternates the two tracers inside each repetition, so slow phases of a
shared machine hit both; results are medians over repetitions. Nothing here asserts a time:
the script measures and prints, it never fails on a number.
"""

import argparse
import datetime
import json
import os
import platform
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

NCPU = os.cpu_count() or 1
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The per-event scripts: one name, the bpftrace text (which sonde also accepts).
ENTER = "tracepoint:syscalls:sys_enter_getppid"
EXIT = "tracepoint:syscalls:sys_exit_getppid"
EVENT_SCRIPTS = [
    ("count", ENTER + " { @ = count(); }"),
    ("count by pid", ENTER + " { @[pid] = count(); }"),
    ("hist", ENTER + " { @ = hist(nsecs & 0xffff); }"),
    (
        "enter/exit latency",
        ENTER + " { @s[tid] = nsecs; } "
        + EXIT + " /@s[tid]/ { @ = hist(nsecs - @s[tid]); delete(@s[tid]); }",
    ),
    # A probe on another syscall: what every untraced syscall pays while one is traced.
    ("count on openat (getppid untraced)", "tracepoint:syscalls:sys_enter_openat { @ = count(); }"),
]
# Every syscall tracepoint at once (360 on this kernel).
WILDCARD_SCRIPT = "tracepoint:syscalls:sys_enter_* { @[probe] = count(); }"
PRINTF_SCRIPT = ENTER + ' { printf("%d %s\\n", pid, comm); }'
COUNT_SCRIPT = EVENT_SCRIPTS[0][1]


def now_ns():
    return time.monotonic_ns()


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Tracer:
    """How to start one tracer and know that its probes are attached."""

    def __init__(self, name, path, marker):
        self.name = name
        self.path = path
        self.marker = marker  # regex found on stdout or stderr once attached

    def argv(self, script):
        return [self.path, "-e", script]


def env_for_tracer():
    env = dict(os.environ)
    env.setdefault("BPFTRACE_MAX_PROBES", "1024")
    return env


class Running:
    """A tracer process with stdout/stderr in files, polled for the attach marker."""

    def __init__(self, tracer, script, tmpdir, tag, rss=None):
        """With `rss` (the path of bench/rss.c built), the tracer runs under it and
        `peak_rss_kib()` is its own peak RSS (see rss.c: not the harness's pages)."""
        self.tracer = tracer
        self.rss_path = os.path.join(tmpdir, f"{tag}.rss") if rss else None
        wrap = [rss, self.rss_path] if rss else []
        self.out_path = os.path.join(tmpdir, f"{tag}.out")
        self.err_path = os.path.join(tmpdir, f"{tag}.err")
        self.out = open(self.out_path, "wb")
        self.err = open(self.err_path, "wb")
        self.t_spawn = now_ns()
        self.proc = subprocess.Popen(
            wrap + tracer.argv(script), stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL,
            env=env_for_tracer(),
        )
        self.rusage = None
        self.status = None

    def peak_rss_mb(self):
        with open(self.rss_path) as f:
            return int(f.read()) / 1024

    def text(self):
        with open(self.out_path, "rb") as f:
            out = f.read()
        with open(self.err_path, "rb") as f:
            err = f.read()
        return out.decode(errors="replace"), err.decode(errors="replace")

    def wait_ready(self, timeout=20.0, settle=0.3):
        deadline = time.monotonic() + timeout
        rx = re.compile(self.tracer.marker)
        while time.monotonic() < deadline:
            out, err = self.text()
            if rx.search(out) or rx.search(err):
                time.sleep(settle)
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.002)
        raise RuntimeError(f"{self.tracer.name} did not attach:\n{self.text()[1]}")

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is state (field 3); utime is field 14, stime field 15.
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self, sig=signal.SIGINT, timeout=30.0):
        """Sends `sig`, waits for the exit; returns the teardown time in ns."""
        t0 = now_ns()
        self.proc.send_signal(sig)
        return self.reap(t0, timeout)

    def reap(self, t0=None, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            pid, status, rusage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                pid, status, rusage = os.wait4(self.proc.pid, 0)
                break
            time.sleep(0.0005)
        t1 = now_ns()
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.status = status
        self.rusage = rusage
        self.out.close()
        self.err.close()
        return t1 - (t0 if t0 is not None else self.t_spawn)


def loadgen(args, cpu, mode, n, rate=None):
    argv = ["taskset", "-c", str(cpu), args.loadgen, mode, str(n)]
    if rate:
        argv.append(str(rate))
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    kv = dict(p.split("=", 1) for p in out.split()[1:])
    return {"pid": int(kv["pid"]), "ns_per_op": float(kv["ns_per_op"]),
            "rate": float(kv["rate_achieved"])}


def lost_events(err):
    m = re.search(r"Lost (\d+) events", err)
    return int(m.group(1)) if m else 0


# --- the measurements -------------------------------------------------------------------

def bench_begin(args, tracers, res):
    """Wall time and peak RSS of `BEGIN { exit(); }`."""
    for rep in range(args.reps):
        for tr in ordered(tracers, rep):
            with tempfile.TemporaryDirectory() as tmp:
                r = Running(tr, "BEGIN { exit(); }", tmp, "begin")
                wall = r.reap(timeout=30)
                res.setdefault(("begin_wall_ms", tr.name), []).append(wall / 1e6)
                # Peak RSS from a run of its own under bench/rss.c (the wall time above has
                # no wrapper in it).
                r = Running(tr, "BEGIN { exit(); }", tmp, "begin_rss", rss=args.rss)
                r.reap(timeout=30)
                res.setdefault(("begin_rss_mb", tr.name), []).append(r.peak_rss_mb())


def bench_first_event(args, tracers, res):
    """Spawn → first event seen: a ticking load starts together with the tracer, whose probe
    prints on the first getppid of that load; the time is when that line reaches us."""
    for rep in range(args.reps):
        for tr in ordered(tracers, rep):
            load = subprocess.Popen([args.loadgen, "tick", "10", "50"], stdout=subprocess.DEVNULL)
            script = ENTER + " /pid == %d/ { printf(\"FIRST\\n\"); exit(); }" % load.pid
            t0 = now_ns()
            p = subprocess.Popen(tr.argv(script), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env_for_tracer())
            buf = b""
            seen = None
            deadline = time.monotonic() + 20
            while seen is None and time.monotonic() < deadline:
                ready, _, _ = select.select([p.stdout], [], [], 0.5)
                if ready:
                    chunk = os.read(p.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
                    if b"FIRST" in buf:
                        seen = now_ns()
            load.kill()
            load.wait()
            p.wait(timeout=20)
            p.stdout.close()
            res.setdefault(("first_event_ms", tr.name), []).append(
                (seen - t0) / 1e6 if seen else None)


def bench_teardown(args, tracers, res):
    """SIGINT → exit, with a count probe attached; also the peak RSS of that run."""
    for rep in range(args.reps):
        for tr in ordered(tracers, rep):
            with tempfile.TemporaryDirectory() as tmp:
                r = Running(tr, COUNT_SCRIPT, tmp, "teardown")
                r.wait_ready()
                loadgen(args, 0, "syscalls", 10000)
                t = r.stop()
                res.setdefault(("teardown_ms", tr.name), []).append(t / 1e6)
                r = Running(tr, COUNT_SCRIPT, tmp, "trace_rss", rss=args.rss)
                r.wait_ready()
                loadgen(args, 0, "syscalls", 10000)
                r.stop()
                res.setdefault(("trace_rss_mb", tr.name), []).append(r.peak_rss_mb())


def attach_and_teardown(args, tracers, res, script, key):
    """Spawn → attached and SIGINT → exit of `script`, as `<key>_attach_ms` and
    `<key>_teardown_ms` (a third of the repetitions: bpftrace takes tens of seconds here)."""
    for rep in range(max(1, args.reps // 3)):
        for tr in ordered(tracers, rep):
            with tempfile.TemporaryDirectory() as tmp:
                r = Running(tr, script, tmp, key)
                r.wait_ready(timeout=300, settle=0)
                res.setdefault((key + "_attach_ms", tr.name), []).append(
                    (now_ns() - r.t_spawn) / 1e6)
                time.sleep(1)
                t = r.stop(timeout=300)
                res.setdefault((key + "_teardown_ms", tr.name), []).append(t / 1e6)


def bench_wildcard(args, tracers, res):
    """Every `sys_enter_*` tracepoint probed."""
    attach_and_teardown(args, tracers, res, WILDCARD_SCRIPT, "wildcard")


def many_functions_binary(tmp, n=60):
    """A program with `n` functions `sonde_bench_fN` for the uprobe teardown measurement."""
    src = os.path.join(tmp, "many.c")
    with open(src, "w") as f:
        for i in range(n):
            f.write(f"__attribute__((noinline)) int sonde_bench_f{i}(int x) {{ return x * {i} + 1; }}\n")
        f.write("int main(void) { return 0; }\n")
    binary = os.path.join(tmp, "many")
    subprocess.run(["gcc", "-O1", "-o", binary, src], check=True)
    return binary


def bench_uprobes(args, tracers, res):
    """120 uprobes (60 functions, entry and return)."""
    with tempfile.TemporaryDirectory() as build:
        binary = many_functions_binary(build)
        script = (f"uprobe:{binary}:sonde_bench_f* {{ @[func] = count(); }} "
                  f"uretprobe:{binary}:sonde_bench_f* {{ @r = count(); }}")
        attach_and_teardown(args, tracers, res, script, "uprobes")


def loop_cpus(args, res, key):
    for cpu in range(NCPU):
        lg = loadgen(args, cpu, "syscalls", args.n)
        res.setdefault(key + (cpu,), []).append(lg["ns_per_op"])


def bench_per_event(args, tracers, res):
    """ns per getppid with no tracer, with each floor program, and with each tracer+script."""
    floors = [("floor tp0", "tp0"), ("floor tp1", "tp1"), ("floor rawtp", "rawtp")]
    for rep in range(args.reps):
        loop_cpus(args, res, ("ns_op", "untraced", "-"))
        for label, mode in floors:
            fl = Tracer(label, args.floor, r"floor attached")
            fl.argv = lambda script, mode=mode: [args.floor, mode, "600"]
            with tempfile.TemporaryDirectory() as tmp:
                r = Running(fl, "", tmp, "floor")
                r.wait_ready(settle=0.1)
                loop_cpus(args, res, ("ns_op", label, "-"))
                r.stop()
        for name, script in EVENT_SCRIPTS:
            for tr in ordered(tracers, rep):
                with tempfile.TemporaryDirectory() as tmp:
                    r = Running(tr, script, tmp, "event")
                    r.wait_ready()
                    loop_cpus(args, res, ("ns_op", tr.name, name))
                    r.stop()
        loop_cpus(args, res, ("ns_op", "untraced", "-"))
        print(f"  per-event rep {rep + 1}/{args.reps} done", file=sys.stderr)


def bench_printf(args, tracers, res):
    """printf on every getppid of an unpaced load on each CPU: added cost per event, tracer
    CPU time per event (utime+stime from /proc/PID/stat), lines that arrived, events lost."""
    for rep in range(args.reps_printf):
        for tr in ordered(tracers, rep):
            with tempfile.TemporaryDirectory() as tmp:
                r = Running(tr, PRINTF_SCRIPT, tmp, "printf")
                r.wait_ready()
                cpu0 = r.cpu_seconds()
                pids = []
                for cpu in range(NCPU):
                    lg = loadgen(args, cpu, "syscalls", args.n_printf)
                    pids.append(lg["pid"])
                    res.setdefault(("printf_ns_op", tr.name, cpu), []).append(lg["ns_per_op"])
                # Let the tracer drain what is buffered: wait until its output stops growing.
                size = -1
                while True:
                    time.sleep(0.3)
                    s = os.path.getsize(r.out_path)
                    if s == size:
                        break
                    size = s
                cpu1 = r.cpu_seconds()
                r.stop()
                out, err = r.text()
                want = {str(p) for p in pids}
                seen = sum(1 for line in out.splitlines() if line.split(" ", 1)[0] in want)
                total = args.n_printf * NCPU
                res.setdefault(("printf_cpu_ns", tr.name), []).append((cpu1 - cpu0) * 1e9 / total)
                res.setdefault(("printf_missing", tr.name), []).append(total - seen)
                res.setdefault(("printf_lost_reported", tr.name), []).append(lost_events(err))


def ordered(tracers, rep):
    return tracers if rep % 2 == 0 else list(reversed(tracers))


# --- the report -------------------------------------------------------------------------

def fmt(x, digits=1):
    if x is None:
        return "n/a"
    return f"{x:.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def report(args, res, meta):
    S, B = "sonde", "bpftrace"
    m = {k: median(v) for k, v in res.items()}
    lines = []
    add = lines.append
    add(f"Run: {meta['date']} on {meta['machine']}; {meta['cpus']} CPUs; kernel {meta['kernel']}; "
        f"{args.reps} repetitions (printf: {args.reps_printf}); medians.")
    add("")
    add("| measurement | sonde | bpftrace 0.17 | sonde / bpftrace | target | met |")
    add("|---|---:|---:|---:|---|---|")

    def row(label, key, unit, target, digits=1):
        s, b = m.get((key, S)), m.get((key, B))
        r = ratio(s, b)
        met = "n/a" if r is None else ("yes" if r <= target else f"no (×{r / target:.2f} over)")
        add(f"| {label} | {fmt(s, digits)} {unit} | {fmt(b, digits)} {unit} | {fmt(r, 3)} | "
            f"≤ {target:g} | {met} |")

    row("`BEGIN { exit(); }` wall", "begin_wall_ms", "ms", 0.1)
    row("spawn → first event", "first_event_ms", "ms", 0.2)
    row("teardown after SIGINT", "teardown_ms", "ms", 1.0)
    row("`sys_enter_*` (360 probes): spawn → attached", "wildcard_attach_ms", "ms", 1.0)
    row("`sys_enter_*` (360 probes): SIGINT → exit", "wildcard_teardown_ms", "ms", 1.0)
    row("120 uprobes: spawn → attached", "uprobes_attach_ms", "ms", 1.0)
    row("120 uprobes: SIGINT → exit", "uprobes_teardown_ms", "ms", 1.0)
    row("peak RSS, `BEGIN { exit(); }`", "begin_rss_mb", "MB", 0.2)
    row("peak RSS, count probe + 10k events", "trace_rss_mb", "MB", 0.2)
    add("")
    add("Added ns per traced `getppid` (traced − untraced, loadgen pinned to each CPU in turn; "
        "the `mean` column averages the CPUs):")
    add("")
    cpus = list(range(NCPU))
    hdr = " | ".join(f"CPU {c}" for c in cpus)
    add(f"| probe | tracer | {hdr} | mean | vs bpftrace | vs floor tp0 |")
    add("|---|---|" + "---:|" * (len(cpus) + 3))
    base = {c: m.get(("ns_op", "untraced", "-", c)) for c in cpus}
    add(f"| (none) | untraced ns/op | " + " | ".join(fmt(base[c]) for c in cpus)
        + f" | {fmt(statistics.mean(base[c] for c in cpus))} | | |")

    def added(name, script):
        vals = [None if m.get(("ns_op", name, script, c)) is None
                else m[("ns_op", name, script, c)] - base[c] for c in cpus]
        mean = statistics.mean(vals) if all(v is not None for v in vals) else None
        return vals, mean

    floor = {}
    for label in ("floor tp0", "floor tp1", "floor rawtp"):
        vals, mean = added(label, "-")
        floor[label] = mean
        add(f"| kernel floor | {label[6:]} (floor.c) | " + " | ".join(fmt(v) for v in vals)
            + f" | {fmt(mean)} | | |")
    for name, _ in EVENT_SCRIPTS:
        bm = added(B, name)[1]
        for tr in (S, B):
            vals, mean = added(tr, name)
            vsb = fmt(ratio(mean, bm), 2) if tr == S else ""
            # The latency pair runs two programs per syscall: its floor is twice tp0.
            fl = floor["floor tp0"] * (2 if "latency" in name else 1)
            add(f"| {name} | {tr} | " + " | ".join(fmt(v) for v in vals)
                + f" | {fmt(mean)} | {vsb} | {fmt(ratio(mean, fl), 2)} |")
    add("")
    add(f"printf on every `getppid` ({args.n_printf} unpaced calls per CPU, output to a file):")
    add("")
    add("| | sonde | bpftrace 0.17 | sonde / bpftrace |")
    add("|---|---:|---:|---:|")
    pb = {tr: statistics.mean(m[("printf_ns_op", tr, c)] - base[c] for c in cpus) for tr in (S, B)}
    add(f"| added ns per event (mean of CPUs) | {fmt(pb[S])} | {fmt(pb[B])} | "
        f"{fmt(ratio(pb[S], pb[B]), 3)} |")
    for key, label in (("printf_cpu_ns", "tracer CPU ns per event"),
                       ("printf_missing", "lines missing (of %d)" % (args.n_printf * NCPU)),
                       ("printf_lost_reported", "\"Lost N events\" reported")):
        s, b = m.get((key, S)), m.get((key, B))
        add(f"| {label} | {fmt(s, 0)} | {fmt(b, 0)} | {fmt(ratio(s, b), 3)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sonde", required=True)
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--floor", required=True)
    ap.add_argument("--rss", required=True, help="bench/rss.c built: measures peak RSS")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--reps-printf", type=int, default=3)
    ap.add_argument("--n", type=int, default=2_000_000, help="getppid calls per per-event run")
    ap.add_argument("--n-printf", type=int, default=300_000, help="getppid calls per printf run")
    ap.add_argument("--only", default="begin,first,teardown,wildcard,uprobes,event,printf")
    ap.add_argument("--json", help="write raw samples here")
    ap.add_argument("--markdown", help="write the tables here")
    args = ap.parse_args()
    tracers = [Tracer("sonde", args.sonde, r"Attached \d+ probe"),
               Tracer("bpftrace", args.bpftrace, r"Attaching \d+ probe")]
    res = {}
    only = set(args.only.split(","))
    steps = [("begin", bench_begin), ("first", bench_first_event), ("teardown", bench_teardown),
             ("wildcard", bench_wildcard), ("uprobes", bench_uprobes), ("event", bench_per_event),
             ("printf", bench_printf)]
    for key, fn in steps:
        if key in only:
            print(f"bench: {key}", file=sys.stderr)
            fn(args, tracers, res)
    meta = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": cpu_model(),
        "cpus": NCPU,
        "kernel": platform.release(),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "samples": {" | ".join(map(str, k)): v for k, v in res.items()}},
                      f, indent=1)
    if only == {"begin", "first", "teardown", "wildcard", "uprobes", "event", "printf"}:
        text = report(args, res, meta)
    else:
        text = "\n".join(f"{k}: median {fmt(median(v), 2)} of {[fmt(x, 2) for x in v]}"
                         for k, v in sorted(res.items(), key=lambda kv: str(kv[0]))) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    print(text)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


if __name__ == "__main__":
    main()
