//! Statements of generated scripts: printf, scratch variables, strings, tuples, `if` and
//! `exit`.

use super::{CASTS, Gen, INT_FMTS, STR_FMTS};

impl Gen {
    /// `printf` of a few integer expressions and maybe strings.
    pub(super) fn printf_stmt(&mut self, tag: &str, depth: u32) {
        let n = self.rng.range(1, 5);
        let mut fmt = format!("{tag}:");
        let mut args = Vec::new();
        for _ in 0..n {
            if self.rng.chance(1, 6) {
                fmt.push(' ');
                let f: &&str = self.rng.pick(STR_FMTS);
                fmt.push_str(f);
                args.push(self.str_expr());
            } else if self.rng.chance(1, 16) {
                // An IPv4 address from an integer.
                fmt.push_str(" %s");
                let e = self.int_expr(1);
                args.push(format!("ntop({e})"));
            } else if self.rng.chance(1, 12) {
                // %c of a printable character.
                fmt.push_str(" %c");
                let e = self.int_expr(1);
                args.push(format!("(65 + ({e} & 31))"));
            } else {
                fmt.push(' ');
                let f: &&str = self.rng.pick(INT_FMTS);
                fmt.push_str(f);
                args.push(self.int_expr(depth));
            }
        }
        fmt.push_str("\\n");
        self.line(&format!("printf(\"{fmt}\", {});", args.join(", ")));
    }

    pub(super) fn new_int_var(&mut self) {
        let name = format!("$v{}", self.id());
        let mut e = self.int_expr(3);
        if self.rng.chance(1, 3) {
            // A narrow variable: stored with its width where it crosses into loop callbacks.
            let c = self.rng.pick(CASTS);
            e = format!("({c})({e})");
        }
        let decl = if self.rng.chance(1, 6) { "let " } else { "" };
        self.line(&format!("{decl}{name} = {e};"));
        if self.rng.chance(1, 3) {
            self.line(&format!("printf(\"{name}=%lld\\n\", {name});"));
        }
        self.ivars.push(name);
    }

    pub(super) fn update_int_var(&mut self) {
        if self.ivars.is_empty() {
            return self.new_int_var();
        }
        let v = self.rng.pick(&self.ivars).clone();
        match self.rng.below(6) {
            0 => self.line(&format!("{v}++;")),
            1 => self.line(&format!("{v}--;")),
            2 => {
                let e = self.int_expr(2);
                self.line(&format!("{v} = {e};"));
            }
            _ => {
                let op = self
                    .rng
                    .pick(&["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]);
                let e = self.int_expr(2);
                self.line(&format!("{v} {op} {e};"));
            }
        }
        if self.rng.chance(1, 2) {
            self.line(&format!("printf(\"{v}=%lld %d %u\\n\", {v}, {v}, {v});"));
        }
    }

    pub(super) fn string_stmts(&mut self) {
        let name = format!("$s{}", self.id());
        let e = self.str_expr();
        self.line(&format!("{name} = {e};"));
        self.svars.push(name.clone());
        let f = self.rng.pick(STR_FMTS);
        let cmp = self.str_cmp();
        let cmp2 = self.str_cmp();
        self.line(&format!(
            "printf(\"str:{f}| %d %d\\n\", {name}, {cmp}, {cmp2});"
        ));
        if self.rng.chance(1, 3) {
            self.line(&format!("print({name});"));
        }
        if self.rng.chance(1, 3) {
            let other = self.str_expr();
            self.line(&format!("{name} = {other};"));
        }
    }

    pub(super) fn tuple_stmts(&mut self) {
        let name = format!("$t{}", self.id());
        let mut a = self.int_expr(2);
        if self.rng.chance(1, 2) {
            // Narrow elements are loaded with their width.
            let c = self.rng.pick(CASTS);
            a = format!("({c})({a})");
        }
        let s = self.str_expr();
        let mut b = self.int_expr(1);
        if self.rng.chance(1, 3) {
            let c = self.rng.pick(CASTS);
            b = format!("({c})({b})");
        }
        self.line(&format!("{name} = ({a}, {s}, {b});"));
        self.tvars.push(name.clone());
        match self.rng.below(3) {
            0 => self.line(&format!("print({name});")),
            1 => self.line(&format!(
                "printf(\"tup: %lld %s %d\\n\", {name}.0, {name}.1, {name}.2);"
            )),
            _ => {
                let c = self.int_expr(1);
                self.line(&format!("print(({name}.0, {c}, \"lit\", {name}.1));"));
            }
        }
    }

    pub(super) fn if_stmt(&mut self) {
        let c = self.cond(2);
        self.line(&format!("if ({c}) {{"));
        self.indent += 1;
        self.small_block(2);
        self.indent -= 1;
        let mut chain = self.rng.below(3);
        while chain > 0 {
            chain -= 1;
            let c = self.cond(2);
            self.line(&format!("}} else if ({c}) {{"));
            self.indent += 1;
            self.small_block(1);
            self.indent -= 1;
        }
        if self.rng.chance(1, 2) {
            self.line("} else {");
            self.indent += 1;
            self.small_block(2);
            self.indent -= 1;
        }
        self.line("}");
    }

    /// `if (cond) { exit(); }`, once per script when it asks for one.
    pub(super) fn maybe_exit(&mut self) {
        if self.early_exit && self.rng.chance(1, 3) {
            self.early_exit = false;
            let c = self.cond(1);
            self.line(&format!(
                "if ({c}) {{ printf(\"early exit\\n\"); exit(); }}"
            ));
        }
    }

    /// A few simple statements (no loops, no new variables: a variable first assigned in one
    /// branch would be a different program in bpftrace).
    fn small_block(&mut self, n: usize) {
        let id = self.id();
        for _ in 0..self.rng.range(1, n as i64) {
            match self.rng.below(5) {
                0 | 1 => self.printf_stmt(&format!("b{id}"), 2),
                2 if !self.ivars.is_empty() => {
                    let v = self.rng.pick(&self.ivars).clone();
                    let op = self.rng.pick(&["+=", "-=", "^=", "*=", "|="]);
                    let e = self.int_expr(2);
                    self.line(&format!("{v} {op} {e};"));
                }
                3 => self.map_store(),
                _ => self.printf_stmt(&format!("b{id}"), 1),
            }
        }
    }
}
