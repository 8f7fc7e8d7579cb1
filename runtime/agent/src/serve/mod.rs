//! `sonde serve`: every `*.sd` script of a directory run as one agent. Each script is a
//! sonde process of its own ([`child`]); the agent serves their metrics merged into one
//! exposition, reloads a script when its file changes (and every script on SIGHUP), and
//! reports a script that fails without stopping the others.

pub mod child;
mod routes;

use child::{ScriptProcess, Signature};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the directory is looked at.
const RESCAN: Duration = Duration::from_secs(1);

/// The most scripts one agent runs.
pub const MAX_SCRIPTS: usize = 64;

/// The scripts being run, by name.
pub type Scripts = Arc<Mutex<BTreeMap<String, ScriptProcess>>>;

/// What `sonde serve` was asked.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Where the agent listens.
    pub listen: String,
    /// The directory of scripts.
    pub dir: PathBuf,
    /// sonde's own executable, run once per script.
    pub exe: PathBuf,
    /// Arguments every script's run gets (`--metrics-max-series N`, ...).
    pub script_args: Vec<String>,
}

static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sighup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

/// The `*.sd` entries of `dir` but directories (sorted; one that cannot be read is started
/// all the same, and its run says why it fails), or why the directory cannot be read.
fn script_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sd") && !p.is_dir())
        .collect();
    files.sort();
    Ok(files)
}

/// A script's name: its file's stem.
fn name_of(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "script".into(), |s| s.to_string_lossy().into_owned())
}

/// Runs the agent until SIGINT or SIGTERM. The address is listened on before any script
/// starts: an address in use is the error returned.
pub fn serve(opts: &ServeOptions, stop: &dyn Fn() -> bool) -> Result<(), String> {
    script_files(&opts.dir)?;
    let scripts: Scripts = Arc::default();
    let server = routes::start(&opts.listen, scripts.clone())?;
    eprintln!(
        "Serving the scripts of {} on http://{}/metrics",
        opts.dir.display(),
        server.addr()
    );
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGHUP, on_sighup as *const () as libc::sighandler_t);
    }
    while !stop() {
        let all = RELOAD.swap(false, Ordering::SeqCst);
        if all {
            eprintln!("SIGHUP: reloading every script");
        }
        rescan(opts, &scripts, all);
        std::thread::sleep(RESCAN);
    }
    let mut s = scripts.lock().expect("scripts lock");
    for p in s.values_mut() {
        p.stop();
    }
    Ok(())
}

/// Starts new scripts, restarts changed ones (all of them when `all`), stops removed ones.
fn rescan(opts: &ServeOptions, scripts: &Scripts, all: bool) {
    let files = match script_files(&opts.dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("sonde serve: {e}");
            return;
        }
    };
    let mut wanted: BTreeMap<String, PathBuf> = BTreeMap::new();
    for f in files.into_iter().take(MAX_SCRIPTS) {
        wanted.insert(name_of(&f), f);
    }
    let mut s = scripts.lock().expect("scripts lock");
    s.retain(|name, p| {
        let keep = wanted.contains_key(name);
        if !keep {
            eprintln!("[{name}] removed: stopping it");
            p.stop();
        }
        keep
    });
    for (name, path) in wanted {
        let changed = s
            .get(&name)
            .is_none_or(|p| all || p.signature != Signature::of(&path));
        if let Some(p) = s.get_mut(&name) {
            p.poll();
        }
        if !changed {
            continue;
        }
        if let Some(mut old) = s.remove(&name) {
            eprintln!("[{name}] changed: restarting it");
            old.stop();
        }
        if std::fs::File::open(&path).is_err() {
            eprintln!(
                "[{name}] cannot read {}: skipped until it changes",
                path.display()
            );
        }
        let p = ScriptProcess::start(&opts.exe, &path, &name, &opts.script_args);
        s.insert(name, p);
    }
}
