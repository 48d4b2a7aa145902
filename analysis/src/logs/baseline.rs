//! The last green log of a job as a baseline: lines of a failing log that
//! also print in a passing run of the same job are the job's usual noise,
//! not the failure (the idea of CiDiff, Brandt et al.).
//!
//! A [`Baseline`] is a bounded set of 64-bit hashes of the passing log's
//! *normalised* lines, built by streaming the log once (plain or gzip). A
//! line is normalised from its cleaned text ([`super::clean`]: ANSI
//! escapes, `\r` redraws, timestamp and workflow-command prefixes gone),
//! then:
//!
//! - numbers of any shape become `#`: counters, times (`12:34:56.789`),
//!   dates (`2024-01-02T03:04:05Z`), versions (`1.2.3`), sizes, and with
//!   a following duration unit (`1.23s`, `123 ms`, `2.5 seconds`, `1m`);
//!   digit runs inside words become `#` too (`E0425`, `py39`);
//! - hex hashes (`0x7ffd…`, runs of at least 7 hex digits with a digit,
//!   such as git SHAs and container ids) and UUIDs become `<h>`;
//! - temporary directories (`/tmp/x`, `/var/folders/…/T/x`, `…\AppData\Local\Temp\x`)
//!   and CI work directories (`/home/runner/work/r/r`, `D:\a\r\r`,
//!   `…/jenkins/workspace/job`) become `<tmp>` / `<work>`;
//! - whitespace runs become one space, and the ends are trimmed.
//!
//! Memory is flat: at most [`MAX_HASHES`] hashes are kept (a longer log
//! keeps its first distinct lines) and at most `max_line_bytes` of a line
//! are read, as the excerpt does.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufRead};
use std::path::Path;

use super::clean::clean_line;
use super::excerpt::read_line;

/// Most distinct normalised lines a baseline keeps (8 bytes each, about
/// 18 MiB of hash table when full).
pub const MAX_HASHES: usize = 1 << 20;

/// The normalised lines of a passing log (see the module doc).
#[derive(Clone, Default)]
pub struct Baseline {
    hashes: HashSet<u64, BuildHasherDefault<Prehashed>>,
    /// Lines read, blank ones included.
    lines: u64,
    /// Distinct lines were dropped at [`MAX_HASHES`].
    full: bool,
}

impl std::fmt::Debug for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Baseline")
            .field("lines", &self.lines)
            .field("distinct", &self.hashes.len())
            .field("full", &self.full)
            .finish()
    }
}

impl Baseline {
    /// Reads a passing log (plain or gzip, detected by its magic bytes).
    pub fn from_file(path: &Path, max_line_bytes: usize) -> io::Result<Self> {
        Self::from_reader(super::excerpt::open_log(path)?, max_line_bytes)
    }

    /// Reads a passing log from `reader`, streaming, keeping at most
    /// `max_line_bytes` of each line (use the excerpt's setting, so that
    /// long lines are cut the same way in both logs).
    pub fn from_reader<R: BufRead>(mut reader: R, max_line_bytes: usize) -> io::Result<Self> {
        let mut baseline = Self::default();
        let mut buf = Vec::with_capacity(256);
        while read_line(&mut reader, &mut buf, max_line_bytes.max(1))?.is_some() {
            baseline.lines += 1;
            let raw = String::from_utf8_lossy(&buf);
            let Some(hash) = line_key(&clean_line(&raw)) else {
                continue;
            };
            if baseline.hashes.len() < MAX_HASHES {
                baseline.hashes.insert(hash);
            } else if !baseline.hashes.contains(&hash) {
                baseline.full = true;
            }
        }
        Ok(baseline)
    }

    /// Whether a cleaned line of another log normalises to a line of this
    /// one. Blank lines are never known.
    pub fn knows(&self, clean: &str) -> bool {
        line_key(clean).is_some_and(|h| self.hashes.contains(&h))
    }

    /// Lines read from the passing log.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Distinct normalised lines kept.
    pub fn distinct(&self) -> usize {
        self.hashes.len()
    }

    /// Whether distinct lines were dropped at [`MAX_HASHES`].
    pub fn is_full(&self) -> bool {
        self.full
    }
}

/// The hash of a cleaned line's normalised form; `None` for a blank line.
fn line_key(clean: &str) -> Option<u64> {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut any = false;
    normalise(clean, &mut |part| {
        any = true;
        h.write(part);
    });
    any.then(|| fmix(h.0))
}

/// The normalised form of a cleaned line, as text (for tests and for
/// people; the baseline only keeps its hash).
pub fn normalise_line(clean: &str) -> String {
    let mut out = Vec::with_capacity(clean.len());
    normalise(clean, &mut |part| out.extend_from_slice(part));
    String::from_utf8_lossy(&out).into_owned()
}

/// CI work directories: the root and how many path components after it
/// name the checkout.
const WORK_ROOTS: [(&str, usize); 7] = [
    ("/home/runner/work/", 2),
    ("/Users/runner/work/", 2),
    ("/__w/", 2),
    ("/github/workspace", 0),
    ("/workspace/", 1),
    ("\\a\\", 2),
    ("/builds/", 2),
];

/// Temporary directories: the root and how many path components after it
/// are random.
const TMP_ROOTS: [(&str, usize); 6] = [
    ("/tmp/", 1),
    ("/var/tmp/", 1),
    ("/dev/shm/", 1),
    ("/private/var/folders/", 4),
    ("/var/folders/", 4),
    ("\\Temp\\", 1),
];

/// Feeds the normalised form of `clean` to `emit`, piece by piece.
fn normalise(clean: &str, emit: &mut impl FnMut(&[u8])) {
    let b = clean.trim().as_bytes();
    let mut i = 0;
    let mut space = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        if space {
            emit(b" ");
            space = false;
        }
        let word_start = i == 0 || !is_word(b[i - 1]);
        if c == b'/' || c == b'\\' {
            if let Some((n, placeholder)) = directory(&b[i..]) {
                emit(placeholder);
                i += n;
                continue;
            }
        } else if is_word(c) && word_start {
            let (n, token) = word(&b[i..]);
            match token {
                Token::Verbatim => emit(&b[i..i + n]),
                // A count of zero is not a count of some: `0 failures`
                // in the green log must not excuse `2 failures`.
                Token::Number if b[i..i + n].iter().all(|&d| d == b'0') => emit(b"0"),
                Token::Number => emit(b"#"),
                Token::Hash => emit(b"<h>"),
                Token::Digits => {
                    // `E0425` → `E#`: digit runs inside a word.
                    let mut j = i;
                    while j < i + n {
                        if b[j].is_ascii_digit() {
                            while j < i + n && b[j].is_ascii_digit() {
                                j += 1;
                            }
                            emit(b"#");
                        } else {
                            let k = (j..i + n).find(|&k| b[k].is_ascii_digit()).unwrap_or(i + n);
                            emit(&b[j..k]);
                            j = k;
                        }
                    }
                }
            }
            i += n;
            continue;
        }
        // Anything else is copied up to the next interesting byte.
        let next = (i + 1..b.len())
            .find(|&k| {
                let c = b[k];
                c.is_ascii_whitespace()
                    || c == b'/'
                    || c == b'\\'
                    || (is_word(c) && !is_word(b[k - 1]))
            })
            .unwrap_or(b.len());
        emit(&b[i..next]);
        i = next;
    }
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// How a word was normalised.
enum Token {
    Verbatim,
    /// A number, possibly with separators and a duration unit.
    Number,
    /// A hex hash or a UUID.
    Hash,
    /// A word with digits in it.
    Digits,
}

/// The word at the start of `b`: its length and what it is.
fn word(b: &[u8]) -> (usize, Token) {
    if let Some(n) = uuid_len(b) {
        return (n, Token::Hash);
    }
    if b[0].is_ascii_digit() {
        if matches!(b.get(1), Some(b'x' | b'X')) && b[0] == b'0' {
            let n = 2 + b[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            if n > 2 && !b.get(n).copied().is_some_and(is_word) {
                return (n, Token::Hash);
            }
        }
        if let Some(n) = number_len(b) {
            return (n, Token::Number);
        }
    }
    let n = b.iter().take_while(|c| is_word(**c)).count();
    let w = &b[..n];
    let digits = w.iter().any(u8::is_ascii_digit);
    if !digits {
        return (n, Token::Verbatim);
    }
    if n >= 7 && w.iter().all(u8::is_ascii_hexdigit) {
        return (n, Token::Hash);
    }
    (n, Token::Digits)
}

/// A number starting `b` (digits with `.`, `,`, `:`, `-`, `/` between
/// digit runs, an ISO `T`/`Z`, an optional duration unit), if the word
/// ends there.
fn number_len(b: &[u8]) -> Option<usize> {
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = digits(0);
    loop {
        match b.get(i) {
            Some(b'.' | b',' | b':' | b'-' | b'/' | b'T')
                if b.get(i + 1).is_some_and(u8::is_ascii_digit) =>
            {
                i += 1 + digits(i + 1);
            }
            _ => break,
        }
    }
    if b.get(i) == Some(&b'Z') && !b.get(i + 1).copied().is_some_and(is_word) {
        i += 1;
    }
    // A duration unit, attached or after one space.
    let gap = usize::from(b.get(i) == Some(&b' '));
    let unit = b[i + gap..].iter().take_while(|c| is_word(**c)).count();
    if unit > 0 && is_duration_unit(&b[i + gap..i + gap + unit]) {
        return Some(i + gap + unit);
    }
    // Otherwise the number must end the word (`3rd`, `4xx` are words).
    (!b.get(i).copied().is_some_and(is_word)).then_some(i)
}

fn is_duration_unit(w: &[u8]) -> bool {
    const UNITS: [&[u8]; 20] = [
        b"ns", b"us", b"ms", b"s", b"sec", b"secs", b"second", b"seconds", b"m", b"min", b"mins",
        b"minute", b"minutes", b"h", b"hr", b"hrs", b"hour", b"hours", b"d", b"days",
    ];
    UNITS.iter().any(|u| u.eq_ignore_ascii_case(w))
}

/// Length of a UUID (8-4-4-4-12 hex digits) starting `b`.
fn uuid_len(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    for (k, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if k > 0 {
            if b.get(i) != Some(&b'-') {
                return None;
            }
            i += 1;
        }
        if b.len() < i + len || !b[i..i + len].iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        i += len;
    }
    (!b.get(i).copied().is_some_and(is_word)).then_some(i)
}

/// A temporary or work directory starting `b` (at a `/` or `\`): the bytes
/// it spans and its placeholder.
fn directory(b: &[u8]) -> Option<(usize, &'static [u8])> {
    let roots = TMP_ROOTS
        .iter()
        .map(|r| (r, b"<tmp>".as_slice()))
        .chain(WORK_ROOTS.iter().map(|r| (r, b"<work>".as_slice())));
    for (&(root, skip), placeholder) in roots {
        let root = root.as_bytes();
        if b.len() < root.len() || !b[..root.len()].eq_ignore_ascii_case(root) {
            continue;
        }
        let sep = root[0];
        let mut i = root.len();
        for k in 0..skip {
            let n = b[i..]
                .iter()
                .take_while(|c| **c != sep && !is_path_end(**c))
                .count();
            i += n;
            if k + 1 < skip {
                if b.get(i) != Some(&sep) {
                    break;
                }
                i += 1;
            }
        }
        return Some((i, placeholder));
    }
    None
}

fn is_path_end(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b':' | b'\'' | b'"' | b'`' | b')' | b']' | b',' | b';')
}

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// MurmurHash3's finaliser: spreads FNV's low-entropy high bits, so the
/// hash table can use the value as is.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A hasher for keys that are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn norm(line: &str) -> String {
        normalise_line(&clean_line(line))
    }

    fn baseline(log: &str) -> Baseline {
        Baseline::from_reader(Cursor::new(log.as_bytes().to_vec()), 4096).unwrap()
    }

    #[test]
    fn volatile_values_are_normalised() {
        let same = [
            (
                "2024-01-01T00:00:00.1234567Z Finished in 2.5 seconds",
                "2024-03-09T11:22:33.7654321Z Finished in 13.25 seconds",
            ),
            (
                "[2024-01-01T10:00:00.123Z] [INFO] Tests run: 12, Time elapsed: 1.23 s",
                "[2024-02-11T08:13:07.999Z] [INFO] Tests run: 12, Time elapsed: 0.871 s",
            ),
            (
                "12:34:56.789 done in 123 ms (0:00:01)",
                "01:02:03.004 done in 9ms (0:01:10)",
            ),
            (
                "HEAD is now at 3f2a9c1 Merge 0x7ffd5e8c into main",
                "HEAD is now at 9b8e7d6 Merge 0x0000ab12 into main",
            ),
            (
                "request 123e4567-e89b-12d3-a456-426614174000 took 1m 3s",
                "request 9f1c2b3a-0000-4d5e-8f9a-abcdefabcdef took 2m 59s",
            ),
            (
                "wrote /tmp/tmpk2j_x9q/report.xml",
                "wrote /tmp/tmpz81oaa3/report.xml",
            ),
            (
                "cache at /var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/pip-abc/wheel",
                "cache at /var/folders/ab/k3j4h5g6f7d8s9a0_q1w2e3r4t5y6u/T/pip-xyz/wheel",
            ),
            (
                "cd /home/runner/work/ledger-api/ledger-api && make",
                "cd /home/runner/work/other/other && make",
            ),
            (
                "\x1b[33mnpm WARN\x1b[0m deprecated request@2.88.2: request has been deprecated",
                "npm WARN deprecated request@2.88.0: request has been deprecated",
            ),
            ("Downloaded 1,234 kB   in 5s", "Downloaded 98 kB in 0.2s"),
        ];
        for (a, b) in same {
            assert_eq!(norm(a), norm(b), "{a:?} vs {b:?}");
        }
        assert_eq!(
            norm("2024-01-01T00:00:00.1234567Z Finished in 2.5 seconds"),
            "Finished in #"
        );
        assert_eq!(
            norm("error[E0425]: at src/m1.rs:12:5"),
            "error[E#]: at src/m#.rs:#"
        );
        assert_eq!(norm("  a   b  "), "a b");
        assert_eq!(norm(""), "");
    }

    #[test]
    fn different_messages_stay_different() {
        let differ = [
            (
                "AssertionError: expected 'pending' to equal 'paid'",
                "AssertionError: expected 'paid' to equal 'paid'",
            ),
            (
                "error[E0425]: cannot find value `ledger_total`",
                "error[E0425]: cannot find value `ledger_sum`",
            ),
            ("test result: FAILED. 3 passed", "test result: ok. 3 passed"),
            ("/tmp/a/b.log", "/tmp/a/c.log"),
            ("3rd attempt", "4th attempt"),
            ("12 tests, 2 failures", "12 tests, 0 failures"),
            ("# fail  1", "# fail  0"),
        ];
        for (a, b) in differ {
            assert_ne!(norm(a), norm(b), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn a_passing_log_knows_its_lines_whatever_the_timestamps() {
        let green = baseline(
            "2024-01-01T00:00:00.1234567Z npm WARN deprecated uuid@3.4.0: Please upgrade\n\
             2024-01-01T00:00:01.1234567Z \n\
             2024-01-01T00:00:02.1234567Z error: unused import in 0.51s\n\
             2024-01-01T00:00:03.1234567Z Tests: 41 passed, 41 total\n",
        );
        assert_eq!(green.lines(), 4);
        assert_eq!(green.distinct(), 3);
        assert!(green.knows("npm WARN deprecated uuid@3.4.1: Please upgrade"));
        assert!(green.knows("error: unused import in 1.20s"));
        assert!(green.knows("Tests: 40 passed, 41 total"), "counters");
        assert!(!green.knows("Tests: 1 failed, 40 passed, 41 total"));
        assert!(!green.knows("AssertionError: expected 1 to equal 2"));
        assert!(!green.knows("   "), "blank lines are never known");
    }

    #[test]
    fn gzip_and_long_lines() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("faultline-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("green.log.gz");
        let mut gz = GzEncoder::new(std::fs::File::create(&path).unwrap(), Compression::fast());
        let long = "x".repeat(10_000);
        writeln!(gz, "warning: deprecated flag\n{long}").unwrap();
        gz.finish().unwrap();
        let b = Baseline::from_file(&path, 100).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(b.knows("warning: deprecated flag"));
        assert!(b.knows(&"x".repeat(100)), "cut like the excerpt cuts");
        assert_eq!(b.lines(), 2);
    }

    proptest::proptest! {
        #[test]
        fn normalising_never_panics_and_is_idempotent_on_its_output(s in "\\PC{0,80}") {
            let once = normalise_line(&s);
            proptest::prop_assert_eq!(normalise_line(&once), once.clone());
            proptest::prop_assert_eq!(line_key(&s).is_some(), !once.is_empty());
        }
    }
}

#[cfg(test)]
mod excerpt_tests {
    use std::io::Cursor;
    use std::sync::Arc;

    use super::*;
    use crate::logs::{Excerpt, ExcerptOptions, excerpt_reader};

    /// A GitHub Actions job log: each line behind the runner's timestamp,
    /// which differs between the two runs.
    fn actions(lines: &[String], second: u32) -> String {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "2024-05-0{}T10:{:02}:{:02}.{:07}Z {l}\n",
                    1 + second % 8,
                    second % 60,
                    i % 60,
                    i * 7919
                )
            })
            .collect()
    }

    fn excerpt(log: &str, baseline: Option<&str>) -> Excerpt {
        let opts = ExcerptOptions {
            baseline: baseline.map(|b| {
                Arc::new(Baseline::from_reader(Cursor::new(b.as_bytes().to_vec()), 4096).unwrap())
            }),
            ..ExcerptOptions::default()
        };
        excerpt_reader(Cursor::new(log.as_bytes().to_vec()), &opts).unwrap()
    }

    fn texts(ex: &Excerpt) -> String {
        ex.lines
            .iter()
            .map(|l| format!("{}\n", clean_line(&l.text)))
            .collect()
    }

    fn install(took: &str) -> Vec<String> {
        vec![
            "##[group]Run npm ci".into(),
            "npm WARN deprecated request@2.88.2: request has been deprecated, see https://github.com/request/request/issues/3142".into(),
            "npm WARN deprecated har-validator@5.1.5: this library is no longer supported".into(),
            format!("added 1234 packages, and audited 1235 packages in {took}"),
            "##[endgroup]".into(),
            "##[group]Run npm test".into(),
            "> ledger@1.0.0 test".into(),
            "> jest --ci".into(),
            String::new(),
        ]
    }

    #[test]
    fn failure_lines_survive_and_the_green_builds_noise_is_dropped() {
        let mut green = install("12s");
        green.extend([
            "PASS src/ledger.test.js (1.2 s)".to_string(),
            "PASS src/fx.test.js".into(),
            String::new(),
            "Tests:       41 passed, 41 total".into(),
            "Time:        3.21 s".into(),
            String::new(),
            "error: telemetry upload failed: connect ECONNREFUSED 10.1.0.4:4318 (ignored)".into(),
        ]);
        let mut red = install("9.8s");
        red.extend([
            "FAIL src/ledger.test.js (2.0 s)".to_string(),
            "  ● ledger › totals the day".into(),
            String::new(),
            "    expect(received).toBe(expected) // Object.is equality".into(),
            String::new(),
            "    Expected: 42".into(),
            "    Received: 41".into(),
            String::new(),
            "      at Object.<anonymous> (src/ledger.test.js:12:5)".into(),
            String::new(),
            "PASS src/fx.test.js".into(),
            String::new(),
            "Tests:       1 failed, 40 passed, 41 total".into(),
            "Time:        3.87 s".into(),
            String::new(),
            "error: telemetry upload failed: connect ECONNREFUSED 10.1.0.9:4318 (ignored)".into(),
            "##[error]Process completed with exit code 1.".into(),
        ]);
        let (green, red) = (actions(&green, 1), actions(&red, 7));

        // Without the baseline, the hand-set ranking (what the diagnosis
        // reads) picks the noise.
        let plain = excerpt(&red, None);
        let plain: String = plain
            .read_lines()
            .iter()
            .map(|l| format!("{}\n", l.text))
            .collect();
        assert!(
            plain.contains("telemetry upload failed"),
            "the plain excerpt picks the noise:\n{plain}"
        );

        let diffed = texts(&excerpt(&red, Some(&green)));
        assert!(diffed.contains("FAIL src/ledger.test.js"), "{diffed}");
        assert!(diffed.contains("Expected: 42"), "{diffed}");
        assert!(!diffed.contains("telemetry upload failed"), "{diffed}");
        assert!(!diffed.contains("npm WARN deprecated"), "{diffed}");
    }
}
