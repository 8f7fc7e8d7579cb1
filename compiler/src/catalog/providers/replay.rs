//! `replay` and `replay:N`: the printf events of a recording (`sonde replay FILE SCRIPT`), in
//! the userspace engine. `replay` fires for every recorded printf event, `replay:N` for events
//! of kind N only. `args.argI` is the I-th printf argument with its recorded type, `line` is
//! the text the event printed (so `field(N)` splits it), and `nsecs` is the event's timestamp.

use super::common::{bad_attach_point, expect_parts, part_span};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{KernelInfo, RecordedEvent};
use sonde_lang::types::{Field, Record, tuple_layout};
use std::sync::Arc;

const USAGE: &str = "replay | replay:N";

/// The replay provider.
pub struct Replay;

impl Provider for Replay {
    fn names(&self) -> &'static [&'static str] {
        &["replay"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "Fires for each printf event of a recording, with its arguments as args.arg0.. (sonde replay FILE SCRIPT; sonde extension)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 0, 1, USAGE)?;
        let events = kernel.recorded_events();
        let wanted = match ap.parts.first().map(String::as_str) {
            None | Some("*") => None,
            Some(n) => Some(n.parse::<u32>().map_err(|_| {
                bad_attach_point(part_span(ap, 0), "the event kind must be a number", USAGE)
            })?),
        };
        let out: Vec<ResolvedAttach> = events
            .iter()
            .filter(|e| wanted.is_none_or(|w| w == e.index))
            .map(|e| ResolvedAttach {
                name: format!("replay:{}", e.index),
                parts: vec![e.index.to_string()],
                span: ap.span,
                ctx: ProbeContext {
                    args: Some(Arc::new(args_record(e))),
                    ..ProbeContext::bare("replay")
                },
            })
            .collect();
        if out.is_empty() {
            let help = if events.is_empty() && kernel.replaying() {
                "the recording has no printf events (its script called no printf): there is \
                 nothing for `replay` probes to see"
                    .to_string()
            } else if events.is_empty() {
                "`replay` probes run against a recording: `sonde replay FILE SCRIPT`".to_string()
            } else {
                format!(
                    "the recording's printf events are kinds {}",
                    events
                        .iter()
                        .map(|e| format!("{} ({:?})", e.index, e.format))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(Diagnostic::error(
                super::common::NO_MATCH,
                ap.span,
                "no recorded printf event matches this replay probe",
            )
            .with_label("nothing to replay here")
            .with_help(help));
        }
        Ok(out)
    }
}

/// The `args` record of one recorded event: `arg0`, `arg1`, ... at their tuple offsets.
fn args_record(e: &RecordedEvent) -> Record {
    let (offsets, size) = tuple_layout(&e.args);
    Record {
        name: format!("replay:{}", e.index),
        size,
        fields: e
            .args
            .iter()
            .zip(offsets)
            .enumerate()
            .map(|(i, (ty, offset))| Field {
                name: format!("arg{i}"),
                offset,
                ty: ty.clone(),
                bitfield: None,
                data_loc: false,
                nul_room: false,
            })
            .collect(),
        is_union: false,
    }
}

impl ProviderBackend for Replay {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Replay {
            event: attach
                .parts
                .first()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::OwnedRecord
    }
    fn userspace(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;
    use sonde_lang::types::Type;

    /// A recording's printf events, and nothing else known.
    struct Rec(Vec<RecordedEvent>);
    impl KernelInfo for Rec {
        fn elf_functions(&self, _: &str) -> Result<Vec<String>, String> {
            Err(String::new())
        }
        fn recorded_events(&self) -> Vec<RecordedEvent> {
            self.0.clone()
        }
        fn replaying(&self) -> bool {
            true
        }
    }

    fn two_events() -> Rec {
        Rec(vec![
            RecordedEvent {
                index: 0,
                format: "%d %s\n".into(),
                args: vec![Type::I64, Type::Str { size: 16 }],
            },
            RecordedEvent {
                index: 2,
                format: "x\n".into(),
                args: vec![],
            },
        ])
    }

    #[test]
    fn one_instance_per_recorded_event() {
        let rec = two_events();
        let r = Replay.resolve(&ap("replay"), &rec).unwrap();
        assert_eq!(r.len(), 2);
        let args = r[0].ctx.args.as_ref().unwrap();
        assert_eq!(args.field("arg1").unwrap().offset, 8);
        assert_eq!(Replay.attach_spec(&r[1]), AttachSpec::Replay { event: 2 });
        assert_eq!(Replay.resolve(&ap("replay:2"), &rec).unwrap().len(), 1);
        assert!(Replay.resolve(&ap("replay:7"), &rec).is_err());
        let e = Replay.resolve(&ap("replay"), &NoKernel).unwrap_err();
        assert!(e.help.unwrap().contains("sonde replay FILE SCRIPT"));
    }

    #[test]
    fn a_recording_without_printf_says_so() {
        let e = Replay.resolve(&ap("replay"), &Rec(Vec::new())).unwrap_err();
        assert!(e.help.unwrap().contains("no printf events"));
    }
}
