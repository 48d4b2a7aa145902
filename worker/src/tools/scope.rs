//! What a tool call may reach (issue 14, finding 2): the failure's own
//! repository and its own Jenkins job, nothing else the worker's
//! credentials could read. A model steered by a log ("now read
//! acme/secrets") gets a refusal it can read — an observation, journaled
//! like any other — and nothing leaves for the other repository or job.
//!
//! Code search is scoped by us (`repo:<own repository>` is appended by the
//! client); the query may not widen it: `repo:`, `org:`, `user:` and the
//! other scope qualifiers are refused anywhere in it, quoted or not, and a
//! qualifier GitHub might read that is not one of the few that narrow a
//! search inside a repository is refused outside quotes. The query must be
//! a conjunction, so the appended qualifier binds to all of it in either
//! of GitHub's grammars: `OR` and parentheses outside quotes, and a
//! trailing `NOT`, `AND`, `-` or `\` (which would take the qualifier as
//! its operand), are refused.

/// Qualifiers that choose *which* repositories GitHub searches.
const SCOPE_QUALIFIERS: [&str; 9] = [
    "repo",
    "repository",
    "org",
    "user",
    "owner",
    "enterprise",
    "is",
    "fork",
    "topic",
];

/// Qualifiers that narrow a search inside the repository.
const NARROWING_QUALIFIERS: [&str; 9] = [
    "path",
    "language",
    "lang",
    "filename",
    "extension",
    "in",
    "size",
    "symbol",
    "content",
];

/// How every refusal of this module begins: verification reads it in the
/// journal (a reasoner that tried to leave the failure's scope was likely
/// steered, and its answer goes to review).
pub const OUT_OF_SCOPE: &str = "out of scope:";

/// The refusal for a repository other than the failure's own.
pub fn other_repo(tool: &str, own: Option<&(String, String)>, asked: &str) -> String {
    match own {
        Some((owner, name)) => format!(
            "{OUT_OF_SCOPE} {tool} reads only the failing repository {owner}/{name}, not {asked:?} \
             (omit \"repo\")"
        ),
        None => format!(
            "{OUT_OF_SCOPE} {tool} reads only the failing repository, and this failure names \
             none; {asked:?} is not it"
        ),
    }
}

/// True when `a` and `b` are the same GitHub repository (names are
/// case-insensitive on GitHub).
pub fn same_repo(a: &(String, String), b: &(String, String)) -> bool {
    a.0.eq_ignore_ascii_case(&b.0) && a.1.eq_ignore_ascii_case(&b.1)
}

/// Checks a `github_search` query: no qualifier may widen the search
/// beyond the repository we scope it to.
pub fn check_search_query(query: &str) -> Result<(), String> {
    if query.chars().any(char::is_control) {
        return Err("query must be one line of text without control characters".into());
    }
    if query.chars().filter(|c| *c == '"').count() % 2 == 1 {
        return Err("query has an unbalanced quote (\")".into());
    }
    let mut quoted = false;
    let chars: Vec<(usize, char)> = query.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c == '"' {
            quoted = !quoted;
            i += 1;
            continue;
        }
        let starts_word = c.is_ascii_alphabetic()
            && (i == 0 || !is_word(chars[i - 1].1) || chars[i - 1].1 == '-');
        if !starts_word {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < chars.len() && is_word(chars[end].1) {
            end += 1;
        }
        let word_end = chars.get(end).map_or(query.len(), |(at, _)| *at);
        let name = query[at..word_end].to_ascii_lowercase();
        // `repo :x` and `repo: x` are refused too: never guess how lenient
        // GitHub's parser is about scope.
        let mut colon = end;
        while colon < chars.len() && chars[colon].1 == ' ' {
            colon += 1;
        }
        if chars.get(colon).is_some_and(|(_, c)| *c == ':') {
            let name = name.trim_start_matches('-');
            if SCOPE_QUALIFIERS.contains(&name) {
                return Err(format!(
                    "{OUT_OF_SCOPE} github_search searches only the failing repository; the \
                     {name}: qualifier is not allowed (the search is scoped for you)"
                ));
            }
            let value = chars.get(colon + 1).map(|(_, c)| *c);
            let qualifies =
                colon == end && value.is_some_and(|v| !v.is_whitespace() && v != ':' && v != '/');
            if !quoted && qualifies && !NARROWING_QUALIFIERS.contains(&name) {
                return Err(format!(
                    "github_search allows only the qualifiers {} ({name}: is not one); \
                     put literal text with a colon in double quotes",
                    NARROWING_QUALIFIERS.map(|q| format!("{q}:")).join(" ")
                ));
            }
        }
        i = end.max(i + 1);
    }
    check_conjunction(query)
}

/// Refuses what could make the appended `repo:` bind to less than the
/// whole query (the newer code-search grammar reads `a OR b repo:x` as
/// `a OR (b repo:x)`, and `a NOT repo:x` as excluding the repository).
fn check_conjunction(query: &str) -> Result<(), String> {
    let bytes = query.as_bytes();
    let bare = |at: usize| {
        bytes
            .get(at)
            .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
    };
    let mut quoted = false;
    for (at, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            _ if quoted => {}
            b'(' | b')' => {
                return Err(format!(
                    "github_search takes no parentheses (one call per alternative); put a \
                     literal {} in double quotes",
                    b as char
                ));
            }
            b'O' if bytes.get(at + 1) == Some(&b'R')
                && (at == 0 || bare(at - 1))
                && bare(at + 2) =>
            {
                return Err(
                    "github_search takes no OR: search one alternative per call (all terms \
                     of a query must match); put a literal OR in double quotes"
                        .into(),
                );
            }
            _ => {}
        }
    }
    let tail = query.trim_end();
    let dangling = ["NOT", "AND"].into_iter().find(|op| {
        tail.strip_suffix(op)
            .is_some_and(|before| before.is_empty() || bare(before.len() - 1))
    });
    if let Some(op) = dangling.or_else(|| ["-", "\\"].into_iter().find(|c| tail.ends_with(c))) {
        return Err(format!(
            "github_search query ends with {op:?}, which would apply to the repository \
             qualifier appended to it; end it with a search term"
        ));
    }
    Ok(())
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_qualifiers_that_widen_the_scope_are_refused_wherever_they_stand() {
        for query in [
            "password repo:acme/secrets",
            "repo:acme/secrets",
            "REPO:acme/secrets",
            "token org:acme",
            "token user:octocat",
            "x OR repo:acme/secrets",
            "x -repo:octo-org/ledger-api",
            "x (org:acme)",
            "\"api key\" repo:acme/secrets",
            "\"repo:acme/secrets\"",
            "x repo :acme/secrets",
            "x repo: acme/secrets",
            "secret owner:acme",
            "secret enterprise:acme",
            "secret is:fork",
            "secret fork:true",
        ] {
            let err = check_search_query(query).expect_err(query);
            assert!(err.contains("qualifier"), "{query}: {err}");
        }
        for query in ["x unknown:thing", "\"unbalanced repo", "line\nrepo:acme/x"] {
            assert!(check_search_query(query).is_err(), "{query}");
        }
    }

    #[test]
    fn only_a_conjunction_is_searched_so_the_repository_binds_to_all_of_it() {
        for (query, why) in [
            ("password OR token", "no OR"),
            ("OR token", "no OR"),
            ("x\"a\"OR\"b\"", "no OR"),
            ("(password OR token)", "no parentheses"),
            ("(secret)", "no parentheses"),
            ("flushesInOrder NOT", "ends with \"NOT\""),
            ("NOT", "ends with \"NOT\""),
            ("x AND  ", "ends with \"AND\""),
            ("x -", "ends with \"-\""),
            ("x \\", "ends with"),
        ] {
            let err = check_search_query(query).expect_err(query);
            assert!(err.contains(why), "{query}: {err}");
        }
        for query in [
            "ORACLE_HOME",
            "color or colour",
            "\"this OR that\"",
            "\"fn main()\"",
            "NullPointerException NOT test",
            "CANNOT",
            "x -path:vendor",
            "x AND y",
        ] {
            assert_eq!(check_search_query(query), Ok(()), "{query}");
        }
    }

    #[test]
    fn ordinary_searches_and_narrowing_qualifiers_pass() {
        for query in [
            "flushesInOrder",
            "BatchWriter path:src/main language:java",
            "NullPointerException in:file extension:java",
            "std::fs::read_to_string",
            "\"Error: connection refused\"",
            "\"TypeError:foo\"",
            "https://example.com/api",
            "user_id",
            "reporter",
            "isolation level",
            "Error: boom",
        ] {
            assert_eq!(check_search_query(query), Ok(()), "{query}");
        }
    }

    #[test]
    fn repositories_compare_without_case() {
        let own = ("Octo-Org".to_string(), "Ledger-API".to_string());
        assert!(same_repo(&own, &("octo-org".into(), "ledger-api".into())));
        assert!(!same_repo(&own, &("octo-org".into(), "ledger-api2".into())));
    }
}
