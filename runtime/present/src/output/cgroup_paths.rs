//! Cgroup path texts cut to the hierarchies a `cgroup_path(id, filter)` call names.

use sonde_lang::glob::wildcard_match;

/// The entries of a cgroup paths text (`name:/path,name:/path`, as the resolver gives it) in the hierarchies whose name matches wildcard
/// `filter`, joined with `,` again: how a resolver that only has the text (a recording's)
/// filters it. An entry starts at a `,` once the one before it has its `:/` and when what
/// follows reads `name:/` (hierarchy names may hold a `,`, as `cpu,cpuacct`; a path holding
/// a `,` followed by such text would be cut there).
pub fn filter_paths(paths: &str, filter: &str) -> String {
    let mut entries: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in paths.match_indices(',') {
        if paths[start..i].contains(":/") && starts_entry(&paths[i + 1..]) {
            entries.push(&paths[start..i]);
            start = i + 1;
        }
    }
    entries.push(&paths[start..]);
    entries
        .into_iter()
        .filter(|e| wildcard_match(filter, e.split_once(':').map_or(*e, |(n, _)| n)))
        .collect::<Vec<_>>()
        .join(",")
}

/// True when `rest` begins with `name:/`, `name` holding neither `:` nor `/`.
fn starts_entry(rest: &str) -> bool {
    rest.split_once(':')
        .is_some_and(|(name, path)| !name.contains('/') && path.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_texts_are_filtered_by_wildcard() {
        let all = "unified:/user.slice,cpu,cpuacct:/a,memory:/x";
        assert_eq!(filter_paths(all, "*"), all);
        assert_eq!(filter_paths(all, "unified"), "unified:/user.slice");
        assert_eq!(filter_paths(all, "cpu*"), "cpu,cpuacct:/a");
        assert_eq!(filter_paths(all, "*mem*"), "memory:/x");
        assert_eq!(filter_paths(all, "blkio"), "");
    }
}
