//! Maps of generated scripts: what they hold and how they are keyed, their creation with a
//! few keys, and updates, reads and map functions that keep their printed order
//! deterministic.

use super::{CASTS, Gen, STR_LITS, pick_distinct};
use crate::common::rng::Rng;

/// What a map holds.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Val {
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
    pub(super) fn by_value(self) -> bool {
        matches!(self, Val::Int | Val::Count | Val::Sum | Val::Min | Val::Max)
    }

    /// Can be read as an integer in an expression.
    pub(super) fn readable(self) -> bool {
        matches!(self, Val::Int | Val::Count | Val::Sum | Val::Min | Val::Max)
    }
}

/// How a map is keyed.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Key {
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

pub(super) struct MapInfo {
    pub(super) name: String,
    pub(super) key: Key,
    pub(super) val: Val,
    /// The distinct key expressions of this map, by index.
    pub(super) keys: Vec<String>,
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
    /// A new map with a few keys.
    pub(super) fn new_map(&mut self) {
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
    pub(super) fn scratch_fits(&mut self, key: Key, val: Val) -> bool {
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
    pub(super) fn map_store(&mut self) {
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
    pub(super) fn map_ops(&mut self) {
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
                    // len() of a map without keys is an error (bpftrace 0.27): print it.
                    self.line(&format!("print({name});"));
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
}

/// `@name`, `@name[k]` or `@name[a, b]`.
pub(super) fn map_ref(name: &str, key: Key, k: &str) -> String {
    match key {
        Key::None => name.to_string(),
        _ => format!("{name}[{k}]"),
    }
}

/// The aggregation call that stores `e` into a map of `val`.
pub(super) fn agg_call(val: Val, e: &str) -> String {
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
