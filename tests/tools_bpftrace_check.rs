//! bpftrace's own shipped tools (Debian's bpftrace 0.17 installs them as `/usr/sbin/*.bt`)
//! under `sonde --check`.
//!
//! `every_shipped_tool_passes_check`: every tool passes `sonde --check`, except the few that
//! cannot on this machine; for each of those the test asserts the precise diagnostics and
//! why, and what bpftrace 0.17 does with the same file (its dry run, `--emit-elf`).

mod common;
mod tools_support;

use common::{TempDir, run_sonde_timeout};
use tools_support::bpftrace::{RUN_TIMEOUT, bpftrace_017, bpftrace_dry_run, diagnostics};

/// The shipped tools, sorted by name.
fn shipped_tools() -> Vec<String> {
    let names = std::fs::read_dir("/usr/sbin").into_iter().flatten();
    let names = names.filter_map(|e| e.ok()?.file_name().into_string().ok());
    let mut tools: Vec<String> = names.filter(|n| n.ends_with(".bt")).collect();
    tools.sort();
    tools
}

/// `s` with every run of whitespace made one space (miette wraps help texts).
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A tool sonde's --check rejects here, and why.
struct Exception {
    tool: &'static str,
    /// The diagnostics, in order (`code: message`).
    diags: Vec<String>,
    /// Texts the output contains (labels, help), whitespace-flattened.
    says: &'static [&'static str],
    /// What bpftrace 0.17's dry run does: None compiles, Some(text) fails saying text.
    bpftrace: Option<&'static str>,
}

fn exceptions() -> Vec<Exception> {
    let unknown_fn = |f: &str| format!("sonde::probe::unknown_function: unknown function `{f}`");
    // OpenSSL 3 keeps these functions local to libcrypto: only a debug-symbols file has them
    // (the tools say "need debug symbol for ossl local functions"). bpftrace 0.17 attached the
    // other functions and skipped these silently; since 0.24 a probe that cannot attach is an
    // error unless `config = { missing_probes = ... }` says otherwise (0.26's versions of
    // these tools set `missing_probes = ignore`). Each is reported for its uprobe and its
    // uretprobe.
    let ossl = |tool, last| Exception {
        tool,
        diags: [
            "rsa_ossl_public_encrypt",
            "rsa_ossl_public_decrypt",
            "rsa_ossl_private_encrypt",
            "rsa_ossl_private_decrypt",
            "ossl_ecdsa_sign",
            "ossl_ecdsa_verify",
            last,
        ]
        .repeat(2)
        .iter()
        .map(|f| unknown_fn(f))
        .collect(),
        says: &["no such function in /", "/libcrypto.so"],
        bpftrace: None,
    };
    // 0.17 scoped variables to the probe; since 0.22 a variable lives in its block, and these
    // tools read $saddr and $daddr after the `if` that assigns them (0.26's versions declare
    // them first: `let $saddr;`).
    let scoped = |tool, bpftrace| Exception {
        tool,
        diags: ["saddr", "daddr"]
            .map(|v| format!("sonde::sema::undefined_variable: undefined variable `${v}`"))
            .to_vec(),
        says: &[
            "defined here, in a block that has ended",
            "declare it before that block with `let $saddr;`",
            "declare it before that block with `let $daddr;`",
        ],
        bpftrace,
    };
    vec![
        Exception {
            tool: "runqlen.bt",
            // Linux 6.14 renamed cfs_rq.nr_running to nr_queued (0.26's version reads that).
            diags: vec![
                "sonde::sema::unknown_field: struct cfs_rq has no field `nr_running`".into(),
            ],
            says: &["help: fields of struct cfs_rq:", " nr_queued,"],
            bpftrace: Some("does not contain a field named 'nr_running'"),
        },
        ossl("ssllatency.bt", "ecdh_simple_compute_key"),
        ossl("sslsnoop.bt", "ossl_ecdh_compute_key"),
        Exception {
            tool: "threadsnoop.bt",
            // Since glibc 2.34 libpthread.so.0 is an empty stub and pthread_create is in libc
            // (checked below). bpftrace 0.17 "attaches" and never fires (no probe is opened).
            diags: vec![unknown_fn("pthread_create")],
            says: &["no such function in /", "/libpthread.so.0"],
            bpftrace: None,
        },
        scoped("tcpconnect.bt", None),
        // 0.17 includes <net/sock.h> (it does not define BPFTRACE_HAVE_BTF here), and the
        // kernel's headers are not installed.
        scoped("tcpdrop.bt", Some("'net/sock.h' file not found")),
    ]
}

#[test]
fn every_shipped_tool_passes_check() {
    if common::skip_unless_root("every_shipped_tool_passes_check") {
        return;
    }
    let tools = shipped_tools();
    assert!(
        tools.len() >= 30,
        "bpftrace's tools are not in /usr/sbin (.ci/test installs bpftrace): {tools:?}"
    );
    let with_bpftrace = bpftrace_017();
    let exceptions = exceptions();
    let mut problems = Vec::new();
    for tool in &tools {
        let path = format!("/usr/sbin/{tool}");
        let out = run_sonde_timeout(&["--check", &path], RUN_TIMEOUT);
        let err = &out.stderr;
        assert!(!out.timed_out && !err.contains("panicked"), "{out:?}");
        let Some(ex) = exceptions.iter().find(|e| e.tool == tool) else {
            if out.code != Some(0) {
                problems.push(format!("{tool} fails --check:\n{err}"));
            }
            continue;
        };
        let want = &ex.diags;
        if out.code != Some(1) || diagnostics(err) != *want {
            problems.push(format!("{tool}: expected exit 1 and {want:#?}:\n{err}"));
        }
        let text = flat(err);
        for s in ex.says.iter().filter(|s| !text.contains(*s)) {
            problems.push(format!("{tool}: the diagnostics do not say {s:?}:\n{err}"));
        }
        if with_bpftrace {
            match (bpftrace_dry_run(tool), ex.bpftrace) {
                (Ok(()), None) => {}
                (Err(e), Some(s)) if e.contains(s) => {}
                (got, want) => problems.push(format!(
                    "{tool}: bpftrace 0.17 was expected to {}, got {got:?}",
                    want.map_or("compile it".into(), |s| format!("fail saying {s:?}"))
                )),
            }
        }
    }
    for ex in &exceptions {
        if !tools.iter().any(|t| t == ex.tool) {
            problems.push(format!("{} is not installed any more", ex.tool));
        }
    }
    // pthread_create is in libc: threadsnoop's probe would attach there.
    let probe = "uprobe:libc:pthread_create { @ = count(); }";
    let libc = run_sonde_timeout(&["--check", "-e", probe], RUN_TIMEOUT);
    if libc.code != Some(0) {
        problems.push(format!("pthread_create is not in libc:\n{}", libc.stderr));
    }
    // Following the help (`let $saddr;` before the block, the field's new name) makes the
    // 0.17 files pass.
    let decl = "  let $saddr; let $daddr;\n  $sk = (";
    for (tool, from, to) in [
        ("tcpconnect.bt", "  $sk = (", decl),
        ("tcpdrop.bt", "  $sk = (", decl),
        ("runqlen.bt", "->nr_running", "->nr_queued"),
    ] {
        let src = std::fs::read_to_string(format!("/usr/sbin/{tool}")).unwrap_or_default();
        let fixed = src.replacen(from, to, 1);
        let dir = TempDir::new("bt-let");
        let file = dir.path().join(tool);
        std::fs::write(&file, &fixed).expect("write the fixed tool");
        let out = run_sonde_timeout(&["--check", file.to_str().expect("utf-8")], RUN_TIMEOUT);
        if fixed == src || out.code != Some(0) {
            problems.push(format!("{tool} with {to:?}:\n{}", out.stderr));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
