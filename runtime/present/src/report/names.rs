//! The map names a script looks up, checked before the run: `maps["@name"]` of a map the
//! tracing script does not have would be `()` at the end of the run (and an unhelpful error
//! further on), after the run's data was gathered.

use super::diag::span_of;
use rhai::{AST, ASTNode, Expr};
use sonde_lang::diag::{Diagnostic, did_you_mean};
use sonde_lang::span::Span;

/// Every lookup `x["@name"]` (a string constant that starts with `@`) in `ast` must name one
/// of `maps` (the tracing script's map names, without `@`): the first that does not is an
/// error on its name in `src`.
pub fn check(ast: &AST, src: &str, maps: &[&str]) -> Result<(), Diagnostic> {
    let mut missing = None;
    ast.walk(&mut |path: &[ASTNode]| {
        if let Some(ASTNode::Expr(Expr::Index(x, ..))) = path.last()
            && let Expr::StringConstant(name, pos) = &x.rhs
            && let Some(bare) = name.strip_prefix('@')
            && !maps.contains(&bare)
        {
            missing = Some((name.to_string(), *pos));
            return false;
        }
        true
    });
    let Some((name, pos)) = missing else {
        return Ok(());
    };
    Err(no_map(src, &name, span_of(src, pos), maps))
}

/// The error for map `name` (with `@`), looked up at `span`, which the script lacks.
fn no_map(src: &str, name: &str, span: Option<Span>, maps: &[&str]) -> Diagnostic {
    // The span of the whole string constant, quotes included, when it is written plainly.
    let span = span.map(|s| {
        let quoted = format!("\"{name}\"");
        match src.get(s.start..s.start + quoted.len()) {
            Some(t) if t == quoted => Span::new(s.start, s.start + quoted.len()),
            _ => s,
        }
    });
    let names: Vec<String> = maps.iter().map(|m| format!("@{m}")).collect();
    let help = if names.is_empty() {
        "the tracing script has no maps".to_string()
    } else {
        let close = did_you_mean(name, names.iter().map(String::as_str))
            .map(|c| format!("did you mean {c}? "))
            .unwrap_or_default();
        format!("{close}the tracing script's maps are {}", names.join(", "))
    };
    let d = Diagnostic::error(
        "sonde::post::no_map",
        span.unwrap_or_default(),
        format!(
            "the post-processing script looks up map {name}, which the tracing script does not have"
        ),
    )
    .with_help(help);
    if span.is_some() {
        d.with_label("no such map")
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Post, PostOptions};

    fn check(src: &str, maps: &[&str]) -> Result<(), sonde_lang::diag::Diagnostic> {
        Post::compile(src, PostOptions::default())
            .expect("compiles")
            .check_maps(maps)
    }

    #[test]
    fn a_lookup_of_a_missing_map_is_an_error_before_the_run() {
        let src = "fn on_end(maps) {\n    print(percentile(maps[\"@hh\"], 50));\n}\n";
        let d = check(src, &["h", "x"]).unwrap_err();
        assert_eq!(d.code, "sonde::post::no_map");
        assert!(d.message.contains("map @hh"), "{}", d.message);
        assert_eq!(&src[d.span.start..d.span.end], "\"@hh\"");
        assert_eq!(
            d.help.as_deref(),
            Some("did you mean @h? the tracing script's maps are @h, @x")
        );
        // In a helper, too; names that are maps, and strings that are not map names, pass.
        let d = check("fn f(m) { m[\"@y\"] }\nfn on_end(maps) { f(maps) }", &[]).unwrap_err();
        assert_eq!(d.help.as_deref(), Some("the tracing script has no maps"));
        check(
            "fn on_end(maps) { print(maps[\"@h\"]); print(this[\"n\"]); }",
            &["h"],
        )
        .unwrap();
    }
}
