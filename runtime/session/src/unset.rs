//! `print(@x)` of a key-less map nothing has set yet: bpftrace 0.27 prints its zero.

use crate::formats::EventFormats;
use sonde_compiler::program::{MapRole, MapSpec};
use sonde_compiler::value::{Value, decode_agg};
use sonde_lang::types::{AggKind, Type};
use sonde_present::output::MapDump;

/// `dump` of map `spec`, with the zero of its value when it is a key-less integer, bool,
/// record, tuple, `count()`, `sum()`, `avg()` or `stats()` map without an entry (`@x: 0`,
/// `@x: { .count = 0, .average = 0, .total = 0 }`, `@x: (0, )`); other maps as they are.
pub(crate) fn zero_if_unset(
    mut dump: MapDump,
    spec: Option<&MapSpec>,
    formats: &EventFormats,
) -> MapDump {
    let keyless = spec.is_some_and(|s| matches!(&s.role, MapRole::User { key: None, .. }));
    if !keyless || !dump.entries.is_empty() {
        return dump;
    }
    let zero = match &dump.value_type {
        Type::Agg(
            k
            @ (AggKind::Count | AggKind::Sum { .. } | AggKind::Avg { .. } | AggKind::Stats { .. }),
        ) => {
            let slot = vec![0u8; sonde_compiler::catalog::aggs::value_size(k) as usize];
            decode_agg(k, &[&slot[..]])
        }
        t @ (Type::Int { .. } | Type::Bool | Type::Record(_) | Type::Tuple(_)) => {
            formats.decode(t, &vec![0; t.size() as usize])
        }
        _ => return dump,
    };
    dump.entries.push((Value::None, zero));
    dump
}
