//! The origin verdict (issue 32): did this change break the build, was it
//! already failing, is it flaky, or is it the machine? Decided from the
//! answer's category and the job's history as the run journaled it
//! (`failure_history`, which names the failure's commit), so a resumed run
//! decides the same and no model can steer it.

use faultline_shared::{
    Category, Origin, Specifics, StepRecord,
    tool::{ChangedFiles, FailureHistory, History, Observed},
};

use crate::tools::ToolName;

/// Commits on which the job both passed and failed from which the job is
/// called flaky even when this commit is not one of them.
const FLIPS: usize = 2;

/// The short form of a commit in sentences.
fn short(sha: &str) -> &str {
    faultline_shared::text::truncate_chars(sha, 7)
}

/// The failing job's history as the run journaled it: only a
/// `failure_history` call without arguments counts (it reads the failing
/// job and test of the failure's own repository); a call naming another
/// job or test — which a model may make — never decides the origin.
pub fn history_of(journal: &[StepRecord]) -> Option<FailureHistory> {
    journal
        .iter()
        .rev()
        .filter(|s| ToolName::FailureHistory.is(&s.action))
        .filter(|s| {
            s.action_input.is_null() || s.action_input.as_object().is_some_and(|o| o.is_empty())
        })
        .find_map(|s| Observed(&s.observation).parse_result())
}

/// The files a failure names: its diagnostics' and its failing tests',
/// as the log printed them.
pub fn failure_files(specifics: &Specifics) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let named = specifics
        .diagnostic
        .iter()
        .chain(&specifics.diagnostics)
        .filter_map(|d| d.file.as_deref())
        .chain(
            specifics
                .failing_tests
                .iter()
                .filter_map(|t| t.file.as_deref()),
        );
    for f in named {
        if !files.iter().any(|g| g == f) {
            files.push(f.to_string());
        }
    }
    files
}

/// Most stack-frame files read from a failure's excerpt.
const MAX_FRAME_FILES: usize = 100;

/// The source files of the stack frames in the lines a failure's excerpt
/// shows (the first `log_excerpt` of the failing log, as journaled), in
/// log order: Python's `File "x.py", line 3`, the JVM's `at
/// com.acme.Cart.total(Cart.java:42)` (as `com/acme/Cart.java`), Node's `at
/// f (/w/src/cart.js:10:5)`, Ruby's `cart.rb:12:in`, Go's `/w/cart.go:42
/// +0x1d`, Rust's `panicked at src/cart.rs:10:5`, PHP's `#0 /w/Cart.php(12)`,
/// .NET's `in /w/Cart.cs:line 42`. Third-party packages' frames
/// (`node_modules`, `site-packages`) are left out: a change touching what
/// fails is the project's own file.
pub fn frame_files(journal: &[StepRecord]) -> Vec<String> {
    static FRAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r#"File "(?P<py>[^"]+\.pyx?)", line \d+"#,
            r"|\bat (?P<jvm>(?:[A-Za-z_][\w$]*\.)+)[\w$<>]+\((?P<jfile>[\w$]+\.(?:java|kt|scala|groovy)):\d+\)",
            r"|\bat (?:[^()\s]+ \()?(?P<js>[^\s():]+\.(?:js|mjs|cjs|ts|tsx|jsx)):\d+:\d+\)?\s*$",
            r"|^\s*(?:from )?(?P<rb>[^\s:]+\.rb):\d+:in ",
            r"|^\s+(?P<go>/[^\s:]+\.go):\d+(?: \+0x[0-9a-f]+)?\s*$",
            r"|panicked at (?:'.*', )?(?P<rs>[^\s:']+\.rs):\d+:\d+",
            r"|^#\d+ (?P<php>[^\s(]+\.php)\(\d+\)",
            r"| in (?P<cs>[^\s:]*[/\\][^:]+\.cs):line \d+",
        ))
        .expect("built-in pattern compiles")
    });
    let Some(lines) = journal
        .iter()
        .filter(|s| ToolName::LogExcerpt.is(&s.action))
        .find(|s| s.observation["mode"].as_str() == Some("failure"))
        .and_then(|s| s.observation["lines"].as_array())
    else {
        return Vec::new();
    };
    let mut files: Vec<String> = Vec::new();
    for text in lines.iter().filter_map(|l| l["text"].as_str()) {
        let Some(c) = FRAME.captures(text) else {
            continue;
        };
        let file = if let (Some(pkg), Some(file)) = (c.name("jvm"), c.name("jfile")) {
            // `com.acme.Cart$Line.` names the class: its package is the path.
            let segments: Vec<&str> = pkg.as_str().trim_end_matches('.').split('.').collect();
            let dir = segments[..segments.len().saturating_sub(1)].join("/");
            if dir.is_empty() {
                file.as_str().to_string()
            } else {
                format!("{dir}/{}", file.as_str())
            }
        } else {
            match ["py", "js", "rb", "go", "rs", "php", "cs"]
                .iter()
                .find_map(|n| c.name(n))
            {
                Some(m) => m.as_str().replace('\\', "/"),
                None => continue,
            }
        };
        let third_party = ["node_modules/", "site-packages/", "dist-packages/"]
            .iter()
            .any(|p| file.contains(p));
        if !third_party && !file.starts_with("node:") && !files.contains(&file) {
            files.push(file);
            if files.len() >= MAX_FRAME_FILES {
                break;
            }
        }
    }
    files
}

/// Other repositories failing the same way at the same time from which a
/// failure is the infrastructure's.
const OTHER_REPOSITORIES: i64 = 2;

/// Most touched files named in a sentence.
const NAMED_FILES: usize = 5;

/// Whether `logged`, a file as the log names it (relative, or under a CI
/// workspace, or absolute under one we do not know), is `changed`, a
/// repository path as the CI source lists it. A path relative to a
/// subproject (`src/a.ts` for `web/src/a.ts`) is the file too.
fn same_file(changed: &str, logged: &str) -> bool {
    let logged = logged.trim().replace('\\', "/");
    match faultline_shared::pr_comment::repository_path(&logged) {
        Some(p) => p == changed || changed.ends_with(&format!("/{p}")),
        None => logged.ends_with(&format!("/{changed}")),
    }
}

/// The files the change touched that the failure names, in the change's
/// order.
pub fn touched<'a>(change: &'a ChangedFiles, failure_files: &[String]) -> Vec<&'a str> {
    change
        .files
        .iter()
        .filter(|c| failure_files.iter().any(|f| same_file(c, f)))
        .map(String::as_str)
        .collect()
}

/// `a`, `b` and 3 more.
fn listed(files: &[&str]) -> String {
    let mut out: Vec<String> = files
        .iter()
        .take(NAMED_FILES)
        .map(|f| format!("`{f}`"))
        .collect();
    if files.len() > NAMED_FILES {
        out.push(format!("{} more", files.len() - NAMED_FILES));
    }
    out.join(", ")
}

/// What the change's files say about a failure that is new with it.
fn change_evidence(change: &ChangedFiles, failure_files: &[String]) -> Option<String> {
    if let Some(e) = &change.error {
        return Some(format!(
            "the change's files were not read ({}): {e}",
            change.source
        ));
    }
    let hit = touched(change, failure_files);
    let read = format!(
        "{} file{}{}",
        change.files.len(),
        if change.files.len() == 1 { "" } else { "s" },
        if change.truncated {
            " read of more"
        } else {
            ""
        }
    );
    if !hit.is_empty() {
        return Some(format!(
            "the change ({}, {read}) touched {}, which the failure names",
            change.source,
            listed(&hit)
        ));
    }
    (!failure_files.is_empty()).then(|| {
        format!(
            "the change ({}, {read}) touched none of the files the failure names",
            change.source
        )
    })
}

/// Why `h` (newest first) shows `subject` failing before `commit` and not
/// passing since: the first failure of the current streak on another
/// commit, its build and commit, the streak's length, the last pass.
fn already_failing(h: &History, commit: Option<&str>, subject: &str) -> Option<String> {
    // The failures since the last pass, newest first.
    let streak: Vec<_> = h
        .recent
        .iter()
        .take_while(|o| o.outcome != "success")
        .filter(|o| o.outcome == "failure")
        .collect();
    let first = streak
        .iter()
        .rev()
        .find(|o| o.commit_sha.as_deref().is_some_and(|c| Some(c) != commit))?;
    let build = first
        .build_number
        .as_deref()
        .map(|b| format!("build {b}, "))
        .unwrap_or_default();
    let since_pass = match &h.last_passing_commit {
        Some(c) => format!("; it last passed on {}", short(c)),
        None => "; no pass is recorded".into(),
    };
    Some(format!(
        "{subject} was failing before this change: since {build}commit {} ({}), {} failures in a row{since_pass}",
        short(first.commit_sha.as_deref().unwrap_or("?")),
        first.at,
        h.consecutive_failures.max(streak.len() as i64),
    ))
}

/// The origin of a failure of `category` and the facts that decided it:
/// from the job's history and, when it was read with it, the change's
/// files against `failure_files` (the files the failure names: its
/// diagnostics', its failing tests').
pub fn decide(
    category: Category,
    history: Option<&FailureHistory>,
    failure_files: &[String],
) -> (Origin, Vec<String>) {
    if category == Category::InfraError {
        return (
            Origin::Infrastructure,
            vec!["the failure is the machine or the network (INFRA_ERROR), not the code".into()],
        );
    }
    let Some(read) = history else {
        return (
            Origin::Unknown,
            vec!["no history of the job was read".into()],
        );
    };
    // The same failure in unrelated repositories at the same time: what
    // they share is the machine, the network or a service. Not for a code
    // error or a failed test: a fingerprint normalises files, numbers and
    // quoted values away, so one kind of type error or of assertion in
    // several repositories shares it by coincidence, not by cause.
    if let Some(e) = read
        .elsewhere
        .as_ref()
        .filter(|e| e.repositories >= OTHER_REPOSITORIES)
        .filter(|_| !matches!(category, Category::CodeError | Category::TestFailure))
    {
        return (
            Origin::Infrastructure,
            vec![format!(
                "the same failure (same fingerprint) failed in {} other repositories within {} \
                 minutes of this one ({} failures): what they share is the machine, the network \
                 or a service, not this change",
                e.repositories, e.within_minutes, e.failures
            )],
        );
    }
    let h = &read.history;
    let subject = match (&read.job, &read.test) {
        (_, Some(t)) => format!("test `{t}`"),
        (Some(j), None) => format!("job `{j}`"),
        (None, None) => "the job".to_string(),
    };
    let counts = format!("{} failures and {} passes recorded", h.failures, h.passes);
    let commit = read.commit.as_deref();
    if let Some(c) = commit.filter(|c| h.flaky_commits.iter().any(|f| f == c)) {
        return (
            Origin::Flaky,
            vec![format!(
                "{subject} both passed and failed on this commit ({}): {counts}",
                short(c)
            )],
        );
    }
    // Already failing where the change is to land (the pull request's
    // base, else the default branch) when the failure says which branch
    // that is; else anywhere in the job's history.
    if let Some(why) = match &read.target {
        Some(t) => {
            let on = match (&t.job, &read.test) {
                (Some(j), Some(test)) => format!("test `{test}` in the target branch's job `{j}`"),
                (Some(j), None) => format!("the target branch's job `{j}`"),
                (None, _) => format!("{subject} on `{}`", t.branch),
            };
            already_failing(&t.history, commit, &on)
        }
        None => already_failing(h, commit, &subject),
    } {
        return (Origin::AlreadyFailing, vec![why]);
    }
    if h.flaky_commits.len() >= FLIPS {
        return (
            Origin::Flaky,
            vec![format!(
                "{subject} both passed and failed on {} commits ({}): {counts}",
                h.flaky_commits.len(),
                h.flaky_commits
                    .iter()
                    .map(|c| short(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            )],
        );
    }
    if h.passes > 0 {
        let last = match (&h.last_passing_commit, &h.last_pass) {
            (Some(c), Some(at)) => format!(" on {} ({at})", short(c)),
            (Some(c), None) => format!(" on {}", short(c)),
            _ => String::new(),
        };
        let mut why = vec![format!(
            "{subject} passed{last} and fails now: the failure is new with this change"
        )];
        why.extend(
            read.change
                .as_ref()
                .and_then(|c| change_evidence(c, failure_files)),
        );
        return (Origin::ThisChange, why);
    }
    // No pass to compare with, but the change touched what fails.
    if let Some(change) = read.change.as_ref().filter(|c| c.error.is_none()) {
        let hit = touched(change, failure_files);
        if !hit.is_empty() {
            return (
                Origin::ThisChange,
                vec![format!(
                    "{subject} has no pass on record ({counts}), but the change ({}) touched {}, \
                     which the failure names",
                    change.source,
                    listed(&hit)
                )],
            );
        }
    }
    (
        Origin::Unknown,
        vec![format!(
            "{subject} has no pass on record to compare with ({counts})"
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_shared::tool::{BranchHistory, History, Outcome};

    fn outcome(outcome: &str, commit: &str, build: &str) -> Outcome {
        Outcome {
            at: format!("2026-11-2{build}T10:00:00Z"),
            outcome: outcome.into(),
            commit_sha: Some(commit.into()),
            build_number: Some(build.into()),
            source: "github".into(),
        }
    }

    /// A history of `recent` (newest first) for a failure on `commit`.
    fn read(commit: &str, recent: Vec<Outcome>) -> FailureHistory {
        let failures = recent.iter().filter(|o| o.outcome == "failure").count() as i64;
        let passes = recent.iter().filter(|o| o.outcome == "success").count() as i64;
        let last_pass = recent.iter().find(|o| o.outcome == "success");
        let mut by_commit: Vec<String> = Vec::new();
        for o in &recent {
            let c = o.commit_sha.clone().unwrap();
            let both = recent
                .iter()
                .any(|p| p.commit_sha.as_ref() == Some(&c) && p.outcome != o.outcome);
            if both && !by_commit.contains(&c) {
                by_commit.push(c);
            }
        }
        FailureHistory {
            job: Some("CI / test".into()),
            test: None,
            commit: Some(commit.into()),
            history: History {
                failures,
                passes,
                last_pass: last_pass.map(|o| o.at.clone()),
                last_passing_commit: last_pass.and_then(|o| o.commit_sha.clone()),
                consecutive_failures: recent.iter().take_while(|o| o.outcome != "success").count()
                    as i64,
                flaky: !by_commit.is_empty(),
                flaky_commits: by_commit,
                recent,
                ..History::default()
            },
            change: None,
            elsewhere: None,
            branch: None,
            target: None,
        }
    }

    #[test]
    fn already_failing_is_measured_on_the_target_branch_when_the_failure_names_one() {
        // The pull request's own earlier commit failed too; the base
        // branch passed last: the change broke it, whatever the branch did.
        let mut pr = read(
            "ccccccc1",
            vec![
                outcome("failure", "ccccccc1", "7"),
                outcome("failure", "bbbbbbb1", "6"),
                outcome("success", "aaaaaaa1", "5"),
            ],
        );
        assert_eq!(
            decide(Category::TestFailure, Some(&pr), &[]).0,
            Origin::AlreadyFailing,
            "without a branch, the whole history counts"
        );
        pr.branch = Some("feature".into());
        pr.target = Some(BranchHistory {
            branch: "main".into(),
            job: None,
            history: read("ccccccc1", vec![outcome("success", "aaaaaaa1", "5")]).history,
        });
        let (o, why) = decide(Category::TestFailure, Some(&pr), &[]);
        assert_eq!(o, Origin::ThisChange, "{why:?}");
        // The base branch fails since build 3 and has not passed since.
        pr.target = Some(BranchHistory {
            branch: "main".into(),
            job: None,
            history: read(
                "ccccccc1",
                vec![
                    outcome("failure", "9999999a", "4"),
                    outcome("failure", "8888888a", "3"),
                    outcome("success", "7777777a", "2"),
                ],
            )
            .history,
        });
        let (o, why) = decide(Category::TestFailure, Some(&pr), &[]);
        assert_eq!(o, Origin::AlreadyFailing);
        assert!(
            why[0].starts_with(
                "job `CI / test` on `main` was failing before this change: since build 3, commit 8888888"
            ) && why[0].ends_with("2 failures in a row; it last passed on 7777777"),
            "{why:?}"
        );
    }

    #[test]
    fn a_logged_file_is_the_changed_path_under_a_workspace_a_subproject_or_an_unknown_root() {
        let changed = "web/src/basket.ts";
        for logged in [
            "web/src/basket.ts",
            "./web/src/basket.ts",
            "/home/runner/work/shop/shop/web/src/basket.ts",
            "src/basket.ts",
            "/srv/ci/checkout/web/src/basket.ts",
            "web\\src\\basket.ts",
        ] {
            assert!(same_file(changed, logged), "{logged}");
        }
        for logged in [
            "src/mybasket.ts",
            "basket.ts.orig",
            "/srv/other/basket.js",
            "/srv/ci/web/src/basket.tsx",
        ] {
            assert!(!same_file(changed, logged), "{logged}");
        }
    }

    #[test]
    fn stack_frames_name_the_project_s_files_and_a_touched_one_decides() {
        let lines: Vec<serde_json::Value> = [
            "Traceback (most recent call last):",
            r#"  File "/home/runner/work/shop/shop/shop/cart.py", line 41, in total"#,
            r#"  File "/usr/lib/python3/site-packages/decimal_ext/core.py", line 9, in q"#,
            "java.lang.NullPointerException: price",
            "\tat com.acme.shop.Cart$Line.total(Cart.java:42)",
            "\tat org.junit.runners.ParentRunner.run(ParentRunner.java:363)",
            "    at Basket.sum (/home/runner/work/shop/shop/web/src/basket.ts:10:5)",
            "    at Object.<anonymous> (node_modules/jest-circus/build/run.js:1:1)",
            "/w/app/models/order.rb:12:in `place'",
            "\t/home/runner/work/shop/shop/pkg/tax/tax.go:42 +0x1d",
            "thread 'sum' panicked at src/ledger.rs:10:5:",
            "#0 /var/www/src/Invoice.php(12): Invoice->total()",
            "   at Shop.Cart.Total() in /w/src/Cart.cs:line 42",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"n": i + 1, "text": t}))
        .collect();
        let journal = vec![StepRecord {
            action: ToolName::LogExcerpt.as_str().into(),
            observation: serde_json::json!({"mode": "failure", "lines": lines}),
            ..StepRecord::default()
        }];
        let files = frame_files(&journal);
        assert_eq!(
            files,
            [
                "/home/runner/work/shop/shop/shop/cart.py",
                "com/acme/shop/Cart.java",
                "org/junit/runners/ParentRunner.java",
                "/home/runner/work/shop/shop/web/src/basket.ts",
                "/w/app/models/order.rb",
                "/home/runner/work/shop/shop/pkg/tax/tax.go",
                "src/ledger.rs",
                "/var/www/src/Invoice.php",
                "/w/src/Cart.cs",
            ]
        );
        // A change that touched a frame's file and no file of the report:
        // with no pass on record, the change is what fails.
        let change = ChangedFiles {
            source: "pull request #3".into(),
            files: vec![
                "README.md".into(),
                "core/src/main/java/com/acme/shop/Cart.java".into(),
            ],
            truncated: false,
            error: None,
        };
        let mut first = read("bbbbbbb1", vec![outcome("failure", "bbbbbbb1", "5")]);
        first.change = Some(change);
        assert_eq!(
            decide(Category::CodeError, Some(&first), &[]).0,
            Origin::Unknown
        );
        let (o, why) = decide(Category::CodeError, Some(&first), &files);
        assert_eq!(o, Origin::ThisChange, "{why:?}");
        assert!(
            why[0].contains("`core/src/main/java/com/acme/shop/Cart.java`"),
            "{why:?}"
        );
    }

    #[test]
    fn the_change_s_files_name_what_it_touched_and_decide_when_no_pass_is_on_record() {
        let change = ChangedFiles {
            source: "pull request #12".into(),
            files: (0..8).map(|i| format!("src/m{i}.ts")).collect(),
            truncated: true,
            error: None,
        };
        let failing: Vec<String> = (0..7).map(|i| format!("src/m{i}.ts")).collect();
        let mut h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        h.change = Some(change.clone());
        let (o, why) = decide(Category::CodeError, Some(&h), &failing);
        assert_eq!(o, Origin::ThisChange);
        assert_eq!(
            why[1],
            "the change (pull request #12, 8 files read of more) touched `src/m0.ts`, `src/m1.ts`, \
             `src/m2.ts`, `src/m3.ts`, `src/m4.ts`, 2 more, which the failure names"
        );
        // No pass on record: the touched files decide; none touched, unknown.
        let mut first = read("bbbbbbb1", vec![outcome("failure", "bbbbbbb1", "5")]);
        first.change = Some(change.clone());
        assert_eq!(
            decide(Category::TestFailure, Some(&first), &failing).0,
            Origin::ThisChange
        );
        let elsewhere = vec!["lib/other.ts".to_string()];
        assert_eq!(
            decide(Category::TestFailure, Some(&first), &elsewhere).0,
            Origin::Unknown
        );
        // An unread change never decides, and says why.
        first.change = Some(ChangedFiles {
            error: Some("GitHub answered 404".into()),
            ..change
        });
        assert_eq!(
            decide(Category::TestFailure, Some(&first), &failing).0,
            Origin::Unknown
        );
        h.change = first.change.clone();
        let (_, why) = decide(Category::CodeError, Some(&h), &failing);
        assert!(
            why[1].starts_with("the change's files were not read"),
            "{why:?}"
        );
    }

    #[test]
    fn the_same_failure_in_other_repositories_is_infrastructure_unless_it_is_the_code_s_or_a_test_s()
     {
        let mut h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        h.elsewhere = Some(faultline_shared::tool::Elsewhere {
            repositories: 2,
            failures: 3,
            within_minutes: 60,
        });
        let (o, why) = decide(Category::DependencyError, Some(&h), &[]);
        assert_eq!(o, Origin::Infrastructure, "{why:?}");
        assert!(
            why[0].contains("2 other repositories within 60 minutes"),
            "{why:?}"
        );
        for own in [Category::CodeError, Category::TestFailure] {
            assert_eq!(decide(own, Some(&h), &[]).0, Origin::ThisChange, "{own}");
        }
        h.elsewhere.as_mut().unwrap().repositories = 1;
        assert_eq!(
            decide(Category::DependencyError, Some(&h), &[]).0,
            Origin::ThisChange
        );
    }

    #[test]
    fn a_failure_after_a_pass_is_this_change() {
        let h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        let (o, why) = decide(Category::TestFailure, Some(&h), &[]);
        assert_eq!(o, Origin::ThisChange, "{why:?}");
        assert!(
            why[0].contains("passed on aaaaaaa") && why[0].contains("new with this change"),
            "{why:?}"
        );
    }

    #[test]
    fn a_failure_that_started_on_an_earlier_commit_is_already_failing_and_named() {
        let h = read(
            "ccccccc1",
            vec![
                outcome("failure", "ccccccc1", "7"),
                outcome("failure", "bbbbbbb1", "6"),
                outcome("failure", "bbbbbbb0", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        let (o, why) = decide(Category::CodeError, Some(&h), &[]);
        assert_eq!(o, Origin::AlreadyFailing, "{why:?}");
        assert!(
            why[0].contains("build 5, commit bbbbbbb") && why[0].contains("3 failures in a row"),
            "{why:?}"
        );
        assert!(why[0].contains("last passed on aaaaaaa"), "{why:?}");
    }

    #[test]
    fn a_commit_that_passed_and_failed_is_flaky() {
        let h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "6"),
                outcome("success", "bbbbbbb1", "5"),
                outcome("failure", "aaaaaaa1", "4"),
            ],
        );
        let (o, why) = decide(Category::TestFailure, Some(&h), &[]);
        assert_eq!(o, Origin::Flaky, "{why:?}");
        assert!(
            why[0].contains("this commit (bbbbbbb)") && why[0].contains("2 failures and 1 passes"),
            "{why:?}"
        );
    }

    #[test]
    fn re_runs_failing_on_the_same_commit_after_a_pass_are_still_this_change() {
        let h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "6"),
                outcome("failure", "bbbbbbb1", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        assert_eq!(
            decide(Category::TestFailure, Some(&h), &[]).0,
            Origin::ThisChange
        );
    }

    #[test]
    fn only_a_history_of_the_failing_job_itself_decides() {
        let step = |input: serde_json::Value, job: &str| StepRecord {
            action: ToolName::FailureHistory.as_str().into(),
            action_input: input,
            observation: serde_json::to_value(FailureHistory {
                job: Some(job.into()),
                ..FailureHistory::default()
            })
            .unwrap(),
            ..StepRecord::default()
        };
        let own = step(serde_json::json!({}), "CI / test");
        let steered = step(serde_json::json!({"job": "other"}), "other");
        let read = history_of(&[own.clone(), steered]).unwrap();
        assert_eq!(read.job.as_deref(), Some("CI / test"));
        assert!(history_of(&[step(serde_json::json!({"job": "other"}), "other")]).is_none());
    }

    #[test]
    fn infrastructure_is_decided_by_the_category_and_no_history_is_unknown() {
        let h = read(
            "bbbbbbb1",
            vec![
                outcome("failure", "bbbbbbb1", "5"),
                outcome("success", "aaaaaaa1", "4"),
            ],
        );
        assert_eq!(
            decide(Category::InfraError, Some(&h), &[]).0,
            Origin::Infrastructure
        );
        let (o, why) = decide(Category::CodeError, None, &[]);
        assert_eq!(o, Origin::Unknown);
        assert_eq!(why, ["no history of the job was read"]);
        let first = read("bbbbbbb1", vec![outcome("failure", "bbbbbbb1", "5")]);
        assert_eq!(
            decide(Category::CodeError, Some(&first), &[]).0,
            Origin::Unknown
        );
    }
}
