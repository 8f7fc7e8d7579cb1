//! Registry of functions (aggregations excepted, see `aggs`): one unit struct per function in
//! themed files, each with its type rule and precise argument diagnostics.

// `Diagnostic` is the contracts' error type; boxing it would only move the allocation.
#![allow(clippy::result_large_err)]

use super::FunctionBackend;

pub mod args;
pub mod attach_params;
pub mod bytes;
pub mod debugf;
pub mod getopt;
pub mod input;
pub mod log;
pub mod maps;
pub mod meta;
pub mod misc;
pub mod net;
pub mod path;
pub mod print;
pub mod stack;
pub mod string;
pub mod symbols;
pub mod syscalls;
pub mod task;
pub mod texts;
pub mod time;
pub mod types;
pub mod unavailable;

#[cfg(test)]
pub(crate) mod testutil;

/// Declares a function entry: a unit struct implementing `Function` (with the given type rule)
/// and `FunctionBackend` (with the given `lower` body, or the default that reports the function
/// as not supported by the BPF backend).
macro_rules! function {
    ($(#[$m:meta])* $ty:ident, $name:literal, $sig:literal, $doc:literal, unsafe = $unsafe:literal,
     |$call:ident| $body:block $(, lower |$cx:ident, $lc:ident| $lbody:block)?) => {
        function!($(#[$m])* $ty, $name, $sig, $doc, unsafe = $unsafe, unchecked = &[], |$call| $body
            $(, lower |$cx, $lc| $lbody)?);
    };
    ($(#[$m:meta])* $ty:ident, $name:literal, $sig:literal, $doc:literal, unsafe = $unsafe:literal,
     unchecked = $unchecked:expr, |$call:ident| $body:block
     $(, lower |$cx:ident, $lc:ident| $lbody:block)?) => {
        $(#[$m])*
        pub struct $ty;

        impl sonde_lang::catalog::Function for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn signature(&self) -> &'static str {
                $sig
            }
            fn doc(&self) -> &'static str {
                $doc
            }
            fn check(
                &self,
                $call: &sonde_lang::catalog::CallCheck<'_>,
            ) -> Result<sonde_lang::types::Type, sonde_lang::diag::Diagnostic> {
                $body
            }
            fn is_unsafe(&self) -> bool {
                $unsafe
            }
            fn unchecked_args(&self) -> &'static [usize] {
                $unchecked
            }
        }

        function!(@backend $ty $(, |$cx, $lc| $lbody)?);
    };
    (@backend $ty:ident) => {
        impl crate::catalog::FunctionBackend for $ty {}
    };
    (@backend $ty:ident, |$cx:ident, $lc:ident| $lbody:block) => {
        impl crate::catalog::FunctionBackend for $ty {
            fn lower(
                &self,
                $cx: &mut crate::lower::cx::LowerCx<'_>,
                $lc: &crate::lower::cx::LowerCall<'_>,
            ) -> Result<crate::lower::cx::Val, sonde_lang::diag::Diagnostic> {
                $lbody
            }
        }
    };
}
pub(crate) use function;

/// Every entry of this registry.
pub static ALL: &[&'static dyn FunctionBackend] = &[
    &print::Printf,
    &print::Print,
    &print::Time,
    &print::Cat,
    &print::System,
    &print::Join,
    &print::Exit,
    &string::Str,
    &string::Buf,
    &string::Strncmp,
    &string::Strcontains,
    &string::Strlen,
    &string::StrConcat,
    &bytes::Strstr,
    &bytes::Memcmp,
    &bytes::AssertStr,
    &net::Ntop,
    &net::Pton,
    &net::Macaddr,
    &symbols::Ksym,
    &symbols::Usym,
    &symbols::Kaddr,
    &symbols::PercpuKaddr,
    &symbols::Uaddr,
    &symbols::Kptr,
    &symbols::Uptr,
    &symbols::Reg,
    &maps::Delete,
    &maps::Clear,
    &maps::Zero,
    &maps::Len,
    &maps::HasKey,
    &maps::Find,
    &types::Sizeof,
    &types::Offsetof,
    &types::ContainerOf,
    &time::Strftime,
    &time::DeltaOf,
    &misc::Cgroupid,
    &misc::InCgroup,
    &misc::CgroupPath,
    &misc::Signal,
    &misc::SignalThread,
    &misc::IsErr,
    &misc::WriteUser,
    &misc::Bswap,
    &misc::Override,
    &stack::KstackFn,
    &stack::UstackFn,
    &getopt::Getopt,
    &syscalls::SyscallName,
    &input::Field,
    &input::Num,
    &task::PpidOf,
    &task::CommOf,
    &task::PcommOf,
    &task::LeaderTidOf,
    &task::LeaderCommOf,
    &task::PidNs,
    &task::TidNs,
    &task::NsecsOf,
    &texts::Strerror,
    &texts::SignalName,
    &debugf::Debugf,
    &log::Errorf,
    &log::Warnf,
    &log::Fail,
    &log::StaticAssert,
    &log::Assert,
    &meta::IsArray,
    &meta::IsInteger,
    &meta::IsUnsignedInteger,
    &meta::IsPtr,
    &meta::IsStr,
    &meta::IsLiteral,
    &meta::Strcap,
    &path::Path,
    &unavailable::SKBOUTPUT,
    &unavailable::SOCKET_COOKIE,
    &unavailable::KFUNC_ALLOWED,
    &unavailable::KFUNC_EXIST,
    &unavailable::UNWATCH,
];
