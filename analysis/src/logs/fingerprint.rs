//! Sentry-style normalisation of failure text, so that failures which differ
//! only in volatile values (ids, addresses, times, paths, numbers) group
//! under one fingerprint.
//!
//! Replacements, in this order (earlier ones protect their digits from the
//! later ones): ANSI escapes removed, `<uuid>`, `<url>`, `<ip>` for IPv6,
//! `<ts>` (dates and times), `<ip>` for IPv4 (optional port), `<path>` (unix,
//! `~/`, `./`, relative with an extension, windows `C:\..`), `<hex>` (`0x..`
//! and runs of at least 8 hex digits such as git SHAs), `<str>` (`'..'` and `".."`), `<n>`
//! (numbers, with a short unit suffix such as `ms`). Whitespace is collapsed
//! and the result trimmed; case is kept.

use std::net::Ipv6Addr;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use sha2::{Digest, Sha256};

use super::clean::strip_ansi;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid built-in regex")
}

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
});
static URL: LazyLock<Regex> = LazyLock::new(|| re(r#"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>`)\]]+"#));
static TS: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?",
        r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s?[AaPp][Mm]\b)?",
        r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b",
        r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* +\d{1,2}(?:,? \d{4})?\b",
        r"|\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}\b",
    ))
});
static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:\d{1,3}\.){3}\d{1,3}\b(?::\d{1,5}\b)?"));
/// Candidates only: validated with [`Ipv6Addr`] before replacing.
static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\[?(?P<addr>[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7}(?:(?:\.\d{1,3}){3})?)(?:\](?::\d{1,5}\b)?)?",
    )
});
static HEX: LazyLock<Regex> = LazyLock::new(|| re(r"\b0[xX][0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b"));
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?P<pre>^|[^\w.~/\\-])(?P<p>",
        r"[A-Za-z]:\\[^\s:*?<>|'`(),]*",               // windows
        r"|(?:~|\.\.?)?/[\w.@+~-]+(?:/[\w.@+~-]*)*",   // absolute, ~/ ./ ../
        r"|[\w.@+-]+(?:/[\w.@+-]+)+\.[A-Za-z]\w{0,7}", // relative with extension
        r")",
    ))
});
static QUOTED: LazyLock<Regex> = LazyLock::new(|| re(r#""[^"\n]*"|(?P<pre>^|[^\w])'[^'\n]*'"#));
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b\d+(?:,\d{3})*(?:\.\d+)*(?:[a-zA-Z]{1,2})?\b"));
static SPACES: LazyLock<Regex> = LazyLock::new(|| re(r"\s+"));

fn ipv6_replacement(c: &Captures<'_>) -> String {
    let whole = &c[0];
    let addr = &c["addr"];
    let is_ip = |a: &str| a.bytes().any(|b| b.is_ascii_digit()) && a.parse::<Ipv6Addr>().is_ok();
    if is_ip(addr) {
        "<ip>".to_owned()
    } else if whole == addr && addr.ends_with(':') && is_ip(&addr[..addr.len() - 1]) {
        "<ip>:".to_owned()
    } else {
        whole.to_owned()
    }
}

/// Normalises one piece of failure text (see the module doc).
pub fn normalize(text: &str) -> String {
    let mut s = if text.contains('\x1b') {
        strip_ansi(text)
    } else {
        text.to_owned()
    };
    s = UUID.replace_all(&s, "<uuid>").into_owned();
    s = URL.replace_all(&s, "<url>").into_owned();
    // IPv6 before times: candidates are validated, so `12:34:56` survives
    // for the timestamp rule, while an address's `23:45:67` groups do not
    // turn into a time.
    s = IPV6.replace_all(&s, ipv6_replacement).into_owned();
    s = TS.replace_all(&s, "<ts>").into_owned();
    s = IPV4.replace_all(&s, "<ip>").into_owned();
    // Paths before hex: a file name such as `a0000a0a.log` is part of a path.
    s = PATH.replace_all(&s, "${pre}<path>").into_owned();
    s = HEX
        .replace_all(&s, |c: &Captures<'_>| {
            let m = &c[0];
            // A long run needs digits and letters: pure digit runs are numbers.
            let mixed =
                m.bytes().any(|b| b.is_ascii_digit()) && m.bytes().any(|b| b.is_ascii_alphabetic());
            let is_hex = m.starts_with("0x") || m.starts_with("0X") || mixed;
            if is_hex {
                "<hex>".to_owned()
            } else {
                m.to_owned()
            }
        })
        .into_owned();
    s = QUOTED
        .replace_all(&s, |c: &Captures<'_>| {
            format!("{}<str>", c.name("pre").map_or("", |m| m.as_str()))
        })
        .into_owned();
    s = NUMBER.replace_all(&s, "<n>").into_owned();
    SPACES.replace_all(s.trim(), " ").into_owned()
}

/// Fingerprint of a failure: each line normalised, empty ones dropped,
/// joined with `\n`, SHA-256, first 16 bytes as 32 lowercase hex chars.
pub fn fingerprint(lines: &[&str]) -> String {
    let mut hasher = Sha256::new();
    let mut first = true;
    for line in lines {
        let n = normalize(line);
        if n.is_empty() {
            continue;
        }
        if !first {
            hasher.update(b"\n");
        }
        first = false;
        hasher.update(n.as_bytes());
    }
    let digest = hasher.finalize();
    crate::hex(&digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn replaces_uuids() {
        assert_eq!(
            normalize("job 123e4567-e89b-12d3-a456-426614174000 died"),
            "job <uuid> died"
        );
    }

    #[test]
    fn replaces_hex() {
        assert_eq!(
            normalize("at 0x7ff92909cc00 sha deadbeef12 ok"),
            "at <hex> sha <hex> ok"
        );
        assert_eq!(
            normalize("commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
            "commit <hex>"
        );
        assert_eq!(normalize("word abcdefabcd stays"), "word abcdefabcd stays");
    }

    #[test]
    fn a_hex_looking_file_name_stays_part_of_its_path() {
        // Found by `stable_under_volatile_values`: `a0000a0a` is 8 hex digits.
        assert_eq!(
            normalize("at (/a0000a0a.a:1:7)"),
            normalize("at (/a/b.c:2:7)")
        );
        assert_eq!(normalize("open build/deadbeef12.log"), "open <path>");
    }

    #[test]
    fn replaces_timestamps() {
        assert_eq!(normalize("2024-01-02T03:04:05.1234567Z boom"), "<ts> boom");
        assert_eq!(
            normalize("at 12:34:56.789 on 2024-01-02"),
            "at <ts> on <ts>"
        );
        assert_eq!(normalize("Mar 14, 2024 and 3/14/2024"), "<ts> and <ts>");
    }

    #[test]
    fn replaces_ips() {
        assert_eq!(
            normalize("connect 10.0.0.12:5432 failed"),
            "connect <ip> failed"
        );
        assert_eq!(
            normalize("listen [::1]:8080 and fe80::1ff:fe23:4567:890a"),
            "listen <ip> and <ip>"
        );
        assert_eq!(
            normalize("std::vector::push_back"),
            "std::vector::push_back"
        );
    }

    #[test]
    fn replaces_urls_before_paths() {
        assert_eq!(
            normalize("GET https://example.com/a/b?x=1 -> 404"),
            "GET <url> -> <n>"
        );
    }

    #[test]
    fn replaces_paths() {
        assert_eq!(
            normalize("/home/ci/build/src/main.rs:12:5: error"),
            "<path>:<n>:<n>: error"
        );
        assert_eq!(
            normalize(r"in C:\Users\ci\app.cs(4,2)"),
            "in <path>(<n>,<n>)"
        );
        assert_eq!(
            normalize("see src/lib/foo.py line 3"),
            "see <path> line <n>"
        );
        assert_eq!(normalize("open ./out and ~/x/y"), "open <path> and <path>");
        assert_eq!(
            normalize("input/output error and/or"),
            "input/output error and/or"
        );
    }

    #[test]
    fn replaces_quoted() {
        assert_eq!(normalize(r#"key "abc" and 'x y'"#), "key <str> and <str>");
        assert_eq!(normalize("can't find 'foo'"), "can't find <str>");
    }

    #[test]
    fn replaces_numbers_and_collapses_space() {
        assert_eq!(
            normalize("  took 15ms,  3 of 42 (7%)  "),
            "took <n>, <n> of <n> (<n>%)"
        );
        assert_eq!(normalize("test_42 E0463 v2"), "test_42 E0463 v2");
        assert_eq!(normalize("\x1b[31merror\x1b[0m 1"), "error <n>");
    }

    #[test]
    fn fingerprint_shape() {
        let f = fingerprint(&["a 1", "", "b"]);
        assert_eq!(f.len(), 32);
        assert!(f.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(f, fingerprint(&["a 2", "b", "   "]));
    }

    fn uuid() -> impl Strategy<Value = String> {
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    }
    fn sha() -> impl Strategy<Value = String> {
        "[0-9a-f]{40}".prop_filter("digits and letters", |s| {
            s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic())
        })
    }
    fn path() -> impl Strategy<Value = String> {
        "(/[a-z][a-z0-9_]{0,8}){1,5}\\.[a-z]{1,3}"
    }
    fn ts() -> impl Strategy<Value = String> {
        (
            2000u32..2100,
            1u32..13,
            1u32..29,
            0u32..24,
            0u32..60,
            0u32..60,
            0u32..1_000_000,
        )
            .prop_map(|(y, mo, d, h, mi, s, f)| {
                format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f}Z")
            })
    }
    fn ip() -> impl Strategy<Value = String> {
        prop_oneof![
            (any::<[u8; 4]>(), proptest::option::of(1u16..)).prop_map(|(o, p)| {
                let a = format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]);
                p.map_or(a.clone(), |p| format!("{a}:{p}"))
            }),
            any::<[u16; 8]>().prop_map(|g| {
                Ipv6Addr::new(g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7] | 1).to_string()
            }),
        ]
    }

    proptest! {
        #[test]
        fn stable_under_volatile_values(
            n in any::<u32>(), f in 0.0f64..1e6, id in uuid(), h in sha(), p in path(), t in ts(), a in ip(),
        ) {
            let template = |n: &str, f: &str, id: &str, h: &str, p: &str, t: &str, a: &str| {
                vec![
                    format!("{t} ERROR request {id} to {a} failed after {n} retries"),
                    format!("  at handler ({p}:{n}:7) commit {h}"),
                    format!("took {f}s, pointer 0x{h}"),
                ]
            };
            let fixed = template("1", "0.5", "00000000-0000-0000-0000-000000000000", "0123456789abcdef0123",
                "/a/b.c", "2000-01-01T00:00:00Z", "127.0.0.1");
            let varied = template(&n.to_string(), &format!("{f:.3}"), &id, &h, &p, &t, &a);
            let fixed: Vec<&str> = fixed.iter().map(String::as_str).collect();
            let varied: Vec<&str> = varied.iter().map(String::as_str).collect();
            prop_assert_eq!(fingerprint(&fixed), fingerprint(&varied));
        }

        #[test]
        fn different_templates_differ(n in any::<u32>(), a in ip(), p in path()) {
            let refused = format!("connect to {a} failed: connection refused (attempt {n})");
            let denied = format!("connect to {a} failed: permission denied (attempt {n})");
            prop_assert_ne!(fingerprint(&[&refused]), fingerprint(&[&denied]));
            let missing = format!("open {p}: no such file or directory");
            let perm = format!("open {p}: permission denied");
            prop_assert_ne!(fingerprint(&[&missing]), fingerprint(&[&perm]));
        }

        #[test]
        fn normalize_never_panics(s in "\\PC{0,200}") {
            let _ = normalize(&s);
        }
    }
}
