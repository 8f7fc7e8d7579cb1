//! `sonde -l -p PID`: the uprobe and USDT probes of the binaries a running process maps (its
//! program and libraries), as `bpftrace -l -p PID 'uprobe:*:PATTERN'` lists them.

use crate::symbols::procmaps::ProcessMaps;
use std::path::Path;

/// The executable files process `pid` maps, by their path as the process sees it, with the
/// path sonde reads them by (through `/proc/PID/root` when the process lives in another
/// mount namespace). Sorted and without duplicates.
pub fn mapped_binaries(pid: u32) -> Result<Vec<(String, String)>, String> {
    let maps = ProcessMaps::read(pid).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("no process with pid {pid}"),
        _ => format!("cannot read the mappings of process {pid}: {e}"),
    })?;
    let mut paths: Vec<String> = maps
        .mappings()
        .iter()
        .filter(|m| m.executable)
        .map(|m| m.path.clone())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths
        .into_iter()
        .map(|p| {
            let inside = format!("/proc/{pid}/root{p}");
            let readable = if Path::new(&p).exists() || !Path::new(&inside).exists() {
                p.clone()
            } else {
                inside
            };
            (p, readable)
        })
        .collect())
}

/// A pattern for probes of a process: the provider's two-part form (`uprobe:FUNC`,
/// `usdt:NAME`) gets a `*` target, as bpftrace reads it.
pub fn with_any_target(pattern: &str) -> String {
    match pattern.split_once(':') {
        Some((provider @ ("uprobe" | "usdt"), rest)) if !rest.contains(':') => {
            format!("{provider}:*:{rest}")
        }
        _ => pattern.to_string(),
    }
}
