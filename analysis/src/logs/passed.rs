//! Tests that passed, as their runners bracket them: the lines a test
//! printed between its runner's start line and its runner's verdict that it
//! passed say nothing of why the job failed — a passing run prints the same
//! (an expected exception's stack trace, a logged connection error of a
//! test that exercises its retry). The diagnosis does not read them
//! ([`super::Excerpt::passed`]); the excerpt's ranking does not change.
//!
//! Two runners print such brackets around a test's own output:
//! - Maven Surefire: `Running com.acme.CartTest` (`[INFO] Running …` since
//!   2.19 under Maven's level prefix) … `Tests run: 4, Failures: 0, Errors:
//!   0, Skipped: 0, Time elapsed: 0.1 sec` (` - in com.acme.CartTest` since
//!   2.19);
//! - `go test -v`: `=== RUN   TestCart` … `--- PASS: TestCart (0.01s)`.
//!
//! Only a bracket with no other test started inside it counts: forked or
//! parallel runs interleave their classes' output (`Running A`, `Running
//! B`, then both verdicts), and nothing then says whose lines are whose.

use std::collections::VecDeque;
use std::sync::LazyLock;

use regex::Regex;

/// Ranges kept per log (adjacent ones merge): bounded memory whatever the
/// log's size; the oldest go first.
pub const MAX_PASSED: usize = 256;

/// Lines between two brackets that still merge them (Surefire's blank and
/// `Results :` lines between classes do not split a run of passing
/// classes, but another test's output does).
const MERGE_GAP: u64 = 2;

static START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\[INFO\] )?Running (?P<class>[\w.$]+)\s*$|^=== RUN\s+(?P<test>\S+)\s*$")
        .expect("built-in pattern compiles")
});

static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\[(?:INFO|WARNING|ERROR)\] )?Tests run: \d+, Failures: (?P<failures>\d+), Errors: (?P<errors>\d+), Skipped: \d+(?:, Flakes: \d+)?, Time elapsed: [^<-]*?(?:<<< [A-Z]+!\s*)?(?: - in (?P<class>[\w.$]+))?\s*$",
        r"|^\s*--- (?P<go>PASS|FAIL|SKIP): (?P<test>\S+) \(",
    ))
    .expect("built-in pattern compiles")
});

/// The streaming tracker: feed it every line (cleaned), in order.
#[derive(Debug, Default)]
pub struct PassedTests {
    /// The test whose output is being printed: its start line and name,
    /// while it is the only test started and not yet judged.
    open: Option<(u64, String)>,
    /// Tests started and not yet judged.
    pending: u32,
    ranges: VecDeque<(u64, u64)>,
}

impl PassedTests {
    /// Reads line `no` (its text cleaned of ANSI codes and timestamps).
    pub fn push(&mut self, no: u64, clean: &str) {
        // Cheap prefilter: both runners' lines start with one of these.
        let t = clean.trim_end();
        if !(t.contains("Running ")
            || t.starts_with("=== RUN")
            || t.contains("Tests run: ")
            || t.trim_start().starts_with("--- "))
        {
            return;
        }
        if let Some(c) = START.captures(t) {
            let name = c
                .name("class")
                .or_else(|| c.name("test"))
                .map_or("", |m| m.as_str());
            self.pending += 1;
            // A second test started before the first one's verdict: an
            // interleaved run, whose lines nothing attributes.
            self.open = (self.pending == 1).then(|| (no, name.to_string()));
            return;
        }
        let Some(c) = VERDICT.captures(t) else {
            return;
        };
        let passed = match c.name("go") {
            Some(g) => g.as_str() == "PASS",
            None => c["failures"] == *"0" && c["errors"] == *"0",
        };
        let named = c.name("class").or_else(|| c.name("test"));
        self.pending = self.pending.saturating_sub(1);
        if let Some((start, name)) = self.open.take()
            && passed
            && named.is_none_or(|n| n.as_str() == name)
        {
            self.record(start, no);
        }
    }

    fn record(&mut self, start: u64, end: u64) {
        if let Some(last) = self.ranges.back_mut()
            && start <= last.1 + MERGE_GAP
        {
            last.1 = end;
            return;
        }
        if self.ranges.len() >= MAX_PASSED {
            self.ranges.pop_front();
        }
        self.ranges.push_back((start, end));
    }

    /// The brackets of tests that passed: first and last line, log order.
    pub fn finish(self) -> Vec<(u64, u64)> {
        self.ranges.into()
    }
}

/// Whether line `no` lies inside one of `ranges` (sorted, as
/// [`PassedTests::finish`] returns them).
pub fn inside(ranges: &[(u64, u64)], no: u64) -> bool {
    let i = ranges.partition_point(|r| r.1 < no);
    ranges.get(i).is_some_and(|r| r.0 <= no)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(log: &str) -> Vec<(u64, u64)> {
        let mut p = PassedTests::default();
        for (i, l) in log.lines().enumerate() {
            p.push(i as u64 + 1, l);
        }
        p.finish()
    }

    #[test]
    fn a_surefire_class_that_passed_brackets_its_output_and_one_that_failed_does_not() {
        let log = "\
Running com.acme.shop.CartTest
java.lang.IllegalStateException: expected by the test
\tat com.acme.shop.Cart.add(Cart.java:10)
Tests run: 4, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.12 sec
Running com.acme.shop.PriceTest
java.lang.NullPointerException
\tat com.acme.shop.Price.of(Price.java:3)
Tests run: 2, Failures: 0, Errors: 1, Skipped: 0, Time elapsed: 0.01 sec <<< FAILURE!
[INFO] Running com.acme.shop.TaxTest
[INFO] Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.003 s - in com.acme.shop.TaxTest
";
        let r = ranges(log);
        assert_eq!(r, vec![(1, 4), (9, 10)]);
        assert!(inside(&r, 2) && inside(&r, 4) && inside(&r, 9));
        assert!(!inside(&r, 6) && !inside(&r, 5) && !inside(&r, 11));
    }

    #[test]
    fn interleaved_classes_and_a_verdict_for_another_class_bracket_nothing() {
        let log = "\
Running com.acme.A
Running com.acme.B
java.lang.NullPointerException
Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 sec
Tests run: 1, Failures: 0, Errors: 1, Skipped: 0, Time elapsed: 0.1 sec
[INFO] Running com.acme.C
java.lang.NullPointerException
[INFO] Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s - in com.acme.D
Running com.acme.E
Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 sec
";
        assert_eq!(ranges(log), vec![(9, 10)]);
    }

    #[test]
    fn go_tests_that_pass_bracket_their_output_and_adjacent_brackets_merge() {
        let log = "\
=== RUN   TestDial
dial tcp 127.0.0.1:1: connect: connection refused
--- PASS: TestDial (0.00s)
=== RUN   TestRetry
--- PASS: TestRetry (0.01s)
=== RUN   TestParse
panic: runtime error: index out of range
--- FAIL: TestParse (0.00s)
";
        let r = ranges(log);
        assert_eq!(r, vec![(1, 5)]);
        assert!(!inside(&r, 7));
    }

    #[test]
    fn the_ranges_kept_are_bounded() {
        let mut p = PassedTests::default();
        for i in 0..(MAX_PASSED as u64 + 10) {
            let at = i * 10;
            p.push(at + 1, &format!("=== RUN   Test{i}"));
            p.push(at + 2, "some output");
            p.push(at + 3, &format!("--- PASS: Test{i} (0.00s)"));
        }
        let r = p.finish();
        assert_eq!(r.len(), MAX_PASSED);
        assert_eq!(r[0].0, 101);
    }
}
