//! The values of a tool's flags and arguments, checked and converted by the kind their
//! header's placeholder names: `-p PID` takes a process id the kernel can have, `-i
//! INTERVAL` a positive number of seconds, `-e ERRNO` an errno number or name (`ENOENT`,
//! passed to the script as its number), `-c CGROUP` the path of a cgroup v2 directory (passed
//! as its absolute path, which the tools hand to `in_cgroup()`), `-d DISK` a disk /sys/block lists,
//! `-s PATH` an existing file (a binary or library whose functions a tool probes), `-L
//! PORTS` one to four comma-separated ports (passed as one integer, [`pack_ports`]).
//! `-x FILTER` ltrace's `SYMBOL@LIBRARY` (passed as the `LIBRARY:SYMBOL` of a uprobe),
//! `-F PROTOTYPES` a file of ltrace's prototypes (passed as one line: `super::prototypes`).
//! A `pattern` argument is `BINARY:FUNCTION` with bcc's library names (`c:read` is libc's
//! `read`), and with the flag `--regexp` its FUNCTION a regular expression ([`expand_regexp`]).
//! Placeholders of other names (and
//! every value of a string flag) are left as given.

use super::ToolDoc;

/// The largest process id the kernel hands out (PID_MAX_LIMIT on 64-bit machines).
const PID_MAX: i64 = 4 * 1024 * 1024;

/// What a placeholder says of its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A process or thread id: 1 to [`PID_MAX`].
    Pid,
    /// A count or a number of seconds: 1 or more.
    Positive,
    /// An errno: a positive number or a name such as `ENOENT`.
    Errno,
    /// A cgroup v2 directory, absolute or under /sys/fs/cgroup.
    Cgroup,
    /// A block device's name, as /sys/block lists it (`vda`).
    Disk,
    /// An existing file (a binary or library).
    File,
    /// Up to [`MAX_PORTS`] comma-separated TCP or UDP ports.
    Ports,
    /// ltrace's filter `SYMBOL@LIBRARY` (or `@LIBRARY`), or sonde's `LIBRARY:SYMBOL`.
    Filter,
    /// A file of ltrace's prototypes.
    Prototypes,
    /// A user function, `BINARY:FUNCTION`.
    Function,
}

/// How many ports a `PORTS` value lists at most.
pub const MAX_PORTS: usize = 4;

/// The kind of value a placeholder (`PID`, `INTERVAL`) or positional argument name
/// (`interval`) declares, if any.
fn kind(placeholder: &str) -> Option<Kind> {
    match placeholder.to_ascii_uppercase().as_str() {
        "PID" | "TID" | "PPID" => Some(Kind::Pid),
        "INTERVAL" | "COUNT" | "DURATION" | "TOP" | "SECONDS" | "SAMPLE_RATE" => {
            Some(Kind::Positive)
        }
        "ERRNO" => Some(Kind::Errno),
        "CGROUP" | "CG" => Some(Kind::Cgroup),
        "DISK" => Some(Kind::Disk),
        "PATH" => Some(Kind::File),
        "PORTS" => Some(Kind::Ports),
        "FILTER" => Some(Kind::Filter),
        "PROTOTYPES" => Some(Kind::Prototypes),
        "PATTERN" => Some(Kind::Function),
        _ => None,
    }
}

/// Checks the values of `named` against their placeholders' kinds and converts errno names
/// and cgroup paths to numbers. Errors are usage messages (without the usage text).
pub fn convert_values(doc: &ToolDoc, named: &mut [(String, String)]) -> Result<(), String> {
    for (name, value) in named.iter_mut() {
        let placeholder = doc
            .flags
            .iter()
            .find(|f| &f.long == name)
            .and_then(|f| f.value.clone())
            .or_else(|| {
                doc.arguments
                    .iter()
                    .find(|a| &a.name == name)
                    .map(|a| a.name.clone())
            });
        let Some(kind) = placeholder.as_deref().and_then(kind) else {
            continue;
        };
        *value = convert(kind, value).map_err(|e| format!("bad value for --{name}: {e}"))?;
    }
    Ok(())
}

/// `value` checked (and converted) as a `kind`.
fn convert(kind: Kind, value: &str) -> Result<String, String> {
    let number = || {
        value
            .parse::<i64>()
            .map_err(|_| format!("`{value}` is not an integer"))
    };
    match kind {
        Kind::Pid => match number()? {
            n @ 1..=PID_MAX => Ok(n.to_string()),
            _ => Err(format!("`{value}` is not a process id (1 to {PID_MAX})")),
        },
        Kind::Positive => match number()? {
            n @ 1..=0x7fff_ffff => Ok(n.to_string()),
            _ => Err(format!("`{value}` must be a positive integer")),
        },
        Kind::Errno => {
            let n = match value.parse::<i64>() {
                Ok(n) => Some(n),
                Err(_) if value.starts_with('E') => {
                    sonde_lang::sema::constants::builtin_value(value)
                }
                Err(_) => None,
            };
            match n {
                Some(n @ 1..=4095) => Ok(n.to_string()),
                _ => Err(format!(
                    "`{value}` is not an errno (a number from 1 to 4095 or a name such as ENOENT)"
                )),
            }
        }
        Kind::Cgroup => cgroup_dir(value),
        Kind::Filter => filter(value),
        Kind::Prototypes => super::prototypes::read(value),
        Kind::Function => Ok(function(value)),
        Kind::Disk => match !value.is_empty()
            && !value.contains('/')
            && std::path::Path::new("/sys/block").join(value).exists()
        {
            true => Ok(value.to_string()),
            false => Err(format!("`{value}` is not a disk (/sys/block lists them)")),
        },
        Kind::Ports => pack_ports(value).map(|n| n.to_string()),
        Kind::File => match std::fs::metadata(value) {
            Ok(m) if m.is_file() => Ok(value.to_string()),
            _ => Err(format!("`{value}` is not a file")),
        },
    }
}

/// `BINARY:FUNCTION` with bcc's library names: a BINARY that is a bare name (no `/`, no
/// `lib` prefix) naming a library `libBINARY` is that library, as bcc's `BPF.find_library`
/// finds it before a program of that name (`c:read` is `libc:read`).
fn function(value: &str) -> String {
    use sonde_system::kernel_info::binaries::resolve_binary;
    match value.split_once(':') {
        Some((bin, func))
            if !bin.is_empty()
                && !bin.contains(['/', '.'])
                && !bin.starts_with("lib")
                && resolve_binary(&format!("lib{bin}")).is_some() =>
        {
            format!("lib{bin}:{func}")
        }
        _ => value.to_string(),
    }
}

/// With the flag `--regexp` given, each `pattern` value's FUNCTION part is a regular
/// expression (bcc's funclatency `-r`: matched from the start of the name) and becomes one
/// `BINARY:NAME` value per function of the binary it matches, in name order (an attach
/// point `uprobe:$pattern` is then one per function). Errors are usage messages.
pub fn expand_regexp(named: &mut Vec<(String, String)>) -> Result<(), String> {
    use sonde_system::kernel_info::binaries::resolve_binary;
    if !named.iter().any(|(k, _)| k == "regexp") {
        return Ok(());
    }
    let mut out = Vec::with_capacity(named.len());
    for (k, v) in named.drain(..) {
        if k != "pattern" {
            out.push((k, v));
            continue;
        }
        let Some((bin, pattern)) = v.split_once(':') else {
            return Err(format!("`{v}` is not BINARY:REGEXP"));
        };
        let re = regex::Regex::new(&format!("^(?:{pattern})"))
            .map_err(|e| format!("bad regular expression `{pattern}`: {e}"))?;
        let path = resolve_binary(bin).ok_or_else(|| format!("cannot find binary `{bin}`"))?;
        let mut names = sonde_system::uprobe_functions::function_names(&path)?;
        names.retain(|n| re.is_match(n));
        names.sort();
        names.dedup();
        if names.is_empty() {
            return Err(format!("no function of {path} matches `{pattern}`"));
        }
        out.extend(names.into_iter().map(|n| (k.clone(), format!("{bin}:{n}"))));
    }
    *named = out;
    Ok(())
}

/// The ports of a comma-separated list (`80,443`), one to [`MAX_PORTS`] of 1 to 65535,
/// packed into one integer of four 16-bit slots, the first port in the lowest; slots
/// beyond the list repeat the first port, so that a script tests a port `p` against the
/// value `v` with `p == (v & 0xffff) || p == (v >> 16 & 0xffff) || ...`.
fn pack_ports(value: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "`{value}` is not a list of up to {MAX_PORTS} ports (1 to 65535) separated by commas"
        )
    };
    let ports: Vec<u64> = value
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=65535).contains(n))
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if ports.len() > MAX_PORTS {
        return Err(bad());
    }
    let packed = (0..MAX_PORTS).fold(0u64, |acc, i| {
        acc | ports.get(i).unwrap_or(&ports[0]) << (16 * i)
    });
    Ok(packed as i64)
}

/// ltrace's filter `SYMBOL@LIBRARY` as the `LIBRARY:SYMBOL` of a uprobe (`@LIBRARY`: every
/// symbol); sonde's `LIBRARY:SYMBOL` is kept. ltrace's rule chains (`+`, `-`), regular
/// expressions and `MAIN` are refused, as is a symbol without its library.
fn filter(value: &str) -> Result<String, String> {
    let refuse = |why: &str| Err(format!("`{value}` {why}"));
    if value.starts_with(['+', '-']) {
        return refuse("is not SYMBOL@LIBRARY (rule chains are not supported)");
    }
    match value.split_once('@') {
        Some((_, "")) => refuse("names no library after `@`"),
        Some((_, "MAIN")) => refuse("names MAIN: give the program's path as the library"),
        Some((sym, lib)) if !sym.contains(['@', ':']) && !lib.contains(['@', ':']) => {
            let sym = if sym.is_empty() { "*" } else { sym };
            Ok(format!("{lib}:{sym}"))
        }
        Some(_) => refuse("is not SYMBOL@LIBRARY"),
        None if value.split(':').filter(|p| !p.is_empty()).count() == 2 => Ok(value.to_string()),
        None => refuse("names no library: write SYMBOL@LIBRARY (`strlen@libc.so.6`)"),
    }
}

/// The cgroup v2 directory at `path` (absolute, or relative to /sys/fs/cgroup) as an absolute
/// path without links, which the tools' `in_cgroup()` resolves when the program is built.
fn cgroup_dir(path: &str) -> Result<String, String> {
    let full = match path.starts_with('/') {
        true => std::path::PathBuf::from(path),
        false => std::path::Path::new("/sys/fs/cgroup").join(path),
    };
    let is_cgroup = full.join("cgroup.procs").exists() && full.join("cgroup.controllers").exists();
    match std::fs::canonicalize(&full) {
        Ok(dir) if dir.is_dir() && is_cgroup => dir
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| format!("`{path}` is not valid UTF-8")),
        _ => Err(format!(
            "`{path}` is not a cgroup v2 directory (such as /sys/fs/cgroup/system.slice)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(header: &str, named: &[(&str, &str)]) -> Result<Vec<String>, String> {
        let doc = super::super::parse_header(header);
        let mut named: Vec<(String, String)> = named
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        convert_values(&doc, &mut named)?;
        Ok(named.into_iter().map(|(_, v)| v).collect())
    }

    const HEADER: &str = "\
// demo - shows a demo
// OPTIONS:
//   -p PID, --pid=PID              Only this process
//   -i INTERVAL, --interval=INTERVAL  Seconds
//   -e ERRNO, --errno=ERRNO        Only this error
//   -c CG, --cgroup=CG             Only this cgroup
//   -d DISK, --disk=DISK           Only this disk
//   -s PATH, --shared=PATH         This library
//   -L PORTS, --localport=PORTS    These ports
//   --name=NAME                    Anything
// ARGUMENTS:
//   [count]  How many
";

    #[test]
    fn values_out_of_their_kinds_range_are_usage_errors() {
        for (k, v) in [
            ("pid", "99999999999"),
            ("pid", "0"),
            ("pid", "-5"),
            ("interval", "0"),
            ("interval", "-5"),
            ("count", "0"),
            ("errno", "ENOTANERRNO"),
            ("errno", "0"),
            ("cgroup", "/nonexistent/cgroup"),
            ("cgroup", "/tmp"),
            ("disk", "nodisk0"),
            ("disk", "../vda"),
            ("shared", "/nonexistent/libreadline.so"),
            ("shared", "/tmp"),
            ("localport", "0"),
            ("localport", "80,"),
            ("localport", "65536"),
            ("localport", "1,2,3,4,5"),
        ] {
            let err = run(HEADER, &[(k, v)]).unwrap_err();
            assert!(
                err.starts_with(&format!("bad value for --{k}: `{v}`")),
                "{err}"
            );
        }
    }

    #[test]
    fn ltrace_filters_become_uprobe_targets() {
        let header = "// d - x\n// OPTIONS:\n//   -x FILTER, --filter=FILTER  What\n";
        for (given, passed) in [
            ("strlen@libc.so.6", "libc.so.6:strlen"),
            ("tiny_*@/tmp/lib tiny.so", "/tmp/lib tiny.so:tiny_*"),
            ("@libz.so.1", "libz.so.1:*"),
            ("libc:str*", "libc:str*"),
        ] {
            assert_eq!(run(header, &[("filter", given)]), Ok(vec![passed.into()]));
        }
        for bad in ["strlen", "-strlen@libc", "a@", "x@MAIN", "a@b@c", "a:b:c"] {
            let err = run(header, &[("filter", bad)]).unwrap_err();
            assert!(
                err.starts_with(&format!("bad value for --filter: `{bad}`")),
                "{err}"
            );
        }
    }

    #[test]
    fn values_in_range_pass_and_names_become_numbers() {
        assert_eq!(
            run(
                HEADER,
                &[
                    ("pid", "4194304"),
                    ("interval", "5"),
                    ("errno", "ENOENT"),
                    ("errno", "13"),
                    ("name", "-0"),
                    ("count", "3")
                ]
            ),
            Ok(vec![
                "4194304".into(),
                "5".into(),
                "2".into(),
                "13".into(),
                "-0".into(),
                "3".into()
            ])
        );
        // A cgroup v2 root, by a path with a `..` in it: its absolute path.
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            if std::path::Path::new(root)
                .join("cgroup.controllers")
                .exists()
            {
                assert_eq!(
                    run(
                        HEADER,
                        &[(
                            "cgroup",
                            &format!("{root}/../{}", root.rsplit('/').next().unwrap())
                        )]
                    ),
                    Ok(vec![root.to_string()])
                );
            }
        }
    }

    #[test]
    fn ports_pack_into_four_slots() {
        assert_eq!(
            run(HEADER, &[("localport", "80")]),
            Ok(vec![(80i64 * 0x0001_0001_0001_0001).to_string()])
        );
        let packed: i64 = 80 | 443 << 16 | 8080 << 32 | 80 << 48;
        assert_eq!(
            run(HEADER, &[("localport", "80,443,8080")]),
            Ok(vec![packed.to_string()])
        );
    }
}

#[cfg(test)]
mod function_tests {
    use super::*;

    #[test]
    fn bcc_short_library_names() {
        assert_eq!(function("c:read"), "libc:read");
        assert_eq!(function("libc:read"), "libc:read");
        assert_eq!(function("/bin/sh:main"), "/bin/sh:main");
        assert_eq!(function("no_such_lib_xyz:f"), "no_such_lib_xyz:f");
    }

    #[test]
    fn regexp_expands_to_the_matching_functions() {
        let mut named = vec![
            ("regexp".to_string(), String::new()),
            ("pattern".to_string(), "libc:(getpid|getppid)$".to_string()),
        ];
        expand_regexp(&mut named).unwrap();
        let values: Vec<&str> = named.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["", "libc:getpid", "libc:getppid"]);
        let mut none = vec![
            ("regexp".to_string(), String::new()),
            ("pattern".to_string(), "libc:etpid$".to_string()),
        ];
        assert!(
            expand_regexp(&mut none)
                .unwrap_err()
                .contains("no function of")
        );
        // Without --regexp, nothing changes.
        let mut plain = vec![("pattern".to_string(), "libc:get*".to_string())];
        expand_regexp(&mut plain).unwrap();
        assert_eq!(plain[0].1, "libc:get*");
    }
}
