//! Parameters in attach points: `profile:hz:$1` (a positional parameter, as bpftrace expands
//! it) and `profile:hz:$frequency` (a named parameter, the value `getopt("frequency", 49)`
//! gives: the tool flag `-F 99` or, without it, the default of the script's `getopt` call).
//!
//! Attach points are fixed when the program loads, so their parameters are substituted in
//! the text of the attach point before checking, like a macro. A named parameter must be
//! read by a `getopt(name, default)` somewhere in the script: that call gives its default
//! and its type, and keeps a tool's flags exactly the `getopt` names its script reads.
//! A reference that cannot be expanded is a `sonde::parse::attach_param` diagnostic.

use super::getopt::{OptValue, uses};
use sonde_lang::ast::Program;
use sonde_lang::diag::Diagnostic;

/// Code of an attach-point parameter that cannot be expanded.
pub const ATTACH_PARAM: &str = "sonde::parse::attach_param";

/// The text of a parameter value in an attach point.
fn value_text(v: &OptValue) -> String {
    match v {
        OptValue::Bool(b) => u8::from(*b).to_string(),
        OptValue::Int(i) => i.to_string(),
        OptValue::Str(s) => s.clone(),
    }
}

/// Expands `$N` and `$name` in attach-point text; `Err` names the failing reference.
fn expand_part(
    part: &str,
    positional: &[String],
    named: &dyn Fn(&str) -> Option<String>,
) -> Result<String, (String, String)> {
    let mut out = String::new();
    let mut rest = part;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..len];
        if name.is_empty() {
            out.push('$');
        } else if name.bytes().all(|b| b.is_ascii_digit()) {
            let value = name
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| positional.get(i))
                .ok_or_else(|| {
                    (
                        format!("${name}"),
                        format!("positional parameter ${name} is not given"),
                    )
                })?;
            out.push_str(value);
        } else {
            let value = named(name).ok_or_else(|| {
                (
                    format!("${name}"),
                    format!("`${name}` is not a named parameter of this script"),
                )
            })?;
            out.push_str(&value);
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitutes the parameters of every attach point of `program` (see the module docs):
/// `positional` are `$1`.., `named` the `--name=value` pairs. A named parameter given
/// several times (a tool's repeatable flag, `-x A -x B`) makes its attach point one per
/// value, in order (`uprobe:$x` becomes `uprobe:A, uprobe:B`); `getopt` reads the last.
/// Attach points without `$` are left untouched.
pub fn expand_attach_points(
    program: &mut Program,
    positional: &[String],
    named: &[(String, String)],
) -> Vec<Diagnostic> {
    let used = uses(program);
    let mut diags = Vec::new();
    for probe in &mut program.probes {
        let mut expanded_aps = Vec::new();
        for ap in std::mem::take(&mut probe.attach_points) {
            if !ap.raw.contains('$') {
                expanded_aps.push(ap);
                continue;
            }
            // The values of the named parameter this attach point repeats, if any.
            let repeated = used.iter().find_map(|u| {
                let values: Vec<&String> = named
                    .iter()
                    .filter(|(n, _)| *n == u.name)
                    .map(|(_, v)| v)
                    .collect();
                (values.len() > 1 && refers_to(&ap.raw, &u.name))
                    .then_some((u.name.as_str(), values))
            });
            let rounds: Vec<Option<&String>> = match &repeated {
                Some((_, values)) => values.iter().map(|v| Some(*v)).collect(),
                None => vec![None],
            };
            for round in rounds {
                let lookup = |name: &str| -> Option<String> {
                    let u = used.iter().find(|u| u.name == name)?;
                    let given = match (&repeated, round) {
                        (Some((r, _)), Some(v)) if *r == name => Some(v),
                        _ => named.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v),
                    };
                    match given {
                        Some(text) => u.default.parse_like(text).ok().map(|v| value_text(&v)),
                        None => Some(value_text(&u.default)),
                    }
                };
                match expand_one(&ap, positional, &lookup) {
                    Ok(new) => expanded_aps.push(new),
                    Err(d) => {
                        diags.push(d);
                        expanded_aps.push(ap.clone());
                        break;
                    }
                }
            }
        }
        probe.attach_points = expanded_aps;
    }
    diags
}

/// True when attach-point text `raw` refers to the named parameter `name` (`$name`).
fn refers_to(raw: &str, name: &str) -> bool {
    raw.match_indices('$').any(|(at, _)| {
        let after = &raw[at + 1..];
        after.starts_with(name)
            && !after[name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `ap` with its parameters substituted (`named` looks a named one up), reparsed.
fn expand_one(
    ap: &sonde_lang::ast::AttachPoint,
    positional: &[String],
    named: &dyn Fn(&str) -> Option<String>,
) -> Result<sonde_lang::ast::AttachPoint, Diagnostic> {
    let fail = |msg: String, label: String| {
        Diagnostic::error(ATTACH_PARAM, ap.span, msg)
            .with_label(label)
            .with_help(
                "give the positional parameter after the script, or read the named \
                 one with getopt(\"name\", default) and pass --name=VALUE",
            )
    };
    let expanded = expand_part(&ap.raw, positional, named)
        .map_err(|(what, msg)| fail(msg, format!("{what} in this attach point")))?;
    // The value may hold `:` (`/bin/app:main`): split the result as the parser
    // splits attach points, by parsing it as one.
    let reparsed = sonde_lang::syntax::parse(&format!("{expanded} {{}}"))
        .ok()
        .and_then(|p| p.probes.into_iter().next())
        .filter(|p| p.attach_points.len() == 1)
        .and_then(|p| p.attach_points.into_iter().next());
    match reparsed {
        Some(new) => {
            let mut out = ap.clone();
            out.raw = new.raw;
            out.provider = new.provider;
            out.parts = new.parts;
            Ok(out)
        }
        None => Err(fail(
            format!("`{expanded}` is not an attach point"),
            "after expanding its parameters".to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Program {
        sonde_lang::syntax::parse(src).expect("parses")
    }

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const SRC: &str =
        r#"profile:hz:$frequency, interval:ms:$1 { @[getopt("frequency", 49)] = count(); }"#;

    #[test]
    fn named_parameters_take_flag_or_default() {
        let mut p = parse(SRC);
        let d = expand_attach_points(&mut p, &strings(&["250"]), &[]);
        assert!(d.is_empty(), "{d:?}");
        let aps = &p.probes[0].attach_points;
        assert_eq!(aps[0].raw, "profile:hz:49");
        assert_eq!(aps[0].parts, vec!["hz".to_string(), "49".to_string()]);
        assert_eq!(aps[1].raw, "interval:ms:250");

        let mut p = parse(SRC);
        let named = vec![
            ("frequency".to_string(), "7".to_string()),
            ("frequency".to_string(), "99".to_string()),
        ];
        assert!(expand_attach_points(&mut p, &strings(&["1"]), &named).is_empty());
        // Given twice, the attach point is one per value, in order.
        let raws: Vec<&str> = p.probes[0]
            .attach_points
            .iter()
            .map(|a| a.raw.as_str())
            .collect();
        assert_eq!(raws, ["profile:hz:7", "profile:hz:99", "interval:ms:1"]);
    }

    #[test]
    fn a_repeated_parameter_makes_an_attach_point_per_value() {
        let src = r#"uprobe:$x, uretprobe:$xy { @[getopt("x", ""), getopt("xy", "")] = count(); }"#;
        let mut p = parse(src);
        let named = vec![
            ("x".to_string(), "libc:strlen".to_string()),
            ("xy".to_string(), "libc:free".to_string()),
            ("x".to_string(), "/lib/a.so:tiny_*".to_string()),
        ];
        assert!(expand_attach_points(&mut p, &[], &named).is_empty());
        let aps: Vec<(&str, &[String])> = p.probes[0]
            .attach_points
            .iter()
            .map(|a| (a.raw.as_str(), a.parts.as_slice()))
            .collect();
        assert_eq!(aps.len(), 3, "{aps:?}");
        assert_eq!(aps[0].0, "uprobe:libc:strlen");
        assert_eq!(aps[1].1, ["/lib/a.so".to_string(), "tiny_*".to_string()]);
        assert_eq!(aps[2].0, "uretprobe:libc:free");
    }

    #[test]
    fn a_value_with_colons_splits_into_parts() {
        let src = r#"uprobe:$function { @[getopt("function", "")] = count(); }"#;
        let mut p = parse(src);
        let named = vec![("function".to_string(), "/bin/app:main".to_string())];
        assert!(expand_attach_points(&mut p, &[], &named).is_empty());
        let ap = &p.probes[0].attach_points[0];
        assert_eq!(ap.provider, "uprobe");
        assert_eq!(ap.parts, vec!["/bin/app".to_string(), "main".to_string()]);
        let mut p = parse(src);
        let bad = vec![("function".to_string(), "a b, c".to_string())];
        let d = expand_attach_points(&mut p, &[], &bad);
        assert_eq!(d[0].message, "`uprobe:a b, c` is not an attach point");
    }

    #[test]
    fn unknown_references_are_diagnostics() {
        let mut p = parse("profile:hz:$freq, interval:s:$2 { }");
        let d = expand_attach_points(&mut p, &strings(&["1"]), &[]);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.code == ATTACH_PARAM));
        assert_eq!(d[0].label, "$freq in this attach point");
        assert_eq!(
            d[0].message,
            "`$freq` is not a named parameter of this script"
        );
        assert_eq!(d[1].message, "positional parameter $2 is not given");
        // Left untouched when it fails.
        assert_eq!(p.probes[0].attach_points[0].raw, "profile:hz:$freq");
    }

    #[test]
    fn text_without_parameters_is_untouched() {
        let mut p = parse(r#"uprobe:"/a$b":f { }"#);
        let before = p.probes[0].attach_points[0].clone();
        // `$b` is not a parameter here: the script reads no getopt("b").
        let d = expand_attach_points(&mut p, &[], &[]);
        assert_eq!(d.len(), 1);
        assert_eq!(p.probes[0].attach_points[0], before);
        let mut p = parse("tracepoint:sched:sched_switch { }");
        assert!(expand_attach_points(&mut p, &[], &[]).is_empty());
    }
}
