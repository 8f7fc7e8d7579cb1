//! Loops of generated scripts (`while`, `unroll`, `for` over a range and over a map), with
//! an accumulator and aggregations updated in their bodies.

use super::Gen;
use super::maps::{Val, agg_call, map_ref};

impl Gen {
    /// One of the loop forms, with an accumulator.
    pub(super) fn loop_stmt(&mut self) {
        let acc = format!("$acc{}", self.id());
        let init = self.int_lit();
        self.line(&format!("{acc} = {init};"));
        let n = self.rng.range(0, 12);
        let ops = ["+", "^", "*", "-", "|", "<<", ">>", "/", "%"];
        self.in_loop = true;
        match self.rng.below(4) {
            0 => {
                let i = format!("$i{}", self.id());
                self.line(&format!("{i} = 0;"));
                self.line(&format!("while ({i} < {n}) {{"));
                self.indent += 1;
                self.line(&format!("{i}++;"));
                self.ivars.push(i.clone());
                if self.rng.chance(1, 3) {
                    let k = self.rng.range(0, 12);
                    let what = self.rng.pick(&["break", "continue"]);
                    self.line(&format!("if ({i} == {k}) {{ {what}; }}"));
                }
                self.flat = true;
                self.loop_body(&acc, &ops);
                self.flat = false;
                self.ivars.pop();
                self.indent -= 1;
                self.line("}");
            }
            1 => {
                let n = self.rng.range(1, 8);
                self.line(&format!("unroll({n}) {{"));
                self.indent += 1;
                self.flat = true;
                self.loop_body(&acc, &ops);
                self.flat = false;
                self.indent -= 1;
                self.line("}");
            }
            _ => {
                let i = format!("$i{}", self.id());
                let lo = self.rng.range(-3, 3);
                let hi = if self.rng.chance(1, 3) && !self.ivars.is_empty() {
                    // A bound computed at run time (`bpf_loop`), kept small. At least one
                    // iteration: on Linux 6.18 a `bpf_loop` the verifier knows runs 0 times,
                    // after another `bpf_loop` in the same probe, fails to load ("verifier
                    // bug: No program to jit"), a kernel-side problem reported separately.
                    let v = self.rng.pick(&self.ivars).clone();
                    format!("({} + (({v}) & 7))", lo + 1)
                } else {
                    (lo + n).to_string()
                };
                self.line(&format!("for ({i} : {lo}..{hi}) {{"));
                self.indent += 1;
                self.ivars.push(i.clone());
                let was = self.in_callback;
                self.in_callback = true;
                if self.rng.chance(1, 3) {
                    let k = self.rng.range(lo, lo + n);
                    let what = self.rng.pick(&["break", "continue"]);
                    self.line(&format!("if ({i} == {k}) {{ {what}; }}"));
                }
                self.loop_body(&acc, &ops);
                self.in_callback = was;
                self.ivars.pop();
                self.indent -= 1;
                self.line("}");
            }
        }
        self.in_loop = false;
        self.line(&format!("printf(\"{acc}=%lld\\n\", {acc});"));
        self.ivars.push(acc);
    }

    fn loop_body(&mut self, acc: &str, ops: &[&str]) {
        let op = self.rng.pick(ops);
        let e = self.int_expr(2);
        self.line(&format!("{acc} = {acc} {op} ({e});"));
        if self.rng.chance(1, 3) {
            let e = self.int_expr(1);
            self.line(&format!("{acc} += {e};"));
        }
        if self.rng.chance(1, 4) {
            let id = self.id();
            self.printf_stmt(&format!("l{id}"), 1);
        }
        self.maybe_exit();
        if self.rng.chance(1, 3) {
            // Aggregations ordered by key take any values, from any key.
            self.keyed_agg_in_loop();
        }
    }

    /// An aggregation updated in a loop: only maps printed in key order (or with one key).
    fn keyed_agg_in_loop(&mut self) {
        let cands: Vec<usize> = (0..self.maps.len())
            .filter(|&i| {
                let m = &self.maps[i];
                !m.val.by_value() && !matches!(m.val, Val::Str | Val::Tuple) && !m.keys.is_empty()
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let i = *self.rng.pick(&cands);
        let key = {
            let m = &self.maps[i];
            self.rng.pick(&m.keys).clone()
        };
        let (k, v) = (self.maps[i].key, self.maps[i].val);
        if !self.scratch_fits(k, v) {
            return;
        }
        let e = self.int_expr(2);
        let m = &self.maps[i];
        let call = agg_call(m.val, &e);
        self.line(&format!("{} = {call};", map_ref(&m.name, m.key, &key)));
    }
}
