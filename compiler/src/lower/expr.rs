//! Lowering of expressions.

use super::arith::arith_op;
use super::cx::{LowerCx, PlaceSpace, Val, is_scalar};
use super::reuse::{Reuse, STABLE_BUILTINS, stable_key};
use super::{LowerCall, maps, strings};
use crate::catalog::SondeCatalog;
use crate::ir::{AluOp, Cond, Inst, Label, Operand, VReg, Width};
use sonde_lang::ast::{BinOp, Expr, ExprKind, UnOp};
use sonde_lang::catalog::CallPosition;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::constants::Constant;
use sonde_lang::types::Type;

type R<T> = Result<T, Diagnostic>;

impl LowerCx<'_> {
    /// Lowers an expression in value position.
    pub fn lower_expr(&mut self, e: &Expr) -> R<Val> {
        self.lower_expr_at(e, CallPosition::Value)
    }

    /// Lowers an expression and returns it as an integer register.
    pub fn lower_int(&mut self, e: &Expr) -> R<VReg> {
        let v = self.lower_expr(e)?;
        let ty = self.type_of(e);
        Ok(self.int(v, &ty))
    }

    /// Lowers an expression and materialises it (places are read).
    pub fn lower_value(&mut self, e: &Expr) -> R<Val> {
        let v = self.lower_expr(e)?;
        let ty = self.type_of(e);
        Ok(self.materialize(v, &ty))
    }

    /// Lowers an expression appearing at `position`.
    pub fn lower_expr_at(&mut self, e: &Expr, position: CallPosition) -> R<Val> {
        let saved = self.span;
        self.span = e.span;
        let r = self.lower_kind(e, position);
        self.span = saved;
        if let Ok(Val::Place { base, offset, .. }) = r {
            self.place_spans.insert((base, offset), e.span);
        }
        r
    }

    fn lower_kind(&mut self, e: &Expr, position: CallPosition) -> R<Val> {
        let ty = self.type_of(e);
        match &e.kind {
            ExprKind::Int(v) => Ok(Val::Int(self.imm(*v as i64))),
            ExprKind::Bool(b) => Ok(Val::Int(self.imm(i64::from(*b)))),
            ExprKind::Str(bytes) => Ok(strings::literal(self, bytes, ty.size())),
            // `"hello" + 2`, `$1 + 2` of a string parameter: folded by the checker's rule.
            ExprKind::Binary { .. } if matches!(ty, Type::Str { .. }) => {
                let text =
                    sonde_lang::catalog::const_string(e, self.positional).unwrap_or_default();
                Ok(strings::literal(self, &text, ty.size()))
            }
            ExprKind::Positional(n) => {
                let text = self
                    .positional
                    .get(*n as usize - 1)
                    .cloned()
                    .unwrap_or_default();
                match parse_int(&text) {
                    Some(v) if is_scalar(&ty) => Ok(Val::Int(self.imm(v))),
                    // A missing parameter used as a number is 0.
                    None if is_scalar(&ty) && text.is_empty() => Ok(Val::Int(self.imm(0))),
                    _ => Ok(strings::literal(
                        self,
                        text.as_bytes(),
                        ty.size().max(text.len() as u32 + 1),
                    )),
                }
            }
            ExprKind::PositionalCount => Ok(Val::Int(self.imm(self.positional.len() as i64))),
            ExprKind::Ident(name) => self.lower_ident(e, name, &ty),
            ExprKind::Var(name) => match self.vars.get(name) {
                Some(super::cx::VarHome::Reg(r)) => Ok(Val::Int(*r)),
                // A scalar in memory (its address is taken): read where it lives.
                Some(super::cx::VarHome::Mem { ptr, .. }) if is_scalar(&ty) => Ok(Val::Place {
                    base: *ptr,
                    offset: 0,
                    space: PlaceSpace::Own,
                }),
                Some(super::cx::VarHome::Mem { ptr, size }) => {
                    let (ptr, size) = (*ptr, *size);
                    let home = Val::Mem { ptr, size };
                    match self.types.vars.get(name) {
                        // A tuple read where the checker knew a narrower layout than the
                        // variable's final one (a wider string assigned later): re-laid out.
                        Some(held @ Type::Tuple(_))
                            if *held != ty && matches!(ty, Type::Tuple(_)) =>
                        {
                            let held = held.clone();
                            let buf = self.alloc_zeroed(ty.size());
                            maps::write_converted(self, home, &held, &ty, buf, 0);
                            Ok(Val::Mem {
                                ptr: buf,
                                size: ty.size(),
                            })
                        }
                        _ => Ok(home),
                    }
                }
                None => Ok(Val::Int(self.imm(0))),
            },
            ExprKind::Map { name, keys } => {
                let map = self
                    .maps
                    .user(name)
                    .ok_or_else(|| self.unsupported(e.span, "this map"))?;
                // The same element read again with nothing written or joined since: the
                // value read first (keys of literals and per-event builtins only).
                let what = stable_key(keys, &self.stable_vars).map(|k| Reuse::Read(map, k));
                if let Some(v) = what.as_ref().and_then(|w| self.reused(w)) {
                    return Ok(Val::Int(v));
                }
                let key = self.lower_key(name, keys)?;
                let val = maps::load(self, map, key)?;
                if let (Some(what), Val::Int(v)) = (what, &val)
                    && !self.updating
                {
                    self.remember(what, *v);
                }
                Ok(val)
            }
            ExprKind::Call { name, args } => {
                // `pid()` is `pid` (and `delta()` a script's own `delta` if it defines one).
                if args.is_empty()
                    && (SondeCatalog.builtin_backend(&name.name).is_some() || name.name == "config")
                {
                    return self.lower_ident(e, &name.name, &ty);
                }
                let f = SondeCatalog.function_backend(&name.name).ok_or_else(|| {
                    self.unsupported(e.span, &format!("function `{}`", name.name))
                })?;
                let call = LowerCall {
                    name: &name.name,
                    args,
                    ty: ty.clone(),
                    span: e.span,
                    position,
                    target: None,
                };
                f.lower(self, &call)
            }
            ExprKind::Type(_) => Ok(Val::None),
            ExprKind::Binary { op, lhs, rhs } => self.lower_binary(e, *op, lhs, rhs, &ty),
            ExprKind::Unary { op, expr } => self.lower_unary(*op, expr, &ty),
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => self.lower_incdec(target, *increment, *prefix),
            ExprKind::Ternary { cond, then, else_ } => self.lower_ternary(cond, then, else_, &ty),
            ExprKind::Block { body, value } => {
                self.lower_block(body)?;
                match value {
                    Some(v) => self.lower_expr_at(v, position),
                    None => Ok(Val::None),
                }
            }
            ExprKind::Field { base, field, .. } => match self.reused_argument(e, &ty) {
                Some(v) => Ok(v),
                None => {
                    let v = self.lower_field(base, &field.name, e)?;
                    Ok(self.remember_argument(e, &ty, v))
                }
            },
            ExprKind::TupleIndex { base, index } => self.lower_tuple_index(base, *index, e),
            ExprKind::Index { base, index } => self.lower_index(base, index, e),
            ExprKind::Cast { expr, .. } => self.lower_cast(expr, &ty),
            ExprKind::Record { values, .. } => {
                let Type::Record(r) = &ty else {
                    return Err(self.unsupported(e.span, "this record"));
                };
                let buf = self.alloc_zeroed(r.size);
                for (v, f) in values.iter().zip(&r.fields) {
                    let val = self.lower_expr(v)?;
                    let vt = self.type_of(v);
                    maps::write_converted(self, val, &vt, &f.ty, buf, f.offset as i32);
                }
                Ok(Val::Mem {
                    ptr: buf,
                    size: r.size,
                })
            }
            ExprKind::Tuple(items) => {
                let Type::Tuple(tys) = &ty else {
                    return Err(self.unsupported(e.span, "this tuple"));
                };
                let (offs, size) = sonde_lang::types::tuple_layout(tys);
                let buf = self.alloc_zeroed(size);
                for ((item, off), t) in items.iter().zip(offs).zip(tys) {
                    let v = self.lower_expr(item)?;
                    let it = self.type_of(item);
                    maps::write_converted(self, v, &it, t, buf, off as i32);
                }
                Ok(Val::Mem { ptr: buf, size })
            }
        }
    }

    /// Builds the key of map `name` from key expressions.
    pub fn lower_key(&mut self, name: &str, keys: &[Expr]) -> R<VReg> {
        let key_ty = self
            .maps
            .user(name)
            .and_then(|m| match &self.maps.spec(m).role {
                crate::program::MapRole::User { key, .. } => key.clone(),
                _ => None,
            });
        self.lower_key_once(key_ty.as_ref(), keys)
    }

    fn lower_ident(&mut self, e: &Expr, name: &str, ty: &Type) -> R<Val> {
        if let Some(b) = crate::catalog::builtin_of(self.program, self.constants, name) {
            // Per-event values are computed once while they are valid.
            let stable = STABLE_BUILTINS.iter().copied().find(|s| *s == name);
            if let Some(v) = stable.and_then(|s| self.reused(&Reuse::Builtin(s))) {
                return Ok(Val::Int(v));
            }
            let val = b.lower(self, ty, e.span)?;
            if let (Some(s), Val::Int(v)) = (stable, &val) {
                self.remember(Reuse::Builtin(s), *v);
            }
            return Ok(val);
        }
        if name == "config"
            && let Type::Record(r) = ty
            && self.constants.get(name).is_none()
        {
            return Ok(self.config_record(r));
        }
        for def in &self.program.c_defs {
            if let Some((_, v)) = def.enumerators.iter().find(|(n, _)| n == name) {
                return Ok(Val::Int(self.imm(*v)));
            }
        }
        // The checker's order: the script's enums, then constants, then the kernel's enums.
        match self.constants.get(name) {
            Some(Constant::Int(v)) => return Ok(Val::Int(self.imm(v))),
            Some(Constant::Str(s)) => return Ok(strings::literal(self, s.as_bytes(), ty.size())),
            None => {}
        }
        if let Some((_, v)) = self.kernel.enum_value(name) {
            return Ok(Val::Int(self.imm(v)));
        }
        Err(self.unsupported(e.span, &format!("identifier `{name}`")))
    }

    /// bpftrace 0.27's `config` record, of type `r`, filled with the script's settings.
    fn config_record(&mut self, r: &sonde_lang::types::Record) -> Val {
        use sonde_lang::sema::ConfigEntry;
        let buf = self.alloc_zeroed(r.size);
        for ((_, entry), f) in self.config.record().into_iter().zip(&r.fields) {
            let val = match &entry {
                ConfigEntry::Bool(b) => Val::Int(self.imm(i64::from(*b))),
                ConfigEntry::Int(n) => Val::Int(self.imm(*n as i64)),
                ConfigEntry::Str(s) => strings::literal(self, s, f.ty.size()),
            };
            maps::write_converted(self, val, &entry.ty(), &f.ty, buf, f.offset as i32);
        }
        Val::Mem {
            ptr: buf,
            size: r.size,
        }
    }

    fn lower_binary(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr, ty: &Type) -> R<Val> {
        let lt = self.type_of(lhs);
        let rt = self.type_of(rhs);
        if matches!(op, BinOp::And | BinOp::Or) || op.is_comparison() {
            return Ok(Val::Int(self.cond_value(e, true)?));
        }
        let a = self.lower_int(lhs)?;
        let b = self.lower_int(rhs)?;
        let b = self.pointer_step(&lt, op, &rt, b);
        let aop = arith_op(op, &lt, &rt);
        let r = self.arith(aop, a, b, rhs, e.span);
        Ok(Val::Int(self.truncate(r, ty)))
    }

    /// A register holding 1 when condition `e` is `holds`, else 0 (comparisons and logical
    /// operators are lowered as branches).
    fn cond_value(&mut self, e: &Expr, holds: bool) -> R<VReg> {
        let out = self.imm(i64::from(holds));
        let f = self.label();
        let done = self.label();
        self.lower_cond(e, f)?;
        self.emit(Inst::Jump(done));
        self.place_label(f);
        self.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(i64::from(!holds)),
        });
        self.place_label(done);
        Ok(out)
    }

    /// Emits code that jumps to `if_false` when `e` is false and falls through otherwise.
    pub fn lower_cond(&mut self, e: &Expr, if_false: Label) -> R<()> {
        let saved = self.span;
        self.span = e.span;
        let r = self.lower_cond_inner(e, if_false);
        self.span = saved;
        r
    }

    fn lower_cond_inner(&mut self, e: &Expr, if_false: Label) -> R<()> {
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::And,
                lhs,
                rhs,
            } => {
                self.lower_cond(lhs, if_false)?;
                self.lower_cond(rhs, if_false)
            }
            ExprKind::Binary {
                op: BinOp::Or,
                lhs,
                rhs,
            } => {
                let t = self.label();
                let f1 = self.label();
                self.lower_cond(lhs, f1)?;
                self.emit(Inst::Jump(t));
                self.place_label(f1);
                self.lower_cond(rhs, if_false)?;
                self.place_label(t);
                Ok(())
            }
            ExprKind::Unary {
                op: UnOp::Not,
                expr,
            } => {
                let t = self.label();
                self.lower_cond(expr, t)?;
                self.emit(Inst::Jump(if_false));
                self.place_label(t);
                Ok(())
            }
            ExprKind::Binary { op, lhs, rhs } if op.is_comparison() => {
                let lt = self.type_of(lhs);
                let rt = self.type_of(rhs);
                if matches!(lt, Type::Str { .. })
                    || matches!(rt, Type::Str { .. })
                    || matches!(lt, Type::Tuple(_) | Type::Buf { .. } | Type::Array { .. })
                {
                    let equal = *op == BinOp::Eq;
                    return strings::branch_on_compare(self, lhs, rhs, equal, if_false);
                }
                let a = self.lower_int(lhs)?;
                let b = self.lower_int(rhs)?;
                let signed = lt.is_signed() && rt.is_signed();
                let cond = match (op, signed) {
                    (BinOp::Eq, _) => Cond::Eq,
                    (BinOp::Ne, _) => Cond::Ne,
                    (BinOp::Lt, true) => Cond::SLt,
                    (BinOp::Lt, false) => Cond::ULt,
                    (BinOp::Le, true) => Cond::SLe,
                    (BinOp::Le, false) => Cond::ULe,
                    (BinOp::Gt, true) => Cond::SGt,
                    (BinOp::Gt, false) => Cond::UGt,
                    (BinOp::Ge, true) => Cond::SGe,
                    _ => Cond::UGe,
                };
                self.branch(cond.negate(), a, Operand::Reg(b), if_false);
                Ok(())
            }
            _ => {
                let ty = self.type_of(e);
                let v = self.lower_expr(e)?;
                let r = self.int(v, &ty);
                self.branch(Cond::Eq, r, Operand::Imm(0), if_false);
                Ok(())
            }
        }
    }

    fn lower_unary(&mut self, op: UnOp, inner: &Expr, ty: &Type) -> R<Val> {
        match op {
            UnOp::Not => Ok(Val::Int(self.cond_value(inner, false)?)),
            UnOp::BitNot => {
                let v = self.lower_int(inner)?;
                let r = self.alu(AluOp::Xor, v, Operand::Imm(-1));
                Ok(Val::Int(self.truncate(r, ty)))
            }
            UnOp::Neg => {
                let v = self.lower_int(inner)?;
                let dst = self.vreg();
                self.emit(Inst::Neg { dst, src: v });
                Ok(Val::Int(dst))
            }
            UnOp::Deref => {
                let it = self.type_of(inner);
                let p = self.lower_int(inner)?;
                let space = match &it {
                    Type::Ptr { space, .. } => PlaceSpace::of_pointer(*space, self.attach.ctx.user),
                    _ => PlaceSpace::Kernel,
                };
                Ok(Val::Place {
                    base: p,
                    offset: 0,
                    space,
                })
            }
            UnOp::AddrOf if matches!(inner.kind, ExprKind::Map { .. }) => {
                // `&@m[k]`: the address of the map's value (0 when the key is absent).
                let ExprKind::Map { name, keys } = &inner.kind else {
                    return Err(self.unsupported(self.span, "taking the address of this value"));
                };
                let map = self
                    .maps
                    .user(name)
                    .ok_or_else(|| self.unsupported(inner.span, "this map"))?;
                let key = self.lower_key(name, keys)?;
                let p = maps::lookup(self, map, key);
                let out = self.imm(0);
                let done = self.label();
                self.branch(Cond::Eq, p, Operand::Imm(0), done);
                self.emit(Inst::Mov {
                    dst: out,
                    src: Operand::Reg(p),
                });
                self.place_label(done);
                Ok(Val::Int(out))
            }
            UnOp::AddrOf => match self.lower_expr(inner)? {
                Val::Place { base, offset, .. } => Ok(Val::Int(self.alu(
                    AluOp::Add,
                    base,
                    Operand::Imm(offset.into()),
                ))),
                Val::Mem { ptr, .. } => Ok(Val::Int(ptr)),
                _ => Err(self.unsupported(self.span, "taking the address of this value")),
            },
        }
    }

    fn lower_incdec(&mut self, target: &Expr, increment: bool, prefix: bool) -> R<Val> {
        let delta = if increment { 1 } else { -1 };
        let ty = self.type_of(target);
        let updating = std::mem::replace(&mut self.updating, true);
        let old = self.lower_int(target);
        self.updating = updating;
        let old = old?;
        let old_copy = self.vreg();
        self.emit(Inst::Mov {
            dst: old_copy,
            src: Operand::Reg(old),
        });
        let step = match &ty {
            Type::Ptr { pointee, .. } => delta * i64::from(pointee.size().max(1)),
            _ => delta,
        };
        let new = self.alu(AluOp::Add, old_copy, Operand::Imm(step));
        let new = self.truncate(new, &ty);
        self.assign_to(target, Val::Int(new), &ty)?;
        Ok(Val::Int(if prefix { new } else { old_copy }))
    }

    fn lower_ternary(&mut self, cond: &Expr, then: &Expr, else_: &Expr, ty: &Type) -> R<Val> {
        let f = self.label();
        let done = self.label();
        // A `?:` statement of two calls without a value: an if/else.
        if *ty == Type::Void {
            self.lower_cond(cond, f)?;
            self.lower_expr_at(then, CallPosition::Statement)?;
            self.emit(Inst::Jump(done));
            self.place_label(f);
            self.lower_expr_at(else_, CallPosition::Statement)?;
            self.place_label(done);
            return Ok(Val::None);
        }
        if is_scalar(ty) {
            let out = self.vreg();
            self.lower_cond(cond, f)?;
            let a = self.lower_int(then)?;
            self.emit(Inst::Mov {
                dst: out,
                src: Operand::Reg(a),
            });
            self.emit(Inst::Jump(done));
            self.place_label(f);
            let b = self.lower_int(else_)?;
            self.emit(Inst::Mov {
                dst: out,
                src: Operand::Reg(b),
            });
            self.place_label(done);
            return Ok(Val::Int(out));
        }
        let size = ty.size();
        let buf = self.alloc(size);
        self.lower_cond(cond, f)?;
        let a = self.lower_expr(then)?;
        let at = self.type_of(then);
        maps::write_converted(self, a, &at, ty, buf, 0);
        self.emit(Inst::Jump(done));
        self.place_label(f);
        let b = self.lower_expr(else_)?;
        let bt = self.type_of(else_);
        maps::write_converted(self, b, &bt, ty, buf, 0);
        self.place_label(done);
        Ok(Val::Mem { ptr: buf, size })
    }

    fn lower_field(&mut self, base: &Expr, field: &str, e: &Expr) -> R<Val> {
        let bt = self.type_of(base);
        let (record, place) = match &bt {
            Type::Record(r) => (r.clone(), self.lower_expr(base)?),
            Type::Ptr { pointee, space } => match pointee.as_ref() {
                Type::Record(r) => {
                    let p = self.lower_int(base)?;
                    let space = PlaceSpace::of_pointer(*space, self.attach.ctx.user);
                    (
                        r.clone(),
                        Val::Place {
                            base: p,
                            offset: 0,
                            space,
                        },
                    )
                }
                _ => return Err(self.unsupported(e.span, "this field access")),
            },
            _ => return Err(self.unsupported(e.span, "this field access")),
        };
        let Some(f) = record.field(field) else {
            return Err(self.unsupported(e.span, &format!("field `{field}` of {}", record.name)));
        };
        let place = match place {
            Val::Place {
                base,
                offset,
                space,
            } => match offset.checked_add_unsigned(f.offset) {
                Some(offset) => Val::Place {
                    base,
                    offset,
                    space,
                },
                // Far from its base (a pointer indexed far away): address it at run time.
                None => {
                    let b = self.alu(AluOp::Add, base, Operand::Imm(offset.into()));
                    Val::Place {
                        base: b,
                        offset: i32::try_from(f.offset).unwrap_or(i32::MAX),
                        space: if space == PlaceSpace::Ctx {
                            PlaceSpace::Kernel
                        } else {
                            space
                        },
                    }
                }
            },
            Val::Mem { ptr, .. } => Val::Place {
                base: ptr,
                offset: f.offset as i32,
                space: PlaceSpace::Own,
            },
            _ => return Err(self.unsupported(e.span, "this field access")),
        };
        if f.data_loc {
            // A string's size is the checker's (`max_strlen`), not the record's.
            let size = match &f.ty {
                Type::Str { .. } => self.type_of(e).size(),
                t => t.size(),
            };
            return Ok(strings::read_data_loc(self, place, size));
        }
        if f.nul_room {
            // A script struct's `char[N]`, a `string[N + 1]`: its N bytes and a NUL.
            let size = f.ty.size();
            let buf = self.alloc_zeroed(size);
            self.write_val(place, &Type::Str { size: size - 1 }, buf, 0, size - 1);
            return Ok(Val::Mem { ptr: buf, size });
        }
        if let Some((bit_off, bits)) = f.bitfield {
            let unit = Type::Int {
                bits: 64,
                signed: false,
            };
            let raw = self.read_place_int(place, &unit);
            let shifted = self.alu(AluOp::LShr, raw, Operand::Imm(bit_off.into()));
            let mask = if bits >= 64 { -1 } else { (1i64 << bits) - 1 };
            return Ok(Val::Int(self.alu(AluOp::And, shifted, Operand::Imm(mask))));
        }
        Ok(place)
    }

    /// `tuple.N` (and `tuple[N]`): the element at its offset in the tuple.
    fn lower_tuple_index(&mut self, base: &Expr, index: u32, e: &Expr) -> R<Val> {
        let bt = self.type_of(base);
        let v = self.lower_value(base)?;
        let Type::Tuple(items) = &bt else {
            return Err(self.unsupported(e.span, "this tuple access"));
        };
        let (offs, _) = sonde_lang::types::tuple_layout(items);
        let Val::Mem { ptr, .. } = v else {
            return Err(self.unsupported(e.span, "this tuple access"));
        };
        let off = offs.get(index as usize).copied().unwrap_or(0) as i32;
        Ok(Val::Place {
            base: ptr,
            offset: off,
            space: PlaceSpace::Own,
        })
    }

    fn lower_index(&mut self, base: &Expr, index: &Expr, e: &Expr) -> R<Val> {
        let bt = self.type_of(base);
        if matches!(bt, Type::Tuple(_)) {
            let i = sonde_lang::catalog::const_int(index, self.positional)
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| self.unsupported(e.span, "a tuple index that is not a constant"))?;
            return self.lower_tuple_index(base, i, e);
        }
        let (elem, place) = match &bt {
            Type::Array { elem, .. } => (elem.as_ref().clone(), self.lower_expr(base)?),
            Type::Str { .. } => (
                Type::Int {
                    bits: 8,
                    signed: true,
                },
                self.lower_expr(base)?,
            ),
            Type::Ptr { pointee, space } => {
                let p = self.lower_int(base)?;
                (
                    pointee.as_ref().clone(),
                    Val::Place {
                        base: p,
                        offset: 0,
                        space: PlaceSpace::of_pointer(*space, self.attach.ctx.user),
                    },
                )
            }
            _ => return Err(self.unsupported(e.span, "indexing this value")),
        };
        let esize = elem.size().max(1);
        // A constant index folds into the place's offset when that fits an `i32` (array
        // indexes are within their bounds, checked by the checker); a pointer indexed far
        // away is computed at run time.
        let const_off = sonde_lang::catalog::const_int(index, self.positional)
            .and_then(|i| i.checked_mul(i64::from(esize)))
            .and_then(|o| i32::try_from(o).ok());
        let folded = match (const_off, place) {
            (
                Some(off),
                Val::Place {
                    base,
                    offset,
                    space,
                },
            ) => offset.checked_add(off).map(|offset| Val::Place {
                base,
                offset,
                space,
            }),
            (Some(off), Val::Mem { ptr, .. }) => Some(Val::Place {
                base: ptr,
                offset: off,
                space: PlaceSpace::Own,
            }),
            (Some(_), other) => Some(other),
            (None, _) => None,
        };
        if let Some(v) = folded {
            return Ok(v);
        }
        let i = self.lower_int(index)?;
        let scaled = self.alu(AluOp::Mul, i, Operand::Imm(esize.into()));
        match place {
            Val::Place {
                base,
                offset,
                space,
            } if space != PlaceSpace::Own => {
                let b = self.alu(AluOp::Add, base, Operand::Imm(offset.into()));
                let p = self.alu(AluOp::Add, b, Operand::Reg(scaled));
                let space = if space == PlaceSpace::Ctx {
                    PlaceSpace::Kernel
                } else {
                    space
                };
                Ok(Val::Place {
                    base: p,
                    offset: 0,
                    space,
                })
            }
            own @ (Val::Mem { .. }
            | Val::Place {
                space: PlaceSpace::Own,
                ..
            }) => {
                let ptr = match own {
                    Val::Place { base, offset, .. } if offset != 0 => {
                        self.alu(AluOp::Add, base, Operand::Imm(offset.into()))
                    }
                    Val::Place { base, .. } => base,
                    Val::Mem { ptr, .. } => ptr,
                    _ => return Err(self.unsupported(e.span, "indexing this value")),
                };
                // The program's own array or string: a bounds-checked element, or a zeroed
                // one past the end (which the verifier needs to see is never read).
                let len = match &bt {
                    Type::Array { len, .. } => i64::from(*len),
                    Type::Str { size } => i64::from(*size),
                    _ => 0,
                };
                let zero = self.alloc_zeroed(esize);
                let out = self.vreg();
                self.emit(Inst::Mov {
                    dst: out,
                    src: Operand::Reg(zero),
                });
                let past = self.label();
                self.branch(Cond::UGe, i, Operand::Imm(len), past);
                let p = self.alu(AluOp::Add, ptr, Operand::Reg(scaled));
                self.emit(Inst::Mov {
                    dst: out,
                    src: Operand::Reg(p),
                });
                self.place_label(past);
                Ok(Val::Place {
                    base: out,
                    offset: 0,
                    space: PlaceSpace::Own,
                })
            }
            _ => Err(self.unsupported(e.span, "indexing owned memory with a variable index")),
        }
    }

    fn lower_cast(&mut self, inner: &Expr, ty: &Type) -> R<Val> {
        let it = self.type_of(inner);
        match ty {
            // An integer array of the integer's size: its bytes are the integer (the array
            // is memory, not a register holding the value).
            _ if ty.is_integer() && matches!(it, Type::Array { .. }) => {
                let v = self.lower_expr(inner)?;
                let r = self.read_place_int(v, ty);
                Ok(Val::Int(match ty {
                    Type::Bool => self.truncate(r, ty),
                    _ => r,
                }))
            }
            Type::Int { .. } | Type::Bool => {
                let v = self.lower_int(inner)?;
                Ok(Val::Int(self.truncate(v, ty)))
            }
            Type::Array { .. } if it.is_integer() => {
                let v = self.lower_int(inner)?;
                let size = ty.size();
                let buf = self.alloc_zeroed(size);
                if size.is_power_of_two() {
                    self.store(buf, 0, Operand::Reg(v), Width::from_bytes(size.min(8)));
                } else {
                    // `(int8[3])1`: the integer's low bytes one by one.
                    for i in 0..size.min(8) {
                        let b = self.alu(AluOp::LShr, v, Operand::Imm(i64::from(i) * 8));
                        self.store(buf, i as i32, Operand::Reg(b), Width::W8);
                    }
                }
                Ok(Val::Mem { ptr: buf, size })
            }
            _ => self.lower_expr(inner),
        }
    }
}

/// Parses a positional parameter as an integer, as the checker types it.
pub fn parse_int(s: &str) -> Option<i64> {
    // As the checker reads it (`sema::expr::positional`): an `int64`, or a `uint64` above
    // `i64::MAX` kept as its bits; hex, octal, binary, `1e6` and `5ms` as bpftrace 0.27.
    sonde_lang::numbers::parse_positional(s).map(|(v, _)| v)
}
