//! Network address functions: `ntop`, `pton` and `macaddr`.

use super::args::Args;
use super::function;
use sonde_lang::types::Type;

/// True for the address forms `ntop` accepts: an IPv4 integer, or 4/16 bytes.
fn is_address(t: &Type) -> bool {
    match t {
        t if t.is_integer() => true,
        Type::Array { elem, len } => elem.size() == 1 && (*len == 4 || *len == 16),
        Type::Str { size } => *size == 4 || *size == 16,
        _ => false,
    }
}

function!(
    /// `ntop([af,] addr)`: an IPv4 or IPv6 address, printed in text form.
    Ntop, "ntop", "ntop([af,] addr)",
    "Formats an IPv4 (integer or 4 bytes) or IPv6 (16 bytes) address; af is AF_INET or AF_INET6",
    unsafe = false,
    |call| {
        let a = Args::new(call, "ntop([af,] addr)");
        a.arity(1, 2)?;
        if a.len() == 2 {
            a.int(0, "an integer address family (AF_INET = 2, AF_INET6 = 10)")?;
        }
        let addr = a.len() - 1;
        if !is_address(a.ty(addr)) {
            return Err(a.error(addr, "an IPv4 address (integer or 4 bytes) or an IPv6 address (16 bytes)"));
        }
        Ok(Type::Inet)
    },
    lower |cx, call| {
        let addr = &call.args[call.args.len() - 1];
        let ty = cx.type_of(addr);
        // Straight into an event's or key's field when it is one (zeroed, 8-aligned).
        let buf = match cx.take_place(call.span, 24) {
            Some(field) => field,
            None => cx.alloc_zeroed(24),
        };
        let v = cx.lower_expr(addr)?;
        let (family, len) = match &ty {
            Type::Array { len: 16, .. } => (10, 16),
            _ => (2, 4),
        };
        let family = match call.args.len() {
            2 => crate::lower::cx::Val::Int(cx.lower_int(&call.args[0])?),
            _ => crate::lower::cx::Val::Int(cx.imm(family)),
        };
        cx.write_val(family, &Type::U32, buf, 0, 4);
        if ty.is_integer() {
            let r = cx.int(v, &ty);
            cx.store(buf, 8, crate::ir::Operand::Reg(r), crate::ir::Width::W32);
        } else {
            cx.read_place_into(v, buf, 8, len);
        }
        Ok(crate::lower::cx::Val::Mem { ptr: buf, size: 24 })
    }
);

function!(
    /// `pton(literal)`: the bytes of an IPv4 (4) or IPv6 (16) address, at compile time.
    Pton, "pton", "pton(addr)", "Converts an IPv4 or IPv6 address literal to its bytes (4 or 16)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "pton(addr)");
        a.arity(1, 1)?;
        let text = a.literal_text(0, "an IP address string literal")?;
        let len = match text.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(_)) => 4,
            Ok(std::net::IpAddr::V6(_)) => 16,
            Err(_) => return Err(a.error(0, "a valid IPv4 or IPv6 address")),
        };
        Ok(Type::Array { elem: Box::new(Type::U8), len })
    },
    lower |cx, call| {
        let text = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let bytes = match text.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(a)) => a.octets().to_vec(),
            Ok(std::net::IpAddr::V6(a)) => a.octets().to_vec(),
            Err(_) => return Err(cx.unsupported(call.span, "`pton()` of this text")),
        };
        let ptr = cx.alloc(sonde_lang::types::align_up(bytes.len() as u32, 8));
        for (i, chunk) in bytes.chunks(4).enumerate() {
            let v = u32::from_le_bytes(chunk.try_into().expect("4-byte chunk"));
            cx.store(ptr, (i * 4) as i32, crate::ir::Operand::Imm(i64::from(v as i32)), crate::ir::Width::W32);
        }
        Ok(crate::lower::cx::Val::Mem { ptr, size: bytes.len() as u32 })
    }
);

function!(
    /// `macaddr(addr)`: a 6-byte MAC address, printed as `aa:bb:cc:dd:ee:ff`.
    Macaddr, "macaddr", "macaddr(addr)", "Formats a 6-byte MAC address (an array or a pointer to it)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "macaddr(addr)");
        a.arity(1, 1)?;
        match a.ty(0) {
            Type::Ptr { .. } => {}
            t if t.is_integer() => {}
            Type::Array { elem, len } if elem.size() == 1 && *len >= 6 => {}
            Type::Str { size } if *size >= 6 => {}
            _ => return Err(a.error(0, "an array of at least 6 bytes, a pointer to one or an address")),
        }
        Ok(Type::MacAddr)
    },
    lower |cx, call| {
        use crate::lower::cx::{PlaceSpace, Val};
        let arg_ty = cx.type_of(&call.args[0]);
        let buf = cx.alloc_zeroed(6);
        let place = match &arg_ty {
            Type::Array { .. } | Type::Str { .. } => cx.lower_expr(&call.args[0])?,
            _ => {
                let space = match &arg_ty {
                    Type::Ptr { space, .. } => PlaceSpace::of_pointer(*space, cx.attach.ctx.user),
                    _ if cx.attach.ctx.user => PlaceSpace::User,
                    _ => PlaceSpace::Any,
                };
                let p = cx.lower_int(&call.args[0])?;
                Val::Place { base: p, offset: 0, space }
            }
        };
        cx.read_place_into(place, buf, 0, 6);
        Ok(Val::Mem { ptr: buf, size: 6 })
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, int, lit, val};

    fn bytes(n: u32) -> Type {
        Type::Array {
            elem: Box::new(Type::U8),
            len: n,
        }
    }

    #[test]
    fn ntop_forms() {
        assert_eq!(check(&Ntop, vec![val(Type::U32)]).unwrap(), Type::Inet);
        assert_eq!(
            check(&Ntop, vec![int(10), val(bytes(16))]).unwrap(),
            Type::Inet
        );
        let e = check(&Ntop, vec![int(2), val(bytes(5))]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        assert_eq!(
            check(&Ntop, vec![lit("x"), val(Type::U32)])
                .unwrap_err()
                .span,
            arg_span(0)
        );
    }

    #[test]
    fn pton_and_macaddr() {
        assert_eq!(check(&Pton, vec![lit("127.0.0.1")]).unwrap(), bytes(4));
        assert_eq!(check(&Pton, vec![lit("::1")]).unwrap(), bytes(16));
        assert_eq!(check(&Pton, vec![lit("nope")]).unwrap_err().code, ARG_TYPE);
        assert_eq!(check(&Macaddr, vec![val(bytes(6))]).unwrap(), Type::MacAddr);
        assert_eq!(
            check(&Macaddr, vec![val(Type::U64)]).unwrap(),
            Type::MacAddr
        );
        assert_eq!(
            check(&Macaddr, vec![val(bytes(4))]).unwrap_err().code,
            ARG_TYPE
        );
    }
}
