//! The printf-like events' formats (printf, cat, system, errorf/warnf), parsed once per
//! script and applied to each event's payload.

use super::decode;
use crate::output::Resolver;
use sonde_compiler::program::EventSpec;
use sonde_compiler::value::Value;
use sonde_lang::format::{FmtPiece, parse_format};
use sonde_lang::types::{Type, tuple_layout};

/// The parsed formats of a script's printf-like events (printf, cat, system), by event id.
pub struct EventFormats(Vec<Option<(Vec<FmtPiece>, Vec<u32>)>>);

impl EventFormats {
    /// The formats of `events`, with their arguments' offsets in the payload.
    pub fn new(events: &[EventSpec]) -> Self {
        EventFormats(
            events
                .iter()
                .map(|e| match e {
                    EventSpec::Printf { format, args }
                    | EventSpec::Cat { format, args }
                    | EventSpec::System { format, args }
                    | EventSpec::Log { format, args, .. } => parse_format(format)
                        .ok()
                        .map(|pieces| (pieces, tuple_layout(args).0)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Formats event `id`, whose arguments of types `args` are laid out as a tuple in
    /// `payload`, naming what needs names with `resolver`.
    pub fn format(
        &self,
        id: usize,
        args: &[Type],
        payload: &[u8],
        resolver: &dyn Resolver,
    ) -> Vec<u8> {
        self.format_values(id, &self.values(id, args, payload), resolver)
    }

    /// The arguments of event `id` (of types `args`, laid out as a tuple in `payload`).
    pub fn values(&self, id: usize, args: &[Type], payload: &[u8]) -> Vec<Value> {
        let Some(Some((_, offsets))) = self.0.get(id) else {
            return Vec::new();
        };
        args.iter()
            .zip(offsets.iter().copied())
            .map(|(ty, off)| {
                let off = off as usize;
                let end = (off + ty.size() as usize).min(payload.len());
                decode(ty, payload.get(off..end).unwrap_or(&[]))
            })
            .collect()
    }

    /// Formats event `id` with its decoded arguments `values`.
    pub fn format_values(&self, id: usize, values: &[Value], resolver: &dyn Resolver) -> Vec<u8> {
        match self.0.get(id) {
            Some(Some((pieces, _))) => crate::output::format_printf_with(pieces, values, resolver),
            _ => Vec::new(),
        }
    }
}
