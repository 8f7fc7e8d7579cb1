//! Questions about an expression answered when the program is built: `is_array`,
//! `is_integer`, `is_unsigned_integer`, `is_ptr`, `is_str`, `is_literal`, and `strcap` (the
//! capacity of a string or char array). The argument is type-checked but not evaluated.

use super::args::Args;
use super::function;
use crate::lower::cx::Val;
use sonde_lang::ast::{ExprKind, UnOp};
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// The rule of the `is_*` predicates: any one argument, a `bool` result.
fn predicate(call: &CallCheck<'_>, sig: &'static str) -> Result<Type, Diagnostic> {
    Args::new(call, sig).arity(1, 1)?;
    Ok(Type::Bool)
}

/// Whether `e` is a literal (`1`, `-1`, `true`, `"a"`).
fn is_literal(e: &sonde_lang::ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::Str(_) => true,
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => matches!(expr.kind, ExprKind::Int(_)),
        _ => false,
    }
}

/// Declares a type predicate: `$test` decides from the argument's type.
macro_rules! type_predicate {
    ($(#[$m:meta])* $ty:ident, $name:literal, $sig:literal, $doc:literal, |$t:ident| $test:expr) => {
        function!(
            $(#[$m])* $ty, $name, $sig, $doc, unsafe = false,
            |call| { predicate(call, $sig) },
            lower |cx, call| {
                let $t = cx.type_of(&call.args[0]);
                Ok(Val::Int(cx.imm(i64::from($test))))
            }
        );
    };
}

type_predicate!(
    /// `is_array(e)`: whether `e` is an array.
    IsArray, "is_array", "is_array(expr)", "True when the expression is an array (decided when the program is built)",
    |t| matches!(t, Type::Array { .. })
);
type_predicate!(
    /// `is_integer(e)`: whether `e` is an integer.
    IsInteger, "is_integer", "is_integer(expr)", "True when the expression is an integer (decided when the program is built)",
    |t| matches!(t, Type::Int { .. })
);
type_predicate!(
    /// `is_unsigned_integer(e)`: whether `e` is an unsigned integer.
    IsUnsignedInteger, "is_unsigned_integer", "is_unsigned_integer(expr)",
    "True when the expression is an unsigned integer (decided when the program is built)",
    |t| matches!(t, Type::Int { signed: false, .. })
);
type_predicate!(
    /// `is_ptr(e)`: whether `e` is a pointer.
    IsPtr, "is_ptr", "is_ptr(expr)", "True when the expression is a pointer (decided when the program is built)",
    |t| matches!(t, Type::Ptr { .. })
);
type_predicate!(
    /// `is_str(e)`: whether `e` is a string.
    IsStr, "is_str", "is_str(expr)", "True when the expression is a string (decided when the program is built)",
    |t| matches!(t, Type::Str { .. })
);

function!(
    /// `is_literal(e)`: whether `e` is written as a literal.
    IsLiteral, "is_literal", "is_literal(expr)", "True when the expression is a literal such as 1, true or \"hello\"",
    unsafe = false,
    |call| { predicate(call, "is_literal(expr)") },
    lower |cx, call| { Ok(Val::Int(cx.imm(i64::from(is_literal(&call.args[0]))))) }
);

function!(
    /// `strcap(s)`: the capacity of a string or char array.
    Strcap, "strcap", "strcap(str)",
    "Capacity of a string or char array: its size in bytes (the NUL included), not the length of its text",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strcap(str)");
        a.arity(1, 1)?;
        match a.ty(0) {
            Type::Str { .. } => Ok(Type::I64),
            Type::Array { elem, .. } if matches!(**elem, Type::Int { bits: 8, .. }) => Ok(Type::I64),
            _ => Err(a.error(0, "a string or a char array")),
        }
    },
    lower |cx, call| {
        let n = match cx.type_of(&call.args[0]) {
            Type::Str { size } => size,
            Type::Array { len, .. } => len,
            _ => 0,
        };
        Ok(Val::Int(cx.imm(i64::from(n))))
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{check, int, val};

    #[test]
    fn rules() {
        assert_eq!(check(&IsStr, vec![val(Type::U64)]).unwrap(), Type::Bool);
        assert_eq!(check(&IsLiteral, vec![int(1)]).unwrap(), Type::Bool);
        assert_eq!(
            check(&Strcap, vec![val(Type::Str { size: 16 })]).unwrap(),
            Type::I64
        );
        assert!(check(&Strcap, vec![val(Type::U64)]).is_err());
    }
}
