//! The rate syntax shared by `profile` and `interval`: `hz:N`, `s:N`, `ms:N`, `us:N`, a bare
//! `N` (a rate in hertz), or a duration with a unit suffix (`1s`, `100ms`, `5m`).

use super::common::{bad_attach_point, expect_parts, parse_u64, part_span, positive_part};
use crate::program::PerfSample;
use sonde_lang::ast::AttachPoint;
use sonde_lang::diag::Diagnostic;
// Nanoseconds per duration unit, for the `unit:N` and duration (`100ms`) forms: the same
// table as integer literals with duration suffixes.
use sonde_lang::syntax::literals::DURATIONS as UNITS;

/// Parses the timer parts of `ap` (one or two) into a perf sampling rule.
pub fn parse_timer(ap: &AttachPoint, usage: &str) -> Result<PerfSample, Diagnostic> {
    expect_parts(ap, 1, 2, usage)?;
    if ap.parts.len() == 2 {
        let unit = ap.parts[0].as_str();
        let n = positive_part(ap, 1, "the count", usage)?;
        if unit == "hz" {
            return Ok(PerfSample::Frequency(n));
        }
        let per = match unit {
            "s" | "ms" | "us" => UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map_or(1, |(_, ns)| *ns),
            _ => {
                return Err(bad_attach_point(
                    part_span(ap, 0),
                    format!("unknown unit `{unit}`; expected `hz`, `s`, `ms` or `us`"),
                    usage,
                ));
            }
        };
        return period(ap, n, per, usage);
    }
    let text = ap.parts[0].as_str();
    if parse_u64(text).is_some() {
        return Ok(PerfSample::Frequency(positive_part(
            ap,
            0,
            "the rate in hertz",
            usage,
        )?));
    }
    let digits = text.len()
        - text
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '_')
            .len();
    let (number, unit) = text.split_at(digits);
    let per = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, ns)| *ns);
    match (parse_u64(number), per) {
        (Some(0), Some(_)) => Err(bad_attach_point(
            part_span(ap, 0),
            "the duration must be positive, got 0",
            usage,
        )),
        (Some(n), Some(per)) => period(ap, n, per, usage),
        _ => Err(bad_attach_point(
            part_span(ap, 0),
            format!("`{text}` is neither a rate in hertz nor a duration such as `100ms`"),
            usage,
        )),
    }
}

/// A period of `n * per` nanoseconds, rejecting overflow.
fn period(ap: &AttachPoint, n: u64, per: u64, usage: &str) -> Result<PerfSample, Diagnostic> {
    n.checked_mul(per)
        .map(PerfSample::Period)
        .ok_or_else(|| bad_attach_point(ap.span, "the period is too long", usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;

    fn p(raw: &str) -> Result<PerfSample, Diagnostic> {
        parse_timer(&ap(raw), "x")
    }

    #[test]
    fn forms() {
        assert_eq!(p("profile:hz:99").unwrap(), PerfSample::Frequency(99));
        assert_eq!(p("profile:99").unwrap(), PerfSample::Frequency(99));
        assert_eq!(
            p("interval:s:1").unwrap(),
            PerfSample::Period(1_000_000_000)
        );
        assert_eq!(
            p("interval:ms:100").unwrap(),
            PerfSample::Period(100_000_000)
        );
        assert_eq!(p("interval:us:5").unwrap(), PerfSample::Period(5_000));
        assert_eq!(p("interval:1s").unwrap(), PerfSample::Period(1_000_000_000));
        assert_eq!(
            p("interval:100ms").unwrap(),
            PerfSample::Period(100_000_000)
        );
        assert_eq!(
            p("interval:2m").unwrap(),
            PerfSample::Period(120_000_000_000)
        );
    }

    #[test]
    fn errors() {
        for bad in [
            "profile:hz:0",
            "profile:0",
            "interval:0s",
            "interval:ms:abc",
            "interval:x:1",
            "interval:1y",
            "i",
        ] {
            assert_eq!(p(bad).unwrap_err().code, BAD_ATTACH_POINT, "{bad}");
        }
        assert_eq!(p("profile:hz:0").unwrap_err().span.start, 11);
        assert_eq!(
            p("interval:s:99999999999999999").unwrap_err().code,
            BAD_ATTACH_POINT
        );
    }
}
