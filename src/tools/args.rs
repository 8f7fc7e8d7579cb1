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
    /// Run the tool with these named parameters.
    Run {
        /// `(getopt name, value)` pairs; a boolean flag has an empty value.
        named: Vec<(String, String)>,
        /// Sonde's own options.
        globals: Globals,
    },
}

/// Parses a tool's command line against its header's flags. Accepts `-x`, bundled boolean
/// short flags (`-Tx`), `-p 123`, `-p123`, `--long`, `--long VALUE`, `--long=VALUE` and the
/// positional arguments of the `ARGUMENTS:` section. Errors are usage messages.
pub fn parse_args(doc: &ToolDoc, args: &[String]) -> Result<Invocation, String> {
    let mut named = Vec::new();
    let mut globals = Globals::default();
    let mut positional = doc.arguments.iter();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "-h" || a == "--help" {
            return Ok(Invocation::Help);
        }
        if a == "-f" && args.get(i).is_some_and(|v| FORMATS.contains(&v.as_str())) {
            globals.format = Some(take(args, &mut i, "-f FORMAT")?);
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            long_option(doc, args, &mut i, long, &mut named, &mut globals)?;
        } else if a.len() > 1
            && a.starts_with('-')
            && (!a[1..].starts_with(|c: char| c.is_ascii_digit())
                || doc.flags.iter().any(|f| f.short == a[1..].chars().next()))
        {
            short_options(doc, args, &mut i, a, &mut named, &mut globals)?;
        } else {
            named.push(positional_arg(doc, positional.next(), a)?);
        }
    }
    if let Some(missing) = positional.find(|a| a.required) {
        return Err(format!("missing argument {}\n{}", missing.name, usage(doc)));
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

/// Parses `--LONG`, `--LONG VALUE` or `--LONG=VALUE` (`long` is what follows the `--`; its
/// value, if separate, is `args[*i]`): a flag of the tool's header into `named`, or one of
/// sonde's global options into `globals`.
fn long_option(
    doc: &ToolDoc,
    args: &[String],
    i: &mut usize,
    long: &str,
    named: &mut Vec<(String, String)>,
    globals: &mut Globals,
) -> Result<(), String> {
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
/// value is `args[*i]`): flags of the tool's header into `named`, sonde's global options
/// (`-q`, `-o`, `-f`) into `globals`.
fn short_options(
    doc: &ToolDoc,
    args: &[String],
    i: &mut usize,
    a: &str,
    named: &mut Vec<(String, String)>,
    globals: &mut Globals,
) -> Result<(), String> {
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
    }
    Ok(())
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
