//! Parsing: source text → [`Program`] via the pest grammar of `sonde-grammar`.
//!
//! The pipeline is: a lexical pre-scan ([`scan`]: unterminated strings and comments, absurd
//! nesting), the conditional preprocessor directives ([`preprocess`]), the pest parse (errors mapped to words by [`errors`]), then building the AST
//! ([`build`], [`cdefs`], [`expr`]) with literal decoding ([`literals`]), then macro expansion ([`macros`],
//! after [`macro_return`] refused `return` in macros). [`dump`] prints the AST.
//!
//! **Invariant:** no pest type escapes this module, and no grammar rule name reaches a user.
//! [`parse`] never panics, whatever the input.

mod build;
mod cdefs;
mod defines;
pub mod dump;
pub mod encoding;
mod errors;
mod expr;
pub mod literals;
pub mod macro_return;
pub mod macros;
pub mod preprocess;
mod scan;

use crate::ast::Program;
use crate::diag::Diagnostic;
use pest::Parser;
use sonde_grammar::{Rule, SondeParser};

pub use build::{BAD_ESCAPE, BAD_INTEGER, INTEGER_OVERFLOW, INTERNAL};
pub use dump::dump;
pub use errors::SYNTAX;
pub use scan::{MAX_NESTING, TOO_DEEP, UNTERMINATED_COMMENT, UNTERMINATED_STRING};

/// Stack size of the thread the parser runs on. Pest recurses several frames per nesting
/// level; [`MAX_NESTING`] levels need a few megabytes in unoptimised builds, more than a test
/// thread's default 2 MiB. The memory is only reserved, not touched, until used.
const PARSE_STACK: usize = 64 << 20;

/// Macros defined before the script: `BPFTRACE_HAVE_BTF`, as sonde takes kernel types from
/// BTF (bpftrace's tools choose their BTF branch with it).
const PREDEFINED: &[&str] = &["BPFTRACE_HAVE_BTF"];

/// Parses a whole script. On failure returns at least one diagnostic (every literal error is
/// reported; for a syntax error, the first one); never panics.
///
/// The work runs on a helper thread with a large stack (see [`MAX_NESTING`]); should anything
/// in the parser panic, the panic is turned into an `sonde::parse::internal` diagnostic.
pub fn parse(src: &str) -> Result<Program, Vec<Diagnostic>> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("sonde-parse".into())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, || parse_here(src));
        match worker {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                let mut b = build::Builder::new();
                b.internal(crate::span::Span::new(0, 0), "the parser crashed");
                Err(b.errors)
            }),
            Err(_) => parse_here(src),
        }
    })
}

/// Parser steps (pest's calls) a script may take: [`PARSE_STEPS_PER_BYTE`] per byte over a
/// base. A valid script takes about 35 per byte; some nestings of blocks in calls make the
/// PEG parser backtrack exponentially (`f({ f({ f({ ...` with an error inside), which this
/// budget stops in bounded time (about a second for a small script in a debug build).
const PARSE_STEPS_BASE: usize = 1_000_000;
/// See [`PARSE_STEPS_BASE`].
const PARSE_STEPS_PER_BYTE: usize = 200;

/// Serializes pest's process-wide step budget: each parse sets it for its own size.
static PARSE_BUDGET: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The pest parse of `src` within its step budget; the diagnostic of a syntax error, or of
/// a script whose nesting exhausts the budget.
fn parse_bounded(src: &str) -> Result<pest::iterators::Pairs<'_, Rule>, Box<Diagnostic>> {
    let steps = PARSE_STEPS_BASE.saturating_add(src.len().saturating_mul(PARSE_STEPS_PER_BYTE));
    let result = {
        let _budget = PARSE_BUDGET.lock().unwrap_or_else(|e| e.into_inner());
        pest::set_call_limit(std::num::NonZeroUsize::new(steps));
        SondeParser::parse(Rule::program, src)
    };
    result.map_err(|e| {
        if let pest::error::ErrorVariant::CustomError { message } = &e.variant
            && message.contains("limit reached")
        {
            let at = match e.location {
                pest::error::InputLocation::Pos(p) => p,
                pest::error::InputLocation::Span((p, _)) => p,
            };
            return Box::new(scan::too_complex(crate::span::Span::new(at, at), steps));
        }
        Box::new(errors::from_pest(src, &e))
    })
}

/// [`parse`] on the current thread.
fn parse_here(src: &str) -> Result<Program, Vec<Diagnostic>> {
    let early = scan::prescan(src);
    if !early.is_empty() {
        return Err(early);
    }
    let preprocessed = preprocess::conditionals(src, PREDEFINED)?;
    let src = preprocessed.as_str();
    let mut pairs = match parse_bounded(src) {
        Ok(pairs) => pairs,
        Err(d) => return Err(vec![*d]),
    };
    let mut builder = build::Builder::new();
    let program = match pairs.next() {
        Some(pair) => builder.program(pair),
        None => {
            builder.internal(crate::span::Span::new(0, 0), "no program");
            Program::default()
        }
    };
    if !builder.errors.is_empty() {
        return Err(builder.errors);
    }
    let returns = macro_return::check(&program);
    if !returns.is_empty() {
        return Err(returns);
    }
    let mut program = program;
    macros::expand(&mut program)?;
    Ok(program)
}
