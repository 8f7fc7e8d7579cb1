//! The machine's CPUs as `/sys/devices/system/cpu` lists them: the possible ones (the slots
//! of a per-CPU map value) and the online ones (where perf events are opened).

use std::fs;
use std::io;
use std::sync::OnceLock;

/// Parses a CPU list such as `0-3,5,7-8` into the CPU ids it names.
fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn read_cpu_list(path: &str) -> io::Result<Vec<u32>> {
    let text = fs::read_to_string(path)?;
    parse_cpu_list(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse {path}: {text:?}"),
        )
    })
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`): the number of slots of
/// a per-CPU map value. Read once per process.
pub fn possible_cpus() -> io::Result<usize> {
    static POSSIBLE: OnceLock<Result<usize, String>> = OnceLock::new();
    POSSIBLE
        .get_or_init(|| {
            read_cpu_list("/sys/devices/system/cpu/possible")
                .map(|cpus| cpus.iter().max().map_or(1, |m| *m as usize + 1))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(io::Error::other)
}

/// The online CPUs (`/sys/devices/system/cpu/online`), where perf events are opened.
pub fn online_cpus() -> io::Result<Vec<u32>> {
    read_cpu_list("/sys/devices/system/cpu/online")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("x"), None);
    }
}
