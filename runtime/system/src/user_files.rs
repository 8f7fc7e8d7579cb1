//! Files the user names (scripts, imports, `--post` reports, recordings, binaries to probe,
//! folded stacks): opened without blocking, refused when they are not regular files, and
//! read with a bound.
//!
//! A directory, a character device (`/dev/zero`), a socket or a named pipe given where a file
//! is read would fail late or read until memory runs out (and opening a FIFO blocks until
//! someone writes to it): each is refused at once with its kind named. The error messages
//! say what the file is, not which file: callers put the path in front.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Most bytes read from a script, an imported file, a `--post` report or a REPL `:load`.
pub const MAX_SCRIPT: u64 = 16 << 20;

/// Whether a pipe is read (with the bound) or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipes {
    /// Named pipes and anonymous ones (`<(...)`) are read, up to the bound.
    Read,
    /// Only regular files are read.
    Refuse,
}

/// What a file is, in words, when it is not a regular file.
fn kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn refused(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file"),
    )
}

/// Refuses `meta` unless it is a regular file (or a pipe, when `pipes` reads them).
fn check(meta: &Metadata, pipes: Pipes) -> io::Result<()> {
    match kind(meta) {
        None => Ok(()),
        Some(_) if pipes == Pipes::Read && meta.file_type().is_fifo() => Ok(()),
        Some(k) => Err(refused(k)),
    }
}

/// Checks that `path` is a regular file, without opening it (so a FIFO does not block).
pub fn check_regular(path: &Path) -> io::Result<()> {
    check(&std::fs::metadata(path)?, Pipes::Refuse)
}

/// Opens `path` for reading: refused unless it is a regular file (or a pipe, as `pipes`
/// says). Never blocks on a FIFO without a writer.
pub fn open(path: &Path, pipes: Pipes) -> io::Result<File> {
    // Looked at before opening, so that a device is not even opened...
    check(&std::fs::metadata(path)?, pipes)?;
    // ... and again after, on what was opened: O_NONBLOCK keeps a FIFO from blocking here.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    check(&file.metadata()?, pipes)?;
    Ok(file)
}

/// Reads all of `path` when it holds at most `limit` bytes: refused when it is not a regular
/// file (or a pipe, as `pipes` says), or is larger (the message states the bound).
pub fn read(path: &Path, limit: u64, pipes: Pipes) -> io::Result<Vec<u8>> {
    let file = open(path, pipes)?;
    let meta = file.metadata()?;
    if meta.file_type().is_fifo() {
        // Reads on a pipe block again, waiting for its writer.
        clear_nonblock(&file)?;
    }
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is larger than the {} sonde reads from such a file",
                size_text(limit)
            ),
        )
    };
    if meta.len() > limit {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Clears `O_NONBLOCK` from an open file.
fn clear_nonblock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The reason an I/O error gives, as C's `strerror` words it (`No such file or directory`,
/// without Rust's ` (os error 2)`).
pub fn os_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

/// `16 MiB`, `1 GiB`, `512 bytes`.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b.is_multiple_of(1 << 30) => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sonde-user-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn kinds_are_refused_by_name() {
        let e = read(Path::new("/dev/zero"), MAX_SCRIPT, Pipes::Read).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a character device, not a regular file"
        );
        let e = read(Path::new("/"), MAX_SCRIPT, Pipes::Read).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
        let fifo = temp("fifo");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Refused without blocking (no writer ever opens it).
        let e = read(&fifo, MAX_SCRIPT, Pipes::Refuse).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a named pipe (FIFO), not a regular file"
        );
        assert!(check_regular(&fifo).is_err());
        let _ = std::fs::remove_file(&fifo);
    }

    #[test]
    fn reads_are_bounded() {
        let f = temp("big");
        std::fs::write(&f, vec![b'x'; 2048]).unwrap();
        assert_eq!(read(&f, 2048, Pipes::Refuse).unwrap().len(), 2048);
        let e = read(&f, 1024, Pipes::Refuse).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is larger than the 1 KiB sonde reads from such a file"
        );
        assert!(check_regular(&f).is_ok());
        let _ = std::fs::remove_file(&f);
        assert_eq!(size_text(16 << 20), "16 MiB");
    }
}
