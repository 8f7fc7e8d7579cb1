//! Asynchronous actions: events sent to user space through the ring buffer.

use super::cx::{LowerCx, Val};
use super::maps::write_converted;
use crate::ir::{Inst, Operand, Width};
use crate::program::EventSpec;
use sonde_lang::ast::{Expr, ExprKind};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{Type, tuple_layout};

/// The string bytes of a literal argument (format strings, separators).
pub fn literal_text(e: &Expr, positional: &[String]) -> String {
    match &e.kind {
        ExprKind::Str(b) => String::from_utf8_lossy(b).into_owned(),
        ExprKind::Positional(n) => positional.get(*n as usize - 1).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// The types of `args` as the payload of an event: integers keep their checked width.
pub fn payload_types(cx: &LowerCx<'_>, args: &[Expr]) -> Vec<Type> {
    args.iter().map(|a| cx.type_of(a)).collect()
}

/// Sends event `spec` whose payload is `args` laid out as a tuple of `types`.
pub fn send(
    cx: &mut LowerCx<'_>,
    spec: EventSpec,
    args: &[Expr],
    types: &[Type],
) -> Result<Val, Diagnostic> {
    let id = cx.event_id(spec);
    let (offsets, size) = tuple_layout(types);
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        let v = cx.lower_expr(a)?;
        let ty = cx.type_of(a);
        vals.push((cx.materialize(v, &ty), ty));
    }
    let total = 8 + size;
    let buf = cx.alloc_event_zeroed(total);
    cx.store(buf, 0, Operand::Imm(id as i64), Width::W64);
    for (((v, from), to), off) in vals.into_iter().zip(types).zip(offsets) {
        write_converted(cx, v, &from, to, buf, 8 + off as i32);
    }
    cx.output(buf, total);
    Ok(Val::None)
}

/// Sends an event with an 8-byte payload already in a register.
pub fn send_word(cx: &mut LowerCx<'_>, spec: EventSpec, word: Option<crate::ir::VReg>) {
    let id = cx.event_id(spec);
    let buf = cx.alloc(16);
    cx.store(buf, 0, Operand::Imm(id as i64), Width::W64);
    match word {
        Some(w) => cx.store(buf, 8, Operand::Reg(w), Width::W64),
        None => cx.store(buf, 8, Operand::Imm(0), Width::W64),
    }
    cx.output(buf, 16);
}

/// `exit()`: sends the exit event and leaves the probe.
pub fn exit(cx: &mut LowerCx<'_>, code: Option<crate::ir::VReg>) {
    send_word(cx, EventSpec::Exit, code);
    let l = cx.exit_label;
    cx.emit(Inst::Jump(l));
}
