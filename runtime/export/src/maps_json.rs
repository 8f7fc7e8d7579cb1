//! Every map as one JSON document (`GET /maps`): `{"maps": [{"name": "@x", "entries":
//! [{"key": ..., "value": ...}]}]}`, keys and values as `-f json` prints them.

use sonde_present::output::json::{json_string, json_value};
use sonde_present::output::{MapDump, Resolver};
use std::fmt::Write;

/// `dumps` as a JSON document.
pub fn maps_json(dumps: &[MapDump], r: &dyn Resolver) -> Vec<u8> {
    let mut s = String::from("{\"maps\": [");
    for (i, d) in dumps.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let name = json_string(format!("@{}", d.name).as_bytes());
        let _ = write!(s, "{{\"name\": {name}, \"entries\": [");
        for (j, (k, v)) in d.entries.iter().enumerate() {
            if j > 0 {
                s.push_str(", ");
            }
            let (k, v) = (json_value(k, r), json_value(v, r));
            let _ = write!(s, "{{\"key\": {k}, \"value\": {v}}}");
        }
        s.push_str("]}");
    }
    s.push_str("]}\n");
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::value::{AggValue, Value};
    use sonde_lang::types::Type;
    use sonde_present::output::NoResolver;

    #[test]
    fn maps_as_one_document() {
        let d = MapDump {
            name: "c".into(),
            value_type: Type::U64,
            entries: vec![(Value::Str(b"dd\"".to_vec()), Value::Agg(AggValue::Count(2)))],
        };
        let out = String::from_utf8(maps_json(&[d], &NoResolver)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["maps"][0]["name"], "@c");
        assert_eq!(v["maps"][0]["entries"][0]["key"], "dd\"");
        assert_eq!(v["maps"][0]["entries"][0]["value"], 2);
    }
}
