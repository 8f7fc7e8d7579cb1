//! The control-flow graph of an IR function, and removal of unreachable code (the verifier
//! rejects instructions that can never run).

use super::{Function, Inst, Label};
use std::collections::HashMap;

/// Basic blocks as instruction index ranges, with successors.
pub struct Cfg {
    /// `[start, end)` instruction ranges of the blocks, in layout order.
    pub blocks: Vec<(usize, usize)>,
    /// Successor blocks of each block.
    pub succs: Vec<Vec<usize>>,
}

/// Splits `f` into basic blocks (at labels and after jumps, branches and returns).
pub fn build_cfg(f: &Function) -> Cfg {
    let n = f.insts.len();
    let mut starts: Vec<usize> = vec![0];
    for (i, (inst, _)) in f.insts.iter().enumerate() {
        match inst {
            Inst::Label(_) => starts.push(i),
            Inst::Jump(_) | Inst::Branch { .. } | Inst::Return { .. } => starts.push(i + 1),
            _ => {}
        }
    }
    starts.retain(|&s| s < n);
    starts.sort_unstable();
    starts.dedup();
    let blocks: Vec<(usize, usize)> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| (s, starts.get(k + 1).copied().unwrap_or(n)))
        .collect();
    let mut label_block: HashMap<Label, usize> = HashMap::new();
    for (b, &(s, _)) in blocks.iter().enumerate() {
        if let Inst::Label(l) = f.insts[s].0 {
            label_block.insert(l, b);
        }
    }
    let succs = blocks
        .iter()
        .enumerate()
        .map(|(b, &(_, e))| {
            let last = &f.insts[e - 1].0;
            let mut s = Vec::new();
            match last {
                Inst::Jump(l) => s.extend(label_block.get(l)),
                Inst::Branch { target, .. } => {
                    s.extend(label_block.get(target));
                    if b + 1 < blocks.len() {
                        s.push(b + 1);
                    }
                }
                Inst::Return { .. } => {}
                _ if b + 1 < blocks.len() => s.push(b + 1),
                _ => {}
            }
            s
        })
        .collect();
    Cfg { blocks, succs }
}

/// Removes the instructions of blocks that cannot be reached from the entry, and jumps to the
/// label that immediately follows them.
pub fn remove_dead_code(f: &mut Function) {
    if f.insts.is_empty() {
        return;
    }
    let cfg = build_cfg(f);
    let mut reachable = vec![false; cfg.blocks.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut reachable[b], true) {
            continue;
        }
        stack.extend(cfg.succs[b].iter().copied().filter(|&s| !reachable[s]));
    }
    let mut keep = vec![true; f.insts.len()];
    for (b, &(s, e)) in cfg.blocks.iter().enumerate() {
        if !reachable[b] {
            keep[s..e].iter_mut().for_each(|k| *k = false);
        }
    }
    let mut i = 0;
    f.insts.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    // `goto L; L:` is a no-op.
    let mut out: Vec<_> = Vec::with_capacity(f.insts.len());
    for (k, item) in f.insts.iter().enumerate() {
        if let (Inst::Jump(l), Some((Inst::Label(next), _))) = (&item.0, f.insts.get(k + 1))
            && l == next
        {
            continue;
        }
        out.push(item.clone());
    }
    f.insts = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Operand;
    use sonde_lang::span::Span;

    #[test]
    fn code_after_a_return_is_removed() {
        let mut f = Function::new("t");
        let l = f.label();
        let v = f.vreg();
        f.push(Inst::Jump(l), Span::default());
        f.push(
            Inst::Mov {
                dst: v,
                src: Operand::Imm(1),
            },
            Span::default(),
        );
        f.push(Inst::Label(l), Span::default());
        f.push(
            Inst::Return {
                value: Operand::Imm(0),
            },
            Span::default(),
        );
        f.push(
            Inst::Mov {
                dst: v,
                src: Operand::Imm(2),
            },
            Span::default(),
        );
        remove_dead_code(&mut f);
        assert_eq!(
            f.insts.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(),
            vec![
                Inst::Label(l),
                Inst::Return {
                    value: Operand::Imm(0)
                }
            ]
        );
    }
}
