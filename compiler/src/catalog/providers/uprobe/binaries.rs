//! The binaries a user-space attach point (`uprobe`, `uretprobe`, `usdt`) names, as bpftrace
//! 0.26 resolves them.
//!
//! - A path or library name without wildcards is one binary ([`KernelInfo::resolve_binary`],
//!   which under `-p PID` looks in the process: its mapped libraries, its mount namespace).
//! - A binary with wildcards is expanded: `*` under `-p` is every object the process maps
//!   (named `/proc/PID/root/...`, as bpftrace names them); any other pattern is globbed
//!   ([`KernelInfo::glob_binaries`]: `./prog*`, or `*` in the working directory and each
//!   `$PATH` directory), and under `-p` also matched against the mapped objects' names
//!   (`*libssl*`).
//! - USDT probes under `-p` are always looked up in the process's objects: `usdt::NAME`,
//!   `usdt:*:NAME` and `usdt:NAME` mean all of them, and a binary the process maps is named
//!   as mapped (`usdt:./lib.so:p -p 42` is `usdt:/proc/42/root/abs/lib.so:prov:p`).
//!
//! Each binary is one attach per matching function or probe; binaries whose symbols or notes
//! cannot be read (data files a process maps) are skipped when a wildcard found them.

use super::super::common::{
    UNKNOWN_BINARY, bad_attach_point, has_wildcard, no_match, part_span, resolve_target_binary,
    wildcard_match,
};
use sonde_lang::ast::AttachPoint;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{KernelInfo, TargetProcess};

/// Code of a `-p` process that cannot be read while attach points are resolved.
pub const NO_PROCESS: &str = "sonde::probe::no_process";

/// The binaries of one attach point, and whether a wildcard (rather than a name) found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binaries {
    /// The binaries, sorted.
    pub paths: Vec<String>,
    /// True when the attach point's binary has wildcards or is implied (`usdt::p -p PID`):
    /// unreadable binaries are skipped, and a function or probe missing from some is no error.
    pub expanded: bool,
}

impl Binaries {
    fn one(path: String) -> Binaries {
        Binaries {
            paths: vec![path],
            expanded: false,
        }
    }
}

/// The `-p` process, if any; its error (it exited, it cannot be read) as a diagnostic.
pub fn target_process(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
) -> Result<Option<TargetProcess>, Diagnostic> {
    match kernel.target_process() {
        None => Ok(None),
        Some(Ok(p)) => Ok(Some(p)),
        Some(Err(e)) => Err(Diagnostic::error(
            NO_PROCESS,
            ap.span,
            "cannot resolve this attach point in the -p process",
        )
        .with_label(e)
        .with_help("-p names a running process: give the pid of one (see `ps`)")),
    }
}

/// Expands `pattern` (a binary with wildcards) at part `index` of `ap`.
fn expand(
    ap: &AttachPoint,
    index: usize,
    pattern: &str,
    kernel: &dyn KernelInfo,
    process: Option<&TargetProcess>,
) -> Result<Binaries, Diagnostic> {
    let mut paths: Vec<String> = match process {
        Some(p) if pattern == "*" => p.objects.clone(),
        Some(p) => p
            .objects
            .iter()
            .filter(|o| wildcard_match(pattern, o))
            .cloned()
            .chain(kernel.glob_binaries(pattern))
            .collect(),
        None => kernel.glob_binaries(pattern),
    };
    paths.sort();
    paths.dedup();
    if paths.is_empty() {
        let what = match process {
            Some(p) => format!("binaries (none the process {} maps, none on disk)", p.pid),
            None => "binaries".to_string(),
        };
        return Err(no_match(part_span(ap, index), pattern, &what)
            .with_help("a wildcard binary is a glob (`./prog*`, `/usr/lib/*/libc.so.*`); `*` alone is every binary in $PATH and the working directory, or with -p PID every object the process maps"));
    }
    Ok(Binaries {
        paths,
        expanded: true,
    })
}

/// The binaries of a uprobe or uretprobe: `binary` is part 0 of `ap`, or `None` for the
/// one-part form `uprobe:FUNC`, which under `-p` names the process's executable.
pub fn uprobe_binaries(
    ap: &AttachPoint,
    binary: Option<&str>,
    kernel: &dyn KernelInfo,
    usage: &str,
) -> Result<Binaries, Diagnostic> {
    let process = target_process(ap, kernel)?;
    let Some(target) = binary else {
        return match process.and_then(|p| p.exe) {
            Some(exe) => Ok(Binaries::one(exe)),
            None => Err(bad_attach_point(
                ap.span,
                "the executable of the -p process cannot be read",
                usage,
            )),
        };
    };
    if has_wildcard(target) {
        return expand(ap, 0, target, kernel, process.as_ref());
    }
    resolve_target_binary(ap, kernel, usage).map(Binaries::one)
}

/// The binaries of a USDT attach point whose binary part (part 0) is `target` (empty in
/// `usdt::PROVIDER:NAME`, and in the short forms under `-p`).
pub fn usdt_binaries(
    ap: &AttachPoint,
    target: &str,
    kernel: &dyn KernelInfo,
    usage: &str,
) -> Result<Binaries, Diagnostic> {
    let process = target_process(ap, kernel)?;
    match (&process, target) {
        (Some(p), "" | "*") => Ok(Binaries {
            paths: sorted(p.objects.clone()),
            expanded: true,
        }),
        (None, "") => Err(bad_attach_point(
            part_span(ap, 0),
            "a usdt probe without a binary needs a process (-p PID)",
            usage,
        )
        .with_help("name the binary (`usdt:/path/prog:probe`), use `*` for every binary in $PATH, or give -p PID to search the objects of a process")),
        (_, t) if has_wildcard(t) => expand(ap, 0, t, kernel, process.as_ref()),
        (Some(_), _) => {
            let path = resolve_target_binary(ap, kernel, usage)?;
            // A file the process maps is probed where it maps it, under bpftrace's name.
            Ok(Binaries::one(kernel.process_mapping_of(&path).unwrap_or(path)))
        }
        (None, _) => resolve_target_binary(ap, kernel, usage).map(Binaries::one),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// The diagnostic of a binary that cannot be read (`what`: "symbols", "USDT probes").
pub fn unreadable(ap: &AttachPoint, path: &str, what: &str, why: String) -> Diagnostic {
    Diagnostic::error(
        UNKNOWN_BINARY,
        part_span(ap, 0),
        format!("cannot read the {what} of `{path}`"),
    )
    .with_label(why)
}

/// The diagnostic (`no_match`) of a function or probe pattern none of the `n` binaries a
/// wildcard found has.
pub fn none_in_binaries(ap: &AttachPoint, pattern: &str, what: &str, n: usize) -> Diagnostic {
    no_match(
        ap.span,
        pattern,
        &format!("{what} in the {n} matching binaries"),
    )
}

#[cfg(test)]
mod tests;
