//! The conditional directives of a scanned header, as far as they depend on the target: a
//! script's headers are read as clang reads them for bpftrace's target, x86-64 Linux, so
//! `<asm/unistd.h>`'s `#ifdef __i386__` branch (the i386 syscall numbers) is skipped and its
//! `#else` (x86-64's) is read. A condition naming anything but the target's macros cannot be
//! decided by a scan: every branch of it is read, as before.

/// Macros the target defines (clang for x86-64 Linux).
const DEFINED: [&str; 12] = [
    "__x86_64__",
    "__x86_64",
    "__amd64__",
    "__amd64",
    "__LP64__",
    "_LP64",
    "__linux__",
    "__linux",
    "__gnu_linux__",
    "__unix__",
    "__unix",
    "__ELF__",
];

/// Other targets' macros, which x86-64 Linux leaves undefined.
const UNDEFINED: [&str; 22] = [
    "__i386__",
    "__i386",
    "i386",
    "__ILP32__",
    "_ILP32",
    "__x32__",
    "__arm__",
    "__aarch64__",
    "__powerpc__",
    "__powerpc64__",
    "__PPC__",
    "__s390__",
    "__s390x__",
    "__mips__",
    "__sparc__",
    "__riscv",
    "__loongarch__",
    "__ia64__",
    "__hppa__",
    "__alpha__",
    "__m68k__",
    "__sh__",
];

/// One open `#if` group.
struct Group {
    /// Lines of the enclosing groups are read.
    outer: bool,
    /// A branch of this group was true for certain: the later ones are skipped.
    taken: bool,
    /// Lines of the current branch are read.
    reading: bool,
}

/// The conditional state of one header file, fed its directives in order.
#[derive(Default)]
pub(super) struct Conditions {
    groups: Vec<Group>,
}

impl Conditions {
    /// Whether the lines at this point are read.
    pub fn reading(&self) -> bool {
        self.groups.last().is_none_or(|g| g.reading)
    }

    /// Takes directive `body` (the text after `#`); true when it was a conditional one.
    pub fn directive(&mut self, body: &str) -> bool {
        let word_end = body
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(body.len());
        let (word, rest) = body.split_at(word_end);
        let rest = strip_comments(rest);
        match word {
            "if" => self.open(eval(&rest)),
            "ifdef" => self.open(defined(rest.trim())),
            "ifndef" => self.open(defined(rest.trim()).map(|d| !d)),
            "elif" => self.branch(Some(eval(&rest))),
            "else" => self.branch(None),
            "endif" => {
                self.groups.pop();
            }
            _ => return false,
        }
        true
    }

    fn open(&mut self, c: Option<bool>) {
        let outer = self.reading();
        self.groups.push(Group {
            outer,
            taken: c == Some(true),
            reading: outer && c != Some(false),
        });
    }

    /// `#elif` (with its condition) or `#else` (`None`).
    fn branch(&mut self, c: Option<Option<bool>>) {
        let Some(g) = self.groups.last_mut() else {
            return;
        };
        let c = if g.taken {
            Some(false)
        } else {
            c.unwrap_or(Some(true))
        };
        g.taken |= c == Some(true);
        g.reading = g.outer && c != Some(false);
    }
}

/// The text with its C comments removed.
fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i + 2..]
            .find("*/")
            .map_or("", |j| &rest[i + 2 + j + 2..]);
        out.push(' ');
    }
    out.push_str(rest);
    match out.find("//") {
        Some(i) => out[..i].to_string(),
        None => out,
    }
}

/// Whether the target defines `name`, when known.
fn defined(name: &str) -> Option<bool> {
    if DEFINED.contains(&name) {
        Some(true)
    } else if UNDEFINED.contains(&name) {
        Some(false)
    } else {
        None
    }
}

/// The value of an `#if` condition made of the target's macros, `defined`, `!`, `&&`, `||`,
/// parentheses and integers; `None` for anything else.
fn eval(text: &str) -> Option<bool> {
    let tokens = tokens(text)?;
    let mut p = Parser { tokens, at: 0 };
    let v = p.or()?;
    (p.at == p.tokens.len()).then_some(v)
}

fn tokens(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_ascii_alphanumeric() || d == '_') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            out.push(text[i..end].to_string());
        } else if (c == '&' || c == '|') && chars.peek().map(|&(_, d)| d) == Some(c) {
            chars.next();
            out.push(format!("{c}{c}"));
        } else if matches!(c, '(' | ')' | '!') && chars.peek().map(|&(_, d)| d) != Some('=') {
            out.push(c.to_string());
        } else {
            return None;
        }
    }
    Some(out)
}

struct Parser {
    tokens: Vec<String>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn eat(&mut self, t: &str) -> bool {
        let yes = self.peek() == Some(t);
        self.at += usize::from(yes);
        yes
    }

    fn or(&mut self) -> Option<bool> {
        let mut v = self.and()?;
        while self.eat("||") {
            v |= self.and()?;
        }
        Some(v)
    }

    fn and(&mut self) -> Option<bool> {
        let mut v = self.unary()?;
        while self.eat("&&") {
            v &= self.unary()?;
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<bool> {
        if self.eat("!") {
            return self.unary().map(|v| !v);
        }
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        let t = self.peek()?.to_string();
        self.at += 1;
        if t == "defined" {
            let paren = self.eat("(");
            let name = self.peek()?.to_string();
            self.at += 1;
            if paren && !self.eat(")") {
                return None;
            }
            return defined(&name);
        }
        if let Ok(n) = t.trim_end_matches(['u', 'U', 'l', 'L']).parse::<u64>() {
            return Some(n != 0);
        }
        // A target macro used as a value: the defined ones are 1, the others 0.
        defined(&t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<bool> {
        let mut c = Conditions::default();
        lines
            .iter()
            .filter_map(|l| match l.strip_prefix('#') {
                Some(d) if c.directive(d.trim_start()) => None,
                _ => Some(c.reading()),
            })
            .collect()
    }

    #[test]
    fn target_conditions_pick_x86_64() {
        // <asm/unistd.h>
        let got = read(&[
            "# ifdef __i386__",
            "i386",
            "# elif defined(__ILP32__)",
            "x32",
            "# else",
            "x86_64",
            "# endif",
        ]);
        assert_eq!(got, [false, false, true]);
        let got = read(&[
            "#if defined __x86_64__ && !defined __ILP32__ /* 64 */",
            "a",
            "#else",
            "b",
            "#endif",
            "#ifndef __x86_64__",
            "c",
            "#endif",
        ]);
        assert_eq!(got, [true, false, false]);
    }

    #[test]
    fn other_conditions_read_every_branch() {
        let got = read(&[
            "#if __WORDSIZE == 64",
            "a",
            "#elif defined __USE_MISC",
            "b",
            "#else",
            "c",
            "#endif",
            "#ifdef __i386__",
            "#if SOMETHING",
            "d",
            "#endif",
            "#endif",
            "e",
        ]);
        assert_eq!(got, [true, true, true, false, true]);
        assert_eq!(eval("defined(__x86_64__) || X"), None);
        assert_eq!(eval("1 && !defined(__arm__)"), Some(true));
        assert_eq!(eval("(__LP64__)"), Some(true));
        assert_eq!(eval("defined(__x86_64__"), None);
    }
}
