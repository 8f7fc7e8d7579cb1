//! A tool's command line (`sonde tool NAME [flags]`), parsed against the flags and
//! arguments its header declares, with sonde's global options; and its values checked
//! against the types the script's `getopt` defaults give them.

use super::{Tool, ToolArg, ToolDoc, usage};

/// The output formats `-f` names.
const FORMATS: [&str; 4] = ["text", "json", "folded", "csv"];

/// The global options given to a tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Globals {
    /// `-o FILE`.
    pub output: Option<String>,
    /// `-f FORMAT`: one of `text`, `json`, `folded`, `csv`.
    pub format: Option<String>,
    /// `-q`.
    pub quiet: bool,
    /// `--post FILE`: a rhai post-processing script.
    pub post: Option<String>,
}

/// What the command line of `sonde tool NAME ...` asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `-h`/`--help`: print the header.
    Help,
    /// `-V`/`--version` (as libbpf-tools' tools take it): print the tool's name and sonde's
    /// version.
    Version,
    /// `--usage`: print the tool's usage lines.
    Usage,
    /// Run the tool with these named parameters.
    Run {
        /// `(getopt name, value)` pairs; a boolean flag has an empty value.
        named: Vec<(String, String)>,
        /// Sonde's own options.
        globals: Globals,
    },
}

/// Whether the tool's header declares the flag `-short` or `--long`.
fn declares(doc: &ToolDoc, short: char, long: &str) -> bool {
    doc.flags
        .iter()
        .any(|f| f.short == Some(short) || f.long == long)
}

/// Parses a tool's command line against its header's flags. Accepts `-x`, bundled boolean
/// short flags (`-Tx`), `-p 123`, `-p123`, `--long`, `--long VALUE`, `--long=VALUE` and the
/// positional arguments of the `ARGUMENTS:` section. Errors are usage messages.
pub fn parse_args(doc: &ToolDoc, args: &[String]) -> Result<Invocation, String> {
    let mut c = Cursor {
        doc,
        args,
        i: 0,
        named: Vec::new(),
        globals: Globals::default(),
    };
    let mut positional = doc.arguments.iter();
    while c.i < args.len() {
        let a = &args[c.i];
        c.i += 1;
        if a == "-h" || a == "--help" {
            return Ok(Invocation::Help);
        }
        // libbpf-tools' options every tool takes, unless a tool's own letters say otherwise.
        if (a == "-V" && !declares(doc, 'V', "version")) || a == "--version" {
            return Ok(Invocation::Version);
        }
        if a == "--usage" {
            return Ok(Invocation::Usage);
        }
        if (a == "-v" && !declares(doc, 'v', "verbose"))
            || (a == "--verbose" && !declares(doc, 'v', "verbose"))
        {
            c.named.push(("verbose".into(), String::new()));
            continue;
        }
        if a == "-f" && args.get(c.i).is_some_and(|v| FORMATS.contains(&v.as_str())) {
            c.globals.format = Some(take(args, &mut c.i, "-f FORMAT")?);
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            long_option(&mut c, long)?;
        } else if a.len() > 1
            && a.starts_with('-')
            && (!a[1..].starts_with(|c: char| c.is_ascii_digit())
                || doc.flags.iter().any(|f| f.short == a[1..].chars().next()))
        {
            short_options(&mut c, a)?;
        } else {
            c.named.push(positional_arg(doc, positional.next(), a)?);
        }
    }
    let Cursor {
        mut named, globals, ..
    } = c;
    if let Some(missing) = positional.find(|a| a.required) {
        return Err(format!("missing argument {}\n{}", missing.name, usage(doc)));
    }
    // A flag whose description starts with `(required)` must be given.
    if let Some(f) = doc
        .flags
        .iter()
        .find(|f| f.help.starts_with("(required)") && !named.iter().any(|(k, _)| *k == f.long))
    {
        let name = match (f.short, &f.value) {
            (Some(c), Some(v)) => format!("-{c} {v}"),
            (Some(c), None) => format!("-{c}"),
            (None, _) => format!("--{}", f.long),
        };
        return Err(format!("missing option {name}\n{}", usage(doc)));
    }
    // Of the flags whose description starts with `(one of)`, one at least must be given.
    let either: Vec<&super::ToolFlag> = doc
        .flags
        .iter()
        .filter(|f| f.help.starts_with("(one of)"))
        .collect();
    if !either.is_empty()
        && !either
            .iter()
            .any(|f| named.iter().any(|(k, _)| *k == f.long))
    {
        let names: Vec<String> = either
            .iter()
            .map(|f| match (f.short, &f.value) {
                (Some(c), Some(v)) => format!("-{c} {v}"),
                _ => format!("--{}", f.long),
            })
            .collect();
        return Err(format!(
            "missing option: one of {}\n{}",
            names.join(", "),
            usage(doc)
        ));
    }
    if let Some(f) = globals.format.as_deref().filter(|f| !FORMATS.contains(f)) {
        return Err(format!(
            "unknown output format `{f}` (text, json, folded or csv)\n{}",
            usage(doc)
        ));
    }
    if globals.format.as_deref() == Some("folded")
        && doc
            .flags
            .iter()
            .any(|f| f.long == "folded" && f.value.is_none())
        && !named.iter().any(|(k, _)| k == "folded")
    {
        named.push(("folded".into(), String::new()));
    }
    Ok(Invocation::Run { named, globals })
}

/// A tool's command line as it is read: the arguments, the next one's index, and the named
/// parameters and global options read so far.
struct Cursor<'a> {
    doc: &'a ToolDoc,
    args: &'a [String],
    i: usize,
    named: Vec<(String, String)>,
    globals: Globals,
}

/// Parses `--LONG`, `--LONG VALUE` or `--LONG=VALUE` (`long` is what follows the `--`; its
/// value, if separate, is the next argument): a flag of the tool's header into the named
/// parameters, or one of sonde's global options.
fn long_option(c: &mut Cursor<'_>, long: &str) -> Result<(), String> {
    let (doc, args, i) = (c.doc, c.args, &mut c.i);
    let (named, globals) = (&mut c.named, &mut c.globals);
    let (name, inline) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (long, None),
    };
    let Some(flag) = doc.flags.iter().find(|f| f.long == name) else {
        match (name, inline) {
            ("quiet", None) => globals.quiet = true,
            ("output", v) => {
                globals.output = Some(match v {
                    Some(v) => v,
                    None => take(args, i, "--output FILE")?,
                })
            }
            ("format", v) => {
                globals.format = Some(match v {
                    Some(v) => v,
                    None => take(args, i, "--format FORMAT")?,
                })
            }
            ("post", v) => {
                globals.post = Some(match v {
                    Some(v) => v,
                    None => take(args, i, "--post FILE")?,
                })
            }
            _ => return Err(unknown(doc, &format!("--{long}"))),
        }
        return Ok(());
    };
    let value = match (&flag.value, inline) {
        (None, None) => String::new(),
        (None, Some(_)) => return Err(format!("--{name} takes no value")),
        (Some(_), Some(v)) => v,
        (Some(meta), None) => take(args, i, &format!("--{name} {meta}"))?,
    };
    named.push((flag.long.clone(), value));
    Ok(())
}

/// Parses short flags `a` (`-x`, bundled boolean ones `-Tx`, `-p 123`, `-p123`; a separate
/// value is the next argument): flags of the tool's header into the named parameters,
/// sonde's global options (`-q`, `-o`, `-f`).
fn short_options(c: &mut Cursor<'_>, a: &str) -> Result<(), String> {
    let Cursor {
        doc,
        args,
        i,
        named,
        globals,
    } = c;
    let chars = a[1..].char_indices();
    for (at, c) in chars {
        let rest = &a[1 + at + c.len_utf8()..];
        let Some(flag) = doc.flags.iter().find(|f| f.short == Some(c)) else {
            let value = |i: &mut usize, what: &str| match rest {
                "" => take(args, i, what),
                _ => Ok(rest.to_string()),
            };
            match c {
                'q' => {
                    globals.quiet = true;
                    continue;
                }
                'o' => globals.output = Some(value(i, "-o FILE")?),
                'f' => globals.format = Some(value(i, "-f FORMAT")?),
                _ => return Err(unknown(doc, &format!("-{c}"))),
            }
            break;
        };
        if let Some(meta) = &flag.value {
            let value = if rest.is_empty() {
                take(args, i, &format!("-{c} {meta}"))?
            } else {
                rest.to_string()
            };
            named.push((flag.long.clone(), value));
            break;
        }
        named.push((flag.long.clone(), String::new()));
    }
    Ok(())
}

/// The named parameter of positional argument `a`, the header's argument `arg` (`None`
/// when the header has no more), checked against its shape.
fn positional_arg(
    doc: &ToolDoc,
    arg: Option<&ToolArg>,
    a: &str,
) -> Result<(String, String), String> {
    let arg = arg.ok_or_else(|| format!("unexpected argument `{a}`\n{}", usage(doc)))?;
    if let Some(shape) = &arg.shape {
        let parts = a.split(':').collect::<Vec<_>>();
        if parts.len() != shape.split(':').count() || parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "{} must be {shape}, not `{a}`\n{}",
                arg.name,
                usage(doc)
            ));
        }
    }
    Ok((arg.name.clone(), a.to_string()))
}

/// Checks the values of `named` against the types the tool's `getopt` defaults give them
/// (an integer option takes an integer). Errors are usage messages.
pub fn check_values(tool: &Tool, doc: &ToolDoc, named: &[(String, String)]) -> Result<(), String> {
    let Ok(program) = sonde_lang::syntax::parse(tool.source) else {
        return Ok(());
    };
    let uses = sonde_compiler::catalog::functions::getopt::uses(&program);
    for (name, value) in named {
        if let Some(u) = uses.iter().find(|u| &u.name == name)
            && let Err(e) = u.default.parse_like(value)
        {
            return Err(format!("bad value for --{name}: {e}\n{}", usage(doc)));
        }
        // A PORTS list is checked, and packed into one integer, by `convert_values`.
        let ports = doc
            .flags
            .iter()
            .any(|f| &f.long == name && f.value.as_deref() == Some("PORTS"));
        if let (false, Err(e)) = (ports, in_range(name, value)) {
            return Err(format!("bad value for --{name}: {e}\n{}", usage(doc)));
        }
    }
    Ok(())
}

/// A boolean flag the script reads as an integer (`getopt("time", 0)`) counts how often it
/// is given (`-tt` is 2, as ltrace's and strace's `-t`): its occurrences in `named` become
/// one parameter whose value is that count.
pub fn count_flags(tool: &Tool, doc: &ToolDoc, named: &mut Vec<(String, String)>) {
    let Ok(program) = sonde_lang::syntax::parse(tool.source) else {
        return;
    };
    let uses = sonde_compiler::catalog::functions::getopt::uses(&program);
    for f in doc.flags.iter().filter(|f| f.value.is_none()) {
        let counted = uses.iter().any(|u| {
            u.name == f.long
                && matches!(
                    u.default,
                    sonde_compiler::catalog::functions::getopt::OptValue::Int(_)
                )
        });
        let n = named.iter().filter(|(k, _)| *k == f.long).count();
        if counted && n > 0 {
            named.retain(|(k, _)| *k != f.long);
            named.push((f.long.clone(), n.to_string()));
        }
    }
}

/// Checks the options whose values have a range, whatever the tool: a pid is one a process
/// has now (as bcc's tools say, a pid that fits no `pid_t` or names no process is an error,
/// not a filter that matches nothing); a number of seconds, times or samples is positive; a
/// port fits 16 bits.
fn in_range(name: &str, value: &str) -> Result<(), String> {
    let int = || value.trim().parse::<i64>().ok();
    match name {
        "pid" => {
            let pid = crate::args::parse_pid(value.trim())?;
            if pid == 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(format!("no process has pid {pid}"));
            }
            Ok(())
        }
        "interval" | "duration" | "count" | "frequency" => match int() {
            Some(n) if n < 1 => Err(format!("`{value}` is not a positive integer")),
            _ => Ok(()),
        },
        "min-block-time" => match int() {
            Some(n) if n < 0 => Err(format!("`{value}` is negative")),
            _ => Ok(()),
        },
        "localport" | "remoteport" => match int() {
            Some(n) if !(1..=65535).contains(&n) => {
                Err(format!("`{value}` is not a port (1 to 65535)"))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The next argument as the value of `what`.
fn take(args: &[String], i: &mut usize, what: &str) -> Result<String, String> {
    let v = args
        .get(*i)
        .ok_or_else(|| format!("{what}: missing value"))?;
    *i += 1;
    Ok(v.clone())
}

fn unknown(doc: &ToolDoc, flag: &str) -> String {
    format!("unknown option `{flag}`\n{}", usage(doc))
}
