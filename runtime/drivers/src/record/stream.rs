//! Reading a recording entry by entry from any reader (a file, or bytes in memory), holding
//! one entry at a time: `replay` goes through a recording of any size in bounded memory.

use super::codec::Cursor;
use super::reader::{PREAMBLE, read_entry, read_header};
use super::{Cut, Entry, Header, RecordError};
use std::io::Read;

/// The entries of a recording, read one at a time (see [`EntryStream::open`]).
#[derive(Debug)]
pub struct EntryStream<R: Read> {
    input: R,
    header: Header,
    /// The file offset of the next entry.
    offset: u64,
    /// The file's length.
    len: u64,
    /// Whole entries read (those of tags this version knows).
    entries: u64,
    /// Where the file was cut, once found.
    cut: Option<Cut>,
    /// True once the `End` entry, an error or the cut was met.
    done: bool,
}

fn io_error(offset: u64, e: &std::io::Error) -> RecordError {
    RecordError {
        offset,
        message: format!("cannot read the file: {e}"),
    }
}

impl<R: Read> EntryStream<R> {
    /// Reads the magic, version and header of a recording of `len` bytes from `input`.
    pub fn open(mut input: R, len: u64) -> Result<Self, RecordError> {
        let mut head = vec![0; len.min(PREAMBLE) as usize];
        input.read_exact(&mut head).map_err(|e| io_error(0, &e))?;
        if head.len() as u64 == PREAMBLE {
            let body = u64::from_le_bytes(head[12..20].try_into().unwrap_or_default());
            let left = len - PREAMBLE;
            if body > left {
                // Checked first: neither the magic nor the version is wrong.
                super::reader::recording_start(&head)?;
                return Err(RecordError {
                    offset: PREAMBLE,
                    message: format!(
                        "the header needs {body} bytes but only {left} are left (the file is \
                         truncated or corrupt)"
                    ),
                });
            }
            head.resize((PREAMBLE + body) as usize, 0);
            input
                .read_exact(&mut head[PREAMBLE as usize..])
                .map_err(|e| io_error(PREAMBLE, &e))?;
        }
        let mut c = Cursor::new(&head, 0);
        let header = read_header(&mut c)?;
        Ok(EntryStream {
            input,
            header,
            offset: head.len() as u64,
            len,
            entries: 0,
            cut: None,
            done: false,
        })
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Where the file was cut before its `End` entry, once the stream has reached it.
    pub fn cut(&self) -> Option<Cut> {
        self.cut
    }

    /// The next entry: `None` after `End` or where the file was cut ([`EntryStream::cut`]
    /// says which), an error where the file is corrupt.
    fn read_next(&mut self) -> Result<Option<Entry>, RecordError> {
        loop {
            let at = self.offset;
            let left = self.len - at;
            let mut head = [0u8; 9];
            if left < 9 {
                return self.stop_at(at);
            }
            self.input
                .read_exact(&mut head)
                .map_err(|e| io_error(at, &e))?;
            let body_len = u64::from_le_bytes(head[1..].try_into().unwrap_or_default());
            if body_len > left - 9 {
                return self.stop_at(at);
            }
            if head[0] == 0 {
                return Err(RecordError {
                    offset: at,
                    message: "entry tag 0 is not valid (the file is corrupt)".into(),
                });
            }
            let mut body = vec![0; body_len as usize];
            self.input
                .read_exact(&mut body)
                .map_err(|e| io_error(at + 9, &e))?;
            self.offset = at + 9 + body_len;
            let mut c = Cursor::new(&body, at + 9);
            let Some(entry) = read_entry(head[0], &mut c, &self.header)? else {
                continue;
            };
            self.entries += 1;
            if matches!(entry, Entry::End { .. }) {
                self.done = true;
                let rest = self.len - self.offset;
                if rest > 0 {
                    return Err(RecordError {
                        offset: self.offset,
                        message: format!("{rest} bytes follow the End entry (the file is corrupt)"),
                    });
                }
            }
            return Ok(Some(entry));
        }
    }

    /// The file ends at `at` without an `End` entry: it was cut there.
    fn stop_at(&mut self, at: u64) -> Result<Option<Entry>, RecordError> {
        self.cut = Some(Cut {
            offset: at,
            entries: self.entries,
        });
        Ok(None)
    }
}

impl<R: Read> Iterator for EntryStream<R> {
    type Item = Result<Entry, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_next() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
