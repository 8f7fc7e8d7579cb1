//! `sonde -l 'struct task_*'`: the kernel's structs, unions and enums (from BTF) whose names
//! match, as `bpftrace -l` lists them: their names, or with `-v` their C definitions.

use super::glob_match;
use sonde_system::btf::Kind;
use sonde_system::kernel_info::SystemKernel;

/// True when `pattern` names kernel types (`struct x`, `union x`, `enum x`) rather than
/// probes.
pub fn is_type_pattern(pattern: &str) -> bool {
    let p = pattern.trim_start();
    ["struct ", "union ", "enum "]
        .iter()
        .any(|k| p.starts_with(k))
}

/// The types matching `pattern` (`struct task_*`; whitespace runs count as one space),
/// sorted: `struct task_struct`, or with `verbose` its definition after `vmlinux: `, as
/// bpftrace 0.27 lists it. A pattern without
/// wildcards that matches nothing is an error.
pub fn list_types(
    kernel: &SystemKernel,
    pattern: &str,
    verbose: bool,
) -> Result<Vec<String>, String> {
    let pattern = pattern.split_whitespace().collect::<Vec<_>>().join(" ");
    let btf = kernel.btf()?;
    let mut found: Vec<(String, u32)> = btf
        .iter()
        .filter_map(|(id, t)| {
            let kw = match t.kind {
                Kind::Struct => "struct",
                Kind::Union => "union",
                Kind::Enum | Kind::Enum64 => "enum",
                _ => return None,
            };
            let name = format!("{kw} {}", t.name);
            (!t.name.is_empty() && glob_match(&pattern, &name)).then_some((name, id))
        })
        .collect();
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    if found.is_empty() && !sonde_lang::glob::has_wildcard(&pattern) {
        return Err(format!("no type `{pattern}` in the kernel BTF"));
    }
    Ok(found
        .into_iter()
        .map(|(name, id)| {
            if !verbose {
                return name;
            }
            // bpftrace 0.27 names where the definition comes from (only vmlinux's BTF is
            // read here): `vmlinux: struct task_struct {`.
            let t = btf.ty(id);
            let definition = match t.as_ref().map(|t| t.kind) {
                Some(Kind::Enum | Kind::Enum64) => {
                    let body: String = t
                        .map(|t| t.enumerators(btf))
                        .unwrap_or_default()
                        .iter()
                        .map(|(n, v)| format!("\t{n} = {v},\n"))
                        .collect();
                    format!("{name} {{\n{body}}};")
                }
                _ => sonde_system::btf::cdecl::record_definition(btf, id).unwrap_or(name),
            };
            format!("vmlinux: {definition}")
        })
        .collect())
}
