//! The `input` probe, awk's job in the userspace engine, compared with mawk on generated
//! files (the engine's other edges are in `engine_input_edges.rs`).
//!
//! None of these tests needs root. The mawk comparison is skipped (with a message) when mawk
//! is not installed.
//!
//! What `sonde_matches_mawk_on_generated_files` compares, per file, with the same script in
//! both languages (`sonde_script` and `MAWK_SCRIPT`):
//! - the number of lines: `@lines = count()` and `@nr = nr` (the last `nr`) against `NR`;
//! - the sum of NF: `@nf = sum(nf)` against `nf += NF`;
//! - the count of lines grouped by field 1: `@by[field(1)] = count()` against `by[$1]++`,
//!   compared as sets (sonde prints maps sorted by value, awk's `for (k in by)` in hash order);
//! - the sum of `num(field(2))` against the sum of awk's `int($2)`: `num()` keeps the leading
//!   number of the string and drops its fraction toward zero, which is what `int()` does to
//!   awk's conversion of the same string ("-12.7abc" is -12 in both). Numbers are generated
//!   with at most 10 significant digits and exponents up to 4, so awk's doubles hold every
//!   value and every sum exactly; awk prints the sum with `%.0f` (mawk's `%d` stops at 2^31);
//! - fields 1, 2, 3, 7, 14 and `$NF`, one `printf` line per input line, in order;
//! - `line` against `substr($0, 1, 255)` (`line` is a 256-byte string).
//!
//! Generated files have runs of blanks and tabs, leading and trailing blanks, empty and
//! blank-only lines, lines with one field, lines longer than 255 bytes and longer than 64 KiB
//! (one file a line longer than the engine's first 1 MiB buffer), CRLF line ends, no final
//! newline, bytes that are not UTF-8, and numbers with signs, fractions, exponents and garbage
//! suffixes. They are read from stdin as a file, from stdin through a pipe written in random
//! chunks, and through `input:PATH`. The same is done with `-F ,`, `-F '\t'` and `-F ::`
//! against `mawk -F` (sonde's multi-character separator is literal where awk's is a regular
//! expression; `::` means the same in both). `number_edges_convert_as_mawk_int` compares
//! `num()` with `int()` on a list of hand-picked numbers.
//!
//! Left out of the generated files, because sonde differs from mawk there on purpose or by
//! design (see `known_differences_from_mawk`): fields of 64 bytes or more (sonde's strings are
//! `max_strlen` bytes, so fields are cut to 63 bytes), NUL bytes (sonde's strings end at the
//! first NUL), hexadecimal numbers and `inf`/`nan` (mawk converts them through strtod; sonde
//! reads decimal numbers only, as gawk and POSIX awk do), numbers of more than 15 significant
//! digits (awk's doubles round them, sonde reads 30 digits exactly and saturates at the `i64`
//! range), lines longer than 16 MiB (a record holds a line's first 16 MiB, to bound sonde's
//! memory; see `engine_input_files.rs`), and `-F t` (mawk splits on the
//! letter t; sonde, like gawk and the one true awk, on a tab).
//!
//! Knobs: `SONDE_INPUT_SEED` (first seed), `SONDE_INPUT_FILES` (files with the default
//! splitting; half as many with each `-F`),
//! `SONDE_INPUT_KEEP=DIR` (keep every generated file in DIR).

mod common;

use common::TempDir;
use common::bytes::{Input, run_raw, sonde_raw, sonde_with_stdin, text, write_file};
use common::rng::Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::{self};
use std::time::Instant;

/// Generated files with the default splitting, half as many with each `-F` separator
/// (`SONDE_INPUT_FILES` overrides it).
const FILES: usize = 8;

/// The mawk binary, when installed.
fn mawk() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/mawk");
    if fixed.exists() {
        return Some(fixed);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("mawk"))
            .find(|p| p.exists())
    })
}

// ---------------------------------------------------------------------------------------------
// The generator

/// How lines split into fields in a generated file.
#[derive(Clone, Copy, Debug)]
enum Sep {
    /// awk's default (runs of blanks).
    Blanks,
    /// `-F SEP`: the argument given to both sonde and mawk, and the bytes it separates on.
    Flag(&'static str, &'static [u8]),
}

/// Values of field 1, so that grouping by it makes groups.
const KEYS: &[&[u8]] = &[
    b"alpha",
    b"beta",
    b"GET",
    b"POST",
    b"d\xc3\xa9j\xc3\xa0",
    b"\xff\xfe",
    b"k:1",
    b"-",
    b"12",
    b"3.5x",
    b"a\"b\\c",
];

/// First bytes of a word: nothing that starts a number (digits, signs, `.`) or that strtod
/// reads as one (`inf`, `nan`, and `0x` needs a digit first).
const WORD_FIRST: &[u8] = b"abcdfghjklmopqrstuvwyzABCDFGHJKLMOPQRSTUVWYZ_#%@/=";
/// Later bytes of a word (never a blank, `\r`, `\n` or NUL).
const WORD_REST: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./%:@#=+,\"\\";
/// First bytes of a garbage suffix after a number: nothing that would continue it (digits,
/// `.`, an exponent) or make a hexadecimal number of a leading `0`.
const SUFFIX_FIRST: &[u8] = b"abcdfghkmqzABCDFGHKMQZ%#/_@";

fn word(rng: &mut Rng, max: usize) -> Vec<u8> {
    let len = rng.between(1, max);
    let mut w = Vec::with_capacity(len);
    w.push(if rng.chance(1, 12) {
        rng.high_byte()
    } else {
        *rng.pick(WORD_FIRST)
    });
    while w.len() < len {
        w.push(match rng.below(40) {
            0..=2 => rng.high_byte(),
            3 => *rng.pick(&[0x0b_u8, 0x0c]),
            _ => *rng.pick(WORD_REST),
        });
    }
    w
}

fn digits(rng: &mut Rng, lo: usize, hi: usize, out: &mut Vec<u8>) {
    for _ in 0..rng.between(lo, hi) {
        out.push(b'0' + rng.below(10) as u8);
    }
}

/// A number as a field holds one: sign, digits, fraction, exponent and garbage suffix, each
/// optional (at most 10 significant digits and exponents up to 4, so awk's doubles are exact
/// on every integer part and every sum).
fn number(rng: &mut Rng) -> Vec<u8> {
    let mut n = Vec::new();
    match rng.below(6) {
        0 => n.push(b'-'),
        1 => n.push(b'+'),
        _ => {}
    }
    match rng.below(12) {
        0..=4 => digits(rng, 1, 6, &mut n),
        5..=8 => {
            digits(rng, 1, 6, &mut n);
            n.push(b'.');
            digits(rng, 0, 4, &mut n);
        }
        9 | 10 => {
            n.push(b'.');
            digits(rng, 1, 4, &mut n);
        }
        // No digits at all: "-", "+", ".", "" (then the suffix or nothing).
        _ => {
            if rng.chance(1, 2) {
                n.push(b'.');
            }
        }
    }
    match rng.below(10) {
        0 => {
            n.push(*rng.pick(b"eE"));
            match rng.below(3) {
                0 => n.push(b'-'),
                1 => n.push(b'+'),
                _ => {}
            }
            n.push(b'0' + rng.below(5) as u8);
        }
        // A dangling exponent: "1e", "1e+".
        1 => {
            n.push(b'e');
            if rng.chance(1, 2) {
                n.push(b'+');
            }
        }
        _ => {}
    }
    if rng.chance(1, 5) {
        n.push(if rng.chance(1, 6) {
            rng.high_byte()
        } else {
            *rng.pick(SUFFIX_FIRST)
        });
        for _ in 0..rng.below(4) {
            n.push(*rng.pick(WORD_REST));
        }
    }
    if n.is_empty() {
        n.push(b'0');
    }
    n
}

/// Any field: a number, a word or a key (never more than 20 bytes).
fn any_field(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=3 => number(rng),
        4..=8 => word(rng, 12),
        _ => rng.pick(KEYS).to_vec(),
    }
}

/// A run of blanks.
fn blanks(rng: &mut Rng, lo: usize, hi: usize) -> Vec<u8> {
    (0..rng.between(lo, hi))
        .map(|_| if rng.chance(2, 3) { b' ' } else { b'\t' })
        .collect()
}

/// A field of a line split on a literal separator: maybe empty, maybe padded with blanks (the
/// blanks are part of the field), maybe with blanks inside.
fn sep_field(rng: &mut Rng, sep: &[u8]) -> Vec<u8> {
    let tab_sep = sep == b"\t";
    let pad = |rng: &mut Rng| -> Vec<u8> {
        if tab_sep {
            vec![b' '; rng.between(1, 3)]
        } else {
            blanks(rng, 1, 3)
        }
    };
    let mut f = Vec::new();
    if rng.chance(1, 10) {
        return f;
    }
    if rng.chance(1, 5) {
        f.extend(pad(rng));
    }
    f.extend(any_field(rng));
    if rng.chance(1, 6) {
        f.extend(pad(rng));
        f.extend(word(rng, 6));
    }
    if rng.chance(1, 5) {
        f.extend(pad(rng));
    }
    f
}

/// Joins fields the way a line separated by `sep` holds them.
fn join(fields: &[Vec<u8>], sep: Sep, rng: &mut Rng) -> Vec<u8> {
    let mut line = Vec::new();
    if let Sep::Blanks = sep
        && rng.chance(1, 4)
    {
        line.extend(blanks(rng, 1, 4));
    }
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            match sep {
                Sep::Blanks => line.extend(blanks(rng, 1, 4)),
                Sep::Flag(_, s) => line.extend_from_slice(s),
            }
        }
        line.extend_from_slice(f);
    }
    if let Sep::Blanks = sep
        && rng.chance(1, 4)
    {
        line.extend(blanks(rng, 1, 4));
    }
    line
}

/// A line of at least `min` bytes made of short fields.
fn long_line(rng: &mut Rng, sep: Sep, min: usize) -> Vec<u8> {
    let mut fields = vec![rng.pick(KEYS).to_vec(), number(rng)];
    let mut len = 0;
    while len < min {
        let f = match sep {
            Sep::Blanks => any_field(rng),
            Sep::Flag(_, s) => sep_field(rng, s),
        };
        len += f.len() + 2;
        fields.push(f);
    }
    join(&fields, sep, rng)
}

/// One generated line (without its end).
fn gen_line(rng: &mut Rng, sep: Sep) -> Vec<u8> {
    match rng.below(100) {
        // Empty.
        0..=5 => Vec::new(),
        // Blanks only.
        6..=8 => blanks(rng, 1, 6),
        // Longer than `line`'s 255 bytes.
        9..=11 => {
            let min = 256 + rng.below(300);
            long_line(rng, sep, min)
        }
        _ => {
            let n = match rng.below(10) {
                0 => 1,
                1 => 2,
                _ => rng.between(2, 16),
            };
            let mut fields = Vec::with_capacity(n);
            for i in 0..n {
                fields.push(match (i, sep) {
                    (0, _) if rng.chance(4, 5) => rng.pick(KEYS).to_vec(),
                    (1, _) if rng.chance(4, 5) => number(rng),
                    (_, Sep::Blanks) => any_field(rng),
                    (_, Sep::Flag(_, s)) => sep_field(rng, s),
                });
            }
            join(&fields, sep, rng)
        }
    }
}

/// A generated file: lines of every kind, one or two longer than 64 KiB (and, when `huge`,
/// one longer than the engine's first 1 MiB buffer), CRLF ends now and then, and maybe no
/// final newline.
fn gen_file(seed: u64, sep: Sep, huge: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let n = rng.between(150, 400);
    let long_at: Vec<usize> = (0..rng.between(1, 2)).map(|_| rng.below(n)).collect();
    let huge_at = rng.below(n);
    let mut data = Vec::new();
    for i in 0..n {
        let line = if huge && i == huge_at {
            long_line(&mut rng, sep, (1 << 20) + 200_000)
        } else if long_at.contains(&i) {
            let min = 65 * 1024 + rng.below(20_000);
            long_line(&mut rng, sep, min)
        } else {
            gen_line(&mut rng, sep)
        };
        data.extend_from_slice(&line);
        let last = i + 1 == n;
        if last && rng.chance(1, 2) {
            break;
        }
        data.extend_from_slice(if rng.chance(1, 8) { b"\r\n" } else { b"\n" });
    }
    data
}

// ---------------------------------------------------------------------------------------------
// The comparison

/// The awk side of the comparison; `sonde_script` is the sonde side.
const MAWK_SCRIPT: &str = r#"{
    nf += NF; by[$1]++; s += int($2);
    printf("F|%s|%s|%s|%s|%s|%s\n", $1, $2, $3, $7, $14, $NF);
    printf("L|%s\n", substr($0, 1, 255));
}
END {
    printf("@lines: %d\n@nr: %d\n@nf: %.0f\n@s: %.0f\n", NR, NR, nf, s);
    for (k in by) printf("@by[%s]: %d\n", k, by[k]);
}"#;

/// The sonde script, reading stdin or `input:PATH`.
fn sonde_script(path: Option<&Path>) -> String {
    let probe = match path {
        Some(p) => format!("input:{}", p.display()),
        None => "input".to_string(),
    };
    format!(
        r#"{probe} {{
    @lines = count(); @nr = nr; @nf = sum(nf); @by[field(1)] = count(); @s = sum(num(field(2)));
    printf("F|%s|%s|%s|%s|%s|%s\n", field(1), field(2), field(3), field(7), field(14), field(nf));
    printf("L|%s\n", line);
}}"#
    )
}

/// What one run printed, in a form both sides share.
#[derive(Debug, Default, PartialEq)]
struct Summary {
    /// The `F|` and `L|` lines, in order.
    rows: Vec<Vec<u8>>,
    /// `@lines`, `@nr`, `@nf`, `@s`.
    scalars: BTreeMap<String, i64>,
    /// `@by`, sorted by key.
    by: Vec<(Vec<u8>, i64)>,
    /// Lines that fit nothing above.
    other: Vec<Vec<u8>>,
}

fn parse_number(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    s.parse::<i64>()
        .ok()
        .or_else(|| s.parse::<f64>().ok().map(|f| f as i64))
}

fn summarize(stdout: &[u8]) -> Summary {
    let mut sum = Summary::default();
    for name in ["lines", "nr", "nf", "s"] {
        // A map no line updated is not printed: it stands for 0.
        sum.scalars.insert(name.to_string(), 0);
    }
    for line in stdout.split(|&b| b == b'\n') {
        if line.starts_with(b"F|") || line.starts_with(b"L|") {
            sum.rows.push(line.to_vec());
        } else if let Some(rest) = line.strip_prefix(b"@by[") {
            let at = rest.windows(3).rposition(|w| w == b"]: ");
            match at.and_then(|at| Some((at, parse_number(&rest[at + 3..])?))) {
                Some((at, v)) => sum.by.push((rest[..at].to_vec(), v)),
                None => sum.other.push(line.to_vec()),
            }
        } else if let Some(rest) = line.strip_prefix(b"@") {
            let at = rest.windows(2).position(|w| w == b": ");
            match at.and_then(|at| Some((at, parse_number(&rest[at + 2..])?))) {
                Some((at, v)) => {
                    sum.scalars.insert(text(&rest[..at]), v);
                }
                None => sum.other.push(line.to_vec()),
            }
        } else if !line.is_empty() {
            sum.other.push(line.to_vec());
        }
    }
    sum.by.sort();
    sum
}

/// Describes how `sonde` differs from `mawk` (empty when they agree).
fn differences(sonde: &Summary, mawk: &Summary) -> Vec<String> {
    let esc = |b: &[u8]| b.escape_ascii().to_string();
    let mut d = Vec::new();
    if sonde.scalars != mawk.scalars {
        d.push(format!(
            "totals: sonde {:?}, mawk {:?}",
            sonde.scalars, mawk.scalars
        ));
    }
    if sonde.by != mawk.by {
        let s: BTreeMap<_, _> = sonde.by.iter().cloned().collect();
        let m: BTreeMap<_, _> = mawk.by.iter().cloned().collect();
        let keys: std::collections::BTreeSet<_> = s.keys().chain(m.keys()).collect();
        let diff: Vec<String> = keys
            .into_iter()
            .filter(|k| s.get(*k) != m.get(*k))
            .take(5)
            .map(|k| format!("[{}] sonde {:?} mawk {:?}", esc(k), s.get(k), m.get(k)))
            .collect();
        d.push(format!("counts by field 1 differ: {}", diff.join("; ")));
    }
    if sonde.rows != mawk.rows {
        let i = sonde
            .rows
            .iter()
            .zip(&mawk.rows)
            .position(|(a, b)| a != b)
            .unwrap_or(sonde.rows.len().min(mawk.rows.len()));
        d.push(format!(
            "row {i} of {}/{} differs:\n  sonde: {}\n  mawk:  {}",
            sonde.rows.len(),
            mawk.rows.len(),
            sonde.rows.get(i).map_or("(none)".into(), |r| esc(r)),
            mawk.rows.get(i).map_or("(none)".into(), |r| esc(r)),
        ));
    }
    if !sonde.other.is_empty() {
        let lines: Vec<String> = sonde.other.iter().take(3).map(|l| esc(l)).collect();
        d.push(format!("unexpected sonde output: {}", lines.join(" / ")));
    }
    if !mawk.other.is_empty() {
        let lines: Vec<String> = mawk.other.iter().take(3).map(|l| esc(l)).collect();
        d.push(format!("unexpected mawk output: {}", lines.join(" / ")));
    }
    d
}

/// Generates one file, runs both sides on it and returns the differences found.
fn compare_one(dir: &TempDir, seed: u64, sep: Sep, huge: bool) -> Vec<String> {
    let data = gen_file(seed, sep, huge);
    let tag = match sep {
        Sep::Blanks => "blanks".to_string(),
        Sep::Flag(_, s) => format!("sep{}", s.iter().map(|b| b.to_string()).collect::<String>()),
    };
    let name = format!("{tag}-{seed}.txt");
    let path = write_file(dir, &name, &data);
    if let Some(keep) = std::env::var_os("SONDE_INPUT_KEEP") {
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::write(Path::new(&keep).join(&name), &data);
    }
    let flag: Vec<&str> = match sep {
        Sep::Blanks => vec![],
        Sep::Flag(f, _) => vec!["-F", f],
    };

    let mut awk = Command::new(mawk().expect("mawk"));
    awk.env("LC_ALL", "C")
        .args(&flag)
        .arg(MAWK_SCRIPT)
        .arg(&path);
    let m = run_raw(awk, Input::Null);
    let m = summarize(m.ok(&format!("mawk on {name}")));

    // How sonde reads the file: stdin as a file, stdin through a pipe, or input:PATH.
    let how = seed % 3;
    let script = sonde_script((how == 2).then_some(path.as_path()));
    let mut args = vec!["-q"];
    args.extend(&flag);
    args.extend(["-e", script.as_str()]);
    let (input, how) = match how {
        0 => (Input::File(&path), "stdin (file)"),
        1 => (Input::Pipe(&data, seed), "stdin (pipe)"),
        _ => (Input::Null, "input:PATH"),
    };
    let s = sonde_raw(&args, input);
    let s = summarize(s.ok(&format!("sonde on {name}")));

    let sep_name = match sep {
        Sep::Blanks => "default FS".to_string(),
        Sep::Flag(f, _) => format!("-F {f}"),
    };
    differences(&s, &m)
        .into_iter()
        .map(|d| format!("{name} ({sep_name}, {how}, {} bytes): {d}", data.len()))
        .collect()
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn sonde_matches_mawk_on_generated_files() {
    if mawk().is_none() {
        eprintln!("skipping sonde_matches_mawk_on_generated_files: mawk is not installed");
        return;
    }
    let seed0 = env_u64("SONDE_INPUT_SEED", 1);
    let files = env_u64("SONDE_INPUT_FILES", FILES as u64);
    let dir = TempDir::new("input-mawk");
    let seps = [
        Sep::Blanks,
        Sep::Flag(",", b","),
        Sep::Flag("\\t", b"\t"),
        Sep::Flag("::", b"::"),
    ];
    let start = Instant::now();
    let mut jobs = Vec::new();
    for (k, &sep) in seps.iter().enumerate() {
        // Fewer files with a separator than with the default splitting.
        let n = if k == 0 { files } else { files.div_ceil(2) };
        for i in 0..n {
            jobs.push((seed0 + i, sep, k == 0 && i == 0));
        }
    }
    // Two at a time: sonde and mawk each take one core.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(&(seed, sep, huge)) = jobs.get(i) else {
                        break;
                    };
                    let d = compare_one(&dir, seed, sep, huge);
                    found.lock().unwrap().extend(d);
                }
            });
        }
    });
    let found = found.into_inner().unwrap();
    eprintln!(
        "{} files compared with mawk in {:.1?}",
        jobs.len(),
        start.elapsed()
    );
    assert!(
        found.is_empty(),
        "sonde differs from mawk ({} differences; SONDE_INPUT_KEEP=DIR keeps the files):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The differences from mawk the generated files leave out, as sonde behaves: each is a
/// choice (decimal numbers only, `-F t` is a tab) or a limit of sonde's fixed-size strings.
#[test]
fn known_differences_from_mawk() {
    // Hexadecimal, inf and nan: mawk reads them through strtod (0x1A is 26, inf is infinite);
    // sonde reads decimal numbers only, as gawk and POSIX awk do with input data. Beyond the
    // `i64` range sonde saturates (awk: a double, or inf). Beyond 15 significant digits awk's
    // doubles round (0.99999999999999999999 is 1, 9007199254740993 is 9007199254740992);
    // sonde keeps 30 digits exactly.
    let out = sonde_with_stdin(
        &[
            "-q",
            "-e",
            r#"input { printf("%s=%lld\n", field(1), num(field(1))); }"#,
        ],
        b"0x1A\ninf\n-nan\n1e400\n-1e400\n99999999999999999999\n0.99999999999999999999\n9007199254740993\n",
    );
    assert_eq!(
        text(out.ok("numbers")),
        "0x1A=0\ninf=0\n-nan=0\n1e400=9223372036854775807\n-1e400=-9223372036854775808\n\
         99999999999999999999=9223372036854775807\n0.99999999999999999999=0\n\
         9007199254740993=9007199254740993\n\n\n"
    );
    // `-F t` splits on a tab (gawk, the one true awk); mawk splits on the letter t.
    let out = sonde_with_stdin(
        &[
            "-q",
            "-F",
            "t",
            "-e",
            r#"input { printf("%d [%s]\n", nf, field(1)); }"#,
        ],
        b"atb\tc\n",
    );
    assert_eq!(text(out.ok("-F t")), "2 [atb]\n\n\n");
    // A NUL byte ends a string: the field prints up to it (it still keys the map whole).
    let out = sonde_with_stdin(
        &[
            "-q",
            "-e",
            r#"input { printf("[%s] %d\n", field(1), nf); @[field(1)] = count(); }"#,
        ],
        b"a\0b 1\na\0c 2\n",
    );
    assert_eq!(text(out.ok("NUL")), "[a] 2\n[a] 2\n\n\n@[a]: 1\n@[a]: 1\n");
}

/// Numbers at the edges of awk's conversion, one a line split on commas (so that blanks and
/// control bytes lead and trail them), against `int()` of mawk.
#[test]
fn number_edges_convert_as_mawk_int() {
    let Some(mawk) = mawk() else {
        eprintln!("skipping number_edges_convert_as_mawk_int: mawk is not installed");
        return;
    };
    let cases: &[&[u8]] = &[
        b"0",
        b"-0",
        b"+0",
        b"0005",
        b"-0005.9",
        b"7",
        b"-7",
        b"+7",
        b".",
        b"-.",
        b"+.",
        b"+.5",
        b"-.5",
        b".5e1",
        b"5.",
        b"-5.",
        b"1e",
        b"1e+",
        b"1e-",
        b"1E2",
        b"1e+2",
        b"1e-2",
        b"1.e2",
        b".e2",
        b"e2",
        b"1e2.5",
        b"2.675e2",
        b"-2.675e2x",
        b"1.5e3x",
        b"12abc",
        b"12.7",
        b"-12.7",
        b"--5",
        b"+-5",
        b"-+5",
        b"- 5",
        b" 12",
        b"12 ",
        b"\t-3",
        b" \t +4.9 ",
        b"\r12",
        b"\x0b12",
        b"\x0c-12",
        b"7\x0b",
        b"7\r",
        b"1_000",
        b"1 000",
        b"123456789012",
        b"-98765432109.99",
        b"0.000000000000000000000000000000000000001e40",
        b"100000000000000000000000000000000e-30",
        b"4294967296",
        b"-2147483649",
        b"\xff12",
        b"12\xff",
        b"",
        b"abc",
        b"e",
        b"E5",
    ];
    let mut data = Vec::new();
    for c in cases {
        data.extend_from_slice(b"k,");
        data.extend_from_slice(c);
        data.push(b'\n');
    }
    let dir = TempDir::new("input-numbers");
    let path = write_file(&dir, "numbers.txt", &data);
    let mut awk = Command::new(mawk);
    awk.env("LC_ALL", "C")
        .args(["-F", ","])
        .arg(r#"{ printf("%.0f\n", int($2)); }"#)
        .arg(&path);
    let m = run_raw(awk, Input::Null);
    let m: Vec<i64> = text(m.ok("mawk"))
        .lines()
        .map(|l| parse_number(l.as_bytes()).expect("mawk number"))
        .collect();
    let s = sonde_raw(
        &[
            "-q",
            "-F",
            ",",
            "-e",
            r#"input { printf("%lld\n", num(field(2))); }"#,
        ],
        Input::File(&path),
    );
    let s: Vec<i64> = text(s.ok("sonde"))
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().expect("sonde number"))
        .collect();
    assert_eq!(s.len(), cases.len());
    let diffs: Vec<String> = cases
        .iter()
        .zip(s.iter().zip(&m))
        .filter(|(_, (s, m))| s != m)
        .map(|(c, (s, m))| format!("{:?}: sonde {s}, mawk {m}", c.escape_ascii().to_string()))
        .collect();
    assert!(
        diffs.is_empty(),
        "num() differs from int():\n{}",
        diffs.join("\n")
    );
}

/// With `max_strlen = 64`, fields of 64 bytes or more are cut to 63 (strings are `max_strlen`
/// bytes), where they are printed and where they key maps; a larger `max_strlen` (the
/// default, 1024, or `config = { max_strlen = N }`) makes room. `num(field(N))` reads the
/// field in place, so a long number keeps its digits.
#[test]
fn long_fields_are_truncated_to_max_strlen() {
    let long1 = "x".repeat(100);
    let long2 = format!("{}5", "0".repeat(70));
    let data = format!("{long1} {long2} end\n{long1}y 7 end\n");
    let body = r#"input { printf("%s|%d|%s\n", field(1), num(field(2)), field(3)); @[field(1)] = count(); }"#;
    let prog = format!("config = {{ max_strlen = 64 }} {body}");
    let out = sonde_with_stdin(&["-q", "-e", &prog], data.as_bytes());
    let x63 = "x".repeat(63);
    // Both field 1 values are the same 63 bytes; the 71-digit number is read whole.
    assert_eq!(
        text(out.ok("truncated")),
        format!("{x63}|5|end\n{x63}|7|end\n\n\n@[{x63}]: 2\n")
    );
    let prog = format!("config = {{ max_strlen = 128 }} {body}");
    let out = sonde_with_stdin(&["-q", "-e", &prog], data.as_bytes());
    let y = format!("{long1}y");
    let mut maps = [format!("@[{long1}]: 1"), format!("@[{y}]: 1")];
    maps.sort();
    let got = text(out.ok("max_strlen 128"));
    assert!(
        got.starts_with(&format!("{long1}|5|end\n{y}|7|end\n\n\n")),
        "{got}"
    );
    let mut got_maps: Vec<&str> = got.lines().filter(|l| l.starts_with('@')).collect();
    got_maps.sort();
    assert_eq!(got_maps, maps);
    // bpftrace 0.27's default, 1024, keeps them whole.
    let out = sonde_with_stdin(&["-q", "-e", body], data.as_bytes());
    let got = text(out.ok("default max_strlen"));
    assert!(
        got.starts_with(&format!("{long1}|5|end\n{y}|7|end\n\n\n")),
        "{got}"
    );
}
