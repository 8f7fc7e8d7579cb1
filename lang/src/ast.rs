//! The abstract syntax tree of a sonde (bpftrace-compatible) script.
//!
//! Every node carries the [`Span`] of the source text it came from. Every expression also
//! carries an [`ExprId`], unique within one [`Program`], which later passes use as the key of
//! their side tables (types, resolved calls). The AST is purely syntactic: names are not yet
//! resolved and nothing here knows about kernels or BPF.

use crate::span::Span;

/// Identity of an expression node, unique within one parsed [`Program`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

/// A name as written, with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The text of the name (without `$` or `@` sigils).
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// A whole script.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// `#include` / `#define` lines and C `struct`/`union`/`enum` definitions, in order.
    pub c_defs: Vec<CDef>,
    /// Assignments of the `config = { ... }` block.
    pub config: Vec<ConfigItem>,
    /// `macro name(params) { ... }` definitions.
    pub macros: Vec<MacroDef>,
    /// `let @name = kind(max_entries);` map declarations.
    pub map_decls: Vec<MapDecl>,
    /// The probes, in source order.
    pub probes: Vec<Probe>,
    /// `import "path";` statements: the path as written and where.
    pub imports: Vec<(String, Span)>,
}

/// What kind of top-level C definition a [`CDef`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CDefKind {
    /// `#include <x.h>` or `#include "x.h"`.
    Include,
    /// `#define NAME value`.
    Define,
    /// `struct name { ... };`
    Struct,
    /// `union name { ... };`
    Union,
    /// `enum name { A, B = 2 };`
    Enum,
}

/// A top-level C definition or preprocessor line.
#[derive(Clone, Debug, PartialEq)]
pub struct CDef {
    /// Which kind of definition this is.
    pub kind: CDefKind,
    /// The struct/union/enum tag, the macro name of a `#define`, or the included path.
    pub name: String,
    /// For `#define`, the replacement text (trimmed); for `#include`, the path as written,
    /// with its `<>` or `""` (empty: as `<name>`); empty otherwise.
    pub value: String,
    /// Fields of a struct or union, in order.
    pub fields: Vec<CField>,
    /// Enumerators of an enum with their values (implicit values already filled in).
    pub enumerators: Vec<(String, i64)>,
    /// The whole definition.
    pub span: Span,
    /// A struct or union declared `__attribute__((packed))`: no padding.
    pub packed: bool,
}

/// A field of a C struct or union definition.
#[derive(Clone, Debug, PartialEq)]
pub struct CField {
    /// The declared type (an array field has [`TypeExpr::array`] set: its first dimension).
    pub ty: TypeExpr,
    /// The field name (empty for an anonymous inline struct or union, whose fields are the
    /// enclosing record's).
    pub name: Ident,
    /// Further array dimensions (`int x[2][3]` has `array` 2 and `dims` `[3]`).
    pub dims: Vec<u64>,
    /// A bit-field's width (`unsigned int flag : 1`).
    pub bits: Option<u32>,
    /// A struct or union defined in place (`struct { int a; } inner;`, or anonymous); `ty`
    /// is then unused.
    pub inline: Option<Box<CDef>>,
}

/// One `name = value` assignment of a `config = { ... }` block.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigItem {
    /// The config variable.
    pub name: Ident,
    /// Its value: an integer, string or bare identifier (as [`ExprKind::Ident`]).
    pub value: Expr,
}

/// A map declaration: `let @name = lruhash(100);`.
#[derive(Clone, Debug, PartialEq)]
pub struct MapDecl {
    /// The map's name without `@` (empty for `@`).
    pub name: String,
    /// The kind as written (`hash`, `lruhash`, `percpuhash`, `percpulruhash`), with its span.
    pub kind: Ident,
    /// The most elements the map holds, as written.
    pub max_entries: u64,
    /// The span of the size argument.
    pub size_span: Span,
    /// The whole declaration.
    pub span: Span,
}

/// A macro definition: `macro name($a, b, @m) { stmts; expr }`.
#[derive(Clone, Debug, PartialEq)]
pub struct MacroDef {
    /// The macro's name.
    pub name: Ident,
    /// Its parameters as written, sigil included (`$a`, `@m`, `b`).
    pub params: Vec<Ident>,
    /// Its body.
    pub body: Block,
    /// The whole definition.
    pub span: Span,
    /// Made from a C `#define` (object-like or function-like): expanded as C does, without
    /// renaming the body's own variables.
    pub from_define: bool,
}

/// A probe: attach points, an optional predicate and an action block.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// One or more attach points (`a, b { }`).
    pub attach_points: Vec<AttachPoint>,
    /// The `/expr/` predicate, if any.
    pub predicate: Option<Expr>,
    /// The action.
    pub body: Block,
    /// From the first attach point to the closing brace.
    pub span: Span,
}

/// One attach point as written, split on `:`, e.g. `tracepoint:syscalls:sys_enter_*`.
///
/// `BEGIN`/`END` have `provider` set to `BEGIN`/`END` and no `parts`. For
/// `uprobe:/bin/bash:readline` the provider is `uprobe` and the parts are `/bin/bash` and
/// `readline`. The provider is kept as written (`t`, `kprobe`, `BEGIN`); alias resolution is
/// the provider registry's job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachPoint {
    /// The whole attach point text.
    pub raw: String,
    /// The provider name as written.
    pub provider: String,
    /// The `:`-separated parts after the provider (wildcards kept verbatim).
    pub parts: Vec<String>,
    /// Where it was written.
    pub span: Span,
}

/// A `{ ... }` block of statements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Statements in order.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}`.
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What the statement is.
    pub kind: StmtKind,
    /// Where it was written (without the trailing `;`).
    pub span: Span,
}

impl Stmt {
    /// Calls `f` on each outermost expression of this statement, those of its nested blocks
    /// included.
    pub fn for_each_expr_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        fn nested(b: &mut Block, f: &mut dyn FnMut(&mut Expr)) {
            b.stmts.iter_mut().for_each(|s| s.for_each_expr_mut(f));
        }
        match &mut self.kind {
            StmtKind::Expr(e) => f(e),
            StmtKind::Assign { target, value, .. } => {
                f(target);
                f(value);
            }
            StmtKind::Let { value, .. } => {
                if let Some(v) = value {
                    f(v);
                }
            }
            StmtKind::If { cond, then, else_ } => {
                f(cond);
                nested(then, f);
                if let Some(e) = else_ {
                    nested(e, f);
                }
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                f(c);
                nested(body, f);
            }
            StmtKind::ForMap { map, body, .. } => {
                f(map);
                nested(body, f);
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                f(start);
                f(end);
                nested(body, f);
            }
            StmtKind::Return(Some(v)) => f(v),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }

    /// Calls `f` on the `typeof(...)` operands of the `let` annotations of this statement and
    /// of the statements of its nested blocks (not of blocks inside its expressions: those are
    /// their expressions', [`Expr::for_each_typeof_mut`]).
    pub fn for_each_typeof_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match &mut self.kind {
            StmtKind::Let { ty: Some(t), .. } => {
                if let Some(e) = t.typeof_expr_mut() {
                    f(e);
                }
            }
            StmtKind::If { then, else_, .. } => {
                for s in then
                    .stmts
                    .iter_mut()
                    .chain(else_.iter_mut().flat_map(|b| b.stmts.iter_mut()))
                {
                    s.for_each_typeof_mut(f);
                }
            }
            StmtKind::Unroll { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ForMap { body, .. }
            | StmtKind::ForRange { body, .. } => {
                body.stmts.iter_mut().for_each(|s| s.for_each_typeof_mut(f));
            }
            _ => {}
        }
    }

    /// [`Stmt::for_each_typeof_mut`], by reference.
    pub fn typeof_operands(&self) -> Vec<&Expr> {
        match &self.kind {
            StmtKind::Let { ty: Some(t), .. } => t.typeof_expr().into_iter().collect(),
            StmtKind::If { then, else_, .. } => then
                .stmts
                .iter()
                .chain(else_.iter().flat_map(|b| b.stmts.iter()))
                .flat_map(Stmt::typeof_operands)
                .collect(),
            StmtKind::Unroll { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ForMap { body, .. }
            | StmtKind::ForRange { body, .. } => {
                body.stmts.iter().flat_map(Stmt::typeof_operands).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The outermost expressions of this statement, those of the statements of its nested
    /// blocks included (each expression once; their own sub-expressions are theirs).
    pub fn exprs(&self) -> Vec<&Expr> {
        fn nested(b: &Block) -> Vec<&Expr> {
            b.stmts.iter().flat_map(Stmt::exprs).collect()
        }
        match &self.kind {
            StmtKind::Expr(e) => vec![e],
            StmtKind::Assign { target, value, .. } => vec![target, value],
            StmtKind::Let { value, .. } => value.iter().collect(),
            StmtKind::If { cond, then, else_ } => {
                let mut v = vec![cond];
                v.extend(nested(then));
                v.extend(else_.iter().flat_map(nested));
                v
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                let mut v = vec![c];
                v.extend(nested(body));
                v
            }
            StmtKind::ForMap { map, body, .. } => {
                let mut v = vec![map];
                v.extend(nested(body));
                v
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                let mut v = vec![start, end];
                v.extend(nested(body));
                v
            }
            StmtKind::Return(v) => v.iter().collect(),
            StmtKind::Break | StmtKind::Continue => Vec::new(),
        }
    }
}

/// The kinds of statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// An expression evaluated for its effect, e.g. `printf(...)`, `@x++`.
    Expr(Expr),
    /// `target = value`, or a compound assignment `target op= value` when `op` is set.
    /// The target is a map (`@m`, `@m[k]`) or a scratch variable (`$x`).
    Assign {
        /// Map or variable being assigned.
        target: Expr,
        /// For `+=` etc., the binary operator applied.
        op: Option<BinOp>,
        /// Right-hand side.
        value: Expr,
    },
    /// `let $x [: type] [= value]`.
    Let {
        /// The variable (without `$`).
        var: Ident,
        /// Declared type, if written.
        ty: Option<TypeExpr>,
        /// Initial value, if written.
        value: Option<Expr>,
    },
    /// `if (cond) { } else ...`; `else if` is an `else_` block holding one `If` statement.
    If {
        /// Condition.
        cond: Expr,
        /// Taken branch.
        then: Block,
        /// Else branch.
        else_: Option<Block>,
    },
    /// `unroll(N) { }`.
    Unroll {
        /// Number of repetitions (an integer literal or positional parameter).
        count: Expr,
        /// Body.
        body: Block,
    },
    /// `while (cond) { }`.
    While {
        /// Condition.
        cond: Expr,
        /// Body.
        body: Block,
    },
    /// `for ($kv : @map) { }`: `$kv` is a `(key, value)` tuple.
    ForMap {
        /// Loop variable (without `$`).
        var: Ident,
        /// The map (an [`ExprKind::Map`] without keys).
        map: Expr,
        /// Body.
        body: Block,
    },
    /// `for ($i : start..end) { }` (end exclusive).
    ForRange {
        /// Loop variable (without `$`).
        var: Ident,
        /// First value.
        start: Expr,
        /// One past the last value.
        end: Expr,
        /// Body.
        body: Block,
    },
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `return;` or `return EXPR;`: leaves the probe, which returns EXPR (an integer; 0
    /// without one). A test fails when it returns non-zero, a benchmark is skipped.
    Return(Option<Expr>),
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Unique id (key for side tables such as types).
    pub id: ExprId,
    /// What the expression is.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

impl Expr {
    /// Calls `f` on each direct child expression of this one (for a block expression, the
    /// outermost expressions of its statements and its value).
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match &mut self.kind {
            ExprKind::Map { keys: v, .. }
            | ExprKind::Call { args: v, .. }
            | ExprKind::Tuple(v)
            | ExprKind::Record { values: v, .. } => v.iter_mut().for_each(f),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Index {
                base: lhs,
                index: rhs,
            } => {
                f(lhs.as_mut());
                f(rhs.as_mut());
            }
            ExprKind::Unary { expr, .. }
            | ExprKind::Cast { expr, .. }
            | ExprKind::IncDec { target: expr, .. }
            | ExprKind::Field { base: expr, .. }
            | ExprKind::TupleIndex { base: expr, .. } => f(expr.as_mut()),
            ExprKind::Ternary { cond, then, else_ } => {
                f(cond.as_mut());
                f(then.as_mut());
                f(else_.as_mut());
            }
            ExprKind::Block { body, value } => {
                body.stmts.iter_mut().for_each(|s| s.for_each_expr_mut(f));
                if let Some(v) = value {
                    f(v);
                }
            }
            ExprKind::Int(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Ident(_)
            | ExprKind::Positional(_)
            | ExprKind::PositionalCount
            | ExprKind::Var(_)
            | ExprKind::Type(_) => {}
        }
    }

    /// The operand of the `typeof(...)` this cast or type argument names, if it does.
    pub fn typeof_operand(&self) -> Option<&Expr> {
        match &self.kind {
            ExprKind::Cast { ty, .. } | ExprKind::Type(ty) => ty.typeof_expr(),
            _ => None,
        }
    }

    /// [`Expr::typeof_operand`], mutably.
    pub fn typeof_operand_mut(&mut self) -> Option<&mut Expr> {
        match &mut self.kind {
            ExprKind::Cast { ty, .. } | ExprKind::Type(ty) => ty.typeof_expr_mut(),
            _ => None,
        }
    }

    /// Calls `f` on the `typeof(...)` operands that belong to this expression and are no
    /// children of it: its own ([`Expr::typeof_operand`]) and, for a block expression, those
    /// of the `let` annotations of its statements ([`Stmt::for_each_typeof_mut`]). Walks that
    /// must reach every expression (renumbering, macro expansion) call it next to
    /// [`Expr::for_each_child_mut`]; evaluation never does.
    pub fn for_each_typeof_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        if let ExprKind::Block { body, .. } = &mut self.kind {
            body.stmts.iter_mut().for_each(|s| s.for_each_typeof_mut(f));
        } else if let Some(t) = self.typeof_operand_mut() {
            f(t);
        }
    }

    /// [`Expr::for_each_typeof_mut`], by reference.
    pub fn typeof_operands(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Block { body, .. } => {
                body.stmts.iter().flat_map(Stmt::typeof_operands).collect()
            }
            _ => self.typeof_operand().into_iter().collect(),
        }
    }

    /// The direct sub-expressions, in source order.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Map { keys: v, .. }
            | ExprKind::Call { args: v, .. }
            | ExprKind::Tuple(v)
            | ExprKind::Record { values: v, .. } => v.iter().collect(),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Index {
                base: lhs,
                index: rhs,
            } => {
                vec![lhs, rhs]
            }
            ExprKind::Unary { expr, .. }
            | ExprKind::Cast { expr, .. }
            | ExprKind::IncDec { target: expr, .. }
            | ExprKind::Field { base: expr, .. }
            | ExprKind::TupleIndex { base: expr, .. } => vec![expr],
            ExprKind::Ternary { cond, then, else_ } => vec![cond, then, else_],
            ExprKind::Block { body, value } => {
                let mut v: Vec<&Expr> = body.stmts.iter().flat_map(Stmt::exprs).collect();
                v.extend(value.as_deref());
                v
            }
            ExprKind::Int(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Ident(_)
            | ExprKind::Positional(_)
            | ExprKind::PositionalCount
            | ExprKind::Var(_)
            | ExprKind::Type(_) => Vec::new(),
        }
    }
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal, after suffixes (`1_000`, `1e6`, `4K`, `0x10`, `010`) are applied.
    Int(u64),
    /// `true` or `false`.
    Bool(bool),
    /// A string literal with escapes decoded (may hold any bytes).
    Str(Vec<u8>),
    /// A bare identifier: a builtin variable (`pid`, `comm`, `args`, `arg0`, `retval`), an enum
    /// constant, or a config value. Resolved by sema.
    Ident(String),
    /// A positional parameter `$1`, `$2`, ...
    Positional(u32),
    /// `$#`, the number of positional parameters.
    PositionalCount,
    /// A scratch variable `$name` (name without `$`).
    Var(String),
    /// A map `@name` / `@` (empty name) with optional keys `@name[k1, k2]`.
    Map {
        /// Map name without `@` (empty for `@`).
        name: String,
        /// Keys; empty for a scalar map access.
        keys: Vec<Expr>,
    },
    /// A call `name(args)`; builtins written with parentheses (`pid()`) are calls too.
    Call {
        /// Function name.
        name: Ident,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// A type used as an argument, e.g. `sizeof(struct task_struct)`.
    Type(TypeExpr),
    /// `lhs op rhs`.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `op expr`.
    Unary {
        /// Operator.
        op: UnOp,
        /// Operand.
        expr: Box<Expr>,
    },
    /// `++x`, `x++`, `--x`, `x--` on a map or variable.
    IncDec {
        /// The map or variable.
        target: Box<Expr>,
        /// `++` when true, `--` when false.
        increment: bool,
        /// Prefix form (`++x`) when true.
        prefix: bool,
    },
    /// `{ stmts; value }`: a block used as an expression (bpftrace 0.26). Its value is its
    /// last item when that is an expression without `;`; without one the block is a
    /// statement (type `void`). Variables defined inside are local to it. `if c { a } else
    /// { b }` used as a value is a [`ExprKind::Ternary`] whose branches are blocks.
    Block {
        /// The statements before the value.
        body: Block,
        /// The value, if any.
        value: Option<Box<Expr>>,
    },
    /// A record `(name = value, ...)`: a tuple whose elements have names (bpftrace 0.25+).
    Record {
        /// The element names, in the order written.
        names: Vec<Ident>,
        /// The values, one per name.
        values: Vec<Expr>,
    },
    /// `cond ? then : else_`.
    Ternary {
        /// Condition.
        cond: Box<Expr>,
        /// Value when true.
        then: Box<Expr>,
        /// Value when false.
        else_: Box<Expr>,
    },
    /// `base.field` or `base->field`.
    Field {
        /// The struct, pointer or record.
        base: Box<Expr>,
        /// The field name.
        field: Ident,
        /// Written with `->`.
        arrow: bool,
    },
    /// `tuple.0`.
    TupleIndex {
        /// The tuple.
        base: Box<Expr>,
        /// Element index.
        index: u32,
    },
    /// `base[index]` on an array or pointer.
    Index {
        /// Array or pointer.
        base: Box<Expr>,
        /// Index.
        index: Box<Expr>,
    },
    /// `(type) expr`.
    Cast {
        /// Target type.
        ty: TypeExpr,
        /// Operand.
        expr: Box<Expr>,
    },
    /// `(a, b, ...)` with at least two elements.
    Tuple(Vec<Expr>),
}

/// Binary operators, in C semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&` (short-circuit)
    And,
    /// `||` (short-circuit)
    Or,
}

impl BinOp {
    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            Shr => ">>",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            And => "&&",
            Or => "||",
        }
    }

    /// True for the comparison operators (result is a bool).
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `!` logical not
    Not,
    /// `~` bitwise not
    BitNot,
    /// `-` negation
    Neg,
    /// `*` dereference
    Deref,
    /// `&` address-of
    AddrOf,
}

impl UnOp {
    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Not => "!",
            UnOp::BitNot => "~",
            UnOp::Neg => "-",
            UnOp::Deref => "*",
            UnOp::AddrOf => "&",
        }
    }
}

/// A type as written in a cast, `let`, `sizeof` or C struct field.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    /// The base type.
    pub base: BaseType,
    /// Number of `*` after the base (`struct task_struct *` has 1).
    pub pointer_depth: u8,
    /// `T[N]`: array length.
    pub array: Option<u64>,
    /// Where it was written.
    pub span: Span,
}

impl TypeExpr {
    /// The operand of `typeof(expr)` when this type is one (a `typeof` of a type is that type).
    pub fn typeof_expr(&self) -> Option<&Expr> {
        match &self.base {
            BaseType::Typeof(e) => Some(e),
            _ => None,
        }
    }

    /// [`TypeExpr::typeof_expr`], mutably.
    pub fn typeof_expr_mut(&mut self) -> Option<&mut Expr> {
        match &mut self.base {
            BaseType::Typeof(e) => Some(e),
            _ => None,
        }
    }
}

/// The base of a [`TypeExpr`].
#[derive(Clone, Debug, PartialEq)]
pub enum BaseType {
    /// A named scalar type as written, normalised to single spaces: `uint32`, `int8`,
    /// `unsigned long`, `u64`, `bool`, `void`, `char`, a typedef name...
    Named(String),
    /// `string` or `string[N]` (the size goes to `TypeExpr::array`).
    String,
    /// `struct name`.
    Struct(String),
    /// `union name`.
    Union(String),
    /// `enum name`.
    Enum(String),
    /// `typeof(expr)` (bpftrace 0.26): the type of an expression that is never evaluated, so
    /// it is no child of the expression or statement holding the type (see
    /// [`Expr::for_each_typeof_mut`]).
    Typeof(Box<Expr>),
}
