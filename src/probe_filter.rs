//! `--probe-filter REGEX` applied to a compiled script, in either engine: the probes whose
//! name the expression does not match are not attached (BEGIN and END always are), and a
//! script left with nothing to run fails with bpftrace 0.27's message.

use sonde_compiler::program::CompiledScript;

/// Keeps the probes of `script` that `filter` matches (all of them without a filter); false,
/// with bpftrace's error printed, when nothing is left to attach or run.
pub fn keep_matching(filter: Option<&regex::Regex>, script: &mut CompiledScript) -> bool {
    let Some(filter) = filter else {
        return true;
    };
    if script.keep_probes(|name| filter.is_match(name)) == 0 {
        eprintln!("ERROR: Attachment failed for all probes.");
        return false;
    }
    true
}
