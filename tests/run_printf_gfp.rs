//! printf's `%gr` (bpftrace 0.26): an integer as GFP flag names. The reference is the kernel's
//! own text for the same allocations: a trace instance of our own records `kmem:kmalloc` while
//! sonde prints each event's `ptr`, `bytes_req` and `%gr` of its `gfp_flags`; the kernel's
//! `__print_flags` table names the flags of the events both saw.

mod common;

use common::{run_sonde, run_sonde_timeout, skip_unless_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// A trace instance recording `kmem:kmalloc` with unhashed pointers; removed on drop.
struct KmallocTrace(PathBuf);

impl KmallocTrace {
    fn start() -> Self {
        let dir = PathBuf::from(format!(
            "/sys/kernel/tracing/instances/sonde-gfp-{}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).expect("trace instance");
        let t = KmallocTrace(dir);
        t.write("options/hash-ptr", "0");
        t.write("buffer_size_kb", "16384");
        t.write("events/kmem/kmalloc/enable", "1");
        t
    }

    fn write(&self, file: &str, value: &str) {
        std::fs::write(self.0.join(file), value).unwrap_or_else(|e| panic!("{file}: {e}"));
    }

    /// Stops recording; `(ptr, bytes_req)` → the flag texts the kernel printed for them.
    fn stop(&self) -> BTreeMap<(String, String), BTreeSet<String>> {
        self.write("events/kmem/kmalloc/enable", "0");
        let text = std::fs::read_to_string(self.0.join("trace")).expect("trace");
        let mut seen: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
        for line in text.lines().filter(|l| l.contains(" kmalloc: ")) {
            let field = |name: &str| {
                line.split(' ')
                    .find_map(|w| w.strip_prefix(name))
                    .map(str::to_string)
            };
            if let (Some(ptr), Some(req), Some(gfp)) =
                (field("ptr="), field("bytes_req="), field("gfp_flags="))
            {
                seen.entry((ptr, req)).or_default().insert(gfp);
            }
        }
        seen
    }
}

impl Drop for KmallocTrace {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("events/kmem/kmalloc/enable"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn gfp_flags_are_named_as_the_kernel_names_them() {
    if skip_unless_root("gfp_flags_are_named_as_the_kernel_names_them") {
        return;
    }
    let trace = KmallocTrace::start();
    let prog = r#"tracepoint:kmem:kmalloc { printf("%lx %d %gr\n", args.ptr, args.bytes_req, args.gfp_flags); }"#;
    // The load: a command that allocates in the kernel (pipes, processes, files read).
    let load = "sh -c 'for i in 1 2 3 4 5 6 7 8; do cat /proc/self/status | wc -l; ls /proc/self/fd; done >/dev/null'";
    let out = run_sonde_timeout(&["-q", "-c", load, "-e", prog], Duration::from_secs(60));
    let kernel = trace.stop();
    let mut printed: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    for line in out.ok_stdout().lines() {
        let mut parts = line.splitn(3, ' ');
        if let (Some(ptr), Some(req), Some(gfp)) = (parts.next(), parts.next(), parts.next()) {
            printed
                .entry((ptr.to_string(), req.to_string()))
                .or_default()
                .insert(gfp.to_string());
        }
    }
    // Allocations both saw once (an address reused for the same size is left out).
    let (mut same, mut differ) = (0, Vec::new());
    for (key, texts) in &printed {
        let Some(theirs) = kernel.get(key) else {
            continue;
        };
        if texts.len() != 1 || theirs.len() != 1 {
            continue;
        }
        let (ours, theirs) = (texts.first().unwrap(), theirs.first().unwrap());
        // bpftrace's table has no names for the migrate types: it prints their bits in hex.
        let theirs_bpftrace = theirs
            .replace("__GFP_RECLAIMABLE", "0x10")
            .replace("__GFP_MOVABLE", "0x8");
        if *ours == theirs_bpftrace {
            same += 1;
        } else {
            differ.push((ours.clone(), theirs.clone()));
        }
    }
    eprintln!("{same} allocations named alike");
    assert!(same >= 20, "only {same} allocations seen by both");
    assert!(differ.is_empty(), "sonde vs the kernel: {differ:?}");
}

#[test]
fn gfp_flags_take_integers_and_pad() {
    if skip_unless_root("gfp_flags_take_integers_and_pad") {
        return;
    }
    let prog = r#"BEGIN { printf("[%gr] [%-12gr] [%gr] [%lgr]\n", 0xcc0, 0x820, 0, 0x100 | (1 << 40)); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(
        out.ok_stdout(),
        "[GFP_KERNEL] [GFP_ATOMIC  ] [0] [__GFP_ZERO|0x10000000000]\n\n\n"
    );
    let refused = run_sonde(&["-q", "-e", r#"BEGIN { printf("%gr", "a"); }"#]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("expects a value of type integer"),
        "{}",
        refused.stderr
    );
}
