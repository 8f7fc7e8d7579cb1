//! ltrace's prototypes (`-F FILE`, ltrace.conf(5)), the simple subset: one function a line,
//! `TYPE NAME(TYPE, TYPE, ...);`, with the types `void` (a result only), `int`, `uint`,
//! `long`, `ulong`, `short`, `ushort`, `char`, `addr` and `string`; `;` starts a comment.
//! A file is read with a bound and passed to the tool as one line, `name=ret(t1,t2);...`,
//! which its report reads to print arguments and results by type.

/// The types a prototype may name.
const TYPES: [&str; 10] = [
    "void", "int", "uint", "long", "ulong", "short", "ushort", "char", "addr", "string",
];

/// The most arguments a prototype may have (what the tool reads of a call).
pub const MAX_ARGS: usize = 6;

/// The largest prototype file read (1 MiB).
const MAX_FILE: u64 = 1 << 20;

/// The prototypes of the file at `path`, as `name=ret(t1,t2);...`; errors name the line.
pub fn read(path: &str) -> Result<String, String> {
    let bytes = sonde_system::user_files::read(
        std::path::Path::new(path),
        MAX_FILE,
        sonde_system::user_files::Pipes::Read,
    )
    .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&text).map_err(|(line, e)| format!("{path}:{line}: {e}"))
}

/// Parses prototype text; `Err((line number, message))`.
pub fn parse(text: &str) -> Result<String, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split(';').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        out.push(prototype(line, raw).map_err(|e| (i + 1, e))?);
    }
    Ok(out.join(";"))
}

/// One `TYPE NAME(TYPE, ...)` (the `;` already cut) as `name=ret(t1,t2)`.
fn prototype(line: &str, raw: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "`{}` is not a prototype `TYPE NAME(TYPE, ...);`",
            raw.trim()
        )
    };
    let (head, args) = line.split_once('(').ok_or_else(bad)?;
    let args = args.trim_end().strip_suffix(')').ok_or_else(bad)?;
    let mut words = head.split_whitespace();
    let (Some(ret), Some(name), None) = (words.next(), words.next(), words.next()) else {
        return Err(bad());
    };
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad());
    }
    let ty = |t: &str, result: bool| match TYPES.contains(&t) && (result || t != "void") {
        true => Ok(t.to_string()),
        false => Err(format!(
            "unknown type `{t}` (the types are int, uint, long, ulong, short, ushort, char, \
             addr, string, and void for a result)"
        )),
    };
    let ret = ty(ret, true)?;
    let args: Vec<String> = match args.trim() {
        "" | "void" => Vec::new(),
        list => list
            .split(',')
            .map(|a| ty(a.trim(), false))
            .collect::<Result<_, _>>()?,
    };
    if args.len() > MAX_ARGS {
        return Err(format!(
            "`{name}` has {} arguments: the tool reads {MAX_ARGS}",
            args.len()
        ));
    }
    Ok(format!("{name}={ret}({})", args.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prototypes_become_one_line() {
        let text = "; mysql\nint mysql_real_query(addr,string,ulong);\n\n\
                    void free(addr);  ; a comment\nlong f();\nchar g(void);\n";
        assert_eq!(
            parse(text),
            Ok("mysql_real_query=int(addr,string,ulong);free=void(addr);f=long();g=char()".into())
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, line, start) in [
            ("int f(addr);\nfloat g(int);\n", 2, "unknown type `float`"),
            ("int f(void, int);\n", 1, "unknown type `void`"),
            ("int f(int\n", 1, "`int f(int` is not a prototype"),
            ("f(int);\n", 1, "`f(int);` is not a prototype"),
            (
                "int f(int,int,int,int,int,int,int);\n",
                1,
                "`f` has 7 arguments",
            ),
        ] {
            let (n, e) = parse(text).unwrap_err();
            assert_eq!(n, line, "{text}");
            assert!(e.starts_with(start), "{e}");
        }
        assert!(
            read("/nonexistent/protos.conf")
                .unwrap_err()
                .starts_with("cannot read")
        );
    }
}
