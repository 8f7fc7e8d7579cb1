//! The userspace engine: runs a script's probes as native code JIT-compiled with cranelift,
//! in sonde's own process, with no kernel facility and no privilege.
//!
//! `BEGIN`, `END` and `interval` run here as in the kernel; `input` probes fire once per line
//! of standard input or of a file (awk's job); `replay` probes fire once per recorded printf
//! event. Maps live in [`store::HostMaps`] with the kernel maps' encodings, and events go
//! through the same [`Output`](sonde_session::Output) as the kernel engine's, so both print
//! identically.
//!
//! **Invariant:** probe code reaches the engine only through the host functions of [`host`],
//! registered by intrinsic name; event records are handled after the probe that queued them
//! returns, as the kernel's ring buffer is read after its program ran. It calls no kernel
//! facility (`sonde-kernel` is not among its dependencies): it runs without root. Depends on
//! `lang`, `compiler`, `present`, `system` and `session`.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod host;
pub mod input;
mod parallel;
mod run;
pub mod store;

pub use run::run_jit;

use input::FieldSep;
use sonde_compiler::compile::Compiled;
use sonde_compiler::jit::JitProgram;
use sonde_lang::diag::Diagnostic;
use sonde_session::OutputOptions;

/// One recorded printf event a `replay` probe sees.
#[derive(Clone, Debug)]
pub struct ReplayEvent {
    /// When it was handled at record time (`CLOCK_BOOTTIME` ns).
    pub ts_ns: u64,
    /// Its event kind in the recording.
    pub event: u32,
    /// Its payload (the printf arguments laid out as a tuple).
    pub payload: Vec<u8>,
    /// The text it printed, without the trailing newline.
    pub text: Vec<u8>,
}

/// Options of a userspace run.
#[derive(Default)]
pub struct JitOptions {
    /// How output is printed.
    pub output: OutputOptions,
    /// `-q`: no "Attached N probes" line.
    pub quiet: bool,
    /// `-F SEP`: how `input` lines split into fields.
    pub field_sep: FieldSep,
    /// The recorded events `replay` probes see, in order.
    pub replay: Vec<ReplayEvent>,
    /// The post-processing script (`--post`, a tool's report; see [`crate::report`]).
    pub post: Option<sonde_present::report::Post>,
    /// `-v`: say how long JIT compilation took.
    pub verbose: bool,
    /// Threads that may run `input` probes that only aggregate (1 = the main thread only).
    pub threads: usize,
    /// The files a plain `input` probe reads, in order, instead of standard input (the
    /// script's file arguments, as awk reads its operands; `-` is standard input).
    pub input_files: Vec<String>,
    /// What the run serves while it runs (`--metrics`): its maps, at least every 100 ms.
    pub served: Option<Box<dyn sonde_session::scrape::Served>>,
}

/// JIT-compiles a script's programs; with `verbose`, says how long it took on stderr.
pub fn jit_compile(compiled: &Compiled, verbose: bool) -> Result<JitProgram, Vec<Diagnostic>> {
    let start = std::time::Instant::now();
    let jit = JitProgram::compile(&compiled.ir, &host::symbols()).map_err(|d| vec![d])?;
    if verbose {
        eprintln!(
            "sonde: JIT-compiled {} program{} in {:.2} ms",
            jit.len(),
            if jit.len() == 1 { "" } else { "s" },
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
    Ok(jit)
}
