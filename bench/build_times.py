#!/usr/bin/env python3
"""Build times of two revisions of sonde side by side: a clean `cargo build` (dev profile) and
an incremental one after a change to one printer (a string literal in the text printer,
`*/output/text.rs`, changed and built, then put back), interleaved so that both revisions
see the same machine. Medians of wall-clock and CPU (user + system) seconds.

    python3 bench/build_times.py [--before REV] [--after REV] [--edits N] [--clean-rounds N]

Each revision is cloned from this repository into a directory of its own under
$TMPDIR/sonde-build-times, with its own target directory; the registry is shared (fetch
first: nothing is downloaded while timing). Prints a Markdown table for docs/PERFORMANCE.md.
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, cwd, quiet=True):
    """Runs `cmd` in `cwd`; returns (wall seconds, CPU seconds of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.DEVNULL if quiet else None
    subprocess.run(cmd, cwd=cwd, check=True, stdout=out, stderr=out)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def checkout(rev, root):
    """A fresh clone of this repository at `rev` in `root/rev`, dependencies fetched."""
    path = os.path.join(root, rev.replace("/", "_"))
    if os.path.exists(path):
        shutil.rmtree(path)
    subprocess.run(["git", "clone", "-q", REPO, path], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=path, check=True)
    subprocess.run(["cargo", "fetch", "-q"], cwd=path, check=True)
    return path


def printer_file(path):
    """The text printer's file in a checkout (its place moved with the runtime's crates)."""
    files = subprocess.run(
        ["git", "ls-files", "*/output/text.rs"], cwd=path, check=True,
        capture_output=True, text=True,
    ).stdout.split()
    if len(files) != 1:
        sys.exit(f"{path}: expected one */output/text.rs, found {files}")
    return os.path.join(path, files[0])


def edit_once(path, file, n):
    """Changes the first `format!("` literal of `file`, builds (timed), puts it back and
    builds again (not timed)."""
    with open(file) as f:
        text = f.read()
    changed, count = re.subn(r'format!\("', f'format!("{n}', text, count=1)
    if count != 1:
        sys.exit(f"{file}: no format! literal to change")
    with open(file, "w") as f:
        f.write(changed)
    try:
        timing = run(["cargo", "build", "-q"], path)
    finally:
        with open(file, "w") as f:
            f.write(text)
    run(["cargo", "build", "-q"], path)
    return timing


def median_pair(samples):
    """Medians of (wall, CPU) samples."""
    return (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the revision to compare with")
    ap.add_argument("--after", default="HEAD", help="the revision measured (default HEAD)")
    ap.add_argument("--edits", type=int, default=8, help="incremental builds per revision")
    ap.add_argument("--clean-rounds", type=int, default=1, help="clean builds per revision")
    args = ap.parse_args()
    root = os.path.join(tempfile.gettempdir(), "sonde-build-times")
    os.makedirs(root, exist_ok=True)
    revs = {"before": args.before, "after": args.after}
    paths = {k: checkout(r, root) for k, r in revs.items()}
    clean = {k: [] for k in revs}
    for _ in range(args.clean_rounds):
        for k, path in paths.items():
            shutil.rmtree(os.path.join(path, "target"), ignore_errors=True)
            clean[k].append(run(["cargo", "build", "-q", "--offline"], path))
            print(f"clean {k}: {clean[k][-1][0]:.1f} s", file=sys.stderr)
    files = {k: printer_file(p) for k, p in paths.items()}
    incr = {k: [] for k in revs}
    for n in range(args.edits):
        for k, path in paths.items():
            incr[k].append(edit_once(path, files[k], n))
            print(f"edit {k}: {incr[k][-1][0]:.2f} s", file=sys.stderr)
    print("| build | before (wall, CPU) | after (wall, CPU) | after / before (wall) |")
    print("|---|---|---|---|")
    for name, data in [("clean `cargo build`", clean), ("one printer changed", incr)]:
        (bw, bc), (aw, ac) = median_pair(data["before"]), median_pair(data["after"])
        print(f"| {name} | {bw:.2f} s, {bc:.2f} s | {aw:.2f} s, {ac:.2f} s | {aw / bw:.2f}x |")


if __name__ == "__main__":
    main()
