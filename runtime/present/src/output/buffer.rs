//! Output buffering (`-B MODE`, bpftrace's option): how printed messages reach standard
//! output or the `-o` file.
//!
//! Without `-B`, sonde writes its output after each batch of events (and before it waits for
//! more), so a burst of lines costs one write and nothing printed waits behind an idle loop.
//! `-B line` writes each line as it ends, `-B none` each message at once (several writes per
//! message, as an unbuffered stdio stream would), `-B full` only when the buffer is full and
//! at exit.

use std::io::{self, BufWriter, LineWriter, Write};

/// Bytes the buffered modes keep before writing.
pub const BUFFER_SIZE: usize = 1 << 16;

/// An output buffering mode (`-B`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffering {
    /// Written at each newline (bpftrace's default).
    Line,
    /// Written when the buffer is full, and at exit.
    Full,
    /// Written at once.
    None,
}

impl Buffering {
    /// The mode named `name` (`line`, `full`, `none`), as `-B` spells it.
    pub fn from_name(name: &str) -> Option<Buffering> {
        match name {
            "line" => Some(Buffering::Line),
            "full" => Some(Buffering::Full),
            "none" => Some(Buffering::None),
            _ => None,
        }
    }

    /// The name of the mode, as `-B` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Buffering::Line => "line",
            Buffering::Full => "full",
            Buffering::None => "none",
        }
    }
}

/// A writer that flushes after every write: nothing stays buffered (`-B none`).
struct Unbuffered<W: Write>(W);

impl<W: Write> Write for Unbuffered<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        self.0.flush()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A writer whose `flush` does nothing until [`FullyBuffered`]'s owner says the run ended:
/// the run loop's flushes after each batch are skipped (`-B full`).
struct FullyBuffered<W: Write> {
    inner: BufWriter<W>,
    at_exit: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<W: Write> Write for FullyBuffered<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.at_exit.get() {
            self.inner.flush()
        } else {
            Ok(())
        }
    }
}

/// The writer for `dest` in mode `mode` (`None`: sonde's batch buffering), and the switch that
/// makes a fully buffered writer's `flush` write out its buffer (set it when the run ends).
pub fn writer(
    dest: Box<dyn Write>,
    mode: Option<Buffering>,
) -> (Box<dyn Write>, std::rc::Rc<std::cell::Cell<bool>>) {
    let at_exit = std::rc::Rc::new(std::cell::Cell::new(true));
    let w: Box<dyn Write> = match mode {
        None => Box::new(BufWriter::with_capacity(BUFFER_SIZE, dest)),
        Some(Buffering::Line) => Box::new(LineWriter::new(dest)),
        Some(Buffering::None) => Box::new(Unbuffered(dest)),
        Some(Buffering::Full) => {
            at_exit.set(false);
            Box::new(FullyBuffered {
                inner: BufWriter::with_capacity(BUFFER_SIZE, dest),
                at_exit: at_exit.clone(),
            })
        }
    };
    (w, at_exit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A destination that records each write it receives.
    #[derive(Clone, Default)]
    struct Writes(Rc<RefCell<Vec<Vec<u8>>>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn written(w: &Writes) -> Vec<String> {
        w.0.borrow()
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    #[test]
    fn names() {
        for m in [Buffering::Line, Buffering::Full, Buffering::None] {
            assert_eq!(Buffering::from_name(m.name()), Some(m));
        }
        assert_eq!(Buffering::from_name("block"), None);
    }

    #[test]
    fn line_mode_writes_each_complete_line() {
        let dest = Writes::default();
        let (mut w, _) = writer(Box::new(dest.clone()), Some(Buffering::Line));
        w.write_all(b"a").unwrap();
        assert!(written(&dest).is_empty());
        w.write_all(b"b\nc").unwrap();
        assert_eq!(written(&dest), ["ab\n"]);
        w.flush().unwrap();
        assert_eq!(written(&dest), ["ab\n", "c"]);
    }

    #[test]
    fn none_mode_writes_at_once() {
        let dest = Writes::default();
        let (mut w, _) = writer(Box::new(dest.clone()), Some(Buffering::None));
        w.write_all(b"a").unwrap();
        w.write_all(b"b\n").unwrap();
        assert_eq!(written(&dest), ["a", "b\n"]);
    }

    #[test]
    fn full_mode_ignores_flushes_until_the_end() {
        let dest = Writes::default();
        let (mut w, at_exit) = writer(Box::new(dest.clone()), Some(Buffering::Full));
        w.write_all(b"a\nb\n").unwrap();
        w.flush().unwrap();
        assert!(written(&dest).is_empty());
        at_exit.set(true);
        w.flush().unwrap();
        assert_eq!(written(&dest), ["a\nb\n"]);
    }

    #[test]
    fn default_mode_writes_on_flush() {
        let dest = Writes::default();
        let (mut w, _) = writer(Box::new(dest.clone()), None);
        w.write_all(b"a\n").unwrap();
        w.write_all(b"b\n").unwrap();
        assert!(written(&dest).is_empty());
        w.flush().unwrap();
        assert_eq!(written(&dest), ["a\nb\n"]);
    }
}
