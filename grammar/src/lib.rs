//! The pest grammar of the sonde tracing language (bpftrace-compatible).
//!
//! This crate only derives the parser: [`SondeParser`] and its [`Rule`] enum, generated from
//! `src/sonde.pest`. The corpus of accepted and rejected snippets lives in `corpus/` and is
//! exercised by `sonde-lang`'s parser tests.
//!
//! **Invariant:** no types other than the pest output. Only `sonde_lang::syntax` imports this
//! crate, and it maps every [`Rule`] name to human words before anything reaches a user.

use pest_derive::Parser;

/// The parser derived from `sonde.pest`; start with [`Rule::program`].
#[derive(Parser)]
#[grammar = "sonde.pest"]
pub struct SondeParser;

#[cfg(test)]
mod tests {
    use super::*;
    use pest::Parser;

    #[test]
    fn parses_a_minimal_probe() {
        let pairs = SondeParser::parse(Rule::program, "BEGIN { printf(\"hi\\n\"); }").unwrap();
        let program = pairs.into_iter().next().unwrap();
        let first = program.into_inner().next().unwrap();
        assert_eq!(first.as_rule(), Rule::probe);
    }

    #[test]
    fn predicate_needs_blank_before_slash() {
        let src = "uprobe:/bin/bash:readline /pid == 1/ { }";
        let program = SondeParser::parse(Rule::program, src)
            .unwrap()
            .next()
            .unwrap();
        let probe = program.into_inner().next().unwrap();
        let mut inner = probe.into_inner();
        let point = inner.next().unwrap().into_inner().next().unwrap();
        assert_eq!(point.as_rule(), Rule::attach_point);
        assert_eq!(point.as_str(), "uprobe:/bin/bash:readline");
        assert_eq!(inner.next().unwrap().as_rule(), Rule::predicate);
    }
}
