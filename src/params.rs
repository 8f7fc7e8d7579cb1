//! Script parameters: positional (`$1`) and named (`--name[=value]`, read by `getopt`).

/// Separates named parameters (`--name[=value]`, given after `--`) from positional ones.
pub fn split_named(args: Vec<String>) -> (Vec<(String, String)>, Vec<String>) {
    let mut named = Vec::new();
    let mut positional = Vec::new();
    for a in args {
        match a.strip_prefix("--").filter(|n| !n.is_empty()) {
            Some(n) => {
                let (k, v) = n.split_once('=').unwrap_or((n, ""));
                named.push((k.to_string(), v.to_string()));
            }
            None => positional.push(a),
        }
    }
    (named, positional)
}
