//! A fuzzer on stable Rust: seed inputs (scripts, recordings, ELF files) mutated by a seeded
//! PRNG — bytes flipped, set to boundary values, inserted, deleted, duplicated, spliced
//! from another seed, and for scripts the dictionary's tokens inserted and lines moved — and
//! fed in process to sonde's readers: the parser, checker and compiler (what `--check` and
//! `--dump` run, nothing loaded), the recording reader and replay printer, and the ELF,
//! USDT and DWARF readers. Each input must end without a panic or an internal error, in
//! less than [`PER_INPUT`] and with the process under [`MEMORY_LIMIT`].
//!
//! Each target runs for `SONDE_FUZZ_SECONDS` (default [`DEFAULT_SECONDS`]) from the seed
//! `SONDE_FUZZ_SEED` (default 1); a longer run is `SONDE_FUZZ_SECONDS=3600 cargo test
//! --release --test fuzz` (docs/ARCHITECTURE.md, Testing). A failing input is written to
//! `target/tmp/fuzz-failures/` and named in the failure; once fixed it is kept in
//! `tests/fuzz/regressions/TARGET/`, which every run replays first.

#[path = "../common/mod.rs"]
mod common;
mod mutate;
mod targets;

use common::rng::Rng;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Seconds each target runs by default (CI's bounded run).
const DEFAULT_SECONDS: u64 = 20;
/// The longest one input may take (a debug build; a release build is ~10 times faster).
const PER_INPUT: Duration = Duration::from_secs(2);
/// The most memory the test process may have used (its peak resident set).
const MEMORY_LIMIT: u64 = 3 << 30;
/// Inputs kept to mutate further (those a target found valid), at most.
const CORPUS: usize = 512;

/// What one input did: `Ok(true)` when it was valid (parsed, read), `Ok(false)` when it
/// was refused with a proper error, `Err` for a finding (an internal error).
pub type Outcome = Result<bool, String>;

/// A fuzzing target: its seeds, the tokens its mutations insert, and what runs an input.
pub struct Target {
    /// Its name (the regressions' folder).
    pub name: &'static str,
    /// Valid inputs to start from.
    pub seeds: Vec<Vec<u8>>,
    /// Tokens inserted whole (empty: byte mutations only).
    pub dictionary: &'static [&'static str],
    /// The largest input made (a script's parse budget grows with its size).
    pub max_len: usize,
    /// Runs one input.
    pub run: fn(&[u8]) -> Outcome,
}

fn seconds() -> u64 {
    std::env::var("SONDE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECONDS)
}

fn seed() -> u64 {
    std::env::var("SONDE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// The files of `tests/fuzz/regressions/NAME/`: inputs that once failed.
fn regressions(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = common::repo_root()
        .join("tests/fuzz/regressions")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The process's peak resident set, in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Runs inputs on a thread of their own, so that one that does not end can be timed out.
struct Runner {
    inputs: mpsc::Sender<Vec<u8>>,
    outcomes: mpsc::Receiver<Outcome>,
}

impl Runner {
    fn new(run: fn(&[u8]) -> Outcome) -> Runner {
        let (inputs, rx) = mpsc::channel::<Vec<u8>>();
        let (tx, outcomes) = mpsc::channel();
        std::thread::Builder::new()
            .name("fuzz-input".into())
            .stack_size(64 << 20)
            .spawn(move || {
                for input in rx {
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run(&input)))
                        .unwrap_or_else(|p| {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            Err(format!("panicked: {msg}"))
                        });
                    if tx.send(outcome).is_err() {
                        return;
                    }
                }
            })
            .expect("fuzz thread");
        Runner { inputs, outcomes }
    }

    /// Runs `input`: its outcome, or a finding when it took too long.
    fn run(&self, input: &[u8]) -> Outcome {
        let start = Instant::now();
        self.inputs.send(input.to_vec()).expect("fuzz thread alive");
        match self.outcomes.recv_timeout(PER_INPUT) {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("took more than {PER_INPUT:?}")),
        }
        .and_then(|valid| {
            let peak = peak_memory();
            if peak > MEMORY_LIMIT {
                return Err(format!("memory peaked at {} MiB", peak >> 20));
            }
            if start.elapsed() > PER_INPUT {
                return Err(format!("took {:?}", start.elapsed()));
            }
            Ok(valid)
        })
    }
}

/// How long past its time a target may run before the watchdog ends the process (an input
/// that hangs the runner itself).
const WATCHDOG_GRACE: Duration = Duration::from_secs(60);

/// Ends the test process, saving the input being run, when a target overruns its time.
struct Watchdog {
    input: std::sync::Arc<std::sync::Mutex<Option<Vec<u8>>>>,
}

impl Watchdog {
    fn start(name: &'static str, until: Instant) -> Watchdog {
        let input = std::sync::Arc::new(std::sync::Mutex::new(Some(Vec::new())));
        let watched = input.clone();
        std::thread::spawn(move || {
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(500));
                if watched.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
                    return;
                }
            }
            let current = watched.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-hung"));
            let _ = std::fs::write(&file, current.unwrap_or_default());
            eprintln!(
                "fuzz target {name} overran its time; the input it ran is in {}",
                file.display()
            );
            std::process::abort();
        });
        Watchdog { input }
    }

    /// Notes the input about to run.
    fn watch(&self, input: &[u8]) {
        *self.input.lock().unwrap_or_else(|e| e.into_inner()) = Some(input.to_vec());
    }
}

impl Drop for Watchdog {
    /// The target ended in time (or failed): the watchdog stops.
    fn drop(&mut self) {
        *self.input.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Saves a failing input and fails the test, naming it.
fn finding(target: &Target, input: &[u8], why: &str, seed: u64) -> ! {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let file = dir.join(format!("{}-{hash:016x}", target.name));
    std::fs::write(&file, input).unwrap();
    panic!(
        "fuzz target {}: an input {why} (seed {seed}); it is in {}\n\
         (fixed, keep it in tests/fuzz/regressions/{}/)",
        target.name,
        file.display(),
        target.name
    );
}

/// Fuzzes `target`: its regressions and seeds first, then mutations until the time is up.
pub fn fuzz(target: Target) {
    let runner = Runner::new(target.run);
    let seed = seed();
    for (path, input) in regressions(target.name) {
        if let Err(why) = runner.run(&input) {
            panic!("regression {} fails again: {why}", path.display());
        }
    }
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for s in &target.seeds {
        match runner.run(s) {
            Ok(valid) => assert!(valid, "{}: a seed is refused", target.name),
            Err(why) => finding(&target, s, &why, seed),
        }
        corpus.push(s.clone());
    }
    assert!(!corpus.is_empty(), "{}: no seeds", target.name);
    let mut rng = Rng::new(seed ^ target.name.len() as u64);
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let watchdog = Watchdog::start(target.name, deadline + WATCHDOG_GRACE);
    let (mut runs, mut valid) = (0u64, 0u64);
    while Instant::now() < deadline {
        let base = &corpus[rng.below(corpus.len())];
        let other = &target.seeds[rng.below(target.seeds.len())];
        let input = mutate::mutate(&mut rng, base, other, target.dictionary, target.max_len);
        runs += 1;
        watchdog.watch(&input);
        match runner.run(&input) {
            Ok(true) => {
                valid += 1;
                if corpus.len() < CORPUS {
                    corpus.push(input);
                } else {
                    let at = target.seeds.len() + rng.below(CORPUS - target.seeds.len());
                    corpus[at] = input;
                }
            }
            Ok(false) => {}
            Err(why) => finding(&target, &input, &why, seed),
        }
    }
    drop(watchdog);
    eprintln!(
        "fuzz {}: {runs} inputs ({valid} valid) in {} s, seed {seed}",
        target.name,
        seconds()
    );
    assert!(runs > 0, "{}: no input ran", target.name);
}

#[test]
fn fuzz_scripts() {
    fuzz(targets::scripts());
}

#[test]
fn fuzz_recordings() {
    fuzz(targets::recordings());
}

#[test]
fn fuzz_elf_files() {
    fuzz(targets::elf_files());
}
