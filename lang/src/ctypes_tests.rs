//! Tests of `ctypes`: C type names, tracepoint fields and script struct layouts.

use super::*;
use crate::ast::{CField, Ident};
use crate::span::Span;

fn tf(name: &str, c_type: &str, offset: u32, size: u32, signed: bool) -> TracepointField {
    TracepointField::new(name, c_type, offset, size, signed)
}

fn texpr(base: BaseType, ptr: u8, array: Option<u64>) -> TypeExpr {
    TypeExpr {
        base,
        pointer_depth: ptr,
        array,
        span: Span::new(0, 1),
    }
}

#[test]
fn format_field_types() {
    assert_eq!(c_type_to_type("int", 8, false), Type::U64);
    assert_eq!(c_type_to_type("pid_t", 4, true), Type::I32);
    assert_eq!(c_type_to_type("umode_t", 8, false), Type::U64);
    assert_eq!(
        c_type_to_type("const char *", 8, false),
        Type::Ptr {
            pointee: Box::new(Type::Int {
                bits: 8,
                signed: true
            }),
            space: AddrSpace::Unknown
        }
    );
    assert_eq!(
        c_type_to_type("const char __user *", 8, false),
        Type::Ptr {
            pointee: Box::new(Type::Int {
                bits: 8,
                signed: true
            }),
            space: AddrSpace::User
        }
    );
    assert_eq!(
        c_type_to_type("void *", 8, false),
        Type::Ptr {
            pointee: Box::new(Type::Void),
            space: AddrSpace::Unknown
        }
    );
    assert_eq!(
        c_type_to_type("char[16]", 16, false),
        Type::Str { size: 16 }
    );
    assert_eq!(
        c_type_to_type("u32[4]", 16, false),
        Type::Array {
            elem: Box::new(Type::U32),
            len: 4
        }
    );
    assert_eq!(
        c_type_to_type("__data_loc char[]", 4, false),
        Type::Str { size: 64 }
    );
    assert_eq!(
        c_type_to_type("const char *const *", 8, false),
        Type::Ptr {
            pointee: Box::new(Type::Ptr {
                pointee: Box::new(Type::Int {
                    bits: 8,
                    signed: true
                }),
                space: AddrSpace::Unknown
            }),
            space: AddrSpace::Unknown
        }
    );
}

#[test]
fn tracepoint_record_skips_common_fields() {
    let r = tracepoint_record(
        "block",
        "block_rq_issue",
        &[
            tf("common_type", "unsigned short", 0, 2, false),
            tf("common_pid", "int", 4, 4, true),
            tf("dev", "dev_t", 8, 4, false),
            tf("comm", "char[16]", 44, 16, false),
            tf("cmd", "__data_loc char[]", 60, 4, false),
        ],
    );
    assert_eq!(r.name, "tracepoint:block:block_rq_issue");
    assert_eq!(r.size, 64);
    let names: Vec<_> = r.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["dev", "comm", "cmd"]);
    let cmd = r.field("cmd").unwrap();
    assert!(cmd.data_loc);
    assert_eq!((cmd.offset, &cmd.ty), (60, &Type::Str { size: 64 }));
    assert!(!r.field("comm").unwrap().data_loc);
}

#[test]
fn decl_types() {
    let none = |_: RecordKind, _: &str| None;
    let t = c_decl_type(
        &texpr(BaseType::Named("unsigned long".into()), 0, None),
        &none,
    );
    assert_eq!(t, Ok(Type::U64));
    let t = c_decl_type(&texpr(BaseType::Named("uint8".into()), 0, Some(8)), &none);
    assert_eq!(
        t,
        Ok(Type::Array {
            elem: Box::new(Type::U8),
            len: 8
        })
    );
    let t = c_decl_type(&texpr(BaseType::Named("char".into()), 0, Some(8)), &none);
    assert_eq!(t, Ok(Type::Str { size: 8 }));
    let t = c_decl_type(&texpr(BaseType::String, 0, Some(32)), &none);
    assert_eq!(t, Ok(Type::Str { size: 32 }));
    let t = c_decl_type(&texpr(BaseType::Struct("foo".into()), 1, None), &none).unwrap();
    match t {
        Type::Ptr { pointee, .. } => match *pointee {
            Type::Record(r) => assert!(is_opaque(&r) && r.name == "struct foo"),
            other => panic!("unexpected {other:?}"),
        },
        other => panic!("unexpected {other:?}"),
    }
    let e = c_decl_type(&texpr(BaseType::Struct("foo".into()), 0, None), &none).unwrap_err();
    assert_eq!(e.code, "sonde::sema::unknown_record");
    let e = c_decl_type(&texpr(BaseType::Named("flurb".into()), 0, None), &none).unwrap_err();
    assert_eq!(e.code, "sonde::sema::unknown_type");
}

/// Sizes are computed in 64 bits and bounded: `uint64[536870912]` was 0 bytes in `u32`,
/// `union { char c[4294967295]; }` had size 0 once rounded up.
#[test]
fn declared_sizes_never_wrap() {
    let none = |_: RecordKind, _: &str| None;
    let arr = |base: &str, n: u64| texpr(BaseType::Named(base.into()), 0, Some(n));
    let e = c_decl_type(&arr("uint64", 536_870_912), &none).unwrap_err();
    assert_eq!(
        (e.code, e.label.as_str()),
        (TOO_LARGE, "4294967296 bytes, the limit is 32768")
    );
    let e = c_decl_type(&texpr(BaseType::String, 0, Some(1 << 40)), &none).unwrap_err();
    assert_eq!(e.code, TOO_LARGE);
    let e = c_decl_type(&arr("void", 1 << 40), &none).unwrap_err();
    assert_eq!(e.code, TOO_LARGE);
    assert_eq!(
        c_decl_type(&arr("uint32", 8192), &none).map(|t| t.size()),
        Ok(32768)
    );

    let u = cdef(
        CDefKind::Union,
        "u",
        vec![(arr("char", 4_294_967_295), "c")],
    );
    let e = record_from_cdef(&u, &none).unwrap_err();
    assert_eq!(e.code, TOO_LARGE);
    assert!(e.message.contains("`char[4294967295]`"), "{}", e.message);
    // Each field fits, the struct does not: the error is on the field that overflows.
    let s = cdef(
        CDefKind::Struct,
        "s",
        vec![(arr("int", 8000), "a"), (arr("long", 1000), "b")],
    );
    let e = record_from_cdef(&s, &none).unwrap_err();
    assert_eq!(e.code, TOO_LARGE);
    assert_eq!(e.label, "40000 bytes, the limit is 32768");
    let s = cdef(
        CDefKind::Struct,
        "s",
        vec![(arr("char", 1), "a"), (arr("long", 4095), "b")],
    );
    assert_eq!(record_from_cdef(&s, &none).map(|r| r.size), Ok(32768));
}

fn cdef(kind: CDefKind, name: &str, fields: Vec<(TypeExpr, &str)>) -> CDef {
    CDef {
        kind,
        name: name.into(),
        value: String::new(),
        fields: fields
            .into_iter()
            .map(|(ty, n)| CField {
                ty,
                name: Ident {
                    name: n.into(),
                    span: Span::default(),
                },
                dims: Vec::new(),
                bits: None,
                inline: None,
            })
            .collect(),
        enumerators: Vec::new(),
        span: Span::default(),
        packed: false,
    }
}

#[test]
fn struct_layout_like_c() {
    let none = |_: RecordKind, _: &str| None;
    let named = |n: &str| texpr(BaseType::Named(n.into()), 0, None);
    let def = cdef(
        CDefKind::Struct,
        "a",
        vec![
            (named("char"), "c"),
            (named("int"), "i"),
            (named("short"), "s"),
            (texpr(BaseType::Named("char".into()), 0, Some(3)), "name"),
            (texpr(BaseType::Struct("a".into()), 1, None), "next"),
        ],
    );
    let r = record_from_cdef(&def, &none).unwrap();
    let offs: Vec<_> = r.fields.iter().map(|f| f.offset).collect();
    assert_eq!(offs, [0, 4, 8, 10, 16]);
    assert_eq!(r.size, 24);
    assert_eq!(r.name, "struct a");

    let inner = Arc::new(
        record_from_cdef(
            &cdef(
                CDefKind::Struct,
                "in",
                vec![(named("char"), "x"), (named("char"), "y")],
            ),
            &none,
        )
        .unwrap(),
    );
    assert_eq!(inner.size, 2);
    let lookup = |_: RecordKind, n: &str| (n == "in").then(|| inner.clone());
    let outer = record_from_cdef(
        &cdef(
            CDefKind::Struct,
            "out",
            vec![
                (named("char"), "a"),
                (texpr(BaseType::Struct("in".into()), 0, None), "b"),
            ],
        ),
        &lookup,
    )
    .unwrap();
    assert_eq!(outer.field("b").unwrap().offset, 1);
    assert_eq!(outer.size, 3);

    let u = record_from_cdef(
        &cdef(
            CDefKind::Union,
            "u",
            vec![(named("char"), "a"), (named("long"), "b")],
        ),
        &none,
    )
    .unwrap();
    assert!(u.is_union);
    assert_eq!(u.size, 8);
    assert_eq!(u.field("b").unwrap().offset, 0);
}
