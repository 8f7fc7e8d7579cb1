//! Differential tests of the two engines: the same script run in the kernel (`--engine bpf`,
//! BEGIN/END through `BPF_PROG_TEST_RUN`) and natively in this process (`--engine jit`, the
//! cranelift backend and the in-process maps) must print the same bytes and exit with the
//! same status. The BPF engine is the reference.
//!
//! `random_scripts_print_the_same_in_both_engines` runs a few hundred scripts made by a seeded
//! generator over the language both engines run: integer arithmetic of every operator on every
//! width and signedness with literals at the edges, comparisons, logic, ternaries, `if`,
//! `while`, `unroll` and `for` loops, scratch variables, strings, tuples, maps with integer,
//! string and tuple keys, every aggregation, map functions, and printf formats.
//!
//! Scripts are written so that their output does not depend on anything but the script:
//! no time, pids or random numbers; no printing inside `for ($kv : @map)` (hash order); and
//! every map that prints sorted by value (plain integers, `count`, `sum`, `min`, `max`) with
//! more than one key holds distinct values, since ties print in the kernel's hash order.
//!
//! A generated script must also run in the reference engine with the exit status it asks for;
//! only scripts the kernel engine refuses for its resource limits (the 512-byte BPF stack,
//! 16-bit jump offsets, the 32 KiB scratch value, the verifier's instruction budget) are
//! counted as skipped, and a few percent at most may be. Expressions in `while` and `unroll` bodies are branch-free, so
//! that the verifier's work stays linear in the iterations.
//!
//! `interval_scripts_print_the_same_in_both_engines` runs hand-written `interval` scripts, and
//! `kernel_limits_are_the_same_in_both_engines` checks that the userspace engine loses events
//! and refuses map updates exactly where the kernel does.
//!
//! Knobs: `SONDE_DIFF_SEED` (first seed), `SONDE_DIFF_N` (number of scripts),
//! `SONDE_DIFF_DUMP=DIR` (write every script and its arguments to DIR).

mod common;

use common::rng::Rng;

use common::{Output, run_sonde_timeout, skip_unless_root};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Hard limit for one run of one engine.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// Number of generated scripts (`SONDE_DIFF_N` overrides it).
const SCRIPTS: usize = 300;

/// Every `JSON_EVERY`-th script also runs with `-f json`.
const JSON_EVERY: usize = 6;

// ---------------------------------------------------------------------------------------------
// The generator

/// Integer literals at the edges of every width.
const INT_LITS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "7",
    "10",
    "-1",
    "-2",
    "-7",
    "127",
    "128",
    "-128",
    "-129",
    "255",
    "256",
    "32767",
    "32768",
    "-32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "0xff",
    "0x7f",
    "0x8000",
    "0xffffffff",
    "0x100000000",
    "1000000007",
];

/// Small literals (shift amounts, divisors, loop bounds).
const SMALL_LITS: &[&str] = &[
    "0", "1", "2", "3", "4", "7", "8", "15", "16", "31", "32", "33", "63", "64", "65", "-1",
];

const CASTS: &[&str] = &[
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
];

const BIN_OPS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&&",
    "||",
];

/// String literals (as written in the script); distinct as strings.
const STR_LITS: &[&str] = &[
    "\"\"",
    "\"a\"",
    "\"b\"",
    "\"ab\"",
    "\"abc\"",
    "\"abd\"",
    "\"hello\"",
    "\"hello world\"",
    "\"Z\"",
    "\"a\\tb\"",
    "\"x-y_z.0\"",
    "\"%d%s\"",
    "\"\\x41\\x42\"",
    "\"q\\\"q\"",
    "\"back\\\\slash\"",
    "\"caf\\xc3\\xa9\"",
    "\"\\xff\\xfe\\x80\"",
    "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789\"",
];

/// printf conversions for one integer.
const INT_FMTS: &[&str] = &[
    "%d", "%i", "%u", "%x", "%X", "%o", "%ld", "%lld", "%lu", "%llu", "%lx", "%llx", "%lX", "%-8d",
    "%08x", "%8u", "%-12lld", "%020llu", "%hd", "%hu", "%hhd", "%hhx", "%+d", "%#x", "%#o",
    "%5.3d", "%li", "%%%lld", "%p",
];

const STR_FMTS: &[&str] = &["%s", "%5s", "%-5s", "%-12s|", "%.2s", "%20s"];

/// What a map holds.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Val {
    Int,
    Str,
    /// `(int, string)` values.
    Tuple,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    Stats,
    Hist(u8),
    Lhist(i64, i64, i64),
}

impl Val {
    /// Printed sorted by value: ties would print in hash order.
    fn by_value(self) -> bool {
        matches!(self, Val::Int | Val::Count | Val::Sum | Val::Min | Val::Max)
    }

    /// Can be read as an integer in an expression.
    fn readable(self) -> bool {
        matches!(self, Val::Int | Val::Count | Val::Sum | Val::Min | Val::Max)
    }
}

/// How a map is keyed.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Key {
    None,
    /// Integer keys, optionally through a cast (the same for every use of the map).
    Int(Option<&'static str>),
    Str,
    /// A tuple of the shape `TUPLE_SHAPES[i]`.
    Tuple(usize),
}

/// Tuple key shapes: `int` (64-bit) or a cast type for integers, `str` for strings. The first
/// integer element tells keys apart. Mixed widths exercise the padding in keys.
const TUPLE_SHAPES: &[&[&str]] = &[
    &["int", "str"],
    &["uint8", "str", "int16"],
    &["str", "int32"],
    &["int8", "int", "uint16"],
    &["uint16", "str", "str", "int8"],
];

/// One element of a tuple key: `distinct` is this key's value of the distinguishing element.
fn tuple_elem(rng: &mut Rng, ty: &str, distinct: Option<&str>) -> String {
    match ty {
        "str" => rng.pick(STR_LITS).to_string(),
        "int" => distinct
            .unwrap_or_else(|| *rng.pick(int_keys(None)))
            .to_string(),
        c => {
            let v = distinct.unwrap_or_else(|| *rng.pick(int_keys(Some(c))));
            format!("({c}){v}")
        }
    }
}

/// The cast of a tuple shape's first integer element (`None` for 64 bits), and its index.
fn tuple_distinct(shape: &[&'static str]) -> (Option<&'static str>, usize) {
    let i = shape.iter().position(|t| *t != "str").unwrap_or(0);
    let c = match shape[i] {
        "int" | "str" => None,
        c => Some(c),
    };
    (c, i)
}

/// A key of a tuple shape whose distinguishing element is `d` (or random).
fn tuple_key(rng: &mut Rng, shape: &[&'static str], d: Option<&str>) -> String {
    let (_, di) = tuple_distinct(shape);
    shape
        .iter()
        .enumerate()
        .map(|(j, t)| tuple_elem(rng, t, if j == di { d } else { None }))
        .collect::<Vec<_>>()
        .join(", ")
}

struct MapInfo {
    name: String,
    key: Key,
    val: Val,
    /// The distinct key expressions of this map, by index.
    keys: Vec<String>,
}

struct Gen {
    rng: Rng,
    out: String,
    indent: usize,
    ivars: Vec<String>,
    svars: Vec<String>,
    /// Tuple variables `(int, string, int)`.
    tvars: Vec<String>,
    maps: Vec<MapInfo>,
    next_id: usize,
    /// Loop nesting (only one level of loops, to keep the verifier's work small).
    in_loop: bool,
    /// Inside a `for ($i : a..b)` or `for ($kv : @m)` body (a callback: no map iteration).
    in_callback: bool,
    /// A positional parameter `$1` is passed.
    positional: bool,
    /// Whether to put an `exit()` under a condition somewhere.
    early_exit: bool,
    /// Only branch-free expressions (see `flat_expr`).
    flat: bool,
    /// Bytes of per-CPU scratch the BPF backend gives keyed histogram updates so far (each
    /// update site has its own; the scratch map's value must stay under 32 KiB).
    scratch: usize,
}

/// Distinct integer keys for a key cast: values that stay distinct after the cast.
fn int_keys(cast: Option<&str>) -> &'static [&'static str] {
    match cast {
        Some("uint8") => &["0", "1", "7", "128", "200", "255"],
        Some("int8") => &["0", "1", "-1", "127", "-128", "5"],
        Some("uint16") | Some("int16") => &["0", "1", "255", "256", "32767", "4660"],
        _ => &[
            "0",
            "1",
            "-1",
            "2",
            "255",
            "65536",
            "4294967296",
            "-9223372036854775808",
            "9223372036854775807",
            "1000000007",
        ],
    }
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng::new(seed),
            out: String::new(),
            indent: 1,
            ivars: Vec::new(),
            svars: Vec::new(),
            tvars: Vec::new(),
            maps: Vec::new(),
            next_id: 0,
            in_loop: false,
            in_callback: false,
            positional: false,
            scratch: 0,
            early_exit: false,
            flat: false,
        }
    }

    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    // --- expressions

    fn int_lit(&mut self) -> String {
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
    fn int_expr(&mut self, depth: u32) -> String {
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
    fn cond(&mut self, depth: u32) -> String {
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

    fn str_expr(&mut self) -> String {
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
    fn str_cmp(&mut self) -> String {
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

    // --- statements

    /// `printf` of a few integer expressions and maybe strings.
    fn printf_stmt(&mut self, tag: &str, depth: u32) {
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

    fn new_int_var(&mut self) {
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

    fn update_int_var(&mut self) {
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

    fn string_stmts(&mut self) {
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

    fn tuple_stmts(&mut self) {
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

    fn if_stmt(&mut self) {
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
    fn maybe_exit(&mut self) {
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

    /// One of the loop forms, with an accumulator.
    fn loop_stmt(&mut self) {
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

    /// A new map with a few keys.
    fn new_map(&mut self) {
        let id = self.id();
        let key = match self.rng.below(6) {
            0 => Key::None,
            1 | 2 => {
                let cast = match self.rng.below(5) {
                    0 => Some(*self.rng.pick(&["uint8", "int8", "uint16", "int16"])),
                    _ => None,
                };
                Key::Int(cast)
            }
            3 | 4 => Key::Str,
            _ => Key::Tuple(self.rng.below(TUPLE_SHAPES.len())),
        };
        let val = match self.rng.below(14) {
            0 | 1 => Val::Int,
            13 => Val::Tuple,
            2 => Val::Str,
            3 => Val::Count,
            4 => Val::Sum,
            5 => Val::Avg,
            6 => Val::Min,
            7 => Val::Max,
            8 => Val::Stats,
            9 | 10 => Val::Hist(*self.rng.pick(&[0, 0, 1, 2, 3, 5])),
            _ => {
                let (lo, hi, step) = *self.rng.pick(&[
                    (0, 100, 10),
                    (-50, 50, 25),
                    (0, 10, 1),
                    (100, 1000, 300),
                    (-1000, 0, 7),
                ]);
                Val::Lhist(lo, hi, step)
            }
        };
        let prefix = match val {
            Val::Int | Val::Str | Val::Tuple => "m",
            _ => "a",
        };
        let name = format!("@{prefix}{id}");
        let nkeys = match key {
            Key::None => 1,
            _ => self.rng.range(1, 5) as usize,
        };
        let mut keys: Vec<String> = match key {
            Key::None => vec![String::new()],
            Key::Int(cast) => {
                let pool = int_keys(cast);
                pick_distinct(&mut self.rng, pool, nkeys)
                    .into_iter()
                    .map(|k| match cast {
                        Some(c) => format!("({c}){k}"),
                        None => k.to_string(),
                    })
                    .collect()
            }
            Key::Str => pick_distinct(&mut self.rng, STR_LITS, nkeys)
                .into_iter()
                .map(str::to_string)
                .collect(),
            Key::Tuple(t) => {
                let shape = TUPLE_SHAPES[t];
                let (cast, _) = tuple_distinct(shape);
                let ds = pick_distinct(&mut self.rng, int_keys(cast), nkeys);
                ds.into_iter()
                    .map(|d| tuple_key(&mut self.rng, shape, Some(d)))
                    .collect()
            }
        };
        // Values: for maps printed by value with several keys, key `i` gets values whose low
        // four bits are `i` (sums of an odd number of them keep it distinct).
        let distinct = val.by_value() && keys.len() > 1;
        // Integer values of one width for the whole map.
        let value_cast = if self.rng.chance(1, 3) {
            Some(*self.rng.pick(CASTS))
        } else {
            None
        };
        // The same odd number of values for every key.
        let sum_times = *self.rng.pick(&[1, 3]);
        let before = self.out.len();
        for (i, k) in keys.clone().iter().enumerate() {
            let target = map_ref(&name, key, k);
            match val {
                Val::Int => {
                    let e = self.int_expr(2);
                    let v = if distinct {
                        format!("(({e}) << 4) | {i}")
                    } else {
                        e
                    };
                    // Narrow values keep their low four bits.
                    let v = match value_cast {
                        Some(c) => format!("({c})({v})"),
                        None => v,
                    };
                    self.line(&format!("{target} = {v};"));
                }
                Val::Str => {
                    let s = self.str_expr();
                    self.line(&format!("{target} = {s};"));
                }
                Val::Tuple => {
                    let a = self.int_expr(2);
                    let s = self.str_expr();
                    self.line(&format!("{target} = ({a}, {s});"));
                }
                Val::Count => {
                    let times = if distinct {
                        i + 1
                    } else {
                        self.rng.range(1, 3) as usize
                    };
                    if times > 1 && self.rng.chance(1, 2) {
                        self.line(&format!("unroll({times}) {{ {target} = count(); }}"));
                    } else {
                        for _ in 0..times {
                            self.line(&format!("{target} = count();"));
                        }
                    }
                }
                _ => {
                    let times = if distinct {
                        sum_times
                    } else {
                        self.rng.range(1, 3) as usize
                    };
                    for _ in 0..times {
                        if !self.scratch_fits(key, val) {
                            break;
                        }
                        let e = self.int_expr(2);
                        let v = if distinct {
                            format!("(({e}) << 4) | {i}")
                        } else {
                            e
                        };
                        self.line(&format!("{target} = {};", agg_call(val, &v)));
                    }
                }
            }
        }
        if key == Key::None {
            keys = vec![String::new()];
        }
        if self.out.len() == before {
            // Nothing fitted the scratch budget: the map does not exist.
            return;
        }
        self.maps.push(MapInfo {
            name,
            key,
            val,
            keys,
        });
    }

    /// Whether one more update site of a `val` map keyed by `key` stays within the scratch
    /// budget (and takes its share if so).
    fn scratch_fits(&mut self, key: Key, val: Val) -> bool {
        let buckets = match (key, val) {
            (Key::None, _) => 0,
            (_, Val::Hist(b)) => (64usize << b) + 2,
            (_, Val::Lhist(lo, hi, step)) => ((hi - lo) / step) as usize + 3,
            _ => 0,
        };
        if self.scratch + buckets * 8 > 20_000 {
            return false;
        }
        self.scratch += buckets * 8;
        true
    }

    /// An update of an existing map that keeps its printed order deterministic.
    fn map_store(&mut self) {
        if self.maps.is_empty() {
            return;
        }
        let i = self.rng.below(self.maps.len());
        let (name, key, val, nkeys) = {
            let m = &self.maps[i];
            (m.name.clone(), m.key, m.val, m.keys.len())
        };
        if nkeys == 0 {
            return;
        }
        if val.by_value() && nkeys > 1 {
            // Keep the distinct values distinct: only maps that sort by key change here.
            return;
        }
        let k = self.maps[i].keys[0].clone();
        let target = map_ref(&name, key, &k);
        match val {
            Val::Int => {
                let op = self.rng.pick(&["=", "+=", "-=", "*=", "^=", "<<="]);
                let e = self.int_expr(2);
                self.line(&format!("{target} {op} {e};"));
                if self.rng.chance(1, 3) {
                    self.line(&format!("{target}++;"));
                }
            }
            Val::Str => {
                let s = self.str_expr();
                self.line(&format!("{target} = {s};"));
            }
            Val::Tuple => {
                let a = self.int_expr(2);
                let s = self.str_expr();
                self.line(&format!("{target} = ({a}, {s});"));
            }
            _ => {
                if !self.scratch_fits(key, val) {
                    return;
                }
                let e = self.int_expr(2);
                self.line(&format!("{target} = {};", agg_call(val, &e)));
            }
        }
    }

    /// Reads, prints and changes maps.
    fn map_ops(&mut self) {
        if self.maps.is_empty() {
            return self.new_map();
        }
        let i = self.rng.below(self.maps.len());
        let (name, key, val) = {
            let m = &self.maps[i];
            (m.name.clone(), m.key, m.val)
        };
        match self.rng.below(10) {
            0 | 1 => self.line(&format!("print({name});")),
            2 => {
                let top = self.rng.range(0, 3);
                if val.readable() && self.rng.chance(1, 2) {
                    let div = self.rng.pick(&["1", "2", "3", "10", "1000"]);
                    self.line(&format!("print({name}, {top}, {div});"));
                } else {
                    self.line(&format!("print({name}, {top});"));
                }
            }
            3 => {
                let k = self.some_key(i);
                let hk = match key {
                    Key::None => String::new(),
                    Key::Tuple(_) => format!(", ({k})"),
                    _ => format!(", {k}"),
                };
                if key == Key::None {
                    self.line(&format!("printf(\"len %d\\n\", len({name}));"));
                } else {
                    self.line(&format!(
                        "printf(\"len %d has %d\\n\", len({name}), has_key({name}{hk}));"
                    ));
                }
            }
            4 if key != Key::None => {
                let j = self.rng.below(self.maps[i].keys.len().max(1));
                let Some(k) = self.maps[i].keys.get(j).cloned() else {
                    return;
                };
                // `delete(@m[k])` of an aggregation is refused by the checker (reported).
                if self.rng.chance(1, 3) {
                    // delete() is true when the key was there.
                    let arg = if matches!(key, Key::Tuple(_)) {
                        format!("({k})")
                    } else {
                        k
                    };
                    // The second delete of the same key is false.
                    self.line(&format!(
                        "printf(\"deleted %d %d\\n\", delete({name}, {arg}), delete({name}, {arg}));"
                    ));
                } else if self.rng.chance(1, 2) || !matches!(val, Val::Int | Val::Str | Val::Tuple)
                {
                    let arg = if matches!(key, Key::Tuple(_)) {
                        format!("({k})")
                    } else {
                        k
                    };
                    self.line(&format!("delete({name}, {arg});"));
                } else {
                    self.line(&format!("delete({});", map_ref(&name, key, &k)));
                }
                // Deleting keeps the others distinct; the key is gone for good (a later store
                // to it could break distinctness).
                self.maps[i].keys.remove(j);
            }
            5 if !self.maps[i].keys.is_empty() => {
                self.line(&format!("clear({name});"));
                self.maps[i].keys.clear();
            }
            6 if (!val.by_value() || self.maps[i].keys.len() <= 1)
                && !matches!(val, Val::Str | Val::Tuple) =>
            {
                // zero() of a map printed by value makes ties.
                self.line(&format!("zero({name});"));
            }
            7 if val == Val::Int && key != Key::None && !self.in_callback => {
                // Hash order: only order-independent accumulations.
                let acc = format!("$it{}", self.id());
                let x = format!("$x{}", self.id());
                let n = format!("$n{}", self.id());
                self.line(&format!("{acc} = 0; {x} = 0; {n} = 0;"));
                self.line(&format!("for ($kv : {name}) {{"));
                self.indent += 1;
                self.line(&format!("{acc} += $kv.1; {n}++;"));
                match key {
                    Key::Int(_) => self.line(&format!("{x} ^= $kv.0 << 3;")),
                    Key::Str => self.line(&format!("{x} += strncmp($kv.0, \"ab\", 2);")),
                    Key::Tuple(t) => {
                        let (_, di) = tuple_distinct(TUPLE_SHAPES[t]);
                        self.line(&format!("{x} |= $kv.0.{di};"));
                    }
                    Key::None => {}
                }
                self.indent -= 1;
                self.line("}");
                self.line(&format!(
                    "printf(\"iter %lld %lld %d\\n\", {acc}, {x}, {n});"
                ));
            }
            _ => self.map_store(),
        }
    }

    /// A key of map `i` (present or not), as its argument list.
    fn some_key(&mut self, i: usize) -> String {
        let key = self.maps[i].key;
        if !self.maps[i].keys.is_empty() && self.rng.chance(2, 3) {
            return self.rng.pick(&self.maps[i].keys).clone();
        }
        match key {
            Key::None => String::new(),
            Key::Int(cast) => {
                let k = self.rng.pick(int_keys(cast));
                match cast {
                    Some(c) => format!("({c}){k}"),
                    None => k.to_string(),
                }
            }
            Key::Str => self.rng.pick(STR_LITS).to_string(),
            Key::Tuple(t) => tuple_key(&mut self.rng, TUPLE_SHAPES[t], None),
        }
    }

    /// One whole script and its positional arguments.
    fn script(&mut self) -> (String, Vec<String>) {
        let mut args = Vec::new();
        if self.rng.chance(1, 8) {
            self.positional = true;
            let a = *self.rng.pick(&[
                "0",
                "1",
                "7",
                "-1",
                "255",
                "-128",
                "2147483648",
                "-9223372036854775808",
                "9223372036854775807",
            ]);
            args.push(a.to_string());
        }
        let code = if self.rng.chance(1, 8) {
            self.rng.range(1, 5)
        } else {
            0
        };
        // An exit() in the middle only when the script's exit code is 0 either way.
        self.early_exit = code == 0 && self.rng.chance(1, 6);
        if self.rng.chance(1, 5) {
            // An earlier BEGIN probe: its maps are there for the next one.
            self.out.push_str("BEGIN {\n");
            self.printf_stmt("first", 2);
            self.new_map();
            self.out.push_str("}\n");
            self.ivars.clear();
            self.svars.clear();
            self.tvars.clear();
        }
        self.out.push_str("BEGIN {\n");
        let n = self.rng.range(3, 7);
        for k in 0..n {
            match self.rng.below(12) {
                0 | 1 => self.printf_stmt(&format!("p{k}"), 3),
                2 => self.new_int_var(),
                3 => self.update_int_var(),
                4 => self.string_stmts(),
                5 => self.tuple_stmts(),
                6 => self.if_stmt(),
                7 if !self.in_loop => self.loop_stmt(),
                8 => self.new_map(),
                9 | 10 => self.map_ops(),
                _ => self.new_map(),
            }
            self.maybe_exit();
        }
        if code == 0 && self.rng.chance(1, 2) {
            self.line("exit();");
        } else {
            self.line(&format!("exit({code});"));
        }
        self.out.push_str("}\n");
        if self.rng.chance(1, 3) {
            self.out.push_str("END {\n");
            // Scratch variables do not cross probes.
            self.ivars.clear();
            self.svars.clear();
            self.tvars.clear();
            self.printf_stmt("end", 2);
            for _ in 0..self.rng.range(0, 2) {
                self.map_ops();
            }
            self.out.push_str("}\n");
        }
        (std::mem::take(&mut self.out), args)
    }
}

/// `@name`, `@name[k]` or `@name[a, b]`.
fn map_ref(name: &str, key: Key, k: &str) -> String {
    match key {
        Key::None => name.to_string(),
        _ => format!("{name}[{k}]"),
    }
}

/// The aggregation call that stores `e` into a map of `val`.
fn agg_call(val: Val, e: &str) -> String {
    match val {
        Val::Count => "count()".to_string(),
        Val::Sum => format!("sum({e})"),
        Val::Avg => format!("avg({e})"),
        Val::Min => format!("min({e})"),
        Val::Max => format!("max({e})"),
        Val::Stats => format!("stats({e})"),
        Val::Hist(0) => format!("hist({e})"),
        Val::Hist(b) => format!("hist({e}, {b})"),
        Val::Lhist(lo, hi, step) => format!("lhist({e}, {lo}, {hi}, {step})"),
        Val::Int | Val::Str | Val::Tuple => e.to_string(),
    }
}

/// `n` distinct elements of `pool` (fewer if it is smaller), in random order.
fn pick_distinct<'a>(rng: &mut Rng, pool: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut idx: Vec<usize> = (0..pool.len()).collect();
    let mut out = Vec::new();
    while out.len() < n && !idx.is_empty() {
        let j = rng.below(idx.len());
        out.push(pool[idx.swap_remove(j)]);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Running

/// What one engine did with one script.
fn run_engine(engine: &str, script: &str, extra: &[&str], args: &[String]) -> Output {
    let mut argv: Vec<&str> = vec!["--engine", engine, "-q"];
    argv.extend_from_slice(extra);
    argv.extend_from_slice(&["-e", script]);
    if !args.is_empty() {
        argv.push("--");
        argv.extend(args.iter().map(String::as_str));
    }
    run_sonde_timeout(&argv, RUN_TIMEOUT)
}

/// A difference between the engines, or a run that did not work in the reference engine.
struct Failure {
    what: String,
    script: String,
    args: Vec<String>,
    bpf: Output,
    jit: Output,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "=== {}", self.what)?;
        writeln!(f, "--- script (args {:?}):\n{}", self.args, self.script)?;
        for (name, o) in [("bpf", &self.bpf), ("jit", &self.jit)] {
            writeln!(
                f,
                "--- {name}: exit {:?}{}\n{}--- {name} stderr:\n{}",
                o.code,
                if o.timed_out { " (timed out)" } else { "" },
                o.stdout,
                o.stderr
            )?;
        }
        Ok(())
    }
}

/// The diagnostics of limits of the kernel engine a generated script may run into (the BPF
/// stack frame, 16-bit jump offsets, the 32 KiB scratch value, the verifier's budget): such
/// scripts are counted, not compared.
const KERNEL_LIMITS: &[&str] = &[
    "sonde::codegen::stack_overflow",
    "sonde::codegen::too_large",
    "sonde::load::map_create",
    "BPF program is too large",
];

/// What a comparison found.
enum Outcome {
    Same,
    /// The kernel engine refused the script for one of its limits.
    Skipped(&'static str),
    Failed(Box<Failure>),
}

/// Runs `script` through both engines (with `extra` flags) and compares them. `code` is the
/// exit status the script asks for.
fn compare(
    what: &str,
    script: &str,
    extra: &[&str],
    args: &[String],
    code: Option<i32>,
) -> Outcome {
    let bpf = run_engine("bpf", script, extra, args);
    if bpf.code == Some(1)
        && let Some(limit) = KERNEL_LIMITS.iter().find(|l| bpf.stderr.contains(*l))
    {
        return Outcome::Skipped(limit);
    }
    let jit = run_engine("jit", script, extra, args);
    let problem = if bpf.timed_out || jit.timed_out {
        Some("timed out")
    } else if bpf.stdout != jit.stdout {
        Some("stdout differs")
    } else if bpf.code != jit.code {
        Some("exit status differs")
    } else if code.is_some() && bpf.code != code {
        Some("the reference engine failed")
    } else if bpf.stderr.contains("panicked") || jit.stderr.contains("panicked") {
        Some("panic")
    } else {
        None
    };
    match problem {
        None => Outcome::Same,
        Some(p) => Outcome::Failed(Box::new(Failure {
            what: format!("{what}: {p}"),
            script: script.to_string(),
            args: args.to_vec(),
            bpf,
            jit,
        })),
    }
}

/// The exit code `exit(N)` asks for in a generated script (the last `exit` of BEGIN).
fn expected_code(script: &str) -> i32 {
    let Some(i) = script.rfind("exit(") else {
        return 0;
    };
    let rest = &script[i + 5..];
    rest[..rest.find(')').unwrap_or(0)].parse().unwrap_or(0)
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `jobs` on a few threads (each run is one process of one engine) and collects the
/// outcomes in job order.
fn run_all<J: Sync>(jobs: &[J], run: impl Fn(&J) -> Vec<Outcome> + Sync) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Vec<Outcome>)>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let f = run(job);
                    results.lock().unwrap().push((i, f));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().flat_map(|(_, f)| f).collect()
}

/// Fails listing every failure in a line and the first few in full. `max_skipped` is how many
/// runs may hit a limit of the kernel engine.
fn report(outcomes: Vec<Outcome>, kind: &str, max_skipped: usize) {
    let total = outcomes.len();
    let mut skipped: Vec<&str> = Vec::new();
    let mut failures: Vec<Failure> = Vec::new();
    for o in outcomes {
        match o {
            Outcome::Same => {}
            Outcome::Skipped(l) => skipped.push(l),
            Outcome::Failed(f) => failures.push(*f),
        }
    }
    eprintln!(
        "{total} runs of {kind}: {} differ or failed, {} skipped for kernel-engine limits",
        failures.len(),
        skipped.len(),
    );
    for l in KERNEL_LIMITS {
        let n = skipped.iter().filter(|s| *s == l).count();
        if n > 0 {
            eprintln!("  {n} x {l}");
        }
    }
    assert!(
        skipped.len() <= max_skipped,
        "{} of {total} runs of {kind} hit a limit of the kernel engine (at most {max_skipped} may): \
         the generator makes programs too big",
        skipped.len()
    );
    if failures.is_empty() {
        return;
    }
    let mut msg = format!(
        "{} of {total} runs of {kind} differ between the engines (or failed):\n",
        failures.len()
    );
    for f in &failures {
        let first = |o: &Output| o.stderr.lines().next().unwrap_or("").to_string();
        let _ = writeln!(
            msg,
            "  {} [bpf: {:?} {}] [jit: {:?} {}]",
            f.what,
            f.bpf.code,
            first(&f.bpf),
            f.jit.code,
            first(&f.jit)
        );
    }
    msg.push_str("the first ones in full:\n");
    for f in failures.iter().take(4) {
        let _ = writeln!(msg, "{f}");
    }
    panic!("{msg}");
}

#[test]
fn random_scripts_print_the_same_in_both_engines() {
    if skip_unless_root("random_scripts_print_the_same_in_both_engines") {
        return;
    }
    let seed0 = env_num("SONDE_DIFF_SEED", 1);
    let n = env_num("SONDE_DIFF_N", SCRIPTS as u64) as usize;
    let dump = std::env::var_os("SONDE_DIFF_DUMP").map(std::path::PathBuf::from);
    let scripts: Vec<(u64, String, Vec<String>)> = (0..n as u64)
        .map(|k| {
            let seed = seed0 + k;
            let (s, a) = Gen::new(seed).script();
            (seed, s, a)
        })
        .collect();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).unwrap();
        for (seed, s, a) in &scripts {
            std::fs::write(dir.join(format!("{seed}.sd")), s).unwrap();
            std::fs::write(dir.join(format!("{seed}.args")), a.join(" ")).unwrap();
        }
    }
    let start = Instant::now();
    let outcomes = run_all(&scripts, |(seed, script, args)| {
        let code = Some(expected_code(script));
        let mut o = vec![compare(&format!("seed {seed}"), script, &[], args, code)];
        if seed.is_multiple_of(JSON_EVERY as u64) {
            o.push(compare(
                &format!("seed {seed} (-f json)"),
                script,
                &["-f", "json"],
                args,
                code,
            ));
        }
        o
    });
    eprintln!(
        "{n} scripts (seeds {seed0}..{}) in {:.1?}",
        seed0 + n as u64,
        start.elapsed()
    );
    report(outcomes, "generated scripts", n / 20);
}

// ---------------------------------------------------------------------------------------------
// Hand-written scripts

/// Compares hand-written scripts (each run as is and, for some, with `-f json`); `stderr_too`
/// lists substrings of stderr lines that must also match between the engines (warnings the
/// session prints, like lost events).
fn compare_scripts(kind: &str, scripts: &[(&str, i32)], json: bool, stderr_too: &[&str]) {
    let jobs: Vec<(usize, &str, i32)> = scripts
        .iter()
        .enumerate()
        .map(|(i, (s, c))| (i, *s, *c))
        .collect();
    let outcomes = run_all(&jobs, |&(i, script, code)| {
        let mut o = vec![compare(
            &format!("{kind} #{i}"),
            script,
            &[],
            &[],
            Some(code),
        )];
        if json {
            o.push(compare(
                &format!("{kind} #{i} (-f json)"),
                script,
                &["-f", "json"],
                &[],
                Some(code),
            ));
        }
        if let Some(Outcome::Failed(_)) = o.first() {
            return o;
        }
        if !stderr_too.is_empty() {
            let bpf = run_engine("bpf", script, &[], &[]);
            let jit = run_engine("jit", script, &[], &[]);
            let pick = |o: &Output| {
                o.stderr
                    .lines()
                    .filter(|l| stderr_too.iter().any(|s| l.contains(s)))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            if pick(&bpf) != pick(&jit) {
                o.push(Outcome::Failed(Box::new(Failure {
                    what: format!("{kind} #{i}: warnings on stderr differ"),
                    script: script.to_string(),
                    args: Vec::new(),
                    bpf,
                    jit,
                })));
            }
        }
        o
    });
    report(outcomes, kind, 0);
}

/// `interval` probes with `exit()` after a count. The kernel probe can fire again between
/// `exit()` and the detach (as in bpftrace; more likely on a loaded machine), which the
/// userspace engine, stopping at once, never does: each probe's predicate makes such a late
/// tick change nothing.
#[test]
fn interval_scripts_print_the_same_in_both_engines() {
    if skip_unless_root("interval_scripts_print_the_same_in_both_engines") {
        return;
    }
    let scripts: &[(&str, i32)] = &[
        (
            r#"interval:ms:20 /@n < 5/ { @n++; printf("tick %d\n", @n); if (@n == 5) { exit(); } }
END { printf("end %d\n", @n); }"#,
            0,
        ),
        (
            r#"BEGIN { @base = -3; @name = "start"; }
interval:ms:25 /@n < 4/ {
  @ticks = count();
  @n++;
  @h = hist(@n * 1000 + @base);
  @l = lhist(@n * 7 - 20, -20, 20, 5);
  @s = stats(@n - 10);
  @a[@n % 2] = avg(@n * -5);
  @mn = min(-@n); @mx = max(@n << 40);
  if (@n == 3) { print(@h); print(@s); clear(@l); zero(@a); }
  if (@n == 4) { @name = "four"; exit(3); }
}"#,
            3,
        ),
        (
            r#"interval:hz:40 /@n < 6/ {
  @k[@n % 3 == 0 ? "fizz" : "other", @n] = @n * 16 + @n;
  @n++;
  if (@n == 6) {
    print(@k, 2);
    printf("len %d has %d %d\n", len(@k), has_key(@k, ("fizz", 3)), has_key(@k, ("fizz", 4)));
    printf("deleted %d\n", delete(@k, ("other", 1)));
    $sum = 0; $c = 0;
    for ($kv : @k) { $sum += $kv.1; $c++; }
    printf("sum %d over %d\n", $sum, $c);
    exit();
  }
}"#,
            0,
        ),
        (
            r#"BEGIN { printf("%-6s|%6s|\n", "begin", "here"); }
interval:ms:20 /@i < 4/ {
  @i++;
  for ($j : 0..@i) { @sq[$j] = $j * $j * 16 + $j; }
  $t = (@i, "tick", (int8)-@i);
  print($t);
  printf("%08x %-5d %u %lld %c\n", @i << 28, -@i, (uint32)-@i, (int64)@i << 62, 64 + @i);
  if (@i >= 4) { exit(); }
}
END { print(@sq, 3); clear(@sq); printf("bye\n"); }"#,
            0,
        ),
        (
            r#"i:25ms /@n <= 4/ {
  @s[@n] = "s";
  @str = @n % 2 == 0 ? "even" : "odd";
  if (@str == "even") { @evens = count(); }
  @n++;
  if (@n > 4) { printf("%s %d %d\n", @str, strncmp(@str, "oddity", 3), @n); exit(); }
}"#,
            0,
        ),
    ];
    let start = Instant::now();
    compare_scripts("interval scripts", scripts, true, &[]);
    eprintln!(
        "{} interval scripts in {:.1?}",
        scripts.len(),
        start.elapsed()
    );
}

/// Limits the kernel imposes that the userspace engine reproduces: the ring buffer's
/// capacity (records lost when a probe prints more than it holds) and full maps.
#[test]
fn kernel_limits_are_the_same_in_both_engines() {
    if skip_unless_root("kernel_limits_are_the_same_in_both_engines") {
        return;
    }
    let scripts: &[(&str, i32)] = &[
        (
            r#"BEGIN { for ($i : 0..100000) { printf("%d %s\n", $i, "abcdefghijklmnop"); } exit(); }"#,
            0,
        ),
        (
            r#"BEGIN { for ($i : 0..60000) { printf("%d\n", $i); if ($i % 3 == 0) { print(($i, "x")); } } exit(); }"#,
            0,
        ),
        (
            r#"config = { max_map_keys = 10 }
BEGIN { for ($i : 0..20) { @m[$i] = $i * 16 + $i; @h[$i] = hist($i); @c[$i % 13] = sum($i * 16 + $i % 13); }
  printf("%d %d %d\n", len(@m), len(@h), len(@c)); exit(); }"#,
            0,
        ),
    ];
    compare_scripts(
        "kernel limits",
        scripts,
        false,
        &["Lost", "map updates failed"],
    );
}
