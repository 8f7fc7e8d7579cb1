//! Expressions of generated scripts: integers, conditions and strings.

use super::maps::map_ref;
use super::{BIN_OPS, CASTS, Gen, INT_LITS, SMALL_LITS, STR_LITS};

impl Gen {
    pub(super) fn int_lit(&mut self) -> String {
        self.rng.pick(INT_LITS).to_string()
    }

    fn small_lit(&mut self) -> String {
        self.rng.pick(SMALL_LITS).to_string()
    }

    /// An integer leaf: a literal, a cast literal, a variable, a map value, `$1`.
    fn int_leaf(&mut self) -> String {
        match self.rng.below(12) {
            0..=3 => self.int_lit(),
            4 => self.small_lit(),
            5 | 6 => {
                let c = self.rng.pick(CASTS);
                let l = self.int_lit();
                format!("({c}){l}")
            }
            7..=9 if !self.ivars.is_empty() => {
                let v = self.rng.pick(&self.ivars).clone();
                if self.rng.chance(1, 4) {
                    let c = self.rng.pick(CASTS);
                    format!("({c}){v}")
                } else {
                    v
                }
            }
            10 if self
                .maps
                .iter()
                .any(|m| m.val.readable() && !m.keys.is_empty()) =>
            {
                let cands: Vec<usize> = (0..self.maps.len())
                    .filter(|&i| self.maps[i].val.readable() && !self.maps[i].keys.is_empty())
                    .collect();
                let m = &self.maps[*self.rng.pick(&cands)];
                let k = self.rng.pick(&m.keys).clone();
                map_ref(&m.name, m.key, &k)
            }
            11 if self.positional => "$1".to_string(),
            11 => {
                let c = self.rng.pick(&["uint16", "uint32", "int64", "uint8"]);
                let l = self.int_lit();
                format!("bswap(({c}){l})")
            }
            _ => self.int_lit(),
        }
    }

    /// An integer expression of at most `depth` levels of operators.
    pub(super) fn int_expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.chance(1, 4) {
            return self.int_leaf();
        }
        if self.flat {
            return self.flat_expr(depth);
        }
        match self.rng.below(16) {
            0 => format!("-{}", self.int_paren(depth - 1)),
            1 => format!("~{}", self.int_paren(depth - 1)),
            2 => format!("!{}", self.int_paren(depth - 1)),
            3 | 4 => {
                let c = self.rng.pick(CASTS);
                format!("({c}){}", self.int_paren(depth - 1))
            }
            5 => {
                let c = self.cond(depth - 1);
                let a = self.int_expr(depth - 1);
                let b = self.int_expr(depth - 1);
                format!("({c} ? {a} : {b})")
            }
            6 if !self.svars.is_empty() || self.rng.chance(1, 2) => self.str_cmp(),
            7 => {
                // Shifts and divisions by small amounts, the most common use.
                let op = self.rng.pick(&["<<", ">>", "/", "%", "*"]);
                let a = self.int_expr(depth - 1);
                let b = self.small_lit();
                format!("({a} {op} {b})")
            }
            _ => {
                let op = self.rng.pick(BIN_OPS);
                let a = self.int_expr(depth - 1);
                let b = self.int_expr(depth - 1);
                format!("({a} {op} {b})")
            }
        }
    }

    /// An integer expression that compiles without branches (no comparisons, logic or
    /// ternaries): in `while` and `unroll` bodies the verifier walks every path of every
    /// iteration, and values that differ between paths multiply its states.
    fn flat_expr(&mut self, depth: u32) -> String {
        match self.rng.below(8) {
            0 => format!("-{}", self.int_paren(depth - 1)),
            1 => format!("~{}", self.int_paren(depth - 1)),
            2 => {
                let c = self.rng.pick(CASTS);
                format!("({c}){}", self.int_paren(depth - 1))
            }
            _ => {
                let op = self
                    .rng
                    .pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]);
                let a = self.int_expr(depth - 1);
                let b = self.int_expr(depth - 1);
                format!("({a} {op} {b})")
            }
        }
    }

    /// An integer expression safe to prefix with a unary operator.
    fn int_paren(&mut self, depth: u32) -> String {
        let e = self.int_expr(depth);
        if e.starts_with('(') && e.ends_with(')') || e.chars().all(|c| c.is_ascii_alphanumeric()) {
            e
        } else {
            format!("({e})")
        }
    }

    /// A condition.
    pub(super) fn cond(&mut self, depth: u32) -> String {
        match self.rng.below(6) {
            0 => self.str_cmp(),
            1 => {
                let a = self.int_expr(depth.min(1));
                let b = self.int_expr(depth.min(1));
                let op = self.rng.pick(&["&&", "||"]);
                let c = self.rng.pick(&["<", ">=", "!=", "=="]);
                format!("({a} {op} ({b} {c} 0))")
            }
            _ => {
                let op = self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                let a = self.int_expr(depth);
                let b = self.int_expr(depth.min(1));
                format!("({a} {op} {b})")
            }
        }
    }

    pub(super) fn str_expr(&mut self) -> String {
        match self.rng.below(5) {
            0 | 1 if !self.svars.is_empty() => self.rng.pick(&self.svars).clone(),
            2 if !self.flat => {
                let c = self.cond(1);
                let a = self.rng.pick(STR_LITS);
                let b = self.rng.pick(STR_LITS);
                format!("({c} ? {a} : {b})")
            }
            3 if !self.tvars.is_empty() => format!("{}.1", self.rng.pick(&self.tvars)),
            _ => self.rng.pick(STR_LITS).to_string(),
        }
    }

    /// A string comparison (an integer).
    pub(super) fn str_cmp(&mut self) -> String {
        let a = self.str_expr();
        let b = self.str_expr();
        match self.rng.below(4) {
            0 => format!("({a} == {b})"),
            1 => format!("({a} != {b})"),
            2 => format!("strcontains({a}, {b})"),
            _ => {
                let n = self.rng.pick(&["0", "1", "2", "3", "5", "64"]);
                format!("strncmp({a}, {b}, {n})")
            }
        }
    }
}
