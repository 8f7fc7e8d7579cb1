//! Human-readable IR dumps (`--dump ir`), with the source line beside each instruction.

use super::{AluOp, Cond, Function, Inst, Operand, Width};
use std::fmt::Write;

fn operand(o: &Operand) -> String {
    match o {
        Operand::Reg(r) => format!("v{}", r.0),
        Operand::Imm(i) => format!("{i}"),
    }
}

fn width(w: Width) -> &'static str {
    match w {
        Width::W8 => "u8",
        Width::W16 => "u16",
        Width::W32 => "u32",
        Width::W64 => "u64",
    }
}

fn alu(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+",
        AluOp::Sub => "-",
        AluOp::Mul => "*",
        AluOp::UDiv => "/u",
        AluOp::SDiv => "/s",
        AluOp::UMod => "%u",
        AluOp::SMod => "%s",
        AluOp::And => "&",
        AluOp::Or => "|",
        AluOp::Xor => "^",
        AluOp::Shl => "<<",
        AluOp::LShr => ">>",
        AluOp::AShr => "s>>",
    }
}

fn cond(c: Cond) -> &'static str {
    match c {
        Cond::Eq => "==",
        Cond::Ne => "!=",
        Cond::UGt => ">u",
        Cond::UGe => ">=u",
        Cond::ULt => "<u",
        Cond::ULe => "<=u",
        Cond::SGt => ">s",
        Cond::SGe => ">=s",
        Cond::SLt => "<s",
        Cond::SLe => "<=s",
        Cond::Set => "&",
    }
}

/// Formats one instruction.
pub fn print_inst(inst: &Inst) -> String {
    match inst {
        Inst::Mov { dst, src } => format!("v{} = {}", dst.0, operand(src)),
        Inst::Alu { op, dst, lhs, rhs } => {
            format!("v{} = v{} {} {}", dst.0, lhs.0, alu(*op), operand(rhs))
        }
        Inst::Neg { dst, src } => format!("v{} = -v{}", dst.0, src.0),
        Inst::Load {
            dst,
            base,
            offset,
            width: w,
        } => {
            format!("v{} = *({} *)(v{} {:+})", dst.0, width(*w), base.0, offset)
        }
        Inst::Store {
            base,
            offset,
            src,
            width: w,
        } => {
            format!(
                "*({} *)(v{} {:+}) = {}",
                width(*w),
                base.0,
                offset,
                operand(src)
            )
        }
        Inst::AtomicAdd { base, offset, src } => {
            format!("lock *(u64 *)(v{} {:+}) += v{}", base.0, offset, src.0)
        }
        Inst::SlotAddr { dst, slot } => format!("v{} = &slot{}", dst.0, slot.0),
        Inst::MapHandle { dst, map } => format!("v{} = map#{}", dst.0, map.0),
        Inst::FuncAddr { dst, func } => format!("v{} = &callback{}", dst.0, func),
        Inst::Call { dst, func, args } => {
            let args: Vec<String> = args.iter().map(operand).collect();
            let call = format!("{func:?}({})", args.join(", "));
            match dst {
                Some(d) => format!("v{} = {call}", d.0),
                None => call,
            }
        }
        Inst::Label(l) => format!("L{}:", l.0),
        Inst::Jump(l) => format!("goto L{}", l.0),
        Inst::Branch {
            cond: c,
            lhs,
            rhs,
            target,
        } => {
            format!(
                "if v{} {} {} goto L{}",
                lhs.0,
                cond(*c),
                operand(rhs),
                target.0
            )
        }
        Inst::Return { value } => format!("return {}", operand(value)),
    }
}

/// Formats a function; when `src` is given, each instruction whose source line differs from
/// the previous one is preceded by that line as a `;` comment.
pub fn print_function(f: &Function, src: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}:", f.name);
    let mut last_line = None;
    for (inst, span) in &f.insts {
        if let Some(src) = src {
            let (line, _) = sonde_lang::span::line_col(src, span.start);
            if last_line != Some(line) && !span.is_empty() {
                last_line = Some(line);
                let text = src.lines().nth(line - 1).unwrap_or("").trim();
                let _ = writeln!(out, "  ; {line}: {text}");
            }
        }
        let indent = if matches!(inst, Inst::Label(_)) {
            ""
        } else {
            "    "
        };
        let _ = writeln!(out, "{indent}{}", print_inst(inst));
    }
    out
}
