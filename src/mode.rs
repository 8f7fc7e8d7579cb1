//! A run about to start: the checked script with what its run needs from the command line
//! ([`Ready`]), and what the run does besides running it ([`Mode`]: nothing, recording, or
//! replaying).

use crate::cli::Cli;
use crate::post;

/// What a run does besides running the script.
pub enum Mode {
    /// Run it.
    Live,
    /// `sonde record -o FILE`: run it and record what it prints.
    Record(std::path::PathBuf),
    /// `sonde replay FILE SCRIPT`: run a userspace script on a recording's events.
    Replay(sonde_drivers::record::Recording),
}

/// A checked script ready to run in either engine, and what its run needs.
pub struct Ready<'a> {
    /// The command line.
    pub cli: &'a Cli,
    /// The script's name as diagnostics show it.
    pub name: &'a str,
    /// The script's text.
    pub src: &'a str,
    /// The parsed script.
    pub program: &'a sonde_lang::ast::Program,
    /// The checked script.
    pub checked: &'a sonde_lang::sema::Checked,
    /// What the kernel offers (types, tracepoints, symbols).
    pub kernel: &'a dyn sonde_lang::kernel::KernelInfo,
    /// Positional parameters (`$1`, ...).
    pub positional: Vec<String>,
    /// Named parameters (`getopt`).
    pub named: Vec<(String, String)>,
    /// The post-processing script, compiled.
    pub post: Option<post::Loaded>,
    /// What the run does besides running.
    pub mode: Mode,
}
