//! `sonde repl`: a live tracing session.
//!
//! Probes attach as they are entered, each entry with an id; maps live across entries (a
//! probe entered later sees and updates the same `@maps`); commands (`:help`) list, detach,
//! print, clear and watch. The line editor is rustyline (history in `~/.sonde_history` or
//! `$SONDE_HISTORY`, Tab completion and the test of an entry left open from [`complete`],
//! whose next lines are read with a continuation prompt); the kernel
//! state lives on a thread of its own ([`pump`]) that prints events as they arrive.
//! Errors are shown inline as for scripts; a bad entry changes nothing already attached.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

mod commands;
mod complete;
mod pump;
mod script;
mod watch;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor, ExternalPrinter};
use sonde_lang::diag::Diagnostic;
use sonde_session::{OutputOptions, Stop};

use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use crate::privilege::lacks_privilege;
use complete::ReplHelper;
use pump::{LinePrinter, Pump};
use script::Script;

const USAGE: &str = "usage: sonde repl [-f text|json] [--unsafe]

A live tracing session: probes attach as they are entered and share their maps.
Type :help in the session for its commands; :quit (or Ctrl-D) ends it.";

/// The prompt of a new entry or command.
const PROMPT: &str = "sonde> ";
/// The prompt of the next line of an entry left open (`{`, `(` or `[` not closed yet).
const MORE: &str = "  ...> ";

/// The session's options, from `sonde repl`'s arguments.
struct Options {
    json: bool,
    unsafe_allowed: bool,
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        json: false,
        unsafe_allowed: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--unsafe" => o.unsafe_allowed = true,
            "-f" | "--format" => match it.next().map(String::as_str) {
                Some("json") => o.json = true,
                Some("text") => o.json = false,
                other => {
                    return Err(format!(
                        "-f takes text or json, not {}",
                        other.unwrap_or("nothing")
                    ));
                }
            },
            "-fjson" | "--format=json" => o.json = true,
            "-ftext" | "--format=text" => o.json = false,
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok(Some(o))
}

/// Where the history is kept: `$SONDE_HISTORY`, else `~/.sonde_history`.
fn history_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SONDE_HISTORY") {
        return Some(p.into());
    }
    std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".sonde_history"))
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// `sonde repl [ARGS]`.
pub fn repl(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("sonde repl: {e}\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Some(d) = lacks_privilege() {
        render(&[d], "repl", "");
        return ExitCode::from(EXIT_SCRIPT);
    }
    // Ctrl-C outside line editing (a load, a command) must not end the session.
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    let config = Config::builder().auto_add_history(false).build();
    let mut editor = match Editor::<ReplHelper, FileHistory>::with_config(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("sonde repl: cannot start the line editor: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let maps = Arc::new(Mutex::new(Vec::new()));
    editor.set_helper(Some(ReplHelper::new(maps.clone())));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin())
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let printer: Option<LinePrinter> = terminal
        .then(|| editor.create_external_printer().ok())
        .flatten()
        .map(|mut p| {
            Box::new(move |s: String| {
                let _ = p.print(s);
            }) as LinePrinter
        });
    let oopts = OutputOptions {
        json: opts.json,
        unsafe_allowed: opts.unsafe_allowed,
        buffering: Some(sonde_present::output::buffer::Buffering::Line),
        ..OutputOptions::default()
    };
    let pump = match Pump::start(oopts, printer) {
        Ok(p) => p,
        Err(d) => {
            render(&[d], "repl", "");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    println!("sonde repl: enter probes; :help lists the commands, :quit or Ctrl-D ends.");
    let mut repl = Repl {
        pump,
        script: Script::new(opts.unsafe_allowed),
        maps,
        json: opts.json,
        unsafe_allowed: opts.unsafe_allowed,
    };
    read_entries(&mut editor, &mut repl);
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    let result = repl.pump.call(|s| s.live.finish());
    let code = repl
        .pump
        .call(|s| s.live.stop())
        .flatten()
        .map_or(0, |s| match s {
            Stop::Exit(c) => c,
            Stop::Interrupted => 0,
        });
    repl.pump.stop();
    match result {
        Some(Err(d)) => {
            render(&[d], "repl", "");
            ExitCode::from(EXIT_SCRIPT)
        }
        _ => ExitCode::from(code),
    }
}

/// Reads entries and commands until the session ends (`:quit`, Ctrl-D, `exit()`).
fn read_entries(editor: &mut Editor<ReplHelper, FileHistory>, repl: &mut Repl) {
    // The lines of an entry left open (braces, brackets or parentheses), read on with the
    // continuation prompt.
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() { PROMPT } else { MORE };
        let line = editor.readline(prompt);
        match line {
            Ok(line) => {
                if !pending.is_empty() {
                    pending.push('\n');
                }
                pending += &line;
                let open = complete::entry_is_open(&pending);
                if let Some(h) = editor.helper_mut() {
                    h.pending = if open { pending.clone() } else { String::new() };
                }
                if open {
                    continue;
                }
                let entry = std::mem::take(&mut pending);
                if !entry.trim().is_empty() {
                    let _ = editor.add_history_entry(entry.as_str());
                }
                if repl.handle(&entry) == Flow::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                // Ctrl-C drops the entry being typed, all its lines.
                pending.clear();
                if let Some(h) = editor.helper_mut() {
                    h.pending.clear();
                }
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("sonde repl: {e}");
                break;
            }
        }
        INTERRUPTED.store(false, std::sync::atomic::Ordering::SeqCst);
        if let Some(Some(Stop::Exit(_))) = repl.pump.call(|s| s.live.stop()) {
            println!("[exit() was called: the session ends]");
            break;
        }
    }
}

/// What the loop does after a line.
#[derive(PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
}

struct Repl {
    pump: Pump,
    script: Script,
    maps: Arc<Mutex<Vec<String>>>,
    /// `-f json` (or `:format json`).
    json: bool,
    /// `--unsafe`.
    unsafe_allowed: bool,
}

/// True when `text` parses and all its probes are userspace ones (`input`, `replay`).
fn userspace_only(text: &str) -> bool {
    let Ok(p) = sonde_lang::syntax::parse(text) else {
        return false;
    };
    let mut points = p.probes.iter().flat_map(|p| &p.attach_points).peekable();
    points.peek().is_some() && points.all(crate::engine::is_userspace)
}

impl Repl {
    fn handle(&mut self, line: &str) -> Flow {
        let t = line.trim();
        if t.is_empty() || t.starts_with("//") && !t.contains('\n') {
            return Flow::Go;
        }
        if let Some(cmd) = t.strip_prefix(':') {
            return self.command(cmd);
        }
        self.enter(line);
        Flow::Go
    }

    /// The ids of the entries whose probes are attached.
    fn attached(&self) -> Vec<usize> {
        self.pump
            .call(|s| s.live.parts().iter().map(|p| p.id).collect())
            .unwrap_or_default()
    }

    /// Compiles `text` as a new entry, loads and attaches its probes; an entry of userspace
    /// probes only runs at once ([`Repl::run_userspace`]).
    fn enter(&mut self, text: &str) {
        if userspace_only(text) {
            self.run_userspace(text);
            return;
        }
        let started = Instant::now();
        let prepared = match self.script.prepare(text) {
            Ok(p) => p,
            Err((diags, src)) => {
                render(&diags, "entry", &src);
                return;
            }
        };
        render(&prepared.warnings, "entry", text);
        let script::Prepared {
            entry,
            compiled,
            text: whole,
            probes,
            missing,
            print_maps_on_exit,
            str_trunc_trailer,
            show_debug_info,
            ..
        } = prepared;
        let id = entry.id;
        let previous = self.script.committed_text();
        // One job: the session thread answers between two looks at the event ring.
        let result = self.pump.call(move |s| {
            s.live.set_debug_info(show_debug_info);
            // Run-time warnings name their places in the session's text, the entry's BEGIN
            // probes' among them; the text before it again if the entry is refused.
            sonde_system::warnings::set_script("session", &whole);
            let done = if probes.is_empty() {
                s.live.adopt(compiled, &str_trunc_trailer).map(|()| 0)
            } else {
                s.live.add(
                    id,
                    compiled,
                    probes,
                    missing,
                    print_maps_on_exit,
                    &str_trunc_trailer,
                )
            };
            if done.is_err() {
                sonde_system::warnings::set_script("session", &previous);
            }
            done.map(|n| {
                let names = s
                    .live
                    .parts()
                    .into_iter()
                    .find(|p| p.id == id)
                    .map(|p| p.probes)
                    .unwrap_or_default();
                let maps: Vec<String> = s.live.maps().into_iter().map(|(n, _)| n).collect();
                (n, names, maps)
            })
        });
        match result {
            None => eprintln!("sonde repl: the session has ended"),
            Some(Err(d)) => self.render_whole(&[d], &entry),
            Some(Ok((n, names, maps))) => {
                let defs_only = entry.probes.trim().is_empty();
                self.script.commit(entry);
                if let Ok(mut m) = self.maps.lock() {
                    *m = maps;
                }
                if defs_only {
                    println!("[{id}] defined");
                } else {
                    println!(
                        "[{id}] attached {n} probe{} in {} ms: {}",
                        if n == 1 { "" } else { "s" },
                        started.elapsed().as_millis(),
                        names.join(", ")
                    );
                }
            }
        }
    }

    /// Runs an entry of `input`/`replay` probes in the userspace engine, as `sonde -e` would,
    /// with the session's definitions, parameters and format: it reads its files (or the
    /// terminal until Ctrl-D), prints its maps at its end and keeps nothing (its maps are its
    /// own, not the kernel session's). Ctrl-C ends it, not the session.
    fn run_userspace(&mut self, text: &str) {
        let program = format!("{}{text}", self.script.text(&[]));
        let Ok(exe) = std::env::current_exe() else {
            eprintln!("sonde repl: cannot find the sonde executable");
            return;
        };
        let mut cmd = std::process::Command::new(exe);
        if self.unsafe_allowed {
            cmd.arg("--unsafe");
        }
        if self.json {
            cmd.args(["-f", "json"]);
        }
        // The session's parameters are parameters: a plain `input` reads the terminal.
        cmd.arg("--input-stdin")
            .arg("-e")
            .arg(program)
            .args(&self.script.positional);
        match cmd.status() {
            Ok(s) if !s.success() => eprintln!("[the userspace run ended with {s}]"),
            Ok(_) => {}
            Err(e) => eprintln!("sonde repl: cannot run the userspace engine: {e}"),
        }
    }

    /// Shows diagnostics of the load or attach of `entry`, located in the whole script.
    fn render_whole(&self, diags: &[Diagnostic], entry: &script::Entry) {
        let whole = self.script.whole_with(entry);
        render(diags, "session", &whole);
    }
}
