//! USDT arguments: parsing the note's argument specification and reading one argument.
//!
//! The specification is a space-separated list of `[-]SIZE@OPERAND` (the assembler's view of
//! each argument: `-4@%edi 8@%rsi 8@-16(%rbp) 4@$5`). A leading `-` means signed; SIZE is
//! 1, 2, 4 or 8 bytes. OPERAND is a register (`%edi`: its value truncated to SIZE), an
//! immediate (`$5`) or memory at a register plus a displacement (`-16(%rbp)`, read from
//! user memory). Registers are read from the probe's x86-64 `struct pt_regs`.

use crate::ir::{AluOp, Operand, Width};
use crate::lower::cx::{LowerCx, PlaceSpace, Val};
use sonde_lang::types::Type;

/// Where an argument's value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsdtOperand {
    /// A register: its offset in `struct pt_regs`.
    Reg(i32),
    /// A constant.
    Imm(i64),
    /// User memory at a register (offset in `struct pt_regs`) plus a displacement.
    Mem {
        /// The base register's offset in `struct pt_regs`.
        reg: i32,
        /// The displacement added to the register.
        disp: i64,
    },
}

/// One parsed argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsdtArg {
    /// Size in bytes (1, 2, 4 or 8).
    pub size: u8,
    /// Whether the value is signed (sign-extended to 64 bits).
    pub signed: bool,
    /// Where the value lives.
    pub operand: UsdtOperand,
}

/// x86-64 register names (all widths) and their offsets in `struct pt_regs`.
const REGISTERS: &[(&[&str], i32)] = &[
    (&["r15", "r15d", "r15w", "r15b"], 0),
    (&["r14", "r14d", "r14w", "r14b"], 8),
    (&["r13", "r13d", "r13w", "r13b"], 16),
    (&["r12", "r12d", "r12w", "r12b"], 24),
    (&["rbp", "ebp", "bp", "bpl"], 32),
    (&["rbx", "ebx", "bx", "bl"], 40),
    (&["r11", "r11d", "r11w", "r11b"], 48),
    (&["r10", "r10d", "r10w", "r10b"], 56),
    (&["r9", "r9d", "r9w", "r9b"], 64),
    (&["r8", "r8d", "r8w", "r8b"], 72),
    (&["rax", "eax", "ax", "al"], 80),
    (&["rcx", "ecx", "cx", "cl"], 88),
    (&["rdx", "edx", "dx", "dl"], 96),
    (&["rsi", "esi", "si", "sil"], 104),
    (&["rdi", "edi", "di", "dil"], 112),
    (&["rip", "eip", "ip"], 128),
    (&["rsp", "esp", "sp", "spl"], 152),
];

/// The `struct pt_regs` offset of register `name` (without `%`).
pub fn register_offset(name: &str) -> Option<i32> {
    REGISTERS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, off)| *off)
}

/// Parses a decimal or `0x` hexadecimal integer with an optional sign.
fn parse_int(text: &str) -> Option<i64> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok()? as i64,
        None => digits.parse::<u64>().ok()? as i64,
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A `%reg` operand's register offset.
fn parse_register(text: &str) -> Result<i32, String> {
    let name = text
        .strip_prefix('%')
        .ok_or_else(|| format!("`{text}` is not a register"))?;
    register_offset(name).ok_or_else(|| format!("unknown register `%{name}`"))
}

/// Parses one `[-]SIZE@OPERAND` argument.
pub fn parse_arg(spec: &str) -> Result<UsdtArg, String> {
    let (size_text, operand) = spec.split_once('@').unwrap_or(("8", spec));
    let (signed, size_text) = match size_text.strip_prefix('-') {
        Some(s) => (true, s),
        None => (false, size_text),
    };
    let size = match size_text.parse::<u8>() {
        Ok(s @ (1 | 2 | 4 | 8)) => s,
        _ => return Err(format!("bad argument size `{size_text}` in `{spec}`")),
    };
    let operand = if let Some(imm) = operand.strip_prefix('$') {
        UsdtOperand::Imm(parse_int(imm).ok_or_else(|| format!("bad constant `{operand}`"))?)
    } else if operand.starts_with('%') {
        UsdtOperand::Reg(parse_register(operand)?)
    } else if let Some((disp, rest)) = operand.split_once('(') {
        let reg = rest
            .strip_suffix(')')
            .filter(|r| !r.contains(','))
            .ok_or_else(|| format!("unsupported memory operand `{operand}`"))?;
        let disp = if disp.is_empty() {
            0
        } else {
            parse_int(disp).ok_or_else(|| {
                format!("unsupported memory operand `{operand}` (symbolic displacement)")
            })?
        };
        UsdtOperand::Mem {
            reg: parse_register(reg)?,
            disp,
        }
    } else {
        return Err(format!("unsupported operand `{operand}`"));
    };
    Ok(UsdtArg {
        size,
        signed,
        operand,
    })
}

/// The arguments of a specification string, one element per space-separated argument
/// (each parsed independently, so one unsupported operand spoils only its own argument).
pub fn parse_args(spec: &str) -> Vec<Result<UsdtArg, String>> {
    spec.split_whitespace().map(parse_arg).collect()
}

/// The number of arguments of a specification string.
pub fn arg_count(spec: &str) -> usize {
    spec.split_whitespace().count()
}

/// Emits IR reading `arg` as a 64-bit value (sign- or zero-extended from its size).
pub fn lower_arg(cx: &mut LowerCx<'_>, arg: UsdtArg) -> Val {
    let bits = arg.size * 8;
    match arg.operand {
        UsdtOperand::Imm(v) => Val::Int(cx.imm(extend_const(v, bits, arg.signed))),
        UsdtOperand::Reg(off) => {
            let ctx = cx.ctx();
            let raw = cx.load(ctx, off, Width::W64);
            Val::Int(extend(cx, raw, bits, arg.signed))
        }
        UsdtOperand::Mem { reg, disp } => {
            let ctx = cx.ctx();
            let base = cx.load(ctx, reg, Width::W64);
            let Ok(disp) = i32::try_from(disp) else {
                // A displacement beyond ±2 GiB: add it as a 64-bit constant.
                let d = cx.imm(disp);
                let base = cx.alu(AluOp::Add, base, Operand::Reg(d));
                return read_mem(cx, base, 0, bits, arg.signed);
            };
            read_mem(cx, base, disp, bits, arg.signed)
        }
    }
}

/// A constant argument cut to its low `bits` and sign- or zero-extended, as a register
/// argument is (`1@$-1` is 255, `-1@$255` is -1).
pub fn extend_const(v: i64, bits: u8, signed: bool) -> i64 {
    if bits >= 64 {
        return v;
    }
    let shift = 64 - u32::from(bits);
    if signed {
        (v << shift) >> shift
    } else {
        ((v as u64) << shift >> shift) as i64
    }
}

/// Reads a `bits`-wide integer from user memory at `base + disp`.
fn read_mem(cx: &mut LowerCx<'_>, base: crate::ir::VReg, disp: i32, bits: u8, signed: bool) -> Val {
    let place = Val::Place {
        base,
        offset: disp,
        space: PlaceSpace::User,
    };
    Val::Int(cx.read_place_int(place, &Type::Int { bits, signed }))
}

/// Truncates the register value `r` to its low `bits`, sign- or zero-extending.
fn extend(cx: &mut LowerCx<'_>, r: crate::ir::VReg, bits: u8, signed: bool) -> crate::ir::VReg {
    if bits >= 64 {
        return r;
    }
    if signed {
        return cx.sign_extend(r, bits);
    }
    let shift = i64::from(64 - bits);
    let t = cx.alu(AluOp::Shl, r, Operand::Imm(shift));
    cx.alu(AluOp::LShr, t, Operand::Imm(shift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_take_their_size() {
        assert_eq!(extend_const(-1, 8, false), 255);
        assert_eq!(extend_const(255, 8, true), -1);
        assert_eq!(extend_const(-16, 8, true), -16);
        assert_eq!(extend_const(61936, 16, false), 61936);
        assert_eq!(extend_const(61936, 16, true), -3600);
        assert_eq!(extend_const(-202182160, 32, false), 4092785136);
        assert_eq!(extend_const(i64::MIN + 5, 64, false), i64::MIN + 5);
    }

    fn arg(size: u8, signed: bool, operand: UsdtOperand) -> UsdtArg {
        UsdtArg {
            size,
            signed,
            operand,
        }
    }

    #[test]
    fn parses_every_operand_kind() {
        let args: Vec<UsdtArg> =
            parse_args("-4@%edi 8@%rsi 8@-16(%rbp) 4@$5 -1@(%rax) 2@0x10(%r8) -8@$-3")
                .into_iter()
                .map(Result::unwrap)
                .collect();
        assert_eq!(
            args,
            vec![
                arg(4, true, UsdtOperand::Reg(112)),
                arg(8, false, UsdtOperand::Reg(104)),
                arg(8, false, UsdtOperand::Mem { reg: 32, disp: -16 }),
                arg(4, false, UsdtOperand::Imm(5)),
                arg(1, true, UsdtOperand::Mem { reg: 80, disp: 0 }),
                arg(2, false, UsdtOperand::Mem { reg: 72, disp: 16 }),
                arg(8, true, UsdtOperand::Imm(-3)),
            ]
        );
        assert_eq!(arg_count("-4@%edi 8@%rsi"), 2);
        assert_eq!(arg_count(""), 0);
    }

    #[test]
    fn register_names_of_all_widths() {
        for (name, off) in [
            ("rax", 80),
            ("eax", 80),
            ("ax", 80),
            ("al", 80),
            ("dil", 112),
            ("r8d", 72),
            ("r15b", 0),
            ("ebp", 32),
            ("rsp", 152),
            ("rip", 128),
        ] {
            assert_eq!(register_offset(name), Some(off), "{name}");
        }
        assert_eq!(register_offset("xmm0"), None);
    }

    #[test]
    fn unsupported_specs_are_errors() {
        assert_eq!(
            parse_arg("3@%eax").unwrap_err(),
            "bad argument size `3` in `3@%eax`"
        );
        assert_eq!(
            parse_arg("4@%xmm0").unwrap_err(),
            "unknown register `%xmm0`"
        );
        assert_eq!(
            parse_arg("8@total(%rip)").unwrap_err(),
            "unsupported memory operand `total(%rip)` (symbolic displacement)"
        );
        assert_eq!(
            parse_arg("4@(%rax,%rbx,4)").unwrap_err(),
            "unsupported memory operand `(%rax,%rbx,4)`"
        );
        assert_eq!(parse_arg("4@$x").unwrap_err(), "bad constant `$x`");
        // Old notes without a size: 8 bytes, unsigned.
        assert_eq!(
            parse_arg("%rdi").unwrap(),
            arg(8, false, UsdtOperand::Reg(112))
        );
    }
}
