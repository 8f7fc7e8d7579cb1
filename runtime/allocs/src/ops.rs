//! The calls of an allocation recording, completed (entry and return seen) and in the order
//! they took effect.

/// A function of the malloc family, or a memory system call recorded for context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Call {
    /// `malloc(size)`.
    Malloc = 1,
    /// `calloc(nmemb, size)` (`size` of an [`Op`] is their product).
    Calloc = 2,
    /// `realloc(ptr, size)`.
    Realloc = 3,
    /// `free(ptr)`.
    Free = 4,
    /// `posix_memalign(&p, align, size)`.
    PosixMemalign = 5,
    /// `aligned_alloc(align, size)`.
    AlignedAlloc = 6,
    /// `memalign(align, size)`.
    Memalign = 7,
    /// `valloc(size)`.
    Valloc = 8,
    /// `mmap(addr, length, ...)` made by the program (context: not replayed).
    Mmap = 9,
    /// `munmap(addr, length)` (context: not replayed).
    Munmap = 10,
    /// `brk(addr)` (context: not replayed).
    Brk = 11,
}

impl Call {
    /// Every call, in code order.
    pub const ALL: [Call; 11] = [
        Call::Malloc,
        Call::Calloc,
        Call::Realloc,
        Call::Free,
        Call::PosixMemalign,
        Call::AlignedAlloc,
        Call::Memalign,
        Call::Valloc,
        Call::Mmap,
        Call::Munmap,
        Call::Brk,
    ];

    /// The code a recording stores for this call.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The call a recording's code stands for.
    pub fn from_code(code: u64) -> Option<Call> {
        Call::ALL.into_iter().find(|c| u64::from(c.code()) == code)
    }

    /// The function's name, as C spells it.
    pub fn name(self) -> &'static str {
        match self {
            Call::Malloc => "malloc",
            Call::Calloc => "calloc",
            Call::Realloc => "realloc",
            Call::Free => "free",
            Call::PosixMemalign => "posix_memalign",
            Call::AlignedAlloc => "aligned_alloc",
            Call::Memalign => "memalign",
            Call::Valloc => "valloc",
            Call::Mmap => "mmap",
            Call::Munmap => "munmap",
            Call::Brk => "brk",
        }
    }

    /// Whether a replay makes this call (the system calls are the recorded program's
    /// context: an allocator makes its own).
    pub fn replayed(self) -> bool {
        !matches!(self, Call::Mmap | Call::Munmap | Call::Brk)
    }
}

/// One recorded call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Which function.
    pub call: Call,
    /// The thread that made it (its kernel tid).
    pub tid: u32,
    /// When it took effect, in nanoseconds of the monotonic clock (`nsecs`): on return for
    /// a call that gives a block (its block exists from then), on entry for `free` and
    /// `munmap` (their block may be handed out again before they return).
    pub time_ns: u64,
    /// Bytes asked for: `malloc`'s, `realloc`'s and the memalign family's size, `calloc`'s
    /// `nmemb * size`; `mmap`'s and `munmap`'s length; `brk`'s new break. 0 for `free`.
    pub size: u64,
    /// The alignment asked of `posix_memalign`, `aligned_alloc` and `memalign` (`valloc`:
    /// the page size); 0 otherwise.
    pub align: u64,
    /// The block handed in: `free`'s and `realloc`'s argument, `munmap`'s address; 0
    /// otherwise.
    pub ptr: u64,
    /// The block handed out: the pointer returned (for `posix_memalign`, the one stored,
    /// when it returned 0); 0 when the call failed or gives no block (`free`).
    pub result: u64,
    /// The caller's user stack, as an id of the recording (equal stacks, equal ids); 0 when
    /// unknown.
    pub stack: u64,
}

/// An allocation recording read back: its calls in the order they took effect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// The recorded calls, sorted by [`Op::time_ns`] (ties in the order they were recorded).
    pub ops: Vec<Op>,
    /// The process recorded (its pid), when the recording says.
    pub pid: Option<u32>,
    /// What was recorded, as the recording names it (the command of `-c`, or `pid N`).
    pub target: String,
    /// Calls whose entry was seen without their return (in flight when the recording
    /// stopped): not in `ops`.
    pub unfinished: u64,
    /// Returns seen without their entry (calls in flight when the recording started): not in
    /// `ops`.
    pub unstarted: u64,
    /// Events the kernel could not hand over (ring buffer full): a recording with any is
    /// incomplete, and a replay says so.
    pub lost_events: u64,
}
