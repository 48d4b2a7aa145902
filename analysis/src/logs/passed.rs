//! Tests that passed, as their runners bracket them: the lines a test
//! printed between its runner's start line and its runner's verdict that it
//! passed say nothing of why the job failed — a passing run prints the same
//! (an expected exception's stack trace, a logged connection error of a
//! test that exercises its retry). The diagnosis does not read them
//! ([`super::Excerpt::passed`]), and a block of only such lines is no
//! candidate for the excerpt while another block is.
//!
//! Two runners print such brackets around a test's own output:
//! - Maven Surefire: `Running com.acme.CartTest` (`[INFO] Running …` since
//!   2.19 under Maven's level prefix) … `Tests run: 4, Failures: 0, Errors:
//!   0, Skipped: 0, Time elapsed: 0.1 sec` (` - in com.acme.CartTest` since
//!   2.19);
//! - `go test -v`: `=== RUN   TestCart` … `--- PASS: TestCart (0.01s)`;
//! - Python's unittest, verbose: `test_total (shop.tests.CartTest) ... `
//!   and what the test printed, up to the runner's `ok` on a line of its own;
//! - Jest: a test file's ` PASS  src/cart.test.js` header and what follows
//!   it (its `console.error` output, say) up to the next file's header or the
//!   run's summary (`Test Suites: …`); Jest prints each file's results
//!   whole, so they do not interleave;
//! - Gradle, with standard streams shown: `CartTest > total STANDARD_OUT`
//!   (or `STANDARD_ERROR`), the test's lines, then `CartTest > total PASSED`;
//! - pytest, verbose and not capturing (`-v -s`): `tests/test_cart.py::test_total `
//!   and what the test printed, up to `PASSED` on a line of its own;
//! - Mocha's spec reporter (and the reporters that copy it): a passing
//!   test's mark `✓ total` is a bracket of its own, with what stands
//!   between it and the previous passing mark (the test's output and its
//!   suites' titles; at most 60 lines, no command between).
//!   After a failed or pending mark (`1) total`, `✕`, `- total`) nothing
//!   before the next pass is bracketed: some reporters print a failure's
//!   details right under its mark.
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

/// Lines between two spec reporters' marks of passed tests that still
/// bracket what stands between them: a test's own output is short, and a
/// longer stretch is likelier another tool's.
const MAX_SPEC_GAP: u64 = 60;

/// Lines between two brackets that still merge them (Surefire's blank and
/// `Results :` lines between classes do not split a run of passing
/// classes, but another test's output does).
const MERGE_GAP: u64 = 2;

static START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\[INFO\] )?Running (?P<class>[\w.$]+)\s*$|^=== RUN\s+(?P<test>\S+)\s*$",
        r"|^(?P<py>\w+ \([\w.]+\)) \.\.\. (?P<rest>.*)$",
    ))
    .expect("built-in pattern compiles")
});

/// unittest's verdict of a test, on the start line or a line of its own.
static PY_VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?P<ok>ok)|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)\s*$")
        .expect("built-in pattern compiles")
});

static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\[(?:INFO|WARNING|ERROR)\] )?Tests run: \d+, Failures: (?P<failures>\d+), Errors: (?P<errors>\d+), Skipped: \d+(?:, Flakes: \d+)?, Time elapsed: [^<-]*?(?:<<< [A-Z]+!\s*)?(?: - in (?P<class>[\w.$]+))?\s*$",
        r"|^\s*--- (?P<go>PASS|FAIL|SKIP): (?P<test>\S+) \(",
    ))
    .expect("built-in pattern compiles")
});

/// Jest's header of a test file's results, or its run's summary.
static JEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:(?P<pass>PASS)|FAIL)\s+\S+\.(?:[cm]?[jt]sx?|coffee|vue)(?:\s+\(.*\))?\s*$",
        r"|^(?:Test Suites: |Summary of all failing tests|Ran all test suites)",
    ))
    .expect("built-in pattern compiles")
});

/// Gradle's test events: a test's standard stream opening, or its verdict.
static GRADLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<name>\S.*? > \S.*?) (?:(?P<stream>STANDARD_(?:OUT|ERROR))|(?P<passed>PASSED)|FAILED|SKIPPED)\s*$",
    )
    .expect("built-in pattern compiles")
});

/// pytest's node id starting a verbose line, and what follows it on the
/// line; its verdict on a line of its own.
static PYTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<node>[\w./-]+\.py::\S+)(?: (?P<rest>.*))?$")
        .expect("built-in pattern compiles")
});
static PYTEST_VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?P<ok>PASSED)|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b(?:\s+\[\s*\d+%\])?\s*$")
        .expect("built-in pattern compiles")
});

/// A spec reporter's mark of one test: passed (`✓ total (12ms)`), failed
/// (`1) total`, `✕ total`, `✗`, `×`) or pending (`- total`); and the run's
/// summary (`3 passing (2s)`).
static MARK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:(?P<pass>[✓✔√])|[✕✖✗×]|\d+\)|-)\s+\S",
        r"|^\s*(?P<summary>\d+ (?:passing|failing|pending)\b)",
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
    /// The first line of the Jest test file whose results are printing,
    /// when it passed.
    jest: Option<u64>,
    /// A unittest test started and printed before its verdict.
    python: bool,
    /// A pytest test started and printed before its verdict.
    pytest: bool,
    /// The Gradle test whose standard streams are printing: the line of
    /// its first stream header and its name.
    gradle: Option<(u64, String)>,
    /// The line of a spec reporter's last mark, when it said passed.
    spec_pass: Option<u64>,
    ranges: VecDeque<(u64, u64)>,
}

impl PassedTests {
    /// Reads line `no` (its text cleaned of ANSI codes and timestamps).
    pub fn push(&mut self, no: u64, clean: &str) {
        let t = clean.trim_end();
        if self.spec_mark(no, t) {
            return;
        }
        if (t.contains("PASS")
            || t.contains("FAIL")
            || t.contains("Test Suites: ")
            || t.starts_with("Ran all"))
            && let Some(c) = JEST.captures(t)
        {
            if let Some(start) = self.jest.take() {
                self.record(start, no.saturating_sub(1).max(start));
            }
            // Jest's marks under the next header are another file's.
            self.spec_pass = None;
            if c.name("pass").is_some() {
                self.jest = Some(no);
            }
            return;
        }
        // unittest's verdict: the test that printed after its start line
        // ends here.
        if self.python
            && let Some(c) = PY_VERDICT.captures(t)
        {
            self.python = false;
            self.judge(no, c.name("ok").is_some());
            return;
        }
        if self.pytest
            && let Some(c) = PYTEST_VERDICT.captures(t)
        {
            self.pytest = false;
            self.judge(no, c.name("ok").is_some());
            return;
        }
        if t.contains(" > ")
            && let Some(c) = GRADLE.captures(t)
        {
            self.gradle(no, &c);
            return;
        }
        if t.contains(".py::")
            && let Some(c) = PYTEST.captures(t)
        {
            // A test judged on its own line printed nothing.
            let rest = c.name("rest").map_or("", |m| m.as_str());
            if rest.is_empty() || PYTEST_VERDICT.is_match(rest.trim_start()) {
                return;
            }
            if self.pytest {
                self.pending = self.pending.saturating_sub(1);
                self.open = None;
            }
            self.pytest = true;
            self.start(no, &c["node"]);
            return;
        }
        // Cheap prefilter: the other runners' lines hold one of these.
        if !(t.contains("Running ")
            || t.starts_with("=== RUN")
            || t.contains("Tests run: ")
            || t.contains(" ... ")
            || t.trim_start().starts_with("--- "))
        {
            return;
        }
        if let Some(c) = START.captures(t) {
            if let Some(rest) = c.name("rest") {
                // A test judged on its own line printed nothing.
                if PY_VERDICT.is_match(rest.as_str()) {
                    return;
                }
                if self.python {
                    // The last one's verdict was never read.
                    self.pending = self.pending.saturating_sub(1);
                    self.open = None;
                }
                self.python = true;
            }
            let name = c
                .name("class")
                .or_else(|| c.name("test"))
                .or_else(|| c.name("py"))
                .map_or("", |m| m.as_str());
            self.start(no, name);
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

    /// A verdict at line `no` of the one test started: what it printed
    /// since its start line is bracketed when it passed.
    fn judge(&mut self, no: u64, passed: bool) {
        self.pending = self.pending.saturating_sub(1);
        if let Some((start, _)) = self.open.take()
            && passed
        {
            self.record(start, no);
        }
    }

    /// A test named `name` started at line `no`.
    fn start(&mut self, no: u64, name: &str) {
        self.pending += 1;
        // A second test started before the first one's verdict: an
        // interleaved run, whose lines nothing attributes.
        self.open = (self.pending == 1).then(|| (no, name.to_string()));
    }

    /// Gradle's event line: a stream of the test printing (`STANDARD_ERROR`
    /// after its `STANDARD_OUT` is the same test), another test's stream
    /// (forked runs interleave: the test it cuts off is left unjudged), or
    /// a verdict.
    fn gradle(&mut self, no: u64, c: &regex::Captures<'_>) {
        let name = &c["name"];
        if c.name("stream").is_some() {
            if self.gradle.as_ref().is_none_or(|(_, open)| open != name) {
                self.gradle = Some((no, name.to_string()));
            }
            return;
        }
        // A verdict: of the test printing, or of one that printed nothing.
        if let Some((start, _)) = self.gradle.take_if(|g| g.1 == name)
            && c.name("passed").is_some()
        {
            self.record(start, no);
        }
    }

    /// A spec reporter's marks: a passing mark, and what stands between it
    /// and the previous passing mark, belong to a test that passed.
    /// Whether the line was a passing mark.
    fn spec_mark(&mut self, no: u64, t: &str) -> bool {
        if let Some(prev) = self.spec_pass
            && (no > prev + MAX_SPEC_GAP
                || ["$ ", "+ ", "> ", "##[", "The command \""]
                    .iter()
                    .any(|p| t.starts_with(p)))
        {
            // Far from the last mark, or past a command: another run's
            // lines, or another tool's.
            self.spec_pass = None;
        }
        let first = t.trim_start().chars().next();
        if !matches!(
            first,
            Some('✓' | '✔' | '√' | '✕' | '✖' | '✗' | '×' | '-' | '0'..='9')
        ) {
            return false;
        }
        let Some(c) = MARK.captures(t) else {
            return false;
        };
        if c.name("summary").is_some() {
            self.spec_pass = None;
        } else if c.name("pass").is_some() {
            // The mark itself is a passed test's verdict, whatever stands
            // before it.
            let start = self.spec_pass.map_or(no, |prev| prev + 1);
            self.record(start, no);
            self.spec_pass = Some(no);
        } else {
            self.spec_pass = None;
        }
        // A numbered line or a dash is many things besides a mark: other
        // runners still read it.
        c.name("pass").is_some()
    }

    fn record(&mut self, start: u64, end: u64) {
        if let Some(last) = self.ranges.back_mut()
            && start <= last.1 + MERGE_GAP
        {
            last.0 = last.0.min(start);
            last.1 = last.1.max(end);
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
    fn a_jest_file_that_passed_brackets_its_console_output_up_to_the_next_header() {
        let log = "\
 PASS  src/cart/total.test.js
  ● Console

    console.error
      Error: connect ECONNREFUSED 127.0.0.1:6379
          at TCPConnectWrap.afterConnectHandler (node:net:1300:16)

 FAIL  src/cart/checkout.test.ts (5.1 s)
  ● checkout › charges the card

    TypeError: Cannot read properties of undefined (reading 'id')

 PASS  src/cart/tax.test.js
Test Suites: 1 failed, 2 passed, 3 total
";
        let r = ranges(log);
        assert_eq!(r, vec![(1, 7), (13, 13)]);
        assert!(inside(&r, 5) && !inside(&r, 11));
    }

    #[test]
    fn a_unittest_test_that_printed_before_its_ok_brackets_what_it_printed() {
        let log = "\
test_total (shop.tests.CartTest) ... ok
test_refund (shop.tests.CartTest) ... ERROR:shop.pay:Traceback (most recent call last):
  File \"/srv/shop/pay.py\", line 12, in refund
ZeroDivisionError: division by zero
ok
test_tax (shop.tests.CartTest) ... Traceback (most recent call last):
ImportError: No module named vat
FAIL
test_vat (shop.tests.CartTest) ... skipped 'no network'
";
        let r = ranges(log);
        assert_eq!(r, vec![(2, 5)]);
        assert!(inside(&r, 4) && !inside(&r, 7));
        // A test that failed leaves nothing open for a later verdict.
        let log = "test_tax (shop.tests.CartTest) ... printed\nFAIL\nTests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 sec\n";
        assert_eq!(ranges(log), vec![]);
    }

    #[test]
    fn a_gradle_test_that_passed_brackets_its_streams_and_one_that_failed_does_not() {
        let log = "\
com.acme.shop.CartTest > totals() STANDARD_OUT
    connecting to redis at localhost:6379
com.acme.shop.CartTest > totals() STANDARD_ERROR
    java.net.ConnectException: Connection refused
com.acme.shop.CartTest > totals() PASSED
com.acme.shop.CartTest > refunds() PASSED
com.acme.shop.PayTest > charges() STANDARD_OUT
    java.lang.IllegalStateException: card declined
com.acme.shop.PayTest > charges() FAILED
com.acme.shop.TaxTest > vat() STANDARD_OUT
    rounding
com.acme.shop.PayTest > refunds() PASSED
com.acme.shop.TaxTest > vat() PASSED
com.acme.shop.A > a() STANDARD_OUT
    interleaved
com.acme.shop.B > b() STANDARD_OUT
    forked
com.acme.shop.A > a() PASSED
com.acme.shop.B > b() PASSED
";
        let r = ranges(log);
        // Forked runs interleave: the test whose stream came last is
        // judged, the one it cut off is not.
        assert_eq!(r, vec![(1, 5), (10, 13), (16, 19)]);
        assert!(inside(&r, 4) && !inside(&r, 8) && inside(&r, 11) && !inside(&r, 15));
    }

    #[test]
    fn a_pytest_test_that_printed_before_passed_brackets_what_it_printed() {
        let log = "\
tests/test_cart.py::test_totals PASSED
tests/test_cart.py::test_retry connecting
ERROR:shop.cache:ConnectionError: Error 111 connecting to localhost:6379
PASSED
tests/test_cart.py::test_tax[vat] rounding
FAILED
tests/test_pay.py::test_charge PASSED                                    [ 80%]
";
        let r = ranges(log);
        assert_eq!(r, vec![(2, 4)]);
        assert!(inside(&r, 3) && !inside(&r, 5) && !inside(&r, 6));
    }

    #[test]
    fn what_stands_between_two_passing_marks_of_a_spec_reporter_is_the_second_tests() {
        let log = "\
  cart
    ✓ totals the basket
  checkout
Error: connect ECONNREFUSED 127.0.0.1:6379
    ✓ retries the charge (52ms)
    1) refunds the charge
TypeError: Cannot read properties of undefined (reading 'id')
    ✓ voids the charge
    - pays by invoice
    ✓ taxes
  3 passing (2s)
  1 failing
  1) checkout refunds the charge:
     AssertionError: expected 2 to equal 3
    ✓ later
";
        let r = ranges(log);
        assert_eq!(r, vec![(2, 5), (8, 10), (15, 15)]);
        assert!(inside(&r, 4) && !inside(&r, 7) && !inside(&r, 13) && !inside(&r, 14));
        // Marks far apart, or with a command between them, bracket only
        // themselves.
        let far = format!("  ✓ a\n{}  ✓ b\n", "x\n".repeat(MAX_SPEC_GAP as usize + 1));
        assert_eq!(
            ranges(&far),
            vec![(1, 1), (MAX_SPEC_GAP + 3, MAX_SPEC_GAP + 3)]
        );
        assert_eq!(
            ranges("  ✓ a\n$ npm run build\nerror TS2304\n  ✓ b\n"),
            vec![(1, 1), (4, 4)]
        );
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
