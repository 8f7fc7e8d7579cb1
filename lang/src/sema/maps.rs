//! Map types unified over the whole program.
//!
//! A map's key type and value type are fixed program-wide: the first use decides, later uses
//! must unify with it (see [`super::unify`]). Because a probe may read a map that a later
//! probe assigns, the checker runs twice: the first (muted) pass only learns map types, which
//! the second pass consults ([`Maps::prior`]) when it reads a map it has not yet seen assigned.

use super::MapInfo;
use super::errors::{MAP_KEY_MISMATCH, MAP_TYPE_MISMATCH};
use super::unify::{promote, unify};
use crate::diag::Diagnostic;
use crate::span::Span;
use crate::types::Type;
use std::collections::BTreeMap;

/// What is known about one map during checking.
#[derive(Clone, Debug, Default)]
pub(crate) struct MapState {
    /// `None`: no keyed access seen yet; `Some(None)`: used without keys; `Some(Some(t))`: keys.
    pub key: Option<Option<Type>>,
    /// Where the key kind was first established.
    pub key_span: Span,
    /// The value type, once assigned.
    pub value: Option<Type>,
    /// Where the value type was first established.
    pub value_span: Span,
    /// The first use of the map.
    pub span: Span,
    /// An assignment had an error: reads stay silent instead of "never assigned".
    pub poisoned: bool,
}

/// All maps of the program.
#[derive(Debug, Default)]
pub(crate) struct Maps {
    /// Maps seen in the current pass.
    pub cur: BTreeMap<String, MapState>,
    /// The final state of the previous pass (empty in the first pass).
    pub prior: BTreeMap<String, MapState>,
    /// The least size of a string stored in a map (`CheckOptions::wide_map_strings`).
    pub min_str: Option<u32>,
}

/// `t` with its strings (also inside tuples) at least `min` bytes.
fn widen_strings(t: Type, min: Option<u32>) -> Type {
    match (t, min) {
        (Type::Str { size }, Some(m)) => Type::Str { size: size.max(m) },
        (Type::Tuple(items), Some(_)) => {
            Type::Tuple(items.into_iter().map(|i| widen_strings(i, min)).collect())
        }
        (t, _) => t,
    }
}

/// `@name` as written.
fn shown(name: &str) -> String {
    format!("@{name}")
}

/// `keyed by T` / `without keys`, for labels.
fn key_text(k: &Option<Type>) -> String {
    match k {
        Some(t) => format!("keyed by {t}"),
        None => "without keys".to_string(),
    }
}

impl Maps {
    /// Starts a new pass, keeping what the last one learned as `prior`.
    pub fn next_pass(&mut self) {
        self.prior = std::mem::take(&mut self.cur);
    }

    fn entry(&mut self, name: &str, span: Span) -> &mut MapState {
        self.cur
            .entry(name.to_string())
            .or_insert_with(|| MapState {
                span,
                ..MapState::default()
            })
    }

    /// Records an access with keys `key` (`None` = no keys) at `span`.
    pub fn use_key(&mut self, name: &str, key: Option<Type>, span: Span) -> Result<(), Diagnostic> {
        let min = self.min_str;
        let key = key.map(|k| widen_strings(promote(&k), min));
        let st = self.entry(name, span);
        match &st.key {
            None => {
                st.key = Some(key);
                st.key_span = span;
                Ok(())
            }
            Some(old) => {
                let merged = match (old, &key) {
                    (None, None) => Some(None),
                    (Some(a), Some(b)) => unify(a, b).map(Some),
                    _ => None,
                };
                match merged {
                    Some(m) => {
                        st.key = Some(m);
                        Ok(())
                    }
                    None => Err(Diagnostic::error(
                        MAP_KEY_MISMATCH,
                        span,
                        format!("map `{}` is used with different keys", shown(name)),
                    )
                    .with_label(key_text(&key))
                    .with_secondary(st.key_span, format!("first used {}", key_text(old)))
                    .with_help("a map has one key type in the whole program")),
                }
            }
        }
    }

    /// Records that a value of type `ty` is stored at `span`.
    pub fn assign(&mut self, name: &str, ty: &Type, span: Span) -> Result<(), Diagnostic> {
        let ty = widen_strings(promote(ty), self.min_str);
        let st = self.entry(name, span);
        match &st.value {
            None => {
                st.value = Some(ty);
                st.value_span = span;
                Ok(())
            }
            Some(old) => match unify(old, &ty) {
                Some(m) => {
                    st.value = Some(m);
                    Ok(())
                }
                None => Err(Diagnostic::error(
                    MAP_TYPE_MISMATCH,
                    span,
                    format!(
                        "map `{}` is assigned values of different types",
                        shown(name)
                    ),
                )
                .with_label(format!("this is {ty}"))
                .with_secondary(st.value_span, format!("first assigned {old} here"))
                .with_help("a map holds one type of value in the whole program")),
            },
        }
    }

    /// Notes that an assignment to `name` had an error (so reads must not report it).
    pub fn poison(&mut self, name: &str, span: Span) {
        self.entry(name, span).poisoned = true;
    }

    /// True when an assignment to `name` had an error, in this pass or the previous one.
    pub fn is_poisoned(&self, name: &str) -> bool {
        self.cur.get(name).is_some_and(|s| s.poisoned)
            || self.prior.get(name).is_some_and(|s| s.poisoned)
    }

    /// The value type of a map, from this pass or the previous one.
    pub fn value(&self, name: &str) -> Option<&Type> {
        self.cur
            .get(name)
            .and_then(|s| s.value.as_ref())
            .or_else(|| self.prior.get(name).and_then(|s| s.value.as_ref()))
    }

    /// The key kind of a map (`Some(None)` for a map without keys), from this pass or the last.
    pub fn key(&self, name: &str) -> Option<Option<Type>> {
        self.cur
            .get(name)
            .and_then(|s| s.key.clone())
            .or_else(|| self.prior.get(name).and_then(|s| s.key.clone()))
    }

    /// The maps that got a value, as the public summary.
    pub fn infos(&self) -> BTreeMap<String, MapInfo> {
        self.cur
            .iter()
            .filter_map(|(name, st)| {
                Some((
                    name.clone(),
                    MapInfo {
                        name: name.clone(),
                        key: st.key.clone().flatten(),
                        value: st.value.clone()?,
                        span: st.span,
                        decl: None,
                    },
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AggKind;

    #[test]
    fn values_unify_and_conflict() {
        let mut m = Maps::default();
        let (a, b) = (Span::new(0, 2), Span::new(10, 12));
        m.assign("x", &Type::Agg(AggKind::Count), a).unwrap();
        let e = m.assign("x", &Type::I64, b).unwrap_err();
        assert_eq!(e.code, MAP_TYPE_MISMATCH);
        assert_eq!(e.span, b);
        assert_eq!(e.secondary[0].0, a);
        m.assign("s", &Type::Str { size: 16 }, a).unwrap();
        m.assign("s", &Type::Str { size: 64 }, b).unwrap();
        assert_eq!(m.value("s"), Some(&Type::Str { size: 64 }));
        m.assign("i", &Type::U32, a).unwrap();
        assert_eq!(m.value("i"), Some(&Type::U64));
    }

    #[test]
    fn strings_widen_to_the_least_size_given() {
        let mut m = Maps {
            min_str: Some(64),
            ..Maps::default()
        };
        m.assign("s", &Type::Str { size: 3 }, Span::default())
            .expect("a string");
        assert_eq!(m.value("s"), Some(&Type::Str { size: 64 }));
        let key = Type::Tuple(vec![Type::Str { size: 16 }, Type::U64]);
        m.use_key("k", Some(key), Span::default()).expect("a key");
        assert_eq!(
            m.key("k"),
            Some(Some(Type::Tuple(vec![Type::Str { size: 64 }, Type::U64])))
        );
        // Without it, a string keeps its size.
        let mut plain = Maps::default();
        plain
            .assign("s", &Type::Str { size: 3 }, Span::default())
            .expect("a string");
        assert_eq!(plain.value("s"), Some(&Type::Str { size: 3 }));
    }

    #[test]
    fn keys_must_agree() {
        let mut m = Maps::default();
        m.use_key("x", Some(Type::U32), Span::new(0, 1)).unwrap();
        assert_eq!(m.key("x"), Some(Some(Type::U64)));
        let e = m.use_key("x", None, Span::new(5, 6)).unwrap_err();
        assert_eq!(e.code, MAP_KEY_MISMATCH);
        m.next_pass();
        assert_eq!(m.key("x"), Some(Some(Type::U64)));
        assert!(m.cur.is_empty());
    }
}
