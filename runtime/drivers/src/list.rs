//! Probe listing for `sonde -l [PATTERN]` and type descriptions for `sonde -lv 'struct x'`,
//! following `bpftrace -l`.
//!
//! Listed providers: `tracepoint:CAT:NAME` (from `available_events`),
//! `rawtracepoint:vmlinux:NAME` (from BTF, with the module as bpftrace 0.26 lists them;
//! `rawtracepoint:NAME` patterns select them too), `software:NAME:` and `hardware:NAME:`
//! (fixed lists, printed like newer bpftrace; 0.17 prints the pattern itself there, which is a
//! bug not copied), `iter:NAME` (from BTF; with `-v` the fields of its `ctx`),
//! `interval:UNIT:` and `profile:UNIT:` (their units, as bpftrace 0.26),
//! `kprobe:NAME` only when the kernel supports kprobes, `uprobe:PATH:FUNC` and
//! `usdt:PATH:PROVIDER:NAME` when the pattern names binaries (`uprobe:/bin/bash:read*`,
//! `uprobe:libc:*`, `usdt:./prog*:*`; `uprobe:*:main` is every binary of `$PATH` and the
//! working directory) and, with a pid, the uprobe and USDT probes of the objects that
//! process maps ([`process`]). Kernel types are listed by [`types`].
//!
//! A pattern is a glob with `*` and `?`. A pattern with a provider part (`tracepoint:sched:*`,
//! or an alias such as `t:sched:*`) is matched against whole probe names; one without a colon
//! (`*openat*`, `sched_switch`) matches a probe when it matches the whole name or its last
//! part (`tracepoint:sched:sched_switch` for `sched_switch`).

use sonde_lang::kernel::KernelInfo;
use sonde_system::kernel_info::SystemKernel;
use sonde_system::kernel_info::process_targets;
use sonde_system::kernel_info::tracepoints::field_declaration;

pub mod process;
pub mod types;

pub use types::{is_type_pattern, list_types};

/// The units of `interval` and `profile` probes, as `-l` lists them.
pub const TIMER_UNITS: [&str; 4] = ["hz", "ms", "s", "us"];

/// The names `-l` lists for the perf events of `table` (the `software` or `hardware`
/// provider's): each event's name, then its alias when it has one (`cpu-clock`, `cpu`), as
/// bpftrace lists them.
pub fn perf_event_names(
    table: &'static [sonde_compiler::catalog::providers::perf_table::PerfEventEntry],
) -> impl Iterator<Item = &'static str> {
    table
        .iter()
        .flat_map(|e| [e.name, e.alias])
        .filter(|n| !n.is_empty())
}

pub use sonde_lang::glob::wildcard_match as glob_match;

/// Replaces a provider alias in the first part of `pattern` by the provider's full name,
/// from the provider registry (`t` → `tracepoint`, `i` → `interval`).
fn expand_alias(pattern: &str) -> String {
    use sonde_lang::catalog::Catalog;
    match pattern.split_once(':') {
        Some((head, rest)) => {
            let full = sonde_compiler::catalog::SondeCatalog
                .providers()
                .into_iter()
                .find(|p| p.names().contains(&head))
                .map_or(head, |p| p.names()[0]);
            format!("{full}:{rest}")
        }
        None => pattern.to_string(),
    }
}

/// True when probe `name` is selected by the (alias-expanded) `pattern`.
fn selects(pattern: &str, name: &str) -> bool {
    if glob_match(pattern, name) {
        return true;
    }
    if pattern.contains(':') {
        return false;
    }
    let last = name
        .trim_end_matches(':')
        .rsplit(':')
        .next()
        .unwrap_or(name);
    glob_match(pattern, last)
}

/// Lists the probes matching `pattern` (all when `None`), sorted, like `bpftrace -l`.
///
/// Each element is one probe. With `verbose`, a tracepoint's element continues with one line
/// per argument (`\n    const char * filename`), as `bpftrace -lv` prints them; a raw
/// tracepoint's likewise from BTF (`\n    struct task_struct * prev`). Errors: a
/// uprobe pattern whose binary cannot be found or read.
pub fn list_probes(
    kernel: &SystemKernel,
    pattern: Option<&str>,
    verbose: bool,
) -> Result<Vec<String>, String> {
    list_probes_for(kernel, pattern, verbose, None)
}

/// [`list_probes`], with the probes of process `pid` when given: a pattern whose provider
/// part selects `uprobe` or `usdt` (or a bare pattern) also lists the functions and USDT
/// probes of every object the process maps (`uprobe:*:malloc`, `usdt:*:*`), named as
/// bpftrace 0.26 names them (`uprobe:/proc/PID/root/usr/lib/libc.so.6:malloc`). Errors: the
/// process cannot be read.
pub fn list_probes_for(
    kernel: &SystemKernel,
    pattern: Option<&str>,
    verbose: bool,
    pid: Option<u32>,
) -> Result<Vec<String>, String> {
    let mut pattern = expand_alias(pattern.unwrap_or("*").trim());
    if pid.is_some() || !pattern.contains('/') {
        pattern = process::with_any_target(&pattern);
    }
    if let Some(rest) = pattern.strip_prefix("uprobe:") {
        return list_uprobes(kernel, rest, verbose, pid);
    }
    if let Some(rest) = pattern.strip_prefix("uretprobe:") {
        return list_uretprobes(kernel, rest, pid);
    }
    if let Some(rest) = pattern.strip_prefix("usdt:") {
        return list_usdt(kernel, rest, pid);
    }
    let mut out = list_kernel(kernel, &pattern, verbose);
    if let Some(pid) = pid {
        out.extend(list_process(kernel, &pattern, verbose, pid)?);
    } else if process::named_file(&pattern).is_some() {
        // `*:./prog:*`: a wildcard provider with a file names its user-space probes too.
        let rest = pattern.split_once(':').map_or("", |(_, r)| r);
        if pattern_may_select(&pattern, "uprobe") {
            out.extend(list_uprobes(kernel, rest, verbose, None).unwrap_or_default());
        }
        if pattern_may_select(&pattern, "uretprobe") {
            out.extend(list_uretprobes(kernel, rest, None).unwrap_or_default());
        }
        if pattern_may_select(&pattern, "usdt") {
            out.extend(list_usdt(kernel, rest, None).unwrap_or_default());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The uprobe and USDT probes of the objects process `pid` maps that `pattern` selects.
fn list_process(
    kernel: &SystemKernel,
    pattern: &str,
    verbose: bool,
    pid: u32,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let objects = process_targets::target_process(pid)?.objects;
    if pattern_may_select(pattern, "uprobe") {
        for path in &objects {
            let Ok(groups) = kernel.elf_function_groups(path) else {
                continue;
            };
            let before = out.len();
            for names in &groups {
                if let Some(f) = names
                    .iter()
                    .find(|f| selects(pattern, &format!("uprobe:{path}:{f}")))
                {
                    out.push(format!("uprobe:{path}:{f}"));
                }
            }
            if verbose {
                add_params(kernel, &mut out[before..], path, path);
            }
        }
    }
    if pattern_may_select(pattern, "usdt") {
        for path in &objects {
            for p in kernel.usdt_probes(path).unwrap_or_default() {
                let name = format!("usdt:{path}:{}:{}", p.provider, p.name);
                if selects(pattern, &name) {
                    out.push(name);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Appends to each `uprobe:SHOWN:FUNC` line of `lines` the function's parameters from the
/// DWARF of `path` (`\n    int argc`), as `bpftrace -lv` prints them; warns as bpftrace does
/// when the binary has no DWARF, and says why when it cannot be read.
fn add_params(kernel: &SystemKernel, lines: &mut [String], shown: &str, path: &str) {
    use sonde_lang::kernel::DebugInfoError;
    if lines.is_empty() {
        return;
    }
    let prefix = format!("uprobe:{shown}:");
    let funcs: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect();
    let params = match kernel.dwarf().function_signatures(path, &funcs) {
        Ok(p) => p,
        Err(DebugInfoError::Missing(_) | DebugInfoError::NoFunction(_)) => {
            return warn_no_dwarf(shown);
        }
        Err(DebugInfoError::Invalid(why)) => {
            return sonde_system::warnings::warn(&format!(
                "cannot read the DWARF of \"{shown}\" ({why}), cannot show parameter info"
            ));
        }
    };
    for line in lines {
        let Some(args) = line.strip_prefix(&prefix).and_then(|f| params.get(f)) else {
            continue;
        };
        let text: String = args.iter().map(|a| format!("\n    {a}")).collect();
        line.push_str(&text);
    }
}

/// bpftrace's warning for `-lv` of uprobes of a binary without DWARF.
fn warn_no_dwarf(path: &str) {
    sonde_system::warnings::warn(&format!(
        "No DWARF found for \"{path}\", cannot show parameter info"
    ));
}

/// The kernel's probes (tracepoints, raw tracepoints, software and hardware events, kprobes)
/// that `pattern` (alias-expanded) selects, sorted.
fn list_kernel(kernel: &SystemKernel, pattern: &str, verbose: bool) -> Vec<String> {
    let pattern = pattern.to_string();
    let mut out = Vec::new();
    let add = |name: String, out: &mut Vec<String>| {
        if selects(&pattern, &name) {
            out.push(name);
        }
    };
    for (cat, name) in kernel.tracepoints() {
        let probe = format!("tracepoint:{cat}:{name}");
        if !selects(&pattern, &probe) {
            continue;
        }
        if verbose {
            let args = kernel.tracepoint_format(&cat, &name).unwrap_or_default();
            let lines: Vec<String> = args
                .iter()
                .filter(|f| !f.name.starts_with("common_"))
                .map(|f| format!("\n    {}", field_declaration(f)))
                .collect();
            out.push(format!("{probe}{}", lines.concat()));
        } else {
            out.push(probe);
        }
    }
    if pattern_may_select(&pattern, "rawtracepoint") {
        for name in kernel.raw_tracepoints() {
            let probe = format!("rawtracepoint:vmlinux:{name}");
            if !selects(&pattern, &probe) && !selects(&pattern, &format!("rawtracepoint:{name}")) {
                continue;
            }
            let args = verbose.then(|| kernel.raw_tracepoint_args(&name)).flatten();
            out.push(with_args(probe, args));
        }
    }
    use sonde_compiler::catalog::providers::{hardware, software};
    for ev in perf_event_names(software::EVENTS) {
        add(format!("software:{ev}:"), &mut out);
    }
    for ev in perf_event_names(hardware::EVENTS) {
        add(format!("hardware:{ev}:"), &mut out);
    }
    // Timers list their units, as bpftrace 0.26 does (`interval:ms:`).
    for unit in TIMER_UNITS {
        add(format!("interval:{unit}:"), &mut out);
        add(format!("profile:{unit}:"), &mut out);
    }
    if pattern_may_select(&pattern, "iter") {
        for name in kernel.iterators() {
            let probe = format!("iter:{name}");
            if !selects(&pattern, &probe) {
                continue;
            }
            let args = verbose.then(|| kernel.iterator_args(&name)).flatten();
            out.push(with_args(probe, args));
        }
    }
    // `self` probes are listed only when the pattern names the provider, as in bpftrace.
    if pattern.split(':').next() == Some("self") {
        for (sig, _) in sonde_compiler::catalog::providers::self_signal::SIGNALS {
            add(format!("self:signal:{sig}"), &mut out);
        }
    }
    if pattern_may_select(&pattern, "kprobe") {
        for f in kernel.kernel_functions().unwrap_or_default() {
            add(format!("kprobe:{f}"), &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// True when listing `pattern` reads the kernel (tracefs, BTF, perf events), which needs
/// privileges; false for uprobe and USDT listings, which read binaries.
pub fn reads_kernel(pattern: Option<&str>) -> bool {
    let pattern = expand_alias(pattern.unwrap_or("*").trim());
    !(pattern.starts_with("uprobe:") || pattern.starts_with("usdt:"))
}

/// False when the pattern's provider part rules `provider` out (saves building big lists).
fn pattern_may_select(pattern: &str, provider: &str) -> bool {
    match pattern.split_once(':') {
        Some((head, _)) => glob_match(head, provider),
        None => true,
    }
}

/// Lists `uprobe:PATH:FUNC` for the functions of the binaries named in `rest`
/// (`TARGET[:FUNC_PATTERN]`; see [`process::user_binaries`] for TARGET, under `-p PID` when
/// `pid` is given). With `verbose`, each is followed by its parameters from DWARF.
/// The uretprobes `rest` (`PATH:FUNC`) selects: the places a uprobe goes, as bpftrace 0.27
/// lists them (`uretprobe:/bin/bash:readline`), without parameters under `-v`.
fn list_uretprobes(
    kernel: &SystemKernel,
    rest: &str,
    pid: Option<u32>,
) -> Result<Vec<String>, String> {
    let lines = list_uprobes(kernel, rest, false, pid)?;
    Ok(lines
        .into_iter()
        .map(|l| match l.strip_prefix("uprobe:") {
            Some(probe) => format!("uretprobe:{probe}"),
            None => l,
        })
        .collect())
}

fn list_uprobes(
    kernel: &SystemKernel,
    rest: &str,
    verbose: bool,
    pid: Option<u32>,
) -> Result<Vec<String>, String> {
    let (target, func) = rest.rsplit_once(':').unwrap_or((rest, "*"));
    let func = if func.is_empty() { "*" } else { func };
    let (paths, expanded) = process::user_binaries(target, pid, "uprobe")?;
    let mut out = Vec::new();
    for path in &paths {
        // Over many binaries (a glob of $PATH), the plain symbol table rules most out
        // before their uprobe places are worked out.
        if expanded
            && !kernel
                .elf_functions(path)
                .is_ok_and(|fs| fs.iter().any(|f| glob_match(func, f)))
        {
            continue;
        }
        let groups = match kernel.elf_function_groups(path) {
            Ok(g) => g,
            Err(_) if expanded => continue,
            Err(e) => return Err(e),
        };
        // One line per place a uprobe goes (aliases and IFUNCs of one implementation are
        // one), named as a wildcard probe would name it: its preferred matching name.
        let mut lines: Vec<String> = groups
            .iter()
            .filter_map(|names| names.iter().find(|f| glob_match(func, f)))
            .map(|f| format!("uprobe:{path}:{f}"))
            .collect();
        lines.sort();
        if verbose {
            add_params(kernel, &mut lines, path, path);
        }
        out.extend(lines);
    }
    out.sort();
    Ok(out)
}

/// Lists `usdt:PATH:PROVIDER:NAME` for the USDT probes of the binaries named in `rest`
/// (`TARGET[:PROVIDER_PATTERN[:NAME_PATTERN]]`, or `TARGET:NAME_PATTERN` for any provider;
/// an empty TARGET under `-p` is every object of the process).
fn list_usdt(kernel: &SystemKernel, rest: &str, pid: Option<u32>) -> Result<Vec<String>, String> {
    let (target, probe) = rest.split_once(':').unwrap_or((rest, "*"));
    let (provider, name) = match probe.split_once(':') {
        Some((p, n)) => (p, n),
        None => ("*", probe),
    };
    let provider = if provider.is_empty() { "*" } else { provider };
    let name = if name.is_empty() { "*" } else { name };
    let target = if target.is_empty() && pid.is_some() {
        "*"
    } else {
        target
    };
    let (paths, expanded) = process::user_binaries(target, pid, "usdt")?;
    let mut out = Vec::new();
    for path in &paths {
        let probes = match kernel.usdt_probes(path) {
            Ok(p) => p,
            Err(_) if expanded => continue,
            Err(e) => return Err(e),
        };
        out.extend(
            probes
                .into_iter()
                .filter(|p| glob_match(provider, &p.provider) && glob_match(name, &p.name))
                .map(|p| format!("usdt:{path}:{}:{}", p.provider, p.name)),
        );
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The C definition of a kernel struct or union for `sonde -lv 'struct sock'`: `struct x {`,
/// one tab-indented member per line, `};`.
pub fn describe_type(kernel: &SystemKernel, name: &str) -> Result<String, String> {
    kernel.record_definition(name.trim())
}

#[cfg(test)]
mod tests;

/// `probe` followed by its typed arguments, one per line as `-lv` prints them.
fn with_args(
    probe: String,
    args: Option<Vec<sonde_system::kernel_info::RawTracepointArg>>,
) -> String {
    let lines: String = args
        .unwrap_or_default()
        .iter()
        .map(|a| format!("\n    {} {}", a.c_type, a.name))
        .collect();
    format!("{probe}{lines}")
}
