//! Address and symbol functions: `ksym`, `usym`, `kaddr`, `percpu_kaddr` (a per-CPU
//! variable as a typed ksym), `uaddr`, `kptr`, `uptr` and `reg`.

use super::args::Args;
use super::function;
use crate::ir::{AluOp, Intrinsic, Operand, Width};
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::BtfObject;
use sonde_lang::types::{AddrSpace, Type};

/// Code of a `percpu_kaddr` name that the kernel's BTF has no variable of.
pub const UNKNOWN_VARIABLE: &str = "sonde::sema::unknown_kernel_variable";
/// Code of a kernel variable whose address this kernel's verifier cannot find.
pub const UNRESOLVABLE_VARIABLE: &str = "sonde::sema::unresolvable_kernel_variable";

/// The signature of `percpu_kaddr`.
const PERCPU_SIG: &str = "percpu_kaddr(name[, cpu])";

/// The rule of `percpu_kaddr`: a variable of the kernel's BTF (bpftrace's error when not)
/// whose address the verifier can find (it looks a typed ksym's name up in kallsyms), and
/// an integer cpu; a `uint64 *` as in bpftrace.
fn percpu_kaddr_rule(call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
    let a = Args::new(call, PERCPU_SIG);
    a.arity(1, 2)?;
    let name = a.literal_text(0, "a kernel variable name string literal")?;
    if a.len() == 2 {
        a.int(1, "an integer cpu")?;
    }
    if call.kernel.kernel_btf_id(BtfObject::Var, &name).is_none() {
        return Err(Diagnostic::error(
            UNKNOWN_VARIABLE,
            a.span(0),
            format!("Could not resolve variable \"{name}\" from BTF"),
        )
        .with_label("no such variable in the kernel's BTF")
        .with_help("per-CPU variables are the VARs of the `.data..percpu` section of /sys/kernel/btf/vmlinux (`runqueues`, `process_counts`)"));
    }
    if call.kernel.kernel_symbol_address(&name).is_none() {
        return Err(Diagnostic::error(
            UNRESOLVABLE_VARIABLE,
            a.span(0),
            format!("this kernel cannot give the address of `{name}`: its /proc/kallsyms lists no data symbols (CONFIG_KALLSYMS_ALL is off), where the verifier looks a typed ksym up"),
        )
        .with_label("not in /proc/kallsyms")
        .with_help("the verifier would refuse the program (\"ldimm64 failed to find the address for kernel symbol\"); percpu_kaddr() needs a kernel built with CONFIG_KALLSYMS_ALL=y"));
    }
    Ok(Type::Ptr {
        pointee: Box::new(Type::U64),
        space: AddrSpace::Kernel,
    })
}

/// `percpu_kaddr(name[, cpu])`: `bpf_this_cpu_ptr` (or `bpf_per_cpu_ptr` of `cpu`) on the
/// variable's typed ksym.
fn lower_percpu_kaddr(
    cx: &mut crate::lower::cx::LowerCx<'_>,
    call: &crate::lower::cx::LowerCall<'_>,
) -> Result<crate::lower::cx::Val, Diagnostic> {
    let name = crate::lower::events::literal_text(&call.args[0], cx.positional);
    let var = cx
        .kernel
        .kernel_btf_id(BtfObject::Var, &name)
        .ok_or_else(|| {
            Diagnostic::error(
                UNKNOWN_VARIABLE,
                call.args[0].span,
                format!("Could not resolve variable \"{name}\" from BTF"),
            )
        })?;
    let ptr = match call.args.get(1) {
        None => cx.call(Intrinsic::ThisCpuPtr(var), vec![]),
        Some(cpu) => {
            let cpu = cx.lower_int(cpu)?;
            cx.call(Intrinsic::PerCpuPtr(var), vec![Operand::Reg(cpu)])
        }
    };
    Ok(crate::lower::cx::Val::Int(ptr))
}

/// The x86-64 `struct pt_regs` register names `reg()` accepts (`pc` is `ip`).
pub const REGISTERS: &[&str] = &[
    "r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax", "cx", "dx", "si", "di",
    "orig_ax", "ip", "pc", "cs", "flags", "sp", "ss",
];

/// Providers whose program context starts with `struct pt_regs` (kprobes, uprobes and the
/// perf-event based ones).
pub(crate) const PT_REGS_PROVIDERS: &[&str] = &[
    "kprobe",
    "kretprobe",
    "uprobe",
    "uretprobe",
    "usdt",
    "profile",
    "interval",
    "software",
    "hardware",
    "watchpoint",
];

/// The symbol rule of `ksym`/`usym`: one integer or pointer address.
fn symbol(call: &CallCheck<'_>, sig: &'static str, kernel: bool) -> Result<Type, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(1, 1)?;
    if !(a.ty(0).is_integer() || a.ty(0).is_ptr()) {
        return Err(a.error(0, "an integer or pointer address"));
    }
    Ok(Type::Symbol { kernel })
}

/// The address-space rule of `kptr`/`uptr`: pointers get `space`, integers stay as they are.
fn with_space(
    call: &CallCheck<'_>,
    sig: &'static str,
    space: AddrSpace,
) -> Result<Type, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(1, 1)?;
    match a.ty(0) {
        Type::Ptr { pointee, .. } => Ok(Type::Ptr {
            pointee: pointee.clone(),
            space,
        }),
        t if t.is_integer() => Ok(t.clone()),
        _ => Err(a.error(0, "a pointer or an integer address")),
    }
}

function!(
    /// `ksym(addr)`: a kernel address, printed as its symbol name.
    Ksym, "ksym", "ksym(addr)", "Kernel symbol name of an address (resolved when printed)", unsafe = false,
    |call| { symbol(call, "ksym(addr)", true) },
    lower |cx, call| { let v = cx.lower_int(&call.args[0])?; Ok(crate::lower::cx::Val::Int(v)) }
);

function!(
    /// `usym(addr)`: a user address, printed as its symbol name in the current process.
    Usym, "usym", "usym(addr)", "User symbol name of an address in the current process (resolved when printed)",
    unsafe = false,
    |call| { symbol(call, "usym(addr)", false) },
    lower |cx, call| {
        // 16 bytes: the address, then the pid whose address space it belongs to.
        let v = cx.lower_int(&call.args[0])?;
        let buf = cx.alloc(16);
        cx.store(buf, 0, Operand::Reg(v), Width::W64);
        let t = cx.pid_tgid();
        let pid = cx.alu(AluOp::LShr, t, Operand::Imm(32));
        cx.store(buf, 8, Operand::Reg(pid), Width::W64);
        Ok(crate::lower::cx::Val::Mem { ptr: buf, size: 16 })
    }
);

function!(
    /// `kaddr("name")`: the address of a kernel symbol, resolved at compile time.
    Kaddr, "kaddr", "kaddr(name)", "Address of a kernel symbol (resolved when the program is built)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "kaddr(name)");
        a.arity(1, 1)?;
        a.literal(0, "a kernel symbol name string literal")?;
        Ok(Type::U64)
    },
    lower |cx, call| {
        let name = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let Some(addr) = cx.kernel.kernel_symbol_address(&name) else {
            return Err(Diagnostic::error("sonde::codegen::unknown_symbol", call.args[0].span, format!("Failed to resolve kernel symbol: {name}"))
                .with_label("not in /proc/kallsyms")
                .with_help("check the name with `grep NAME /proc/kallsyms`"));
        };
        Ok(crate::lower::cx::Val::Int(cx.imm(addr as i64)))
    }
);

function!(
    /// `percpu_kaddr("name"[, cpu])`: the address of a per-CPU kernel variable.
    PercpuKaddr, "percpu_kaddr", "percpu_kaddr(name[, cpu])",
    "Address of a per-CPU kernel variable (a typed ksym) on this CPU, or on `cpu` (0 when there is no such CPU); needs a kernel whose kallsyms lists data symbols (CONFIG_KALLSYMS_ALL)",
    unsafe = false,
    |call| { percpu_kaddr_rule(call) },
    lower |cx, call| { lower_percpu_kaddr(cx, call) }
);

function!(
    /// `uaddr("name")`: a pointer to a symbol (function or variable) of the probed binary
    /// (uprobes and USDT probes), typed by the symbol's size as bpftrace does.
    Uaddr, "uaddr", "uaddr(name)", "Address of a symbol (function or global variable) of the probed binary, as a pointer to read it: uint8/16/32 * for a symbol of 1, 2 or 4 bytes, else uint64 * (uprobes and USDT; in a PIE or library, moved by its load address)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "uaddr(name)");
        a.arity(1, 1)?;
        let name = a.literal_text(0, "a symbol name string literal")?;
        if !call.ctx.user {
            return Err(Diagnostic::error(
                "sonde::sema::builtin_unavailable",
                call.span,
                format!("`uaddr` is not available in `{}` probes", call.ctx.provider),
            )
            .with_label("no binary to look the symbol up in")
            .with_help("`uaddr` is available in uprobe, uretprobe and usdt probes"));
        }
        // An unknown symbol is reported where the address is computed.
        let size = call
            .ctx
            .binary
            .as_deref()
            .and_then(|path| call.kernel.elf_symbol(path, &name))
            .map_or(8, |s| s.size);
        Ok(Type::Ptr {
            pointee: Box::new(Type::Int { bits: uaddr_bits(size), signed: false }),
            space: AddrSpace::User,
        })
    },
    lower |cx, call| { lower_uaddr(cx, call) }
);

/// The width of the integer `uaddr()` points to for a symbol of `size` bytes: 8, 16 or 32
/// bits for 1, 2 or 4 bytes, else 64 (bpftrace's rule).
fn uaddr_bits(size: u64) -> u8 {
    match size {
        1 | 2 | 4 => (size * 8) as u8,
        _ => 64,
    }
}

/// `uaddr("name")`'s value: the symbol's address in an executable (`ET_EXEC`); in a PIE or
/// a library, where the file is loaded at a run-time bias, the probe's run-time address
/// (`bpf_get_func_ip`) plus the distance from the probe's link-time address to the symbol's.
fn lower_uaddr(
    cx: &mut crate::lower::cx::LowerCx<'_>,
    call: &crate::lower::cx::LowerCall<'_>,
) -> Result<crate::lower::cx::Val, Diagnostic> {
    use crate::program::AttachSpec;
    let name = crate::lower::events::literal_text(&call.args[0], cx.positional);
    let path = cx.attach.parts.first().cloned().unwrap_or_default();
    let Some(sym) = cx.kernel.elf_symbol(&path, &name) else {
        return Err(Diagnostic::error("sonde::codegen::unknown_symbol", call.args[0].span, format!("no symbol `{name}` in {path}"))
            .with_label("not in the probed binary's symbol tables")
            .with_help(format!("list its functions with `sonde -l 'uprobe:{path}:*'`; a variable must be in its symbol table (`nm {path}`)")));
    };
    if !sym.relocatable {
        return Ok(crate::lower::cx::Val::Int(cx.imm(sym.address as i64)));
    }
    let spec = crate::catalog::SondeCatalog
        .provider_backend(cx.attach.ctx.provider)
        .map(|p| p.attach_spec(cx.attach));
    let at = match &spec {
        Some(AttachSpec::Uprobe {
            path,
            symbol,
            offset,
            ..
        }) => cx.kernel.uprobe_address(path, symbol.as_deref(), *offset),
        _ => None,
    };
    let Some(at) = at else {
        return Err(Diagnostic::error("sonde::codegen::unknown_symbol", call.span, format!("cannot place `{name}` of {path} at run time"))
            .with_label("the probe's own address in the file is unknown")
            .with_help(format!("{path} is position independent: `uaddr` finds its symbols from the address the probe runs at")));
    };
    let ctx = cx.ctx();
    let ip = cx.call(Intrinsic::GetFuncIp, vec![Operand::Reg(ctx)]);
    let delta = sym.address.wrapping_sub(at) as i64;
    Ok(crate::lower::cx::Val::Int(cx.alu(
        AluOp::Add,
        ip,
        Operand::Imm(delta),
    )))
}

function!(
    /// `kptr(p)`: marks a pointer as pointing into kernel memory.
    Kptr, "kptr", "kptr(ptr)", "Marks a pointer as a kernel address", unsafe = false,
    |call| { with_space(call, "kptr(ptr)", AddrSpace::Kernel) },
    lower |cx, call| { let v = cx.lower_int(&call.args[0])?; Ok(crate::lower::cx::Val::Int(v)) }
);

function!(
    /// `uptr(p)`: marks a pointer as pointing into user memory.
    Uptr, "uptr", "uptr(ptr)", "Marks a pointer as a user address", unsafe = false,
    |call| { with_space(call, "uptr(ptr)", AddrSpace::User) },
    lower |cx, call| { let v = cx.lower_int(&call.args[0])?; Ok(crate::lower::cx::Val::Int(v)) }
);

function!(
    /// `reg("name")`: a saved register of the probed context.
    Reg, "reg", "reg(name)", "Value of a saved CPU register (\"ip\", \"sp\", \"ax\", ...) in kprobe, uprobe and perf probes",
    unsafe = false,
    |call| {
        let a = Args::new(call, "reg(name)");
        a.arity(1, 1)?;
        let name = a.literal_text(0, "a register name string literal")?;
        if !REGISTERS.contains(&name.as_str()) {
            return Err(a.error(0, "an x86-64 register name").with_help(format!(
                "known registers: {}",
                REGISTERS.join(", ")
            )));
        }
        if !PT_REGS_PROVIDERS.contains(&call.ctx.provider) {
            return Err(Diagnostic::error(
                "sonde::sema::builtin_unavailable",
                call.span,
                format!("`reg` is not available in `{}` probes", call.ctx.provider),
            )
            .with_label("this probe has no saved registers")
            .with_help("`reg` is available in kprobe, uprobe, usdt, profile, interval, software and hardware probes"));
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        let name = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let Some(off) = pt_regs_offset(&name) else { return Err(cx.unsupported(call.span, "this register")) };
        let ctx = cx.ctx();
        Ok(crate::lower::cx::Val::Int(cx.load(ctx, off, crate::ir::Width::W64)))
    }
);

/// Byte offset of register `name` in x86-64 `struct pt_regs` (`pc` is `ip`).
pub(crate) fn pt_regs_offset(name: &str) -> Option<i32> {
    let name = if name == "pc" { "ip" } else { name };
    let index = REGISTERS
        .iter()
        .filter(|r| **r != "pc")
        .position(|r| *r == name)?;
    i32::try_from(index * 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{check, check_in, int, lit, val};
    use sonde_lang::catalog::ProbeContext;

    #[test]
    fn symbols_and_spaces() {
        assert_eq!(
            check(&Ksym, vec![val(Type::U64)]).unwrap(),
            Type::Symbol { kernel: true }
        );
        assert_eq!(
            check(&Usym, vec![val(Type::U64)]).unwrap(),
            Type::Symbol { kernel: false }
        );
        assert_eq!(check(&Ksym, vec![lit("x")]).unwrap_err().code, ARG_TYPE);
        let p = Type::Ptr {
            pointee: Box::new(Type::U8),
            space: AddrSpace::Unknown,
        };
        assert_eq!(
            check(&Uptr, vec![val(p)]).unwrap(),
            Type::Ptr {
                pointee: Box::new(Type::U8),
                space: AddrSpace::User
            }
        );
        assert_eq!(check(&Kptr, vec![val(Type::U64)]).unwrap(), Type::U64);
    }

    #[test]
    fn addresses_and_registers() {
        assert_eq!(check(&Kaddr, vec![lit("jiffies")]).unwrap(), Type::U64);
        assert_eq!(
            check(&Kaddr, vec![val(Type::U64)]).unwrap_err().code,
            ARG_TYPE
        );
        let e = check(&Uaddr, vec![lit("main")]).unwrap_err();
        assert_eq!(e.code, "sonde::sema::builtin_unavailable");
        let user = ProbeContext {
            user: true,
            arg_regs: 6,
            ..ProbeContext::bare("uprobe")
        };
        // A symbol the kernel facts do not know points to a uint64, as bpftrace's default.
        assert_eq!(
            check_in(&Uaddr, &user, vec![lit("main")]).unwrap(),
            Type::Ptr {
                pointee: Box::new(Type::U64),
                space: AddrSpace::User
            }
        );
        assert_eq!(
            [0, 1, 2, 3, 4, 8, 16].map(uaddr_bits),
            [64, 8, 16, 64, 32, 64, 64]
        );
        assert_eq!(check(&Reg, vec![lit("ip")]).unwrap(), Type::U64);
        assert_eq!(check(&Reg, vec![lit("rip")]).unwrap_err().code, ARG_TYPE);
        let tp = ProbeContext::bare("tracepoint");
        assert_eq!(
            check_in(&Reg, &tp, vec![lit("sp")]).unwrap_err().code,
            "sonde::sema::builtin_unavailable"
        );
    }

    #[test]
    fn percpu_variables() {
        use crate::catalog::functions::testutil::{arg_span, check_on};
        let k = sonde_lang::testing::FixtureKernel;
        let tp = ProbeContext::bare("tracepoint");
        let ptr = Type::Ptr {
            pointee: Box::new(Type::U64),
            space: AddrSpace::Kernel,
        };
        let on = |args| check_on(&PercpuKaddr, &tp, &k, args);
        assert_eq!(on(vec![lit("runqueues")]).unwrap(), ptr);
        assert_eq!(on(vec![lit("runqueues"), val(Type::U32)]).unwrap(), ptr);
        // bpftrace's words, on the name.
        let e = on(vec![lit("no_such_var")]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str(), e.span),
            (
                UNKNOWN_VARIABLE,
                "Could not resolve variable \"no_such_var\" from BTF",
                arg_span(0)
            )
        );
        // A function is no variable.
        let e = on(vec![lit("bpf_task_from_pid")]).unwrap_err();
        assert_eq!(e.code, UNKNOWN_VARIABLE);
        // In BTF, but not in kallsyms: the verifier could not resolve it.
        let e = on(vec![lit("process_counts")]).unwrap_err();
        assert_eq!((e.code, e.span), (UNRESOLVABLE_VARIABLE, arg_span(0)));
        assert_eq!(on(vec![val(Type::U64)]).unwrap_err().code, ARG_TYPE);
        let e = on(vec![lit("runqueues"), lit("0")]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        assert_eq!(
            on(vec![lit("runqueues"), int(0), int(1)]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }
}
