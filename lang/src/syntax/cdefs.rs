//! Building C definitions from pest pairs: `struct`/`union` definitions with their members
//! (declarator lists, bit-fields, unnamed bit-fields, records defined in place) and `enum`s.

use super::build::{Builder, INTEGER_OVERFLOW, span_of};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::span::Span;
use pest::iterators::Pair;
use sonde_grammar::Rule;

/// True for `__attribute__((packed))` (among other attributes).
fn is_packed(attr: &Pair<'_, Rule>) -> bool {
    attr.clone()
        .into_inner()
        .filter(|i| i.as_rule() == Rule::c_attr_item)
        .any(|i| i.as_str().trim() == "packed" || i.as_str().trim() == "__packed__")
}

impl Builder {
    /// `struct name { fields };` or `union name { ... };`.
    pub(super) fn c_struct(&mut self, pair: Pair<'_, Rule>) -> CDef {
        let start = span_of(&pair).start;
        let mut end = start;
        let mut kind = CDefKind::Struct;
        let mut name = String::new();
        let mut fields = Vec::new();
        let mut packed = false;
        for p in pair.into_inner() {
            end = end.max(span_of(&p).end);
            match p.as_rule() {
                Rule::c_aggregate if p.as_str().starts_with("union") => kind = CDefKind::Union,
                Rule::ident => name = p.as_str().to_string(),
                Rule::c_field => fields.extend(self.c_field(p)),
                Rule::c_attribute => packed |= is_packed(&p),
                _ => {}
            }
        }
        CDef {
            kind,
            name,
            value: String::new(),
            fields,
            enumerators: vec![],
            span: Span::new(start, end),
            packed,
        }
    }

    /// One field declaration of a struct or union: a member per declarator (`int a:3, *b;`),
    /// an anonymous inline struct or union, or an unnamed bit-field (`int :3;`, padding, with
    /// an empty name).
    fn c_field(&mut self, pair: Pair<'_, Rule>) -> Vec<CField> {
        let pspan = span_of(&pair);
        let mut ty: Option<TypeExpr> = None;
        let mut inline: Option<Box<CDef>> = None;
        let mut fields = Vec::new();
        let mut declared = false;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::c_type | Rule::c_pad_type => ty = Some(self.c_type(p)),
                Rule::c_inline => {
                    let def = self.c_struct(p);
                    ty = Some(TypeExpr {
                        base: BaseType::Named(String::new()),
                        pointer_depth: 0,
                        array: None,
                        span: def.span,
                    });
                    inline = Some(Box::new(def));
                }
                Rule::c_declarator => {
                    if let Some(t) = &ty {
                        fields.push(self.c_declarator(p, t.clone(), inline.clone(), !declared));
                    }
                    declared = true;
                }
                Rule::c_bitfield => {
                    // An unnamed bit-field: padding of its width.
                    declared = true;
                    if let Some(t) = ty.clone() {
                        let at = Span::new(t.span.end, t.span.end);
                        fields.push(CField {
                            ty: t,
                            name: Ident {
                                name: String::new(),
                                span: at,
                            },
                            dims: vec![],
                            bits: Some(self.bit_width(p)),
                            inline: None,
                        });
                    }
                }
                _ => {}
            }
        }
        // An anonymous inline struct or union has no name: its fields are the enclosing one's.
        if !declared && let (Some(ty), Some(inline)) = (ty, inline) {
            fields.push(CField {
                ty,
                name: Ident {
                    name: String::new(),
                    span: Span::new(pspan.start, pspan.start),
                },
                dims: vec![],
                bits: None,
                inline: Some(inline),
            });
        }
        fields
    }

    /// One declarator of a field declaration (`*name[2][3] : 4`) over its declared type; the
    /// `first` one's type span takes its `*`s (`struct bar *next`).
    fn c_declarator(
        &mut self,
        pair: Pair<'_, Rule>,
        mut ty: TypeExpr,
        inline: Option<Box<CDef>>,
        first: bool,
    ) -> CField {
        let mut name = None;
        let mut dims = Vec::new();
        let mut bits = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::c_stars => {
                    for s in p.into_inner() {
                        ty.pointer_depth = ty.pointer_depth.saturating_add(1);
                        // The first declarator's `*`s follow the type: its span takes them.
                        if first {
                            ty.span = Span::new(ty.span.start, span_of(&s).end);
                        }
                    }
                }
                Rule::ident => {
                    name = Some(Ident {
                        name: p.as_str().to_string(),
                        span: span_of(&p),
                    })
                }
                Rule::c_array => {
                    if let Some(n) = p.into_inner().next() {
                        let n = self.int_value(&n);
                        if ty.array.is_none() {
                            ty.array = n;
                        } else {
                            dims.extend(n);
                        }
                    }
                }
                Rule::c_bitfield => bits = Some(self.bit_width(p)),
                _ => {}
            }
        }
        // No name: an unnamed bit-field (`unsigned a:4, :4;`).
        let (name, inline) = match name {
            Some(name) => (name, inline),
            None => {
                let at = Span::new(ty.span.end, ty.span.end);
                let name = Ident {
                    name: String::new(),
                    span: at,
                };
                (name, None)
            }
        };
        CField {
            ty,
            name,
            dims,
            bits,
            inline,
        }
    }

    /// A bit-field's width; one too large for `u32` reads as `u32::MAX` (refused by the
    /// layout as wider than its type).
    fn bit_width(&mut self, pair: Pair<'_, Rule>) -> u32 {
        pair.into_inner()
            .next()
            .and_then(|n| self.int_value(&n))
            .map_or(u32::MAX, |b| u32::try_from(b).unwrap_or(u32::MAX))
    }

    /// The type part of a C field declaration, without the declarators' `*`s.
    fn c_type(&mut self, pair: Pair<'_, Rule>) -> TypeExpr {
        let start = span_of(&pair).start;
        let mut end = start;
        let mut tag: Option<String> = None;
        let mut base = BaseType::Named(String::new());
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::kw_struct | Rule::kw_union | Rule::kw_enum => {
                    tag = Some(p.as_str().to_string());
                    end = span_of(&p).end;
                }
                Rule::ident => {
                    let n = p.as_str().to_string();
                    base = match tag.as_deref() {
                        Some("union") => BaseType::Union(n),
                        Some("enum") => BaseType::Enum(n),
                        _ => BaseType::Struct(n),
                    };
                    end = span_of(&p).end;
                }
                Rule::c_word_seq => {
                    let words: Vec<&str> = p.clone().into_inner().map(|w| w.as_str()).collect();
                    end = p
                        .clone()
                        .into_inner()
                        .last()
                        .map_or(end, |w| span_of(&w).end);
                    base = BaseType::Named(words.join(" "));
                }
                // An unnamed bit-field's type (`unsigned int :3`): its words one by one.
                Rule::c_word => {
                    let name = match &base {
                        BaseType::Named(n) if !n.is_empty() => format!("{n} {}", p.as_str()),
                        _ => p.as_str().to_string(),
                    };
                    base = BaseType::Named(name);
                    end = span_of(&p).end;
                }
                _ => {}
            }
        }
        TypeExpr {
            base,
            pointer_depth: 0,
            array: None,
            span: Span::new(start, end),
        }
    }

    /// `enum name { A, B = 2 };` with implicit values filled in.
    pub(super) fn c_enum(&mut self, pair: Pair<'_, Rule>) -> CDef {
        let start = span_of(&pair).start;
        let mut end = start;
        let mut name = String::new();
        let mut enumerators = Vec::new();
        let mut next: i64 = 0;
        for p in pair.into_inner() {
            end = end.max(span_of(&p).end);
            match p.as_rule() {
                Rule::ident => name = p.as_str().to_string(),
                Rule::enumerator => {
                    let mut inner = p.into_inner();
                    let Some(id) = inner.next() else { continue };
                    if let Some(v) = inner.next() {
                        next = self.enum_value(v).unwrap_or(next);
                    }
                    enumerators.push((id.as_str().to_string(), next));
                    next = next.wrapping_add(1);
                }
                _ => {}
            }
        }
        CDef {
            kind: CDefKind::Enum,
            name,
            value: String::new(),
            fields: vec![],
            enumerators,
            span: Span::new(start, end),
            packed: false,
        }
    }

    /// An explicit enumerator value, possibly negative.
    fn enum_value(&mut self, pair: Pair<'_, Rule>) -> Option<i64> {
        let span = span_of(&pair);
        let negative = pair.as_str().starts_with('-');
        let lit = pair.into_inner().find(|p| p.as_rule() == Rule::int_lit)?;
        let v = self.int_value(&lit)?;
        let value = if negative {
            0i128 - i128::from(v)
        } else {
            i128::from(v)
        };
        match i64::try_from(value) {
            Ok(v) => Some(v),
            Err(_) => {
                self.errors.push(
                    Diagnostic::error(
                        INTEGER_OVERFLOW,
                        span,
                        "enumerator value does not fit in 64 bits",
                    )
                    .with_label("too large for an enum")
                    .with_help("enum values must be between -2^63 and 2^63-1"),
                );
                None
            }
        }
    }
}
