//! `iter:NAME[:PIN]` (alias `it`): BPF iterators, as bpftrace 0.26 has them. The program runs
//! once for each kernel object of the iterator (`task`: every thread; `task_file`: every open
//! file of every task; `task_vma`: every memory mapping; any other `bpf_iter__NAME` the
//! kernel's BTF has) when the runtime reads the iterator, after BEGIN; the script then ends
//! (END runs, maps print). `ctx` is the iterator's `struct bpf_iter__NAME` (`ctx.task`,
//! `ctx.fd`, `ctx.file`, `ctx.vma`), read with direct loads; a field that reads 0 ends that
//! run, as in bpftrace (the iteration's last call has a NULL object). `printf` formats in the
//! kernel into the iterator's output (`bpf_seq_printf`, see [`seq_printf`]).
//!
//! With a pin path (`iter:task:list` for `/sys/fs/bpf/list`, or an absolute path in bpffs)
//! the link is pinned instead of read: each read of that file (`cat`) runs the iteration.
//! An iterator probe shares its script only with BEGIN and END ([`check_alone`]).

use super::common::{
    bad_attach_point, expect_parts, has_wildcard, part_span, resolved, unknown_with_suggestion,
};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::ctypes::opaque_record;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{KernelInfo, RecordKind};
use sonde_lang::sema::Checked;
use sonde_lang::types::Type;

pub mod seq_printf;

/// Code of an iterator the kernel does not have.
pub const UNKNOWN_ITERATOR: &str = "sonde::probe::unknown_iterator";
/// Code of an iterator probe in a script with probes other than BEGIN and END.
pub const NOT_ALONE: &str = "sonde::probe::iter_not_alone";
/// The bpffs directory a relative pin path is in.
pub const BPFFS: &str = "/sys/fs/bpf";

const USAGE: &str = "iter:name[:pin]";

/// The reference section on iterator probes (`docs/reference.md`).
pub const REFERENCE: &str = r#"
## Iterators

`iter:NAME` probes walk kernel objects with BPF iterators (`sonde -l 'iter:*'` lists them,
`-lv` the fields of each one's `ctx`). After BEGIN, sonde reads the iterator once: the kernel
runs the probe for each object (`task`: every thread; `task_file`: every open file, once per
file table; `task_vma`: every mapping, once per address space), then END runs and the maps
print. `ctx` is the iterator's `struct bpf_iter__NAME`, typed from BTF (`ctx.task.comm`,
`ctx.fd`, `path(ctx.file.f_path)`, `ctx.vma.vm_start`). As in bpftrace, a `ctx` field that
reads 0 ends that run of the probe: the iteration's last call, which has no object, does
nothing, and neither does a file at descriptor 0. `comm`, `pid` and the other builtins of the
current task are sonde's own: the iteration runs in its task.

`printf` is formatted by the kernel into the iterator's output (`bpf_seq_printf`, as in
bpftrace), which sonde prints as it reads it (one `printf` record per line with `-f json`). The
kernel takes `%d %i %u %x %X` (with `l` or `ll`), `%s` of strings, `%c` and `%p` (hashed, as
the kernel prints pointers), the flags `0 + - space`, a width, and at most 12 arguments; other
formats are refused when the script is checked. Other output (`print`, `time`, ...) goes
through the ring buffer as in other probes, and prints after the iteration's text. `path()`
works in iter probes, on a `struct path` of the iterator's object. With `-p PID`, `task`,
`task_file` and `task_vma` walk that process only.

`iter:NAME:PIN` pins the iterator in bpffs instead (`PIN` absolute, or relative to
`/sys/fs/bpf`), prints `Program pinned to PATH` and ends; each read of the file (`cat
/sys/fs/bpf/PIN`) runs the iteration again, its text the file's contents, after sonde has
exited; removing the file frees it. An iterator probe shares its script only with BEGIN and
END (`sonde::probe::iter_not_alone`).
"#;

/// The iterator provider.
pub struct Iter;

/// The probe context of iterator `name`: `ctx` is its `struct bpf_iter__<name>` from BTF
/// (opaque without BTF: the checker then reports the unknown struct where a field is read).
fn context(name: &str, kernel: &dyn KernelInfo) -> ProbeContext {
    let tag = format!("bpf_iter__{name}");
    let record = kernel
        .record(RecordKind::Struct, &tag)
        .unwrap_or_else(|| opaque_record(RecordKind::Struct, &tag));
    ProbeContext {
        ctx: Some(Type::Record(record)),
        ..ProbeContext::bare("iter")
    }
}

/// The absolute pin path of a written one: relative paths are in [`BPFFS`].
pub fn pin_path(written: &str) -> String {
    if written.starts_with('/') {
        written.to_string()
    } else {
        format!("{BPFFS}/{written}")
    }
}

impl Provider for Iter {
    fn names(&self) -> &'static [&'static str] {
        &["iter", "it"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A BPF iterator over kernel objects (task, task_file, task_vma, ...), run once after BEGIN (or pinned in bpffs with :pin); ctx is its struct bpf_iter__NAME"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 1, 2, USAGE)?;
        if let Some(i) = ap.parts.iter().position(|p| has_wildcard(p)) {
            return Err(bad_attach_point(
                part_span(ap, i),
                "iter probes do not support wildcards",
                USAGE,
            ));
        }
        let name = &ap.parts[0];
        let known = kernel.iterators();
        // Without BTF the name cannot be checked: the load reports a missing iterator.
        if !known.is_empty() && !known.iter().any(|k| k == name) {
            return Err(unknown_with_suggestion(
                UNKNOWN_ITERATOR,
                part_span(ap, 0),
                "iterator",
                name,
                known.iter().map(String::as_str),
            ));
        }
        Ok(vec![resolved(
            ap,
            "iter",
            ap.parts.clone(),
            context(name, kernel),
        )])
    }
}

impl ProviderBackend for Iter {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Iter {
            name: attach.parts.first().cloned().unwrap_or_default(),
            pin: attach.parts.get(1).map(|p| pin_path(p)),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::Iterator
    }
}

/// Refuses a script in which an iterator probe shares the script with probes other than
/// BEGIN and END (another iterator included): the iteration runs once and ends the script,
/// as in bpftrace, whose documentation says iterators cannot be mixed.
pub fn check_alone(checked: &Checked) -> Result<(), Diagnostic> {
    let attaches: Vec<&ResolvedAttach> = checked
        .probes
        .iter()
        .flat_map(|p| &p.instances)
        .map(|i| &i.attach)
        .collect();
    let Some(iter) = attaches.iter().position(|a| a.ctx.provider == "iter") else {
        return Ok(());
    };
    let other = attaches
        .iter()
        .enumerate()
        .find(|(i, a)| *i != iter && !matches!(a.ctx.provider, "BEGIN" | "END"));
    let Some((_, other)) = other else {
        return Ok(());
    };
    let (message, label) = if other.ctx.provider == "iter" {
        (
            "a script can run only one iterator probe",
            "a second iterator",
        )
    } else {
        (
            "an iterator probe cannot be mixed with other probes",
            "not an iterator, BEGIN or END",
        )
    };
    Err(Diagnostic::error(NOT_ALONE, other.span, message)
        .with_label(label)
        .with_secondary(attaches[iter].span, "the iterator probe")
        .with_help(
            "an iter probe runs its iteration once after BEGIN and the script ends: it shares a script only with BEGIN and END; run the other probes as another script",
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;

    /// A kernel with three iterators.
    struct Iters;

    impl KernelInfo for Iters {
        fn iterators(&self) -> Vec<String> {
            ["task", "task_file", "task_vma"].map(String::from).to_vec()
        }
    }

    #[test]
    fn resolves_names_and_pins() {
        let r = Iter.resolve(&ap("iter:task"), &Iters).unwrap();
        assert_eq!(r[0].name, "iter:task");
        let Some(Type::Record(rec)) = &r[0].ctx.ctx else {
            panic!("ctx is not a record")
        };
        assert_eq!(rec.name, "struct bpf_iter__task");
        assert_eq!(
            Iter.attach_spec(&r[0]),
            AttachSpec::Iter {
                name: "task".into(),
                pin: None
            }
        );
        assert_eq!(Iter.attach_spec(&r[0]).section(), "iter");
        assert_eq!(Iter.context_layout(&r[0]), ContextLayout::Iterator);
        let p = Iter.resolve(&ap("it:task_file:files"), &Iters).unwrap();
        assert_eq!(p[0].name, "iter:task_file:files");
        assert_eq!(
            Iter.attach_spec(&p[0]),
            AttachSpec::Iter {
                name: "task_file".into(),
                pin: Some("/sys/fs/bpf/files".into())
            }
        );
        let abs = Iter
            .resolve(&ap("iter:task_vma:/sys/fs/bpf/x/vmas"), &Iters)
            .unwrap();
        assert_eq!(
            Iter.attach_spec(&abs[0]),
            AttachSpec::Iter {
                name: "task_vma".into(),
                pin: Some("/sys/fs/bpf/x/vmas".into())
            }
        );
    }

    /// `check_alone` of `src`, checked with [`Iters`].
    fn alone(src: &str) -> Result<(), Diagnostic> {
        let program = sonde_lang::syntax::parse(src).unwrap();
        let options = sonde_lang::sema::CheckOptions::default();
        let catalog = crate::catalog::SondeCatalog;
        let (checked, diags) = sonde_lang::sema::check(&program, &catalog, &Iters, &options);
        assert!(!diags.iter().any(Diagnostic::is_error), "{src}: {diags:#?}");
        check_alone(&checked)
    }

    #[test]
    fn iterators_share_a_script_with_begin_and_end_only() {
        assert!(alone("iter:task { }").is_ok());
        assert!(alone("BEGIN { } iter:task { } END { }").is_ok());
        assert!(alone("interval:s:1 { } profile:hz:99 { }").is_ok());
        let e = alone("iter:task { } interval:s:1 { }").unwrap_err();
        assert_eq!(e.code, NOT_ALONE);
        assert!(e.message.contains("cannot be mixed"), "{}", e.message);
        assert_eq!(e.span.start, 14);
        let e = alone("iter:task, iter:task_vma { }").unwrap_err();
        assert_eq!(e.code, NOT_ALONE);
        assert!(e.message.contains("only one"), "{}", e.message);
        assert_eq!(e.span.start, 11);
    }

    #[test]
    fn bad_names_shapes_and_wildcards() {
        let e = Iter.resolve(&ap("iter:tsk"), &Iters).unwrap_err();
        assert_eq!(e.code, UNKNOWN_ITERATOR);
        assert_eq!(e.help.as_deref(), Some("did you mean `task`?"));
        let e = Iter.resolve(&ap("iter:task*"), &Iters).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert!(e.message.contains("wildcards"), "{}", e.message);
        let e = Iter.resolve(&ap("iter:task:*"), &Iters).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        let e = Iter.resolve(&ap("iter"), &Iters).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        let e = Iter.resolve(&ap("iter:task:a:b"), &Iters).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        // Without BTF the name is taken as written.
        let none = sonde_lang::kernel::NoKernel;
        assert_eq!(Iter.resolve(&ap("iter:anything"), &none).unwrap().len(), 1);
    }
}
