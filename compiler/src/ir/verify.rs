//! Structural checks of IR invariants, run in tests and debug builds.

use super::{Function, Inst};
use std::collections::HashSet;

/// Checks that every label used is defined exactly once, every register is defined somewhere
/// before (in layout order) its first use, calls have at most five arguments, and the function
/// ends in a return or jump.
pub fn verify(f: &Function) -> Result<(), String> {
    let mut defined_labels = HashSet::new();
    for (inst, _) in &f.insts {
        if let Inst::Label(l) = inst
            && !defined_labels.insert(*l)
        {
            return Err(format!("label L{} defined twice", l.0));
        }
    }
    let mut defined = HashSet::new();
    defined.extend(f.params.iter().copied());
    for (i, (inst, _)) in f.insts.iter().enumerate() {
        for u in inst.uses() {
            if !defined.contains(&u) {
                return Err(format!("v{} used at {i} before any definition", u.0));
            }
        }
        if let Some(d) = inst.def() {
            if d.0 >= f.vregs {
                return Err(format!("v{} out of range", d.0));
            }
            defined.insert(d);
        }
        match inst {
            Inst::Jump(l) | Inst::Branch { target: l, .. } if !defined_labels.contains(l) => {
                return Err(format!("jump to undefined label L{}", l.0));
            }
            Inst::Call { args, .. } | Inst::CallFunc { args, .. } if args.len() > 5 => {
                return Err(format!("call with {} arguments at {i}", args.len()));
            }
            Inst::SlotAddr { slot, .. } if slot.0 as usize >= f.slots.len() => {
                return Err(format!("slot{} out of range", slot.0));
            }
            _ => {}
        }
    }
    match f.insts.last() {
        Some((Inst::Return { .. } | Inst::Jump(_), _)) => Ok(()),
        _ => Err("function does not end in return or jump".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Operand, VReg};
    use sonde_lang::span::Span;

    #[test]
    fn rejects_use_before_def_and_accepts_valid() {
        let mut f = Function::new("t");
        let a = f.vreg();
        let b = f.vreg();
        f.push(
            Inst::Mov {
                dst: b,
                src: Operand::Reg(a),
            },
            Span::default(),
        );
        f.push(
            Inst::Return {
                value: Operand::Imm(0),
            },
            Span::default(),
        );
        assert!(verify(&f).unwrap_err().contains("v0 used"));
        f.insts.insert(
            0,
            (
                Inst::Mov {
                    dst: VReg(0),
                    src: Operand::Imm(1),
                },
                Span::default(),
            ),
        );
        assert_eq!(verify(&f), Ok(()));
    }
}
