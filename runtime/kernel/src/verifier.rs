//! Turns a kernel verifier log into a diagnostic: which instruction failed (mapped back to
//! the source span that generated it) and what the message means, in plain words.

use sonde_compiler::program::ProgramSpec;
use sonde_lang::diag::Diagnostic;

/// What the verifier said, extracted from its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierFailure {
    /// Index of the failing instruction, if the log names one.
    pub insn: Option<usize>,
    /// The verifier's error line (`R1 invalid mem access 'map_value_or_null'`).
    pub message: String,
}

/// Parses an instruction line of the log, `12: (79) r1 = *(u64 *)(r2 +0)`, into its index.
fn insn_line(line: &str) -> Option<usize> {
    let (index, rest) = line.split_once(": (")?;
    let code = rest.get(..3)?;
    let is_code = code.ends_with(')') && code[..2].bytes().all(|b| b.is_ascii_hexdigit());
    if is_code {
        index.trim().parse().ok()
    } else {
        None
    }
}

/// True for the statistics lines the kernel appends after the verdict.
fn is_stats_line(line: &str) -> bool {
    [
        "processed ",
        "verification time",
        "stack depth",
        "max_states_per_insn",
        "mark_read",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// The first `insn <n>` number in a message (`unreachable insn 5`, `back-edge from insn 7
/// to 3`, `jump out of range from insn 2 to 40`).
fn insn_in_message(message: &str) -> Option<usize> {
    let at = message.find("insn ")? + 5;
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Finds the verdict in a verifier log. A line holding one of the known complaints wins
/// (searched from the end; the kernel sometimes glues the complaint to the instruction
/// line, as in `2: (55) if r0 != 0x0 goto pc-2 infinite loop detected at insn 1`);
/// otherwise the verdict is the last line that is neither an instruction, a register state
/// nor statistics. The failing instruction is the one being verified at that point.
pub fn parse_log(log: &str) -> VerifierFailure {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let insn_before = |at: usize| lines[..at].iter().rev().find_map(|l| insn_line(l));
    for (at, line) in lines.iter().enumerate().rev() {
        if is_stats_line(line) || is_state_line(line) {
            continue;
        }
        let text = line.split(" ; ").next().unwrap_or(line);
        let known = EXPLANATIONS
            .iter()
            .filter_map(|(pattern, _, _)| text.find(pattern))
            .min();
        let Some(pos) = known else { continue };
        return match insn_line(line) {
            // Glued to an instruction: the complaint starts at the pattern (a leading
            // register name, if any, is part of the instruction text's end).
            Some(index) => VerifierFailure {
                insn: Some(index),
                message: text[pos..].to_string(),
            },
            None => VerifierFailure {
                insn: insn_before(at).or_else(|| insn_in_message(line)),
                message: line.to_string(),
            },
        };
    }
    let verdict = lines.iter().rposition(|l| {
        !is_stats_line(l) && insn_line(l).is_none() && !l.starts_with("from ") && !is_state_line(l)
    });
    let Some(at) = verdict else {
        return VerifierFailure {
            insn: None,
            message: String::new(),
        };
    };
    let message = lines[at].to_string();
    let insn = insn_before(at).or_else(|| insn_in_message(&message));
    VerifierFailure { insn, message }
}

/// Register-state lines: `7: R0=... R10=fp0`, `; R1_w=...` annotations and the
/// `cur state:` / `old state:` dumps of the loop detector.
fn is_state_line(line: &str) -> bool {
    if line.starts_with(';') || line.starts_with("cur state:") || line.starts_with("old state:") {
        return true;
    }
    match line.split_once(": ") {
        Some((index, rest)) => index.parse::<usize>().is_ok() && rest.starts_with('R'),
        None => false,
    }
}

/// Plain-language explanations of the verifier's common complaints: (pattern, what it
/// means, how to fix it).
const EXPLANATIONS: &[(&str, &str, &str)] = &[
    (
        "invalid mem access 'map_value_or_null'",
        "a map lookup result is used without a NULL check",
        "compare the pointer returned by the map lookup with 0 and only use it on the non-NULL path",
    ),
    (
        "!read_ok",
        "a register is read before anything was written to it",
        "initialise every variable on every path before reading it; if the script does, this is a sonde bug",
    ),
    (
        "invalid stack off",
        "the program accesses the stack outside its 512 bytes",
        "use fewer or smaller local values (long strings and tuples take stack space)",
    ),
    (
        "combined stack size",
        "the program needs more than 512 bytes of stack",
        "use fewer or smaller local values (long strings and tuples take stack space)",
    ),
    (
        "invalid indirect read from stack",
        "part of a stack buffer is passed to the kernel without being initialised",
        "initialise the whole buffer before passing it on; if the script does, this is a sonde bug",
    ),
    (
        "unreachable insn",
        "the program contains an instruction that can never run",
        "remove the code after the unconditional `return`/`exit()`; if there is none, this is a sonde bug",
    ),
    (
        "back-edge",
        "the program contains a loop the verifier cannot prove terminates",
        "bound the loop with a constant limit (`unroll(N)` or a `while` with a fixed counter)",
    ),
    (
        "infinite loop detected",
        "the program contains a loop the verifier cannot prove terminates",
        "bound the loop with a constant limit (`unroll(N)` or a `while` with a fixed counter)",
    ),
    (
        "too many instructions",
        "the program is too large or has too many paths for the verifier",
        "split the work across several probes, or reduce `unroll` counts and string sizes",
    ),
    (
        "BPF program is too large",
        "the program is too large or has too many paths for the verifier",
        "split the work across several probes, or reduce `unroll` counts and string sizes",
    ),
    (
        "min value is negative",
        "an index or size may be negative",
        "check that the value is within range (for example `if ($i >= 0 && $i < N)`) before using it",
    ),
    (
        "unbounded memory access",
        "an index or size has no upper bound the verifier can see",
        "check the value against a constant upper bound before using it as an index or size",
    ),
    (
        "max value is outside of the allowed memory range",
        "an index or size may run past the end of its buffer",
        "check the value against the buffer size before using it",
    ),
    (
        "invalid access to map value",
        "a map value is accessed outside its size",
        "check the offset against the value size before using it",
    ),
    (
        "invalid mem access 'scalar'",
        "a number is dereferenced as if it were a pointer",
        "read kernel or user memory through a cast and field access, which sonde turns into a probe read",
    ),
    (
        "unknown func",
        "the program calls a kernel helper that this probe type or kernel does not allow",
        "use this builtin or function from a different probe type",
    ),
    (
        "program of this type cannot use helper",
        "the program calls a kernel helper that this probe type does not allow",
        "use this builtin or function from a different probe type",
    ),
];

/// Builds the `sonde::load::verifier` diagnostic for `program` from its verifier `log`.
pub fn diagnose(program: &ProgramSpec, log: &str) -> Diagnostic {
    let failure = parse_log(log);
    let span = failure
        .insn
        .and_then(|i| program.insn_spans.get(i).copied())
        .unwrap_or(program.span);
    let explained = EXPLANATIONS
        .iter()
        .find(|(pattern, _, _)| failure.message.contains(pattern));
    let verdict = if failure.message.is_empty() {
        "no message"
    } else {
        &failure.message
    };
    let at = failure
        .insn
        .map(|i| format!(" at instruction {i}"))
        .unwrap_or_default();
    match explained {
        Some((_, meaning, fix)) => Diagnostic::error(
            "sonde::load::verifier",
            span,
            format!("the kernel rejected this probe: {meaning}"),
        )
        .with_label(format!("verifier: {verdict}{at}"))
        .with_help(format!("{fix} (run with -v to see the full verifier log)")),
        None => Diagnostic::error(
            "sonde::load::verifier",
            span,
            "the kernel verifier rejected this probe",
        )
        .with_label(format!("verifier: {verdict}{at}"))
        .with_help("run with -v to see the full verifier log"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::span::Span;

    const NULL_LOG: &str = "\
func#0 @0
0: R1=ctx() R10=fp0
0: (b7) r1 = 0                        ; R1_w=0
1: (7b) *(u64 *)(r10 -8) = r1         ; R1_w=0 R10=fp0 fp-8_w=0
2: (bf) r2 = r10                      ; R2_w=fp0 R10=fp0
3: (07) r2 += -8                      ; R2_w=fp-8
4: (18) r1 = 0xffff88810a1b2c00       ; R1_w=map_ptr(ks=8,vs=8)
6: (85) call bpf_map_lookup_elem#1    ; R0_w=map_value_or_null(id=1,ks=8,vs=8)
7: (79) r1 = *(u64 *)(r0 +0)
R0 invalid mem access 'map_value_or_null'
processed 7 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0
";

    #[test]
    fn finds_failing_insn_and_message() {
        let f = parse_log(NULL_LOG);
        assert_eq!(f.insn, Some(7));
        assert_eq!(f.message, "R0 invalid mem access 'map_value_or_null'");
    }

    #[test]
    fn insn_from_message_when_no_insn_line() {
        let f = parse_log("unreachable insn 5\nverification time 12 usec\n");
        assert_eq!(
            f,
            VerifierFailure {
                insn: Some(5),
                message: "unreachable insn 5".into()
            }
        );
        let f = parse_log("back-edge from insn 9 to 2\n");
        assert_eq!(f.insn, Some(9));
        assert_eq!(parse_log("").message, "");
    }

    #[test]
    fn complaint_glued_to_an_instruction_line() {
        let log = "\
0: (85) call bpf_get_prandom_u32#7    ; R0=scalar()
1: (07) r0 += 1                       ; R0=scalar()
2: (55) if r0 != 0x0 goto pc-2 infinite loop detected at insn 1
cur state: R0=scalar(umin=1) R10=fp0
old state: R0=scalar(umin=1) R10=fp0
verification time 1948 usec
stack depth 0
processed 14 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0
";
        let f = parse_log(log);
        assert_eq!(f.insn, Some(2));
        assert_eq!(f.message, "infinite loop detected at insn 1");
    }

    #[test]
    fn diagnostic_points_at_the_instruction() {
        let program = ProgramSpec {
            symbol: "p".into(),
            section: "raw_tp/x".into(),
            attach: vec![],
            probe_index: 0,
            span: Span::new(0, 5),
            insn_spans: (0..9).map(|i| Span::new(10 * i, 10 * i + 3)).collect(),
        };
        let d = diagnose(&program, NULL_LOG);
        assert_eq!(d.code, "sonde::load::verifier");
        assert_eq!(d.span, Span::new(70, 73));
        assert_eq!(
            d.message,
            "the kernel rejected this probe: a map lookup result is used without a NULL check"
        );
        assert!(d.label.contains("instruction 7"), "{}", d.label);
        // Unknown messages fall back to the probe's span when the index is out of range.
        let d = diagnose(&program, "100: (95) exit\nsomething new\n");
        assert_eq!(d.span, Span::new(0, 5));
        assert_eq!(d.message, "the kernel verifier rejected this probe");
        assert_eq!(d.label, "verifier: something new at instruction 100");
    }
}
