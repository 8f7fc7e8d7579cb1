//! Tests of the BTF reader: a hand-built BTF blob with one type of each interesting kind,
//! then the real kernel BTF of the machine.

use super::cdecl::{declaration, record_definition};
use super::convert::{RecordCache, to_record, to_type};
use super::*;
use sonde_lang::types::{AddrSpace, Type};

/// Builds little-endian BTF bytes type by type.
#[derive(Default)]
struct Builder {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            types: Vec::new(),
            strings: vec![0],
        }
    }
    fn s(&mut self, name: &str) -> u32 {
        if name.is_empty() {
            return 0;
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        off
    }
    fn w(&mut self, x: u32) {
        self.types.extend_from_slice(&x.to_le_bytes());
    }
    fn head(&mut self, name: &str, kind: u32, flag: bool, vlen: u32, size_or_type: u32) {
        let n = self.s(name);
        self.w(n);
        self.w((u32::from(flag) << 31) | (kind << 24) | vlen);
        self.w(size_or_type);
    }
    fn member(&mut self, name: &str, ty: u32, off: u32) {
        let n = self.s(name);
        self.w(n);
        self.w(ty);
        self.w(off);
    }
    fn finish(self) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0xeb9fu16.to_le_bytes());
        v.extend_from_slice(&[1, 0]);
        for x in [
            24,
            0,
            self.types.len() as u32,
            self.types.len() as u32,
            self.strings.len() as u32,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&self.types);
        v.extend_from_slice(&self.strings);
        v
    }
}

/// Ids: 1 int, 2 char, 3 char[16], 4 struct foo, 5 struct foo *, 6 enum state,
/// 7 typedef u8 (unsigned char = 8), 8 unsigned char, 9 u8[4], 10 const char, 11 ptr const char,
/// 12 anonymous union, 13 func proto int(struct foo *), 14 ptr to proto.
fn sample() -> Btf {
    let mut b = Builder::new();
    b.head("int", 1, false, 0, 4);
    b.w((1 << 24) | 32); // signed, 32 bits
    b.head("char", 1, false, 0, 1);
    b.w((1 << 24) | 8);
    b.head("", 3, false, 0, 0);
    b.w(2);
    b.w(1);
    b.w(16);
    b.head("foo", 4, true, 6, 48);
    b.member("a", 1, 0);
    b.member("name", 3, 32);
    b.member("next", 5, 192);
    b.member("flags", 1, (3 << 24) | 259); // 3-bit bitfield at bit 259
    b.member("", 12, 320);
    b.member("cb", 14, 320 + 64);
    b.head("", 2, false, 0, 4);
    b.head("state", 6, false, 2, 4);
    let n = b.s("ST_A");
    b.w(n);
    b.w(1);
    let n = b.s("ST_B");
    b.w(n);
    b.w(7);
    b.head("u8", 8, false, 0, 8);
    b.head("unsigned char", 1, false, 0, 1);
    b.w(8);
    b.head("", 3, false, 0, 0);
    b.w(7);
    b.w(1);
    b.w(4);
    b.head("", 10, false, 0, 2);
    b.head("", 2, false, 0, 10);
    b.head("", 5, false, 2, 8);
    b.member("u_state", 6, 0);
    b.member("u_raw", 9, 0);
    b.head("", 13, false, 1, 1);
    b.w(0);
    b.w(5);
    b.head("", 2, false, 0, 13);
    Btf::parse(b.finish()).expect("sample BTF parses")
}

#[test]
fn parses_every_sample_type() {
    let btf = sample();
    assert_eq!(btf.len(), 15);
    assert_eq!(btf.ty(4).unwrap().name, "foo");
    assert_eq!(btf.ty(4).unwrap().kind, Kind::Struct);
    assert_eq!(btf.ids_named("foo"), [4]);
    assert_eq!(btf.enumerator("ST_B"), Some(("state", 7)));
    assert_eq!(btf.enumerator("ST_C"), None);
    assert_eq!(btf.find_record("foo", false), Some(4));
    assert_eq!(btf.find_record("foo", true), None);
    assert_eq!(
        btf.ty(6).unwrap().enumerators(&btf),
        vec![("ST_A", 1), ("ST_B", 7)]
    );
    assert_eq!(btf.size_of(3), 16);
    assert_eq!(btf.strip(7), 8);
    assert!(btf.ty(15).is_none());
}

#[test]
fn converts_sample_struct() {
    let btf = sample();
    let mut cache = RecordCache::new();
    let r = to_record(&btf, 4, &mut cache).unwrap();
    assert_eq!(r.name, "struct foo");
    assert_eq!(r.size, 48);
    let names: Vec<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["a", "name", "next", "flags", "u_state", "u_raw", "cb"]
    );
    assert_eq!(r.field("a").unwrap().ty, Type::I32);
    assert_eq!(r.field("name").unwrap().ty, Type::Str { size: 16 });
    assert_eq!(r.field("name").unwrap().offset, 4);
    let next = &r.field("next").unwrap().ty;
    match next {
        Type::Ptr {
            pointee,
            space: AddrSpace::Kernel,
        } => match &**pointee {
            Type::Record(p) => {
                assert_eq!(p.name, "struct foo");
                assert!(p.fields.is_empty() && p.size == 0, "pointee is opaque");
            }
            other => panic!("pointee {other:?}"),
        },
        other => panic!("next {other:?}"),
    }
    let flags = r.field("flags").unwrap();
    assert_eq!((flags.offset, flags.bitfield), (32, Some((3, 3))));
    assert_eq!(
        flags.ty,
        Type::Int {
            bits: 8,
            signed: true
        }
    );
    // Anonymous union members are flattened at the union's offset.
    assert_eq!(r.field("u_state").unwrap().offset, 40);
    assert_eq!(
        r.field("u_state").unwrap().ty,
        Type::Enum {
            name: "state".into(),
            bits: 32
        }
    );
    assert_eq!(
        r.field("u_raw").unwrap().ty,
        Type::Array {
            elem: Box::new(Type::U8),
            len: 4
        }
    );
    assert_eq!(
        r.field("cb").unwrap().ty,
        Type::Ptr {
            pointee: Box::new(Type::Void),
            space: AddrSpace::Kernel
        }
    );
    assert_eq!(
        to_type(&btf, 11, &mut cache),
        Type::Ptr {
            pointee: Box::new(Type::Int {
                bits: 8,
                signed: true
            }),
            space: AddrSpace::Kernel
        }
    );
}

#[test]
fn renders_sample_as_c() {
    let btf = sample();
    assert_eq!(declaration(&btf, 11, "s"), "const char *s");
    assert_eq!(declaration(&btf, 3, "comm"), "char comm[16]");
    assert_eq!(declaration(&btf, 14, "cb"), "int (*cb)(struct foo *)");
    assert_eq!(
        record_definition(&btf, 4).unwrap(),
        "struct foo {\n\tint a;\n\tchar name[16];\n\tstruct foo *next;\n\tint flags: 3;\n\
         \tunion {\n\t\tenum state u_state;\n\t\tu8 u_raw[4];\n\t};\n\tint (*cb)(struct foo *);\n};"
    );
}

#[test]
fn rejects_malformed_data() {
    assert!(Btf::parse(vec![0; 10]).unwrap_err().contains("shorter"));
    assert!(Btf::parse(vec![0; 40]).unwrap_err().contains("magic"));
    let mut data = sample_bytes_truncated();
    data.truncate(data.len());
    assert!(Btf::parse(data).is_err());
}

/// A header that claims more type bytes than there are.
fn sample_bytes_truncated() -> Vec<u8> {
    let mut b = Builder::new();
    b.head("int", 1, false, 0, 4);
    let mut v = b.finish();
    v[12..16].copy_from_slice(&1000u32.to_le_bytes());
    v
}

fn vmlinux() -> Btf {
    Btf::from_file("/sys/kernel/btf/vmlinux").expect("kernel BTF")
}

#[test]
fn vmlinux_parses_quickly_and_fully() {
    let data = std::fs::read("/sys/kernel/btf/vmlinux").unwrap();
    let t = std::time::Instant::now();
    let btf = Btf::parse(data).unwrap();
    let parse = t.elapsed();
    assert!(btf.len() > 10_000, "{} types", btf.len());
    // Generous for unoptimised test builds; release builds take a few milliseconds.
    assert!(parse.as_millis() < 500, "parse took {parse:?}");
}

#[test]
fn vmlinux_task_struct_fields() {
    let btf = vmlinux();
    let mut cache = RecordCache::new();
    let id = btf.find_record("task_struct", false).unwrap();
    let r = to_record(&btf, id, &mut cache).unwrap();
    assert_eq!(r.name, "struct task_struct");
    let pid = r.field("pid").unwrap();
    assert_eq!(pid.ty, Type::I32);
    let comm = r.field("comm").unwrap();
    assert_eq!(comm.ty, Type::Str { size: 16 });
    // Checked with bpftrace on Linux 6.18 (`*(int32*)((uint64)curtask + 1268) == pid`,
    // comm at 1752): tgid directly follows pid, comm comes later.
    assert_eq!(r.field("tgid").unwrap().offset, pid.offset + 4);
    assert!(pid.offset > 0 && comm.offset > pid.offset);
    match &r.field("parent").unwrap().ty {
        Type::Ptr { pointee, .. } => assert_eq!(
            **pointee,
            Type::Record(sonde_lang::ctypes::opaque_record(
                sonde_lang::kernel::RecordKind::Struct,
                "task_struct"
            ))
        ),
        other => panic!("parent {other:?}"),
    }
}

#[test]
fn vmlinux_sock_common_and_bitfields() {
    let btf = vmlinux();
    let mut cache = RecordCache::new();
    let sc = to_record(
        &btf,
        btf.find_record("sock_common", false).unwrap(),
        &mut cache,
    )
    .unwrap();
    let fam = sc.field("skc_family").unwrap();
    assert_eq!(
        (fam.offset, &fam.ty),
        (
            16,
            &Type::Int {
                bits: 16,
                signed: false
            }
        )
    );
    // skc_daddr sits in an anonymous union inside an anonymous struct: flattened.
    assert_eq!(sc.field("skc_daddr").unwrap().offset, 0);
    let skb = to_record(&btf, btf.find_record("sk_buff", false).unwrap(), &mut cache).unwrap();
    let cloned = skb.field("cloned").unwrap();
    let nohdr = skb.field("nohdr").unwrap();
    assert_eq!(cloned.bitfield.map(|b| b.1), Some(1));
    assert_eq!(nohdr.bitfield.map(|b| b.1), Some(1));
    let bit = |f: &sonde_lang::types::Field| f.offset * 8 + u32::from(f.bitfield.unwrap().0);
    assert_eq!(bit(nohdr), bit(cloned) + 1);
}

#[test]
fn vmlinux_renders_task_struct_pid_line() {
    let btf = vmlinux();
    let text = record_definition(&btf, btf.find_record("task_struct", false).unwrap()).unwrap();
    assert!(text.starts_with("struct task_struct {\n\tstruct thread_info thread_info;\n"));
    assert!(text.contains("\n\tpid_t pid;\n"));
    assert!(text.contains("\n\tchar comm[16];\n"));
    assert!(text.ends_with("\n};"));
}
