//! `sonde record -o FILE`: a kernel run whose output is recorded (the recorder it writes
//! with is `recording`'s).

use crate::cmd::run::main_with;
use crate::exit::EXIT_USAGE;
use crate::mode::Mode;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

/// `sonde record -o FILE [OPTIONS] SCRIPT`: runs a kernel script and records its output.
pub fn record(args: &[OsString]) -> ExitCode {
    let mut rest = Vec::new();
    let mut file: Option<OsString> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-o" && file.is_none() {
            file = it.next().cloned();
        } else if let Some(f) = a
            .as_bytes()
            .strip_prefix(b"-o")
            .filter(|f| !f.is_empty() && file.is_none())
        {
            file = Some(OsStr::from_bytes(f).to_os_string());
        } else {
            rest.push(a.clone());
        }
    }
    let Some(file) = file else {
        eprintln!("sonde: usage: sonde record -o FILE [OPTIONS] SCRIPT | -e 'PROGRAM'");
        return ExitCode::from(EXIT_USAGE);
    };
    let argv = std::iter::once(OsString::from("sonde"))
        .chain(rest)
        .collect();
    main_with(argv, Mode::Record(file.into()))
}
