//! A small tokenizer over stripped source (see `strip`): identifiers, `::`, single
//! punctuation characters and (blanked) string literals, each with its byte offset, plus a
//! table to turn offsets into line numbers.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier, keyword, raw identifier (`r#type`) or number.
    Word,
    /// `::`, or any single punctuation character (`{`, `;`, `#`, `'`...).
    Punct,
    /// A string literal, quotes included (its contents are blank in the stripped text).
    Str,
}

/// One token of stripped source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    /// What the token is.
    pub kind: Kind,
    /// Its text in the stripped source.
    pub text: &'a str,
    /// Byte offset of its first byte (the same in the original and stripped text).
    pub pos: usize,
}

impl Token<'_> {
    /// Whether this token is the word or punctuation `text`.
    pub fn is(&self, text: &str) -> bool {
        self.kind != Kind::Str && self.text == text
    }
}

/// Splits stripped source into tokens (whitespace dropped).
pub fn tokenize(stripped: &str) -> Vec<Token<'_>> {
    let bytes = stripped.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (kind, end) = if b.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 {
            (Kind::Word, word_end(bytes, i))
        } else if b == b'"' {
            let close = bytes[i + 1..].iter().position(|&c| c == b'"');
            (Kind::Str, close.map_or(bytes.len(), |n| i + n + 2))
        } else if b == b':' && bytes.get(i + 1) == Some(&b':') {
            (Kind::Punct, i + 2)
        } else {
            (Kind::Punct, i + 1)
        };
        tokens.push(Token {
            kind,
            text: &stripped[i..end],
            pos: i,
        });
        i = end;
    }
    tokens
}

/// The end of the word starting at `i` (`r#name` raw identifiers included).
fn word_end(bytes: &[u8], i: usize) -> usize {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
    let mut j = i;
    while j < bytes.len() && is_word(bytes[j]) {
        j += 1;
    }
    if &bytes[i..j] == b"r"
        && bytes.get(j) == Some(&b'#')
        && bytes.get(j + 1).is_some_and(|&b| is_word(b))
    {
        j += 1;
        while j < bytes.len() && is_word(bytes[j]) {
            j += 1;
        }
    }
    j
}

/// Turns byte offsets into 1-based line numbers.
pub struct Lines {
    /// Byte offset at which each line starts.
    starts: Vec<usize>,
}

impl Lines {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// The 1-based line holding byte offset `pos`.
    pub fn line(&self, pos: usize) -> usize {
        self.starts.partition_point(|&start| start <= pos)
    }
}

/// Index of the token closing the bracket opened at `open` (`(`/`)`, `[`/`]` or `{`/`}`),
/// counting only that kind of bracket; `None` when it is never closed.
pub fn matching(tokens: &[Token], open: usize) -> Option<usize> {
    let (o, c) = match tokens[open].text {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for (k, token) in tokens.iter().enumerate().skip(open) {
        if token.is(o) {
            depth += 1;
        } else if token.is(c) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Index of the token opening the bracket closed at `close` (the reverse of `matching`).
pub fn matching_back(tokens: &[Token], close: usize) -> Option<usize> {
    let (o, c) = match tokens[close].text {
        ")" => ("(", ")"),
        "]" => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        if tokens[k].is(c) {
            depth += 1;
        } else if tokens[k].is(o) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// From token `start`, the index of the first `{` or `;` outside parentheses and square
/// brackets: where an item's body starts (`{`) or a body-less item ends (`;`).
pub fn body_or_semicolon(tokens: &[Token], start: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, token) in tokens.iter().enumerate().skip(start) {
        match token.text {
            _ if token.kind == Kind::Str => {}
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            "{" | ";" if depth <= 0 => return Some(k),
            _ => {}
        }
    }
    None
}

/// Tokenizing small sources.
#[cfg(test)]
mod tests {
    use super::*;

    /// Words, `::`, punctuation and strings come out with their offsets.
    #[test]
    fn words_paths_and_strings() {
        let tokens = tokenize("use crate::a::{b, r#type};\n#[path = \"   \"] mod x;");
        let texts: Vec<&str> = tokens.iter().map(|t| t.text).collect();
        assert_eq!(
            texts,
            [
                "use", "crate", "::", "a", "::", "{", "b", ",", "r#type", "}", ";", "#", "[",
                "path", "=", "\"   \"", "]", "mod", "x", ";"
            ]
        );
        assert_eq!(tokens[15].kind, Kind::Str);
        assert_eq!(tokens[17].pos, 43);
    }

    /// Bodies, semicolons and matching brackets are found across lines.
    #[test]
    fn lines_and_brackets() {
        let text = "fn f() -> [u8; 2] {\n  { }\n}\nfn g();";
        let lines = Lines::new(text);
        let tokens = tokenize(text);
        let body = body_or_semicolon(&tokens, 0).unwrap();
        assert!(tokens[body].is("{"));
        let close = matching(&tokens, body).unwrap();
        assert_eq!(lines.line(tokens[close].pos), 3);
        assert_eq!(matching_back(&tokens, close), Some(body));
        let semi = body_or_semicolon(&tokens, close + 1).unwrap();
        assert!(tokens[semi].is(";"));
        assert_eq!(lines.line(tokens[semi].pos), 4);
    }
}
