//! The enumerators the printers need to print enum values by name (bpftrace 0.26 prints an
//! enum-typed value as its enumerator: `print($e)`, `%s`, map keys and values).
//!
//! The table holds every enum the script defines (`enum tag { ... }`; anonymous enums under
//! the tag `""`) and every kernel enum (from BTF) whose type reaches a value of the program.

use sonde_lang::ast::{CDefKind, Program};
use sonde_lang::kernel::KernelInfo;
use sonde_lang::sema::Checked;
use sonde_lang::types::Type;
use std::collections::BTreeMap;

/// Enumerators by enum tag, in declaration order.
pub type EnumTable = BTreeMap<String, Vec<(String, i64)>>;

/// The enums of `program` and the kernel enums its values have.
pub fn enum_table(program: &Program, checked: &Checked, kernel: &dyn KernelInfo) -> EnumTable {
    let mut table = EnumTable::new();
    for d in &program.c_defs {
        if d.kind == CDefKind::Enum {
            table
                .entry(d.name.clone())
                .or_default()
                .extend(d.enumerators.iter().cloned());
        }
    }
    let mut tags = std::collections::BTreeSet::new();
    for p in &checked.probes {
        for i in &p.instances {
            for t in i.types.exprs.values().chain(i.types.vars.values()) {
                enum_tags(t, &mut tags);
            }
        }
    }
    for m in checked.maps.values() {
        m.key.iter().for_each(|k| enum_tags(k, &mut tags));
        enum_tags(&m.value, &mut tags);
    }
    for tag in tags {
        if let std::collections::btree_map::Entry::Vacant(slot) = table.entry(tag) {
            let variants = kernel.enum_variants(slot.key());
            if !variants.is_empty() {
                slot.insert(variants);
            }
        }
    }
    table
}

/// The tags of the enum types in `t` (through tuples, records and arrays).
fn enum_tags(t: &Type, out: &mut std::collections::BTreeSet<String>) {
    match t {
        Type::Enum { name, .. } => {
            out.insert(name.clone());
        }
        Type::Tuple(items) => items.iter().for_each(|i| enum_tags(i, out)),
        Type::Record(r) => r.fields.iter().for_each(|f| enum_tags(&f.ty, out)),
        Type::Array { elem, .. } => enum_tags(elem, out),
        _ => {}
    }
}

/// The enumerator of `tag` whose value is `value`, if any.
pub fn variant<'a>(table: &'a EnumTable, tag: &str, value: i64) -> Option<&'a str> {
    table
        .get(tag)?
        .iter()
        .find(|(_, v)| *v == value)
        .map(|(n, _)| n.as_str())
}
