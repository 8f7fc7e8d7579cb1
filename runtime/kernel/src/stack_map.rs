//! Reading stacks from the stack-trace maps programs store them in (`kstack`, `ustack`):
//! the addresses (or build-id frames) of one stack id, decoded as [`sonde_system::symbols::stack`]
//! says.

use std::io;

use sonde_compiler::value::Frame;

use crate::maps::RawMap;
use sonde_system::symbols::{decode_build_id_stack, decode_stack};

/// The frames (innermost first) of stack `id` in a `BPF_MAP_TYPE_STACK_TRACE` map.
///
/// A negative id (as `i32`) is the error `bpf_get_stackid` returned, most often `-EFAULT`
/// for a kernel stack sampled in user mode: there is no stack and the result is empty, as
/// bpftrace prints it. An id absent from the map is a `NotFound` error.
pub fn read_stack(map: &RawMap, id: u32) -> io::Result<Vec<u64>> {
    if (id as i32) < 0 {
        return Ok(Vec::new());
    }
    match map.lookup(&id.to_le_bytes())? {
        Some(value) => Ok(decode_stack(&value)),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no stack with id {id} in the stack map"),
        )),
    }
}

/// The frames of build-id stack `id` (without its [`BUILD_ID_STACK`](sonde_system::symbols::BUILD_ID_STACK) mark) in a build-id
/// stack-trace map; see [`decode_build_id_stack`] and [`read_stack`].
pub fn read_build_id_stack(map: &RawMap, id: u32, limit: usize) -> io::Result<Vec<Frame>> {
    if (id as i32) < 0 {
        return Ok(Vec::new());
    }
    match map.lookup(&id.to_le_bytes())? {
        Some(value) => Ok(decode_build_id_stack(&value, limit)),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no stack with id {id} in the build-id stack map"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{FromRawFd, OwnedFd};

    /// Creates an empty `BPF_MAP_TYPE_STACK_TRACE` map of `frames`-deep stacks.
    fn stack_map(frames: u32) -> RawMap {
        #[repr(C)]
        struct MapCreate {
            map_type: u32,
            key_size: u32,
            value_size: u32,
            max_entries: u32,
            map_flags: u32,
        }
        let attr = MapCreate {
            map_type: 7,
            key_size: 4,
            value_size: 8 * frames,
            max_entries: 64,
            map_flags: 0,
        };
        // SAFETY: BPF_MAP_CREATE (0) reads `size` bytes of a valid, initialised attribute.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                0,
                &attr as *const MapCreate,
                size_of::<MapCreate>(),
            )
        };
        assert!(
            fd >= 0,
            "BPF_MAP_CREATE: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: the syscall returned a new file descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        RawMap::new(fd, 4, 8 * frames, false).unwrap()
    }

    #[test]
    fn read_stack_on_a_real_stack_map() {
        let map = stack_map(127);
        // bpf_get_stackid's -EFAULT (no kernel stack in user mode) is an empty stack.
        assert_eq!(
            read_stack(&map, (-libc::EFAULT) as u32).unwrap(),
            Vec::<u64>::new()
        );
        let err = read_stack(&map, 3).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
