//! Human-readable IR dumps (`--dump ir`), with the source line beside each instruction.

use super::{AluOp, Cond, Function, Inst, Operand, Width};
use std::fmt::Write;

fn operand(o: &Operand) -> String {
    match o {
        Operand::Reg(r) => format!("v{}", r.0),
        Operand::Imm(i) => format!("{i}"),
    }
}

/// A call of `callee` with `args`, and where its result goes.
fn call(dst: Option<super::VReg>, callee: &str, args: &[Operand]) -> String {
    let args: Vec<String> = args.iter().map(operand).collect();
    let call = format!("{callee}({})", args.join(", "));
    match dst {
        Some(d) => format!("v{} = {call}", d.0),
        None => call,
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
        Inst::MapValue { dst, map } => format!("v{} = &value(map#{})", dst.0, map.0),
        Inst::FuncAddr { dst, func } => format!("v{} = &callback{}", dst.0, func),
        Inst::Call { dst, func, args } => call(*dst, &format!("{func:?}"), args),
        Inst::CallFunc { dst, func, args } => call(*dst, &format!("callback{func}"), args),
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

/// The lines of a script's source, indexed once so that the line of any byte offset is a
/// binary search (dumps look one up per instruction; scanning the source each time made
/// `--dump` quadratic in the script's length).
#[derive(Clone, Debug)]
pub struct SourceLines<'a> {
    src: &'a str,
    /// Byte offset of the start of each line.
    starts: Vec<usize>,
}

impl<'a> SourceLines<'a> {
    /// Indexes the lines of `src`.
    pub fn new(src: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(
                src.bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        SourceLines { src, starts }
    }

    /// The 1-based line holding byte offset `pos` (as `sonde_lang::span::line_col`).
    pub fn line(&self, pos: usize) -> usize {
        let pos = pos.min(self.src.len());
        self.starts.partition_point(|&s| s <= pos)
    }

    /// The text of 1-based line `line`, without its line end; empty past the end.
    pub fn text(&self, line: usize) -> &'a str {
        let Some(&start) = line.checked_sub(1).and_then(|i| self.starts.get(i)) else {
            return "";
        };
        let end = self.starts.get(line).map_or(self.src.len(), |&e| e - 1);
        let text = &self.src[start..end];
        text.strip_suffix('\r').unwrap_or(text)
    }
}

/// Formats a function; when `src` is given, each instruction whose source line differs from
/// the previous one is preceded by that line as a `;` comment.
pub fn print_function(f: &Function, src: Option<&SourceLines>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}:", f.name);
    let mut last_line = None;
    for (inst, span) in &f.insts {
        if let Some(src) = src {
            let line = src.line(span.start);
            if last_line != Some(line) && !span.is_empty() {
                last_line = Some(line);
                let text = src.text(line).trim();
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

#[cfg(test)]
mod tests {
    use super::SourceLines;

    #[test]
    fn source_lines_agree_with_line_col() {
        let src = "a\nbc\r\n\nlast";
        let lines = SourceLines::new(src);
        for pos in 0..=src.len() + 2 {
            assert_eq!(
                lines.line(pos),
                sonde_lang::span::line_col(src, pos).0,
                "at {pos}"
            );
        }
        assert_eq!(lines.text(1), "a");
        assert_eq!(lines.text(2), "bc");
        assert_eq!(lines.text(3), "");
        assert_eq!(lines.text(4), "last");
        assert_eq!(lines.text(5), "");
        for (i, l) in src.lines().enumerate() {
            assert_eq!(lines.text(i + 1), l);
        }
    }
}
