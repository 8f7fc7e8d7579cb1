//! A run's stack-keyed maps as pprof profiles (gzipped `profile.proto`), the format Parca,
//! Grafana Alloy and `go tool pprof` read from `/debug/pprof/<map>`.
//!
//! A map whose key holds one or more resolved stacks (`@[kstack, ustack, comm] = count()`)
//! and whose value is `count()`, `sum()` or an integer becomes one sample per entry
//! ([`profile`]): its locations are the key's kernel frames then its user frames, leaf first;
//! the key's other parts are labels; functions are named without their `+off`; each module
//! is a mapping (the kernel `[kernel.kallsyms]`). [`delta`] makes `?seconds=N` profiles: what
//! a map gained between two reads.
//!
//! Folded stacks (Pyroscope's `/ingest?format=folded`) are not made here: they are
//! `sonde_present::output::folded::folded_lines`, the lines `-f folded` prints.

pub mod delta;
pub mod proto;
pub mod samples;
pub mod tables;

#[cfg(test)]
mod go_tests;
#[cfg(test)]
mod tests;

pub use delta::delta;

use flate2::Compression;
use flate2::write::GzEncoder;
use proto::{Profile, ValueType};
use samples::{KeyShape, sample, sample_value, shape};
use sonde_compiler::value::{AggValue, Value};
use sonde_lang::types::{AggKind, Type};
use sonde_present::output::MapDump;
use std::fmt;
use std::io::Write;
use tables::Tables;

/// How a profile describes its values and its collection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileOptions {
    /// The kind of the map's values; `None`: `samples` for `count()`, `value` otherwise.
    pub sample_type: Option<String>,
    /// Their unit; `None`: `count` (`nanoseconds` for an offcputime-style `sum(delta)`).
    pub unit: Option<String>,
    /// The frequency of the probe that filled the map (`profile:hz:99`: 99); 0 when it is
    /// not sampled at a frequency. With a frequency, the period is CPU time
    /// (`cpu/nanoseconds`, 10^9/hz) and a `count()` map gets a second value, its CPU time
    /// (`cpu/nanoseconds`, count × period), as Go's CPU profiles have.
    pub frequency_hz: u64,
    /// When the collection started, nanoseconds since the Unix epoch.
    pub time_nanos: i64,
    /// How long it lasted, in nanoseconds.
    pub duration_nanos: i64,
}

/// Why a map makes no profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileError {
    /// The map's key holds no stack.
    NotStackKeyed {
        /// The map's name, without `@`.
        map: String,
    },
    /// The map's stacks are still stack ids: they must be resolved before encoding.
    UnresolvedStacks {
        /// The map's name, without `@`.
        map: String,
    },
    /// The map's values are not counts.
    NotCounts {
        /// The map's name, without `@`.
        map: String,
        /// The value type found (`avg()`, `string`, ...).
        found: String,
    },
    /// Compressing the profile failed.
    Gzip(String),
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::NotStackKeyed { map } => write!(
                f,
                "@{map} is not keyed by a stack: pprof needs kstack or ustack in its key"
            ),
            ProfileError::UnresolvedStacks { map } => write!(
                f,
                "@{map}'s stacks are not resolved: resolve them to frames before encoding a \
                 profile"
            ),
            ProfileError::NotCounts { map, found } => write!(
                f,
                "@{map} holds {found} values: pprof needs count(), sum() or an integer value"
            ),
            ProfileError::Gzip(e) => write!(f, "cannot gzip the profile: {e}"),
        }
    }
}

impl std::error::Error for ProfileError {}

/// True when the map's values are `count()`s (decided by its type, or by its values when
/// the type is not an aggregation).
fn counts(dump: &MapDump) -> bool {
    match &dump.value_type {
        Type::Agg(kind) => *kind == AggKind::Count,
        _ => dump
            .entries
            .iter()
            .any(|(_, v)| matches!(v, Value::Agg(AggValue::Count(_)))),
    }
}

/// The sample types, the period type and the period of a profile.
fn describe(
    tables: &mut Tables,
    dump: &MapDump,
    opts: &ProfileOptions,
) -> (Vec<ValueType>, ValueType, i64) {
    let is_count = counts(dump);
    let default_kind = if is_count { "samples" } else { "value" };
    let kind = opts.sample_type.as_deref().unwrap_or(default_kind);
    let unit = opts.unit.as_deref().unwrap_or("count");
    let mut value_type = |kind: &str, unit: &str| ValueType {
        r#type: tables.string(kind),
        unit: tables.string(unit),
    };
    let mut types = vec![value_type(kind, unit)];
    if opts.frequency_hz == 0 {
        return (types.clone(), types[0], 1);
    }
    let cpu = value_type("cpu", "nanoseconds");
    if is_count {
        types.push(cpu);
    }
    let period = 1_000_000_000 / opts.frequency_hz.max(1);
    (types, cpu, i64::try_from(period).unwrap_or(1).max(1))
}

/// Checks that every entry is keyed by resolved stacks and holds a count.
fn check(dump: &MapDump) -> Result<(), ProfileError> {
    let map = || dump.name.clone();
    for (key, value) in &dump.entries {
        match shape(key) {
            KeyShape::Stacks => {}
            KeyShape::Unresolved => return Err(ProfileError::UnresolvedStacks { map: map() }),
            KeyShape::NoStack => return Err(ProfileError::NotStackKeyed { map: map() }),
        }
        if sample_value(value).is_none() {
            return Err(ProfileError::NotCounts {
                map: map(),
                found: match &dump.value_type {
                    Type::Agg(_) => format!("{}()", dump.value_type),
                    other => other.to_string(),
                },
            });
        }
    }
    Ok(())
}

/// The profile of a map keyed by stacks, before compression. Entries whose value is 0 are
/// left out (a `delta` with nothing new, a map after `zero()`).
pub fn build(
    dump: &MapDump,
    key_names: &[String],
    opts: &ProfileOptions,
) -> Result<Profile, ProfileError> {
    check(dump)?;
    let mut tables = Tables::default();
    let (sample_type, period_type, period) = describe(&mut tables, dump, opts);
    let mut profile = Profile {
        time_nanos: opts.time_nanos,
        duration_nanos: opts.duration_nanos,
        period_type: Some(period_type),
        period,
        ..Profile::default()
    };
    for (key, value) in &dump.entries {
        let v = sample_value(value).unwrap_or(0);
        if v == 0 {
            continue;
        }
        let mut values = vec![v];
        if sample_type.len() > 1 {
            values.push(v.saturating_mul(period));
        }
        profile
            .sample
            .push(sample(&mut tables, key, key_names, values));
    }
    profile.sample_type = sample_type;
    tables.fill(&mut profile);
    Ok(profile)
}

/// A map keyed by stacks as a gzipped pprof profile: what `/debug/pprof/<map>` serves.
/// `key_names` names the key's parts in order (`["kstack", "ustack", "comm"]`); the parts
/// that are not stacks become labels by those names (`key0`, `key1`, ... when unnamed).
/// An empty map makes a valid profile without samples.
pub fn profile(
    dump: &MapDump,
    key_names: &[String],
    opts: &ProfileOptions,
) -> Result<Vec<u8>, ProfileError> {
    let bytes = prost::Message::encode_to_vec(&build(dump, key_names, opts)?);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&bytes)
        .and_then(|()| gz.finish())
        .map_err(|e| ProfileError::Gzip(e.to_string()))
}
