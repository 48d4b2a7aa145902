//! Bounding text: every line, quote and fact this crate hands out has a cap,
//! and [`bound_json`] caps any JSON value before it is stored or sent
//! (observations, answers, model replies): no log, tool or model can put
//! more than [`JsonBounds`] bytes into one journal row.

use std::borrow::Cow;

use serde_json::Value;

/// At most `max` bytes of `s`, cut on a character boundary.
pub fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// At most `max` characters of `s`.
pub fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Caps for one JSON value: each string, each array and the whole.
#[derive(Debug, Clone, Copy)]
pub struct JsonBounds {
    pub max_string_bytes: usize,
    pub max_array_items: usize,
    /// The serialised size the whole value is cut down to.
    pub max_total_bytes: usize,
}

impl JsonBounds {
    /// An observation, an action's input or an answer in the journal: far
    /// above what any tool returns on a real log (a Jenkins console is cut
    /// to 256 KiB by default, a line to 4 KiB), far below what breaks
    /// Postgres or the error library.
    pub const JOURNAL: JsonBounds = JsonBounds {
        max_string_bytes: 64 * 1024,
        max_array_items: 10_000,
        max_total_bytes: 1024 * 1024,
    };
}

/// Makes `v` storable and bounded: NUL characters (which Postgres' `text`
/// and `jsonb` refuse) become `␀`, strings and arrays are cut to the caps,
/// and while the whole is still too big the caps are halved. A cut string
/// ends in `… [N bytes cut]`; a cut array just ends early. Returns whether
/// anything changed.
pub fn bound_json(v: &mut Value, bounds: &JsonBounds) -> bool {
    let mut changed = walk(v, bounds.max_string_bytes, bounds.max_array_items);
    let (mut strings, mut items) = (bounds.max_string_bytes, bounds.max_array_items);
    while serialised_len(v) > bounds.max_total_bytes && (strings > 64 || items > 1) {
        strings = (strings / 2).max(64);
        items = (items / 2).max(1);
        changed |= walk(v, strings, items);
    }
    changed
}

/// `s` without NUL characters, cut to `max` bytes with the marker;
/// borrowed when it already was.
pub fn bound_string(s: &str, max: usize) -> Cow<'_, str> {
    let mut s = Cow::Borrowed(s);
    if s.contains('\0') {
        s = s.replace('\0', "\u{2400}").into();
    }
    if s.len() > max {
        let cut = truncate_bytes(&s, max);
        s = format!("{cut}… [{} bytes cut]", s.len() - cut.len()).into();
    }
    s
}

fn walk(v: &mut Value, strings: usize, items: usize) -> bool {
    match v {
        Value::String(s) => match bound_string(s, strings) {
            Cow::Owned(bounded) => {
                *s = bounded;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(a) => {
            let mut changed = a.len() > items;
            a.truncate(items);
            for x in a.iter_mut() {
                changed |= walk(x, strings, items);
            }
            changed
        }
        Value::Object(m) => {
            let mut changed = false;
            if m.len() > items || m.keys().any(|k| k.contains('\0') || k.len() > strings) {
                let old = std::mem::take(m);
                changed = true;
                for (k, x) in old.into_iter().take(items) {
                    m.insert(bound_string(&k, strings).into_owned(), x);
                }
            }
            for x in m.values_mut() {
                changed |= walk(x, strings, items);
            }
            changed
        }
        _ => false,
    }
}

fn serialised_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// Rewrites the Perl classes of a pattern (`\w`, `\d`, `\s`, their
/// negations and `\b`) to their ASCII forms. Tool output names files,
/// tests and packages in ASCII; Unicode classes make a compiled set
/// several times larger, and a Unicode `\b` makes the lazy DFA give up on
/// the first non-ASCII byte, so a line of binary junk or of CJK text ran
/// on the slow PikeVM (~100× slower). Every built-in pattern of this crate
/// goes through here. Literal non-ASCII characters (`✖`, `‘`) are kept.
pub fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut depth = 0usize;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push(c);
                    break;
                };
                let in_class = depth > 0;
                match (n, in_class) {
                    ('w', false) => out.push_str("[0-9A-Za-z_]"),
                    ('w', true) => out.push_str("0-9A-Za-z_"),
                    ('d', false) => out.push_str("[0-9]"),
                    ('d', true) => out.push_str("0-9"),
                    ('s', false) => out.push_str(r"[\t\n\x0B\x0C\r ]"),
                    ('s', true) => out.push_str(r"\t\n\x0B\x0C\r "),
                    ('W', false) => out.push_str("[^0-9A-Za-z_]"),
                    ('D', false) => out.push_str("[^0-9]"),
                    ('S', false) => out.push_str(r"[^\t\n\x0B\x0C\r ]"),
                    ('b', false) => out.push_str(r"(?-u:\b)"),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if depth > 0 && chars.peek() == Some(&':') => {
                // A POSIX class (`[:alpha:]`): copied through its `:]`.
                out.push(c);
                let mut prev = c;
                for n in chars.by_ref() {
                    out.push(n);
                    if prev == ':' && n == ']' {
                        break;
                    }
                    prev = n;
                }
            }
            '[' => {
                depth += 1;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            ']' if depth > 0 => {
                depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_is_bounded_and_storable() {
        let huge = "x".repeat(5_000_000);
        let mut v = json!({"lines": [{"n": 1, "text": huge}], "error_lines": [huge],
                           "nul": "a\0b", "many": vec![1; 50_000]});
        assert!(bound_json(&mut v, &JsonBounds::JOURNAL));
        let out = serde_json::to_string(&v).unwrap();
        assert!(
            out.len() <= JsonBounds::JOURNAL.max_total_bytes,
            "{}",
            out.len()
        );
        assert_eq!(v["nul"], "a\u{2400}b");
        assert!(
            v["lines"][0]["text"]
                .as_str()
                .unwrap()
                .ends_with("bytes cut]")
        );
        assert_eq!(v["many"].as_array().unwrap().len(), 10_000);
        // Many strings just under the per-string cap still fit the whole.
        let mut wide = json!(vec!["y".repeat(60_000); 100]);
        bound_json(&mut wide, &JsonBounds::JOURNAL);
        assert!(serde_json::to_string(&wide).unwrap().len() <= JsonBounds::JOURNAL.max_total_bytes);
        // What fits is left alone.
        let mut small = json!({"a": "b", "c": [1, 2, 3]});
        assert!(!bound_json(&mut small, &JsonBounds::JOURNAL));
        assert_eq!(small, json!({"a": "b", "c": [1, 2, 3]}));
    }

    #[test]
    fn cuts_respect_character_boundaries() {
        assert_eq!(truncate_bytes("héllo", 2), "h");
        assert_eq!(truncate_bytes("abc", 10), "abc");
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("ab", 5), "ab");
    }
}
