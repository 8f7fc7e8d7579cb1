//! Registry of functions (aggregations excepted, see `aggs`): one unit struct per function in
//! themed files, each with its type rule and precise argument diagnostics.

use super::FunctionBackend;

pub mod args;
pub mod maps;
pub mod misc;
pub mod net;
pub mod print;
pub mod stack;
pub mod string;
pub mod symbols;
pub mod time;
pub mod types;

#[cfg(test)]
pub(crate) mod testutil;

/// Declares a function entry: a unit struct implementing `Function` (with the given type rule)
/// and the default `FunctionBackend`.
macro_rules! function {
    ($(#[$m:meta])* $ty:ident, $name:literal, $sig:literal, $doc:literal, unsafe = $unsafe:literal,
     |$call:ident| $body:block) => {
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
        }

        impl crate::catalog::FunctionBackend for $ty {}
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
    &net::Ntop,
    &net::Pton,
    &net::Macaddr,
    &symbols::Ksym,
    &symbols::Usym,
    &symbols::Kaddr,
    &symbols::Uaddr,
    &symbols::Kptr,
    &symbols::Uptr,
    &symbols::Reg,
    &maps::Delete,
    &maps::Clear,
    &maps::Zero,
    &maps::Len,
    &maps::HasKey,
    &types::Sizeof,
    &types::Offsetof,
    &time::Strftime,
    &misc::Cgroupid,
    &misc::CgroupPath,
    &misc::Signal,
    &misc::Bswap,
    &misc::Override,
    &stack::KstackFn,
    &stack::UstackFn,
];
