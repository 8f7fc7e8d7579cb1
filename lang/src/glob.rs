//! Shell-style wildcard matching of attach points and probe listings: `*` matches any run of
//! characters (also none), `?` exactly one.

/// True when `text` matches `pattern`.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and how much of the text it has swallowed so far.
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            backtrack = Some((pi, ti));
            pi += 1;
        } else if let Some((star, matched)) = backtrack {
            pi = star + 1;
            ti = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// True when `s` contains a wildcard.
pub fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks() {
        assert!(wildcard_match("sys_enter_*", "sys_enter_openat"));
        assert!(wildcard_match("*open*", "sys_enter_openat"));
        assert!(wildcard_match("sys_?xit_read", "sys_exit_read"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("a*b*c", "axxbyyc"));
        assert!(!wildcard_match("sys_exit_*", "sys_enter_openat"));
        assert!(!wildcard_match("a?", "a"));
        assert!(has_wildcard("t:*") && !has_wildcard("t:x"));
    }
}
