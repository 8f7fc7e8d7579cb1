//! Binary resolution of uprobes and USDT probes on a fixture system: a process 7 that maps
//! `/bin/app`, `/usr/lib/libx.so` and a data file, and a glob that knows `/bin/app` and
//! `/bin/awk`.

use super::*;
use crate::catalog::ProviderBackend;
use crate::catalog::providers::common::{BAD_ATTACH_POINT, NO_MATCH};
use crate::catalog::providers::fixture::ap;
use crate::catalog::providers::uprobe::{Uprobe, Uretprobe};
use crate::catalog::providers::usdt::Usdt;
use crate::program::AttachSpec;
use sonde_lang::catalog::Provider;
use sonde_lang::kernel::UsdtProbe;

/// The fixture system, traced with `-p` when `pid` is set (`Some(Err)`: it exited).
struct Sys {
    pid: Option<Result<u32, ()>>,
}

const APP: &str = "/proc/7/root/bin/app";
const LIBX: &str = "/proc/7/root/usr/lib/libx.so";

fn note(provider: &str, name: &str, offset: u64) -> UsdtProbe {
    UsdtProbe {
        provider: provider.into(),
        name: name.into(),
        pc: offset,
        base: 0,
        semaphore: 0,
        semaphore_offset: 0,
        offset,
        args: "-4@$5".into(),
    }
}

impl KernelInfo for Sys {
    fn resolve_binary(&self, target: &str) -> Option<String> {
        match target {
            "/bin/app" | "/bin/awk" | "/usr/lib/libx.so" => Some(target.into()),
            _ => None,
        }
    }
    fn target_process(&self) -> Option<Result<TargetProcess, String>> {
        Some(match self.pid? {
            Ok(pid) => Ok(TargetProcess {
                pid,
                exe: Some(APP.into()),
                objects: vec![
                    APP.into(),
                    LIBX.into(),
                    "/proc/7/root/usr/lib/locale/locale-archive".into(),
                ],
            }),
            Err(()) => Err("no process with pid 7".into()),
        })
    }
    fn process_mapping_of(&self, path: &str) -> Option<String> {
        self.pid?.ok()?;
        (path == "/usr/lib/libx.so").then(|| LIBX.into())
    }
    fn glob_binaries(&self, pattern: &str) -> Vec<String> {
        ["/bin/app", "/bin/awk"]
            .iter()
            .filter(|b| wildcard_match(pattern, b) || wildcard_match(&format!("/bin/{pattern}"), b))
            .map(|b| b.to_string())
            .collect()
    }
    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        Ok(self.elf_function_groups(path)?.concat())
    }
    fn elf_function_groups(&self, path: &str) -> Result<Vec<Vec<String>>, String> {
        let names: &[&str] = if path.ends_with("/bin/app") {
            &["main", "work"]
        } else if path.ends_with("/libx.so") {
            &["x_work", "work"]
        } else if path == "/bin/awk" {
            &["main"]
        } else {
            return Err(format!("{path}: not an ELF file"));
        };
        Ok(names.iter().map(|n| vec![n.to_string()]).collect())
    }
    fn usdt_probes(&self, path: &str) -> Result<Vec<UsdtProbe>, String> {
        if path.ends_with("/bin/app") {
            Ok(vec![note("app", "tick", 0x100)])
        } else if path.ends_with("/libx.so") {
            Ok(vec![note("x", "work", 0x200), note("x", "add", 0x300)])
        } else if path == "/bin/awk" {
            Ok(Vec::new())
        } else {
            Err(format!("{path}: not an ELF file"))
        }
    }
}

const PID: Sys = Sys { pid: Some(Ok(7)) };
const NO_PID: Sys = Sys { pid: None };

fn names(r: Result<Vec<sonde_lang::catalog::ResolvedAttach>, Diagnostic>) -> Vec<String> {
    r.unwrap().into_iter().map(|a| a.name).collect()
}

#[test]
fn uprobe_star_is_every_object_of_the_process() {
    assert_eq!(
        names(Uprobe.resolve(&ap("uprobe:*:work"), &PID)),
        [format!("uprobe:{APP}:work"), format!("uprobe:{LIBX}:work")]
    );
    // A pattern other than `*` matches the objects' names (and the glob).
    assert_eq!(
        names(Uprobe.resolve(&ap("uprobe:*libx*:*work"), &PID)),
        [
            format!("uprobe:{LIBX}:work"),
            format!("uprobe:{LIBX}:x_work")
        ]
    );
    assert_eq!(
        names(Uretprobe.resolve(&ap("ur:*:x_*"), &PID)),
        [format!("uretprobe:{LIBX}:x_work")]
    );
    let e = Uprobe.resolve(&ap("uprobe:*:nothing"), &PID).unwrap_err();
    assert_eq!(e.code, NO_MATCH);
    assert_eq!(
        e.message,
        "`nothing` matches no functions in the 3 matching binaries"
    );
}

#[test]
fn uprobe_function_alone_is_in_the_executable_of_the_process() {
    let r = Uprobe.resolve(&ap("uprobe:work"), &PID).unwrap();
    assert_eq!(r[0].name, format!("uprobe:{APP}:work"));
    assert_eq!(r[0].ctx.binary.as_deref(), Some(APP));
    assert_eq!(
        Uprobe.attach_spec(&r[0]),
        AttachSpec::Uprobe {
            path: APP.into(),
            symbol: Some("work".into()),
            offset: 0,
            ret: false,
            ref_ctr_offset: 0,
        }
    );
    let e = Uprobe.resolve(&ap("uprobe:work"), &NO_PID).unwrap_err();
    assert_eq!(e.code, BAD_ATTACH_POINT);
    let gone = Sys { pid: Some(Err(())) };
    let e = Uprobe.resolve(&ap("uprobe:*:work"), &gone).unwrap_err();
    assert_eq!(e.code, NO_PROCESS);
    assert_eq!(e.label, "no process with pid 7");
}

#[test]
fn uprobe_wildcard_binaries_without_a_process_are_globbed() {
    assert_eq!(
        names(Uprobe.resolve(&ap("uprobe:/bin/a*:main"), &NO_PID)),
        ["uprobe:/bin/app:main", "uprobe:/bin/awk:main"]
    );
    assert_eq!(
        names(Uprobe.resolve(&ap("uprobe:*:work"), &NO_PID)),
        ["uprobe:/bin/app:work"]
    );
    let e = Uprobe
        .resolve(&ap("uprobe:/opt/*:main"), &NO_PID)
        .unwrap_err();
    assert_eq!(e.code, NO_MATCH);
    assert_eq!(e.span, sonde_lang::span::Span::new(7, 13));
    let e = Uprobe
        .resolve(&ap("uprobe:/bin/a*:0x10"), &NO_PID)
        .unwrap_err();
    assert_eq!(e.code, BAD_ATTACH_POINT);
    // A named binary stays strict: an unknown function is an error there.
    let e = Uprobe
        .resolve(&ap("uprobe:/bin/awk:work"), &NO_PID)
        .unwrap_err();
    assert_eq!(e.code, crate::catalog::providers::common::UNKNOWN_FUNCTION);
}

#[test]
fn usdt_under_a_process_searches_its_objects() {
    let all = [
        format!("usdt:{APP}:app:tick"),
        format!("usdt:{LIBX}:x:add"),
        format!("usdt:{LIBX}:x:work"),
    ];
    assert_eq!(names(Usdt.resolve(&ap("usdt:*:*:*"), &PID)), all);
    assert_eq!(names(Usdt.resolve(&ap("usdt:::*"), &PID)), all);
    assert_eq!(names(Usdt.resolve(&ap("usdt:*"), &PID)), all);
    assert_eq!(
        names(Usdt.resolve(&ap("usdt::x:add"), &PID)),
        [format!("usdt:{LIBX}:x:add")]
    );
    assert_eq!(
        names(Usdt.resolve(&ap("usdt:work"), &PID)),
        [format!("usdt:{LIBX}:x:work")]
    );
    // A named binary the process maps is probed where it maps it.
    let r = Usdt
        .resolve(&ap("usdt:/usr/lib/libx.so:x:add"), &PID)
        .unwrap();
    assert_eq!(r[0].name, format!("usdt:{LIBX}:x:add"));
    assert_eq!(
        Usdt.attach_spec(&r[0]),
        AttachSpec::Uprobe {
            path: LIBX.into(),
            symbol: None,
            offset: 0x300,
            ret: false,
            ref_ctr_offset: 0,
        }
    );
    // One it does not map is probed by its own path.
    assert_eq!(
        names(Usdt.resolve(&ap("usdt:/bin/app:tick"), &PID)),
        ["usdt:/bin/app:app:tick"]
    );
    let e = Usdt.resolve(&ap("usdt::nope"), &PID).unwrap_err();
    assert_eq!(e.code, NO_MATCH);
}

#[test]
fn usdt_empty_parts_and_wildcard_binaries_without_a_process() {
    assert_eq!(
        names(Usdt.resolve(&ap("usdt:/usr/lib/libx.so::add"), &NO_PID)),
        ["usdt:/usr/lib/libx.so:x:add"]
    );
    assert_eq!(
        names(Usdt.resolve(&ap("usdt:/bin/a*:*"), &NO_PID)),
        ["usdt:/bin/app:app:tick"]
    );
    let e = Usdt.resolve(&ap("usdt::x:add"), &NO_PID).unwrap_err();
    assert_eq!(e.code, BAD_ATTACH_POINT);
    assert_eq!(
        e.message,
        "a usdt probe without a binary needs a process (-p PID)"
    );
    let e = Usdt
        .resolve(&ap("usdt:/bin/app:app:"), &NO_PID)
        .unwrap_err();
    assert_eq!(e.code, BAD_ATTACH_POINT);
    assert_eq!(e.span, sonde_lang::span::Span::new(18, 18));
    assert_eq!(
        Usdt.resolve(&ap("usdt:add"), &NO_PID).unwrap_err().code,
        BAD_ATTACH_POINT
    );
}
