//! Line cleaning for scoring: strips terminal escapes, carriage-return
//! progress redraws, timestamp prefixes and CI workflow-command prefixes so
//! that the scorer sees what a person would read in a terminal.
//!
//! Cleaning never allocates when there is nothing to strip.

use std::borrow::Cow;

/// What a GitHub Actions workflow-command prefix said about a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineTag {
    /// No workflow command.
    #[default]
    None,
    /// `##[error]` / `::error ...::`.
    Error,
    /// `##[warning]` / `::warning ...::` / `::notice ...::`.
    Warning,
    /// Structural markers: `##[group]`, `##[endgroup]`, `##[section]`, `::debug::`, ...
    Marker,
    /// `##[command]`: the echo of a command about to run.
    Command,
}

/// Cleans a raw log line for scoring (see the module doc). The returned text
/// is what a terminal would show, minus timestamp and workflow prefixes.
pub fn clean_line(raw: &str) -> Cow<'_, str> {
    clean_line_tagged(raw).0
}

/// Like [`clean_line`], also reporting the workflow-command prefix it removed.
pub fn clean_line_tagged(raw: &str) -> (Cow<'_, str>, LineTag) {
    let mut text: Cow<'_, str> = Cow::Borrowed(last_redraw(raw));
    if text.contains('\x1b') {
        text = Cow::Owned(strip_ansi(&text));
        // Escapes can hide a `\r` redraw; re-apply on the stripped text.
        if let Cow::Owned(s) = &text {
            let last = last_redraw(s);
            if last.len() != s.len() {
                text = Cow::Owned(last.to_owned());
            }
        }
    }
    let (start, tag) = prefix_len(&text);
    if start == 0 {
        return (text, tag);
    }
    let out = match text {
        Cow::Borrowed(s) => Cow::Borrowed(&s[start..]),
        Cow::Owned(s) => Cow::Owned(s[start..].to_owned()),
    };
    (out, tag)
}

/// The text after the last `\r` that is followed by something visible.
fn last_redraw(raw: &str) -> &str {
    let s = raw.trim_end_matches(['\r', '\n']);
    if !s.contains('\r') {
        return s;
    }
    s.rsplit('\r')
        .find(|seg| seg.bytes().any(|b| !b.is_ascii_whitespace() && b != 0x1b))
        .unwrap_or("")
}

/// Removes CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL|ESC \`), charset
/// designations (`ESC ( B`) and other two-byte escapes.
pub fn strip_ansi(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while let Some(off) = memchr::memchr(0x1b, &b[i..]) {
        let esc = i + off;
        out.push_str(&s[copied..esc]);
        let mut j = esc + 1;
        match b.get(j) {
            Some(b'[') => {
                j += 1;
                while j < b.len() && (0x20..=0x3f).contains(&b[j]) {
                    j += 1;
                }
                if j < b.len() && (0x40..=0x7e).contains(&b[j]) {
                    j += 1;
                }
            }
            Some(b']') => {
                j += 1;
                while j < b.len() && b[j] != 0x07 && !(b[j] == 0x1b && b.get(j + 1) == Some(&b'\\'))
                {
                    j += 1;
                }
                j = if j < b.len() && b[j] == 0x07 {
                    j + 1
                } else {
                    (j + 2).min(b.len())
                };
            }
            Some(b'(' | b')' | b'*' | b'+') => j = (j + 2).min(b.len()),
            Some(c)
                if (0x40..=0x5f).contains(c) || c.is_ascii_digit() || *c == b'=' || *c == b'>' =>
            {
                j += 1
            }
            _ => {}
        }
        // Never split a multi-byte character (escapes are ASCII, but a
        // truncated one may be followed by anything).
        while j < b.len() && !s.is_char_boundary(j) {
            j += 1;
        }
        i = j;
        copied = j;
    }
    out.push_str(&s[copied..]);
    out
}

/// Whether a raw line sets a red foreground or background colour (SGR 31,
/// 91, 41, 101).
pub fn is_red(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut at = 0;
    while let Some(i) = memchr::memchr(0x1b, &b[at..]) {
        let start = at + i + 1;
        if b.get(start) == Some(&b'[') {
            let params = b[start + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == b';')
                .count();
            let seq = &b[start + 1..start + 1 + params];
            if b.get(start + 1 + params) == Some(&b'm')
                && seq
                    .split(|c| *c == b';')
                    .any(|p| matches!(p, b"31" | b"91" | b"41" | b"101"))
            {
                return true;
            }
        }
        at = start;
    }
    false
}

/// Length of a timestamp and/or workflow-command prefix, and its tag.
fn prefix_len(s: &str) -> (usize, LineTag) {
    let b = s.as_bytes();
    let mut start = gh_cli_len(b);
    // At most two timestamps (e.g. a runner's and the tool's own).
    for _ in 0..2 {
        let n = timestamp_len(&b[start..]);
        if n == 0 {
            break;
        }
        start += n;
    }
    start += buildkit_len(&b[start..]);
    let (n, tag) = workflow_len(&s[start..]);
    (start + n, tag)
}

/// Longest job or step name read in a `gh run view --log` prefix.
const MAX_GH_FIELD: usize = 256;

/// `gh run view --log` (and the web UI's "download log" of a whole run)
/// puts the job's and the step's name before each line's timestamp:
/// `build (20.x)<TAB>Run tests<TAB>2024-01-02T03:04:05.1234567Z text`.
/// The prefix counts only when a dated timestamp follows it.
fn gh_cli_len(b: &[u8]) -> usize {
    let Some(first) = b.iter().take(MAX_GH_FIELD).position(|&c| c == b'\t') else {
        return 0;
    };
    let Some(second) = b[first + 1..]
        .iter()
        .take(MAX_GH_FIELD)
        .position(|&c| c == b'\t')
    else {
        return 0;
    };
    let at = first + 1 + second + 1;
    let dated = digits(b, at, 4) && b.get(at + 4) == Some(&b'-');
    if dated && timestamp_len(&b[at..]) > 0 {
        at
    } else {
        0
    }
}

/// BuildKit's plain progress (`docker build --progress=plain`, what CI
/// logs of `docker build` show) puts the build step's number and the
/// seconds since it started before what the step printed: `#12 3.456 `.
fn buildkit_len(b: &[u8]) -> usize {
    if b.first() != Some(&b'#') {
        return 0;
    }
    let mut i = skip_digits(b, 1);
    if i == 1 || b.get(i) != Some(&b' ') || !digits(b, i + 1, 1) {
        return 0;
    }
    i = skip_digits(b, i + 1);
    if b.get(i) != Some(&b'.') || !digits(b, i + 1, 1) {
        return 0;
    }
    i = skip_digits(b, i + 1);
    match b.get(i) {
        None => i,
        Some(b' ') => i + 1,
        _ => 0,
    }
}

/// The index past the run of ASCII digits starting at `i`.
fn skip_digits(b: &[u8], i: usize) -> usize {
    i + b[i.min(b.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

fn digits(b: &[u8], at: usize, n: usize) -> bool {
    b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit)
}

/// `2024-01-02T03:04:05.1234567Z `, `[2024-01-02T03:04:05.123Z] `,
/// `2024-01-02 03:04:05,123 `, `12:34:56 `, `[12:34:56.789] `.
fn timestamp_len(b: &[u8]) -> usize {
    let bracket = b.first() == Some(&b'[');
    let mut i = usize::from(bracket);
    let date = digits(b, i, 4)
        && b.get(i + 4) == Some(&b'-')
        && digits(b, i + 5, 2)
        && b.get(i + 7) == Some(&b'-')
        && digits(b, i + 8, 2);
    if date {
        i += 10;
        if matches!(b.get(i), Some(b'T' | b' ')) && digits(b, i + 1, 2) {
            i += 1;
        } else {
            return finish_ts(b, i, bracket);
        }
    }
    if !(digits(b, i, 2) && b.get(i + 2) == Some(&b':') && digits(b, i + 3, 2)) {
        return 0;
    }
    i += 5;
    if b.get(i) == Some(&b':') && digits(b, i + 1, 2) {
        i += 3;
    } else if !date {
        return 0; // `12:34` alone is too ambiguous
    }
    if matches!(b.get(i), Some(b'.' | b',')) && digits(b, i + 1, 1) {
        i = skip_digits(b, i + 1);
    }
    if b.get(i) == Some(&b'Z') {
        i += 1;
    } else if matches!(b.get(i), Some(b'+' | b'-')) && digits(b, i + 1, 2) {
        i += 3;
        if b.get(i) == Some(&b':') {
            i += 1;
        }
        i = skip_digits(b, i);
    }
    finish_ts(b, i, bracket)
}

fn finish_ts(b: &[u8], mut i: usize, bracket: bool) -> usize {
    if bracket {
        if b.get(i) != Some(&b']') {
            return 0;
        }
        i += 1;
    }
    match b.get(i) {
        None => i,
        Some(b' ' | b'\t') => i + 1,
        _ => 0,
    }
}

/// `##[error]`, `##[group]`, ... and `::error file=..::`, `::group::`, ...
fn workflow_len(s: &str) -> (usize, LineTag) {
    if let Some(rest) = s.strip_prefix("##[") {
        if let Some(end) = rest.find(']') {
            let name = &rest[..end];
            if !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphabetic()) {
                return (3 + end + 1, tag_of(name));
            }
        }
    } else if let Some(rest) = s.strip_prefix("::") {
        let name_end = rest.find([' ', ':']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        let named = !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphabetic() || c == b'-');
        if let Some(close) = rest[name_end..].find("::").filter(|_| named) {
            return (2 + name_end + close + 2, tag_of(name));
        }
    }
    (0, LineTag::None)
}

fn tag_of(name: &str) -> LineTag {
    match name.to_ascii_lowercase().as_str() {
        "error" => LineTag::Error,
        "warning" | "notice" => LineTag::Warning,
        "command" => LineTag::Command,
        _ => LineTag::Marker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_are_borrowed() {
        assert!(matches!(
            clean_line("hello world"),
            Cow::Borrowed("hello world")
        ));
    }

    #[test]
    fn strips_ansi_csi_and_osc() {
        assert_eq!(clean_line("\x1b[31;1mError:\x1b[0m boom"), "Error: boom");
        assert_eq!(clean_line("\x1b]0;title\x07text"), "text");
        assert_eq!(clean_line("\x1b]8;;http://x\x1b\\link"), "link");
        assert_eq!(clean_line("a\x1b(Bb"), "ab");
        assert_eq!(clean_line("cut\x1b["), "cut");
    }

    #[test]
    fn keeps_last_carriage_return_segment() {
        assert_eq!(clean_line("10%\r50%\r100% done"), "100% done");
        assert_eq!(clean_line("travis_fold:end:x\r\x1b[0K$ make"), "$ make");
        assert_eq!(clean_line("done\r\n"), "done");
        assert_eq!(clean_line("progress\r   \r"), "progress");
    }

    #[test]
    fn strips_timestamps() {
        assert_eq!(clean_line("2024-01-02T03:04:05.1234567Z hello"), "hello");
        assert_eq!(clean_line("[2024-01-02T03:04:05.123Z] hello"), "hello");
        assert_eq!(clean_line("12:34:56 hello"), "hello");
        assert_eq!(clean_line("[12:34:56.789] hello"), "hello");
        assert_eq!(clean_line("2024-01-02 03:04:05,123 INFO x"), "INFO x");
        assert_eq!(clean_line("12:34 not a time"), "12:34 not a time");
        assert_eq!(clean_line("2024-01-02T03:04:05Z"), "");
    }

    #[test]
    fn strips_buildkit_step_prefixes() {
        assert_eq!(
            clean_line("#12 3.456 npm ERR! code E404"),
            "npm ERR! code E404"
        );
        assert_eq!(
            clean_line("2024-01-02T03:04:05.1234567Z #7 0.52 error: x"),
            "error: x"
        );
        // Not BuildKit's: a heading, an issue number, a step's own verdict.
        assert_eq!(clean_line("#12 items"), "#12 items");
        assert_eq!(clean_line("#3 DONE 0.1s"), "#3 DONE 0.1s");
        assert_eq!(clean_line("# 1.5 x"), "# 1.5 x");
    }

    #[test]
    fn strips_the_job_and_step_names_gh_run_view_prints() {
        let (t, tag) = clean_line_tagged(
            "build (20.x)\tRun tests\t2024-01-02T03:04:05.1234567Z ##[error]Process completed with exit code 1.",
        );
        assert_eq!(t, "Process completed with exit code 1.");
        assert_eq!(tag, LineTag::Error);
        assert_eq!(
            clean_line("test\tSet up job\t2024-01-02T03:04:05.1234567Z FAILED (errors=2)"),
            "FAILED (errors=2)"
        );
        // Tabs without a dated timestamp after them are the line's own.
        assert_eq!(clean_line("a\tb\tc"), "a\tb\tc");
        assert_eq!(
            clean_line("name\tvalue\t12:34:56 x"),
            "name\tvalue\t12:34:56 x"
        );
    }

    #[test]
    fn strips_workflow_commands() {
        let (t, tag) = clean_line_tagged(
            "2024-01-02T03:04:05.1234567Z ##[error]Process completed with exit code 1.",
        );
        assert_eq!(t, "Process completed with exit code 1.");
        assert_eq!(tag, LineTag::Error);
        assert_eq!(clean_line("##[group]Run cargo test"), "Run cargo test");
        assert_eq!(clean_line("##[endgroup]"), "");
        let (t, tag) = clean_line_tagged("::error file=src/a.rs,line=3,col=1::mismatched types");
        assert_eq!((t.as_ref(), tag), ("mismatched types", LineTag::Error));
        assert_eq!(clean_line("::group::Build"), "Build");
        assert_eq!(clean_line(":: not a command"), ":: not a command");
        assert_eq!(clean_line("std::vector<int>"), "std::vector<int>");
    }

    #[test]
    fn detects_red() {
        assert!(is_red("\x1b[1;31mboom\x1b[0m"));
        assert!(is_red("\x1b[41m\x1b[37mx"));
        assert!(!is_red("\x1b[32mok\x1b[0m \x1b[131m"));
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "\x1b",
            "\x1b]",
            "\x1b[",
            "\r",
            "\r\r",
            "[",
            "[2024-01-02",
            "##[",
            "::x",
            "é\x1b[é",
            "\x1b(é",
        ] {
            let _ = clean_line(s);
        }
    }
}
