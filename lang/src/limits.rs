//! The limits on every size a script declares, and the diagnostic that reports one exceeded.
//!
//! A script is short, but the sizes it writes are not: `string[2147483648]`, `char
//! name[2147483647]` or `max_strlen = 4294967295` would have the compiler build (and the
//! kernel or the userspace engine allocate) gigabytes. Each such size is checked, with checked
//! or saturating 64-bit arithmetic, against the limit here, and refused with
//! [`TOO_LARGE`] on its span.
//!
//! - [`MAX_VALUE_SIZE`]: a value the program holds (a string, buffer, array, tuple, or a
//!   struct/union the script defines) is at most 32 KiB. Values too large for the 512-byte
//!   stack live in a per-CPU scratch map, and the kernel refuses per-CPU map values larger
//!   than 32 KiB (`PCPU_MIN_UNIT_SIZE`).
//! - [`MAX_STRLEN`]: `max_strlen` is at most that too.
//! - [`MAX_MAP_KEYS`]: `max_map_keys` is at most 1048576 (the kernel preallocates every
//!   element of a hash map, once per CPU for aggregations).
//! - [`MAX_RINGBUF_PAGES`]: `perf_rb_pages` (the events ring buffer) is at most 1 GiB.
//!
//! Records and arrays that come from the kernel's BTF or tracepoint formats keep their real
//! sizes: they are read through pointers, field by field.

use crate::diag::Diagnostic;
use crate::span::Span;

/// Code of a declared size beyond its limit.
pub const TOO_LARGE: &str = "sonde::sema::too_large";

/// Largest value a script holds, in bytes: strings (`string[N]`, `char[N]`), buffers,
/// arrays (`T[N]`), tuples, and the structs and unions it defines.
pub const MAX_VALUE_SIZE: u32 = 32 * 1024;

/// Largest `max_strlen` (bytes of the strings `str()` reads).
pub const MAX_STRLEN: u32 = MAX_VALUE_SIZE;

/// Largest `max_map_keys` (elements of a keyed map).
pub const MAX_MAP_KEYS: u32 = 1 << 20;

/// Largest `perf_rb_pages` (4 KiB pages of the events ring buffer): 1 GiB of kernel memory.
pub const MAX_RINGBUF_PAGES: u32 = 1 << 18;

/// Code of a `for` range with constant bounds longer than [`MAX_LOOP_ITERATIONS`].
pub const LOOP_TOO_LONG: &str = "sonde::sema::loop_too_long";

/// Most iterations of a `for ($i : a..b)` loop: the kernel's `bpf_loop` limit
/// (`BPF_MAX_LOOPS`, 8388608); it refuses longer loops outright. Constant ranges beyond it are
/// refused when the script is checked; ranges with run-time bounds are cut to it, and the
/// cut is counted and reported.
pub const MAX_LOOP_ITERATIONS: u64 = 1 << 23;

/// A [`TOO_LARGE`] error at `span`: `what` (e.g. "`char[2147483647]`") is `size` bytes (or
/// elements), more than `limit`; `unit` names what is counted ("bytes", "keys").
pub fn too_large(span: Span, what: &str, size: u64, limit: u32, unit: &str) -> Diagnostic {
    Diagnostic::error(TOO_LARGE, span, format!("{what} is too large"))
        .with_label(format!("{size} {unit}, the limit is {limit}"))
        .with_help(format!(
            "{what} may have at most {limit} {unit} (docs/reference.md, Limits)"
        ))
}

/// Checks that a value of `size` bytes (computed with checked or saturating arithmetic) is
/// within [`MAX_VALUE_SIZE`].
pub fn check_value_size(span: Span, what: &str, size: u64) -> Result<(), Diagnostic> {
    if size > u64::from(MAX_VALUE_SIZE) {
        Err(too_large(span, what, size, MAX_VALUE_SIZE, "bytes"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_inclusive() {
        let s = Span::new(0, 1);
        assert!(check_value_size(s, "x", u64::from(MAX_VALUE_SIZE)).is_ok());
        let e = check_value_size(s, "`string[32769]`", 32769).unwrap_err();
        assert_eq!(e.code, TOO_LARGE);
        assert!(e.label.contains("32769 bytes"), "{e:?}");
        assert!(e.help.unwrap().contains("32768"));
    }
}
