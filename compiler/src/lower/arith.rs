//! Arithmetic: the ALU operation of an operator, pointer steps, division guarded against 0
//! (bpftrace 0.27's result 1 and warning) and truncation to a type's width.

use super::cx::LowerCx;
use crate::ir::{AluOp, Cond, Inst, Operand, VReg};
use sonde_lang::ast::{BinOp, Expr};
use sonde_lang::span::Span;
use sonde_lang::types::Type;

impl LowerCx<'_> {
    /// The amount `b` (of type `rt`) adds to or subtracts from a value of type `lt`: scaled by
    /// the pointee's size when `lt` is a typed pointer (`ptr + 1` is the next element).
    pub(crate) fn pointer_step(&mut self, lt: &Type, op: BinOp, rt: &Type, b: VReg) -> VReg {
        match (lt, op) {
            (Type::Ptr { pointee, .. }, BinOp::Add | BinOp::Sub)
                if rt.is_integer() && pointee.size() > 1 =>
            {
                self.alu(AluOp::Mul, b, Operand::Imm(pointee.size().into()))
            }
            _ => b,
        }
    }

    /// `a aop b`, where `b` holds the value of `rhs`. A shift by a constant amount outside
    /// `0..64` (a negative one is a huge unsigned one) shifts every bit out: `<<` and `>>`
    /// give 0 and an arithmetic `>>` the sign (the checker warns). A run-time amount is
    /// taken modulo 64 by both engines, as the BPF instruction does. A division or modulo
    /// by 0 gives 1 and warns at `span` (bpftrace 0.27's words: [`DIVIDE_BY_ZERO`]).
    pub(crate) fn arith(&mut self, aop: AluOp, a: VReg, b: VReg, rhs: &Expr, span: Span) -> VReg {
        if matches!(aop, AluOp::UDiv | AluOp::SDiv | AluOp::UMod | AluOp::SMod)
            && sonde_lang::catalog::const_int(rhs, self.positional).is_none_or(|n| n == 0)
        {
            return self.checked_div(aop, a, b, span);
        }
        if matches!(aop, AluOp::Shl | AluOp::LShr | AluOp::AShr)
            && let Some(n) = sonde_lang::catalog::const_int(rhs, self.positional)
            && !(0..64).contains(&n)
        {
            return match aop {
                AluOp::AShr => self.alu(AluOp::AShr, a, Operand::Imm(63)),
                _ => self.imm(0),
            };
        }
        self.alu(aop, a, Operand::Reg(b))
    }

    /// `a aop b` for a division or modulo whose divisor may be 0: then the result is 1 and
    /// a warning event names the place in the script, as bpftrace 0.27 does.
    fn checked_div(&mut self, aop: AluOp, a: VReg, b: VReg, span: Span) -> VReg {
        let out = self.imm(1);
        let zero = self.label();
        let done = self.label();
        self.branch(Cond::Eq, b, Operand::Imm(0), zero);
        let r = self.alu(aop, a, Operand::Reg(b));
        self.emit(Inst::Mov {
            dst: out,
            src: Operand::Reg(r),
        });
        self.emit(Inst::Jump(done));
        self.place_label(zero);
        let spec = crate::program::EventSpec::Log {
            error: false,
            format: DIVIDE_BY_ZERO.into(),
            args: Vec::new(),
            span,
        };
        super::events::send_word(self, spec, None);
        self.place_label(done);
        out
    }

    /// Truncates a 64-bit result to the width of `ty` (no-op for 64-bit types).
    pub fn truncate(&mut self, r: VReg, ty: &Type) -> VReg {
        match ty {
            Type::Int { bits, signed } if *bits < 64 => {
                if *signed {
                    self.sign_extend(r, *bits)
                } else {
                    self.alu(AluOp::And, r, Operand::Imm((1i64 << bits) - 1))
                }
            }
            Type::Bool => self.flag(Cond::Ne, r, Operand::Imm(0)),
            _ => r,
        }
    }
}

/// bpftrace 0.27's run-time warning for a division or modulo by 0 (its result is 1).
pub const DIVIDE_BY_ZERO: &str = "Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.";

/// The ALU operation of an arithmetic or bitwise operator on operands of types `lt` and `rt`:
/// division and remainder are signed when both operands are, `>>` is arithmetic when the
/// left one is. Comparisons and logical operators have no ALU operation.
pub fn arith_op(op: BinOp, lt: &Type, rt: &Type) -> AluOp {
    let signed = lt.is_signed() && rt.is_signed();
    match op {
        BinOp::Add => AluOp::Add,
        BinOp::Sub => AluOp::Sub,
        BinOp::Mul => AluOp::Mul,
        BinOp::Div if signed => AluOp::SDiv,
        BinOp::Div => AluOp::UDiv,
        BinOp::Mod if signed => AluOp::SMod,
        BinOp::Mod => AluOp::UMod,
        BinOp::BitAnd => AluOp::And,
        BinOp::BitOr => AluOp::Or,
        BinOp::BitXor => AluOp::Xor,
        BinOp::Shl => AluOp::Shl,
        BinOp::Shr if lt.is_signed() => AluOp::AShr,
        BinOp::Shr => AluOp::LShr,
        BinOp::Eq
        | BinOp::Ne
        | BinOp::Lt
        | BinOp::Le
        | BinOp::Gt
        | BinOp::Ge
        | BinOp::And
        | BinOp::Or => {
            unreachable!("comparisons and logical operators are lowered as branches")
        }
    }
}
