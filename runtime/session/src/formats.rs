//! The printf-like events' formats (printf, cat, system, errorf/warnf), parsed once per
//! script and applied to each event's payload.

use sonde_compiler::program::EventSpec;
use sonde_compiler::value::{Value, decode_marked};
use sonde_lang::format::{FmtPiece, parse_format};
use sonde_lang::types::{Type, tuple_layout};
use sonde_present::output::Resolver;

/// The parsed formats of a script's printf-like events (printf, cat, system), by event id,
/// and the trailer of strings cut to their size.
pub struct EventFormats {
    formats: Vec<Option<(Vec<FmtPiece>, Vec<u32>)>>,
    /// What a string cut to its size ends with (the script's `str_trunc_trailer`).
    trailer: Vec<u8>,
}

impl EventFormats {
    /// The formats of `events`, with their arguments' offsets in the payload; strings cut to
    /// their size end with `trailer` (`str_trunc_trailer`, bpftrace's default `..`).
    pub fn new(events: &[EventSpec], trailer: &[u8]) -> Self {
        EventFormats {
            formats: events
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
            trailer: trailer.to_vec(),
        }
    }

    /// Decodes a value to print: a string cut to its size ends with the trailer.
    pub fn decode(&self, ty: &Type, bytes: &[u8]) -> Value {
        decode_marked(ty, bytes, &self.trailer)
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
        let Some(Some((_, offsets))) = self.formats.get(id) else {
            return Vec::new();
        };
        args.iter()
            .zip(offsets.iter().copied())
            .map(|(ty, off)| {
                let off = off as usize;
                let end = (off + ty.size() as usize).min(payload.len());
                self.decode(ty, payload.get(off..end).unwrap_or(&[]))
            })
            .collect()
    }

    /// Formats event `id` with its decoded arguments `values`.
    pub fn format_values(&self, id: usize, values: &[Value], resolver: &dyn Resolver) -> Vec<u8> {
        match self.formats.get(id) {
            Some(Some((pieces, _))) => {
                sonde_present::output::format_printf_with(pieces, values, resolver)
            }
            _ => Vec::new(),
        }
    }
}
