//! The recognisers: how real tools report a failure, one line at a time.
//!
//! Each rule names the tool (or family of tools) whose output it
//! recognises, the kind of failure that output means, how decisive it is,
//! and a pattern whose named groups carry the specifics (`test`, `file`,
//! `line`, `col`, `code`, `pkg`, `ver`, `cmd`, `exit`, `msg`). These are
//! general facts about the tools' documented or long-stable output formats;
//! nothing here names a project, a test or a file of any particular
//! repository. Patterns are matched against a cleaned line with its
//! leading whitespace removed.

use crate::Category;

/// What produced a failing line, and so what kind of failure it reports.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A test runner reporting a failed assertion or expectation.
    Assertion,
    /// A test runner naming a failed test (the reason may be elsewhere).
    TestFailed,
    /// A test runner's summary counting failures.
    TestSummary,
    /// An uncaught exception, crash or sanitizer report (not an assertion).
    Crash,
    /// A compiler, type checker or interpreter rejecting the source.
    Compile,
    /// A linter, formatter, style, spelling or link checker.
    Lint,
    /// A package manager failing to resolve, fetch or build a dependency,
    /// or a missing third-party module or library.
    Dependency,
    /// The build or CI configuration, the environment or a tool version.
    Config,
    /// The machine, the network, a service or a time limit.
    Infra,
}

impl Kind {
    pub fn category(self) -> Category {
        match self {
            Kind::Assertion | Kind::TestFailed | Kind::TestSummary => Category::TestFailure,
            Kind::Crash | Kind::Compile | Kind::Lint => Category::CodeError,
            Kind::Dependency => Category::DependencyError,
            Kind::Config => Category::ConfigError,
            Kind::Infra => Category::InfraError,
        }
    }

    /// A test runner's report: a failed test, an assertion or a count.
    pub fn reports_tests(self) -> bool {
        matches!(self, Kind::Assertion | Kind::TestFailed | Kind::TestSummary)
    }

    /// What produced the line, in words (for the verdict's explanation).
    pub fn producer(self) -> &'static str {
        match self {
            Kind::Assertion | Kind::TestFailed | Kind::TestSummary => {
                "a test runner's failure report"
            }
            Kind::Crash => "an uncaught error or crash",
            Kind::Compile => "a compiler or type checker diagnostic",
            Kind::Lint => "a linter, formatter or link checker",
            Kind::Dependency => "a package manager or a missing third-party module",
            Kind::Config => "the build or CI configuration",
            Kind::Infra => "the machine, the network or a time limit",
        }
    }
}

/// One recogniser.
pub struct Rule {
    /// Stable id, `tool.what` (cited in the verdict).
    pub id: &'static str,
    /// The tool or family whose output this is.
    pub tool: &'static str,
    pub kind: Kind,
    /// How decisive a match is: 1.0 a tool's own unambiguous failure
    /// format; ~0.6 specific but the category may be another's; ~0.3
    /// vocabulary that only supports.
    pub weight: f32,
    pub pattern: &'static str,
}

const fn r(
    id: &'static str,
    tool: &'static str,
    kind: Kind,
    weight: f32,
    pattern: &'static str,
) -> Rule {
    Rule {
        id,
        tool,
        kind,
        weight,
        pattern,
    }
}

use Kind::*;

/// Third-party source trees: an error *inside* one of these is the
/// dependency's, not the project's.
pub const VENDORED: &str = r"(?:(?:^|[/\\])vendor[/\\]|node_modules|\.cargo[/\\]registry|site-packages|dist-packages|vendor[/\\]bundle|\.m2[/\\]repository|go[/\\]pkg[/\\]mod|\.gradle[/\\]caches|\.stack[/\\]|\.cabal[/\\]packages|bower_components|Pods[/\\]|Carthage[/\\]Checkouts|\.nuget[/\\]packages|gems[/\\][\w.-]+-\d)";

#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    // ------------------------------------------------------------ test runners
    // pytest
    r("pytest.failed", "pytest", TestFailed, 1.0, r"^FAILED (?P<file>[\w./-]+\.py)::(?P<test>[\w:.\[\]-]+)(?: - (?P<msg>.*))?$"),
    r("pytest.header", "pytest", TestFailed, 0.8, r"^_{3,} (?P<test>(?:\w+\.)?test\w*(?:\[.*\])?) _{3,}$"),
    r("pytest.assert", "pytest", Assertion, 1.0, r"^E\s+(?:AssertionError\b|assert\b)(?P<msg>.*)"),
    r("pytest.location", "pytest", Assertion, 0.6, r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?:AssertionError|Failed)\b"),
    r("pytest.summary", "pytest", TestSummary, 0.7, r"^=+ .*\b[1-9]\d* (?:failed|error)s?\b.* in [\d.]+ ?s(?:econds)?\b"),
    // unittest / nose / Django
    r("unittest.case", "unittest", TestFailed, 0.9, r"^(?:FAIL|ERROR): (?:(?P<test>test\w*) \((?P<suite>[\w.]+)\)|(?P<test2>(?:\w+\.)+test\w*)$)"),
    r("unittest.summary", "unittest", TestSummary, 0.8, r"^FAILED \((?:(?:SKIP|skipped|expected failures)=\d+, )?(?:failures|errors)=\d+"),
    r("python.assertion", "python", Assertion, 0.8, r"^AssertionError\b(?::\s*(?P<msg>.*))?"),
    // Jest / Vitest
    r("jest.test", "jest", TestFailed, 1.0, r"^● (?P<test>.+ › .+)$"),
    r("jest.file", "jest", TestFailed, 0.7, r"^FAIL\s+(?P<file>\S+\.(?:[jt]sx?|mjs|cjs|mts|cts|vue|svelte))(?:\s|$)"),
    r("jest.summary", "jest", TestSummary, 0.9, r"^Tests:\s+[1-9]\d* failed"),
    // Vitest's summary: `Test Files  1 failed | 3 passed (4)`.
    r("vitest.summary", "vitest", TestSummary, 0.9, r"^(?:Test Files|Tests)\s+[1-9]\d* failed\b"),
    r("jest.expect", "jest", Assertion, 0.9, r"^expect\((?:received|jest\.fn\(\))\)\.\w+"),
    r("jest.received", "jest", Assertion, 0.5, r"^(?:Expected|Received)(?: value| length| substring)?:\s+\S"),
    // Mocha / Jasmine / Karma / Protractor / tap / QUnit / Ember
    // Playwright Test's list and line reporters: `1) [chromium] ›
    // tests/home.spec.ts:5:1 › suite › title ───`, the web-first assertion
    // that timed out, and the footer's `N failed` over the same case lines.
    r("playwright.case", "playwright", TestFailed, 1.0, r"^\d+\) \[(?P<suite>[^\]]+)\] › (?P<file>\S+?\.(?:[jt]sx?|mjs|mts|cjs|cts)):(?P<line>\d+):\d+ › (?P<test>.+?)(?: ─+)?$"),
    r("playwright.expect", "playwright", Assertion, 0.9, r"^Error: Timed out \d+ ?ms waiting for expect\((?:locator|page|received)\)\.\w+"),
    r("mocha.summary", "mocha", TestSummary, 0.9, r"^[1-9]\d* failing$"),
    // A test the framework aborted at its time limit (the knowledge base's
    // test-timeout: a hang or a slow test, not the job's time limit).
    r("test.timeout", "test runner", TestFailed, 0.8, r"(?i)\bTimeout of \d+ ?ms exceeded\b|\bExceeded timeout of \d+ ?ms for a (?:test|hook)\b|\bAsync callback was not invoked within (?:the )?\d+ ?ms timeout\b|\bTestTimedOutException\b|\btest timed out after \d+|^E?\s*Failed: Timeout >[\d.]+s|\bTest timeout of \d+ ?ms exceeded\b"),
    r("karma.failed", "karma", TestFailed, 1.0, r"^(?:\w+(?: \w+)? [\d.]+ \([^)]*\)) (?P<test>.+?) FAILED$"),
    r("karma.summary", "karma", TestSummary, 0.9, r"Executed \d+ of \d+ .*\([1-9]\d* FAILED\)"),
    r("jasmine.expected", "jasmine", Assertion, 0.8, r"^Expected .+ (?:to (?:equal|be|have|contain|match|throw)|not to)\b"),
    r("jasmine.summary", "jasmine", TestSummary, 0.8, r"^\d+ specs?, [1-9]\d* failures?"),
    r("chai.assertion", "chai", Assertion, 0.9, r"^AssertionError(?: \[ERR_ASSERTION\])?: (?P<msg>.+)"),
    r("tap.notok", "tap", TestFailed, 0.8, r"^not ok \d+ (?:- )?(?P<test>.+)$"),
    // Robot Framework's console: a test or suite line ending `| FAIL |`,
    // and its `N tests, P passed, F failed` statistics.
    r("robot.fail", "robot framework", TestFailed, 0.9, r"^(?P<test>\S.*?)\s+\| FAIL \|$|^\d+ tests?, \d+ passed, [1-9]\d* failed"),
    r("tap.summary", "tap", TestSummary, 0.7, r"^# fail(?:s|ed)?\s+[1-9]\d*$"),
    r("qunit.failed", "qunit", TestFailed, 0.8, r"^(?:Test|Module) Failed: (?P<test>.+)$"),
    r("qunit.assertion", "qunit", Assertion, 0.8, r"^Assertion Failed:"),
    // RSpec / minitest / Test::Unit / Cucumber
    r("rspec.rerun", "rspec", TestFailed, 1.0, r"^rspec (?:\./)?(?P<file>\S+_spec\.rb):(?P<line>\d+) # (?P<test>.+)$"),
    r("rspec.summary", "rspec", TestSummary, 0.9, r"^\d+ examples?, [1-9]\d* failures?"),
    r("rspec.failure", "rspec", TestFailed, 0.7, r"^Failure/Error:"),
    r("rspec.expected", "rspec", Assertion, 0.9, r"^expected(?: collection)?(?: to \w+)?:? .+(?:got|but)\b|^expected: .+$|^expected #<"),
    r("minitest.failure", "minitest", TestFailed, 1.0, r"^\d+\) Failure:$|^Failure:\s*$"),
    r("minitest.location", "minitest", TestFailed, 0.9, r"^(?:(?P<suite>\w+(?:::\w+)*)#)?(?P<test>test_\w+)\s*(?:\(\w+(?:::\w+)*\))?\s*\[(?P<file>[\w./-]+\.rb):(?P<line>\d+)\]"),
    r("minitest.summary", "minitest", TestSummary, 0.9, r"^\d+ (?:runs|tests), \d+ assertions, [1-9]\d* failures"),
    // test-unit (Test::Unit 2+) names the failure `Failure: test_x(Class)`.
    r("test_unit.case", "test-unit", TestFailed, 0.9, r"^(?:Failure|Error): (?P<test>test\w*)\((?P<suite>[\w:]+)\)(?::|$)"),
    r("minitest.expected", "minitest", Assertion, 0.8, r"^Expected:? .+\n?|^Actual: "),
    r("cucumber.summary", "cucumber", TestSummary, 0.9, r"^\d+ scenarios? \(.*[1-9]\d* failed"),
    // JUnit / Gradle / Maven Surefire / TestNG / ScalaTest / specs2 / sbt
    r("gradle.test", "gradle", TestFailed, 1.0, r"^(?P<suite>[\w.$]+) > (?P<test>.+) FAILED$"),
    r("gradle.summary", "gradle", TestSummary, 0.9, r"^\d+ tests? completed, [1-9]\d* failed"),
    r("gradle.failing", "gradle", TestSummary, 0.8, r"There were failing tests"),
    r("surefire.case", "surefire", TestFailed, 1.0, r"^(?:\[ERROR\] )?(?:(?P<test>\w+)\((?P<suite>[\w.$]+)\)|(?P<suite2>[\w.$]+)\.(?P<test2>\w+)(?:\(.*\))? --)\s+Time elapsed: .*<<< (?:FAILURE|ERROR)!"),
    r("surefire.case2", "surefire", TestFailed, 1.0, r"^\[ERROR\]\s+(?P<suite>[\w.$]+)\.(?P<test>\w+):(?P<line>\d+) "),
    r("surefire.summary", "surefire", TestSummary, 0.8, r"Tests run: \d+, Failures: (?:[1-9]\d*, Errors: \d+|\d+, Errors: [1-9])"),
    r("surefire.failed", "surefire", TestSummary, 0.8, r"^(?:\[ERROR\] )?Failed tests:"),
    // Tests in error threw an exception the test did not expect.
    // Surefire's "Errors:" summary names the exception a test died of
    // without its package (`» NullPointer`): an uncaught error, not an
    // assertion. Surefire 2.13–2.18 prints it under `Tests in error:`
    // without `[ERROR]`; a failure below helper methods of the test reads
    // `Test.method:43->helper:68`, one in a superclass `Test>Base.method`;
    // with no `»` the exception was thrown in the test's own code.
    r("surefire.error_type", "surefire", Crash, 0.9, r"^(?:\[ERROR\]\s+)?(?:Run \d+: )?[\w$]+(?:\.[\w$]+)*(?:>[\w$]+)?\.\w+(?::\d+)?(?:->[\w$>.]+:\d+)*\s+(?:» )?(?P<code>NullPointer|ClassCast|IllegalState|IllegalArgument|ArrayIndexOutOfBounds|StringIndexOutOfBounds|IndexOutOfBounds|NumberFormat|UnsupportedOperation|StackOverflow|Arithmetic|NoSuchElement|ConcurrentModification|ExceptionInInitializer)\b"),
    r("surefire.in_error", "surefire", Crash, 0.6, r"^(?:\[ERROR\] )?(?:Tests in error:|Errors:\s*$)|Tests run: \d+, Failures: 0, Errors: [1-9]"),
    r("maven.test_failures", "maven", TestSummary, 0.6, r"There (?:are|were) test failures"),
    r("testng.failed", "testng", TestFailed, 0.8, r"^FAILED: (?:(?P<suite>[\w.$]+)\.)?(?P<test>[a-z]\w*[A-Z]\w*)(?:\(.*\))?$"),
    r("testng.summary", "testng", TestSummary, 0.9, r"^Total tests run: \d+, (?:Passes: \d+, )?Failures: [1-9]\d*"),
    r("junit.assertion", "junit", Assertion, 1.0, r"\b(?:java\.lang\.AssertionError|junit\.framework\.(?:AssertionFailedError|ComparisonFailure)|org\.junit\.ComparisonFailure|org\.opentest4j\.AssertionFailedError|org\.junit\.internal\.ArrayComparisonFailure)\b"),
    r("junit.expected", "junit", Assertion, 0.9, r"expected:\s*<.*> but was:\s*<|expected same:<.*> was not:<|expected \[.*\] but found \["),
    // Mockito's verification failures and ScalaTest's failed assertions
    // are the test's expectations, whatever exception carries them.
    r("mockito.verification", "mockito", Assertion, 1.0, r"\borg\.mockito\.exceptions\.verification\.\w+|^(?:Wanted but not invoked|Argument\(s\) are different! Wanted|Never wanted here|No interactions wanted here):"),
    r("scalatest.assertion", "scalatest", Assertion, 1.0, r"\borg\.scalatest\.exceptions\.TestFailedException\b"),
    r("scalatest.failed", "scalatest", TestFailed, 1.0, r"^(?:\[info\]\s+)?- (?P<test>.+) \*\*\* FAILED \*\*\*"),
    r("sbt.failed", "sbt", TestSummary, 0.9, r"^\[error\] Failed tests:|TestsFailedException: Tests unsuccessful|^\[error\] Failed: Total \d+, Failed [1-9]"),
    r("specs2.failed", "specs2", TestFailed, 0.7, r"^\[error\]\s+x (?P<test>.+)$"),
    // ExUnit / common_test / EUnit
    r("exunit.test", "exunit", TestFailed, 1.0, r"^\d+\) test (?P<test>.+) \((?P<suite>[\w.]+)\)$"),
    r("exunit.summary", "exunit", TestSummary, 0.9, r"^\d+ (?:tests?|doctests?|properties)(?:, \d+ \w+)*, [1-9]\d* failures?"),
    r("exunit.assert", "exunit", Assertion, 0.9, r"^(?:Assertion with \S+ failed|Expected truthy, got|match \(=\) failed)"),
    r("exunit.location", "exunit", TestFailed, 0.6, r"^(?P<file>[\w./-]+_test\.exs):(?P<line>\d+)$"),
    r("ct.failed", "common_test", TestFailed, 1.0, r"^(?P<suite>\w+_SUITE):(?P<test>\w+) failed on line (?P<line>\d+)"),
    r("ct.summary", "common_test", TestSummary, 0.9, r"TEST COMPLETE, \d+ ok, [1-9]\d* failed"),
    r("ct.rebar3_failed", "common_test", TestFailed, 1.0, r"^%%% (?P<suite>\w+) ==> (?P<test>\w+): FAILED$"),
    r("ct.rebar3_summary", "common_test", TestSummary, 0.8, r"^Failed [1-9]\d* tests?\. Passed \d+ tests?\.$"),
    r("eunit.failed", "eunit", Assertion, 0.9, r"\{(?:assert\w*_failed|assertEqual|assertMatch|assertException|assertNot),"),
    r("eunit.summary", "eunit", TestSummary, 0.9, r"^Failed: [1-9]\d*\.\s+Skipped: \d+\.\s+Passed: \d+"),
    r("eunit.test", "eunit", TestFailed, 0.9, r"^(?P<suite>\w+): (?P<test>\w+)(?: \(.*\))?\.\.\.\*failed\*$"),
    r("eunit.location", "eunit", TestFailed, 0.6, r"^in function \S+ \((?P<file>[\w./-]+\.erl), line (?P<line>\d+)\)$"),
    // go test
    r("gotest.fail", "go test", TestFailed, 1.0, r"^(?:--- )?FAIL: (?P<test>Test\w*(?:/\S+)?) \([\d.]+s\)|^--- FAIL: (?P<test2>\S+) \([\d.]+s\)"),
    r("gotest.pkg", "go test", TestSummary, 0.8, r"^FAIL\s+(?P<pkg>[\w./-]+)\s+[\d.]+s$"),
    r("gotest.location", "go test", Assertion, 0.7, r"^(?P<file>\w+_test\.go):(?P<line>\d+): (?P<msg>.+)"),
    // cargo test
    r("cargo.test_stdout", "cargo test", TestFailed, 1.0, r"^---- (?P<test>\S+) stdout ----$"),
    r("cargo.test_failed", "cargo test", TestFailed, 1.0, r"^test (?P<test>\S+) \.\.\. FAILED$"),
    r("cargo.test_result", "cargo test", TestSummary, 0.9, r"^test result: FAILED\. \d+ passed; [1-9]\d* failed"),
    r("rust.assert", "rust", Assertion, 1.0, r"panicked at .*(?:assertion (?:`left (?:==|!=) right` )?failed|assert(?:_eq|_ne)?!)|^assertion (?:`left (?:==|!=) right` )?failed"),
    r("rust.test_panic", "rust", Assertion, 0.7, r"panicked at '[^']*\b(?:test|expected|mismatch|did not match|doesn't match)\b"),
    // PHPUnit
    r("phpunit.case", "phpunit", TestFailed, 0.9, r"^\d+\) (?P<test>[\w\\]+::\w+)(?: with data set .*)?$"),
    r("phpunit.assert", "phpunit", Assertion, 1.0, r"^Failed asserting that"),
    r("phpunit.summary", "phpunit", TestSummary, 0.9, r"^(?:FAILURES!|Tests: \d+, Assertions: \d+, (?:Failures|Errors): [1-9])"),
    // .NET: xUnit / NUnit / MSTest / dotnet test / Pester
    r("xunit.fail", "xunit", TestFailed, 1.0, r"^(?P<test>[\w.<>`+]+(?:\(.*\))?) \[FAIL\]$"),
    r("xunit.assert", "xunit", Assertion, 1.0, r"^Assert\.\w+\(\) Failure"),
    r("dotnet.failed", "dotnet test", TestFailed, 0.9, r"^(?:X|×|Failed) (?P<test>[\w.]+(?:\(.*\))?) \[\d+\s*m?s\]$"),
    r("dotnet.summary", "dotnet test", TestSummary, 0.9, r"^(?:Failed!\s+-\s+Failed:\s+[1-9]|Total tests: \d+\. Passed: \d+\. Failed: [1-9]|Test Run Failed\.)"),
    r("nunit.expected", "nunit", Assertion, 0.9, r"^Expected: .+\s+But was:|^But was:\s+"),
    r("pester.failed", "pester", TestFailed, 1.0, r"^\[-\] (?P<test>.+?) \d+(?:\.\d+)?m?s(?: \(\d+m?s\|\d+m?s\))?$"),
    r("pester.expected", "pester", Assertion, 0.9, r"^Expected(?: strings to be the same,| \$?\w+,|:)? .*,? but (?:got|was)\b"),
    r("pester.summary", "pester", TestSummary, 0.9, r"^Tests (?:Passed: \d+,? Failed: [1-9]|completed in .* Failed: [1-9])"),
    r("pester.name", "pester", TestFailed, 0.6, r"^Name:\s+(?P<test>.+)$"),
    // XCTest / Quick / Nimble / xcpretty / SwiftPM
    r("xctest.assert", "xctest", Assertion, 1.0, r"(?:^(?P<file>\S+\.(?:swift|mm?)):(?P<line>\d+): )?error: (?:-\[(?P<suite>[\w.]+) (?P<test>\w+)\]|(?P<suite2>[\w.]+)\.(?P<test2>\w+)) : (?:XCTAssert\w* failed|failed)"),
    r("xctest.case", "xctest", TestFailed, 1.0, r"^Test Case '-?\[?(?P<suite>[\w.]+)[ .](?P<test>\w+)\]?' failed"),
    r("xctest.summary", "xctest", TestSummary, 0.9, r"Executed \d+ tests?, with [1-9]\d* failures?"),
    r("nimble.expected", "nimble", Assertion, 0.9, r"expected to (?:eventually )?(?:equal|be|match|contain|beginWith|endWith|throw|succeed|not)\b.*, got\b"),
    r("xctest.crashed", "xctest", Crash, 0.8, r"^✗ (?P<test>\S.*), Test crashed\b|^Test Case '-?\[?(?P<suite>[\w.]+)[ .](?P<test2>\w+)\]?' crashed|^Restarting after unexpected exit,? crash, or test timeout"),
    r("xcpretty.failed", "xcpretty", TestFailed, 0.7, r"^✗ (?P<test>\S.+)$"),
    r("xcode.test_failed", "xcodebuild", TestSummary, 0.9, r"\*\* TEST FAILED \*\*"),
    // C / C++: ctest, GoogleTest, Catch2, Boost.Test, CUnit, Check
    r("ctest.failed_list", "ctest", TestSummary, 0.9, r"^The following tests FAILED:|\d+% tests passed, [1-9]\d* tests? failed out of \d+"),
    r("ctest.case", "ctest", TestFailed, 0.9, r"^\d+ - (?P<test>\S+) \((?:Failed|SEGFAULT|Timeout|Child aborted|Exception)\)"),
    r("gtest.failed", "googletest", TestFailed, 1.0, r"^\[\s+FAILED\s+\] (?P<test>\w+\.\w+)"),
    r("gtest.expect", "googletest", Assertion, 0.9, r"^(?:Value of: |Expected equality of these values:|Expected: \(.*\) [<>=!]=? \(|Actual function call count doesn't match)"),
    r("catch2.failed", "catch2", Assertion, 0.9, r"^(?:REQUIRE|CHECK)(?:_\w+)?\( .* \)$|test cases?: \d+ \| \d+ passed \| [1-9]\d* failed"),
    r("boost.test", "boost.test", Assertion, 0.9, r"error: in \x22(?P<test>[^\x22]+)\x22: check .* has failed|\*\*\* [1-9]\d* failures? (?:is|are) detected"),
    // Haskell: hspec / tasty / cabal / stack
    r("hspec.summary", "hspec", TestSummary, 0.9, r"^\d+ examples?, [1-9]\d* failures?"),
    r("tasty.failed", "tasty", TestFailed, 0.8, r"^(?P<test>\S.*?):\s+FAIL(?: \(.*\))?$|^[1-9]\d* out of \d+ tests failed"),
    r("cabal.testsuite", "cabal", TestSummary, 0.8, r"^Test suite (?P<test>\S+): FAIL$|Test suite failure for package (?P<pkg>\S+)"),
    // Emacs ERT, Vim test runners, R testthat, Perl prove, Lua busted, Clojure
    r("ert.failed", "ert", TestFailed, 1.0, r"^FAILED\s+\d+/\d+\s+(?P<test>\S+)(?:.* at (?P<file>\S+\.el):(?P<line>\d+))?"),
    r("ert.summary", "ert", TestSummary, 0.9, r"^Ran \d+ tests?, \d+ results? as expected, [1-9]\d* unexpected"),
    r("vim.found_errors", "vim", TestFailed, 1.0, r"^Found errors in (?P<test>\w+)\(\):?$"),
    r("vim.test_failed", "vim", TestFailed, 0.9, r"^(?P<test>test\w+) FAILED$|^Executed:?\s+\d+ Tests?.*\b[1-9]\d* FAILED|^\d+ FAILED:$"),
    r("vim.expected", "vim", Assertion, 0.8, r"\bline \d+: Expected .+ but got\b"),
    r("vader.failed", "vader", TestFailed, 0.9, r"^\(X\) |Success/Total: \d+/\d+ \(.*assertions?: \d+/\d+\)"),
    r("testthat.failure", "testthat", Assertion, 1.0, r"^(?:\d+\. )?(?:──? )?Failure \(@?(?P<file>[\w.-]+\.R)[#:](?P<line>\d+)(?::\d+)?\):? (?P<test>.+?)(?: ─+)?$"),
    r("testthat.summary", "testthat", TestSummary, 0.9, r"^(?:══ )?(?:OK|Skipped|Warnings|Failed):\s+[1-9]\d*|\[ FAIL [1-9]\d* \|"),
    r("rcmdcheck.tests", "R CMD check", TestSummary, 0.4, r"^Running the tests in .* failed\.$|checking tests \.\.\. ERROR"),
    r("prove.failed_test", "prove", Assertion, 1.0, r"^#\s+Failed test (?:'(?P<test>[^']*)'|at)"),
    r("prove.location", "prove", TestFailed, 0.9, r"^#\s+at (?P<file>\S+) line (?P<line>\d+)\.$"),
    r("prove.file", "prove", TestFailed, 0.9, r"^(?P<file>[\w./-]+\.t) \.+ ?(?:\d+/\d+ )?(?:Failed \d+/\d+ subtests|Dubious, test returned)"),
    r("prove.result", "prove", TestSummary, 0.8, r"^Result: FAIL$|^Failed \d+/\d+ test programs"),
    r("busted.failure", "busted", Assertion, 1.0, r"^Failure → (?P<file>\S+\.lua) @ (?P<line>\d+)"),
    r("busted.summary", "busted", TestSummary, 0.9, r"^\d+ successes? / [1-9]\d* failures?"),
    r("lua.test_error", "lua tests", TestFailed, 0.6, r"^\[\s+(?:FAIL|ERROR)\s+\] (?P<test>.+)$"),
    r("julia.test_failed", "julia Test", Assertion, 1.0, r"^Test Failed at (?P<file>\S+\.jl):(?P<line>\d+)$"),
    r("clojure.fail", "clojure.test", TestFailed, 1.0, r"^FAIL in \((?P<test>[\w.?!*+<>=/-]+)\) \((?P<file>[\w.-]+\.clj[sc]?):(?P<line>\d+)\)"),
    r("clojure.summary", "clojure.test", TestSummary, 0.9, r"^Ran \d+ tests containing \d+ assertions\.|^[1-9]\d* failures, \d+ errors\.$"),
    r("lein.failed", "leiningen", TestSummary, 0.7, r"^Tests failed\.$"),
    r("luassert.expected", "luassert", Assertion, 0.8, r"^Expected objects to be (?:equal|the same)\.|Missing \d+ expected calls?"),
    r("purescript.test", "psci", TestFailed, 0.4, r"^in module \$PSCI$"),
    // Generic assertion vocabulary (any runner).
    r("generic.assertion_failed", "test runner", Assertion, 0.6, r"(?i)\bassertion(?:s)? failed\b|\bassert(?:ion)?error\b"),
    r("generic.expected_got", "test runner", Assertion, 0.5, r"(?i)\bexpected\b.{1,120}\b(?:but (?:got|was|received|found)|, got|got:|instead got)\b"),
    r("generic.tests_failed", "test runner", TestSummary, 0.5, r"(?i)^(?:[1-9]\d* )?(?:tests?|specs?|examples?) failed\b|\bfailed [1-9]\d* and passed \d+ tests"),
    r("generic.snapshot", "test runner", Assertion, 0.8, r"(?i)\b[1-9]\d* snapshots? failed\b|snapshot (?:mismatch|doesn't match)"),
    r("generic.test_crashed", "test runner", Crash, 0.6, r"(?i)\btest crashed\b"),

    // ------------------------------------------------------- compilers, checkers
    r("rustc.error", "rustc", Compile, 1.0, r"^error\[(?P<code>E\d{4})\]: (?P<msg>.+)$"),
    r("rustc.error_plain", "rustc", Compile, 0.6, r"^error: (?P<msg>(?:expected|cannot|mismatched|unresolved|use of|no method|no field|this|the trait|unused|unknown|missing|borrowed|lifetime|could not find|linking with|unexpected|unterminated|non-exhaustive|casting|binary operation|mutable|unnecessary|variable|value|type|function|struct|enum|method|field|module|macro|expected|found).+)$"),
    r("rustc.location", "rustc", Compile, 0.6, r"^--> (?P<file>[\w./\\:-]+\.rs):(?P<line>\d+):(?P<col>\d+)$"),
    r("rustc.could_not_compile", "cargo", Compile, 0.8, r"^error: (?:could not compile `(?P<pkg>[\w-]+)`|aborting due to (?:\d+ )?previous errors?)"),
    r("clippy.lint", "clippy", Lint, 0.9, r"#\[deny\(clippy::\w+\)\]|clippy::\w+\)\]` on by default|-D clippy::"),
    r("rustfmt.diff", "rustfmt", Lint, 1.0, r"^Diff in (?P<file>\S+\.rs) at line (?P<line>\d+):"),
    r("cc.error", "gcc/clang", Compile, 1.0, r"^(?P<file>[\w./\\+~-]+\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|m|mm|cu|ino)):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.+)$"),
    // Compilers that print `file(line, col) Error: message` (Nim, D) and
    // Crystal's `Error in file:line: message`.
    r("compiler.paren_error", "nim/dmd", Compile, 0.9, r"^(?P<file>[\w./\\-]+\.(?:nim|d|di))\((?P<line>\d+)(?:, ?(?P<col>\d+))?\):? Error: (?P<msg>.+)$"),
    r("crystal.error", "crystal", Compile, 0.9, r"^(?:Error in|in) (?P<file>[\w./-]+\.cr):(?P<line>\d+): (?P<msg>.+)$"),
    // The Dart analyzer: `error • message at file:line:col • (code)` and
    // the newer `error - file:line:col - message - code`.
    r("dart.analyzer", "dart analyzer", Compile, 0.9, r"^\s*error [•-] (?:(?P<msg>.+?) at )?(?P<file>[\w./-]+\.dart):(?P<line>\d+):(?P<col>\d+)\b|^\[error\] (?P<msg2>.+) \((?P<file2>\S+\.dart), line (?P<line2>\d+), col \d+\)$"),
    r("cc.errors_generated", "clang", Compile, 0.6, r"^[1-9]\d* errors? generated\.$"),
    r("ld.undefined", "ld", Compile, 0.9, r"undefined reference to [`'](?P<msg>[^']+)'|^Undefined symbols for architecture|ld: symbol\(s\) not found|ld returned 1 exit status|error LNK\d{4}:"),
    r("msvc.error", "msvc", Compile, 1.0, r"^(?P<file>[\w./\\:-]+\.(?:c|cc|cpp|cxx|h|hpp))\((?P<line>\d+)\)\s*: (?:fatal )?error (?P<code>C\d{4}): (?P<msg>.+)"),
    r("javac.error", "javac", Compile, 1.0, r"^(?:\[ERROR\] )?(?P<file>[\w./\\:-]+\.java):(?:\[(?P<line>\d+),(?P<col>\d+)\]|(?P<line2>\d+):) (?:error: )?(?P<msg>.+)$"),
    // Jasper (Tomcat's, Jetty's JSP compiler) on a page that does not
    // compile: Tomcat 8.5+ brackets the line and file.
    r("jsp.compile", "jasper", Compile, 0.9, r"An error occurred at line: \[?(?P<line>\d+)\]? in the (?:jsp )?file: \[?(?P<file>[^\s\]]+)\]?|\bUnable to compile class for JSP\b"),
    r("maven.compilation", "maven", Compile, 0.9, r"COMPILATION ERROR|Compilation failure|Failed to execute goal org\.apache\.maven\.plugins:maven-compiler-plugin"),
    r("gradle.compile", "gradle", Compile, 0.9, r"Execution failed for task '[\w:]*:compile\w*'|Compilation failed; see the compiler error output"),
    r("kotlin.error", "kotlinc", Compile, 1.0, r"^e: (?:file://)?(?P<file>\S+\.kts?):(?: ?\((?P<line>\d+), (?P<col>\d+)\):?|(?P<line2>\d+):(?P<col2>\d+)) (?P<msg>.+)"),
    r("scala.error", "scalac", Compile, 1.0, r"^\[error\] (?:-- \[E\d+\] .*: )?(?P<file>[\w./\\:-]+\.scala):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>.+)"),
    r("sbt.compile", "sbt", Compile, 0.8, r"^\[error\] \(.*compile.*\) .*Compilation failed|^\[error\] Compilation failed"),
    r("csc.error", "csc", Compile, 1.0, r"(?P<file>[\w./\\:-]+\.(?:cs|vb|fs))\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>(?:CS|BC|FS)\d{4}): (?P<msg>.+?)(?: \[.*\])?$"),
    r("tsc.error", "tsc", Compile, 1.0, r"(?P<file>[\w./\\@-]+\.(?:tsx?|vue))(?:\((?P<line>\d+),(?P<col>\d+)\)|:(?P<line2>\d+):(?P<col2>\d+))\s*(?:-\s*)?:?\s*error (?P<code>TS\d+): (?P<msg>.+)"),
    r("tsc.prose", "tsc", Compile, 0.8, r"(?P<file>[\w./\\@-]+\.tsx?) \((?P<line>\d+),(?P<col>\d+)\): (?P<msg>.+) \((?P<code>\d{4})\)$"),
    r("go.compile", "go build", Compile, 1.0, r"^(?:\./|\.\./)?(?P<file>[\w./-]+\.go):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>(?:undefined|cannot|syntax error|missing|too many|not enough|invalid|imported and not used|declared (?:and|but) not used|\S+ redeclared|non-name|unexpected|expected|mismatched|multiple-value|assignment mismatch|\S+ is not a type|no new variables).*)$"),
    r("go.vet", "go vet", Lint, 0.8, r"^vet: .*|^(?P<file>[\w./-]+\.go):(?P<line>\d+):(?:(?P<col>\d+):)? (?:\w+ )?(?:call has possible formatting directive|possible misuse|unreachable code|result of fmt\.\w+ call not used|struct field tag)|^(?P<file2>[\w./-]+\.go):(?P<line2>\d+):(?:\d+:)? (?P<msg>\S+ format %\S* (?:has arg \S+ of wrong type|reads arg #\d+, but call has)|\S+ call needs \d+ args? but has|\S+ call has arguments but no formatting directives|\S+ passes lock by value|self-assignment of|\S+ composite literal uses unkeyed fields|the cancel function .* is not used|using \S+ before checking for errors).*$"),
    // A module the compiler cannot find is a package or framework not
    // fetched or not built (Swift imports modules, not files).
    r("swift.no_module", "swiftc", Dependency, 0.9, r"error: no such module '(?P<pkg>[^']+)'"),
    r("swift.error", "swiftc", Compile, 1.0, r"^(?:❌\s+)?(?P<file>[\w./\\ -]+\.swift):(?P<line>\d+):(?P<col>\d+): (?:error: )?(?P<msg>.+)$"),
    r("objc.xcpretty_error", "xcpretty", Compile, 0.9, r"^❌\s+(?P<file>[\w./\\ -]+\.(?:m|mm|h|c|cpp)):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$"),
    r("xcode.build_failed", "xcodebuild", Compile, 0.7, r"\*\* (?:BUILD|ARCHIVE) FAILED \*\*|^The following build commands failed:"),
    r("ghc.error", "ghc", Compile, 1.0, r"^(?P<file>[\w./\\:-]+\.(?:hs|lhs|hsc|purs)):(?P<line>\d+):(?P<col>\d+)(?:-\d+)?: error:?(?: \[(?P<code>GHC-\d+)\])?"),
    r("purescript.error", "purs", Compile, 0.8, r"^Error found:$|^Error \d+ of \d+:$|^(?:Could not match type|Unknown (?:value|type|data constructor))"),
    r("erlc.error", "erlc", Compile, 1.0, r"^(?P<file>[\w./-]+\.(?:erl|hrl)):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>(?:syntax error|variable .* is unbound|function .* undefined|field \w+ undefined|record \w+ undefined|illegal|head mismatch|undefined|import \S+ is unused|bad|.*unsafe).*)$"),
    r("elixir.compile", "elixirc", Compile, 1.0, r"^== Compilation error in file (?P<file>\S+) ==|^\*\* \((?:CompileError|SyntaxError|TokenMissingError|MismatchedDelimiterError)\) (?P<file2>[\w./-]+\.exs?):(?P<line>\d+)"),
    r("python.syntax", "python", Compile, 1.0, r"^(?:E\s+)?(?:SyntaxError|IndentationError|TabError): (?P<msg>.+)$"),
    // A third-party package's type stubs are not installed (mypy's hint
    // names the `types-*` package to add).
    r("mypy.missing_stubs", "mypy", Dependency, 0.9, r#"error: Library stubs not installed for "(?P<pkg>[\w.]+)""#),
    r("mypy.error", "mypy", Compile, 0.9, r"^(?P<file>[\w./-]+\.pyi?):(?P<line>\d+):(?:(?P<col>\d+):)? error: (?P<msg>.+?)(?:  \[(?P<code>[\w-]+)\])?$"),
    // Pyright's CLI: `path.py:42:24 - error: message`, and its summary.
    r("pyright.error", "pyright", Compile, 0.9, r"^(?P<file>/?[\w./-]+\.pyi?):(?P<line>\d+):(?P<col>\d+) - error: (?P<msg>.+)$|^[1-9]\d* errors?, \d+ warnings?, \d+ informations?\s*$"),
    // Compilers of other languages, in their own formats.
    r("clojure.compile", "clojure", Compile, 0.9, r"Unable to resolve (?:symbol|var|classname): (?P<msg>\S+)(?: in this context)?, compiling:\((?P<file>[\w./-]+\.clj[sc]?):(?P<line>\d+)|^Syntax error (?:\(\w+\) )?(?:compiling|macroexpanding|reading source) (?:\S+ )?at \((?P<file2>[\w./-]+\.clj[sc]?):(?P<line2>\d+)"),
    r("perl.compile", "perl", Compile, 0.9, r#"^Global symbol "[$@%]\w+" requires explicit package name|^syntax error at (?P<file>\S+) line (?P<line>\d+), near|^Bareword "\w+" not allowed while "strict subs"|\bhad compilation errors\.$|^Compilation failed in require at (?P<file2>\S+) line (?P<line2>\d+)"#),
    r("ocaml.error", "ocaml", Compile, 0.9, r"^Error: (?:Unbound (?:value|module|type constructor|constructor|record field|class)|This expression has type|Syntax error|The (?:function|constructor|value) \S+ .*(?:applied to|expects))"),
    r("groovy.compile", "groovyc", Compile, 0.9, r"^(?P<file>\S+\.groovy): (?P<line>\d+): (?P<msg>unable to resolve class .+|unexpected token: .+|expecting .+)$|^startup failed:$"),
    r("php.parse", "php", Compile, 1.0, r"(?:PHP )?Parse error:\s+(?P<msg>.+?) in (?P<file>\S+\.php)(?: on line |:)(?P<line>\d+)"),
    r("ruby.syntax", "ruby", Compile, 1.0, r"(?P<file>[\w./-]+\.(?:rb|rake|gemspec)):(?P<line>\d+): syntax error, (?P<msg>.+)"),
    r("coffee.error", "coffee", Compile, 1.0, r"^(?P<file>[\w./-]+\.(?:coffee|litcoffee)):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$"),
    r("babel.syntax", "babel", Compile, 0.9, r"SyntaxError: (?P<file>[\w./-]+\.[jt]sx?): (?P<msg>.+) \((?P<line>\d+):(?P<col>\d+)\)"),
    r("lua.error", "lua", Compile, 0.8, r"^(?:lua|luajit|luvit): (?P<file>[\w./-]+\.lua):(?P<line>\d+): (?P<msg>.+)$"),
    r("r.parse", "R", Compile, 0.8, r"^Error in parse\(|^Error: unexpected (?:symbol|'[^']+'|input|string constant|numeric constant|end of input)"),
    r("latex.error", "latex", Compile, 1.0, r"^! (?P<msg>(?:LaTeX Error|Undefined control sequence|Missing|Extra|Emergency stop|Package \w+ Error|Paragraph ended|Argument of|Illegal|Too many|File ended|Runaway).*)$|^(?P<file>[\w./-]+\.(?:tex|sty|cls)):(?P<line>\d+): (?P<msg2>.+)$"),
    r("latex.overfull", "latex", Lint, 0.4, r"^Overfull \\[hv]box \(\d+(?:\.\d+)?pt too (?:wide|high)\) (?:in paragraph|detected) at lines? (?P<line>\d+)"),
    r("latex.undefined_refs", "latex", Lint, 0.5, r"^LaTeX Warning: (?:There were undefined references|Reference `[^']+' on page \d+ undefined|Citation `[^']+' on page \d+ undefined|Label\(s\) may have changed)"),
    r("emacs.bytecomp", "emacs byte-compile", Compile, 1.0, r"^(?:In [\w-]+:\s*)?(?P<file>[\w./-]+\.el):(?P<line>\d+):(?P<col>\d+):\s*(?:Error|Warning): (?P<msg>.+)$"),
    r("vim.script_error", "vim", Crash, 0.6, r"^(?:Error detected while processing|E\d{2,4}: )"),
    r("yaml.content", "yaml", Compile, 0.8, r"\((?P<file>[^)]+\.(?:md|markdown|html|rst|adoc|txt))\): (?P<msg>(?:found character that cannot start any token|did not find expected|mapping values are not allowed|could not find expected|found unexpected end of stream|found undefined tag handle).*)"),
    r("xml.validity", "xmllint", Compile, 0.8, r"^(?P<file>[\w./-]+\.x[ms]l):(?P<line>\d+): (?:element \w+: )?(?:validity|parser) error : (?P<msg>.+)"),
    r("css.syntax", "postcss", Compile, 0.9, r"^CssSyntaxError: (?P<file>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$"),
    r("sass.error", "sass", Compile, 0.9, r"^(?:Error: |SassError: )(?P<msg>.+)\s+on line (?P<line>\d+) of (?P<file>\S+)"),
    // The shape most compilers, resource compilers and checkers share (the
    // GNU coding standards' `file:line[:col]: error: message`) for a file
    // no more specific rule knows; a tool's prefix may stand before it.
    r("generic.diagnostic", "compiler", Compile, 0.7, r"^(?:\S+ )?(?P<file>[\w./\\@+~:-]*[\w-]\.[A-Za-z][\w]{0,9}):(?P<line>\d+)(?::(?P<col>\d+))?: (?:fatal )?error(?:\[[\w-]+\])?: (?P<msg>.+)$"),
    // R's run-time error: `Error in <call> : <message>`.
    r("r.error", "R", Crash, 0.7, r"^Error in (?P<msg>\S.{0,200}) : .+$"),
    // R's knitr names the chunk of a document whose code failed.
    r("r.knitr", "R", Crash, 0.8, r"^Quitting from lines \d+-\d+ \((?P<file>[^)]+)\)|^Error: processing vignette '(?P<file2>[^']+)' failed with diagnostics:$"),
    r("make.error", "make", Compile, 0.35, r"^make(?:\[\d+\])?: \*\*\* \[.*\] (?:Error [1-9]\d*|Segmentation fault)"),

    // -------------------------------------------------------------- crashes
    // A built-in a later ECMAScript (or Node) added, missing at run time:
    // the runtime the job selected is older than the code expects.
    r("js.runtime_version", "node", Config, 0.9, r"^(?:Uncaught )?(?:TypeError: (?P<msg>(?:Object\.(?:values|entries|fromEntries|hasOwn|getOwnPropertyDescriptors|groupBy)|Promise\.(?:allSettled|any|withResolvers)|Array\.(?:prototype\.\w+|fromAsync)|String\.prototype\.\w+) is not a function)|ReferenceError: (?P<msg2>(?:structuredClone|globalThis|AbortController|queueMicrotask|fetch|TextEncoder|TextDecoder|BigInt|WeakRef|FinalizationRegistry) is not defined))\b"),
    r("js.uncaught", "node", Crash, 0.9, r"^(?:Uncaught )?(?:TypeError|ReferenceError|RangeError|EvalError|URIError): (?P<msg>.+)$"),
    // JavaScript bundlers (webpack, Next.js, Turbopack, Vite, esbuild)
    // refusing the project's source.
    r("bundler.error", "bundler", Compile, 0.8, r"^> Build error occurred$|^Failed to compile\.?$|^Module build failed\b|\bModule parse failed: |\bParsing ecmascript source code failed\b|^✘ \[ERROR\] |^error during build:$|^Error: Turbopack build failed\b"),
    r("js.syntax", "node", Compile, 0.8, r"^SyntaxError: (?P<msg>.+)$"),
    r("python.exception", "python", Crash, 0.8, r"^(?P<code>(?:TypeError|AttributeError|NameError|KeyError|IndexError|ValueError|ZeroDivisionError|UnboundLocalError|RecursionError|NotImplementedError|RuntimeError|FileNotFoundError|OSError|UnicodeDecodeError|UnicodeEncodeError)): (?P<msg>.+)$"),
    // pytest prints the exception that ended a test behind `E`.
    r("pytest.exception", "pytest", Crash, 0.8, r"^E\s+(?P<code>(?:\w+\.)*(?:TypeError|AttributeError|NameError|KeyError|IndexError|ValueError|ZeroDivisionError|UnboundLocalError|RecursionError|NotImplementedError|RuntimeError|UnicodeDecodeError|UnicodeEncodeError))\b|^E\s+fixture '(?P<test>[^']+)' not found$"),
    // A native addon built for another Node ABI, or never built; .NET's
    // loader finding another version of an assembly than the one compiled
    // against.
    r("node.native_abi_conflict", "node", Dependency, 0.9, r"was compiled against a different Node\.js version using|^NODE_MODULE_VERSION \d+\. This version of Node\.js requires|\bModule did not self-register\b|Could not locate the bindings file\b|Cannot find module '(?P<file>[^']*/build/(?:Release|Debug)/[^']+\.node)'"),
    r("dotnet.linkage_conflict", "dotnet", Dependency, 0.7, r"\bSystem\.(?P<code>DllNotFoundException|TypeLoadException|MissingMethodException|MissingFieldException|BadImageFormatException)\b"),
    // PHP requiring Composer's autoloader that `composer install` never wrote.
    r("php.autoload_missing", "composer", Dependency, 0.9, r"Failed opening required '(?P<file>[^']*vendor/autoload\.php)'|require(?:_once)?\((?P<file2>[^)]*vendor/autoload\.php)\): [Ff]ailed to open stream"),
    // The linkage errors of a JVM: a class or method of one library
    // version called by code built against another.
    r("jvm.linkage_conflict", "jvm", Dependency, 0.7, r"\bjava\.lang\.(?P<code>NoSuchMethodError|NoSuchFieldError|AbstractMethodError|NoClassDefFoundError|IncompatibleClassChangeError|UnsatisfiedLinkError)\b|\bDLL load failed\b|\bLibrary not loaded: "),
    r("python.traceback", "python", Crash, 0.5, r"^Traceback \(most recent call last\):$"),
    // A script that ran a command and raised because it failed: the cause
    // is the command's own output, not the script.
    r("python.called_process", "python", Crash, 0.1, r"^subprocess\.CalledProcessError: Command (?P<cmd>.+) returned non-zero exit status (?P<code>\d+)"),
    r("java.exception", "jvm", Crash, 0.8, r#"^(?:Exception in thread "[^"]+" |Caused by: )?(?P<code>java\.lang\.(?:NullPointerException|ClassCastException|IllegalStateException|IllegalArgumentException|ArrayIndexOutOfBoundsException|IndexOutOfBoundsException|NumberFormatException|UnsupportedOperationException|StackOverflowError|ArithmeticException|ExceptionInInitializerError)|java\.util\.ConcurrentModificationException)\b"#),
    r("ruby.exception", "ruby", Crash, 0.8, r"^(?P<code>NoMethodError|NameError|ArgumentError|TypeError|LocalJumpError|ZeroDivisionError|FrozenError|KeyError|SystemStackError|NotImplementedError|ActiveRecord::\w+):?\s*(?P<msg>.*)$|\bundefined (?:method|local variable or method) `[^']+' for\b"),
    // Ruby's own report of an uncaught exception: `file:line:in `meth': message (Class)`
    // (a LoadError or a Gem / Bundler error is a dependency's, read elsewhere).
    r("ruby.uncaught", "ruby", Crash, 0.9, r"^(?P<file>\S+\.(?:rb|rake)):(?P<line>\d+):in [`'][^']*': (?P<msg>.*) \((?P<code>(?:NoMethodError|NameError|ArgumentError|TypeError|ZeroDivisionError|FrozenError|KeyError|RuntimeError|NotImplementedError|SystemStackError|IndexError|RangeError|(?:[A-Z]\w*::)*[A-Z]\w*(?:Error|Exception)))\)$"),
    // A name the code imports is not in the module it names: the project's
    // own module (its file in the project) is a code error; one under
    // site-packages is the dependency's (the vendored rule takes it).
    r("python.import_name", "python", Crash, 0.8, r"(?:ImportError: )?cannot import name '?(?P<msg>\w+)'? from '(?P<pkg>[\w.]+)' \((?P<file>[^)]+\.py)\)"),
    // PHP's engine errors (PHP 7+ throws them; PHPUnit reports them as errors).
    r("php.error", "php", Crash, 0.9, r#"^(?:PHP )?(?:Error|TypeError|ArgumentCountError|DivisionByZeroError|ValueError|ErrorException): (?P<msg>(?:Call to (?:a member function|undefined (?:method|function))|Cannot (?:access|instantiate|redeclare|use object)|Argument #?\d|Too few arguments|Undefined (?:variable|index|offset|array key|property|constant|method)|Unsupported operand|Attempt to (?:read|assign|access)|Object of class|Typed property).*)$"#),
    // Test runners that tell an error (an uncaught exception) from a
    // failure (an assertion): errors and no failures is the code crashing
    // under test, a code error by the rubric.
    r("tests.errors_only", "test runner", Crash, 0.7, r"\bTests run: \d+, Failures: 0, Errors: [1-9]\d*|^FAILED \((?:(?:SKIP|skipped|expected failures)=\d+, )?errors=[1-9]\d*\)$|^Tests: \d+, Assertions: \d+, Errors: [1-9]\d*\.$|\b\d+ (?:runs|tests), \d+ assertions, 0 failures, [1-9]\d* errors\b|\b\d+ tests, \d+ passed, 0 failures, [1-9]\d* errors\b"),
    r("tests.error_header", "test runner", Crash, 0.5, r"^There (?:was|were) \d+ errors?:$|^\d+\) Error:$|^ERROR \(\d+:\d\d:\d\d\.\d+\) (?P<test>\S.*)$"),
    r("dotnet.exception", "dotnet", Crash, 0.8, r"\bSystem\.(?:NullReferenceException|InvalidOperationException|ArgumentException|ArgumentNullException|InvalidCastException|IndexOutOfRangeException|KeyNotFoundException|NotImplementedException|FormatException)\b"),
    r("go.panic", "go", Crash, 0.8, r"^panic: (?P<msg>.+)$|runtime error: (?:invalid memory address|index out of range|slice bounds out of range|nil map)"),
    r("rust.panic", "rust", Crash, 0.6, r"panicked at .*(?:called `(?:Option|Result)::unwrap\(\)`|index out of bounds|attempt to (?:add|subtract|multiply|divide) with overflow|unreachable|not yet implemented|byte index)"),
    // Rust 1.73+ prints the panic's message on the line after `panicked at file:line:col:`.
    r("rust.panic_message", "rust", Crash, 0.6, r"^(?:called `(?:Option|Result)::unwrap(?:_err)?\(\)` on an? `(?:None|Err|Ok)` value|index out of bounds: the len is \d+ but the index is \d+|attempt to (?:add|subtract|multiply|divide|negate|shift left|shift right) with overflow|internal error: entered unreachable code|not yet implemented|byte index \d+ is (?:out of bounds|not a char boundary))"),
    r("cpp.unhandled_exception", "c++ runtime", Crash, 0.9, r"^terminate called after throwing an instance of '(?P<code>[\w:<>, ]+)'|^libc\+\+abi(?:\.dylib)?: terminating with uncaught exception of type (?P<code2>[\w:<>, ]+)"),
    r("julia.error", "julia", Crash, 0.8, r"^(?:ERROR: )?(?:LoadError: )?(?P<code>UndefVarError|MethodError|BoundsError|ArgumentError|DomainError|KeyError|TypeError|InexactError|DimensionMismatch)(?:: (?P<msg>.+))?$"),
    r("native.crash", "native", Crash, 0.9, r"(?i)\bsegmentation fault\b|\bwasm trap\b|\bmemory access out of bounds\b|\b(?:exit(?:ed)?(?: with)?|completed with) (?:exit )?(?:code|status) 13[49]\b|\bSIGSEGV\b|\bcore dumped\b|^Abort trap\b|\bdouble free or corruption\b|\bstack smashing detected\b|\bAccess violation\b|\bbus error\b"),
    r("sanitizer", "sanitizer", Crash, 1.0, r"ERROR: (?:AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer|UndefinedBehaviorSanitizer)\b|^SUMMARY: (?:Address|Leak|Thread|Memory|UndefinedBehavior)Sanitizer|: runtime error: "),
    r("valgrind", "valgrind", Crash, 0.9, r"ERROR SUMMARY: [1-9]\d* errors? from|Invalid (?:read|write) of size \d+|definitely lost: [1-9]"),
    r("erlang.crash", "erlang", Crash, 0.8, r"(?:terminated|exit value|crash report|Error in process \S+ with exit value).*\{\{?(?:badmatch|badarg|undef|function_clause|case_clause|badarith|noproc|badrecord|if_clause|bad_lib)\b"),
    r("haskell.exception", "ghc", Crash, 0.8, r"\*\*\* Exception: (?P<msg>.+)$|^\S+: Prelude\.\w+: (?:empty list|undefined)"),
    r("elixir.exception", "elixir", Crash, 0.7, r"^\*\* \((?P<code>\w+(?:\.\w+)*Error|FunctionClauseError|MatchError|CaseClauseError|UndefinedFunctionError)\) (?P<msg>.+)$"),
    r("php.fatal", "php", Crash, 0.8, r"(?:PHP )?Fatal error:\s+(?P<msg>(?:Uncaught|Call to (?:a member function|undefined)|Allowed memory size).+?)(?: in (?P<file>\S+\.php)(?: on line |:)(?P<line>\d+))?$"),
    r("powershell.exception", "powershell", Crash, 0.4, r"^\+ (?:CategoryInfo|FullyQualifiedErrorId)\s+:"),

    // ------------------------------------------------- linters and checkers
    r("eslint.problem", "eslint", Lint, 1.0, r"^(?P<line>\d+):(?P<col>\d+)\s+error\s+(?P<msg>.+?)\s{2,}(?P<code>(?:@?[\w-]+/)*[\w-]+)$"),
    r("eslint.summary", "eslint", Lint, 1.0, r"^✖ [1-9]\d* problems? \([1-9]\d* errors?"),
    r("stylelint.problem", "stylelint", Lint, 1.0, r"^(?P<line>\d+):(?P<col>\d+)\s+[✖×]\s+(?P<msg>.+?)\s{2,}(?P<code>[a-z][\w/-]+)$"),
    r("stylelint.legacy", "stylelint", Lint, 0.9, r"^(?P<line>\d+):(?P<col>\d+)\s+(?P<msg>.+?) \((?P<code>[a-z]+(?:-[a-z]+)+)\)$"),
    r("tslint.error", "tslint", Lint, 1.0, r"^(?:ERROR|WARNING): (?:\(\S+\) )?(?P<file>[\w./\\@-]+\.tsx?)(?:\[(?P<line>\d+), (?P<col>\d+)\]|:(?P<line2>\d+):(?P<col2>\d+)): (?P<msg>.+)$"),
    r("flake8.problem", "flake8", Lint, 1.0, r"^(?P<file>[\w./-]+\.py):(?P<line>\d+):(?P<col>\d+): (?P<code>[EWFCNDBQ]\d{3}) (?P<msg>.+)$"),
    // pyflakes' own report (no code; the column only since 2.2).
    r("pyflakes.message", "pyflakes", Lint, 0.9, r"^(?P<file>[\w./-]+\.py):(?P<line>\d+):(?:(?P<col>\d+):?)? (?P<msg>'[^']+' imported but unused|undefined name '[^']+'|redefinition of unused '[^']+' from line \d+|local variable '[^']+' (?:is assigned to but never used|defined .* referenced before assignment)|'from [\w.]+ import \*' used; unable to detect undefined names|import '[^']+' from line \d+ shadowed by loop variable|f-string is missing placeholders|'[^']+' may be undefined, or defined from star imports: .+)$"),
    // docutils / Sphinx: `file.rst:12: ERROR: …`, `file.rst:12: (ERROR/3) …`.
    r("docutils.problem", "sphinx", Lint, 0.9, r"^(?P<file>\S+\.(?:rst|txt|md|py)):(?P<line>\d+): (?:(?:ERROR|SEVERE|CRITICAL): |\((?:ERROR/3|SEVERE/4)\) )(?P<msg>.+)$"),
    r("pylint.problem", "pylint", Lint, 1.0, r"^(?P<file>[\w./-]+\.py):(?P<line>\d+):(?P<col>\d+): (?P<code>[CRWEF]\d{4}): (?P<msg>.+)$"),
    r("black.reformat", "black", Lint, 1.0, r"^would reformat (?P<file>\S+)|^Oh no! 💥 💔 💥|files? would be reformatted"),
    r("isort.unsorted", "isort", Lint, 1.0, r"^ERROR: (?P<file>\S+) Imports are incorrectly sorted"),
    r("rubocop.offense", "rubocop", Lint, 1.0, r"^(?P<file>[\w./-]+\.(?:rb|rake|gemspec|ru)):(?P<line>\d+):(?P<col>\d+): (?P<sev>[CWEFR]): (?:\[Correctable\] )?(?P<code>[A-Z]\w+/\w+): (?P<msg>.+)$"),
    r("rubocop.summary", "rubocop", Lint, 1.0, r"^\d+ files? inspected, [1-9]\d* offen[cs]es? detected"),
    r("shellcheck.gcc", "shellcheck", Lint, 1.0, r"(?P<file>[\w./-]+):(?P<line>\d+):(?P<col>\d+): (?:error|warning|note|style): (?P<msg>.+) \[(?P<code>SC\d{4})\]$"),
    r("shellcheck.tty", "shellcheck", Lint, 0.9, r"^In (?P<file>\S+) line (?P<line>\d+):$|\^-+ (?P<code>SC\d{4})(?: \(\w+\))?: "),
    r("markdownlint", "markdownlint", Lint, 1.0, r"^(?P<file>[\w./-]+\.md):(?P<line>\d+)(?::\d+)?:? (?P<code>MD\d{3})(?:/[\w-]+)* (?P<msg>.+)$"),
    r("gofmt", "gofmt", Lint, 1.0, r"\bis not (?:gofmt|goimport)ed\b|\(goimports\)$|\(gofmt\)$|^diff -u .*\.go\.orig"),
    r("gometalinter", "golangci-lint", Lint, 1.0, r"^(?P<file>[\w./-]+\.go):(?P<line>\d+):(?:(?P<col>\d+):)?:?\s*(?:warning|error)?:? (?P<msg>.+) \((?P<code>\w+)\)$"),
    r("checkstyle", "checkstyle", Lint, 1.0, r"^\[(?:ERROR|WARN)\] (?P<file>[\w./\\:-]+\.java):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<msg>.+) \[(?P<code>\w+)\]$|You have [1-9]\d* Checkstyle violations?"),
    r("spotless", "spotless", Lint, 1.0, r"The following files had format violations|Run '.*spotlessApply' to fix"),
    r("ktlint", "ktlint", Lint, 0.9, r"^(?P<file>[\w./-]+\.kts?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+) \((?P<code>[\w:-]+)\)$"),
    r("scalastyle", "scalafmt", Lint, 0.9, r"scalafmt.*(?:--test|check).*failed|error: (?:file|files) (?:are|is) not formatted|Found \d+ errors? \(scalastyle\)"),
    r("clang_format", "clang-format", Lint, 0.9, r"code should be clang-formatted|clang-format.*(?:violations?|would reformat|needs? formatting)|\[-Wclang-format-violations\]"),
    r("clang_tidy", "clang-tidy", Lint, 0.8, r"^(?P<file>[\w./-]+):(?P<line>\d+):(?P<col>\d+): (?:warning|error): .+ \[(?P<code>(?:bugprone|cert|clang-analyzer|cppcoreguidelines|google|hicpp|llvm|misc|modernize|performance|readability)-[\w.-]+)\]$"),
    r("cppcheck", "cppcheck", Lint, 0.9, r"^\[(?P<file>[\w./-]+):(?P<line>\d+)\]: \((?:error|warning|style)\) (?P<msg>.+)$"),
    r("phpcs", "phpcs", Lint, 1.0, r"^FOUND [1-9]\d* ERRORS?(?: AND \d+ WARNINGS?)? AFFECTING \d+ LINES?"),
    r("php_cs_fixer", "php-cs-fixer", Lint, 0.9, r"^\s*\d+\) (?P<file>\S+\.php)(?: \([\w, ]+\))?$|Files that were not fixed due to errors|Checked all files in .*, found \d+"),
    r("phpstan", "phpstan", Lint, 1.0, r"^\[ERROR\] Found [1-9]\d* errors?"),
    r("hlint", "hlint", Lint, 1.0, r"^(?P<file>[\w./-]+\.hs):(?P<line>\d+):(?P<col>\d+)(?:-\d+)?: (?:Warning|Error|Suggestion): (?P<msg>.+)$|^[1-9]\d* hints?$"),
    r("luacheck", "luacheck", Lint, 1.0, r"^Total: \d+ warnings? / [1-9]\d* errors? in \d+ files?|^Total: [1-9]\d* warnings? / \d+ errors? in \d+ files?"),
    r("vint", "vint", Lint, 1.0, r"^(?P<file>[\w./-]+\.vim):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$"),
    r("credo", "credo", Lint, 0.9, r"^┃ \[[FRCDW]\] [↑↗→↘↓] (?P<msg>.+)$|mix format failed due to --check-formatted|^\*\* \(Mix\) mix format failed"),
    // pre-commit names the hook that failed (a linter or formatter, or
    // one that rewrote files).
    r("precommit.hook", "pre-commit", Lint, 0.9, r"^- hook id: (?P<code>\S+)$|^- files were modified by this hook$"),
    // swiftc's messages as xcodebuild's "Testing failed:" summary lists
    // them, without their location.
    r("swift.message", "swiftc", Compile, 0.7, r"^(?P<msg>'[^']+' is inaccessible due to '\w+' protection level|cannot find '[^']+' in scope|use of unresolved identifier '[^']+'|value of type '[^']+' has no member '[^']+'|cannot convert value of type '[^']+' to (?:expected argument type|specified type) '[^']+'|missing argument for parameter '[^']+' in call|extra argument '[^']+' in call|ambiguous use of '[^']+')$"),
    r("swiftlint", "swiftlint", Lint, 1.0, r"^(?P<file>[\w./ -]+\.swift):(?P<line>\d+):(?P<col>\d+): (?:error|warning): (?P<msg>.+) \((?P<code>\w+)\)$|Done linting! Found \d+ violations?, [1-9]\d* serious"),
    r("commitlint", "commitlint", Lint, 0.9, r"^✖\s+(?P<msg>.+) \[(?P<code>[\w-]+)\]$|found [1-9]\d* problems?, \d+ warnings?$"),
    r("codespell", "codespell", Lint, 0.9, r"^(?P<file>[\w./-]+):(?P<line>\d+): (?P<msg>\w+ ==> \w+(?:, \w+)*)$|\bmisspelled\b|is a misspelling of\b"),
    r("editorconfig", "editorconfig", Lint, 0.8, r"(?i)editorconfig.*(?:error|violation)|trailing whitespace|Wrong (?:indent style|line ending)"),
    r("jshint.problem", "jshint", Lint, 1.0, r"^(?P<file>[\w./@-]+\.(?:js|jsx|mjs|cjs|json|html)): line (?P<line>\d+), col (?P<col>\d+), (?P<msg>.+)$"),
    r("prettier.check", "prettier", Lint, 1.0, r"Code style issues (?:were )?found in (?:the above file|\d+ files)|Forgot to run Prettier\?"),
    // The `file:line:col: message` shape most linters and compilers share
    // (standard, xo, gcc-style reporters); warnings and notes are not the
    // failure (see `collect`).
    r("lint.diagnostic", "linter or compiler", Lint, 0.6, r#"^(?P<file>/?(?:[\w.@~-]+/)*[\w.@-]+\.(?:js|jsx|mjs|cjs|ts|tsx|vue|svelte|coffee|py|pyx|rb|go|java|kt|kts|scala|groovy|php|css|scss|sass|less|sh|bash|c|cc|cpp|cxx|h|hpp|m|mm|rs|swift|cs|fs|ex|exs|erl|hs|elm|lua|pl|pm|r|R|jl|dart|nim|zig|md|rst|yml|yaml|json|toml|xml|html)):(?P<line>\d+):(?P<col>\d+):? (?P<msg>[A-Za-z'"`(\[].+)$"#),
    // A make target named for a check of style or format failed.
    r("make.lint_target", "make", Lint, 0.7, r"^make(?:\[\d+\])?: \*\*\* \[(?:\S*[/:])?(?:lint|fmt|format|style|vet|gofmt|goimports|golint|flake8|pep8|pycodestyle|pylint|eslint|jshint|rubocop|cpplint|clang-format|tidy|check-?(?:fmt|format|style|lint))[\w.-]*\] Error [1-9]|recipe for target '(?:\S*[/:])?(?:lint|fmt|format|style|vet|gofmt|check-?(?:fmt|format|style|lint))[\w.-]*' failed"),
    r("lint.generic", "linter", Lint, 0.5, r"(?i)\b[1-9]\d* (?:lint|style|format(?:ting)?) (?:errors?|violations?|issues?|problems?)\b|\blint(?:ing)? (?:failed|errors? found)\b"),
    // Link checkers: awesome_bot, markdown-link-check, lychee, html-proofer, linkchecker.
    r("links.awesome_bot", "awesome_bot", Lint, 1.0, r"^(?:\d+\. )?\[L\d+\] (?P<code>\d{3}) (?P<url>\S+)"),
    r("links.header", "link checker", Lint, 0.9, r"^> Links\s*$|^Issues :-\($|^No issues :-\)$"),
    r("links.mlc", "markdown-link-check", Lint, 1.0, r"^\[✖\] (?P<url>\S+)(?: → Status: (?P<code>\d+))?|^ERROR: [1-9]\d* dead links? found!"),
    r("links.lychee", "lychee", Lint, 1.0, r"^(?:✗|\[ERR\]|\[\d{3}\]) (?:\[(?P<code>\d{3})\] )?(?P<url>https?://\S+)|^🚫 Errors\s+[1-9]"),
    r("links.htmlproofer", "html-proofer", Lint, 1.0, r"HTML-Proofer found [1-9]\d* failures?|(?:internally|externally) linking to (?P<url>\S+), which does not exist|External link (?P<url2>\S+) failed"),
    r("links.broken", "link checker", Lint, 0.6, r"(?i)\b(?:broken|dead) links?\b"),
    // Checks that run beside the compiler and fail the build on what they
    // find (the rubric's static analysis, documentation, binary
    // compatibility, bundle size, licence headers): the project's code.
    r("check.binary_compat", "api compatibility", Lint, 0.9, r"Breaking the build because there is at least one (?:incompatibility|binary incompatible|source incompatible)|Failed binary compatibility check against|\bAPI (?:problems|incompatibilities) found\b|^(?:\[ERROR\] )?(?:java\.lang\.)?(?:Method|Class|Field) .* (?:removed|was removed).* \[(?:METHOD|CLASS|FIELD)_REMOVED\]"),
    r("check.bundle_size", "bundle size", Lint, 0.9, r"^FAIL\s+\S+: [\d.]+\s?[kKMG]?B > maxSize [\d.]+\s?[kKMG]?B|Package size limit has exceeded by|^\s*Size limit has exceeded"),
    r("check.static_analysis", "spotbugs / pmd", Lint, 0.9, r"\bfailed with [1-9]\d* bugs? and \d+ errors?\b|You have [1-9]\d* (?:PMD|CPD) violations?|^(?:\[ERROR\] )?(?:Medium|High|Low|Scary|Troubling|Of Concern): .* \[(?:\w+ ){0,2}\w+\] .*(?:At|In) \w+\.java:\[line \d+\]"),
    r("check.license", "licence check", Lint, 0.9, r"Too many files with unapproved licen[cs]e|Some files do not have the expected license header|Missing header in: |License header (?:check failed|is missing)"),
    // A coverage gate (JaCoCo's `check` goal, pytest-cov's `--cov-fail-under`,
    // Jest's and nyc's thresholds, coverage.py's `fail_under`): the tests
    // passed, a check on the code did not.
    r("check.coverage", "coverage gate", Lint, 0.8, r"Coverage checks have not been met|Required test coverage of [\d.]+% not reached|coverage threshold for (?:statements|branches|lines|functions) \([\d.]+%\) not met|Coverage for (?:lines|statements|functions|branches) \([\d.]+%\) does not meet (?:global )?threshold|Coverage failure: total of [\d.]+ is less than fail-under="),
    // Bandit's findings (`>> Issue: [B602:subprocess_popen_with_shell_equals_true] …`)
    // and detekt's verdict on its weighted issues.
    r("bandit.issue", "bandit", Lint, 0.9, r"^>> Issue: \[(?P<code>B\d{3}):\w+\] (?P<msg>.+)$"),
    r("detekt", "detekt", Lint, 1.0, r"(?:Analysis|Build) failed with [1-9]\d* weighted issues?"),
    r("check.docs", "documentation", Lint, 0.8, r"^Warning, treated as error:$|MavenReportException: Error while generating Javadoc|^(?:\[ERROR\] )?javadoc: error - |build finished with problems, \d+ warnings?"),

    // ---------------------------------------------------------- dependencies
    r("npm.404", "npm", Dependency, 1.0, r"^npm ERR! (?:code E404|404 Not Found(?: - GET \S+/(?P<pkg>[@\w./-]+))?|404 '(?P<pkg2>[^']+)' is not in (?:the npm registry|this registry))"),
    r("npm.eresolve", "npm", Dependency, 1.0, r"^npm ERR! (?:code (?:ERESOLVE|ETARGET|E?PEERINVALID)|notarget(?: No matching version found for (?P<pkg2>[@\w./-]+)@(?P<ver2>\S+?)\.?(?:\s|$))?|peer dep missing|Could not resolve dependency)|No matching version found for (?P<pkg>[@\w./-]+)@(?P<ver>\S+?)\.?(?:\s|$)|unable to resolve dependency tree"),
    r("npm.install_failed", "npm", Dependency, 0.6, r"^npm ERR! (?:Failed at the (?P<pkg>\S+?)@(?P<ver>\S+) (?:install|postinstall|preinstall) script|code ELIFECYCLE.*install|gyp ERR!)|^(?:node-pre-)?gyp ERR! "),
    r("yarn.notfound", "yarn", Dependency, 1.0, r#"^error (?:Couldn't find package "(?P<pkg>[^"]+)"|Couldn't find any versions for "(?P<pkg2>[^"]+)" that matches "(?P<ver>[^"]+)"|An unexpected error occurred: "\S+/(?P<pkg3>[@\w./-]+?): Not found")"#),
    r("yarn.lockfile", "yarn", Dependency, 0.8, r"Your lockfile needs to be updated|lockfile would have been modified|integrity check failed|\bERR_PNPM_(?:OUTDATED_LOCKFILE|LOCKFILE_\w+|NO_MATCHING_VERSION|PEER_DEP_ISSUES|FETCH_40[34]|NO_LOCKFILE)\b"),
    // A lock file that no longer matches the manifest (Composer, npm ci).
    r("manifest.lockfile", "package manager", Dependency, 0.9, r"composer\.lock is out of date|Your lock file does not contain a compatible set of packages|can only install (?:packages )?(?:with `npm ci` )?when your package\.json and package-lock\.json (?:or npm-shrinkwrap\.json )?are in sync"),
    // A tarball the registry no longer serves.
    r("yarn.tarball", "yarn", Dependency, 0.9, r#"^error \S+\.tgz: Request failed \"(?:404|410)"#),
    r("node.cannot_find_module", "node", Dependency, 0.9, r"(?:Error: )?Cannot find module '(?P<pkg>[^'./][^']*)'|Module not found: Error: Can't resolve '(?P<pkg2>[^'./][^']*)'|ERR_MODULE_NOT_FOUND.*'(?P<pkg3>[^'./][^']*)'|Cannot find module (?P<pkg4>@[\w.-]+/[\w.-]*\w)"),
    // A relative path is the project's own file, not a package: a wrong
    // import path or a file missing from the change (case matters on
    // Linux), raised where the module is loaded.
    r("node.missing_own_module", "node", Crash, 0.8, r"(?:Error: )?Cannot find module '(?P<file>(?:\.{1,2})?/[^']+)'|Module not found: Error: Can't resolve '(?P<file2>(?:\.{1,2})?/[^']+)'|ERR_MODULE_NOT_FOUND.*'(?P<file3>(?:\.{1,2})?/[^']+)'"),
    r("tsc.missing_types", "tsc", Dependency, 0.9, r"Cannot find (?:name '(?:describe|it|expect|test|jasmine|jest|beforeEach|afterEach|require|process|module|__dirname|Buffer)'|type definition file for '(?P<pkg>[^']+)')|TS2307: Cannot find module '(?P<pkg2>[^'.][^']*)'|Cannot find module '(?P<pkg3>[^'.][^']*)' or its corresponding type declarations|Could not find a declaration file for module '(?P<pkg4>[^'.][^']*)'|\((?:2304|2307|2580|2582|2593)\)$"),
    r("bower.notfound", "bower", Dependency, 0.9, r"^bower (?:ENOTFOUND|ECONFLICT|ENORESTARGET|EINVRES)"),
    r("pip.notfound", "pip", Dependency, 1.0, r"Could not find a version that satisfies the requirement (?P<pkg>[\w.\[\]-]+)(?P<ver>[<>=!~][^\s(]*)?|No matching distribution found for (?P<pkg2>[\w.\[\]-]+)"),
    r("pip.conflict", "pip", Dependency, 1.0, r"ResolutionImpossible|because these package versions have conflicting dependencies|(?P<pkg>[\w.-]+) \S+ has requirement (?P<ver>\S+), but you'll have|pip's dependency resolver does not currently take into account"),
    // tox (3.x) failing to install an environment's dependencies.
    r("tox.install_deps", "tox", Dependency, 0.9, r"^ERROR:\s+(?:[\w.-]+: )?could not install deps \[(?P<pkg>[^\],;]+)"),
    // pip's `--require-hashes` check: a downloaded file is not the one the
    // requirements pinned (a re-published release, a tampered mirror).
    r("pip.hashes", "pip", Dependency, 1.0, r"THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE|Hashes are required in --require-hashes mode"),
    // Poetry's resolver (PubGrub, as SwiftPM's and Dart's): the package
    // named is what did not resolve.
    r("poetry.resolve", "poetry", Dependency, 1.0, r"^Because [\w.-]+ depends on (?P<pkg>[\w.\[\]-]+) \((?P<ver>[^)]+)\) which doesn't match any versions, version solving failed\.?$|^(?:The current project's Python requirement|pyproject\.toml changed significantly since poetry\.lock was last generated)"),
    // uv's resolver (PubGrub, like Poetry's and Bundler's).
    r("uv.resolve", "uv", Dependency, 1.0, r"No solution found when resolving dependencies|requirements are unsatisfiable\b"),
    r("pip.build", "pip", Dependency, 0.8, r"Failed building wheel for (?P<pkg>[\w.-]+)|Command \S*python\S* setup\.py egg_info\S* failed|error: subprocess-exited-with-error|Could not build wheels for (?P<pkg2>[\w.-]+)|^error: Setup script exited with error|Microsoft Visual C\+\+ [\d.]+ (?:or greater )?is required"),
    // setuptools' own resolution (setup_requires, pkg_resources at start-up, easy_install).
    r("setuptools.resolve", "setuptools", Dependency, 0.9, r"pkg_resources\.(?:Contextual)?VersionConflict\b|\bVersionConflict: \(|Could not find suitable distribution for Requirement\.parse\('(?P<pkg>[\w.-]+)|No local packages or working download links found for (?P<pkg2>[\w.-]+)|Could not find a version that matches (?P<pkg3>[\w.-]+)|Could not satisfy constraints for package '(?P<pkg4>[\w.-]+)'"),
    r("python.no_module", "python", Dependency, 0.9, r"(?:ModuleNotFoundError|ImportError): No module named '?(?P<pkg>[\w.]+)'?"),
    // The same words about a module of the project itself (its top-level
    // package is a directory of the checkout, as the log's frames show):
    // a broken import in the project's code. Only `own_modules` makes it.
    r("python.own_module", "python", Crash, 0.8, r"(?:ModuleNotFoundError|ImportError): No module named '?(?P<module>[\w.]+)'?"),
    r("python.import", "python", Dependency, 0.5, r"ImportError: cannot import name '?(?P<msg>\w+)'?|ImportError: (?P<msg2>lib\S+\.so[.\d]*: cannot open shared object file)"),
    // setuptools' and importlib's own word that an installed distribution
    // is missing or of the wrong version.
    r("python.distribution", "python", Dependency, 0.9, r"\bpkg_resources\.(?:DistributionNotFound|VersionConflict|ContextualVersionConflict)\b:? ?(?P<pkg>.*)|\bimportlib\.metadata\.PackageNotFoundError\b:? ?(?P<pkg2>.*)"),
    // Julia's loader: a package the project uses is not installed.
    r("julia.missing_package", "julia", Dependency, 0.9, r#"(?:Module|Package) (?P<pkg>\w+) not found in current path|Run `Pkg\.add\("(?P<pkg2>\w+)"\)` to install|Unsatisfiable requirements detected for package (?P<pkg3>\w+)"#),
    r("conda", "conda", Dependency, 1.0, r"PackagesNotFoundError|UnsatisfiableError|ResolvePackageNotFound|The following packages are not available from current channels"),
    r("bundler.notfound", "bundler", Dependency, 1.0, r#"Could not find gem '(?P<pkg>[^'\s]+)(?: \((?P<ver>[^)]+)\))?'|Could not find (?P<pkg2>[\w-]+)-(?P<ver2>\d[\w.]*) in any of the sources|Bundler could not find compatible versions for gem "(?P<pkg3>[^"]+)"|Could not locate Gemfile|Could not find a valid gem '(?P<pkg4>[^'\s]+)'|^Could not find compatible versions$|\bversion solving has failed\b"#),
    r("bundler.install", "bundler", Dependency, 0.9, r"An error occurred while installing (?P<pkg>[\w-]+) \((?P<ver>[^)]+)\), and Bundler cannot continue|Gem::(?:LoadError|MissingSpecError|MissingSpecVersionError|ConflictError|GemNotFoundException)|Gem::Ext::BuildError"),
    r("ruby.load_error", "ruby", Dependency, 0.8, r"cannot load such file -- (?P<pkg>[\w/.-]+)|\(LoadError\)"),
    r("install.generic", "package manager", Dependency, 0.7, r"(?i)\ban error occur+ed while installing (?P<pkg>[\w.@/-]+)"),
    r("maven.resolve", "maven", Dependency, 1.0, r"Could not resolve dependencies for project|Failed to collect dependencies|Could not find artifact (?P<pkg>[\w.-]+:[\w.-]+(?::[\w.-]+)*)|Non-resolvable (?:parent POM|import POM)|PluginResolutionException|Plugin (?P<pkg2>\S+) or one of its dependencies could not be resolved|DependencyResolutionException|Dependency convergence error for (?P<pkg3>\S+)|RequireUpperBoundDeps failed"),
    r("gradle.resolve", "gradle", Dependency, 1.0, r"Could not resolve all (?:files|dependencies|artifacts) for configuration|Could not resolve (?P<pkg>[\w.-]+:[\w.-]+:[\w.+\[\]()-]+)\.?$|Could not find (?P<pkg2>[\w.-]+:[\w.-]+:[\w.+-]+)\.$|Plugin \[id: '(?P<pkg3>[^']+)'(?:, version: '(?P<ver>[^']+)')?\] was not found"),
    r("sbt.resolve", "sbt", Dependency, 1.0, r"unresolved dependency: (?P<pkg>\S+)|sbt\.(?:librarymanagement\.)?ResolveException|Error downloading (?P<pkg2>\S+)|not found: https?://\S+\.(?:pom|jar)"),
    r("ivy_lein.artifact", "leiningen", Dependency, 0.9, r"Could not (?:find|transfer) artifact (?P<pkg>\S+) (?:in|from)"),
    r("go.module", "go", Dependency, 1.0, r"cannot find package \x22(?P<pkg>[^\x22]+)\x22|no required module provides package (?P<pkg2>\S+)|missing go\.sum entry|^go: (?P<pkg3>[\w./-]+)@(?P<ver>\S+): (?:reading|verifying|unknown revision|invalid version|module .* not found)|module (?P<pkg4>\S+) found .* but does not contain package|go: finding module for package|unrecognized import path \x22(?P<pkg5>[^\x22]+)\x22|^go: updates to go\.mod needed|^go: inconsistent vendoring"),
    r("cargo.resolve", "cargo", Dependency, 1.0, r"failed to select a version for(?: the requirement)? `(?P<pkg>[\w-]+)|no matching package named `(?P<pkg2>[\w-]+)` found|failed to get `(?P<pkg3>[\w-]+)` as a dependency|failed to load source for dependency `(?P<pkg4>[\w-]+)`|failed to download (?:from|`(?P<pkg5>[\w-]+))|error: failed to fetch `"),
    r("rustc.missing_crate", "rustc", Dependency, 1.0, r"error\[E0463\]: can't find crate for `(?P<pkg>\w+)`|unresolved import `(?P<pkg2>\w+)`.*(?:maybe a missing crate|use of undeclared crate)"),
    r("composer.resolve", "composer", Dependency, 1.0, r"Your requirements could not be resolved to an installable set of packages|The requested package (?P<pkg>[\w/.-]+)(?: (?P<ver>\S+))? (?:could not be found|exists as)|requires (?P<pkg2>[\w/.-]+) (?P<ver2>\S+) -> (?:no matching package found|satisfiable by)|could not be found in any version|Root composer\.json requires (?P<pkg3>[\w/.-]+)(?: (?P<ver3>[^,\s]+))?, (?:it could not be found|found )"),
    r("hex.deps", "mix", Dependency, 1.0, r"Unchecked dependencies for environment|the dependency is not available, run \x22mix deps\.get\x22|Failed to fetch record for '?(?P<pkg>[\w/]+)'? from registry|No package with name (?P<pkg2>\S+)|Could not find Hex, which is needed|dependency (?P<pkg3>\S+) .* is not available|Hex dependency resolution failed|^\*\* \(Mix\) Could not compile dependency :(?P<pkg5>\w+)|^Failed to use \x22(?P<pkg4>[^\x22]+)\x22 (?:\(versions? (?P<ver>[^)]+)\) )?because"),
    r("rebar.deps", "rebar", Dependency, 1.0, r"Dependency not available: (?P<pkg>\S+)|Failed to fetch and copy dep: (?P<pkg2>\S+)|Package not found in (?:registry|any repo): (?:(?P<pkg3>\w+)(?:-(?P<ver>\d[\w.+-]*?))?\.?(?:\s|$)|(?P<pkg5>\S+))|Failed to update package (?P<pkg4>\S+) from repo"),
    r("cabal.resolve", "cabal", Dependency, 1.0, r"[Cc]ould not resolve dependencies:|rejecting: (?P<pkg>[\w-]+)-(?P<ver>[\d.]+)|unknown package: (?P<pkg2>[\w-]+)|There is no package named '(?P<pkg3>[\w-]+)'|but the stack configuration has no specified version|In the dependencies for (?P<pkg4>[\w-]+)(?:-(?P<ver2>[\d.]+))?:"),
    r("ghc.hidden_module", "ghc", Dependency, 0.9, r"Could not (?:find|load) module [‘'`](?P<pkg>[\w.]+)[’']|It is a member of the hidden package [‘'`](?P<pkg2>[^’']+)[’']"),
    r("purescript.missing_module", "purs", Dependency, 0.8, r"Module (?P<pkg>[\w.]+) was not found\.?$"),
    r("nuget.resolve", "nuget", Dependency, 1.0, r"error (?P<code2>NU110[12]): Unable to find package (?P<pkg3>[\w.-]*\w)(?: with version \((?P<ver>[^)]+)\))?|error (?P<code>NU1\d{3}): (?P<msg>.+)|Unable to find package '?(?P<pkg>[\w.-]+)'?|Unable to resolve '(?P<pkg2>[^']+)'|NuGet\.\w+Exception|Package restore failed"),
    r("dotnet.restore", "dotnet", Dependency, 0.7, r"dotnet restore\b.*(?:failed|exited with)|Execution of \{ dotnet restore\b"),
    r("cocoapods.resolve", "cocoapods", Dependency, 1.0, r#"CocoaPods could not find compatible versions for pod "(?P<pkg>[^"]+)"|Unable to find a specification for [`"']?(?P<pkg2>[\w/.-]+)|None of your spec sources contain a spec satisfying the dependency|\[!\] Unable to (?:find|satisfy)|The sandbox is not in sync with the Podfile\.lock"#),
    r("carthage", "carthage", Dependency, 0.9, r#"Dependency "(?P<pkg>[^"]+)" has no shared framework schemes|Failed to check out repository|Could not find any available versions for|unable to satisfy the following requirements|Task failed with exit code \d+:.*carthage|No available version for (?:github|git|binary) "(?P<pkg2>[^"]+)" satisfies the requirement"#),
    r("swiftpm.resolve", "swiftpm", Dependency, 1.0, r"Dependencies could not be resolved because|because no versions of '?(?P<pkg>[\w.-]+)'? match the requirement|version solving failed|error: failed to clone|the package at .* cannot be accessed"),
    r("r.missing_package", "R", Dependency, 1.0, r"Packages? required but not available:\s*(?:‘|')?(?P<pkg>[\w.]+)|there is no package called ‘(?P<pkg2>[\w.]+)’|dependenc(?:y|ies) ‘?(?P<pkg3>[^’ ]+)’? (?:is|are) not available|package ‘(?P<pkg4>[\w.]+)’ is not available|Packages? suggested but not available"),
    r("perl.missing", "perl", Dependency, 1.0, r"Can't locate (?P<pkg>\S+\.pm) in @INC|Installing the dependencies failed: Modules? '?(?P<pkg2>[\w:]+)'? (?:is|are) not installed|^! (?:Installing|Configure failed for|Finding) (?P<pkg3>\S+)(?: failed| on cpanmetadb failed)"),
    r("lua.missing", "lua", Dependency, 0.6, r"module '(?P<pkg>[\w.-]+)' not found|\bdepends on (?P<pkg2>[\w.-]+)(?: [<>=~][^(]*)? \(not installed\)|No results matching query were found for Lua|Error: Could not satisfy dependency"),
    r("emacs.package", "emacs", Dependency, 0.9, r"Package [‘'`](?P<pkg>[\w-]+?)(?:-(?P<ver>\d[\d.]*))?[’'] is unavailable|Cannot open load file: (?:No such file or directory|[Nn]o such file), (?P<pkg2>[\w-]+)|Failed to (?:download|install) [‘'`](?P<pkg3>[\w-]+)[’']"),
    r("latex.missing_file", "latex", Dependency, 1.0, r"! LaTeX Error: File `(?P<pkg>[^']+\.(?:sty|cls|def|cfg|fd))' not found|! I can't find file `(?P<pkg2>[^']+)'"),
    r("apt.fetch", "apt", Dependency, 0.8, r"^E: Failed to fetch (?P<url>\S+)\s+(?P<msg>.+)$|^E: Some index files failed to download|^E: Unable to fetch some archives|^E: The repository '(?P<url3>[^']+)' (?:does not have a Release file|is not signed)"),
    r("lit.fetch", "lit", Dependency, 0.8, r"No such hash: [0-9a-f]{40}\b|^fail: .*(?:Missing dependency|Cannot find package|No such package)"),
    r("apt.missing", "apt", Dependency, 0.9, r"E: Unable to locate package (?P<pkg>\S+)|E: Package '(?P<pkg2>[^']+)' has no installation candidate|The following packages have unmet dependencies|E: Version '(?P<ver>[^']+)' for '(?P<pkg3>[^']+)' was not found"),
    r("brew.missing", "homebrew", Dependency, 0.9, r#"Error: No (?:available formula|formulae found|such keg).* "?(?P<pkg>[\w@.-]+)"?"#),
    r("cmake.find_package", "cmake", Dependency, 1.0, r#"Could NOT find (?P<pkg>\w+)|Could not find a package configuration file provided by "(?P<pkg2>[^"]+)"|By not providing "Find(?P<pkg3>\w+)\.cmake"|Unable to find the requested Boost libraries"#),
    r("pkgconfig.missing", "pkg-config", Dependency, 0.9, r"Package (?P<pkg>[\w.+-]+) was not found in the pkg-config search path|No package '(?P<pkg2>[^']+)' found"),
    r("cc.missing_header", "gcc/clang", Dependency, 0.7, r"fatal error: '?(?P<pkg>[\w./+-]+\.h(?:pp)?)'?(?::)? (?:file not found|No such file or directory)"),
    r("ld.missing_lib", "ld", Dependency, 0.9, r"(?:ld|collect2): (?:fatal: )?(?:cannot find|library not found for) -l(?P<pkg>[\w+.-]+)|error while loading shared libraries: (?P<pkg2>\S+): cannot open|(?P<pkg3>lib[\w+.-]*\.(?:so(?:\.\d+)*|dylib)): cannot open shared object file|cannot load library '(?P<pkg4>[^']+)'|(?:site-packages|dist-packages|node_modules|/usr/(?:local/)?lib\d*)/\S*?(?P<pkg5>[\w+.-]+\.so(?:\.\d+)*): undefined symbol: |^dyld(?:\[\d+\])?: Library not loaded: (?P<pkg6>\S+)|Could not load file or assembly '(?P<pkg7>[^',]+)"),
    r("configure.missing", "autoconf", Dependency, 0.7, r"^configure: error: (?P<msg>.*(?:not found|required|missing|could not find|cannot find|no acceptable|is needed|were not met).*)$"),
    // Findings a compiler or a runtime printed while the job installed its
    // dependencies are given this rule (`install_step`); the pattern
    // itself matches nothing a log prints.
    r("dep.install_step", "package manager", Dependency, 0.8, r"^\x00install step\x00$"),
    r("dep.vendored_error", "vendored source", Dependency, 0.9, r"^(?:\S+: )?(?:error|Error|ERROR)\b.*(?:node_modules|\.cargo[/\\]registry|site-packages|\.m2[/\\]repository|go[/\\]pkg[/\\]mod)[/\\]"),
    r("dep.missing_reference", "compiler", Dependency, 0.7, r"error CS02(?:46|34): .*(?:are you missing (?:a using directive or )?an assembly reference|does not exist in the namespace)|error: package (?P<pkg>[\w.]+) does not exist|cannot access class file for (?P<pkg2>[\w.$]+) not found"),
    r("dep.generic", "package manager", Dependency, 0.4, r"(?i)\b(?:unmet|missing|unresolved|unsatisfiable|conflicting) (?:peer )?dependenc(?:y|ies)\b|\bdependency resolution failed\b|\bversion conflict\b"),

    // ------------------------------------------------------- configuration
    r("shell.command_not_found", "shell", Config, 0.9, r"^(?:\S+: )?(?:(?:line )?\d+: )?(?P<cmd>[\w.+-]+): (?:command )?not found$|^(?:/\S*/)?(?:da|ba)?sh: \d+: (?P<cmd2>[\w./+-]+): not found$|^/\S+: line \d+: (?P<cmd3>[\w.+-]+): command not found$"),
    // Node could not start a program the build runs: it is not installed.
    r("node.spawn_enoent", "node", Config, 0.8, r"\bspawn (?P<cmd>[\w./-]+) ENOENT\b"),
    // A signing key the release step needs is not in the environment.
    r("gpg.secret_key", "gpg", Config, 0.8, r#"gpg: signing failed: (?:secret key not available|No secret key)|gpg: no default secret key|gpg: skipped "[^"]*": (?:No secret key|secret key not available)|gpg: decryption failed: No secret key"#),
    r("shell.env_unset", "shell", Config, 0.8, r"^(?:\S+: )?(?:line \d+: )?(?P<cmd>[A-Za-z_]\w*): (?:parameter null or not set|parameter not set|unbound variable)$"),
    r("shell.no_such_file", "shell", Config, 0.7, r"^(?P<file>\S+): line (?P<line>\d+): (?:cd: )?(?P<msg>\S+: No such file or directory)$|^(?:bash|sh|zsh): (?P<file2>\S+): No such file or directory$|^(?:\S+: line \d+: )?(?:cp|mv|ls|cat|ln|chmod|chown|cd|source|\.|tar|unzip): (?:cannot (?:stat|access|open) )?['`\x22]?(?P<file3>[^'`\x22:]+)['`\x22]?: No such file or directory$"),
    r("shell.permission", "shell", Config, 0.8, r"(?i)^(?:\S+: )?(?:(?:line )?\d+: )?(?P<file>\S+): permission denied$|: Permission denied \(publickey"),
    r("windows.not_recognized", "windows shell", Config, 1.0, r"is not recognized as (?:an internal or external command|(?:the|a) name of a cmdlet, function, script file, or (?:operable|executable) program)"),
    r("rake.config", "rake", Config, 1.0, r"No Rakefile found \(looking for|Don't know how to build task '(?P<cmd>[^']+)'"),
    r("make.config", "make", Config, 0.8, r"No rule to make target '(?P<cmd>[^']+)'(?:, needed by|\.\s+Stop)|No targets specified and no makefile found|make: \*\*\* No rule to make target"),
    r("npm.missing_script", "npm", Config, 1.0, r#"npm ERR! missing script: (?P<cmd>\S+)|Missing script: "(?P<cmd2>[^"]+)"|npm ERR! enoent .*package\.json|error Command "(?P<cmd3>[^"]+)" not found"#),
    r("node.engine", "node", Config, 1.0, r#"The engine "(?P<pkg>\w+)" is incompatible with this module|Unsupported engine|requires? (?:a )?(?:node|Node\.js) (?:version )?(?P<ver>[<>=^~\d.x ]+)"#),
    // A test browser the configuration names is not on the machine.
    r("karma.no_browser", "karma", Config, 0.8, r"No binary for \w+ browser on your platform|Cannot start (?:Chrome|ChromeHeadless|Firefox|FirefoxHeadless|PhantomJS)\b"),
    // The browser a test framework drives was never installed on the
    // machine (Playwright's and Puppeteer's own words).
    r("browser.not_installed", "browser", Config, 0.9, r"browserType\.launch: Executable doesn't exist at|Looks like Playwright Test or Playwright was just installed or updated|Could not find (?:Chrome|Chromium|expected browser) \(|'(?:chromedriver|geckodriver|msedgedriver)' executable needs to be in PATH"),
    // The interpreter told to run a script that is not there (the CI
    // configuration's path).
    r("ruby.script_missing", "ruby", Config, 0.9, r"^ruby: No such file or directory -- (?P<file>\S+) \(LoadError\)"),
    r("gradle.config", "gradle", Config, 0.9, r"Task '(?P<cmd>[^']+)' not found in (?:root )?project|Could not compile (?:build|settings|script) file '(?P<file>[^']+)'|Could not find method (?P<msg>\w+\(\)) for arguments|A problem occurred (?:evaluating|configuring) (?:root )?project|Could not get unknown property|Gradle requires Java|Unsupported class file major version|Could not determine java version|Could not find or load main class org\.gradle\.wrapper"),
    r("maven.config", "maven", Config, 1.0, r#"Unknown lifecycle phase "(?P<cmd>[^"]+)"|The goal you specified requires a project to execute but there is no POM|Non-readable POM|invalid target release: (?P<ver>\S+)|Source option (?P<ver2>\d+) is no longer supported|No goals have been specified for this build|requires Maven version"#),
    r("jdk.version", "jvm", Config, 0.9, r"UnsupportedClassVersionError|has been compiled by a more recent version of the Java Runtime|release version (?P<ver>\d+) not supported|JAVA_HOME is (?:not set|set to an invalid directory)|No matching toolchains found for requested specification|Cannot find a Java installation on your machine(?: \([^)]*\))? matching|Unsupported class file major version \d+|Require(?:Java|Maven)Version failed with message|Detected (?:JDK|Maven) [Vv]ersion \S+ .*is not in the allowed range"),
    // The Android SDK platform or licence the build configuration names
    // is not installed or not accepted on the machine.
    r("android.sdk_version", "android sdk", Config, 0.9, r"Failed to find target with hash string '(?P<ver>[^']+)'|You have not accepted the license agreements of the following SDK components|Failed to find Build Tools revision (?P<ver2>[\d.]+)|SDK location not found\. Define location with"),
    // PEP 668: pip refusing to install into an interpreter the OS
    // manages (Debian's and Ubuntu's system Python since 2023, the hosted
    // runners' `python3` without a setup step or a virtualenv): the job
    // picked the wrong interpreter, not a missing package.
    r("pip.externally_managed", "pip", Config, 0.9, r"^error: externally-managed-environment$|This environment is externally managed"),
    r("python.version", "python", Config, 0.9, r"requires Python '?(?P<ver>[^']+)'? but the running Python is|^The currently activated Python version (?P<ver6>\S+) is not supported by the project|^Poetry was unable to find a compatible version\.|requires a different Python: (?P<ver4>\S+) not in|InterpreterNotFound: (?P<ver2>\S+)|could not find python interpreter with spec\(s\): (?P<ver5>\S+)|No (?:interpreter|Python) found for|Python (?P<ver3>[\d.]+) is not supported|python(?:[\d.]*): can't open file"),
    // A gem that needs a newer Ruby than the job runs: the dependency's
    // constraint cannot be met (its own Gemfile's `ruby` line is above).
    r("gem.ruby_conflict", "rubygems", Dependency, 0.9, r"(?:(?P<pkg>[\w.-]+) )?requires Ruby version (?P<ver>[><=~]+ ?[\d.]*\d)"),
    r("ruby.version", "ruby", Config, 1.0, r"Your Ruby version is (?P<ver>\S+), but your Gemfile specified (?P<want>\S+)|You must use Bundler (?P<ver3>\d+) or greater with this lockfile|rvm: .* is not installed|ruby-\S+ is not installed"),
    r("toolchain.version", "toolchain", Config, 0.7, r"(?i)\b(?:requires|needs) (?:at least )?(?:version|v)? ?[\d.]+ or (?:newer|later|higher)\b|\bor higher is required\. You are running version\b|is not supported (?:on|by) this (?:version|platform)|unsupported (?:version|platform|architecture)|\bgo\.mod requires go >= ?\S+ \(running go|cannot be built because it requires rustc \S+ or newer|\berror NETSDK1045\b|\bERR_OSSL_EVP_UNSUPPORTED\b|digital envelope routines::unsupported|your php version \([^)]+\) does not satisfy that requirement"),
    r("cli.unknown_flag", "command line", Config, 0.9, r"(?i)^(?:error: )?(?:unknown|unrecognized|invalid) (?:option|flag|argument|command|subcommand)s?\b|flag provided but not defined: (?P<cmd>\S+)|error: unrecognized arguments:|error: Found argument '(?P<cmd2>[^']+)' which wasn't expected|Unknown (?:option|command|argument):? '?(?P<cmd3>[^'\s]+)|^Error: (?:No such (?:command|option)|Invalid value for|Missing (?:option|argument)) ['\x22]?(?P<cmd4>[^'\x22\s.]+)|: error: (?:the following arguments are required|argument \S+: invalid)"),
    // A linter run without its configuration file.
    // A shareable config or plugin the ESLint config names is not
    // installed: a missing package (`eslint-config-prettier`).
    r("eslint.missing_package", "eslint", Dependency, 0.9, r#"ESLint couldn't find the (?:config|plugin) "(?P<pkg>[^"]+)""#),
    r("eslint.config", "eslint", Config, 0.9, r"ESLint couldn't find (?:an eslint\.config\.|a configuration file)|^No ESLint configuration found|Configuration for rule \x22[^\x22]+\x22 is invalid"),
    // RuboCop refusing its configuration file: a cop renamed, removed or
    // unknown to the version the build installed.
    r("rubocop.config", "rubocop", Config, 0.9, r"obsolete configuration found in \S+|^Error: The `[^`]+` cop has been (?:removed|renamed|moved)\b|^Error: obsolete parameter \S+ \(for \S+\) found in \S+|^Error: unrecognized cop (?:or department )?\S+ found in \S+"),
    // Meson: a missing dependency; a build file, option or toolchain the
    // configuration gets wrong.
    r("meson.dependency", "meson", Dependency, 0.9, r#"(?:^|: )ERROR: (?:Dependency "?(?P<pkg>[\w.+-]+)"? not found|Could not find dependency (?P<pkg2>\S+)|Dependency lookup for (?P<pkg3>\S+) .* failed)"#),
    r("meson.config", "meson", Config, 0.8, r#"^(?:\S*meson(?:_options)?\.(?:build|txt|options)(?::\d+){1,2}: )?ERROR: (?:Unknown compiler|Program '?[^']+'? not found|Value "[^"]*" for \w+ option is not one of the choices|Unknown options?:|Invalid option|Unknown variable|Unknown method|Neither source directory|Meson version is|Cross file)"#),
    r("cmake.config", "cmake", Config, 0.9, r"The source directory .* does not (?:exist|appear to contain CMakeLists\.txt)|CMake [\d.]+ or higher is required|Unknown CMake command|CMake Error: (?:The source|Could not find CMAKE_ROOT|Error required internal CMake variable)"),
    r("cmake.error", "cmake", Config, 0.35, r"CMake Error(?: at (?P<file>[\w./-]+):(?P<line>\d+))?"),
    r("yaml.config", "yaml", Config, 0.8, r"(?:mapping values are not allowed in this context|did not find expected (?:key|node content|'-' indicator)|could not find expected ':'|found character that cannot start any token|cannot unmarshal|yaml: line \d+:)"),
    r("ci.travis", "travis", Config, 1.0, r"(?i)^(?:ERROR: )?(?:invalid|could not parse|unable to parse) \.travis\.yml|Could not find \.travis\.yml|unsupported language|^This job (?:was configured|is configured) to|language: \w+ is not supported"),
    r("ci.github_actions", "github actions", Config, 1.0, r"Unable to resolve action `?(?P<pkg>[\w./@-]+)|An error occurred trying to start process '[^']+' with working directory '[^']+'|Invalid workflow file|The workflow is not valid|Input required and not supplied: (?P<cmd>\S+)|Can't find 'action\.ya?ml'|Unrecognized named-value|Unable to locate executable file: (?P<cmd2>\S+)|Version (?P<ver>\S+) with arch \S+ not found|Could not find a version that satisfied version spec|The version '(?P<ver2>[^']+)' with architecture '\S+' was not found|Unable to find (?:Node|Go) version '(?P<ver3>[^']+)' for platform|Could not find satisfied version for SemVer|Resource not accessible by integration|Permission to \S+ denied to github-actions\[bot\]|Unable to process file command '\w+' successfully|Dependencies lock file is not found in \S+\. Supported file patterns\b|No files were found with the provided path: \S+?\.? No artifacts will be uploaded|^Unknown version (?P<ver4>\S+) for (?:ruby|jruby|truffleruby) on \S+"),
    r("ci.runtime_version", "ci", Config, 0.9, r"^Version '(?P<ver>[^']+)' not found - try `nvm ls-remote`|^N/A: version \x22(?P<ver2>[^\x22]+)\x22 is not yet installed|Unable to download (?P<ver3>\S+) archive\. The archive may not exist"),
    r("ci.jenkins", "jenkins", Config, 1.0, r"No such DSL method '(?P<cmd>[^']+)'|WorkflowScript: \d+: (?P<msg>.+)|MissingPropertyException: No such property: (?P<cmd2>\w+)|Tool type \x22\w+\x22 does not have an install of|Step .* failed: No test report files were found|Couldn't find any revision to build|does not exist in the workspace|No such file or directory.*@tmp"),
    r("xcode.config", "xcodebuild", Config, 1.0, r"xcodebuild: error: (?:Unable to find a destination|The (?:project|workspace) named .* does not contain a scheme|'?.*'? does not exist)|does not contain a scheme named|Code ?Sign(?:ing)? (?:error|Error)|No (?:signing certificate|profile|provisioning profile)|requires a provisioning profile|xcode-select: error"),
    r("docker.config", "docker", Config, 0.9, r"pull access denied|manifest (?:for \S+ )?(?:unknown|not found)|denied: requested access to the resource is denied|^denied: permission_denied\b|invalid reference format|unauthorized: authentication required|failed to solve: .* not found|COPY failed: .* no such file"),
    // A build script that asks git for a version outside a checkout: often
    // harmless, and printed by tools that carry on.
    r("git.not_a_repository", "git", Config, 0.3, r"fatal: not a git repository\b"),
    // git without an identity on the runner: the cause when a step commits
    // (a deploy), but printed by tools that carry on too.
    r("git.identity", "git", Config, 0.5, r"^\*\*\* Please tell me who you are\.$|fatal: (?:empty ident name|unable to auto-detect email address)"),
    r("git.config", "git", Config, 0.8, r"fatal: (?:Remote branch \S+ not found|couldn't find remote ref|reference is not a tree|could not read Username|Authentication failed|repository '[^']+' not found|No names found, cannot describe anything)|error: pathspec '(?P<cmd>[^']+)' did not match|^remote: Repository not found\.|^Host key verification failed\."),
    // SSH refused the key: the job's credentials, whatever connection it
    // then closed.
    r("ssh.auth", "ssh", Config, 1.0, r"Permission denied \(publickey(?:,[\w-]+)*\)"),
    // A tool's home the environment was to set (an SDK, the JDK).
    r("sdk.home_unset", "environment", Config, 0.9, r"\b(?:ANDROID_HOME|ANDROID_SDK_ROOT|JAVA_HOME|GOROOT|GOPATH|DOTNET_ROOT) (?:is not set|is set to an invalid directory|environment variable is not set|not found)|Please set the JAVA_HOME variable"),
    // A JVM that refuses the options the build gave it (MAVEN_OPTS,
    // JAVA_OPTS, a Gradle property): an option its version does not know.
    r("jvm.options", "jvm", Config, 0.9, r"^Unrecognized VM option '(?P<cmd>[^']+)'|^Invalid (?:maximum|initial) heap size: (?P<cmd2>\S+)"),
    r("jvm.not_started", "jvm", Config, 0.6, r"^Error: Could not create the Java Virtual Machine\.$"),
    // The JVM launcher cannot find the class the build or script names.
    r("jvm.main_class", "jvm", Config, 0.8, r"^Error: Could not find or load main class (?P<cmd>\S+)"),
    // Test runners told to run a path that is not there.
    r("tests.path_not_found", "test runner", Config, 0.9, r"^ERROR: (?:file or package not found|file not found|not found): (?P<file>\S+)|^Error: No test files found: ['\x22]?(?P<file2>[^'\x22]+)|Could not find any test files matching pattern|^No tests? (?:files )?found (?:matching|in|for) "),
    // Project files and manifests a build tool is pointed at but cannot find or parse.
    r("project.missing", "build tool", Config, 0.9, r"could not find `Cargo\.toml` in|failed to parse manifest at `|go: cannot find main module|go\.mod file not found in current directory|The SDK '(?P<pkg>[^']+)' specified could not be found|error MSB100[39]:|Could not locate Gemfile|\[!\] Invalid `Podfile` file|^ERROR: Invalid requirement: |django\.core\.exceptions\.ImproperlyConfigured|ERROR: In file '[^']*docker-compose[^']*'|The Compose file '[^']+' is invalid"),
    // A configuration file that does not parse as YAML.
    r("yaml.syntax", "yaml", Config, 0.7, r"\byaml\.(?:scanner\.ScannerError|parser\.ParserError|constructor\.ConstructorError)\b|\bPsych::SyntaxError\b|\bYAMLException\b|\byaml: line \d+: "),
    r("env.missing", "environment", Config, 0.8, r"(?i)\b(?:environment variable|env(?:ironment)? var)\b.{0,40}\b(?:not set|missing|undefined|required|is empty)\b|\bmissing (?:required )?env(?:ironment)?(?: variable| var)\b|\b[A-Z][A-Z0-9]*_(?:TOKEN|KEY|SECRET|PASSWORD|USER(?:NAME)?)\b.{0,30}\b(?:not set|missing|is empty|undefined|required)\b|(?-i:\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9] (?:is not set|is unset|is not defined|must be set|is required|is empty)\b)|invalid (?:api[ _-]?key|credentials)|invalid (?:access |auth(?:entication)? |bearer |oauth |api )?token(?:$|[.,;!)\]}\x22']|\s+(?:provided|supplied|given|for|was|specified|or expired))"),
    r("env.jenkins_credentials", "jenkins", Config, 0.9, r"Could not find credentials entry with ID '(?P<cmd>[^']+)'|CredentialNotFoundException"),
    // A registry or an API refusing the credentials the job sent (or did
    // not send): HTTP 401 in the words of Maven, Gradle, npm and GitHub.
    r("env.unauthorized", "credentials", Config, 0.8, r"(?i)(?:HTTP(?:/[\d.]+)?|status(?: code)?:?) ?401\b|401 Unauthorized|\bBad credentials\b|Return code is: 401\b|ReasonPhrase: ?Unauthorized|\bE401\b"),
    // A cloud's, a registry's or a CLI's credentials the job was to be
    // given (a secret not passed, a login not done).
    r("env.credentials", "credentials", Config, 0.9, r"Credentials could not be loaded|Could not load credentials from any providers|Unable to locate credentials\b|No valid credential sources found|set the GH_TOKEN environment variable|\bcode ENEEDAUTH\b|need auth This command requires you to be logged in|You cannot publish over the previously published versions|Token required because branch is protected|\bE(?:NO|INVALID)(?:GH|GL|NPM)TOKEN\b|No (?:GitHub|GitLab|npm) token specified|You must specify a region\b"),
    // Decrypting a file with keys the job was not given (a pull request
    // from a fork gets no secrets): openssl's `-K $key -iv $iv` with both
    // empty reads `-iv` as the key and says `iv undefined`; wrong keys end
    // in `bad decrypt`; gpg without the private key says so.
    r("env.decrypt", "credentials", Config, 0.9, r"^iv undefined$|^bad decrypt$|:EVP_DecryptFinal(?:_ex)?:bad decrypt\b|^gpg: decryption failed: (?:No secret key|Bad session key)$"),
    r("path.missing_file", "build script", Config, 0.5, r"(?i)^(?:error: )?(?:can't open|cannot (?:open|find|stat)|could not (?:open|find)) (?:file )?['`\x22]?(?P<file>[\w./-]+)['`\x22]?(?::| \()? (?:No such file or directory|not found|\(No such file)|\bENOENT\b.*(?:open|stat|scandir) '(?P<file2>[^']+)'"),
    // Rails refusing to run against a database the job did not set up:
    // its configuration names no database for the environment, the
    // database was never created, or the schema was never loaded or
    // migrated (ActiveRecord's own exception names and messages).
    r("rails.database_setup", "rails", Config, 0.9, r"\bActiveRecord::(?:PendingMigrationError|NoDatabaseError|AdapterNotSpecified)\b|'\w+' database is not configured\b|\bMigrations are pending\. To resolve this issue, run:"),
    // The runtimes' own "permission denied" errors: the rubric's denied
    // permissions, whatever raised them. (Their "no such file" errors are
    // not the rubric's wrong paths: on BugSwarm's pairs, 19 of 19 were a
    // test's or the code's own file, fixed by a change to either.)
    // A database the CI environment was to provide, reached with the wrong
    // role, password or name; a browser driver of another version than the
    // browser.
    r("db.access", "database", Config, 0.8, r#"FATAL:\s+(?:role "[^"]+" does not exist|password authentication failed for user|database "[^"]+" does not exist)|Access denied for user '[^']*'@'[^']*'|Unknown database '[^']+'"#),
    r("browser.driver_version", "webdriver", Config, 0.8, r"This version of \w*Driver only supports \w+ version \d+|session not created: (?:This version of|\w+ version must be)"),
    r("os.permission", "runtime", Config, 0.85, r"\bPermissionError: \[Errno 13\]|\[Errno 13\] Permission denied|\bErrno::EACCES\b|\bEACCES: permission denied\b|\bjava\.nio\.file\.AccessDeniedException\b|\bEPERM: operation not permitted\b"),
    // Python's environment mapping raises KeyError with the variable's
    // name: upper case with an underscore, by convention.
    r("env.key_error", "python", Config, 0.85, r"\bKeyError: '(?P<cmd>[A-Z][A-Z0-9]*_[A-Z0-9_]+)'$|\bkey not found: \x22(?P<cmd2>[A-Z][A-Z0-9]*_[A-Z0-9_]+)\x22"),
    r("jenkins.no_reports", "jenkins", Config, 0.3, r"No test report files were found\. Configuration error\?"),
    // A tool that cannot load its configuration file (or one its own
    // version cannot read).
    r("tool.config_load", "command line", Config, 0.8, r"(?i)\b(?:can't|cannot|could not|couldn't|failed to|unable to) (?:load|read|parse) (?:the )?config(?:uration)?(?: file)?\b"),
    r("docs.build_config", "documentation tool", Config, 0.5, r"(?i)\bconfiguration (?:error|file) .*(?:invalid|not found|missing)|\binvalid configuration\b|\bconfig(?:uration)? (?:file )?not found\b"),

    // ------------------------------------------------------ infrastructure
    r("travis.no_output", "travis", Infra, 1.0, r"No output has been received in the last \d+m\d*s?, this potentially indicates a stalled build|The job exceeded the maximum time limit for jobs|The job exceeded the maximum log length|^Timeout \(\d+ minutes\) reached\. Terminating\b|Your test run exceeded \d+ (?:minutes|hour)"),
    r("travis.vm", "travis", Infra, 1.0, r"We were unable to start a VM|An error occurred while generating the build script|The build has been terminated|There was an error in the VM|Unable to connect to the (?:Travis CI|build) (?:API|server)"),
    r("gha.runner", "github actions", Infra, 1.0, r"The runner has received a shutdown signal|lost communication with the server|has exceeded the maximum execution time of|The hosted runner encountered an error|The operation was canceled\.$|Received request to deprovision"),
    r("jenkins.agent", "jenkins", Infra, 1.0, r"Agent went offline during the build|\bhudson\.remoting\.RequestAbortedException\b|^FATAL: java\.io\.StreamCorruptedException\b|Cannot contact \S+: java\.lang\.InterruptedException|\bhudson\.remoting\.ChannelClosedException\b|The channel is closing down or has closed down|Backing channel '[^']+' is disconnected|Build timed out \(after \d+ minutes\)|Timeout has been exceeded|FATAL: (?:command execution failed|Unable to produce a script file)|RemotingSystemException|Connection was broken"),
    r("timeout.exit_code", "ci", Infra, 0.9, r#"^The command ".*" (?:failed and )?exited with 124\.?|\btimeout: (?:sending signal|the monitored command)|^Terminated$|\bexited with (?:code )?143\b|\bCommand failed with status \(124\)|\b(?:exit code|exit status|exited with code|returned exit code) 124\b"#),
    r("timeout.run", "ci", Infra, 0.9, r"(?i)^ERROR: Timeout after \d+ minutes?$|^(?:tests?|test run|build|job|step|command|script)s? (?:timed out|has timed out|exceeded (?:the )?(?:time|timeout))\b|\bexceeded the (?:maximum )?(?:time ?limit|timeout)\b|\b(?:hard|global) timeout\b"),
    r("oom", "machine", Infra, 1.0, r"(?i)\bout of memory\b|\bOutOfMemoryError|\boom[- ]?kill(?:ed|er)?\b|Cannot allocate memory|virtual memory exhausted|memory cgroup out of memory|\bexit(?:ed)?(?: with)? (?:code|status)[:= ]*137\b|signal: killed|Killed signal terminated program|internal compiler error: Killed \(program|^make(?:\[\d+\])?: \*\*\* \[[^\]]+\] Killed$|^Killed$|The build daemon disappeared unexpectedly|JavaScript heap out of memory|^MemoryError\b|\bstd::bad_alloc\b|: line \d+: +\d+ Killed\b"),
    r("disk", "machine", Infra, 1.0, r"(?i)No space left on device|disk (?:quota exceeded|full)|\bENOSPC\b|not enough (?:disk )?space"),
    r("network.dns", "network", Infra, 1.0, r"(?i)Could not resolve host|Temporary failure in name resolution|Temporary failure resolving '|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|\bEAI_AGAIN\b|Name or service not known|nodename nor servname provided|no such host\b|Could not resolve (?:proxy|hostname)|unable to resolve host|Couldn't resolve host|\bserver misbehaving\b|\bGem::RemoteFetcher::UnknownHostError\b|\bcurl: \(6\)"),
    r("network.connect", "network", Infra, 0.9, r"(?-i:\bE(?:TIMEDOUT|CONNRESET|CONNREFUSED|SOCKETTIMEDOUT)\b)|(?-i:\bTimeout was reached\b)|rsync: connection unexpectedly closed|(?i)Connection (?:timed out|reset by peer|refused)|Failed to connect to \S+ port \d+|Network is unreachable|No route to host|\bsocket hang up\b|Read timed out|connect timed out|TLS handshake timeout|i/o timeout|Operation timed out|EHOSTUNREACH|early EOF|The remote end hung up unexpectedly|RPC failed; curl \d+|Connection to \S+ timed out|\bConnectTimeout(?:Error)?\b|\bNewConnectionError\b|(?-i:\bE(?:CONNABORTED|NETUNREACH|HOSTDOWN)\b)|(?-i:\bERR_SOCKET_TIMEOUT\b)|Client\.Timeout exceeded|net/http: (?:request canceled|timeout awaiting response headers)|There appears to be trouble with your network connection|\bRemoteDisconnected\b|Remote end closed connection without response|Failed to establish a new connection|'Connection aborted\.'|\bChunkedEncodingError\b|Empty reply from server|upstream connect error or disconnect/reset before headers|\bcurl: \((?:7|28|52|56)\)"),
    // The network's exception types and errno names of the major runtimes.
    r("network.connect_exception", "network", Infra, 0.9, r"\bjava\.net\.(?:ConnectException|SocketTimeoutException|UnknownHostException|NoRouteToHostException)\b|\bjava\.net\.SocketException: (?:Connection reset|Network is unreachable|No route to host)| » (?:Connect|SocketTimeout|UnknownHost|NoRouteToHost)\b|\b(?:ConnectionRefusedError|ConnectionResetError|ConnectionAbortedError)\b|\bsocket\.(?:timeout|gaierror)\b|\brequests\.exceptions\.(?:ConnectionError|ConnectTimeout|ReadTimeout|Timeout|SSLError)\b|\burllib3\.exceptions\.(?:MaxRetryError|NewConnectionError|ReadTimeoutError|ProtocolError)\b|\bErrno::(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)\b|\bNet::(?:ReadTimeout|OpenTimeout)\b|\bFaraday::(?:ConnectionFailed|TimeoutError)\b|\bHttpRequestException\b|\bSystem\.Net\.(?:Sockets\.SocketException|WebException)\b|\b(?:ServerSelectionTimeoutError|MongoNetworkError|MongoServerSelectionError)\b|\bOperationalError\)?:? could not connect\b|\bredis\.exceptions\.(?:ConnectionError|TimeoutError)\b|\[Errno (?:111|110|104|113|101|-2|-3)\]|\bdial tcp \S+: (?:connect: connection refused|i/o timeout)|\borg\.apache\.http\.conn\.(?:HttpHostConnectException|ConnectTimeoutException)\b|\bGem::RemoteFetcher::FetchError\b|\bTimeout::Error\b|\bMax retries exceeded with url\b|\[Errno 99\] Cannot assign requested address"),
    r("network.tls", "network", Infra, 0.9, r"(?i)SSL connect error|SSL routines:\w*:\S*(?:handshake|alert)|SSL_ERROR_SYSCALL|gnutls_handshake\(\) failed|certificate verify failed|unable to get local issuer certificate|\bSSLEOFError\b|EOF occurred in violation of protocol|Remote host terminated the handshake|Remote host closed connection during handshake|TLS connection was non-properly terminated|\bcurl: \(35\)"),
    r("network.http5xx", "network", Infra, 0.8, r"(?i)\b(?:HTTP(?:/[\d.]+)?|returned(?: HTTP| error)?|response code)[: ]+(?:500|502|503|504)\b|\b(?:502 Bad Gateway|503 Service (?:Temporarily )?Unavailable|504 Gateway Time-?out)\b|Service Unavailable|Received status code (?:500|502|503|504) from server|HTTP Error (?:500|502|503|504)\b|\((?:500|502|503|504)\) (?:Internal Server Error|Bad Gateway|Server Unavailable|Service Unavailable|Gateway Time-?out)|status code: (?:500|502|503|504), reason phrase|unexpected HTTP status: (?:500|502|503|504)\b|RPC failed; HTTP (?:500|502|503|504)\b"),
    // A coverage service's uploader failing (codecov's action with
    // `fail_ci_if_error`): the upload to an external service, after the
    // tests passed. A missing token reads as credentials (`env.credentials`).
    r("service.coverage_upload", "codecov", Infra, 0.7, r"Codecov: Failed to properly upload|There was an error running the uploader|Error uploading to https?://\S*codecov"),
    r("network.rate_limit", "network", Infra, 0.9, r"(?i)\brate limit (?:exceeded|reached)\b|API rate limit|429 Too Many Requests|toomanyrequests|You have reached your pull rate limit|secondary rate limit|\b429:? Too Many Requests|HTTP Error 429\b"),
    // Limits of the operating system: file descriptors, processes.
    r("os.resource_limit", "machine", Infra, 0.8, r"(?i)\btoo many open files\b|\bE[MN]FILE\b|\bfork: (?:retry: )?Resource temporarily unavailable|\bcannot fork\b"),
    // A test browser or build daemon that went away, a service still starting.
    r("karma.browser_lost", "karma", Infra, 0.9, r"Disconnected,? because no message in \d+ ?ms|Executed \d+ of \d+ DISCONNECTED|failed \d+ times \(timeout\)\. Giving up\.|\bNo captured browser\b"),
    r("gradle.daemon", "gradle", Infra, 0.9, r"Gradle build daemon disappeared unexpectedly|Gradle build daemon has been stopped: since the JVM garbage collector is thrashing|The daemon has terminated unexpectedly|Gradle Test Executor \d+ finished with non-zero exit value (?:137|143)"),
    r("service.starting", "service", Infra, 0.7, r"the database system is starting up|Sauce Connect could not establish a connection|Sauce Connect .*(?:failed|timed out)|Service container \S+ failed|service is unhealthy|dependency failed to start: container \S+ is unhealthy"),
    r("network.bind", "network", Infra, 0.9, r"(?i)\bbind: address already in use\b|\bEADDRINUSE\b|Address already in use"),
    r("network.fetch_failed", "network", Infra, 0.7, r"^(?:W|E): Failed to fetch |^Err:\d+ https?://|Unable to fetch some archives|Hash Sum mismatch|Failed to download .* (?:timed out|after \d+ attempts)|Could not fetch specs from https?://|keyserver receive failed|download failed|Could not transfer artifact .* (?:Connection|timed out|Read timed out)|Unable to load the service index for source|\bnetwork request to \S+ failed\b|ERR_PNPM_(?:META_FETCH_FAIL|FETCH_5\d\d)"),
    // apt's fetch failing on the mirror or the network, not on a package:
    // a mirror caught mid-sync, a host that does not answer.
    r("apt.mirror_fetch_failed", "apt", Infra, 1.0, r"^(?:W|E|Err:\d+): .*(?:Hash Sum mismatch|Could not connect to \S+|Unable to connect to \S+|Connection failed \[IP:|Temporary failure resolving|Connection timed out)"),
    r("docker.daemon", "docker", Infra, 1.0, r"Cannot connect to the Docker daemon|Failed to connect to the Docker daemon|Is the docker daemon running\?|error during connect:|Error response from daemon: (?:Get|Head) \S+: (?:net/http|dial tcp|EOF|context deadline)|error pulling image configuration|Could not find a valid Docker environment"),
    r("service.unavailable", "service", Infra, 0.7, r"(?i)\b(?:could not|couldn't|unable to) connect to (?:the )?(?:server|database|mysql|postgres|redis|mongo|elasticsearch|rabbitmq|selenium|emulator|simulator|device|X server|display)\b|Can't connect to (?:local )?MySQL server\b|(?:Timeout|Timed out) waiting for (?:the )?(?:emulator|simulator|device) to (?:boot|start|come online)|emulator: ERROR: (?:x86 emulation currently requires hardware acceleration|Could not (?:start|initialize))|CommunicationsException: Communications link failure|Connection to \S+ refused\. Check that the hostname and port are correct|failed to connect to server \[[^\]]+\] on first connect|Chrome failed to start|Errors::ServiceUnavailable\b|cannot open display|Xvfb failed|Timed out waiting for (?:simulator|emulator|device)|emulator: ERROR|device (?:offline|not found)"),
    r("ci.killed", "ci", Infra, 0.8, r"(?i)\b(?:process|build|job|runner) (?:was )?(?:killed|terminated|cancelled|canceled|aborted)(?: by| due| because|\.|$)|received signal (?:SIGKILL|SIGTERM|9|15)\b"),
    r("infra.flaky_service", "service", Infra, 0.5, r"(?i)\b(?:please try again later|temporarily unavailable|service is (?:down|unavailable)|an unexpected error has occurred|internal server error)\b"),
];

/// On one line, the first rule of a pair says more than the second, which
/// is then not counted (a YAML error in a content file is the content's; a
/// missing header is a missing dependency, not just a compile error).
/// Pairs `(a, b)`: wherever `a` matches in the lines read, `b`'s findings
/// are dropped (a wrapper that names what it wraps).
pub const CANCELS: &[(&str, &str)] = &[("python.called_process", "python.traceback")];

/// Rules for a shape many tools share: a line one of them matches counts
/// only when no other rule matches it (the tool's own rule says more).
pub const YIELDS: &[&str] = &["generic.diagnostic"];

pub const SUPERSEDES: &[(&str, &str)] = &[
    // The script the interpreter was told to run, not a library.
    ("ruby.script_missing", "ruby.load_error"),
    ("xctest.crashed", "xcpretty.failed"),
    // PubGrub words Poetry shares with SwiftPM and Dart.
    ("poetry.resolve", "swiftpm.resolve"),
    ("mypy.missing_stubs", "mypy.error"),
    ("yaml.content", "yaml.config"),
    ("cc.missing_header", "cc.error"),
    ("swift.no_module", "swift.error"),
    ("swift.no_module", "cc.error"),
    ("env.unauthorized", "ivy_lein.artifact"),
    ("env.unauthorized", "network.fetch_failed"),
    // An XCTest assertion printed in the compiler's `file:line: error:` form.
    ("xctest.assert", "cc.error"),
    ("xctest.assert", "swift.error"),
    // The JDK the build selected cannot compile for the release it asks.
    ("maven.config", "maven.compilation"),
    ("jdk.version", "maven.compilation"),
    // A loader's own word that a package is missing, over the bare error.
    ("julia.missing_package", "julia.error"),
    ("r.parse", "r.error"),
    // Ruby printing a load error as the uncaught error it is.
    ("ruby.load_error", "ruby.uncaught"),
    ("bundler.install", "ruby.uncaught"),
    // A built-in the runtime lacks, over the bare TypeError (which the
    // other runtimes' rules read too).
    ("js.runtime_version", "js.uncaught"),
    ("js.runtime_version", "python.exception"),
    ("js.runtime_version", "ruby.exception"),
    ("js.runtime_version", "julia.error"),
    // An addon's build output missing is the addon's, not the project's.
    ("node.native_abi_conflict", "node.missing_own_module"),
    ("node.native_abi_conflict", "dep.vendored_error"),
    ("r.missing_package", "r.error"),
    ("python.distribution", "python.traceback"),
    ("rustc.missing_crate", "rustc.error"),
    ("cargo.resolve", "rustc.error_plain"),
    ("tsc.missing_types", "tsc.error"),
    ("tsc.missing_types", "tsc.prose"),
    ("dep.missing_reference", "csc.error"),
    ("dep.missing_reference", "javac.error"),
    ("cmake.find_package", "cmake.error"),
    ("cmake.config", "cmake.error"),
    ("latex.missing_file", "latex.error"),
    ("junit.assertion", "generic.assertion_failed"),
    ("chai.assertion", "generic.assertion_failed"),
    ("python.assertion", "generic.assertion_failed"),
    ("php.fatal", "php.parse"),
    ("python.import_name", "python.import"),
    // A native library missing at load time, whatever raised it.
    ("ld.missing_lib", "python.exception"),
    ("ld.missing_lib", "pytest.exception"),
    ("ld.missing_lib", "python.import"),
    ("make.lint_target", "make.error"),
    ("test.timeout", "go.panic"),
    ("links.awesome_bot", "network.dns"),
    ("links.awesome_bot", "network.connect"),
    // An assertion about a status or a timeout is the test's subject.
    // `go test` prints a test's own messages (t.Errorf) as `x_test.go:N:
    // message`, no column, no directory: "expected 1, got 2" there is the
    // test's, not the compiler's.
    ("gotest.location", "go.compile"),
    ("apt.mirror_fetch_failed", "apt.fetch"),
    ("project.missing", "bundler.notfound"),
    ("project.missing", "rustc.error_plain"),
    ("gotest.location", "network.http5xx"),
    ("gotest.location", "network.connect"),
    ("generic.expected_got", "network.http5xx"),
    // A denied permission under node_modules is the machine's
    // configuration, not the package's code.
    ("python.no_module", "python.own_module"),
    ("os.permission", "dep.vendored_error"),
    // A full disk while installing into site-packages is the machine's.
    ("disk", "dep.vendored_error"),
    ("os.permission", "python.exception"),
    ("db.access", "ruby.exception"),
    ("rails.database_setup", "ruby.exception"),
    ("rails.database_setup", "ruby.uncaught"),
    ("service.unavailable", "ruby.exception"),
    ("env.key_error", "python.exception"),
    ("env.key_error", "pytest.exception"),
    ("env.key_error", "ruby.exception"),
    ("env.key_error", "julia.error"),
];

/// The failing step's command says which kind of step failed: how the
/// category leans when its lines are not decisive.
#[rustfmt::skip]
pub const STEP_KINDS: &[(&str, Kind)] = &[
    (r"(?i)\b(?:npm (?:ci|install|i)|yarn(?: install)?\s*(?:--\S+\s*)*$|pnpm install|pip3? install|poetry install|pipenv install|conda (?:install|env)|bundle(?: install)?\s*(?:--\S+\s*)*$|gem install|composer (?:install|update|require)|go (?:get|mod (?:download|tidy))|cargo (?:fetch|update)|dotnet restore|nuget restore|mix deps\.get|rebar3? get-deps|lein deps|cabal (?:update|install --only-dependencies|v2-build --only-dependencies)|stack (?:setup|build --only-dependencies)|pod (?:install|update|repo update)|carthage (?:bootstrap|update|checkout)|swift package resolve|bower install|apt(?:-get)? install|brew install|install\.packages|cpanm|luarocks install|opam install|Rscript -e .*install|install-deps|deps\.sh)\b|\bmvnw?(?:\s+(?:-\S+|clean))*(?:\s+dependency:\S+)+(?:\s+-\S+)*\s*$", Kind::Dependency),
    (r"(?i)\b(?:eslint|tslint|stylelint|jshint|jscs|rubocop|flake8|pylint|pycodestyle|black --check|isort --check|gofmt|goimports|golint|golangci-lint|gometalinter|go vet|shellcheck|markdownlint|mdl|remark|awesome_bot|markdown-link-check|lychee|htmlproofer|linkchecker|vint|luacheck|hlint|credo|swiftlint|checkstyle|spotless\w*|ktlint|scalastyle|scalafmt|clang-format|clang-tidy|cppcheck|phpcs|php-cs-fixer|phpstan|psalm|clippy|rustfmt|cargo fmt|mix format|codespell|misspell|editorconfig|lint\w*|fmt(?:-check)?|format-check|check-format|style-?check|linkcheck|bundlesize|size-limit|docs?|javadoc|dokka|sphinx|mkdocs|jsdoc|typedoc|japicmp|revapi|clirr|mima\w*|animal-sniffer|apache-rat|license\w*|findbugs|spotbugs|pmd)\b", Kind::Lint),
    // A build that skips its tests (Maven's `-DskipTests`, Gradle's `-x
    // test`) is not a test run, whatever its goals: what fails there is the
    // build (compilers, plugins' checks).
    (r"(?i)(?:\s-DskipTests\b(?:=true)?|\s-Dmaven\.test\.skip=true\b|\s-x\s+:?test\b|\s--exclude-task\s+:?test\b)", Kind::Compile),
    (r"(?i)\b(?:test|tests|spec|specs|check|pytest|py\.test|nosetests|tox|jest|mocha|karma|jasmine|ava|tap|rspec|minitest|cucumber|phpunit|ctest|prove|busted|ert|vader|testthat|go test|cargo test|dotnet test|xcodebuild .*test|swift test|mvn (?:-\S+ )*(?:verify|test|install)|gradlew? (?:\S+ )*(?:test|check|build)|sbt (?:\S+ )*test|mix test|rebar3? (?:eunit|ct)|ct_run|lein test|stack test|cabal (?:v2-)?test|R CMD check)\b", Kind::TestFailed),
    // `release` as a word, not a build's `--release` flag.
    (r"(?i)\b(?:deploy|publish|upload|push|firebase|surge|netlify|heroku|s3 sync|gh-pages|codecov|coveralls)\b|(?:^|[^-])\brelease\b", Kind::Infra),
    // A step that only builds (no test word in it; those are read above).
    (r"(?i)\b(?:gradlew? (?:\S+ )*(?:assemble\w*|compile\w*)|cargo build|go build|npm run (?:build|compile)\b|yarn (?:run )?build\b|tsc|python3? setup\.py (?:build|build_ext|install|develop)|cmake --build|msbuild|dotnet build|ant (?:compile|jar|build|dist)|sbt (?:\S+ )*compile|mvn (?:-\S+ )*compile)\b", Kind::Compile),
];

/// The built-in knowledge-base entry (`analysis/kb/patterns.json`) that
/// documents a rule's kind of failure: its root cause and fix.
pub fn kb_slug(rule: &Rule) -> &'static str {
    let id = rule.id;
    let has = |p: &str| id.contains(p);
    match rule.kind {
        Assertion if has("snapshot") => "snapshot-mismatch",
        Assertion => "assertion-failure",
        TestFailed if has("timeout") => "test-timeout",
        TestFailed | TestSummary => "test-suite-failed",
        Crash if has("native") || has("sanitizer") || has("valgrind") => "segfault-or-abort",
        Crash if has("panic") => "panic",
        Crash if has("uncaught") => "type-error",
        Crash => "uncaught-exception",
        Compile if id.starts_with("rust") => "rust-compile-error",
        Compile
            if [
                "javac", "kotlinc", "scalac", "groovyc", "clojure", "maven", "gradle", "sbt",
                "jasper",
            ]
            .contains(&rule.tool) =>
        {
            "jvm-compile-error"
        }
        Compile if ["gcc/clang", "clang", "msvc"].contains(&rule.tool) => "c-cpp-compile-error",
        Compile if rule.tool == "tsc" => "typescript-compile-error",
        Compile if rule.tool == "go build" => "go-build-error",
        Compile if rule.tool == "ld" => "linker-error",
        Compile if has("make") || has("xcode") => "generic-build-failure",
        Compile => "syntax-error",
        Lint => "lint-or-format-failure",
        Dependency
            if has("no_module")
                || has("cannot_find_module")
                || has("load_error")
                || has("missing") && !has("lib")
                || has("hidden_module")
                || has("missing_module") =>
        {
            "missing-module"
        }
        Dependency
            if has("header")
                || has("pkgconfig")
                || has("missing_lib")
                || has("cmake")
                || has("configure")
                || has("apt")
                || has("brew") =>
        {
            "missing-system-library"
        }
        Dependency if has("lockfile") => "lockfile-out-of-date",
        Dependency if has("resolve") || has("conflict") || has("eresolve") => {
            "dependency-version-conflict"
        }
        Dependency => "package-not-found",
        Config if has("command_not_found") || has("not_recognized") || has("no_browser") => {
            "command-not-found"
        }
        Config if has("permission") => "permission-denied",
        Config if has("key_error") => "missing-env-var",
        Config if has("database_setup") => "database-not-set-up",
        Config if has("env") || has("db.") => "missing-credentials",
        Config if has("unknown_flag") => "unknown-cli-option",
        Config if has("version") || has("engine") || has("jdk") || has("externally_managed") => {
            "toolchain-version-mismatch"
        }
        Config if has("docker") => "docker-image-pull-failed",
        Config => "invalid-config-syntax",
        Infra if has("no_output") || has("timeout") => "job-timeout",
        Infra if has("oom") => "oom-killed",
        Infra if has("disk") => "disk-full",
        Infra if has("dns") => "dns-resolution-failure",
        Infra if has("rate_limit") => "registry-rate-limit",
        Infra if has("http5xx") || has("flaky") || has("starting") => {
            "upstream-service-unavailable"
        }
        Infra if has("docker") => "docker-daemon-unavailable",
        Infra if has("fetch_failed") => "network-timeout",
        Infra if has("connect") || has("tls") || has("service") => "connection-reset",
        Infra if has("bind") || has("resource") => "os-resource-limit",
        Infra => "runner-lost",
    }
}
