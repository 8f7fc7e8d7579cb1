//! Lowering of statements and assignments.

use super::cx::{LoopLabels, LowerCx, Val, VarHome, is_scalar};
use super::{LowerCall, maps};
use crate::catalog::SondeCatalog;
use crate::ir::{AluOp, Cond, Inst, Operand};
use sonde_lang::ast::{BinOp, Block, Expr, ExprKind, Stmt, StmtKind};
use sonde_lang::catalog::CallPosition;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

type R<T> = Result<T, Diagnostic>;

/// Ranges with constant bounds up to this many iterations are lowered inline; longer ones and
/// ranges with bounds known only at run time run as `bpf_loop` callbacks.
const INLINE_LOOP_LIMIT: i64 = 64;

impl LowerCx<'_> {
    /// Lowers a block; variables declared inside stay allocated (names are unique per probe).
    pub fn lower_block(&mut self, b: &Block) -> R<()> {
        for s in &b.stmts {
            self.lower_stmt(s)?;
        }
        Ok(())
    }

    fn lower_stmt(&mut self, s: &Stmt) -> R<()> {
        let saved = self.span;
        self.span = s.span;
        self.check_code_size()?;
        let mark = self.scratch_used;
        let stack_mark = self.stack_taken.len();
        let r = self.lower_stmt_kind(s);
        self.release_stack(stack_mark);
        // A statement's temporaries in scratch space are dead after it (values that outlive
        // it are copied into variables' homes, which are pinned): the next statement reuses
        // the space, so that a long probe needs its largest statement's, not their sum.
        self.scratch_used = mark.max(self.scratch_pinned);
        self.span = saved;
        r
    }

    fn lower_stmt_kind(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.lower_expr_at(e, CallPosition::Statement)?;
                Ok(())
            }
            StmtKind::Assign { target, op, value } => self.lower_assign(target, *op, value),
            StmtKind::Let { var, value, .. } => {
                let ty = self.types.vars.get(&var.name).cloned().unwrap_or(Type::I64);
                let home = self.var_home(&var.name, &ty);
                match value {
                    Some(v) => {
                        let val = self.lower_expr(v)?;
                        let vt = self.type_of(v);
                        self.write_home(home, val, &vt, &ty);
                    }
                    None => match home {
                        VarHome::Reg(r) => self.emit(Inst::Mov {
                            dst: r,
                            src: Operand::Imm(0),
                        }),
                        VarHome::Mem { ptr, size } => {
                            self.zero(ptr, 0, sonde_lang::types::align_up(size, 8))
                        }
                    },
                }
                Ok(())
            }
            StmtKind::If { cond, then, else_ } => {
                let f = self.label();
                self.lower_cond(cond, f)?;
                self.lower_block(then)?;
                match else_ {
                    Some(e) => {
                        let done = self.label();
                        self.emit(Inst::Jump(done));
                        self.place_label(f);
                        self.lower_block(e)?;
                        self.place_label(done);
                    }
                    None => self.place_label(f),
                }
                Ok(())
            }
            StmtKind::Unroll { count, body } => {
                let n = sonde_lang::catalog::const_int(count, self.positional)
                    .unwrap_or(1)
                    .clamp(0, 100);
                for _ in 0..n {
                    self.lower_block(body)?;
                }
                Ok(())
            }
            StmtKind::While { cond, body } => {
                let top = self.label();
                let brk = self.label();
                self.place_loop_head(top);
                self.lower_cond(cond, brk)?;
                self.loops.push(LoopLabels { brk, cont: top });
                let r = self.lower_block(body);
                self.loops.pop();
                r?;
                self.emit(Inst::Jump(top));
                self.place_label(brk);
                Ok(())
            }
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => {
                let bounds = (
                    sonde_lang::catalog::const_int(start, self.positional),
                    sonde_lang::catalog::const_int(end, self.positional),
                );
                if let (Some(a), Some(b)) = bounds
                    && b.saturating_sub(a) <= INLINE_LOOP_LIMIT
                {
                    return self.lower_inline_range(var, a, b, body);
                }
                let a = self.lower_int(start)?;
                let b = self.lower_int(end)?;
                let count = self.alu(AluOp::Sub, b, Operand::Reg(a));
                // An empty or reversed range runs no iteration.
                let done = self.label();
                let run = self.label();
                self.branch(Cond::SGt, count, Operand::Imm(0), run);
                self.emit(Inst::Mov {
                    dst: count,
                    src: Operand::Imm(0),
                });
                self.place_label(run);
                // bpf_loop refuses more iterations (and reads the count as a u32): cut the
                // range to its limit and count the cut, reported at exit.
                let max = sonde_lang::limits::MAX_LOOP_ITERATIONS as i64;
                let within = self.label();
                self.branch(Cond::SLe, count, Operand::Imm(max), within);
                self.emit(Inst::Mov {
                    dst: count,
                    src: Operand::Imm(max),
                });
                self.count_error(crate::program::Counter::LoopTruncated);
                self.place_label(within);
                self.lower_callback_loop(
                    super::callbacks::LoopSource::Range { start: a, count },
                    var,
                    body,
                    s.span,
                )?;
                self.place_label(done);
                Ok(())
            }
            StmtKind::ForMap { var, map, body } => {
                let ExprKind::Map { name, .. } = &map.kind else {
                    return Err(self.unsupported(map.span, "`for` over this"));
                };
                let m = self
                    .maps
                    .user(name)
                    .ok_or_else(|| self.unsupported(map.span, "this map"))?;
                self.lower_callback_loop(super::callbacks::LoopSource::Map(m), var, body, s.span)
            }
            StmtKind::Break | StmtKind::Continue => {
                let Some(l) = self.loops.last().copied() else {
                    return Ok(());
                };
                let target = if matches!(s.kind, StmtKind::Break) {
                    l.brk
                } else {
                    l.cont
                };
                self.emit(Inst::Jump(target));
                Ok(())
            }
            StmtKind::Return(None) => {
                let exit = self.exit_label;
                self.emit(Inst::Jump(exit));
                Ok(())
            }
            StmtKind::Return(Some(value)) => {
                let v = self.lower_int(value)?;
                self.lower_return(v);
                Ok(())
            }
        }
    }

    /// `for ($i : a..b)` with constant bounds: a loop the verifier walks through.
    fn lower_inline_range(
        &mut self,
        var: &sonde_lang::ast::Ident,
        a: i64,
        b: i64,
        body: &Block,
    ) -> R<()> {
        let home = self.var_home(&var.name, &Type::I64);
        let VarHome::Reg(i) = home else {
            return Err(self.unsupported(var.span, "this loop variable"));
        };
        self.emit(Inst::Mov {
            dst: i,
            src: Operand::Imm(a),
        });
        let top = self.label();
        let cont = self.label();
        let brk = self.label();
        self.place_loop_head(top);
        self.branch(Cond::SGe, i, Operand::Imm(b), brk);
        self.loops.push(LoopLabels { brk, cont });
        let r = self.lower_block(body);
        self.loops.pop();
        r?;
        self.place_label(cont);
        self.emit(Inst::Alu {
            op: AluOp::Add,
            dst: i,
            lhs: i,
            rhs: Operand::Imm(1),
        });
        self.emit(Inst::Jump(top));
        self.place_label(brk);
        Ok(())
    }

    /// The storage of scratch variable `name` of type `ty` (allocated on first use).
    pub(crate) fn var_home(&mut self, name: &str, ty: &Type) -> VarHome {
        if let Some(h) = self.vars.get(name) {
            return *h;
        }
        let home = if is_scalar(ty) && !self.addr_taken.contains(name) {
            VarHome::Reg(self.imm(0))
        } else {
            let size = ty.size();
            let taken = self.stack_taken.len();
            let ptr = self.alloc_zeroed(size);
            // The variable lives on after this statement: its stack slot (when it took one)
            // is not given back with the statement's temporaries.
            self.scratch_pinned = self.scratch_pinned.max(self.scratch_used);
            self.stack_taken.truncate(taken);
            VarHome::Mem { ptr, size }
        };
        self.vars.insert(name.to_string(), home);
        home
    }

    fn write_home(&mut self, home: VarHome, v: Val, from: &Type, to: &Type) {
        match home {
            VarHome::Reg(r) => {
                let x = self.int(v, from);
                self.emit(Inst::Mov {
                    dst: r,
                    src: Operand::Reg(x),
                });
            }
            VarHome::Mem { ptr, .. } => maps::write_converted(self, v, from, to, ptr, 0),
        }
    }

    /// Assigns an already lowered value to a variable or map target.
    pub fn assign_to(&mut self, target: &Expr, v: Val, from: &Type) -> R<()> {
        match &target.kind {
            ExprKind::Var(name) => {
                let ty = self
                    .types
                    .vars
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| from.clone());
                let home = self.var_home(name, &ty);
                self.write_home(home, v, from, &ty);
                Ok(())
            }
            ExprKind::Map { name, keys } => {
                let map = self
                    .maps
                    .user(name)
                    .ok_or_else(|| self.unsupported(target.span, "this map"))?;
                // Materialise before computing the key so the key does not see later writes.
                let v = self.materialize(v, from);
                let key = self.lower_key(name, keys)?;
                maps::store(self, map, key, v, from);
                Ok(())
            }
            _ => Err(self.unsupported(target.span, "assigning to this expression")),
        }
    }

    fn lower_assign(&mut self, target: &Expr, op: Option<BinOp>, value: &Expr) -> R<()> {
        let vt = self.type_of(value);
        // `@m = { stmts; avg($a) }`: the block's statements, then the aggregation's update.
        if let (
            Type::Agg(_),
            ExprKind::Block {
                body,
                value: Some(inner),
            },
        ) = (&vt, &value.kind)
        {
            self.lower_block(body)?;
            return self.lower_assign(target, op, inner);
        }
        if let (Type::Agg(_), ExprKind::Map { name, keys }, ExprKind::Call { name: fname, args }) =
            (&vt, &target.kind, &value.kind)
        {
            let map = self
                .maps
                .user(name)
                .ok_or_else(|| self.unsupported(target.span, "this map"))?;
            let f = SondeCatalog.function_backend(&fname.name).ok_or_else(|| {
                self.unsupported(value.span, &format!("function `{}`", fname.name))
            })?;
            let key = self.lower_key(name, keys)?;
            let call = LowerCall {
                name: &fname.name,
                args,
                ty: vt.clone(),
                span: value.span,
                position: CallPosition::MapAssign,
                target: Some((map, key)),
            };
            // A construct in the arguments may skip the update (`delta`'s first firing).
            let outer = self.agg_skip.replace(None);
            let r = f.lower(self, &call);
            let skip = std::mem::replace(&mut self.agg_skip, outer);
            r?;
            if let Some(Some(l)) = skip {
                self.place_label(l);
            }
            return Ok(());
        }
        match op {
            None => {
                let v = self.lower_expr_at(value, CallPosition::Value)?;
                self.assign_to(target, v, &vt)
            }
            Some(op) => {
                let tt = self.type_of(target);
                // The result has the target's type (sema checked compatibility).
                let a = self.lower_int(target)?;
                let b = self.lower_int(value)?;
                let b = self.pointer_step(&tt, op, &vt, b);
                let aop = super::arith::arith_op(op, &tt, &vt);
                let r = self.arith(aop, a, b, value, self.span);
                let r = self.truncate(r, &tt);
                self.assign_to(target, Val::Int(r), &tt)
            }
        }
    }
}
