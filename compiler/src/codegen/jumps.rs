//! Jump resolution: the emitter leaves every jump as a placeholder with a zero offset and
//! records where it points; [`resolve`] then lays the jumps out.
//!
//! A BPF jump's offset is 16 bits, so a short jump reaches 32,767 instructions either way. A
//! jump that does not reach its target becomes a long one (`gotol`, `BPF_JMP32 | BPF_JA`,
//! whose 32-bit immediate is the distance; cpu v4, kernel ≥ 6.6):
//!
//! - `goto L` becomes `gotol L` (same size);
//! - `if a op b goto L` becomes `if a !op b goto +1; gotol L` (one more instruction);
//! - `if a & b goto L` (no negation) becomes `if a & b goto +1; goto +1; gotol L`.
//!
//! Growing one jump moves others, so the layout is iterated until no short jump is out of
//! range (a jump only ever grows, so this ends); programs whose jumps all fit keep exactly the
//! short forms and the instruction count they had. Map and callback relocations and the
//! per-instruction spans follow the instructions they belong to.

use super::emit::Emitted;
use crate::bpf::insn::{Insn, JmpOp, class};

/// The largest forward distance of a short jump (the backward one is one more).
pub const SHORT_RANGE: i64 = i16::MAX as i64;

/// A jump left by the emitter: the index of its placeholder instruction and the index of the
/// instruction it goes to (both before resolution).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// The placeholder (`goto` or a conditional jump, offset 0).
    pub at: usize,
    /// The target instruction (`insns.len()` for the end).
    pub target: usize,
}

/// The long form of a jump site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Short,
    /// `gotol` in place of `goto`.
    Gotol,
    /// Negated condition over a `gotol`.
    Negated(JmpOp),
    /// `jset` over `goto +1` over `gotol`.
    SetOverGoto,
}

impl Form {
    /// Instructions added by this form.
    fn extra(self) -> usize {
        match self {
            Form::Short | Form::Gotol => 0,
            Form::Negated(_) => 1,
            Form::SetOverGoto => 2,
        }
    }
}

/// The long form of `insn`.
fn long_form(insn: &Insn) -> Form {
    if insn.class() == class::JMP && insn.code & 0xf0 == 0 {
        return Form::Gotol;
    }
    match JmpOp::from_code(insn.code).and_then(JmpOp::negated) {
        Some(op) => Form::Negated(op),
        None => Form::SetOverGoto,
    }
}

/// Sets the offsets of the jumps at `sites` (sorted by `at`, each `at` once), turning those
/// whose distance exceeds `range` (forward; `range + 1` backward) into long jumps.
/// [`SHORT_RANGE`] is the kernel's; tests pass smaller ones.
pub fn resolve(out: &mut Emitted, sites: &[Site], range: i64) -> Result<(), String> {
    debug_assert!(sites.windows(2).all(|w| w[0].at < w[1].at));
    let mut forms = vec![Form::Short; sites.len()];
    // before[k]: instructions added by the sites before site k.
    let mut before = vec![0usize; sites.len() + 1];
    loop {
        for k in 0..sites.len() {
            before[k + 1] = before[k] + forms[k].extra();
        }
        // Where old instruction `i` lands (a site's first instruction, for a site).
        let new_pos = |i: usize| i + before[sites.partition_point(|s| s.at < i)];
        let mut grew = false;
        for (k, s) in sites.iter().enumerate() {
            if forms[k] != Form::Short {
                continue;
            }
            let rel = new_pos(s.target) as i64 - new_pos(s.at) as i64 - 1;
            if rel > range || rel < -range - 1 {
                forms[k] = long_form(&out.insns[s.at]);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    if forms.iter().all(|f| *f == Form::Short) {
        for s in sites {
            let rel = s.target as i64 - s.at as i64 - 1;
            out.insns[s.at].off = rel as i16;
        }
        return Ok(());
    }
    let new_pos = |i: usize| i + before[sites.partition_point(|s| s.at < i)];
    let total = out.insns.len() + before[sites.len()];
    let mut insns = Vec::with_capacity(total);
    let mut spans = Vec::with_capacity(total);
    let mut next = 0;
    for (old, (insn, span)) in out.insns.iter().zip(&out.spans).enumerate() {
        let site = (next < sites.len() && sites[next].at == old).then(|| {
            next += 1;
            (sites[next - 1], forms[next - 1])
        });
        let Some((s, form)) = site else {
            insns.push(*insn);
            spans.push(*span);
            continue;
        };
        // Distance to the target from the instruction after the one that jumps.
        let from = insns.len() + form.extra() + 1;
        let rel = new_pos(s.target) as i64 - from as i64;
        let long =
            || i32::try_from(rel).map_err(|_| "this probe's program is too large for BPF jumps");
        match form {
            Form::Short => insns.push(Insn {
                off: rel as i16,
                ..*insn
            }),
            Form::Gotol => insns.push(Insn::gotol(long()?)),
            Form::Negated(op) => {
                insns.push(Insn {
                    code: (insn.code & 0x0f) | op.code(),
                    off: 1,
                    ..*insn
                });
                insns.push(Insn::gotol(long()?));
            }
            Form::SetOverGoto => {
                insns.push(Insn { off: 1, ..*insn });
                insns.push(Insn::ja(1));
                insns.push(Insn::gotol(long()?));
            }
        }
        spans.resize(insns.len(), *span);
    }
    for (at, _) in out.map_relocs.iter_mut().chain(out.func_relocs.iter_mut()) {
        *at = new_pos(*at);
    }
    out.insns = insns;
    out.spans = spans;
    Ok(())
}

#[cfg(test)]
#[path = "jumps_tests.rs"]
mod tests;
