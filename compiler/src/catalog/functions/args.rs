//! Argument checks shared by the function type rules, all producing precise diagnostics:
//! `sonde::sema::arg_type` on the offending argument (with the expected type and the
//! signature) and `sonde::sema::arity` on the call.

use sonde_lang::ast::{Expr, ExprKind};
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Code of an argument of the wrong type or kind.
pub const ARG_TYPE: &str = "sonde::sema::arg_type";

/// A call being checked together with the signature its diagnostics quote.
pub struct Args<'c, 'a> {
    /// The call.
    pub call: &'c CallCheck<'a>,
    /// The function's signature.
    pub sig: &'static str,
}

impl<'c, 'a> Args<'c, 'a> {
    /// Wraps `call` with `sig`.
    pub fn new(call: &'c CallCheck<'a>, sig: &'static str) -> Self {
        Args { call, sig }
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.call.args.len()
    }

    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.call.args.is_empty()
    }

    /// Checks that there are between `min` and `max` arguments.
    pub fn arity(&self, min: usize, max: usize) -> Result<(), Diagnostic> {
        let n = self.len();
        if n < min || n > max {
            Err(self.call.arity_error(self.sig))
        } else {
            Ok(())
        }
    }

    /// The checked type of argument `i` (`Void` when absent).
    pub fn ty(&self, i: usize) -> &'c Type {
        static VOID: Type = Type::Void;
        self.call.arg_types.get(i).unwrap_or(&VOID)
    }

    /// The expression of argument `i`.
    pub fn expr(&self, i: usize) -> Option<&'c Expr> {
        self.call.args.get(i)
    }

    /// The span of argument `i` (the call's span when absent).
    pub fn span(&self, i: usize) -> Span {
        self.call.args.get(i).map_or(self.call.span, |e| e.span)
    }

    /// An `arg_type` diagnostic: argument `i` should have been `expected`.
    pub fn error(&self, i: usize, expected: &str) -> Diagnostic {
        let found = match self.expr(i).map(|e| &e.kind) {
            Some(ExprKind::Map { name, keys }) if keys.is_empty() => {
                format!("this is the map `@{name}`")
            }
            _ => format!("this is {}", describe(self.ty(i))),
        };
        Diagnostic::error(
            ARG_TYPE,
            self.span(i),
            format!(
                "argument {} of `{}` must be {expected}",
                i + 1,
                self.call.name.name
            ),
        )
        .with_label(found)
        .with_help(format!("the signature is `{}`", self.sig))
    }

    /// Argument `i` must be an integer (or bool/enum).
    pub fn int(&self, i: usize, what: &str) -> Result<(), Diagnostic> {
        if self.ty(i).is_integer() {
            Ok(())
        } else {
            Err(self.error(i, what))
        }
    }

    /// Argument `i` must be a string (`string[N]`).
    pub fn string(&self, i: usize) -> Result<u32, Diagnostic> {
        match self.ty(i) {
            Type::Str { size } => Ok(*size),
            _ => Err(self.error(i, "a string")),
        }
    }

    /// Argument `i` must be a string literal (or a positional parameter); returns its bytes.
    pub fn literal(&self, i: usize, what: &str) -> Result<Vec<u8>, Diagnostic> {
        self.call.const_str(i).ok_or_else(|| self.error(i, what))
    }

    /// Argument `i` must be a string literal holding UTF-8 text.
    pub fn literal_text(&self, i: usize, what: &str) -> Result<String, Diagnostic> {
        String::from_utf8(self.literal(i, what)?).map_err(|_| self.error(i, what))
    }

    /// Argument `i` must be a compile-time integer.
    pub fn const_int(&self, i: usize, what: &str) -> Result<i64, Diagnostic> {
        self.call.const_int(i).ok_or_else(|| self.error(i, what))
    }

    /// Argument `i` must be a whole map (`@m`, no keys); returns its name.
    pub fn whole_map(&self, i: usize) -> Result<&'c str, Diagnostic> {
        match self.expr(i).map(|e| &e.kind) {
            Some(ExprKind::Map { name, keys }) if keys.is_empty() => Ok(name.as_str()),
            _ => Err(self.error(i, "a map such as `@name`")),
        }
    }
}

/// A type with its article for labels: `a uint64`, `an int32`, `a string[16]`.
pub fn describe(t: &Type) -> String {
    let s = t.to_string();
    let article = if s.starts_with(['a', 'e', 'i', 'o']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_types() {
        assert_eq!(describe(&Type::U64), "a uint64");
        assert_eq!(describe(&Type::I32), "an int32");
        assert_eq!(describe(&Type::Str { size: 16 }), "a string[16]");
    }
}
