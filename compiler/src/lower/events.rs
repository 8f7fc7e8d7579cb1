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
    sonde_lang::catalog::literal_bytes(e, positional)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The types of `args` as the payload of an event: integers keep their checked width.
pub fn payload_types(cx: &LowerCx<'_>, args: &[Expr]) -> Vec<Type> {
    args.iter().map(|a| cx.type_of(a)).collect()
}

/// Sends event `spec` whose payload is `args` laid out as a tuple of `types`.
///
/// The event's zeroed buffer comes first, then each argument is lowered and written in
/// turn; a string read (`str(ptr)`, `comm`) is read straight into its field
/// ([`LowerCx::place`]) instead of into a buffer of its own that is then copied. The
/// buffer has room for such a read's one byte beyond its field (a cut string's mark), which
/// the next field's write covers and the last field's lands after the payload.
pub fn send(
    cx: &mut LowerCx<'_>,
    spec: EventSpec,
    args: &[Expr],
    types: &[Type],
) -> Result<Val, Diagnostic> {
    let id = cx.event_id(spec);
    let (offsets, size) = tuple_layout(types);
    let total = 8 + size;
    // Per argument: the bytes its in-place read may write beyond its field, if it has one.
    let in_place: Vec<Option<u32>> = args
        .iter()
        .zip(types)
        .zip(&offsets)
        .map(|((a, to), off)| {
            in_place_read(a, 8 + off)
                .filter(|_| cx.type_of(a) == *to)
                .map(|(beyond, _)| beyond)
        })
        .collect();
    let room = types
        .iter()
        .zip(&offsets)
        .zip(&in_place)
        .filter_map(|((to, off), beyond)| beyond.map(|b| 8 + off + to.size() + b))
        .fold(total, u32::max);
    let buf = cx.alloc_event_zeroed(room);
    cx.store(buf, 0, Operand::Imm(id as i64), Width::W64);
    for (((a, to), off), here) in args.iter().zip(types).zip(offsets).zip(in_place) {
        let at = 8 + off as i32;
        if let Some(bytes) = constant_field(cx, a, to) {
            super::strings::constant_into(cx, &bytes, buf, at);
            continue;
        }
        let v = if here.is_some() {
            let ptr = cx.offset_ptr(buf, at);
            match cx.lower_in_place(a, ptr, room - at as u32)? {
                Some(v) => v,
                None => continue,
            }
        } else {
            cx.lower_expr(a)?
        };
        let from = cx.type_of(a);
        let v = cx.materialize(v, &from);
        write_converted(cx, v, &from, to, buf, at);
    }
    cx.output(buf, total);
    Ok(Val::None)
}

/// Arguments whose lowering can build their string straight into a field at offset `at` (a
/// call of `str`, the `comm` builtin; `ntop` when the field is 8-aligned; strings known when
/// compiling, `probe` among them, are [`constant_field`]s):
/// the bytes it may write beyond the field (`str`'s cut mark), and whether it writes the
/// whole field (`comm`; the others need it zeroed first).
pub(crate) fn in_place_read(a: &Expr, at: u32) -> Option<(u32, bool)> {
    let builtin = match &a.kind {
        ExprKind::Call { name, args } if name.name == "str" && !args.is_empty() => {
            return Some((1, false));
        }
        ExprKind::Call { name, .. } if name.name == "ntop" => {
            return at.is_multiple_of(8).then_some((0, false));
        }
        ExprKind::Call { name, args } if args.is_empty() => name.name.as_str(),
        ExprKind::Ident(n) => n.as_str(),
        _ => return None,
    };
    (builtin == "comm").then_some((0, true))
}

/// The characters of `a` when it is a string known when compiling (a literal, a positional)
/// of the field's own type `to`: written into the field by immediates, with no buffer of its
/// own.
pub(crate) fn constant_field(cx: &LowerCx<'_>, a: &Expr, to: &Type) -> Option<Vec<u8>> {
    if !matches!(to, Type::Str { .. }) || cx.type_of(a) != *to {
        return None;
    }
    super::strings::constant_string(cx, a)
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
    let map = cx.maps.counters_map();
    let p = cx.vreg();
    cx.emit(Inst::MapValue { dst: p, map });
    cx.emit(Inst::Store {
        base: p,
        offset: crate::program::EXITED_OFFSET,
        src: crate::ir::Operand::Imm(1),
        width: crate::ir::Width::W64,
    });
    send_word(cx, EventSpec::Exit, code);
    let l = cx.exit_label;
    cx.emit(Inst::Jump(l));
}

/// Returns at once when `exit()` has run (the exit word is set): once a script has asked to
/// stop, no probe but END runs again while sonde is stopping.
pub fn return_after_exit(cx: &mut LowerCx<'_>) {
    let map = cx.maps.counters_map();
    let p = cx.vreg();
    cx.emit(Inst::MapValue { dst: p, map });
    let exited = cx.load(p, crate::program::EXITED_OFFSET, crate::ir::Width::W64);
    let l = cx.exit_label;
    cx.branch(crate::ir::Cond::Ne, exited, crate::ir::Operand::Imm(0), l);
}
