//! The lowering context: the function being built, memory allocation, values, the call being
//! lowered, and the small code-building helpers that builtins and functions use in their
//! `lower` methods (the catalog's entries import them from here, below the lowering's dispatch
//! in `lower/mod.rs`).

use super::maps::MapTable;
use super::reuse::Reuse;
use crate::ir::{
    AluOp, Cond, Function, Inst, Intrinsic, Label, MapRef, Operand, Slot, VReg, Width,
};
use crate::program::EventSpec;
use sonde_lang::ast::{Expr, ExprKind, Program};
use sonde_lang::catalog::{CallPosition, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::TypeTable;
use sonde_lang::span::Span;
use sonde_lang::types::{AddrSpace, Type};
use std::collections::{HashMap, HashSet};

/// Bytes of a program's frame given to small temporaries; the rest is left for spills.
pub(crate) const STACK_BUDGET: u32 = 256;
/// Largest temporary placed on the stack; bigger ones go to the per-CPU scratch map.
pub(crate) const STACK_MAX_ALLOC: u32 = 64;
/// Largest event buffer placed on the stack (while the budget lasts): a `printf` of a few
/// strings, built there rather than in the scratch map, which a lookup at the probe's start
/// would address.
pub(crate) const STACK_MAX_EVENT: u32 = 192;
/// Most IR instructions one function (a probe or a loop body) may have: the kernel loads no
/// program over 1,000,000 instructions (`BPF_COMPLEXITY_LIMIT_INSNS`), and each IR
/// instruction is at least one BPF instruction. Only `unroll` multiplies code (nested
/// `unroll(100)`s would grow it exponentially); the check stops lowering there.
pub const MAX_FUNCTION_INSTS: usize = 1_000_000;
/// Code of a probe whose code or scratch space exceeds what the kernel loads.
pub const PROBE_TOO_LARGE: &str = "sonde::codegen::too_large";
/// Bytes of per-CPU scratch space a probe (with its loop bodies) may use for the values that
/// do not fit its stack: the kernel's largest per-CPU map value (`PCPU_MIN_UNIT_SIZE`). The
/// userspace engine keeps the same limit, so that a script runs in both or in neither.
pub const MAX_SCRATCH: u32 = sonde_lang::limits::MAX_VALUE_SIZE;

/// A call being lowered.
pub struct LowerCall<'a> {
    /// Function name.
    pub name: &'a str,
    /// Argument expressions.
    pub args: &'a [Expr],
    /// The call's checked result type.
    pub ty: Type,
    /// The whole call.
    pub span: Span,
    /// Where the call appears.
    pub position: CallPosition,
    /// For aggregations: the map being assigned and the key pointer.
    pub target: Option<(MapRef, VReg)>,
}

/// Where a value lives after lowering an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// No value (statements, void calls).
    None,
    /// A 64-bit integer (sign- or zero-extended per its type), bool or pointer in a register.
    Int(VReg),
    /// Bytes in memory the program owns (stack or scratch map): strings, tuples, buffers.
    Mem {
        /// Pointer to the first byte.
        ptr: VReg,
        /// Number of bytes.
        size: u32,
    },
    /// A location that has not been read yet: `base + offset` in `space` (context, kernel or
    /// user memory). Reading it needs a direct load (context) or a probe read.
    Place {
        /// Base pointer.
        base: VReg,
        /// Byte offset from the base.
        offset: i32,
        /// Which memory the base points into.
        space: PlaceSpace,
    },
}

/// The memory a [`Val::Place`] points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceSpace {
    /// The program context (readable with direct loads at constant offsets).
    Ctx,
    /// Kernel memory (read with `probe_read_kernel`).
    Kernel,
    /// User memory (read with `probe_read_user`).
    User,
    /// Memory of unknown space, such as the pointer arguments of syscall tracepoints (read
    /// with the helpers that decide by the address).
    Any,
    /// Memory the program owns (stack, scratch, map values): direct loads.
    Own,
}

impl PlaceSpace {
    /// The place space for a pointer in address space `space`, in a probe that is in user
    /// context when `user` is true.
    pub fn of_pointer(space: AddrSpace, user: bool) -> PlaceSpace {
        match space {
            AddrSpace::Kernel => PlaceSpace::Kernel,
            AddrSpace::User => PlaceSpace::User,
            AddrSpace::Unknown if user => PlaceSpace::User,
            AddrSpace::Unknown => PlaceSpace::Any,
        }
    }
}

/// A scratch variable's storage.
#[derive(Clone, Copy, Debug)]
pub(crate) enum VarHome {
    /// A scalar in a register.
    Reg(VReg),
    /// Bytes in owned memory.
    Mem { ptr: VReg, size: u32 },
}

/// Break and continue targets of the innermost loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopLabels {
    pub(crate) brk: Label,
    pub(crate) cont: Label,
}

/// Buffers of at least this many bytes are zeroed or copied by one call rather than by a
/// store (or a load and a store) per word.
const ZERO_BY_CALL: u32 = 64;

/// State of lowering one probe instance into one IR function.
pub struct LowerCx<'a> {
    /// The function being built.
    pub f: Function,
    /// The parsed program.
    pub program: &'a Program,
    /// Types of the probe's expressions and variables.
    pub types: &'a TypeTable,
    /// The concrete attach point (context and names).
    pub attach: &'a ResolvedAttach,
    /// All maps of the script.
    pub maps: &'a mut MapTable,
    /// Ring-buffer events of the script (shared by all probes).
    pub events: &'a mut Vec<EventSpec>,
    /// Positional parameters.
    pub positional: &'a [String],
    /// Compile options.
    pub options: &'a crate::options::CompileOptions,
    /// Kernel facts.
    pub kernel: &'a dyn sonde_lang::kernel::KernelInfo,
    /// The script's named constants.
    pub constants: &'a sonde_lang::sema::constants::Constants,
    /// Context layout of this probe's provider.
    pub layout: crate::context::ContextLayout,
    /// The span of the construct being lowered (attached to emitted instructions).
    pub span: Span,
    /// The `max_strlen` config value (bytes of strings read without a length).
    pub max_strlen: u32,
    /// The script's settings (the `config` record's values).
    pub config: &'a sonde_lang::sema::Config,
    pub(crate) vars: HashMap<String, VarHome>,
    /// Scratch variables whose address the probe takes (`&$x`): they live in memory.
    pub(crate) addr_taken: std::collections::HashSet<String>,
    /// Variables written once in the probe, whose value keys may be reused (see
    /// [`crate::lower::reuse`]).
    pub(crate) stable_vars: std::collections::HashSet<String>,
    pub(crate) loops: Vec<LoopLabels>,
    pub(crate) stack_used: u32,
    pub(crate) scratch_used: u32,
    /// The most scratch space in use at any point (the size the scratch map needs).
    pub(crate) scratch_peak: u32,
    /// The end of the last scratch allocation that outlives its statement (a variable's
    /// home, the shared event area): statements give back only what they took above it.
    pub(crate) scratch_pinned: u32,
    /// Where the scratch space first grew past [`MAX_SCRATCH`].
    pub(crate) scratch_overflow: Option<Span>,
    /// The scratch area (offset, size) event buffers share ([`LowerCx::alloc_event_zeroed`]).
    pub(crate) event_area: Option<(u32, u32)>,
    pub(crate) scratch_ptr: Option<VReg>,
    pub(crate) exit_label: Label,
    /// Stack bytes this function may give to temporaries (the rest goes to scratch).
    pub(crate) stack_budget: u32,
    /// Callback functions of the program (loop bodies), in creation order.
    pub(crate) callbacks: Vec<Function>,
    /// The stack slot of the function being built that its byte loops pass to `bpf_loop`
    /// (see [`crate::lower::byte_loops`]): one for all, each loop's done when the next starts.
    pub(crate) loop_frame: Option<Slot>,
    /// The expression each place (`base`, `offset`) came from, so that a failed read of it
    /// (`-k`) names that expression rather than the statement that read it.
    pub(crate) place_spans: HashMap<(VReg, i32), Span>,
    /// Set while the target of `++`/`--` is read: an absent map element is then no error
    /// to report under `-k` (it starts at 0).
    pub(crate) updating: bool,
    /// Index of the probe in the program (`delta` keys its clocks by it).
    pub probe_index: usize,
    /// While the arguments of an aggregation (`@m[k] = hist(ARGS)`) are lowered: `Some`, with
    /// the label that skips the update once asked for ([`LowerCx::skip_aggregation`]).
    pub(crate) agg_skip: Option<Option<Label>>,
    /// In a loop body's callback: the callback's struct, where `return EXPR` leaves the value
    /// the probe returns ([`LowerCx::lower_return`]). `None` in the probe's own function.
    pub(crate) ret_slot: Option<VReg>,
    /// Values computed once and reused while they are valid ([`Reuse`]): scalar map
    /// elements read (a filter's `@s[tid]` read again by its body is not looked up twice)
    /// and per-event builtins (`tid`, `pid`, ...), with the register holding each and the
    /// instruction index where it was computed.
    pub(crate) reuse: Vec<(Reuse, VReg, usize)>,
    /// Per label: the index of the first jump to it emitted so far (see
    /// [`LowerCx::place_label`]).
    pub(crate) first_jump: HashMap<Label, usize>,
    /// Labels placed by [`LowerCx::place_label`], which no later jump may target.
    pub(crate) forward_labels: HashSet<Label>,
    /// Where the expression being lowered may build its value: an event's field
    /// ([`crate::lower::events::send`]), taken by [`LowerCx::take_place`].
    pub(crate) place: Option<Place>,
    /// Stack slots of temporaries taken by the statements being lowered, innermost last
    /// (see [`LowerCx::release_stack`]).
    pub(crate) stack_taken: Vec<(Slot, u32)>,
    /// Stack slots of finished statements' temporaries, free for the next ones, by size.
    pub(crate) stack_free: Vec<(Slot, u32)>,
    /// The last stack slot allocated and the register holding its address (see
    /// [`LowerCx::pin_slot_of`]).
    pub(crate) last_stack_alloc: Option<(Slot, VReg)>,
}

/// Zeroed memory offered to the expression at `span` for its value (see
/// [`LowerCx::take_place`]).
#[derive(Clone, Copy, Debug)]
pub struct Place {
    /// The expression the memory is offered to.
    pub span: Span,
    /// Its address.
    pub ptr: VReg,
    /// Bytes available from `ptr` (the value may write one byte beyond its size).
    pub room: u32,
}

impl<'a> LowerCx<'a> {
    /// The type of an expression (Void when the checker recorded none).
    pub fn type_of(&self, e: &Expr) -> Type {
        self.types.exprs.get(&e.id).cloned().unwrap_or(Type::Void)
    }

    /// The type of `e` as the script declared it: an integer variable or map value, stored
    /// in 64 bits, has the width of the widest integer assigned to it (`$x = (uint32)v`
    /// reads as a `uint32`), as bpftrace keeps it; an integer literal has its smallest signed
    /// type (`1` is an `int8`); anything else is [`Self::type_of`].
    pub fn declared_type(&self, e: &Expr) -> Type {
        let t = self.type_of(e);
        // `bswap` keeps its argument's type.
        if let ExprKind::Call { name, args } = &e.kind
            && name.name == "bswap"
            && let [arg] = args.as_slice()
        {
            return self.declared_type(arg);
        }
        if let Some(bits) = sonde_lang::sema::widths::literal_bits(e)
            && matches!(t, Type::Int { .. })
        {
            return Type::Int { bits, signed: true };
        }
        match (t, self.types.widths.get(&e.id)) {
            (Type::Int { signed, .. }, Some(&bits)) => Type::Int { bits, signed },
            (t, _) => t,
        }
    }

    /// Inside the arguments of an aggregation: the label that skips its update (the value is
    /// not counted), placed after the update. `None` elsewhere.
    pub fn skip_aggregation(&mut self) -> Option<Label> {
        if let Some(Some(l)) = self.agg_skip {
            return Some(l);
        }
        self.agg_skip?;
        let l = self.label();
        self.agg_skip = Some(Some(l));
        Some(l)
    }

    /// Appends an instruction at the current span.
    pub fn emit(&mut self, inst: Inst) {
        let span = self.span;
        if let Inst::Jump(l) | Inst::Branch { target: l, .. } = &inst {
            self.first_jump.entry(*l).or_insert(self.f.insts.len());
            // A jump back to a label placed as a forward one would keep remembered values
            // that the path through the jump may not have computed.
            debug_assert!(
                !self.forward_labels.contains(l),
                "backward jump to L{} placed with place_label, not place_loop_head",
                l.0
            );
        }
        self.f.push(inst, span);
    }

    /// A fresh register.
    pub fn vreg(&mut self) -> VReg {
        self.f.vreg()
    }

    /// A fresh label.
    pub fn label(&mut self) -> Label {
        self.f.label()
    }

    /// A register holding the constant `v`.
    pub fn imm(&mut self, v: i64) -> VReg {
        let r = self.vreg();
        self.emit(Inst::Mov {
            dst: r,
            src: Operand::Imm(v),
        });
        r
    }

    /// `dst = lhs op rhs` into a fresh register.
    pub fn alu(&mut self, op: AluOp, lhs: VReg, rhs: Operand) -> VReg {
        let dst = self.vreg();
        self.emit(Inst::Alu { op, dst, lhs, rhs });
        dst
    }

    /// Calls an intrinsic and returns its result register.
    pub fn call(&mut self, func: Intrinsic, args: Vec<Operand>) -> VReg {
        let dst = self.vreg();
        self.emit(Inst::Call {
            dst: Some(dst),
            func,
            args,
        });
        dst
    }

    /// The context pointer.
    pub fn ctx(&self) -> VReg {
        self.f
            .ctx
            .expect("functions always have a context register")
    }

    /// Loads `width` bytes at `base + offset` (zero-extended).
    pub fn load(&mut self, base: VReg, offset: i32, width: Width) -> VReg {
        let dst = self.vreg();
        self.emit(Inst::Load {
            dst,
            base,
            offset,
            width,
        });
        dst
    }

    /// Stores `src` (`width` bytes) at `base + offset`.
    pub fn store(&mut self, base: VReg, offset: i32, src: Operand, width: Width) {
        self.emit(Inst::Store {
            base,
            offset,
            src,
            width,
        });
    }

    /// Fails once the function being built has more than [`MAX_FUNCTION_INSTS`]
    /// instructions (checked before each statement, so that no construct runs away).
    pub fn check_code_size(&self) -> Result<(), Diagnostic> {
        let n = self.f.insts.len();
        if n <= MAX_FUNCTION_INSTS {
            return Ok(());
        }
        Err(Diagnostic::error(
            PROBE_TOO_LARGE,
            self.span,
            "this probe compiles to too many instructions",
        )
        .with_label(format!(
            "more than {MAX_FUNCTION_INSTS} instructions by here"
        ))
        .with_help(format!(
            "the kernel loads at most {MAX_FUNCTION_INSTS} instructions per program; use fewer or smaller `unroll`s (or a `for` loop)"
        )))
    }

    /// Zeroes `size` bytes (a multiple of 8 is fastest) at `ptr + offset`: stores for a few
    /// words, one call for more ([`Self::zero_by_call`]).
    pub fn zero(&mut self, ptr: VReg, offset: i32, size: u32) {
        if size >= ZERO_BY_CALL {
            self.zero_by_call(ptr, offset, size);
            return;
        }
        let mut off = 0u32;
        while off < size {
            let w = chunk(size - off);
            self.store(ptr, offset + off as i32, Operand::Imm(0), w);
            off += w.bytes();
        }
    }

    /// `ptr + off` (`ptr` itself when `off` is 0).
    pub fn offset_ptr(&mut self, ptr: VReg, off: i32) -> VReg {
        if off == 0 {
            ptr
        } else {
            self.alu(AluOp::Add, ptr, Operand::Imm(off.into()))
        }
    }

    /// Zeroes `size` bytes at `ptr + offset` with one call: a read of kernel address 0, which
    /// fails and leaves its destination zeroed (the kernel's `bpf_probe_read_kernel` clears it
    /// on any failure, without touching address 0 on x86-64, where it refuses user
    /// addresses; the userspace engine's read does the same). Five instructions instead of
    /// one store per word: a 2 KiB event buffer took 256.
    fn zero_by_call(&mut self, ptr: VReg, offset: i32, size: u32) {
        let dst = self.offset_ptr(ptr, offset);
        self.call(
            Intrinsic::ProbeReadKernel,
            vec![
                Operand::Reg(dst),
                Operand::Imm(size.into()),
                Operand::Imm(0),
            ],
        );
    }

    /// Copies `size` bytes from owned memory `src` to owned memory `dst`.
    pub fn copy(&mut self, dst: VReg, dst_off: i32, src: VReg, src_off: i32, size: u32) {
        if size >= ZERO_BY_CALL {
            let d = self.offset_ptr(dst, dst_off);
            let s = self.offset_ptr(src, src_off);
            self.call(
                Intrinsic::MemCopy,
                vec![Operand::Reg(d), Operand::Imm(size.into()), Operand::Reg(s)],
            );
            return;
        }
        let mut off = 0u32;
        while off < size {
            let w = chunk_aligned((dst_off + off as i32) | (src_off + off as i32), size - off);
            let v = self.load(src, src_off + off as i32, w);
            self.store(dst, dst_off + off as i32, Operand::Reg(v), w);
            off += w.bytes();
        }
    }

    /// Sign-extends the low `bits` of `r` to 64 bits.
    pub fn sign_extend(&mut self, r: VReg, bits: u8) -> VReg {
        if bits >= 64 {
            return r;
        }
        let shift = i64::from(64 - bits);
        let t = self.alu(AluOp::Shl, r, Operand::Imm(shift));
        self.alu(AluOp::AShr, t, Operand::Imm(shift))
    }

    /// Normalises a freshly loaded integer of type `ty` (sign extension for signed types).
    pub fn normalize(&mut self, r: VReg, ty: &Type) -> VReg {
        match ty {
            Type::Int { bits, signed: true } => self.sign_extend(r, *bits),
            _ => r,
        }
    }

    /// Reads `size` bytes from a place into owned memory at `dst + dst_off`.
    pub fn read_place_into(&mut self, place: Val, dst: VReg, dst_off: i32, size: u32) {
        let Val::Place {
            base,
            offset,
            space,
        } = place
        else {
            if let Val::Mem { ptr, .. } = place {
                self.copy(dst, dst_off, ptr, 0, size);
            }
            return;
        };
        match space {
            PlaceSpace::Own => self.copy(dst, dst_off, base, offset, size),
            PlaceSpace::Ctx | PlaceSpace::Kernel | PlaceSpace::User | PlaceSpace::Any => {
                let src = self.offset_ptr(base, offset);
                let d = self.offset_ptr(dst, dst_off);
                let func = match space {
                    PlaceSpace::User => Intrinsic::ProbeReadUser,
                    PlaceSpace::Any => Intrinsic::ProbeRead,
                    _ => Intrinsic::ProbeReadKernel,
                };
                let span = self.place_spans.get(&(base, offset)).copied();
                self.probe_read_at(
                    span,
                    func,
                    vec![
                        Operand::Reg(d),
                        Operand::Imm(size.into()),
                        Operand::Reg(src),
                    ],
                );
            }
        }
    }

    /// Reads an integer of `ty` from a place (direct load for context and owned memory, probe
    /// read otherwise) and normalises it.
    pub fn read_place_int(&mut self, place: Val, ty: &Type) -> VReg {
        let size = ty.size().clamp(1, 8);
        let width = Width::from_bytes(size);
        let raw = match place {
            Val::Place {
                base,
                offset,
                space: space @ (PlaceSpace::Ctx | PlaceSpace::Own),
            } => {
                let v = self.load(base, offset, width);
                if space == PlaceSpace::Ctx
                    && self.layout == crate::context::ContextLayout::Iterator
                {
                    // An iterator field that reads 0 (the NULL object of the iteration's
                    // last call) ends this run, as in bpftrace; the verifier needs the
                    // check before a nullable object pointer is used.
                    let exit = self.exit_label;
                    self.branch(Cond::Eq, v, Operand::Imm(0), exit);
                }
                v
            }
            Val::Place { .. } => {
                let tmp = self.alloc(8);
                self.store(tmp, 0, Operand::Imm(0), Width::W64);
                self.read_place_into(place, tmp, 0, size);
                self.load(tmp, 0, width)
            }
            Val::Int(r) => return r,
            Val::Mem { ptr, .. } => self.load(ptr, 0, width),
            Val::None => return self.imm(0),
        };
        self.normalize(raw, ty)
    }

    /// Turns any value of type `ty` into a register (integers) or owned memory (everything else).
    pub fn materialize(&mut self, v: Val, ty: &Type) -> Val {
        match v {
            Val::Place { .. } if is_scalar(ty) => Val::Int(self.read_place_int(v, ty)),
            Val::Place { .. } => {
                let size = ty.size();
                let dst = self.alloc(size);
                self.read_place_into(v, dst, 0, size);
                Val::Mem { ptr: dst, size }
            }
            other => other,
        }
    }

    /// The value as an integer register (materialising places).
    pub fn int(&mut self, v: Val, ty: &Type) -> VReg {
        match self.materialize(v, ty) {
            Val::Int(r) => r,
            Val::Mem { ptr, .. } => ptr,
            Val::None | Val::Place { .. } => self.imm(0),
        }
    }

    /// Writes a value of type `ty` into owned memory at `dst + off` using `size` bytes
    /// (integers are truncated to `size`, memory values are copied and zero-padded).
    pub fn write_val(&mut self, v: Val, ty: &Type, dst: VReg, off: i32, size: u32) {
        // Memory read from elsewhere (a context field's array, a struct behind a pointer)
        // goes straight to its destination, not through a buffer of its own.
        if matches!(v, Val::Place { .. }) && !is_scalar(ty) {
            let n = ty.size().min(size);
            self.read_place_into(v, dst, off, n);
            if size > n {
                self.zero_bytes(dst, off + n as i32, size - n);
            }
            return;
        }
        match self.materialize(v, ty) {
            Val::Int(r) => {
                self.store(
                    dst,
                    off,
                    Operand::Reg(r),
                    Width::from_bytes(size.clamp(1, 8)),
                );
            }
            Val::Mem { ptr, size: have } => {
                let n = have.min(size);
                self.copy(dst, off, ptr, 0, n);
                if size > n {
                    self.zero_bytes(dst, off + n as i32, size - n);
                }
            }
            Val::None | Val::Place { .. } => self.zero_bytes(dst, off, size),
        }
    }

    /// Zeroes an arbitrary byte range (any alignment): stores for a few words, one call for
    /// more (the rest of a 1024-byte string variable a short literal was assigned to).
    pub fn zero_bytes(&mut self, ptr: VReg, offset: i32, size: u32) {
        if size >= ZERO_BY_CALL {
            self.zero_by_call(ptr, offset, size);
            return;
        }
        let mut off = 0u32;
        while off < size {
            let w = chunk_aligned(offset + off as i32, size - off);
            self.store(ptr, offset + off as i32, Operand::Imm(0), w);
            off += w.bytes();
        }
    }

    /// Emits a conditional branch.
    pub fn branch(&mut self, cond: Cond, lhs: VReg, rhs: Operand, target: Label) {
        self.emit(Inst::Branch {
            cond,
            lhs,
            rhs,
            target,
        });
    }

    /// A register holding 1 when `lhs cond rhs` holds, else 0.
    pub fn flag(&mut self, cond: Cond, lhs: VReg, rhs: Operand) -> VReg {
        let out = self.imm(1);
        let done = self.label();
        self.branch(cond, lhs, rhs, done);
        self.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(0),
        });
        self.place_label(done);
        out
    }

    /// Places a label that jumps from before it reach (a loop's head, which later jumps
    /// reach, is placed with [`LowerCx::place_loop_head`]).
    ///
    /// Values remembered for reuse stay valid here only if they were computed before every
    /// jump to the label: those computed after the first jump (on one path only) are
    /// forgotten. A label no jump has reached is reached by falling through only.
    pub fn place_label(&mut self, l: Label) {
        if let Some(&first) = self.first_jump.get(&l) {
            self.reuse.retain(|r| r.2 < first);
        }
        self.forward_labels.insert(l);
        self.emit(Inst::Label(l));
    }

    /// Places the head of a loop: the jumps that reach it come later, from the loop's end,
    /// so no remembered value is known to be valid here.
    pub fn place_loop_head(&mut self, l: Label) {
        self.reuse.clear();
        self.emit(Inst::Label(l));
    }

    /// Registers an event kind and returns its id.
    pub fn event_id(&mut self, spec: EventSpec) -> u64 {
        if let Some(i) = self.events.iter().position(|e| *e == spec) {
            return i as u64;
        }
        self.events.push(spec);
        self.events.len() as u64 - 1
    }

    /// Increments one of the error counters (lost events, map full).
    pub fn count_error(&mut self, which: crate::program::Counter) {
        let map = self.maps.counters_map();
        let p = self.vreg();
        self.emit(Inst::MapValue { dst: p, map });
        let one = self.imm(1);
        self.emit(Inst::AtomicAdd {
            base: p,
            offset: crate::program::Counter::offset(which),
            src: one,
        });
    }

    /// A map handle register.
    pub fn map_handle(&mut self, map: MapRef) -> VReg {
        let h = self.vreg();
        self.emit(Inst::MapHandle { dst: h, map });
        h
    }

    /// An internal-error diagnostic for constructs this backend cannot lower.
    pub fn unsupported(&self, span: Span, what: &str) -> Diagnostic {
        Diagnostic::error("sonde::codegen::unsupported", span, format!("{what} is not supported by the BPF backend yet"))
            .with_label("not supported here")
            .with_help("the checker accepts this, but code generation for it is not written yet; rewrite this part of the script (docs/reference.md lists the language)")
    }
}

/// True for types held in a register.
pub fn is_scalar(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Int { .. }
            | Type::Bool
            | Type::Enum { .. }
            | Type::Ptr { .. }
            | Type::Symbol { kernel: true }
            | Type::Stack { .. }
            | Type::Void
            | Type::Agg(_)
    ) || matches!(ty, Type::Username | Type::CgroupPath { .. })
}

/// The widest access for the remaining `n` bytes of an 8-aligned copy.
fn chunk(n: u32) -> Width {
    match n {
        8.. => Width::W64,
        4..=7 => Width::W32,
        2..=3 => Width::W16,
        _ => Width::W8,
    }
}

/// The widest naturally aligned access at `offset` for the remaining `n` bytes.
pub(crate) fn chunk_aligned(offset: i32, n: u32) -> Width {
    let align = offset.trailing_zeros().min(3);
    let w = chunk(n);
    match (align, w) {
        (0, _) => Width::W8,
        (1, Width::W64 | Width::W32) => Width::W16,
        (2, Width::W64) => Width::W32,
        _ => w,
    }
}
