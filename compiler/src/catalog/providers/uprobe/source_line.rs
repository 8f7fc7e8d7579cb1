//! `uprobe:BINARY@FILE:LINE[:COL]`: a uprobe on a source line, as bpftrace 0.26 places it:
//! the first statement of line `LINE` (at column `COL`, when given) of the source file whose
//! path ends with `FILE`, from the binary's DWARF line table
//! ([`KernelInfo::source_line_offset`]). It is an address probe: named
//! `uprobe:BINARY:ADDRESS`, with `arg0`..`arg5` but no `args`.

use super::super::common::{bad_attach_point, has_wildcard, part_span, resolved};
use super::{binaries, context};
use crate::catalog::builtins::debug_args::{BAD_DEBUG_INFO, NO_DEBUG_INFO};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{DebugInfoError, KernelInfo, SourceLine};

/// The expected form, as bpftrace words it.
const FORM: &str = "uprobe:TARGET@FILE:LINE[:COL]";

/// The attach point of `uprobe:BINARY@FILE:LINE[:COL]`, when `ap` has that form (its binary
/// part holds an `@`); `None` for any other uprobe.
pub fn resolve(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    ret: bool,
) -> Option<Result<Vec<ResolvedAttach>, Diagnostic>> {
    let (binary, file) = ap.parts.first()?.split_once('@')?;
    Some(resolve_at(ap, kernel, ret, binary, file))
}

/// [`resolve`] once the binary and file are split.
fn resolve_at(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    ret: bool,
    binary: &str,
    file: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    let bad = |index: usize, message: String| bad_attach_point(part_span(ap, index), message, FORM);
    if ret {
        return Err(bad(
            0,
            "a uretprobe cannot be attached to a source line".into(),
        ));
    }
    if has_wildcard(binary) {
        return Err(bad(
            0,
            "Cannot use wildcards with source code location".into(),
        ));
    }
    let line = ap.parts.get(1).map_or("", String::as_str);
    if !(2..=3).contains(&ap.parts.len()) || file.is_empty() || line.is_empty() {
        return Err(bad(
            0,
            format!("Invalid uprobe arguments, expected format: {FORM}"),
        ));
    }
    if binary.is_empty() {
        return Err(bad(
            0,
            "Unspecified target binary, cannot attach by source code location".into(),
        ));
    }
    let number = |index: usize, what: &str| -> Result<u64, Diagnostic> {
        let text = &ap.parts[index];
        text.parse::<u64>()
            .map_err(|_| bad(index, format!("Invalid {what} number: `{text}`")))
    };
    let line = number(1, "line")?;
    let column = if ap.parts.len() == 3 {
        number(2, "column")?
    } else {
        0
    };
    // The binary is resolved as part 0 of an attach point without the `@FILE`.
    let mut without_file = ap.clone();
    without_file.parts[0] = binary.to_string();
    let bins = binaries::uprobe_binaries(&without_file, Some(binary), kernel, FORM)?;
    let path = bins
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| binary.to_string());
    let offset = match kernel.source_line_offset(&path, SourceLine { file, line, column }) {
        Ok(offset) => offset,
        Err(DebugInfoError::Missing(why)) => {
            return Err(Diagnostic::error(
                NO_DEBUG_INFO,
                part_span(ap, 0),
                format!(
                    "No DWARF debug info found for '{binary}', cannot attach by source code \
                     location"
                ),
            )
            .with_label("no line table for this binary")
            .with_help(format!(
                "compile the program with -g, or install its debug symbols ({why})"
            )));
        }
        Err(DebugInfoError::NoFunction(why) | DebugInfoError::Invalid(why)) => {
            return Err(Diagnostic::error(BAD_DEBUG_INFO, ap.span, why)
                .with_label("not a statement of the binary's line table")
                .with_help(format!(
                    "name a line of a source file of {path} that has code (`sonde -lv \
                     'uprobe:{path}:*'` lists its functions)"
                )));
        }
    };
    let ctx = ProbeContext {
        binary: Some(path.clone()),
        ..context(false, None)
    };
    Ok(vec![resolved(
        ap,
        "uprobe",
        vec![path, offset.to_string()],
        ctx,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::fixture::ap;

    /// A binary `/bin/app` whose line table has `app.c:10` at file offset 0x1149.
    struct Lines;

    impl KernelInfo for Lines {
        fn resolve_binary(&self, target: &str) -> Option<String> {
            (target == "/bin/app" || target == "/bin/plain").then(|| target.to_string())
        }
        fn source_line_offset(
            &self,
            path: &str,
            at: SourceLine<'_>,
        ) -> Result<u64, DebugInfoError> {
            let SourceLine { file, line, column } = at;
            match (path, file, line, column) {
                ("/bin/plain", ..) => Err(DebugInfoError::Missing("no .debug_info".into())),
                ("/bin/app", "app.c" | "src/app.c", 10, 0 | 5) => Ok(0x1149),
                _ => Err(DebugInfoError::Invalid(format!(
                    "Unable to map '{file}:{line}' to address"
                ))),
            }
        }
    }

    fn names(raw: &str, ret: bool) -> Result<Vec<String>, String> {
        match resolve(&ap(raw), &Lines, ret) {
            None => Err("not a source line".into()),
            Some(Ok(r)) => Ok(r.into_iter().map(|a| a.name).collect()),
            Some(Err(d)) => Err(d.message),
        }
    }

    #[test]
    fn source_lines_become_address_probes() {
        assert_eq!(
            names("uprobe:/bin/app@app.c:10", false).unwrap(),
            ["uprobe:/bin/app:4425"]
        );
        assert_eq!(
            names("uprobe:/bin/app@src/app.c:10:5", false).unwrap(),
            ["uprobe:/bin/app:4425"]
        );
        assert_eq!(
            names("uprobe:/bin/app:main", false).unwrap_err(),
            "not a source line"
        );
    }

    #[test]
    fn bad_source_lines_say_what_is_wrong() {
        let err = |raw: &str, ret: bool| names(raw, ret).unwrap_err();
        assert!(err("uprobe:/bin/app@app.c:11", false).contains("Unable to map 'app.c:11'"));
        assert!(err("uprobe:/bin/app@app.c:x", false).contains("Invalid line number"));
        assert!(err("uprobe:/bin/app@app.c:10:y", false).contains("Invalid column number"));
        assert!(err("uprobe:/bin/app@app.c", false).contains("expected format"));
        assert!(err("uprobe:/bin/app@:10", false).contains("expected format"));
        assert!(err("uprobe:/bin/app@app.c:10:1:2", false).contains("expected format"));
        assert!(err("uprobe:@app.c:10", false).contains("Unspecified target binary"));
        assert!(err("uprobe:/bin/*@app.c:10", false).contains("wildcards"));
        assert!(err("uretprobe:/bin/app@app.c:10", true).contains("uretprobe"));
        assert!(err("uprobe:/bin/plain@app.c:10", false).contains("No DWARF debug info found"));
    }
}
