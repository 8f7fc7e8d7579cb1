//! Renders BTF types as C declarations, the way `bpftrace -lv 'struct x'` shows them:
//! tab-indented members, anonymous records inline, bitfields as `u8 x: 1;`, function
//! pointers as `void (*f)(struct sock *);`.
//!
//! Explicit padding members (`long: 64;`, which bpftrace synthesises from layout gaps) are
//! not reproduced.

use super::{Btf, Kind};

/// Nesting limit guarding against malformed (cyclic) BTF.
const MAX_DEPTH: u32 = 32;

/// The full C definition of record type `id`: `struct x {\n\tint a;\n};`, or `None` when
/// `id` is no struct or union.
pub fn record_definition(btf: &Btf, id: u32) -> Option<String> {
    let t = btf.ty(id)?;
    if !matches!(t.kind, Kind::Struct | Kind::Union) {
        return None;
    }
    let kw = if t.kind == Kind::Union {
        "union"
    } else {
        "struct"
    };
    let head = if t.name.is_empty() {
        kw.to_string()
    } else {
        format!("{kw} {}", t.name)
    };
    Some(format!("{head} {};", body(btf, id, 0, 0)))
}

/// A declaration of `name` with type `id`, as in `const char *filename` or `char comm[16]`
/// (an empty `name` gives the bare type, `const char *`).
pub fn declaration(btf: &Btf, id: u32, name: &str) -> String {
    decl(btf, id, name.to_string(), 0, 0)
}

fn body(btf: &Btf, id: u32, indent: usize, depth: u32) -> String {
    let Some(t) = btf.ty(id) else {
        return "{}".into();
    };
    let tabs = "\t".repeat(indent + 1);
    let mut out = String::from("{\n");
    if matches!(t.kind, Kind::Enum | Kind::Enum64) {
        for (name, value) in t.enumerators(btf) {
            out.push_str(&format!("{tabs}{name} = {value},\n"));
        }
    } else {
        for m in t.members(btf) {
            let mut line = decl(btf, m.type_id, m.name.to_string(), indent + 1, depth + 1);
            let width = match btf.ty(btf.strip(m.type_id)).and_then(|mt| mt.int_info()) {
                Some(i) if m.bitfield_size == 0 && i.bits != 0 => {
                    let full = btf.size_of(m.type_id) * 8;
                    if u32::from(i.bits) != full { i.bits } else { 0 }
                }
                _ => m.bitfield_size,
            };
            if width != 0 {
                line.push_str(&format!(": {width}"));
            }
            out.push_str(&format!("{tabs}{};\n", line.trim_end()));
        }
    }
    out.push_str(&"\t".repeat(indent));
    out.push('}');
    out
}

fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_string()
    } else {
        format!("{base} {inner}")
    }
}

fn decl(btf: &Btf, id: u32, inner: String, indent: usize, depth: u32) -> String {
    if depth > MAX_DEPTH {
        return join("void", &inner);
    }
    let Some(t) = btf.ty(id) else {
        return join("void", &inner);
    };
    match t.kind {
        Kind::Void => join("void", &inner),
        Kind::Int | Kind::Float | Kind::Typedef => join(t.name, &inner),
        Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Fwd => {
            let kw = match t.kind {
                Kind::Union => "union",
                Kind::Fwd if t.kind_flag => "union",
                Kind::Struct | Kind::Fwd => "struct",
                _ => "enum",
            };
            if t.name.is_empty() {
                join(
                    &format!("{kw} {}", body(btf, id, indent, depth + 1)),
                    &inner,
                )
            } else {
                join(&format!("{kw} {}", t.name), &inner)
            }
        }
        Kind::Const | Kind::Volatile | Kind::Restrict => {
            let q = match t.kind {
                Kind::Const => "const",
                Kind::Volatile => "volatile",
                _ => "restrict",
            };
            let next = t.size_or_type;
            let on_ptr = btf
                .ty(skip_quals(btf, next))
                .is_some_and(|x| x.kind == Kind::Ptr);
            if on_ptr {
                decl(btf, next, join(q, &inner), indent, depth + 1)
            } else {
                format!("{q} {}", decl(btf, next, inner, indent, depth + 1))
            }
        }
        Kind::TypeTag | Kind::Var | Kind::Func | Kind::DeclTag => {
            decl(btf, t.size_or_type, inner, indent, depth + 1)
        }
        Kind::Ptr => {
            let target = skip_quals(btf, t.size_or_type);
            let wrap = btf
                .ty(target)
                .is_some_and(|x| matches!(x.kind, Kind::Array | Kind::FuncProto));
            let inner = if wrap {
                format!("(*{inner})")
            } else {
                format!("*{inner}")
            };
            decl(btf, t.size_or_type, inner, indent, depth + 1)
        }
        Kind::Array => {
            let Some(a) = t.array_info() else {
                return join("void", &inner);
            };
            decl(
                btf,
                a.elem,
                format!("{inner}[{}]", a.len),
                indent,
                depth + 1,
            )
        }
        Kind::FuncProto => {
            let params: Vec<String> = t
                .params(btf)
                .iter()
                .map(|&(_, ty)| {
                    if ty == 0 {
                        "...".to_string()
                    } else {
                        decl(btf, ty, String::new(), indent, depth + 1)
                    }
                })
                .collect();
            let list = if params.is_empty() {
                "void".to_string()
            } else {
                params.join(", ")
            };
            decl(
                btf,
                t.size_or_type,
                format!("{inner}({list})"),
                indent,
                depth + 1,
            )
        }
        Kind::Datasec => join(&format!("SEC(\"{}\")", t.name), &inner),
    }
}

fn skip_quals(btf: &Btf, mut id: u32) -> u32 {
    for _ in 0..16 {
        match btf.ty(id) {
            Some(t)
                if matches!(
                    t.kind,
                    Kind::Const | Kind::Volatile | Kind::Restrict | Kind::TypeTag
                ) =>
            {
                id = t.size_or_type
            }
            _ => break,
        }
    }
    id
}
