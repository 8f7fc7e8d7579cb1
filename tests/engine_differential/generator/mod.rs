//! The generator of random scripts over the language both engines run: integer arithmetic
//! of every operator on every width and signedness with literals at the edges, comparisons,
//! logic, ternaries, `if`, `while`, `unroll` and `for` loops, scratch variables, strings,
//! tuples, maps with integer, string and tuple keys, every aggregation, map functions, and
//! printf formats.
//!
//! Scripts are written so that their output does not depend on anything but the script:
//! no time, pids or random numbers; no printing inside `for ($kv : @map)` (hash order); and
//! every map that prints sorted by value (plain integers, `count`, `sum`, `min`, `max`) with
//! more than one key holds distinct values, since ties print in the kernel's hash order.
//!
//! They must stay within the kernel engine's resource limits (the 512-byte BPF stack, 16-bit
//! jump offsets, the 32 KiB scratch value, the verifier's instruction budget). Expressions in
//! `while` and `unroll` bodies are branch-free, so that the verifier's work stays linear in
//! the iterations.
//!
//! [`exprs`] makes expressions, [`stmts`] statements, [`loops`] loops, [`maps`] maps and
//! their updates; this module the whole script.

mod exprs;
mod loops;
mod maps;
mod stmts;

use crate::common::rng::Rng;
use maps::MapInfo;

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

pub(crate) struct Gen {
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

impl Gen {
    pub(crate) fn new(seed: u64) -> Gen {
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

    /// One whole script and its positional arguments.
    pub(crate) fn script(&mut self) -> (String, Vec<String>) {
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
