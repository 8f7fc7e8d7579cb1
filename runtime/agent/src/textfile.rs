//! `--metrics-file PATH`: the metrics written to a file every interval, for node_exporter's
//! textfile collector. Each write goes to a temporary file beside it, renamed over it, so a
//! reader never sees half a file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A metrics file and when it is next due.
#[derive(Debug)]
pub struct Textfile {
    path: PathBuf,
    every: Duration,
    next: Instant,
}

impl Textfile {
    /// Writes to `path` every `every` (the first write is due at once). The directory must
    /// exist: it is checked here, before anything is traced.
    pub fn new(path: &Path, every: Duration) -> Result<Textfile, String> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(format!("{}: no such directory", dir.display()));
        }
        if path.is_dir() {
            return Err(format!("{}: is a directory", path.display()));
        }
        Ok(Textfile {
            path: path.to_path_buf(),
            every,
            next: Instant::now(),
        })
    }

    /// True when a write is due.
    pub fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Writes `body` to the file (a temporary file renamed over it).
    pub fn write(&mut self, body: &[u8]) -> Result<(), String> {
        self.next = Instant::now() + self.every;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".{}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(body).and_then(|_| f.sync_all()))
            .and_then(|_| std::fs::rename(&tmp, &self.path));
        written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", self.path.display())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_whole_and_refused_where_it_cannot_go() {
        let dir = std::env::temp_dir().join(format!("sonde-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sonde.prom");
        let mut t = Textfile::new(&path, Duration::from_secs(60)).unwrap();
        assert!(t.due());
        t.write(b"a 1\n").unwrap();
        assert!(!t.due());
        assert_eq!(std::fs::read(&path).unwrap(), b"a 1\n");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        assert!(Textfile::new(&dir.join("no/such/x.prom"), Duration::from_secs(1)).is_err());
        assert!(Textfile::new(&dir, Duration::from_secs(1)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
