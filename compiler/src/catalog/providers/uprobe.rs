//! `uprobe:binary:function[+offset]`, `uprobe:binary:address` (alias `u`) and
//! `uretprobe:binary:function` (alias `ur`): dynamic probes on user-space functions.
//!
//! The binary is resolved like the dynamic linker would ([`KernelInfo::resolve_binary`]:
//! `libc`, `/bin/bash`, `./prog`) and the probe name uses the resolved path, as bpftrace's
//! `probe` builtin shows it. A binary with wildcards (`./prog*`, `*`) expands to every
//! binary it matches, and under `-p PID` `uprobe:FUNC` is a function of the process's
//! executable ([`binaries`]). Function names are checked against the ELF symbols and
//! `*`/`?` wildcards expand over them, once per place a uprobe goes
//! ([`KernelInfo::elf_function_groups`]: aliases such as `malloc`/`__libc_malloc`, and IFUNCs
//! resolved to one implementation, are one probe named by the preferred matching name). As in
//! bpftrace, `arg0`..`arg5` exist on entry probes only and `retval` on return probes. An entry
//! probe on a function (not an address or offset) also has `args`, the function's parameters
//! from the binary's DWARF, read when the probe uses them (`builtins::debug_args`).

pub mod binaries;
pub mod source_line;

use super::common::{
    BAD_OFFSET, UNKNOWN_FUNCTION, bad_attach_point, expect_parts, has_wildcard, no_match,
    parse_u64, part_span, resolved, split_offset, unknown_with_suggestion, wildcard_match,
};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{DebugFunction, ProbeContext, Provider, ResolveOptions, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::types::Type;

/// The probe context of a uprobe (`ret == false`) or uretprobe on `symbol`.
fn context(ret: bool, symbol: Option<&str>) -> ProbeContext {
    ProbeContext {
        arg_regs: if ret { 0 } else { 6 },
        retval: ret.then_some(Type::U64),
        user: true,
        func: symbol.map(str::to_string),
        ..ProbeContext::bare(if ret { "uretprobe" } else { "uprobe" })
    }
}

/// The function whose debug info types `args` of a uprobe on `symbol` of `path`: uprobes
/// at a function's first instruction only (`last` has no `+offset`). `named` when the attach
/// point names it rather than matching it with a wildcard.
fn debug_function(
    ret: bool,
    path: &str,
    last: &str,
    symbol: Option<&str>,
    named: bool,
) -> Option<DebugFunction> {
    symbol
        .filter(|_| !ret && !last.contains('+'))
        .map(|f| DebugFunction {
            path: path.to_string(),
            func: f.to_string(),
            named,
        })
}

/// The start offsets of the instructions of x86-64 `code`, decoded from its first byte,
/// up to the first undecodable byte.
fn instruction_starts(code: &[u8]) -> Vec<u64> {
    use iced_x86::{Decoder, DecoderOptions};
    let mut decoder = Decoder::with_ip(64, code, 0, DecoderOptions::NONE);
    let mut starts = Vec::new();
    while decoder.can_decode() {
        let ip = decoder.ip();
        if decoder.decode().is_invalid() {
            break;
        }
        starts.push(ip);
    }
    starts
}

/// Refuses `uprobe:path:ADDRESS` outside `--unsafe` unless the address is an instruction
/// boundary of a function of the binary (bpftrace: "Could not resolve address"); a file
/// whose functions cannot be read is not checked.
fn check_address(
    ap: &AttachPoint,
    index: usize,
    kernel: &dyn KernelInfo,
    path: &str,
    address: u64,
) -> Result<(), Diagnostic> {
    match kernel.elf_function_at(path, address) {
        Err(_) => Ok(()),
        Ok(None) => Err(Diagnostic::error(
            BAD_OFFSET,
            part_span(ap, index),
            format!("Could not resolve address: {path}:{address:#x}"),
        )
        .with_label("in no function of the binary")
        .with_help(
            "give a function (`uprobe:BIN:FUNC+OFFSET`), an address inside one (a file \
             offset), or run with --unsafe to probe it anyway",
        )),
        Ok(Some((func, offset))) => match kernel.elf_function_code(path, &func) {
            Some(code) if offset != 0 => check_offset(ap, index, &func, offset, &code),
            _ => Ok(()),
        },
    }
}

/// Refuses `func+offset` unless `offset` is the start of an instruction of `func`, whose
/// machine code is `code` (bpftrace: "Could not add uprobe into middle of instruction"): a
/// breakpoint written inside an instruction corrupts it and crashes the traced process.
fn check_offset(
    ap: &AttachPoint,
    index: usize,
    func: &str,
    offset: u64,
    code: &[u8],
) -> Result<(), Diagnostic> {
    let starts = instruction_starts(code);
    if starts.contains(&offset) {
        return Ok(());
    }
    let before = starts.iter().copied().rfind(|&s| s < offset);
    let after = starts.iter().copied().find(|&s| s > offset);
    let (message, label) = if offset >= code.len() as u64 {
        (
            format!(
                "Offset outside the function bounds ('{func}' size is {})",
                code.len()
            ),
            "outside the function",
        )
    } else {
        (
            format!("offset {offset} is in the middle of an instruction of `{func}`"),
            "not an instruction boundary",
        )
    };
    let nearest = match (before, after) {
        (Some(b), Some(a)) => {
            format!("the nearest instruction boundaries are {func}+{b} and {func}+{a}")
        }
        (Some(b), None) => format!("the nearest instruction boundary is {func}+{b}"),
        (None, Some(a)) => format!("the nearest instruction boundary is {func}+{a}"),
        (None, None) => format!("the code of `{func}` could not be decoded"),
    };
    Err(Diagnostic::error(BAD_OFFSET, part_span(ap, index), message)
        .with_label(label)
        .with_help(format!(
            "{nearest}; run with --unsafe to attach there anyway (it may crash the traced process)"
        )))
}

/// Shared resolution of uprobes and uretprobes: over each binary the attach point names
/// ([`binaries::uprobe_binaries`]), the functions (or the address) it names.
fn resolve_uprobe(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    ret: bool,
    unsafe_allowed: bool,
    usage: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    let provider = if ret { "uretprobe" } else { "uprobe" };
    if let Some(at_line) = source_line::resolve(ap, kernel, ret) {
        return at_line;
    }
    // Under -p, `uprobe:FUNC` is a function of the process's executable (as in bpftrace).
    let short = ap.parts.len() == 1 && kernel.target_process().is_some();
    if !short {
        expect_parts(ap, 2, 2, usage)?;
    }
    let func_index = usize::from(!short);
    let binary = (!short).then(|| ap.parts[0].as_str());
    let bins = binaries::uprobe_binaries(ap, binary, kernel, usage)?;
    let make = |path: &str, last: String, symbol: Option<&str>| {
        let named = !has_wildcard(&ap.parts[func_index]);
        let ctx = ProbeContext {
            binary: Some(path.to_string()),
            debug_function: debug_function(ret, path, &last, symbol, named),
            ..context(ret, symbol)
        };
        resolved(ap, provider, vec![path.to_string(), last], ctx)
    };
    let func_text = &ap.parts[func_index];
    if func_text.starts_with(|c: char| c.is_ascii_digit()) {
        let address = parse_u64(func_text).ok_or_else(|| {
            bad_attach_point(
                part_span(ap, func_index),
                format!("`{func_text}` is neither a function nor an address"),
                usage,
            )
        })?;
        if bins.expanded {
            return Err(bad_attach_point(
                part_span(ap, 0),
                "an address cannot be combined with a wildcard binary",
                usage,
            ));
        }
        let path = &bins.paths[0];
        if !unsafe_allowed {
            check_address(ap, func_index, kernel, path, address)?;
        }
        return Ok(vec![make(path, func_text.clone(), None)]);
    }
    let (func, offset) = split_offset(ap, func_index, usage)?;
    if ret && offset != 0 {
        return Err(bad_attach_point(
            part_span(ap, func_index),
            "a uretprobe cannot have an offset",
            usage,
        ));
    }
    if offset != 0 && has_wildcard(&func) {
        return Err(bad_attach_point(
            part_span(ap, func_index),
            "an offset cannot be combined with a wildcard",
            usage,
        ));
    }
    let mut out = Vec::new();
    for path in &bins.paths {
        // Over many binaries (a glob of $PATH), the plain symbol table rules most out
        // before their uprobe places are worked out.
        if bins.expanded
            && !kernel
                .elf_functions(path)
                .is_ok_and(|fs| fs.iter().any(|f| wildcard_match(&func, f)))
        {
            continue;
        }
        // One entry per place a uprobe goes (aliases and IFUNCs of one implementation are
        // one), its preferred name first: the runtime resolves them, the compiler only picks
        // names.
        let groups = match kernel.elf_function_groups(path) {
            Ok(g) => g,
            Err(_) if bins.expanded => continue,
            Err(e) => {
                return Err(binaries::unreadable(ap, path, "symbols", e)
                    .with_help("uprobes need an ELF executable or shared library"));
            }
        };
        let found = functions_in(ap, func_index, path, &groups, &func, !bins.expanded)?;
        for name in found {
            if offset != 0
                && !unsafe_allowed
                && let Some(code) = kernel.elf_function_code(path, &name)
            {
                check_offset(ap, func_index, &name, offset, &code)?;
            }
            let last = match offset {
                0 => name.clone(),
                _ => format!("{name}+{offset}"),
            };
            out.push(make(path, last, Some(&name)));
        }
    }
    if out.is_empty() {
        return Err(binaries::none_in_binaries(
            ap,
            &func,
            "functions",
            bins.paths.len(),
        ));
    }
    Ok(out)
}

/// The functions of `path` (its uprobe places `groups`) that `func` names, sorted: itself,
/// or each place once under its preferred name among those the pattern matches. `strict`
/// (one named binary) makes a missing function or match an error; otherwise it is none.
fn functions_in(
    ap: &AttachPoint,
    index: usize,
    path: &str,
    groups: &[Vec<String>],
    func: &str,
    strict: bool,
) -> Result<Vec<String>, Diagnostic> {
    if !has_wildcard(func) {
        if groups.iter().flatten().any(|s| s == func) {
            return Ok(vec![func.to_string()]);
        }
        if !strict {
            return Ok(Vec::new());
        }
        return Err(unknown_with_suggestion(
            UNKNOWN_FUNCTION,
            part_span(ap, index),
            "function",
            func,
            groups.iter().flatten().map(String::as_str),
        )
        .with_label(format!("no such function in {path}")));
    }
    let mut names: Vec<String> = groups
        .iter()
        .filter_map(|g| g.iter().find(|s| wildcard_match(func, s)).cloned())
        .collect();
    names.sort();
    names.dedup();
    if names.is_empty() && strict {
        return Err(no_match(ap.span, func, &format!("functions in {path}")));
    }
    Ok(names)
}

/// The attach spec of a canonical uprobe attach point (`[path, func[+off] | address]`).
fn uprobe_spec(attach: &ResolvedAttach, ret: bool) -> AttachSpec {
    let path = attach.parts.first().cloned().unwrap_or_default();
    let last = attach.parts.get(1).map_or("", String::as_str);
    if last.starts_with(|c: char| c.is_ascii_digit()) {
        return AttachSpec::Uprobe {
            path,
            symbol: None,
            offset: parse_u64(last).unwrap_or(0),
            ret,
            ref_ctr_offset: 0,
        };
    }
    let (symbol, offset) = match last.split_once('+') {
        Some((s, off)) => (s.to_string(), parse_u64(off).unwrap_or(0)),
        None => (last.to_string(), 0),
    };
    AttachSpec::Uprobe {
        path,
        symbol: Some(symbol),
        offset,
        ret,
        ref_ctr_offset: 0,
    }
}

/// `uprobe:binary:function[+offset]` and `uprobe:binary:address`.
pub struct Uprobe;

const UPROBE_USAGE: &str =
    "uprobe:binary:function[+offset] | uprobe:binary:address | uprobe:binary@file:line[:col]";

impl Provider for Uprobe {
    fn names(&self) -> &'static [&'static str] {
        &["uprobe", "u"]
    }
    fn usage(&self) -> &'static str {
        UPROBE_USAGE
    }
    fn doc(&self) -> &'static str {
        "Entry of a user-space function (or an offset or address in a binary); arguments are arg0..arg5, and `args.NAME` when the binary has DWARF. The binary may be a glob (`./app*`; `*` is every binary of $PATH and the working directory, with -p PID every object the process maps, named `/proc/PID/root/...`); with -p, `uprobe:FUNC` is a function of the process's executable. `uprobe:binary@file:line[:col]` is the first statement of a source line (`file` a path suffix), from the binary's DWARF line table, named by its address"
    }
    fn resolve_with(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        options: &ResolveOptions,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_uprobe(ap, kernel, false, options.unsafe_allowed, UPROBE_USAGE)
    }
}

impl ProviderBackend for Uprobe {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        uprobe_spec(attach, false)
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

/// `uretprobe:binary:function`.
pub struct Uretprobe;

const URETPROBE_USAGE: &str = "uretprobe:binary:function | uretprobe:binary:address";

impl Provider for Uretprobe {
    fn names(&self) -> &'static [&'static str] {
        &["uretprobe", "ur"]
    }
    fn usage(&self) -> &'static str {
        URETPROBE_USAGE
    }
    fn doc(&self) -> &'static str {
        "Return of a user-space function; its return value is retval. Binaries as for uprobe. Return probes attach before entry probes, so that a call whose entry is seen has its return seen too"
    }
    fn resolve_with(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        options: &ResolveOptions,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_uprobe(ap, kernel, true, options.unsafe_allowed, URETPROBE_USAGE)
    }
}

impl ProviderBackend for Uretprobe {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        uprobe_spec(attach, true)
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::{BAD_ATTACH_POINT, NO_MATCH, UNKNOWN_BINARY};
    use crate::catalog::providers::fixture::{Fixture, LIBC, ap};
    use sonde_lang::span::Span;

    const K: Fixture = Fixture { kprobes: false };

    #[test]
    fn library_name_resolves_to_path() {
        let r = Uprobe.resolve(&ap("u:libc:getpid"), &K).unwrap();
        assert_eq!(r[0].name, format!("uprobe:{LIBC}:getpid"));
        assert!(r[0].ctx.user);
        assert_eq!(r[0].ctx.arg_regs, 6);
        assert_eq!(r[0].ctx.func.as_deref(), Some("getpid"));
        assert_eq!(
            Uprobe.attach_spec(&r[0]),
            AttachSpec::Uprobe {
                path: LIBC.into(),
                symbol: Some("getpid".into()),
                offset: 0,
                ret: false,
                ref_ctr_offset: 0,
            }
        );
    }

    #[test]
    fn offsets_and_addresses() {
        let r = Uprobe
            .resolve(&ap("uprobe:/bin/bash:readline+0x10"), &K)
            .unwrap();
        assert_eq!(r[0].name, "uprobe:/bin/bash:readline+16");
        assert_eq!(
            Uprobe.attach_spec(&r[0]),
            AttachSpec::Uprobe {
                path: "/bin/bash".into(),
                symbol: Some("readline".into()),
                offset: 16,
                ret: false,
                ref_ctr_offset: 0,
            }
        );
        let a = Uprobe.resolve(&ap("uprobe:/bin/bash:0x1234"), &K).unwrap();
        assert_eq!(a[0].ctx.func, None);
        assert_eq!(
            Uprobe.attach_spec(&a[0]),
            AttachSpec::Uprobe {
                path: "/bin/bash".into(),
                symbol: None,
                offset: 0x1234,
                ret: false,
                ref_ctr_offset: 0,
            }
        );
        assert_eq!(
            Uprobe
                .resolve(&ap("u:/bin/bash:12zz"), &K)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
    }

    #[test]
    fn offsets_must_be_instruction_boundaries() {
        for ok in ["main+1", "main+4", "main+8"] {
            let text = format!("uprobe:/bin/bash:{ok}");
            assert!(Uprobe.resolve(&ap(&text), &K).is_ok(), "{ok}");
        }
        let e = Uprobe
            .resolve(&ap("uprobe:/bin/bash:main+2"), &K)
            .unwrap_err();
        assert_eq!(e.code, BAD_OFFSET);
        assert_eq!(e.span, Span::new(17, 23));
        assert_eq!(
            e.message,
            "offset 2 is in the middle of an instruction of `main`"
        );
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .starts_with("the nearest instruction boundaries are main+1 and main+4;"),
            "{:?}",
            e.help
        );
        let e = Uprobe
            .resolve(&ap("uprobe:/bin/bash:main+20"), &K)
            .unwrap_err();
        assert_eq!(e.code, BAD_OFFSET);
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .starts_with("the nearest instruction boundary is main+8;")
        );
        // --unsafe lets it through, as in bpftrace.
        let r = Uprobe
            .resolve_with(
                &ap("uprobe:/bin/bash:main+2"),
                &K,
                &ResolveOptions {
                    unsafe_allowed: true,
                    ..ResolveOptions::default()
                },
            )
            .unwrap();
        assert_eq!(r[0].name, "uprobe:/bin/bash:main+2");
    }

    #[test]
    fn entry_probes_on_functions_get_args_from_debug_info() {
        let f = |text: &str| -> Vec<Option<DebugFunction>> {
            let r = match text.starts_with("ur") {
                true => Uretprobe.resolve(&ap(text), &K),
                false => Uprobe.resolve(&ap(text), &K),
            };
            r.unwrap()
                .into_iter()
                .map(|a| a.ctx.debug_function)
                .collect()
        };
        let named = |func: &str, named: bool| DebugFunction {
            path: LIBC.into(),
            func: func.into(),
            named,
        };
        assert_eq!(f("u:libc:getpid"), [Some(named("getpid", true))]);
        assert_eq!(f("u:libc:*malloc"), [Some(named("malloc", false))]);
        assert_eq!(f("ur:libc:getpid"), [None]);
        assert_eq!(f("u:/bin/bash:main+4"), [None]);
        assert_eq!(f("u:/bin/bash:0x1234"), [None]);
    }

    #[test]
    fn uretprobe_gets_retval() {
        let r = Uretprobe.resolve(&ap("ur:/bin/bash:readline"), &K).unwrap();
        assert_eq!(r[0].name, "uretprobe:/bin/bash:readline");
        assert_eq!(r[0].ctx.retval, Some(Type::U64));
        assert_eq!(r[0].ctx.arg_regs, 0);
        assert_eq!(Uretprobe.attach_spec(&r[0]).section(), "uretprobe");
        assert_eq!(
            Uretprobe
                .resolve(&ap("ur:/bin/bash:readline+1"), &K)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
    }

    #[test]
    fn wildcards_expand_over_symbols() {
        let r = Uprobe.resolve(&ap("uprobe:libc:get*"), &K).unwrap();
        let funcs: Vec<Option<&str>> = r.iter().map(|a| a.ctx.func.as_deref()).collect();
        assert_eq!(
            funcs,
            [Some("getaddrinfo"), Some("gethostbyname"), Some("getpid")]
        );
        assert_eq!(
            Uprobe.resolve(&ap("uprobe:libc:zz*"), &K).unwrap_err().code,
            NO_MATCH
        );
    }

    #[test]
    fn aliases_expand_once_under_the_preferred_matching_name() {
        let funcs = |pattern: &str| -> Vec<String> {
            Uprobe
                .resolve(&ap(pattern), &K)
                .unwrap()
                .into_iter()
                .map(|a| a.ctx.func.unwrap())
                .collect()
        };
        assert_eq!(funcs("uprobe:libc:*malloc"), ["malloc"]);
        assert_eq!(
            funcs("uprobe:libc:*"),
            ["free", "getaddrinfo", "gethostbyname", "getpid", "malloc"]
        );
        // A pattern matching only the other name still probes the place, under that name.
        assert_eq!(funcs("uprobe:libc:__libc_*"), ["__libc_malloc"]);
        // Each name can still be probed on its own.
        assert_eq!(funcs("uprobe:libc:__libc_malloc"), ["__libc_malloc"]);
        let r = Uretprobe.resolve(&ap("ur:libc:*alloc"), &K).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, format!("uretprobe:{LIBC}:malloc"));
    }

    #[test]
    fn unknown_binary_and_function() {
        let e = Uprobe.resolve(&ap("uprobe:/nope:f"), &K).unwrap_err();
        assert_eq!(e.code, UNKNOWN_BINARY);
        assert_eq!(e.span, Span::new(7, 12));
        let e = Uprobe.resolve(&ap("uprobe:/bin/broken:f"), &K).unwrap_err();
        assert_eq!(e.code, UNKNOWN_BINARY);
        assert_eq!(e.label, "/bin/broken: not an ELF file");
        let e = Uprobe
            .resolve(&ap("uprobe:/bin/bash:redline"), &K)
            .unwrap_err();
        assert_eq!(e.code, UNKNOWN_FUNCTION);
        assert_eq!(e.span, Span::new(17, 24));
        assert_eq!(e.help.as_deref(), Some("did you mean `readline`?"));
        assert_eq!(
            Uprobe.resolve(&ap("uprobe:readline"), &K).unwrap_err().code,
            BAD_ATTACH_POINT
        );
    }
}
