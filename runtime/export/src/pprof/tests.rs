//! Profiles decoded back (gunzip, then prost) and checked: samples, values, labels, function
//! names, location order; bad input makes errors, never panics.

use super::proto::{Label, Profile, Sample};
use super::*;
use prost::Message;
use sonde_compiler::value::{Frame, Stack};
use sonde_lang::types::StackMode;
use std::io::Read;

/// A frame `func+off` in `module` (none: `None`), or unresolved (`func` empty).
pub fn frame(addr: u64, func: &str, module: Option<&str>) -> Frame {
    Frame {
        addr,
        symbol: (!func.is_empty()).then(|| format!("{func}+{}", addr % 64)),
        module: module.map(str::to_string),
        ..Frame::default()
    }
}

/// A resolved stack.
pub fn stack(kernel: bool, frames: Vec<Frame>) -> Value {
    Value::Stack(Stack {
        kernel,
        mode: StackMode::Bpftrace,
        frames,
    })
}

/// The kernel stack `vfs_read ← ksys_read ← do_syscall_64`, innermost first.
pub fn kstack() -> Value {
    stack(
        true,
        vec![
            frame(0xffff_ffff_8100_1010, "vfs_read", None),
            frame(0xffff_ffff_8100_2020, "ksys_read", None),
            frame(0xffff_ffff_8100_3030, "do_syscall_64", None),
        ],
    )
}

/// The user stack `read ← main`, innermost first.
pub fn ustack() -> Value {
    stack(
        false,
        vec![
            frame(0x7f00_0000_1000, "read", Some("/usr/lib/libc.so.6")),
            frame(0x40_1234, "main", Some("/usr/bin/cat")),
        ],
    )
}

/// A map named `name` of `count()` values.
pub fn counts(name: &str, entries: Vec<(Value, u64)>) -> MapDump {
    MapDump {
        name: name.into(),
        value_type: Type::Agg(AggKind::Count),
        entries: entries
            .into_iter()
            .map(|(k, c)| (k, Value::Agg(AggValue::Count(c))))
            .collect(),
    }
}

/// `s` as a string value.
pub fn text(s: &str) -> Value {
    Value::Str(s.as_bytes().to_vec())
}

/// Key names from strings.
pub fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// Gunzips and decodes a profile.
fn decode(gz: &[u8]) -> Profile {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut bytes)
        .expect("gzip");
    Profile::decode(bytes.as_slice()).expect("protobuf")
}

/// The string at `i`.
fn s(p: &Profile, i: i64) -> &str {
    &p.string_table[i as usize]
}

/// A sample's frames, leaf first: function names, or `0x` addresses when unresolved.
fn frames(p: &Profile, sample: &Sample) -> Vec<String> {
    sample
        .location_id
        .iter()
        .map(|id| {
            let loc = &p.location[*id as usize - 1];
            assert_eq!(loc.id, *id);
            match loc.line.first() {
                Some(line) => {
                    let f = &p.function[line.function_id as usize - 1];
                    s(p, f.name).to_string()
                }
                None => format!("{:#x}", loc.address),
            }
        })
        .collect()
}

/// A sample's labels as `name=value` texts.
fn labels(p: &Profile, sample: &Sample) -> Vec<String> {
    sample
        .label
        .iter()
        .map(|l: &Label| match l.str {
            0 => format!("{}={}", s(p, l.key), l.num),
            i => format!("{}={}", s(p, l.key), s(p, i)),
        })
        .collect()
}

#[test]
fn kernel_then_user_frames_leaf_first_with_labels() {
    let key = Value::Tuple(vec![kstack(), ustack(), text("cat"), Value::UInt(42)]);
    let dump = counts("reads", vec![(key, 7)]);
    let keys = names(&["kstack", "ustack", "comm", "pid"]);
    let p = decode(&profile(&dump, &keys, &ProfileOptions::default()).unwrap());
    assert_eq!(p.string_table[0], "");
    assert_eq!(p.sample.len(), 1);
    assert_eq!(
        frames(&p, &p.sample[0]),
        ["vfs_read", "ksys_read", "do_syscall_64", "read", "main"]
    );
    assert_eq!(p.sample[0].value, [7]);
    assert_eq!(labels(&p, &p.sample[0]), ["comm=cat", "pid=42"]);
    assert_eq!(p.sample_type.len(), 1);
    assert_eq!(s(&p, p.sample_type[0].r#type), "samples");
    assert_eq!(s(&p, p.sample_type[0].unit), "count");
    assert_eq!(p.period, 1);
    let mappings: Vec<&str> = p.mapping.iter().map(|m| s(&p, m.filename)).collect();
    assert_eq!(
        mappings,
        ["[kernel.kallsyms]", "/usr/lib/libc.so.6", "/usr/bin/cat"]
    );
    assert!(p.mapping.iter().all(|m| m.id > 0 && m.has_functions));
    let main = &p.location[4];
    assert_eq!((main.address, main.mapping_id), (0x40_1234, 3));
}

#[test]
fn entries_share_locations_and_functions() {
    let dump = counts(
        "",
        vec![
            (Value::Tuple(vec![kstack(), text("a")]), 1),
            (Value::Tuple(vec![kstack(), text("b")]), 2),
            (ustack(), 0),
        ],
    );
    let p = decode(&profile(&dump, &[], &ProfileOptions::default()).unwrap());
    assert_eq!(p.sample.len(), 2, "the zero count is left out");
    assert_eq!(p.location.len(), 3);
    assert_eq!(p.function.len(), 3);
    assert_eq!(p.sample[0].location_id, p.sample[1].location_id);
    assert_eq!(labels(&p, &p.sample[1]), ["key1=b"]);
    assert_eq!(p.sample[1].value, [2]);
}

#[test]
fn sums_with_a_unit_and_times() {
    let dump = MapDump {
        name: "offcpu".into(),
        value_type: Type::Agg(AggKind::Sum { signed: false }),
        entries: vec![(
            Value::Tuple(vec![kstack(), text("sleep")]),
            Value::Agg(AggValue::Sum {
                value: 1_500_000,
                signed: false,
            }),
        )],
    };
    let opts = ProfileOptions {
        unit: Some("nanoseconds".into()),
        time_nanos: 1_700_000_000_000_000_000,
        duration_nanos: 10_000_000_000,
        ..ProfileOptions::default()
    };
    let p = decode(&profile(&dump, &names(&["kstack", "comm"]), &opts).unwrap());
    assert_eq!(s(&p, p.sample_type[0].r#type), "value");
    assert_eq!(s(&p, p.sample_type[0].unit), "nanoseconds");
    assert_eq!(p.sample[0].value, [1_500_000]);
    assert_eq!(p.time_nanos, 1_700_000_000_000_000_000);
    assert_eq!(p.duration_nanos, 10_000_000_000);
    assert_eq!(p.period_type, Some(p.sample_type[0]));
}

#[test]
fn a_frequency_makes_cpu_time() {
    let dump = counts("cpu", vec![(ustack(), 3)]);
    let opts = ProfileOptions {
        frequency_hz: 99,
        sample_type: Some("cpu_samples".into()),
        ..ProfileOptions::default()
    };
    let p = decode(&profile(&dump, &[], &opts).unwrap());
    let types: Vec<String> = p
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", s(&p, t.r#type), s(&p, t.unit)))
        .collect();
    assert_eq!(types, ["cpu_samples/count", "cpu/nanoseconds"]);
    let period_type = p.period_type.unwrap();
    assert_eq!(s(&p, period_type.r#type), "cpu");
    assert_eq!(p.period, 10_101_010);
    assert_eq!(p.sample[0].value, [3, 30_303_030]);
    assert_eq!(frames(&p, &p.sample[0]), ["read", "main"]);
}

#[test]
fn integer_values_and_plain_stack_keys() {
    let dump = MapDump {
        name: "x".into(),
        value_type: Type::Int {
            bits: 64,
            signed: true,
        },
        entries: vec![
            (kstack(), Value::Int(-4)),
            (ustack(), Value::UInt(u64::MAX)),
        ],
    };
    let p = decode(&profile(&dump, &[], &ProfileOptions::default()).unwrap());
    assert_eq!(s(&p, p.sample_type[0].r#type), "value");
    assert_eq!(p.sample[0].value, [-4]);
    assert_eq!(p.sample[1].value, [i64::MAX]);
    assert!(p.sample[0].label.is_empty());
}

#[test]
fn unresolved_frames_are_addresses() {
    let key = stack(
        false,
        vec![
            frame(0x1234, "", Some("/bin/x")),
            frame(0x5678, "", None),
            frame(0x9abc, "main", None),
        ],
    );
    let dump = counts("x", vec![(key, 1)]);
    let p = decode(&profile(&dump, &[], &ProfileOptions::default()).unwrap());
    assert_eq!(frames(&p, &p.sample[0]), ["0x1234", "0x5678", "main"]);
    assert!(p.location[0].line.is_empty());
    assert_eq!(p.location[0].mapping_id, 1);
    assert_eq!(p.location[1].mapping_id, 0);
}

#[test]
fn a_map_without_stacks_is_an_error_naming_it() {
    let dump = counts("x", vec![(text("cat"), 1)]);
    let err = profile(&dump, &[], &ProfileOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "@x is not keyed by a stack: pprof needs kstack or ustack in its key"
    );
    let dump = counts("y", vec![(Value::Tuple(vec![Value::Int(1), text("a")]), 1)]);
    let err = profile(&dump, &[], &ProfileOptions::default()).unwrap_err();
    assert_eq!(err, ProfileError::NotStackKeyed { map: "y".into() });
}

#[test]
fn unresolved_stacks_and_non_counts_are_errors() {
    let id = Value::StackId {
        kernel: true,
        mode: StackMode::Bpftrace,
        limit: 127,
        raw: 1,
    };
    let err = profile(&counts("x", vec![(id, 1)]), &[], &ProfileOptions::default());
    assert!(err.unwrap_err().to_string().contains("not resolved"));
    let dump = MapDump {
        name: "lat".into(),
        value_type: Type::Agg(AggKind::Avg { signed: false }),
        entries: vec![(
            kstack(),
            Value::Agg(AggValue::Avg {
                sum: 1,
                count: 1,
                signed: false,
            }),
        )],
    };
    let err = profile(&dump, &[], &ProfileOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "@lat holds avg() values: pprof needs count(), sum() or an integer value"
    );
}

#[test]
fn an_empty_map_is_an_empty_profile() {
    let p = decode(&profile(&counts("x", vec![]), &[], &ProfileOptions::default()).unwrap());
    assert!(p.sample.is_empty() && p.location.is_empty());
    assert_eq!(s(&p, p.sample_type[0].r#type), "samples");
}

#[test]
fn odd_keys_never_panic() {
    // Two stacks of the same kind and a string; empty stacks; huge keys; odd label values.
    let huge: Vec<Frame> = (0..5000)
        .map(|i| frame(i, if i % 3 == 0 { "" } else { "f" }, None))
        .collect();
    let big_text = text(&"x".repeat(100_000));
    let odd = vec![
        (Value::Tuple(vec![ustack(), ustack(), text("cat")]), 1),
        (
            Value::Tuple(vec![kstack(), kstack(), text("\u{0}\u{fffd}")]),
            2,
        ),
        (stack(true, vec![]), 3),
        (Value::Tuple(vec![stack(false, huge), big_text]), 4),
        (
            Value::Tuple(vec![
                kstack(),
                Value::Bool(true),
                Value::Ptr(0xdead),
                Value::None,
                Value::Tuple(vec![Value::Int(1), text("n")]),
                Value::Buf(vec![0xff, 0]),
                Value::Text("t".into()),
            ]),
            5,
        ),
        (Value::Tuple(vec![]), 6),
    ];
    let dump = counts("odd", odd.clone());
    let many_names = names(&["", "a"]);
    let err = profile(&dump, &many_names, &ProfileOptions::default()).unwrap_err();
    assert_eq!(err, ProfileError::NotStackKeyed { map: "odd".into() });
    let dump = counts("odd", odd[..5].to_vec());
    let opts = ProfileOptions {
        frequency_hz: u64::MAX,
        sample_type: Some(String::new()),
        unit: Some(String::new()),
        time_nanos: i64::MIN,
        duration_nanos: -1,
    };
    let p = decode(&profile(&dump, &many_names, &opts).unwrap());
    assert_eq!(p.sample.len(), 5);
    assert_eq!(
        frames(&p, &p.sample[0]),
        ["read", "main", "read", "main"],
        "two user stacks one after the other"
    );
    assert_eq!(labels(&p, &p.sample[0]), ["key2=cat"]);
    assert!(p.sample[2].location_id.is_empty());
    assert_eq!(p.sample[3].location_id.len(), 5000);
    assert_eq!(p.period, 1);
    assert_eq!(p.sample[4].label.len(), 5, "all but the stack and the none");
}

#[test]
fn a_delta_profiles_what_the_map_gained() {
    let a = Value::Tuple(vec![kstack(), text("a")]);
    let b = Value::Tuple(vec![ustack(), text("b")]);
    let before = counts("x", vec![(a.clone(), 5), (b.clone(), 9)]);
    let after = counts("x", vec![(a, 8), (b, 9)]);
    let d = delta(&before, &after);
    let p = decode(&profile(&d, &names(&["kstack", "comm"]), &ProfileOptions::default()).unwrap());
    assert_eq!(p.sample.len(), 1, "the unchanged entry is left out");
    assert_eq!(p.sample[0].value, [3]);
    assert_eq!(labels(&p, &p.sample[0]), ["comm=a"]);
}
