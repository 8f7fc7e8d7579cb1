//! `sonde --info`: the system, how sonde was built, and what this kernel supports of what
//! sonde uses (bpftrace's `--info`, with sonde's own build facts and more kernel features).

use std::process::ExitCode;

/// Prints the report on standard output. Kernel features need the privileges of a kernel
/// run: without them, the report says so in place of the features.
pub fn info() -> ExitCode {
    let (sysname, release, version, machine) = sonde_kernel::features::uname();
    let mut s = format!(
        "System\n  OS: {sysname} {release} {version}\n  Arch: {machine}\n\nBuild\n  version: v{}\n  \
         code generation: sonde's own eBPF backend (no LLVM, no clang)\n  \
         userspace engine: cranelift JIT\n  \
         DWARF support: yes (gimli: uprobe args by name, -lv)\n  \
         BTF parser: built in\n\n",
        env!("CARGO_PKG_VERSION")
    );
    match sonde_kernel::privilege::missing() {
        Some(why) => {
            s += &format!("Kernel features\n  unknown: {why}\n");
        }
        None => {
            for (title, items) in sonde_kernel::features::report() {
                s += &format!("{title}\n{}\n", sonde_kernel::features::tabulate(&items));
            }
        }
    }
    crate::exit::write_stdout(s.as_bytes())
}
