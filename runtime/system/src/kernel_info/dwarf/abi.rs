//! Where each parameter arrives under the x86-64 System V calling convention (§3.2.3 of the
//! psABI), as far as `args` needs it: which parameters sit alone in one of the six integer
//! argument registers (`argN`), and how many of those registers the others use up.
//!
//! Each parameter is classified by eightbytes: integers, pointers and enums are INTEGER;
//! `float`/`double` are SSE; `long double` and records larger than 16 bytes are MEMORY; a
//! record of up to 16 bytes is classified per eightbyte (SSE when only floating-point members
//! overlap it, INTEGER otherwise). A parameter needing more integer registers than are left
//! goes to the stack whole. A function returning a MEMORY record takes a hidden pointer in
//! the first register.

use super::{Die, Dwarf};
use sonde_lang::kernel::{DebugInfoError, ParamLocation};

/// Integer argument registers (rdi, rsi, rdx, rcx, r8, r9).
pub const INT_REGS: u8 = 6;

/// How a parameter is passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// In `int` integer registers and `sse` SSE registers; `whole` when it is a scalar or a
    /// record that fits one register (`int + sse == 1`).
    Regs {
        /// Integer registers used.
        int: u8,
        /// SSE registers used.
        sse: u8,
    },
    /// On the stack: why.
    Memory(&'static str),
}

/// The integer registers handed out so far.
pub struct Registers {
    next: u8,
}

impl Registers {
    /// Registers of a function whose return value does (`hidden`) or does not take a hidden
    /// pointer in the first register.
    pub fn new(hidden: bool) -> Self {
        Registers {
            next: u8::from(hidden),
        }
    }

    /// Where the next parameter, of class `class`, is.
    pub fn place(&mut self, class: &Class) -> ParamLocation {
        let elsewhere = |s: String| ParamLocation::Elsewhere(s);
        match *class {
            Class::Memory(why) => elsewhere(format!("{why}, passed on the stack")),
            Class::Regs { int: 0, sse: 0 } => elsewhere("an empty value, in no register".into()),
            Class::Regs { int: 0, .. } => {
                elsewhere("a floating-point value, passed in an SSE register".into())
            }
            Class::Regs { int, sse } => {
                if self.next + int > INT_REGS {
                    self.next = INT_REGS;
                    return elsewhere(
                        "passed on the stack: the six argument registers are taken".into(),
                    );
                }
                let first = self.next;
                self.next += int;
                match (int, sse) {
                    (1, 0) => ParamLocation::Register(first),
                    (1, _) => elsewhere(format!("split between arg{first} and an SSE register")),
                    _ => elsewhere(format!(
                        "split between arg{first} and arg{}",
                        first + int - 1
                    )),
                }
            }
        }
    }
}

/// One scalar inside a record: its offset, size and whether it is floating point.
type Leaf = (u64, u64, bool);

impl Dwarf {
    /// The class of a parameter of type `ty`.
    pub(super) fn classify(&self, ty: Option<Die>) -> Result<Class, DebugInfoError> {
        let Some(die) = self.peel(ty)? else {
            return Ok(Class::Regs { int: 1, sse: 0 });
        };
        let tag = self.tag(die)?;
        if tag == gimli::DW_TAG_base_type {
            let size = self.byte_size(die)?;
            return Ok(match self.encoding(die)? {
                Some(gimli::DW_ATE_float) if size > 8 => Class::Memory("a long double"),
                Some(gimli::DW_ATE_float | gimli::DW_ATE_complex_float) => {
                    Class::Regs { int: 0, sse: 1 }
                }
                _ if size > 8 => Class::Regs { int: 2, sse: 0 },
                _ => Class::Regs { int: 1, sse: 0 },
            });
        }
        if !matches!(
            tag,
            gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_array_type
        ) {
            return Ok(Class::Regs { int: 1, sse: 0 });
        }
        let size = self.byte_size(die)?;
        if size > 16 {
            return Ok(Class::Memory("a struct larger than 16 bytes"));
        }
        let mut leaves = Vec::new();
        self.leaves(Some(die), 0, &mut leaves, 0)?;
        let (mut int, mut sse) = (0, 0);
        for eightbyte in 0..size.div_ceil(8) {
            let (lo, hi) = (eightbyte * 8, eightbyte * 8 + 8);
            let overlapping: Vec<&Leaf> = leaves
                .iter()
                .filter(|(off, sz, _)| *off < hi && off + (*sz).max(1) > lo)
                .collect();
            if !overlapping.is_empty() && overlapping.iter().all(|l| l.2) {
                sse += 1;
            } else {
                int += 1;
            }
        }
        Ok(Class::Regs { int, sse })
    }

    /// The scalars of type `ty` placed at `base`, members and array elements included.
    fn leaves(
        &self,
        ty: Option<Die>,
        base: u64,
        out: &mut Vec<Leaf>,
        depth: u32,
    ) -> Result<(), DebugInfoError> {
        if depth > super::types::MAX_DEPTH || out.len() > 64 {
            return Ok(());
        }
        let Some(die) = self.peel(ty)? else {
            return Ok(());
        };
        match self.tag(die)? {
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                for m in self.children_tagged(die, gimli::DW_TAG_member)? {
                    let off = base.saturating_add(self.member_offset(m)?);
                    self.leaves(self.type_of(m)?, off, out, depth + 1)?;
                }
            }
            gimli::DW_TAG_array_type => {
                let elem = self.type_of(die)?;
                let esize = match self.peel(elem)? {
                    Some(e) => self.element_size(e)?,
                    None => 0,
                };
                let n: u64 = self.dimensions(die)?.iter().product();
                for i in 0..n.min(16) {
                    self.leaves(elem, base + i * esize, out, depth + 1)?;
                }
            }
            gimli::DW_TAG_base_type => {
                let float = matches!(
                    self.encoding(die)?,
                    Some(gimli::DW_ATE_float | gimli::DW_ATE_complex_float)
                );
                out.push((base, self.byte_size(die)?, float));
            }
            _ => out.push((base, self.byte_size(die)?.max(1), false)),
        }
        Ok(())
    }

    /// The size of an array element type (its byte size, or its own elements' for arrays).
    fn element_size(&self, die: Die) -> Result<u64, DebugInfoError> {
        let own = self.byte_size(die)?;
        if own != 0 || self.tag(die)? != gimli::DW_TAG_array_type {
            return Ok(own);
        }
        let inner = match self.peel(self.type_of(die)?)? {
            Some(e) => self.byte_size(e)?,
            None => 0,
        };
        Ok(inner.saturating_mul(self.dimensions(die)?.iter().product()))
    }

    /// True when a function returning `ty` takes a hidden pointer for the result.
    pub(super) fn returns_in_memory(&self, ty: Option<Die>) -> Result<bool, DebugInfoError> {
        let Some(die) = self.peel(ty)? else {
            return Ok(false);
        };
        if !matches!(
            self.tag(die)?,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type
        ) {
            return Ok(false);
        }
        Ok(matches!(self.classify(Some(die))?, Class::Memory(_)))
    }
}
