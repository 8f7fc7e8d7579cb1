//! Printing what a script's iterator writes (`iter:` probes, see [`crate::iter`]): after
//! BEGIN, its link is read once and the text printed line by line as it comes, or pinned in
//! bpffs for `iter:NAME:PIN`.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::io::{self, Read};
use std::path::Path;

use sonde_compiler::program::AttachSpec;
use sonde_lang::diag::Diagnostic;

use sonde_kernel::iter::{ITER_FAILED, Lines, find, iter_create};
use sonde_kernel::load::Loaded;
use sonde_session::Output;

/// Runs the script's iterator once, printing its text on `out` line by line, or pins it.
/// Returns after the iteration ended (or Ctrl-C stopped it); nothing when the script has no
/// iterator or it did not attach.
pub fn run(loaded: &Loaded, out: &mut Output<'_>) -> Result<(), Diagnostic> {
    let Some((target, link)) = find(loaded) else {
        return Ok(());
    };
    let AttachSpec::Iter { pin, .. } = &target.spec else {
        return Ok(());
    };
    let fail = |what: String, e: io::Error, help: &str| {
        Diagnostic::error(ITER_FAILED, target.span, format!("{what}: {e}"))
            .with_label("this iterator")
            .with_help(help.to_string())
    };
    if let Some(path) = pin {
        sonde_kernel::syscall::obj_pin(link, Path::new(path)).map_err(|e| {
            fail(
                format!("cannot pin {} at {path}", target.name),
                e,
                "the path must be new, in a bpffs (mounted at /sys/fs/bpf), in a directory that exists",
            )
        })?;
        out.iter_text(format!("Program pinned to {path}\n").as_bytes());
        out.flush();
        return Ok(());
    }
    let mut file = iter_create(link).map_err(|e| {
        fail(
            format!("cannot open {}", target.name),
            e,
            "this is a sonde bug; please report it with the script",
        )
    })?;
    let mut lines = Lines::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if sonde_system::signals::stop_requested() || out.closed() {
            break;
        }
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                lines.push(&buf[..n], &mut |l| out.iter_text(l));
                out.flush();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // More than a million objects without output: the next read goes on.
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
            Err(e) if e.raw_os_error() == Some(libc::E2BIG) => {
                return Err(fail(
                    format!("cannot read {}", target.name),
                    e,
                    "one object's output is larger than the kernel's iterator buffer (32 KiB): print less per object",
                ));
            }
            Err(e) => {
                return Err(fail(
                    format!("cannot read {}", target.name),
                    e,
                    "the kernel stopped the iteration",
                ));
            }
        }
    }
    lines.finish(&mut |l| out.iter_text(l));
    out.flush();
    Ok(())
}
