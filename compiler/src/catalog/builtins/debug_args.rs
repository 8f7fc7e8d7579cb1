//! `args` of `uprobe:BIN:FUNC`: the function's parameters from the binary's DWARF
//! ([`KernelInfo::function_params`]), as bpftrace 0.26 reads them.
//!
//! The record is laid over the probe's `struct pt_regs`: each parameter that arrives alone in
//! an integer argument register is a field at that register's offset (`args.n` is a direct
//! context load, as `arg0` is), typed from DWARF; `print(args)` copies the registers and
//! prints the fields in declaration order. Parameters elsewhere (floating point, on the
//! stack, split over two registers) are not fields; `sonde -lv` still lists them.

use super::probe::{PT_REGS_ARGS, PT_REGS_SIZE};
use sonde_lang::catalog::DebugFunction;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{DebugInfoError, FunctionParams, KernelInfo, ParamLocation};
use sonde_lang::span::Span;
use sonde_lang::types::{Field, Record, Type};
use std::sync::Arc;

/// Code of `args` in a uprobe whose binary has no DWARF for the function.
pub const NO_DEBUG_INFO: &str = "sonde::sema::no_debug_info";
/// Code of `args` in a uprobe whose binary's DWARF cannot be read.
pub const BAD_DEBUG_INFO: &str = "sonde::sema::bad_debug_info";

/// The type of `args` in a uprobe on function `f`, or the diagnostic (at `span`) saying
/// what debug info is missing and how to get it. A function a wildcard matched that the
/// debug info does not describe has empty `args`.
pub fn check(kernel: &dyn KernelInfo, f: &DebugFunction, span: Span) -> Result<Type, Diagnostic> {
    let (path, func) = (f.path.as_str(), f.func.as_str());
    let raw = "arg0..arg5 read the raw argument registers without debug info";
    match kernel.function_params(path, func) {
        Ok(params) => Ok(Type::Record(Arc::new(record(path, func, &params)))),
        Err(DebugInfoError::NoFunction(file)) if !f.named => {
            let empty = FunctionParams {
                debug_file: file,
                params: Vec::new(),
            };
            Ok(Type::Record(Arc::new(record(path, func, &empty))))
        }
        Err(DebugInfoError::Missing(searched)) => Err(Diagnostic::error(
            NO_DEBUG_INFO,
            span,
            format!("`args` needs the debug info (DWARF) of {path}, which has none"),
        )
        .with_label(format!("the parameters of `{func}` are unknown"))
        .with_help(format!(
            "compile the program with -g, or install its debug symbols (the -dbg, -dbgsym or \
             -debuginfo package) ({searched}); {raw}"
        ))),
        Err(DebugInfoError::NoFunction(file)) => Err(Diagnostic::error(
            NO_DEBUG_INFO,
            span,
            format!("the debug info of {path} does not describe `{func}`"),
        )
        .with_label(format!("the parameters of `{func}` are unknown"))
        .with_help(format!(
            "{file} has DWARF, but not for `{func}`: compile the file that defines it with -g; {raw}"
        ))),
        Err(DebugInfoError::Invalid(why)) => Err(Diagnostic::error(
            BAD_DEBUG_INFO,
            span,
            format!("cannot read the debug info of {path}"),
        )
        .with_label(why)
        .with_help(raw)),
    }
}

/// The `args` record of `func`: one field per parameter in an argument register, at that
/// register's offset in `struct pt_regs`.
pub fn record(path: &str, func: &str, params: &FunctionParams) -> Record {
    let fields = params
        .params
        .iter()
        .filter(|p| !p.name.is_empty())
        .filter_map(|p| match p.location {
            ParamLocation::Register(n) => Some(Field {
                name: p.name.clone(),
                offset: u32::try_from(*PT_REGS_ARGS.get(usize::from(n))?).ok()?,
                ty: p.ty.clone(),
                bitfield: None,
                data_loc: false,
                nul_room: false,
            }),
            ParamLocation::Elsewhere(_) => None,
        })
        // A value wider than its register (a corrupt type) would read past it.
        .filter(|f| f.ty.size() <= 8)
        .collect();
    Record {
        name: format!("uprobe:{path}:{func}"),
        size: PT_REGS_SIZE,
        fields,
        is_union: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::kernel::FunctionParam;
    use sonde_lang::types::AddrSpace;

    fn param(name: &str, ty: Type, location: ParamLocation) -> FunctionParam {
        FunctionParam {
            name: name.into(),
            c_type: String::new(),
            ty,
            location,
        }
    }

    #[test]
    fn fields_sit_at_their_registers() {
        let name = Type::Ptr {
            pointee: Box::new(Type::Int {
                bits: 8,
                signed: true,
            }),
            space: AddrSpace::User,
        };
        let params = FunctionParams {
            debug_file: "/bin/x".into(),
            params: vec![
                param("d", Type::U64, ParamLocation::Elsewhere("SSE".into())),
                param("n", Type::I32, ParamLocation::Register(0)),
                param("name", name.clone(), ParamLocation::Register(1)),
                param("", Type::I32, ParamLocation::Register(2)),
                param("last", Type::U8, ParamLocation::Register(5)),
            ],
        };
        let r = record("/bin/x", "f", &params);
        assert_eq!(r.name, "uprobe:/bin/x:f");
        assert_eq!(r.size, 168);
        let got: Vec<(&str, u32, &Type)> = r
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.offset, &f.ty))
            .collect();
        assert_eq!(
            got,
            [
                ("n", 112, &Type::I32),
                ("name", 104, &name),
                ("last", 64, &Type::U8)
            ]
        );
    }

    struct NoDwarf;
    impl KernelInfo for NoDwarf {
        fn elf_functions(&self, _: &str) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
        fn function_params(
            &self,
            path: &str,
            func: &str,
        ) -> Result<Arc<FunctionParams>, DebugInfoError> {
            Err(match func {
                "gone" => DebugInfoError::NoFunction(path.into()),
                "bad" => DebugInfoError::Invalid("corrupt DWARF: x".into()),
                _ => DebugInfoError::Missing("looked in /x".into()),
            })
        }
    }

    fn named(func: &str, named: bool) -> DebugFunction {
        DebugFunction {
            path: "/bin/x".into(),
            func: func.into(),
            named,
        }
    }

    #[test]
    fn missing_debug_info_says_how_to_get_it() {
        let span = Span::new(3, 7);
        let e = check(&NoDwarf, &named("f", true), span).unwrap_err();
        assert_eq!((e.code, e.span), (NO_DEBUG_INFO, span));
        assert!(e.message.contains("/bin/x"), "{}", e.message);
        let help = e.help.unwrap();
        assert!(help.contains("-g") && help.contains("-dbg"), "{help}");
        assert!(help.contains("looked in /x"), "{help}");
        let e = check(&NoDwarf, &named("gone", true), span).unwrap_err();
        assert_eq!(e.code, NO_DEBUG_INFO);
        assert!(e.message.contains("`gone`"), "{}", e.message);
        let e = check(&NoDwarf, &named("bad", true), span).unwrap_err();
        assert_eq!(
            (e.code, e.label.as_str()),
            (BAD_DEBUG_INFO, "corrupt DWARF: x")
        );
        // A function a wildcard matched that the debug info does not describe: empty args.
        let Ok(Type::Record(r)) = check(&NoDwarf, &named("gone", false), span) else {
            panic!()
        };
        assert!(r.fields.is_empty());
        // But a binary without DWARF is an error even then.
        assert!(check(&NoDwarf, &named("f", false), span).is_err());
    }
}
