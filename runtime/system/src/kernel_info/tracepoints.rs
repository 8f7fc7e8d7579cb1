//! Tracepoint facts from tracefs: the list of events and their `format` files.

use sonde_lang::kernel::TracepointField;

/// Parses the text of a tracepoint `format` file into its fields (common fields included).
///
/// A line reads `\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;`. The C type
/// keeps its spelling without the name; an array's bounds move to the type (`char comm[16]`
/// → `char[16]`), and `__data_loc char[] name` keeps `__data_loc char[]`. Lines that do not
/// parse are skipped.
pub fn parse_format(text: &str) -> Vec<TracepointField> {
    text.lines().filter_map(parse_field_line).collect()
}

fn parse_field_line(line: &str) -> Option<TracepointField> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.trim().split(';') {
        let Some((key, value)) = part.trim().split_once(':') else {
            continue;
        };
        match key {
            "field" => decl = Some(value.trim()),
            "offset" => offset = value.trim().parse().ok(),
            "size" => size = value.trim().parse().ok(),
            "signed" => signed = value.trim() == "1",
            _ => {}
        }
    }
    let (name, c_type) = split_declaration(decl?)?;
    Some(TracepointField {
        name,
        c_type,
        offset: offset?,
        size: size?,
        signed,
    })
}

/// Splits a C declaration (`const char * filename`, `char comm[16]`, `__data_loc char[] x`)
/// into the declared name and the type without the name.
pub fn split_declaration(decl: &str) -> Option<(String, String)> {
    let decl = decl.trim();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // `char comm[16]`: the bounds follow the name.
    let (head, bounds) = match decl.find('[') {
        Some(open) if decl.ends_with(']') && decl[..open].trim_end().ends_with(is_ident) => {
            decl.split_at(open)
        }
        _ => (decl, ""),
    };
    let head = head.trim_end();
    let name_start = head.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
    let name = &head[name_start..];
    let ty = head[..name_start].trim_end();
    if name.is_empty() || ty.is_empty() {
        return None;
    }
    Some((name.to_string(), format!("{ty}{}", bounds.trim())))
}

/// The tracepoints listed in `available_events` (`category:name` lines), sorted.
pub fn parse_available_events(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Renders a field as a C declaration the way `bpftrace -lv` lists tracepoint arguments:
/// `const char * filename`, `char comm[16]`, `__data_loc char[] filename`.
pub fn field_declaration(f: &TracepointField) -> String {
    let ty = f.c_type.trim();
    match ty.rfind('[') {
        Some(open) if !ty.starts_with("__data_loc") => {
            format!("{} {}{}", ty[..open].trim_end(), f.name, &ty[open..])
        }
        _ => format!("{ty} {}", f.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAT: &str = "name: sys_enter_openat
ID: 700
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;
\tfield:char comm[16];\toffset:32;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:48;\tsize:4;\tsigned:0;

print fmt: \"filename=%s\", REC->filename
";

    fn f(name: &str, c_type: &str, offset: u32, size: u32, signed: bool) -> TracepointField {
        TracepointField::new(name, c_type, offset, size, signed)
    }

    #[test]
    fn parses_format_fields() {
        assert_eq!(
            parse_format(OPENAT),
            vec![
                f("common_type", "unsigned short", 0, 2, false),
                f("common_pid", "int", 4, 4, true),
                f("__syscall_nr", "int", 8, 4, true),
                f("filename", "const char *", 24, 8, false),
                f("comm", "char[16]", 32, 16, false),
                f("name", "__data_loc char[]", 48, 4, false),
            ]
        );
    }

    #[test]
    fn renders_fields_like_bpftrace() {
        let fields = parse_format(OPENAT);
        let lines: Vec<String> = fields[3..].iter().map(field_declaration).collect();
        assert_eq!(
            lines,
            [
                "const char * filename",
                "char comm[16]",
                "__data_loc char[] name"
            ]
        );
    }

    #[test]
    fn splits_declarations() {
        assert_eq!(split_declaration("u64 x"), Some(("x".into(), "u64".into())));
        assert_eq!(
            split_declaration("void *ptr"),
            Some(("ptr".into(), "void *".into()))
        );
        assert_eq!(split_declaration("x"), None);
    }

    #[test]
    fn parses_available_events_sorted() {
        let evs = parse_available_events("sched:sched_switch\nirq:irq_handler_entry\n\n");
        assert_eq!(
            evs,
            vec![
                ("irq".to_string(), "irq_handler_entry".to_string()),
                ("sched".to_string(), "sched_switch".to_string())
            ]
        );
    }
}
