//! Registry of probe providers: one file per probe type (or pair of entry/return types),
//! each holding its names, attach point parsing, probe context and attach mechanism.

// `Diagnostic` is the contracts' error type; boxing it would only move the allocation.
#![allow(clippy::result_large_err)]

use super::ProviderBackend;

pub mod begin_end;
pub mod common;
pub mod fentry;
pub mod hardware;
pub mod input;
pub mod interval;
pub mod iter;
pub mod kprobe;
pub mod perf_table;
pub mod profile;
pub mod rawtracepoint;
pub mod replay;
pub mod self_signal;
pub mod software;
pub mod syscall_dispatch;
pub mod test_bench;
pub mod timer;
pub mod tracepoint;
pub mod uprobe;
pub mod usdt;
pub mod watchpoint;

#[cfg(test)]
pub(crate) mod fixture;

/// Every entry of this registry.
pub static ALL: &[&'static dyn ProviderBackend] = &[
    &begin_end::Begin,
    &begin_end::End,
    &tracepoint::Tracepoint,
    &rawtracepoint::RawTracepoint,
    &kprobe::Kprobe,
    &kprobe::Kretprobe,
    &uprobe::Uprobe,
    &uprobe::Uretprobe,
    &usdt::Usdt,
    &profile::Profile,
    &interval::Interval,
    &software::Software,
    &hardware::Hardware,
    &watchpoint::Watchpoint,
    &self_signal::SelfProbe,
    &test_bench::TEST,
    &test_bench::BENCH,
    &fentry::Fentry,
    &fentry::Fexit,
    &iter::Iter,
    &input::Input,
    &replay::Replay,
];
