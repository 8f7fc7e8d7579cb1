//! `sonde -l` of user-space probes: the binaries a `uprobe:TARGET:...` or `usdt:TARGET:...`
//! pattern names, alone or in the process `-p PID` (its objects named `/proc/PID/root/...`,
//! as `bpftrace -l -p PID 'uprobe:*:PATTERN'` lists them).

use sonde_lang::glob::{has_wildcard, wildcard_match};
use sonde_system::kernel_info::{binaries, process_targets};

/// The binaries `target` names, and whether a wildcard found them (`provider` is `uprobe`
/// or `usdt`, for the error text). With a wildcard: under `-p`, `*` is every object the
/// process maps, and other patterns match those objects' names as well as the glob
/// ([`process_targets::glob_binaries`]). Without, the one binary it resolves to (in the
/// process when `pid` is given). Errors: the process cannot be read, a named binary is not
/// found.
pub fn user_binaries(
    target: &str,
    pid: Option<u32>,
    provider: &str,
) -> Result<(Vec<String>, bool), String> {
    if has_wildcard(target) {
        let mut paths = match pid {
            Some(pid) => {
                let objects = process_targets::target_process(pid)?.objects;
                if target == "*" {
                    objects
                } else {
                    objects
                        .into_iter()
                        .filter(|o| wildcard_match(target, o))
                        .chain(process_targets::glob_binaries(target, Some(pid)))
                        .collect()
                }
            }
            None => process_targets::glob_binaries(target, None),
        };
        paths.sort();
        paths.dedup();
        return Ok((paths, true));
    }
    let path = match pid {
        Some(pid) => {
            process_targets::target_process(pid)?;
            process_targets::resolve_in_process(target, pid)
        }
        None => binaries::resolve_binary(target),
    };
    path.map(|p| (vec![p], false)).ok_or_else(|| {
        format!(
            "{provider} target `{target}` not found (no such file, library or program in $PATH)"
        )
    })
}

/// The provider's two-part form (`uprobe:FUNC`, `usdt:NAME`) gets a `*` target, as
/// bpftrace reads it (sonde reads `uprobe:/bin/bash`, with a `/`, as a binary).
pub fn with_any_target(pattern: &str) -> String {
    match pattern.split_once(':') {
        Some((provider @ ("uprobe" | "usdt"), rest)) if !rest.contains(':') => {
            format!("{provider}:*:{rest}")
        }
        _ => pattern.to_string(),
    }
}

/// The file a pattern with a wildcard provider names in its second part (`*:./prog:*`), when
/// it exists: bpftrace lists that file's user-space probes too.
pub fn named_file(pattern: &str) -> Option<&str> {
    let mut parts = pattern.split(':');
    let provider = parts.next()?;
    let file = parts.next()?;
    (has_wildcard(provider) && !file.is_empty() && !has_wildcard(file))
        .then_some(file)
        .filter(|f| std::path::Path::new(f).is_file())
}
