//! `-k`: helper calls whose failure is reported at run time. A failed probe read leaves zeros
//! (as bpftrace does); under `-k` it also sends a [`EventSpec::HelperError`] event with the
//! helper's return value, which the runtime prints with the place in the script (bpftrace's
//! `helper_error`).

use super::cx::LowerCx;
use crate::ir::{Cond, Inst, Intrinsic, Operand, VReg, Width};
use crate::program::EventSpec;
use sonde_lang::span::Span;

impl LowerCx<'_> {
    /// Calls the probe-read helper `func` with `args` (destination, size, source); under
    /// `-k` ([`crate::options::CompileOptions::helper_errors`]) a negative result is reported.
    pub fn probe_read(&mut self, func: Intrinsic, args: Vec<Operand>) {
        self.probe_read_at(None, func, args);
    }

    /// [`LowerCx::probe_read`] of a place read at `span` (the current span when `None`).
    pub fn probe_read_at(&mut self, span: Option<Span>, func: Intrinsic, args: Vec<Operand>) {
        if !self.options.helper_errors {
            self.emit(Inst::Call {
                dst: None,
                func,
                args,
            });
            return;
        }
        let rc = self.call(func, args);
        let saved = self.span;
        self.span = span.unwrap_or(saved);
        self.report_helper_error(func, rc);
        self.span = saved;
    }

    /// Under `-k`: sends a helper-error event for `map_lookup_elem` (return value 0, as
    /// bpftrace reports it) when `ptr`, the result of a lookup whose value is read, is NULL:
    /// the element does not exist and reads as zero.
    pub fn report_missing_key(&mut self, ptr: VReg) {
        let found = self.label();
        self.branch(Cond::Ne, ptr, Operand::Imm(0), found);
        let rc = self.imm(0);
        self.helper_error_event(Intrinsic::MapLookup, rc);
        self.place_label(found);
    }

    /// Sends a helper-error event for `func` at the current span when `rc` (its return
    /// value) is negative.
    pub fn report_helper_error(&mut self, func: Intrinsic, rc: VReg) {
        let ok = self.label();
        self.branch(Cond::SGe, rc, Operand::Imm(0), ok);
        self.helper_error_event(func, rc);
        self.place_label(ok);
    }

    /// Sends a helper-error event for `func` with return value `rc`, at the current span.
    fn helper_error_event(&mut self, func: Intrinsic, rc: VReg) {
        let helper = match func {
            Intrinsic::MapLookup => "map_lookup_elem".to_string(),
            f => f.host_name().trim_start_matches("sonde_").to_string(),
        };
        let span = self.span;
        let id = self.event_id(EventSpec::HelperError { helper, span });
        let buf = self.alloc(16);
        self.store(buf, 0, Operand::Imm(id as i64), Width::W64);
        self.store(buf, 8, Operand::Reg(rc), Width::W64);
        self.output(buf, 16);
    }
}

#[cfg(test)]
mod tests {
    use crate::compile::compile;
    use crate::options::CompileOptions;
    use crate::program::EventSpec;
    use sonde_lang::sema::{CheckOptions, check};
    use sonde_lang::testing::FixtureKernel;

    fn events(src: &str, helper_errors: bool) -> Vec<EventSpec> {
        let program = sonde_lang::syntax::parse(src).expect("parses");
        let (checked, diags) = check(
            &program,
            &crate::catalog::SondeCatalog,
            &FixtureKernel,
            &CheckOptions::default(),
        );
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
        let opts = CompileOptions {
            ncpus: 1,
            helper_errors,
            ..Default::default()
        };
        compile(&program, &checked, &FixtureKernel, &opts)
            .expect("compiles")
            .script
            .events
    }

    #[test]
    fn probe_reads_report_their_failures_only_under_k() {
        let src = "BEGIN { $p = (int64 *)8; printf(\"%d %s\\n\", *$p, str((int8 *)16)); }";
        let plain = events(src, false);
        assert!(
            !plain
                .iter()
                .any(|e| matches!(e, EventSpec::HelperError { .. })),
            "{plain:?}"
        );
        let with_k = events(src, true);
        let helpers: Vec<(&str, usize)> = with_k
            .iter()
            .filter_map(|e| match e {
                EventSpec::HelperError { helper, span } => Some((helper.as_str(), span.start)),
                _ => None,
            })
            .collect();
        // Each names the expression whose read failed: the dereference, the `str()` call.
        let deref = src.find("*$p").unwrap();
        let str_call = src.find("str((").unwrap();
        assert_eq!(
            helpers,
            [("probe_read", deref), ("probe_read_str", str_call)],
            "{with_k:?}"
        );
    }

    #[test]
    fn each_map_update_has_a_map_full_event_at_its_place_without_k() {
        let src = "BEGIN { @a[1] = 1; @b[2] = count(); @a[3] = 3; }";
        let places: Vec<(String, usize, usize)> = events(src, false)
            .into_iter()
            .filter_map(|e| match e {
                EventSpec::HelperError { helper, span } => Some((helper, span.start, span.end)),
                _ => None,
            })
            .collect();
        let at = |s: &str| {
            let start = src.find(s).unwrap();
            ("map_update_elem".to_string(), start, start + s.len())
        };
        assert_eq!(
            places,
            [at("@a[1] = 1"), at("@b[2] = count()"), at("@a[3] = 3")]
        );
    }
}
