#!/usr/bin/env python3
"""The cost of sonde's tools on the programs around them (docs/PERFORMANCE.md, "Tools").

    sudo python3 bench/tools.py --sonde target/release/sonde [--reps 5] [--markdown FILE]
    sudo python3 bench/tools.py --sonde target/release/sonde --per-event-only runqlat,biolatency

Builds bench/allocs.c into a temporary directory and measures, as medians over --reps
repetitions (the variants alternate inside each repetition):

- **-p isolation**: an unrelated program's 100,000 malloc+free (its own loop time, printed by
  the program) untraced; while `sonde tool memusage -p SLEEPER` traces another process; and
  while a script filters that process in a predicate instead (`uprobe:libc:malloc /pid ==
  SLEEPER/`, how the tools did it before and how bpftrace's scripts do it), under sonde and
  under bpftrace. Ratios are over the untraced loop.
- **memusage --chart**: the wall time of `sonde tool memusage -c 'allocs 20000'` without and
  with `--chart` (an event per call), and of glibc's `memusage` on the same command.
- **Ctrl-C**: the time from SIGINT to exit of `sonde tool memusage --chart -c` tracing a
  program that allocates without end.
- **Per event, against libbpf-tools**: the load's own ns per operation (bench/loadgen.c:
  `openat`, `syscalls`, `pingpong` for runqlat, `directio` for biolatency; N runs of
  /bin/true for exec) untraced, under `sonde tool NAME` and
  under `/usr/sbin/NAME` (Debian's libbpf-tools), output to /dev/null. The added ns per
  event, and sonde's over the C tool's.
"""

import argparse
import os
import select
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build(tmp, name="allocs"):
    out = os.path.join(tmp, name)
    subprocess.run(["gcc", "-O2", "-Wall", "-o", out, os.path.join(HERE, name + ".c")],
                   check=True)
    return out


def load_ns_per_op(argv):
    """Runs a load that prints `key=value` pairs (loadgen) or, for execs, times them."""
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    return float(fields["ns_per_op"])


def exec_ns_per_op(n=300):
    t0 = time.monotonic_ns()
    for _ in range(n):
        subprocess.run(["/bin/true"], check=True)
    return (time.monotonic_ns() - t0) / n


def under(argv, measure):
    """`measure()` while the tracer `argv` runs (output to the pipe, drained)."""
    proc = tracer(argv)
    try:
        drain = threading.Thread(target=lambda: proc.stdout.read(), daemon=True)
        drain.start()
        time.sleep(2.0)  # libbpf-tools print no attach line: give both the same time
        return measure()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def per_event(args, tmp, reps, only=None):
    """ns per operation of each load untraced, under sonde's tool and under libbpf-tools'
    (the tools in `only`, when given)."""
    loadgen = build(tmp, "loadgen")
    loads = {
        "opensnoop": lambda: load_ns_per_op([loadgen, "openat", "200000"]),
        "syscount": lambda: load_ns_per_op([loadgen, "syscalls", "1000000"]),
        "execsnoop": exec_ns_per_op,
        # A round trip is two wakeups and four context switches; a write is one block
        # request (issue, complete): runqlat and biolatency histogram each.
        "runqlat": lambda: load_ns_per_op([loadgen, "pingpong", "100000"]),
        "biolatency": lambda: load_ns_per_op(
            [loadgen, "directio", "3000", os.path.join(HERE, "..", "target", "bench-directio")]),
    }
    rows = {}
    for tool, measure in loads.items():
        c_tool = f"/usr/sbin/{tool}"
        if (only and tool not in only) or not os.path.exists(c_tool):
            continue
        xs = {"untraced": [], "sonde": [], "libbpf-tools": []}
        for rep in range(reps):
            order = ["sonde", "libbpf-tools"] if rep % 2 == 0 else ["libbpf-tools", "sonde"]
            xs["untraced"].append(measure())
            for who in order:
                argv = [args.sonde, "tool", tool] if who == "sonde" else [c_tool]
                xs[who].append(under(argv, measure))
        rows[tool] = {k: statistics.median(v) for k, v in xs.items()}
    return rows


def loop_ns(allocs, n=100000):
    """The program's own time for n malloc+free."""
    out = subprocess.run([allocs, str(n)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def attached(proc, marker=b"Attach", timeout=30.0):
    """Waits for the tracer's attach line (sonde writes it on stderr, bpftrace on stdout:
    both are read merged, from proc.stdout)."""
    end = time.time() + timeout
    seen = b""
    while time.time() < end:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            return False
        seen += chunk
        if marker in seen:
            time.sleep(0.3)
            return True
    return False


def tracer(argv):
    """Starts a tracer with stdout and stderr merged into one pipe."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def traced_loop(argv, allocs):
    """The loop time of allocs while the tracer `argv` runs."""
    proc = tracer(argv)
    try:
        if not attached(proc):
            raise RuntimeError(f"{argv[0]} did not attach")
        return loop_ns(allocs)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wall(argv):
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t0


def ctrl_c_exit(sonde, allocs, tmp):
    """Seconds from SIGINT to exit of memusage --chart on an endless allocator."""
    loop = f"sh -c 'while :; do {allocs} 200000 >/dev/null; done'"
    chart = os.path.join(tmp, "chart.svg")
    proc = tracer([sonde, "tool", "memusage", "--chart", chart, "-c", loop])
    attached(proc)
    time.sleep(2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return time.monotonic() - t0


def per_event_table(rows):
    """The per-event rows as a markdown table."""
    lines = ["| tool (load) | untraced ns/op | + sonde ns/event | + libbpf-tools "
             "ns/event | sonde ÷ C |", "|---|---:|---:|---:|---:|"]
    for tool, r in rows.items():
        ds = r["sonde"] - r["untraced"]
        dc = r["libbpf-tools"] - r["untraced"]
        lines.append(f"| {tool} | {r['untraced']:.0f} | {ds:.0f} | {dc:.0f} | "
                     f"{ds / dc if dc > 0 else float('nan'):.2f} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-event-only", metavar="TOOL,...",
                    help="measure only the per-event cost of these tools")
    ap.add_argument("--sonde", required=True)
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    if args.per_event_only:
        try:
            rows = per_event(args, tmp, args.reps, set(args.per_event_only.split(",")))
            print("\n".join(per_event_table(rows)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        allocs = build(tmp)
        sleeper = subprocess.Popen([allocs, "0"])
        pid = str(sleeper.pid)
        filter_script = f"uprobe:libc:malloc /pid == {pid}/ {{ @n = count(); }}"
        variants = {
            "untraced": lambda: loop_ns(allocs),
            "sonde tool memusage -p OTHER": lambda: traced_loop(
                [args.sonde, "tool", "memusage", "-p", pid], allocs),
            "sonde, predicate /pid == OTHER/": lambda: traced_loop(
                [args.sonde, "-e", filter_script], allocs),
        }
        if args.bpftrace:
            variants["bpftrace, predicate /pid == OTHER/"] = lambda: traced_loop(
                [args.bpftrace, "-e", filter_script], allocs)
        work = f"{allocs} 20000"
        chart = os.path.join(tmp, "c.svg")
        walls = {
            "memusage -c": lambda: wall([args.sonde, "tool", "memusage", "-c", work]),
            "memusage --chart -c": lambda: wall(
                [args.sonde, "tool", "memusage", "--chart", chart, "-c", work]),
        }
        if shutil.which("memusage"):
            walls["glibc memusage"] = lambda: wall(["memusage", allocs, "20000"])
        loops = {k: [] for k in variants}
        secs = {k: [] for k in walls}
        exits = []
        for rep in range(args.reps):
            keys = list(variants) if rep % 2 == 0 else list(reversed(variants))
            for k in keys:
                loops[k].append(variants[k]())
            for k in walls:
                secs[k].append(walls[k]())
            exits.append(ctrl_c_exit(args.sonde, allocs, tmp))
        sleeper.kill()
        sleeper.wait()
        base = statistics.median(loops["untraced"])
        lines = ["| 100,000 malloc+free of an unrelated program | loop (ms) | × untraced |",
                 "|---|---:|---:|"]
        for k, xs in loops.items():
            m = statistics.median(xs)
            lines.append(f"| {k} | {m / 1e6:.2f} | {m / base:.2f} |")
        lines += ["", "| 20,000 malloc+free under memusage | wall (s) | × without chart |",
                  "|---|---:|---:|"]
        plain = statistics.median(secs["memusage -c"])
        for k, xs in secs.items():
            m = statistics.median(xs)
            lines.append(f"| {k} | {m:.2f} | {m / plain:.2f} |")
        rows = per_event(args, tmp, args.reps)
        if rows:
            lines += [""] + per_event_table(rows)
        lines += ["", f"Ctrl-C to exit of `memusage --chart` on an endless allocator: "
                      f"median {statistics.median(exits):.2f} s, worst {max(exits):.2f} s "
                      f"({args.reps} runs)."]
        text = "\n".join(lines) + "\n"
        print(text)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
