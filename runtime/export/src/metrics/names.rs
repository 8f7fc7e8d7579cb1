//! Metric and label names: `sonde_<script>_<map>`, labels named after the key expressions,
//! everything made to fit Prometheus's `[a-zA-Z_][a-zA-Z0-9_]*`.

/// `name` with every character Prometheus does not allow in a name replaced by `_`, and a
/// leading digit prefixed with `_`; never empty.
pub fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The metric family name of map `@map` of `script`: `sonde_<script>_<map>` (`sonde_<script>`
/// for the anonymous map `@`).
pub fn metric_name(script: &str, map: &str) -> String {
    if map.is_empty() {
        format!("sonde_{}", sanitize(script))
    } else {
        format!("sonde_{}_{}", sanitize(script), sanitize(map))
    }
}

/// The label names of a map's `n` key elements: the names its key expressions go by
/// (`comm`, `args.rwbs` → `args_rwbs`), `keyN` where there is none, a name given twice or
/// reserved (`le`, `script`, `__*`) made unique with its position. Names given for another
/// number of elements (a tuple variable as the key) are not used.
pub fn label_names(given: &[String], n: usize) -> Vec<String> {
    let given = if given.len() == n { given } else { &[] };
    let mut out: Vec<String> = Vec::with_capacity(n);
    for i in 0..n {
        let name = given
            .get(i)
            .filter(|g| !g.is_empty())
            .map(|g| sanitize(g))
            .unwrap_or_else(|| format!("key{i}"));
        let reserved = name == "le" || name == "script" || name.starts_with("__");
        if reserved || out.contains(&name) {
            out.push(format!("{}_{i}", name.trim_start_matches('_')).replace("__", "_"));
        } else {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_prometheus() {
        assert_eq!(
            metric_name("bio-latency", "lat_us"),
            "sonde_bio_latency_lat_us"
        );
        assert_eq!(metric_name("9p", ""), "sonde__9p");
        assert_eq!(sanitize("args.rwbs"), "args_rwbs");
    }

    #[test]
    fn labels_from_key_expressions() {
        let given = vec!["comm".to_string(), String::new(), "comm".to_string()];
        assert_eq!(label_names(&given, 3), ["comm", "key1", "comm_2"]);
        assert_eq!(label_names(&given, 2), ["key0", "key1"]);
        assert_eq!(label_names(&["le".to_string()], 1), ["le_0"]);
        assert_eq!(label_names(&["__x".to_string()], 1), ["x_0"]);
    }
}
