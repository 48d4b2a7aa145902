//! One realistic snippet per tool format, written for these tests from the
//! tools' long-stable output formats (invented projects, tests and files;
//! no line comes from a labelled data set): the category each deserves by
//! the rubric, and the specifics the snippet prints.

use super::*;

#[track_caller]
pub(super) fn diagnosed(text: &str, want: Category) -> Diagnosis {
    let d = diagnose_text(text);
    assert_eq!(d.category, want, "\n{text}\n{d:#?}");
    d
}

/// [`diagnosed`], decided by the rule `rule` (its id, or a prefix of it).
#[track_caller]
pub(super) fn diagnosed_by(text: &str, want: Category, rule: &str) -> Diagnosis {
    let d = diagnosed(text, want);
    assert!(
        d.decided_by.starts_with(rule),
        "\n{text}\ndecided by {}, not {rule}",
        d.decided_by
    );
    d
}

/// The other side of [`diagnosed`]: `text` reads as anything but `unwanted`.
#[track_caller]
pub(super) fn not_diagnosed(text: &str, unwanted: Category) -> Diagnosis {
    let d = diagnose_text(text);
    assert_ne!(d.category, unwanted, "\n{text}\n{d:#?}");
    d
}

#[track_caller]
fn failing<'a>(d: &'a Diagnosis, name: &str) -> &'a TestRef {
    d.facts
        .failing_tests
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no failing test {name:?} in {:#?}", d.facts))
}

#[track_caller]
fn first_diagnostic(d: &Diagnosis) -> &Diagnostic {
    d.facts
        .diagnostic
        .as_ref()
        .unwrap_or_else(|| panic!("no diagnostic in {:#?}", d.facts))
}

#[track_caller]
fn package<'a>(d: &'a Diagnosis, name: &str) -> &'a PackageRef {
    d.facts
        .packages
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no package {name:?} in {:#?}", d.facts))
}

#[track_caller]
fn at(t: &TestRef) -> (Option<&str>, Option<u32>) {
    (t.file.as_deref(), t.line)
}

#[track_caller]
fn located(d: &Diagnostic) -> (Option<&str>, Option<u32>) {
    (d.file.as_deref(), d.line)
}

// ------------------------------------------------------------------ Python

#[test]
fn pytest_class_method_with_parameters() {
    let d = diagnosed(
        r"______________________ TestInvoice.test_discount[gold] _______________________
>       assert apply_discount(100, tier) == 80
E       assert 85 == 80
E        +  where 85 = apply_discount(100, 'gold')
tests/test_invoice.py:27: AssertionError
=========================== short test summary info ============================
FAILED tests/test_invoice.py::TestInvoice::test_discount[gold] - assert 85 == 80
========================= 1 failed, 41 passed in 2.13s =========================",
        Category::TestFailure,
    );
    let t = failing(&d, "TestInvoice::test_discount[gold]");
    assert_eq!(t.file.as_deref(), Some("tests/test_invoice.py"));
}

#[test]
fn unittest_failure() {
    let d = diagnosed(
        r#"======================================================================
FAIL: test_parse_header (tests.test_reader.ReaderTest.test_parse_header)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/runner/work/csvtool/csvtool/tests/test_reader.py", line 48, in test_parse_header
    self.assertEqual(reader.header, ['id', 'name'])
AssertionError: Lists differ: ['id'] != ['id', 'name']
----------------------------------------------------------------------
Ran 37 tests in 0.412s

FAILED (failures=1)"#,
        Category::TestFailure,
    );
    let t = failing(&d, "test_parse_header");
    assert_eq!(
        t.suite.as_deref(),
        Some("tests.test_reader.ReaderTest.test_parse_header")
    );
}

#[test]
fn nose_function_test_failure() {
    let d = diagnosed(
        r#"======================================================================
FAIL: textkit.tests.test_slug.test_slugify_unicode
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/travis/build/acme/textkit/textkit/tests/test_slug.py", line 19, in test_slugify_unicode
    assert slugify(u"caf\xe9") == u"cafe"
AssertionError
----------------------------------------------------------------------
Ran 112 tests in 3.004s

FAILED (SKIP=2, failures=1)"#,
        Category::TestFailure,
    );
    failing(&d, "textkit.tests.test_slug.test_slugify_unicode");
}

#[test]
fn pytest_test_failing_on_a_network_timeout_is_infra() {
    diagnosed(
        r"___________________________ test_fetch_exchange_rates ___________________________
E   requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='api.rates.example', port=443): Max retries exceeded with url: /latest (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f2b1c3d9a90>, 'Connection to api.rates.example timed out. (connect timeout=5)'))
tests/test_rates.py:14: ConnectTimeout
FAILED tests/test_rates.py::test_fetch_exchange_rates - requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='api.rates.example', port=443): Max retries exceeded
========================= 1 failed, 30 passed in 7.41s =========================",
        Category::InfraError,
    );
}

#[test]
fn flake8_violation() {
    let d = diagnosed(
        "./ledger/models.py:88:80: E501 line too long (96 > 79 characters)\n\
         ./ledger/models.py:102:1: F401 'decimal.Decimal' imported but unused",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("./ledger/models.py"), Some(88)));
    assert_eq!(diag.code.as_deref(), Some("E501"));
}

#[test]
fn pip_requirement_not_found() {
    let d = diagnosed(
        "Collecting torch==1.4.0 (from -r requirements.txt (line 3))\n\
         ERROR: Could not find a version that satisfies the requirement torch==1.4.0 (from versions: 2.2.0, 2.2.1)\n\
         ERROR: No matching distribution found for torch==1.4.0",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "torch").version.as_deref(), Some("==1.4.0"));
}

#[test]
fn tox_failing_to_install_an_environment_s_deps() {
    diagnosed_by(
        "py39 installdeps: -rrequirements/test.txt\n\
         ERROR: invocation failed (exit code 1), logfile: /home/ci/proj/.tox/py39/log/py39-1.log\n\
         ERROR: could not install deps [-rrequirements/test.txt]; v = InvocationError('/home/ci/proj/.tox/py39/bin/python -m pip install -rrequirements/test.txt', 1)\n\
         ___________________________________ summary ____________________________________\n\
         ERROR:   py39: could not install deps [-rrequirements/test.txt]; v = InvocationError('/home/ci/proj/.tox/py39/bin/python -m pip install -rrequirements/test.txt', 1)",
        Category::DependencyError,
        "tox.install_deps",
    );
}

#[test]
fn pyflakes_reports_without_codes() {
    let d = diagnosed_by(
        "$ pyflakes shop tests\n\
         shop/cart.py:3: 'decimal' imported but unused\n\
         shop/cart.py:41: undefined name 'Basket'\n\
         The command \"pyflakes shop tests\" exited with 1.",
        Category::CodeError,
        "pyflakes.message",
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("shop/cart.py"), Some(3))
    );
}

#[test]
fn docutils_errors_of_a_documentation_build() {
    for line in [
        "/home/ci/proj/docs/usage.rst:118: ERROR: Unexpected indentation.",
        "docs/usage.rst:118: (ERROR/3) Unexpected indentation.",
    ] {
        diagnosed_by(
            &format!(
                "Running Sphinx v1.6.3\nreading sources... [100%] usage\n{line}\nbuild finished with problems."
            ),
            Category::CodeError,
            "docutils.problem",
        );
    }
    // A warning is not an error.
    let d = diagnose_text("docs/usage.rst:118: WARNING: duplicate label intro");
    assert!(
        !d.decided_by.starts_with("docutils.problem"),
        "{}",
        d.decided_by
    );
}

#[test]
fn javac_under_ant_reads_through_the_task_prefix() {
    let d = diagnosed(
        "compile:\n\
         \x20   [javac] Compiling 42 source files to /home/ci/proj/build/classes\n\
         \x20   [javac] /home/ci/proj/src/org/shop/Cart.java:87: error: cannot find symbol\n\
         \x20   [javac]         total = add(total, item.price());\n\
         \x20   [javac]                 ^\n\
         \x20   [javac]   symbol:   method add(int,int)\n\
         \x20   [javac] 1 error\n\
         \n\
         BUILD FAILED\n\
         /home/ci/proj/build.xml:40: Compile failed; see the compiler error output for details.",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("/home/ci/proj/src/org/shop/Cart.java"), Some(87))
    );
}

#[test]
fn pip_version_conflict() {
    diagnosed(
        "ERROR: Cannot install -r requirements.txt (line 3) and urllib3==2.2.1 because these package versions have conflicting dependencies.\n\
         \n\
         The conflict is caused by:\n\
         \x20   The user requested urllib3==2.2.1\n\
         \x20   botocore 1.29.0 depends on urllib3<1.27 and >=1.25.4\n\
         ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts",
        Category::DependencyError,
    );
}

#[test]
fn pip_failing_because_the_connection_was_reset_is_infra() {
    diagnosed(
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))': /simple/requests/\n\
         ERROR: Could not find a version that satisfies the requirement requests>=2.31 (from versions: none)\n\
         ERROR: No matching distribution found for requests>=2.31",
        Category::InfraError,
    );
}

// -------------------------------------------------------------- JavaScript

#[test]
fn jest_assertion() {
    let d = diagnosed(
        r#"FAIL src/components/__tests__/CartSummary.test.tsx
  CartSummary
    ✕ shows the total with tax (23 ms)
  ● CartSummary › shows the total with tax
    expect(received).toBe(expected) // Object.is equality
    Expected: "$10.80"
    Received: "$10.00"
      at Object.<anonymous> (src/components/__tests__/CartSummary.test.tsx:22:53)
Tests:       1 failed, 11 passed, 12 total"#,
        Category::TestFailure,
    );
    let t = failing(&d, "CartSummary › shows the total with tax");
    assert_eq!(
        t.file.as_deref(),
        Some("src/components/__tests__/CartSummary.test.tsx")
    );
}

#[test]
fn jest_uncaught_type_error_in_a_test_is_code() {
    diagnosed(
        r"FAIL src/cart/__tests__/total.test.js
  ● cart total › sums line items
    TypeError: Cannot read properties of undefined (reading 'price')
      12 |   return items.reduce((sum, item) => sum + item.product.price * item.qty, 0);
      at reduce (src/cart/total.js:12:53)
Tests:       1 failed, 8 passed, 9 total",
        Category::CodeError,
    );
}

#[test]
fn jest_suite_failing_on_a_missing_module_is_a_dependency_error() {
    let d = diagnosed(
        r"FAIL src/search/__tests__/SearchBox.test.tsx
  ● Test suite failed to run

    Cannot find module 'lodash.debounce' from 'src/search/SearchBox.tsx'

Test Suites: 1 failed, 4 passed, 5 total
Tests:       0 total",
        Category::DependencyError,
    );
    package(&d, "lodash.debounce");
}

#[test]
fn mocha_with_node_assert() {
    diagnosed(
        r"  UserService
    #create()
      1) rejects a duplicate email

  14 passing (320ms)
  1 failing

  1) UserService
       #create()
         rejects a duplicate email:
     AssertionError [ERR_ASSERTION]: Missing expected rejection.
      at async Context.<anonymous> (test/user-service.spec.js:41:5)",
        Category::TestFailure,
    );
}

#[test]
fn jasmine_expectation() {
    diagnosed(
        r"Started
..F...

Failures:
1) Calculator divide returns Infinity for division by zero
  Message:
    Expected NaN to be Infinity.
  Stack:
        at UserContext.<anonymous> (spec/calculator.spec.js:18:32)

6 specs, 1 failure
Finished in 0.021 seconds",
        Category::TestFailure,
    );
}

#[test]
fn karma_with_a_two_word_browser_name() {
    let d = diagnosed(
        r"Chrome Headless 118.0.5993.88 (Linux x86_64) DateRangePicker should clamp the end date FAILED
	Expected '2024-01-31' to equal '2024-02-01'.
	    at UserContext.<anonymous> (src/app/date-range-picker.component.spec.ts:54:28)
Chrome Headless 118.0.5993.88 (Linux x86_64): Executed 88 of 88 (1 FAILED) (1.204 secs / 1.09 secs)
TOTAL: 1 FAILED, 87 SUCCESS",
        Category::TestFailure,
    );
    failing(&d, "DateRangePicker should clamp the end date");
}

#[test]
fn tape_tap_output() {
    let d = diagnosed(
        r"TAP version 13
# rejects garbage
not ok 2 should throw
  ---
    operator: throws
    at: Test.<anonymous> (/home/runner/work/tinydate/tinydate/test/parse.js:22:5)
  ...
1..2
# tests 2
# pass  1
# fail  1",
        Category::TestFailure,
    );
    failing(&d, "should throw");
}

#[test]
fn eslint_stylish() {
    let d = diagnosed(
        r"/home/runner/work/shop/shop/src/cart/total.js
  14:7   error  'discount' is assigned a value but never used  no-unused-vars
  22:18  error  Strings must use singlequote                   quotes

✖ 2 problems (2 errors, 0 warnings)
  1 error and 0 warnings potentially fixable with the `--fix` option.",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(diag.line, Some(14));
    assert_eq!(diag.code.as_deref(), Some("no-unused-vars"));
}

#[test]
fn tslint_prose() {
    let d = diagnosed(
        "ERROR: (no-var-keyword) src/app/cart/cart.service.ts[31, 5]: Forbidden 'var' keyword, use 'let' or 'const' instead\n\
         Lint errors found in the listed files.",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("src/app/cart/cart.service.ts"), Some(31))
    );
}

#[test]
fn tsc_pretty_error() {
    let d = diagnosed(
        r"src/cart/total.ts:14:7 - error TS2322: Type 'string' is not assignable to type 'number'.

14   let sum: number = format(items);
         ~~~

Found 1 error in src/cart/total.ts:14",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("src/cart/total.ts"), Some(14)));
    assert_eq!(diag.code.as_deref(), Some("TS2322"));
}

#[test]
fn stylelint_string_formatter() {
    let d = diagnosed(
        r#"src/styles/buttons.scss
 12:3  ✖  Unexpected unknown property "colr"   property-no-unknown
 27:1  ✖  Expected empty line before rule       rule-empty-line-before

2 problems (2 errors, 0 warnings)"#,
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(diag.line, Some(12));
    assert_eq!(diag.code.as_deref(), Some("property-no-unknown"));
}

#[test]
fn npm_version_not_found() {
    let d = diagnosed(
        "npm ERR! code ETARGET\n\
         npm ERR! notarget No matching version found for left-pad@^9.0.0.\n\
         npm ERR! notarget In most cases you or one of your dependencies are requesting\n\
         npm ERR! notarget a package version that doesn't exist.",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "left-pad").version.as_deref(), Some("^9.0.0"));
}

#[test]
fn npm_peer_dependency_conflict() {
    diagnosed(
        r#"npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree
npm ERR!
npm ERR! While resolving: shop-ui@1.4.0
npm ERR! Found: react@18.2.0
npm ERR! Could not resolve dependency:
npm ERR! peer react@"^16.8.0 || ^17.0.0" from react-datepicker@4.1.0"#,
        Category::DependencyError,
    );
}

#[test]
fn npm_connection_reset_is_infra() {
    diagnosed(
        "npm ERR! code ECONNRESET\n\
         npm ERR! network aborted\n\
         npm ERR! network This is a problem related to network connectivity.",
        Category::InfraError,
    );
}

#[test]
fn yarn_no_matching_version() {
    let d = diagnosed(
        r#"yarn install v1.22.19
[1/4] Resolving packages...
error Couldn't find any versions for "left-pad" that matches "^9.0.0"
info Visit https://yarnpkg.com/en/docs/cli/install for documentation about this command."#,
        Category::DependencyError,
    );
    assert_eq!(package(&d, "left-pad").version.as_deref(), Some("^9.0.0"));
}

// -------------------------------------------------------------------- Ruby

#[test]
fn rspec_failure() {
    let d = diagnosed(
        r"  1) Order#total applies the coupon
     Failure/Error: expect(order.total).to eq(90)

       expected: 90
            got: 100
     # ./spec/models/order_spec.rb:14:in `block (3 levels) in <top (required)>'

24 examples, 1 failure

rspec ./spec/models/order_spec.rb:12 # Order#total applies the coupon",
        Category::TestFailure,
    );
    let t = failing(&d, "Order#total applies the coupon");
    assert_eq!(at(t), (Some("spec/models/order_spec.rb"), Some(12)));
}

#[test]
fn minitest_failure() {
    let d = diagnosed(
        r#"  1) Failure:
SlugTest#test_strips_accents [test/slug_test.rb:9]:
Expected: "cafe"
  Actual: "café"

5 runs, 7 assertions, 1 failures, 0 errors, 0 skips"#,
        Category::TestFailure,
    );
    let t = failing(&d, "test_strips_accents");
    assert_eq!(at(t), (Some("test/slug_test.rb"), Some(9)));
}

#[test]
fn test_unit_failure() {
    let d = diagnosed(
        r"===============================================================================
Failure: test_parse_empty(ParserTest)
/home/runner/work/tinyparse/tinyparse/test/test_parser.rb:17:in `test_parse_empty'
  => 17:     assert_equal([], result)
<[]> expected but was
<nil>
===============================================================================
3 tests, 3 assertions, 1 failures, 0 errors, 0 pendings, 0 omissions, 0 notifications
66.6667% passed",
        Category::TestFailure,
    );
    assert_eq!(
        failing(&d, "test_parse_empty").suite.as_deref(),
        Some("ParserTest")
    );
}

#[test]
fn rubocop_offense() {
    let d = diagnosed(
        r"Offenses:

app/models/order.rb:27:5: C: [Correctable] Style/RedundantReturn: Redundant return detected.
    return total
    ^^^^^^

42 files inspected, 1 offense detected, 1 offense autocorrectable",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("app/models/order.rb"), Some(27)));
    assert_eq!(diag.code.as_deref(), Some("Style/RedundantReturn"));
}

#[test]
fn bundler_gem_not_found() {
    let d = diagnosed(
        "Fetching gem metadata from https://rubygems.org/.........\n\
         Resolving dependencies...\n\
         Could not find gem 'rails (~> 8.1)' in rubygems repository https://rubygems.org/ or installed locally.",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "rails").version.as_deref(), Some("~> 8.1"));
}

#[test]
fn bundler_version_conflict() {
    let d = diagnosed(
        r#"Bundler could not find compatible versions for gem "activesupport":
  In Gemfile:
    rails (~> 7.0) was resolved to 7.0.8, which depends on
      activesupport (= 7.0.8)"#,
        Category::DependencyError,
    );
    package(&d, "activesupport");
}

/// Bundler 2.5's resolver (PubGrub) explains a conflict in its own words
/// and names no gem on its first line: the explanation's last line says
/// resolution failed.
#[test]
fn bundler_pubgrub_conflict() {
    let d = diagnosed(
        "Fetching gem metadata from https://rubygems.org/.........\n\
         Resolving dependencies...\n\
         Could not find compatible versions\n\
         \n\
         Because web-kit >= 3.0 depends on json-codec ~> 5.2\n\
         \x20 and Gemfile depends on json-codec ~> 4.0,\n\
         \x20 web-kit >= 3.0 is incompatible with Gemfile.\n\
         So, because Gemfile depends on web-kit >= 3.0,\n\
         \x20 version solving has failed.",
        Category::DependencyError,
    );
    assert!(
        d.decided_by.starts_with("bundler.notfound"),
        "{}",
        d.decided_by
    );
}

#[test]
fn rspec_file_failing_to_load_a_gem_is_a_dependency_error() {
    let d = diagnosed(
        r"An error occurred while loading ./spec/client_spec.rb.
Failure/Error: require 'faraday'

LoadError:
  cannot load such file -- faraday
# ./spec/client_spec.rb:1:in `<top (required)>'
Finished in 0.00021 seconds (files took 0.1 seconds to load)
0 examples, 0 failures, 1 error occurred outside of examples",
        Category::DependencyError,
    );
    package(&d, "faraday");
}

// --------------------------------------------------------------------- JVM

#[test]
fn surefire_junit5_failure() {
    let d = diagnosed(
        r"[INFO] Running com.acme.billing.InvoiceServiceTest
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.231 s <<< FAILURE! -- in com.acme.billing.InvoiceServiceTest
[ERROR] com.acme.billing.InvoiceServiceTest.totalIncludesVat -- Time elapsed: 0.021 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <119.0> but was: <100.0>
[ERROR] Failures:
[ERROR]   InvoiceServiceTest.totalIncludesVat:42 expected: <119.0> but was: <100.0>
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0",
        Category::TestFailure,
    );
    assert_eq!(failing(&d, "totalIncludesVat").line, Some(42));
}

#[test]
fn surefire_null_pointer_in_a_test_is_code() {
    let d = diagnosed(
        r"[ERROR] Tests run: 3, Failures: 0, Errors: 1, Skipped: 0, Time elapsed: 0.05 s <<< FAILURE! - in com.acme.billing.InvoiceServiceTest
[ERROR] refundRestoresBalance(com.acme.billing.InvoiceServiceTest)  Time elapsed: 0.004 s  <<< ERROR!
java.lang.NullPointerException
	at com.acme.billing.Invoice.refund(Invoice.java:77)
	at com.acme.billing.InvoiceServiceTest.refundRestoresBalance(InvoiceServiceTest.java:51)",
        Category::CodeError,
    );
    failing(&d, "refundRestoresBalance");
}

#[test]
fn maven_compile_error_in_a_test_file_is_code() {
    let d = diagnosed(
        r"[ERROR] COMPILATION ERROR :
[ERROR] /home/runner/work/billing/billing/src/test/java/com/acme/billing/InvoiceServiceTest.java:[42,25] cannot find symbol
  symbol:   method totalWithVat()
  location: variable invoice of type com.acme.billing.Invoice
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.11.0:testCompile (default-testCompile) on project billing-core: Compilation failure",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (
            Some(
                "/home/runner/work/billing/billing/src/test/java/com/acme/billing/InvoiceServiceTest.java"
            ),
            Some(42)
        )
    );
}

#[test]
fn testng_failure() {
    let d = diagnosed(
        r"FAILED: rejectsExpiredToken
java.lang.AssertionError: expected [true] but found [false]
	at org.testng.Assert.fail(Assert.java:99)
	at com.acme.auth.TokenTest.rejectsExpiredToken(TokenTest.java:41)

===============================================
    Default test
    Tests run: 8, Failures: 1, Skips: 0
===============================================
Total tests run: 8, Passes: 7, Failures: 1, Skips: 0",
        Category::TestFailure,
    );
    failing(&d, "rejectsExpiredToken");
}

#[test]
fn gradle_test_failure() {
    let d = diagnosed(
        r"> Task :app:test FAILED

com.acme.geo.DistanceCalculatorTest > haversineBetweenParisAndLondon() FAILED
    org.opentest4j.AssertionFailedError at DistanceCalculatorTest.java:27

12 tests completed, 1 failed

FAILURE: Build failed with an exception.
* What went wrong:
Execution failed for task ':app:test'.
> There were failing tests. See the report at: file:///home/runner/work/geo/geo/app/build/reports/tests/test/index.html",
        Category::TestFailure,
    );
    let t = failing(&d, "haversineBetweenParisAndLondon()");
    assert_eq!(
        t.suite.as_deref(),
        Some("com.acme.geo.DistanceCalculatorTest")
    );
}

#[test]
fn scalatest_under_sbt() {
    let d = diagnosed(
        r"[info] MoneySpec:
[info] Money
[info] - should add amounts in the same currency
[info] - should refuse to add different currencies *** FAILED ***
[info]   IllegalArgumentException was not thrown (MoneySpec.scala:21)
[info] Tests: succeeded 7, failed 1, canceled 0, ignored 0, pending 0
[info] *** 1 TEST FAILED ***
[error] Failed tests:
[error] 	com.acme.money.MoneySpec
[error] (Test / test) sbt.TestsFailedException: Tests unsuccessful",
        Category::TestFailure,
    );
    failing(&d, "should refuse to add different currencies");
}

#[test]
fn specs2_under_sbt() {
    let d = diagnosed(
        r"[info] The token parser should
[info]   + parse an integer
[error]   x parse a negative integer
[error]    '-' is not a digit (TokenParserSpec.scala:18)
[info] Total for specification TokenParserSpec
[info] 2 examples, 1 failure, 0 error
[error] Failed: Total 2, Failed 1, Errors 0, Passed 1
[error] (Test / test) sbt.TestsFailedException: Tests unsuccessful",
        Category::TestFailure,
    );
    failing(&d, "parse a negative integer");
}

#[test]
fn sbt_compile_error() {
    let d = diagnosed(
        r"[info] compiling 12 Scala sources to /home/runner/work/ledger/ledger/target/scala-2.13/classes ...
[error] /home/runner/work/ledger/ledger/src/main/scala/acme/ledger/Account.scala:34:18: type mismatch;
[error]  found   : String
[error]  required: Int
[error] one error found
[error] (Compile / compileIncremental) Compilation failed
[error] Total time: 9 s, completed Mar 3, 2024 10:12:44 AM",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (
            Some("/home/runner/work/ledger/ledger/src/main/scala/acme/ledger/Account.scala"),
            Some(34)
        )
    );
}

#[test]
fn maven_artifact_not_found() {
    let d = diagnosed(
        "[ERROR] Failed to execute goal on project billing-core: Could not resolve dependencies for project com.acme:billing-core:jar:1.3.0-SNAPSHOT: Could not find artifact com.acme:money-api:jar:2.0.0 in central (https://repo.maven.apache.org/maven2) -> [Help 1]",
        Category::DependencyError,
    );
    assert!(
        d.facts
            .packages
            .iter()
            .any(|p| p.name.contains("money-api")),
        "{:#?}",
        d.facts
    );
}

#[test]
fn gradle_dependency_not_found() {
    let d = diagnosed(
        r"* What went wrong:
Execution failed for task ':app:compileJava'.
> Could not resolve all files for configuration ':app:compileClasspath'.
   > Could not find com.acme:money-api:2.0.0.
     Required by:
         project :app",
        Category::DependencyError,
    );
    package(&d, "com.acme:money-api:2.0.0");
}

// --------------------------------------------------------- Elixir / Erlang

#[test]
fn exunit_assertion() {
    let d = diagnosed(
        r#"  1) test parses a negative amount (Ledger.ParserTest)
     test/ledger/parser_test.exs:21
     Assertion with == failed
     code:  assert Parser.parse("-5") == {:ok, -5}
     left:  {:error, :invalid}
     right: {:ok, -5}

Finished in 0.08 seconds (0.03s async, 0.05s sync)
14 tests, 1 failure"#,
        Category::TestFailure,
    );
    let t = failing(&d, "parses a negative amount");
    assert_eq!(t.suite.as_deref(), Some("Ledger.ParserTest"));
    assert_eq!(at(t), (Some("test/ledger/parser_test.exs"), Some(21)));
}

#[test]
fn mix_hex_resolution_conflict() {
    let d = diagnosed(
        r#"Resolving Hex dependencies...

Failed to use "plug" (version 1.10.0) because
  phoenix (version 1.7.10) requires ~> 1.14
  mix.exs specifies ~> 1.10.0

** (Mix) Hex dependency resolution failed, change the version requirements of your dependencies or unlock them (by using mix deps.update or mix deps.unlock)."#,
        Category::DependencyError,
    );
    package(&d, "plug");
}

#[test]
fn mix_unknown_hex_package() {
    let d = diagnosed(
        "Resolving Hex dependencies...\n** (Mix) No package with name plugg (from: mix.exs) in registry",
        Category::DependencyError,
    );
    package(&d, "plugg");
}

#[test]
fn common_test_failure() {
    let d = diagnosed(
        r#"- - - - - - - - - - - - - - - - - - - - - - - - - -
payments_SUITE:refund_twice failed on line 58
Reason: {assertEqual,[{module,payments_SUITE},{line,58},{expected,ok},{value,{error,already_refunded}}]}
- - - - - - - - - - - - - - - - - - - - - - - - - -
Testing acme.pay: *** FAILED {payments_SUITE,refund_twice} ***
Testing acme.pay: TEST COMPLETE, 23 ok, 1 failed of 24 test cases"#,
        Category::TestFailure,
    );
    let t = failing(&d, "refund_twice");
    assert_eq!(t.line, Some(58));
}

#[test]
fn rebar3_common_test_failure() {
    let d = diagnosed(
        r"===> Running Common Test suites...
%%% payments_SUITE: ....
%%% payments_SUITE ==> refund_twice: FAILED
%%% payments_SUITE ==> {{assertEqual,[{module,payments_SUITE},{line,58},{expected,ok},{value,{error,already_refunded}}]},[]}
Failed 1 tests. Passed 23 tests.
===> Failures occurred running tests: 1",
        Category::TestFailure,
    );
    assert_eq!(
        failing(&d, "refund_twice").suite.as_deref(),
        Some("payments_SUITE")
    );
}

#[test]
fn eunit_failure() {
    let d = diagnosed(
        r#"module 'lists_util_tests'
  lists_util_tests: chunk_test...*failed*
in function lists_util_tests:'-chunk_test/0-fun-0-'/1 (test/lists_util_tests.erl, line 12)
**error:{assertEqual,[{module,lists_util_tests},
                      {line,12},
                      {expected,[[1,2],[3]]},
                      {value,[[1,2,3]]}]}
=======================================================
  Failed: 1.  Skipped: 0.  Passed: 8."#,
        Category::TestFailure,
    );
    let t = failing(&d, "chunk_test");
    assert_eq!(at(t), (Some("test/lists_util_tests.erl"), Some(12)));
}

#[test]
fn rebar3_compile_error() {
    let d = diagnosed(
        "===> Compiling acme_pay\n\
         ===> Compiling src/acme_pay_refund.erl failed\n\
         src/acme_pay_refund.erl:41:5: variable 'Amount' is unbound",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("src/acme_pay_refund.erl"), Some(41))
    );
}

#[test]
fn rebar3_package_not_in_registry() {
    let d = diagnosed(
        "===> Verifying dependencies...\n===> Package not found in registry: cowboyy-2.9.0.",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "cowboyy").version.as_deref(), Some("2.9.0"));
}

// ---------------------------------------------------------------------- Go

#[test]
fn go_test_testify_subtest() {
    let d = diagnosed(
        "=== RUN   TestParseDuration/negative\n\
         \x20   duration_test.go:44:\n\
         \x20       \tError Trace:\t/home/runner/work/tempo/tempo/duration_test.go:44\n\
         \x20       \tError:      \tNot equal:\n\
         \x20       \t            \texpected: -5000000000\n\
         \x20       \t            \tactual  : 5000000000\n\
         --- FAIL: TestParseDuration (0.00s)\n\
         \x20   --- FAIL: TestParseDuration/negative (0.00s)\n\
         FAIL\n\
         FAIL\tgithub.com/acme/tempo\t0.012s",
        Category::TestFailure,
    );
    failing(&d, "TestParseDuration/negative");
}

#[test]
fn go_test_messages_are_the_test_s_not_the_compiler_s() {
    // t.Errorf prints `file_test.go:N: message`: words a compiler uses too
    // ("expected", "missing", "invalid") are the test's there.
    let d = diagnosed(
        "=== RUN   TestTotal\n\
         \x20   basket_test.go:18: expected 3 items, got 2\n\
         \x20   basket_test.go:19: missing discount line\n\
         --- FAIL: TestTotal (0.00s)\n\
         FAIL\n\
         FAIL\tgithub.com/acme/shop/basket\t0.004s",
        Category::TestFailure,
    );
    failing(&d, "TestTotal");
    // With a directory or a column it is the compiler's, test file or not.
    diagnosed(
        "# github.com/acme/shop/basket [github.com/acme/shop/basket.test]\n\
         ./basket_test.go:18:2: undefined: newBasket",
        Category::CodeError,
    );
}

#[test]
fn mockito_and_scalatest_failures_are_expectations() {
    for log in [
        "verifiesTheSave(com.acme.shop.OrderServiceTest)  Time elapsed: 0.02 sec  <<< FAILURE!\n\
         Wanted but not invoked:\n\
         orderRepository.save(<any>);\n\
         -> at com.acme.shop.OrderServiceTest.verifiesTheSave(OrderServiceTest.java:41)",
        "savesOnce(com.acme.shop.OrderServiceTest)  Time elapsed: 0.01 sec  <<< FAILURE!\n\
         org.mockito.exceptions.verification.TooManyActualInvocations: \n\
         orderRepository.save(<any>);\n\
         Wanted 1 time:",
        "[info] - adds up *** FAILED ***\n\
         [info]   org.scalatest.exceptions.TestFailedException: 3 did not equal 4\n\
         [info] Tests: succeeded 2, failed 1, canceled 0, ignored 0, pending 0",
    ] {
        let d = diagnosed(log, Category::TestFailure);
        assert!(
            d.findings.iter().any(|f| f.kind == Kind::Assertion),
            "{log}: {:#?}",
            d.findings
        );
    }
}

#[test]
fn go_build_error() {
    let d = diagnosed(
        "# github.com/acme/tempo/internal/clock\n\
         internal/clock/clock.go:27:9: undefined: time.Sinse\n\
         internal/clock/clock.go:31:2: declared and not used: elapsed",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("internal/clock/clock.go"), Some(27))
    );
}

#[test]
fn go_compile_error_in_a_test_file_is_code() {
    diagnosed(
        "# github.com/acme/tempo [github.com/acme/tempo.test]\n\
         ./duration_test.go:18:9: undefined: ParseDurationStrict\n\
         FAIL\tgithub.com/acme/tempo [build failed]\n\
         FAIL",
        Category::CodeError,
    );
}

#[test]
fn go_vet_printf_check() {
    let d = diagnosed(
        "# github.com/acme/tempo/internal/report\n\
         internal/report/render.go:58:3: fmt.Sprintf format %d has arg name of wrong type string",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("internal/report/render.go"), Some(58))
    );
}

#[test]
fn go_module_unknown_revision() {
    let d = diagnosed(
        "go: downloading github.com/acme/money v1.4.0\n\
         go: github.com/acme/money@v1.9.0: invalid version: unknown revision v1.9.0",
        Category::DependencyError,
    );
    assert_eq!(
        package(&d, "github.com/acme/money").version.as_deref(),
        Some("v1.9.0")
    );
}

// -------------------------------------------------------------------- Rust

#[test]
fn cargo_test_assertion_panic() {
    let d = diagnosed(
        r"running 3 tests
test tests::rejects_overflow ... FAILED

failures:

---- tests::rejects_overflow stdout ----
thread 'tests::rejects_overflow' panicked at src/lib.rs:88:9:
assertion `left == right` failed
  left: Ok(255)
 right: Err(Overflow)

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        Category::TestFailure,
    );
    failing(&d, "tests::rejects_overflow");
}

#[test]
fn rustc_unresolved_name() {
    let d = diagnosed(
        r"   Compiling tallyho v0.3.1 (/home/runner/work/tallyho/tallyho)
error[E0425]: cannot find value `totl` in this scope
  --> src/report.rs:17:20
   |
17 |     println!(x, totl);
   |                 ^^^^ help: a local variable with a similar name exists: `total`

error: could not compile `tallyho` (lib) due to 1 previous error",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(diag.code.as_deref(), Some("E0425"));
    assert_eq!(located(diag), (Some("src/report.rs"), Some(17)));
}

#[test]
fn clippy_denied_lint() {
    let d = diagnosed(
        r"    Checking tallyho v0.3.1 (/home/runner/work/tallyho/tallyho)
error: this `if` has identical blocks
  --> src/report.rs:40:12
   |
   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#if_same_then_else
   = note: `-D clippy::if-same-then-else` implied by `-D warnings`
error: could not compile `tallyho` (lib) due to 1 previous error",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("src/report.rs"), Some(40))
    );
}

#[test]
fn cargo_dependency_version_not_found() {
    let d = diagnosed(
        r"    Updating crates.io index
error: failed to select a version for the requirement `serde_yamlx = ^0.9`
candidate versions found which didn't match: 0.1.0
location searched: crates.io index
required by package `tallyho v0.3.1 (/home/runner/work/tallyho/tallyho)`",
        Category::DependencyError,
    );
    package(&d, "serde_yamlx");
}

#[test]
fn rust_binary_panicking_on_unwrap_is_code() {
    diagnosed(
        r"     Running `target/debug/tallyho import fixtures/empty.csv`
thread 'main' panicked at src/main.rs:12:41:
called `Option::unwrap()` on a `None` value
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        Category::CodeError,
    );
}

// --------------------------------------------------------------------- PHP

#[test]
fn phpunit_failure() {
    let d = diagnosed(
        r"There was 1 failure:

1) Acme\Cart\Tests\CartTest::testTotalAppliesVoucher
Failed asserting that 100.0 matches expected 90.0.

/home/runner/work/cart/cart/tests/CartTest.php:31

FAILURES!
Tests: 4, Assertions: 6, Failures: 1.",
        Category::TestFailure,
    );
    failing(&d, r"Acme\Cart\Tests\CartTest::testTotalAppliesVoucher");
}

#[test]
fn composer2_unresolvable_constraint() {
    let d = diagnosed(
        r"Loading composer repositories with package information
Updating dependencies
Your requirements could not be resolved to an installable set of packages.

  Problem 1
    - Root composer.json requires acme/http-signer ^3.0, found acme/http-signer[1.0.0, ..., 2.4.1] but it does not match the constraint.",
        Category::DependencyError,
    );
    assert_eq!(
        package(&d, "acme/http-signer").version.as_deref(),
        Some("^3.0")
    );
}

// ---------------------------------------------------------- .NET / PowerShell

#[test]
fn pester_v5_failure() {
    let d = diagnosed(
        r"Running tests.
[-] Get-Slug.converts spaces to dashes 34ms (30ms|4ms)
 Expected 'hello-world', but got 'hello world'.
 at $result | Should -Be 'hello-world', /home/runner/work/psutil/psutil/tests/Get-Slug.Tests.ps1:9
Tests completed in 1.02s
Tests Passed: 5, Failed: 1, Skipped: 0 NotRun: 0",
        Category::TestFailure,
    );
    failing(&d, "Get-Slug.converts spaces to dashes");
}

#[test]
fn dotnet_test_xunit_failure() {
    let d = diagnosed(
        r"  Failed Acme.Billing.Tests.InvoiceTests.Total_IncludesVat [12 ms]
  Error Message:
   Assert.Equal() Failure: Values differ
Expected: 119
Actual:   100
  Stack Trace:
     at Acme.Billing.Tests.InvoiceTests.Total_IncludesVat() in /home/runner/work/billing/billing/tests/Acme.Billing.Tests/InvoiceTests.cs:line 27

Failed!  - Failed:     1, Passed:    41, Skipped:     0, Total:    42, Duration: 312 ms - Acme.Billing.Tests.dll (net8.0)",
        Category::TestFailure,
    );
    failing(&d, "Acme.Billing.Tests.InvoiceTests.Total_IncludesVat");
}

#[test]
fn msbuild_csc_error() {
    let d = diagnosed(
        r"Build FAILED.

/home/runner/work/billing/billing/src/Acme.Billing/Invoice.cs(42,17): error CS0103: The name 'vatRate' does not exist in the current context [/home/runner/work/billing/billing/src/Acme.Billing/Acme.Billing.csproj]
    0 Warning(s)
    1 Error(s)",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(diag.code.as_deref(), Some("CS0103"));
    assert_eq!(
        located(diag),
        (
            Some("/home/runner/work/billing/billing/src/Acme.Billing/Invoice.cs"),
            Some(42)
        )
    );
}

#[test]
fn nuget_package_not_found() {
    let d = diagnosed(
        r"  Determining projects to restore...
/home/runner/work/billing/billing/src/Acme.Billing/Acme.Billing.csproj : error NU1101: Unable to find package Acme.Money. No packages exist with this id in source(s): nuget.org
  Failed to restore /home/runner/work/billing/billing/src/Acme.Billing/Acme.Billing.csproj (in 1.2 sec).",
        Category::DependencyError,
    );
    package(&d, "Acme.Money");
}

// ---------------------------------------------------------- Apple platforms

#[test]
fn xcodebuild_xctest_assertion() {
    let d = diagnosed(
        r#"Test Case '-[TallyTests.LedgerTests testBalanceAfterRefund]' started.
/Users/runner/work/tally/tally/Tests/TallyTests/LedgerTests.swift:33: error: -[TallyTests.LedgerTests testBalanceAfterRefund] : XCTAssertEqual failed: ("90") is not equal to ("100")
Test Case '-[TallyTests.LedgerTests testBalanceAfterRefund]' failed (0.004 seconds).
	 Executed 12 tests, with 1 failure (0 unexpected) in 0.041 (0.044) seconds
** TEST FAILED **"#,
        Category::TestFailure,
    );
    let t = failing(&d, "testBalanceAfterRefund");
    assert_eq!(t.suite.as_deref(), Some("TallyTests.LedgerTests"));
    assert_eq!(
        at(t),
        (
            Some("/Users/runner/work/tally/tally/Tests/TallyTests/LedgerTests.swift"),
            Some(33)
        )
    );
}

#[test]
fn swift_test_on_linux() {
    let d = diagnosed(
        r#"Test Case 'SlugTests.testUnicode' started at 2024-03-03 10:22:41.002
/home/runner/work/slugkit/slugkit/Tests/SlugKitTests/SlugTests.swift:14: error: SlugTests.testUnicode : XCTAssertEqual failed: ("caf") is not equal to ("cafe") -
Test Case 'SlugTests.testUnicode' failed (0.003 seconds)
Executed 8 tests, with 1 failure (0 unexpected) in 0.012 (0.012) seconds"#,
        Category::TestFailure,
    );
    let t = failing(&d, "testUnicode");
    assert_eq!(t.line, Some(14));
}

#[test]
fn swiftpm_compile_error() {
    let d = diagnosed(
        r"Compiling SlugKit Slug.swift
/home/runner/work/slugkit/slugkit/Sources/SlugKit/Slug.swift:22:16: error: cannot find 'normalise' in scope
        return normalise(text)
               ^~~~~~~~~
error: fatalError",
        Category::CodeError,
    );
    assert_eq!(first_diagnostic(&d).line, Some(22));
}

#[test]
fn swiftpm_resolution_failure() {
    let d = diagnosed(
        r"Fetching https://github.com/acme/swift-money.git
error: Dependencies could not be resolved because root depends on 'swift-money' 2.0.0..<3.0.0.
'swift-money' 2.0.0..<3.0.0 cannot be used because no versions of 'swift-money' match the requirement 2.0.0..<3.0.0 and root depends on 'swift-money' 2.0.0..<3.0.0.",
        Category::DependencyError,
    );
    package(&d, "swift-money");
}

#[test]
fn cocoapods_incompatible_versions() {
    let d = diagnosed(
        r#"Analyzing dependencies
[!] CocoaPods could not find compatible versions for pod "Alamofire":
  In Podfile:
    Alamofire (~> 6.0)

None of your spec sources contain a spec satisfying the dependency: `Alamofire (~> 6.0)`."#,
        Category::DependencyError,
    );
    package(&d, "Alamofire");
}

#[test]
fn carthage_no_version_satisfies() {
    let d = diagnosed(
        "*** Fetching swift-money\n\
         No available version for github \"acme/swift-money\" satisfies the requirement: ~> 3.0",
        Category::DependencyError,
    );
    package(&d, "acme/swift-money");
}

// ------------------------------------------------------------------- C/C++

#[test]
fn ctest_failure() {
    let d = diagnosed(
        r"2/3 Test #2: matrix_test ......................***Failed    0.02 sec
3/3 Test #3: io_test ..........................   Passed    0.01 sec

67% tests passed, 1 tests failed out of 3

The following tests FAILED:
	  2 - matrix_test (Failed)
Errors while running CTest",
        Category::TestFailure,
    );
    failing(&d, "matrix_test");
}

#[test]
fn make_with_gcc_error() {
    let d = diagnosed(
        r"gcc -Wall -Werror -O2 -c src/ring.c -o build/ring.o
src/ring.c: In function 'ring_push':
src/ring.c:48:12: error: 'capacity' undeclared (first use in this function)
   48 |     if (n >= capacity)
      |              ^~~~~~~~
make: *** [Makefile:23: build/ring.o] Error 1",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("src/ring.c"), Some(48)));
    assert_eq!(diag.column, Some(12));
}

#[test]
fn make_with_clang_werror() {
    let d = diagnosed(
        r"src/geom/matrix.cpp:61:9: error: unused variable 'tail' [-Werror,-Wunused-variable]
    int tail = 0;
        ^
1 error generated.
make[2]: *** [CMakeFiles/geom.dir/build.make:76: CMakeFiles/geom.dir/src/geom/matrix.cpp.o] Error 1",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("src/geom/matrix.cpp"), Some(61))
    );
}

#[test]
fn cmake_find_package_module() {
    let d = diagnosed(
        r"CMake Error at /usr/share/cmake-3.22/Modules/FindPackageHandleStandardArgs.cmake:230 (message):
  Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)
Call Stack (most recent call first):
  CMakeLists.txt:14 (find_package)
-- Configuring incomplete, errors occurred!",
        Category::DependencyError,
    );
    package(&d, "ZLIB");
}

#[test]
fn cmake_find_package_config() {
    let d = diagnosed(
        r#"CMake Error at CMakeLists.txt:9 (find_package):
  By not providing "Findfmt.cmake" in CMAKE_MODULE_PATH this project has
  asked CMake to find a package configuration file provided by "fmt", but
  CMake did not find one.
-- Configuring incomplete, errors occurred!"#,
        Category::DependencyError,
    );
    package(&d, "fmt");
}

#[test]
fn ld_undefined_reference() {
    let d = diagnosed(
        r"/usr/bin/ld: CMakeFiles/geomtool.dir/src/main.cpp.o: in function `main':
main.cpp:(.text+0x4f): undefined reference to `geom::Matrix::inverse() const'
collect2: error: ld returned 1 exit status
make[2]: *** [CMakeFiles/geomtool.dir/build.make:97: geomtool] Error 1",
        Category::CodeError,
    );
    assert_eq!(first_diagnostic(&d).tool, "ld");
}

// ----------------------------------------------------------------- Haskell

#[test]
fn ghc_type_error_with_error_code() {
    let d = diagnosed(
        r"[3 of 7] Compiling Ledger.Parse     ( src/Ledger/Parse.hs, dist-newstyle/build/x86_64-linux/ghc-9.6.4/ledger-0.2.0/build/Ledger/Parse.o )

src/Ledger/Parse.hs:41:17: error: [GHC-83865]
    • Couldn't match expected type ‘Int’ with actual type ‘Text’
    • In the first argument of ‘amount’, namely ‘raw’",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("src/Ledger/Parse.hs"), Some(41)));
    assert_eq!(diag.code.as_deref(), Some("GHC-83865"));
}

#[test]
fn ghc_missing_module_is_a_dependency_error() {
    let d = diagnosed(
        r"src/Ledger/Json.hs:5:1: error:
    Could not find module ‘Data.Aeson’
    Perhaps you meant Data.Version (from base-4.17.2.1)
    Use -v (or `:set -v` in ghci) to see a list of the files searched for.",
        Category::DependencyError,
    );
    package(&d, "Data.Aeson");
}

#[test]
fn cabal_could_not_resolve() {
    let d = diagnosed(
        r"Resolving dependencies...
Error: cabal: Could not resolve dependencies:
[__0] trying: ledger-0.2.0 (user goal)
[__1] next goal: aeson (dependency of ledger)
[__1] rejecting: aeson-2.2.1.0 (conflict: ledger => aeson>=1.5 && <2.1)
[__1] fail (backjumping, conflict set: aeson, ledger)",
        Category::DependencyError,
    );
    package(&d, "aeson");
}

#[test]
fn stack_build_plan_mismatch() {
    diagnosed(
        r"Error: While constructing the build plan, the following exceptions were encountered:

In the dependencies for ledger-0.2.0:
    aeson-2.2.1.0 from stack configuration does not match >=1.5 && <2.1  (latest matching version is 2.0.3.0)
needed since ledger is a build target.",
        Category::DependencyError,
    );
}

#[test]
fn hspec_failure() {
    diagnosed(
        r#"Ledger.Parse
  parseAmount
    parses a negative amount FAILED [1]

Failures:

  test/Ledger/ParseSpec.hs:14:5:
  1) Ledger.Parse.parseAmount parses a negative amount
       expected: Right (-5)
        but got: Left "invalid""#,
        Category::TestFailure,
    );
}

// ------------------------------------------------------------- Emacs, Vim

#[test]
fn emacs_ert_failure() {
    let d = diagnosed(
        r"Running 14 tests (2024-03-03 10:30:12+0000, selector ‘t’)
   passed   1/14  fold-test-basic (0.000312 sec)
Test fold-test-nested condition:
    (ert-test-failed
     ((should (equal (fold-region 1 9) '(1 . 9)))
      :form (equal (1 . 8) (1 . 9)) :value nil))
   FAILED   2/14  fold-test-nested (0.000410 sec) at test/fold-test.el:33
Ran 14 tests, 13 results as expected, 1 unexpected (2024-03-03 10:30:12+0000, 0.012 sec)",
        Category::TestFailure,
    );
    let t = failing(&d, "fold-test-nested");
    assert_eq!(at(t), (Some("test/fold-test.el"), Some(33)));
}

#[test]
fn emacs_byte_compile_warning_as_error() {
    let d = diagnosed(
        "In end of data:\n\
         fold.el:140:1: Error: the function ‘fold--reset’ is not known to be defined.",
        Category::CodeError,
    );
    assert_eq!(located(first_diagnostic(&d)), (Some("fold.el"), Some(140)));
}

#[test]
fn emacs_package_unavailable() {
    let d = diagnosed(
        "Contacting host: melpa.org:443\n\
         Debugger entered--Lisp error: (error \"Package ‘dash-2.19.1’ is unavailable\")\n\
         \x20 signal(error (\"Package ‘dash-2.19.1’ is unavailable\"))",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "dash").version.as_deref(), Some("2.19.1"));
}

#[test]
fn emacs_archive_download_failure() {
    let d = diagnosed(
        "Importing package-keyring.gpg...done\n\
         Failed to download ‘melpa’ archive.\n\
         Package refresh done",
        Category::DependencyError,
    );
    package(&d, "melpa");
}

#[test]
fn vader_failure() {
    diagnosed(
        r"Starting Vader: 1 suite(s), 6 case(s)
  Starting Vader: test/indent.vader
    (1/6) [EXECUTE] indents a nested block
    (2/6) [ EXPECT] (X) indents a nested block
      - Expected:
            if x
      - Got:
            if y
  Success/Total: 5/6
Success/Total: 5/6 (assertions: 3/4)",
        Category::TestFailure,
    );
}

#[test]
fn themis_tap_reporter() {
    let d = diagnosed(
        r"1..12
ok 1 - fold level returns zero at top
not ok 2 - fold level counts nested folds
# The equal values were expected, but it was not the case.
# tests 12
# passes 11
# fails 1",
        Category::TestFailure,
    );
    failing(&d, "fold level counts nested folds");
}

#[test]
fn vint_violation() {
    let d = diagnosed(
        "autoload/fold.vim:14:5: Use the full option name instead of the abbreviation (see :help option-list)",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("autoload/fold.vim"), Some(14))
    );
}

// ------------------------------------------------- R, Perl, Lua, Clojure

#[test]
fn r_cmd_check_testthat_failure() {
    let d = diagnosed(
        r"* checking tests ...
  Running ‘testthat.R’
 ERROR
Running the tests in ‘tests/testthat.R’ failed.
  ── Failure (test-rounding.R:12:3): round_half_even rounds 2.5 down ─────────────
  round_half_even(2.5) (`actual`) not equal to 2 (`expected`).
  [ FAIL 1 | WARN 0 | SKIP 0 | PASS 31 ]
  Error: Test failures
  Execution halted",
        Category::TestFailure,
    );
    let t = failing(&d, "round_half_even rounds 2.5 down");
    assert_eq!(at(t), (Some("test-rounding.R"), Some(12)));
}

#[test]
fn r_cmd_check_missing_dependency() {
    let d = diagnosed(
        "* installing *source* package ‘geotools’ ...\n\
         ERROR: dependency ‘sf’ is not available for package ‘geotools’\n\
         * removing ‘/home/runner/work/_temp/Library/geotools’",
        Category::DependencyError,
    );
    package(&d, "sf");
}

#[test]
fn perl_prove_failure() {
    let d = diagnosed(
        r"t/01-parse.t .... 1/?
#   Failed test 'parses a quoted field'
#   at t/01-parse.t line 22.
#          got: 'a,b'
#     expected: 'a'
# Looks like you failed 1 test of 9.
t/01-parse.t .... Dubious, test returned 1 (wstat 256, 0x100)
Failed 1/9 subtests
Result: FAIL",
        Category::TestFailure,
    );
    let t = failing(&d, "parses a quoted field");
    assert_eq!(at(t), (Some("t/01-parse.t"), Some(22)));
}

#[test]
fn perl_missing_module() {
    let d = diagnosed(
        "Can't locate JSON/XS.pm in @INC (you may need to install the JSON::XS module) (@INC contains: lib /etc/perl /usr/local/lib/x86_64-linux-gnu/perl/5.34.0) at lib/Acme/Feed.pm line 6.",
        Category::DependencyError,
    );
    package(&d, "JSON/XS.pm");
}

#[test]
fn lua_busted_failure() {
    diagnosed(
        r"●●●◼●●
5 successes / 1 failure / 0 errors / 0 pending : 0.012 seconds

Failure → spec/slug_spec.lua @ 7
slug converts spaces to dashes
spec/slug_spec.lua:9: Expected objects to be equal.
Passed in:
(string) 'hello-world'",
        Category::TestFailure,
    );
}

#[test]
fn luarocks_missing_dependency() {
    let d = diagnosed(
        r"Missing dependencies for slugify 1.0-1:
   utf8 >= 0.1 (not installed)

slugify 1.0-1 depends on utf8 >= 0.1 (not installed)
Error: No results matching query were found for Lua 5.4.",
        Category::DependencyError,
    );
    package(&d, "utf8");
}

#[test]
fn clojure_test_under_leiningen() {
    let d = diagnosed(
        r"lein test acme.money-test

FAIL in (add-different-currencies) (money_test.clj:18)
adding two currencies throws
expected: (thrown? clojure.lang.ExceptionInfo (add eur usd))
  actual: nil

Ran 9 tests containing 21 assertions.
1 failures, 0 errors.
Tests failed.",
        Category::TestFailure,
    );
    let t = failing(&d, "add-different-currencies");
    assert_eq!(at(t), (Some("money_test.clj"), Some(18)));
}

#[test]
fn leiningen_artifact_missing() {
    let d = diagnosed(
        "Retrieving acme/money/2.0.0/money-2.0.0.pom from clojars\n\
         Could not find artifact acme:money:jar:2.0.0 in central (https://repo1.maven.org/maven2/)\n\
         Could not find artifact acme:money:jar:2.0.0 in clojars (https://repo.clojars.org/)\n\
         This could be due to a typo in :dependencies, file system permissions, or network issues.",
        Category::DependencyError,
    );
    assert!(
        d.facts
            .packages
            .iter()
            .any(|p| p.name.starts_with("acme:money")),
        "{:#?}",
        d.facts
    );
}

// ------------------------------------------------------------------- LaTeX

#[test]
fn latex_undefined_control_sequence() {
    diagnosed(
        r"(./chapters/results.tex
! Undefined control sequence.
l.42 \bibcitep
              {smith2020}
?
! Emergency stop.",
        Category::CodeError,
    );
}

#[test]
fn latex_missing_style_file() {
    let d = diagnosed(
        r"! LaTeX Error: File `siunitx.sty' not found.

Type X to quit or <RETURN> to proceed,
or enter new name. (Default extension: sty)

Enter file name:
! Emergency stop.",
        Category::DependencyError,
    );
    package(&d, "siunitx.sty");
}

// --------------------------------------------------- Docs and shell linters

#[test]
fn markdownlint_cli() {
    let d = diagnosed(
        "docs/setup.md:14 MD009/no-trailing-spaces Trailing spaces [Expected: 0 or 2; Actual: 1]\n\
         docs/setup.md:40:81 MD013/line-length Line length [Expected: 80; Actual: 96]",
        Category::CodeError,
    );
    let diag = first_diagnostic(&d);
    assert_eq!(located(diag), (Some("docs/setup.md"), Some(14)));
    assert_eq!(diag.code.as_deref(), Some("MD009"));
}

#[test]
fn markdownlint_ruby_mdl() {
    let d = diagnosed(
        "docs/setup.md:14: MD009 Trailing spaces\n\
         \n\
         A detailed description of the rules is available at https://github.com/markdownlint/markdownlint/blob/main/docs/RULES.md",
        Category::CodeError,
    );
    assert_eq!(first_diagnostic(&d).code.as_deref(), Some("MD009"));
}

#[test]
fn shellcheck_tty() {
    let d = diagnosed(
        r"In scripts/deploy.sh line 12:
cp $SRC /opt/app/
   ^--^ SC2086 (info): Double quote to prevent globbing and word splitting.

For more information:
  https://www.shellcheck.net/wiki/SC2086 -- Double quote to prevent globbing ...",
        Category::CodeError,
    );
    assert_eq!(
        located(first_diagnostic(&d)),
        (Some("scripts/deploy.sh"), Some(12))
    );
}

// ------------------------------------------------------ CI configuration

#[test]
fn travis_yaml_syntax_error() {
    diagnosed(
        "(<unknown>): did not find expected key while parsing a block mapping at line 12 column 3",
        Category::ConfigError,
    );
}

#[test]
fn github_actions_invalid_workflow() {
    diagnosed(
        "Invalid workflow file: .github/workflows/ci.yml#L14\n\
         The workflow is not valid. .github/workflows/ci.yml (Line: 14, Col: 9): Unexpected value 'run-on'",
        Category::ConfigError,
    );
}

#[test]
fn github_actions_missing_required_input() {
    diagnosed(
        "Run acme/publish-action@v2\nError: Input required and not supplied: token",
        Category::ConfigError,
    );
}

#[test]
fn shell_unset_secret() {
    diagnosed(
        "+ echo \"//registry.npmjs.org/:_authToken=${NPM_TOKEN:?}\"\n\
         ./scripts/publish.sh: line 7: NPM_TOKEN: parameter null or not set",
        Category::ConfigError,
    );
}

#[test]
fn shell_unbound_variable() {
    diagnosed(
        "./ci/deploy.sh: line 3: DEPLOY_HOST: unbound variable\n\
         Error: Process completed with exit code 1.",
        Category::ConfigError,
    );
}

#[test]
fn github_actions_command_not_found() {
    diagnosed(
        "/home/runner/work/_temp/3f1a9c2e.sh: line 1: yarn: command not found\n\
         Error: Process completed with exit code 127.",
        Category::ConfigError,
    );
}

#[test]
fn windows_command_not_recognized() {
    diagnosed(
        "'make' is not recognized as an internal or external command,\n\
         operable program or batch file.",
        Category::ConfigError,
    );
}

#[test]
fn setup_python_unsupported_version() {
    diagnosed(
        "Run actions/setup-python@v5\n\
         Error: Version 3.5 with arch x64 not found\n\
         The list of all available versions can be found here: https://raw.githubusercontent.com/actions/python-versions/main/versions-manifest.json",
        Category::ConfigError,
    );
}

#[test]
fn nvm_unknown_node_version() {
    diagnosed(
        "$ nvm install 4.0.1\n\
         Version '4.0.1' not found - try `nvm ls-remote` to browse available versions.",
        Category::ConfigError,
    );
}

#[test]
fn jenkins_unknown_dsl_method() {
    diagnosed(
        "java.lang.NoSuchMethodError: No such DSL method 'withMavn' found among steps [archiveArtifacts, bat, build, checkout, echo, sh]",
        Category::ConfigError,
    );
}

#[test]
fn jenkins_declarative_pipeline_error() {
    diagnosed(
        r#"org.codehaus.groovy.control.MultipleCompilationErrorsException: startup failed:
WorkflowScript: 23: Invalid agent type "dokcer" specified. Must be one of [any, docker, dockerfile, label, none] @ line 23, column 9.
       agent { dokcer 'node:20' }
           ^

1 error"#,
        Category::ConfigError,
    );
}

#[test]
fn jenkins_missing_credentials() {
    diagnosed(
        "[Pipeline] withCredentials\n\
         ERROR: Could not find credentials entry with ID 'npm-publish-token'\n\
         [Pipeline] End of Pipeline\n\
         Finished: FAILURE",
        Category::ConfigError,
    );
}

#[test]
fn travis_unsupported_python_version() {
    diagnosed(
        "$ source ~/virtualenv/python3.13/bin/activate\n\
         python3.13 is not installed; attempting download\n\
         Unable to download 3.13 archive. The archive may not exist. Please consider a different version.",
        Category::ConfigError,
    );
}

// ---------------------------------------------------------- infrastructure

#[test]
fn travis_no_output_for_ten_minutes() {
    diagnosed(
        "No output has been received in the last 10m0s, this potentially indicates a stalled build or something wrong with the build itself.\n\
         Check the details on how to adjust your build configuration on: https://docs.travis-ci.com/user/common-build-problems/#build-times-out-because-no-output-was-received\n\
         The build has been terminated",
        Category::InfraError,
    );
}

#[test]
fn travis_job_time_limit() {
    diagnosed(
        "The job exceeded the maximum time limit for jobs, and has been terminated.",
        Category::InfraError,
    );
}

#[test]
fn a_command_the_timeout_utility_stopped_is_the_time_limit() {
    // Written for this test: rake reporting that `timeout` (exit status
    // 124) stopped the test command it ran.
    diagnosed(
        "Acceptance: Basket - checkout\n\
         rake aborted!\n\
         Command failed with status (124): [node /home/ci/shop/vendor/run-qunit.js http://localhost:60099/qunit 1200000]\n\
         /home/ci/shop/lib/tasks/qunit.rake:92:in `block in <main>'",
        Category::InfraError,
    );
}

#[test]
fn github_actions_job_time_limit() {
    diagnosed(
        "##[error]The job running on runner GitHub Actions 12 has exceeded the maximum execution time of 360 minutes.",
        Category::InfraError,
    );
}

#[test]
fn oom_killed_exit_137() {
    diagnosed(
        "[builder 4/7] RUN npm run build\n\
         Killed\n\
         Error: Process completed with exit code 137.",
        Category::InfraError,
    );
}

#[test]
fn compiler_killed_by_the_oom_killer() {
    diagnosed(
        "c++: fatal error: Killed signal terminated program cc1plus\n\
         compilation terminated.\n\
         make[2]: *** [CMakeFiles/geom.dir/build.make:90: CMakeFiles/geom.dir/src/big.cpp.o] Error 1",
        Category::InfraError,
    );
}

#[test]
fn dns_resolution_failure() {
    diagnosed(
        "Cloning into 'ledger'...\n\
         fatal: unable to access 'https://github.com/acme/ledger.git/': Could not resolve host: github.com",
        Category::InfraError,
    );
}

#[test]
fn disk_full() {
    diagnosed(
        "failed to register layer: write /var/lib/docker/overlay2/3c1f/diff/usr/lib/libLLVM.so: no space left on device",
        Category::InfraError,
    );
}

#[test]
fn docker_daemon_not_running() {
    diagnosed(
        "+ docker build -t acme/ledger .\n\
         Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
        Category::InfraError,
    );
}

// ------------------------------------------- errors, not failures, in tests

#[test]
fn ruby_reports_an_uncaught_exception_at_load_time() {
    let d = diagnosed(
        "/home/ci/build/shop/lib/basket.rb:12:in `<class:Basket>': uninitialized constant Basket::Line (NameError)\n\
         \tfrom /home/ci/build/shop/lib/basket.rb:3:in `<top (required)>'\n\
         rake aborted!\n\
         Command failed with status (1): [ruby -Ilib spec/basket_spec.rb]\n",
        Category::CodeError,
    );
    assert_eq!(d.findings[0].rule, "ruby.uncaught");
    // A missing gem is not the code's.
    diagnosed(
        "/usr/lib/ruby/2.7.0/rubygems/core_ext/kernel_require.rb:92:in `require': cannot load such file -- nokogiri (LoadError)\n",
        Category::DependencyError,
    );
}

#[test]
fn a_name_missing_from_the_projects_own_module_is_code_a_libraries_is_a_dependency() {
    diagnosed(
        "E   ImportError: cannot import name 'total_of' from 'shop.basket' (/home/ci/build/shop/shop/basket.py)\n\
         ERROR tests/test_basket.py\n",
        Category::CodeError,
    );
    diagnosed(
        "E   ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/opt/venv/lib/python3.9/site-packages/markupsafe/__init__.py)\n\
         ERROR tests/test_views.py\n",
        Category::DependencyError,
    );
}

#[test]
fn test_runners_that_count_errors_apart_from_failures_say_the_code_crashed() {
    // PHPUnit: an engine error, counted as an error.
    diagnosed(
        "There was 1 error:\n\n1) Shop\\Tests\\BasketTest::testAdd\n\
         Error: Call to a member function push() on null\n\n\
         /home/ci/build/shop/src/Basket.php:10\n\nERRORS!\nTests: 12, Assertions: 20, Errors: 1.\n",
        Category::CodeError,
    );
    // JUnit via Surefire: errors, no failures, even when the exception
    // line itself was not read.
    diagnosed(
        "Results :\n\nTests in error: \n  BasketTest.addsLine:20 » IllegalState\n\n\
         Tests run: 40, Failures: 0, Errors: 1, Skipped: 0\n",
        Category::CodeError,
    );
    // unittest and minitest.
    diagnosed(
        "ERROR: test_total (tests.test_basket.BasketTest)\n----\nRan 12 tests in 0.010s\n\nFAILED (errors=1)\n",
        Category::CodeError,
    );
    diagnosed(
        "  1) Error:\nBasketTest#test_add:\n\n12 runs, 20 assertions, 0 failures, 1 errors, 0 skips\n",
        Category::CodeError,
    );
    // Failures (assertions) stay test failures.
    diagnosed(
        "Failed tests: \n  BasketTest.addsLine:20 expected:<3> but was:<2>\n\n\
         Tests run: 40, Failures: 1, Errors: 0, Skipped: 0\n",
        Category::TestFailure,
    );
}

#[test]
fn a_runtime_denied_a_permission_is_a_configuration_error() {
    for line in [
        "PermissionError: [Errno 13] Permission denied: '/var/cache/shop/index.db'",
        "Errno::EACCES: Permission denied @ rb_sysopen - /usr/local/bin/shop",
        "npm ERR! Error: EACCES: permission denied, mkdir '/usr/local/lib/node_modules/shop-cli'",
    ] {
        diagnosed_by(line, Category::ConfigError, "os.permission");
    }
    // The shell's own refusal to run a file is the shell's finding alone.
    diagnosed_by(
        "sh: 1: ./gradlew: Permission denied",
        Category::ConfigError,
        "shell.permission",
    );
    // The same errno's "no such file" is not the configuration's: a test's
    // or the code's own file, by the evidence of real fixes.
    diagnosed(
        "FileNotFoundError: [Errno 2] No such file or directory: 'fixtures/basket.json'",
        Category::CodeError,
    );
}

#[test]
fn a_key_error_on_an_environment_variable_name_is_a_configuration_error() {
    for text in [
        "KeyError: 'SHOP_API_TOKEN'",
        "E       KeyError: 'DATABASE_URL'",
    ] {
        let d = diagnosed_by(text, Category::ConfigError, "env.key_error");
        assert!(d.confidence > 0.7, "no runner-up: {}", d.confidence);
    }
    // A dictionary's own key is the code's.
    diagnosed("KeyError: 'basket'", Category::CodeError);
    diagnosed(
        "Error: Missing required environment variable SHOP_API_TOKEN",
        Category::ConfigError,
    );
}

#[test]
fn tool_versions_and_requirements_that_were_not_met() {
    diagnosed(
        "You must use Bundler 2 or greater with this lockfile.",
        Category::ConfigError,
    );
    diagnosed(
        "Could not find a valid gem 'shop-client' (= 9.9.9), here is why:",
        Category::DependencyError,
    );
    diagnosed(
        "configure: error: Package requirements (glib-2.0 >= 2.40) were not met:",
        Category::DependencyError,
    );
    diagnosed(
        "fatal: unable to access 'https://git.example.com/shop/shop.git/': The requested URL returned error: 502",
        Category::InfraError,
    );
}

#[test]
fn a_native_library_missing_at_load_time_is_a_dependency_error_whoever_raised_it() {
    for line in [
        "OSError: cannot load library 'libshopgfx.so.2': libshopgfx.so.2: cannot open shared object file: No such file or directory",
        "E   ImportError: libshopgl.so.1: cannot open shared object file: No such file or directory",
        // macOS's loader, and .NET's for an assembly.
        "dyld: Library not loaded: @rpath/ShopKit.framework/ShopKit",
        "System.IO.FileNotFoundException: Could not load file or assembly 'Shop.Pricing, Version=2.0.0.0, Culture=neutral, PublicKeyToken=null' or one of its dependencies.",
    ] {
        diagnosed_by(line, Category::DependencyError, "ld.missing_lib");
    }
}

#[test]
fn a_module_path_of_the_project_is_the_code_s_and_a_package_name_the_dependency_s() {
    for line in [
        "Error: Cannot find module '../lib/basket'",
        "Module not found: Error: Can't resolve './Basket' in '/home/runner/work/shop/shop/src'",
        // An absolute path is a file, not a package name.
        "Error: Cannot find module '/home/runner/work/shop/shop/dist/server.js'",
    ] {
        diagnosed_by(line, Category::CodeError, "node.missing_own_module");
    }
    for line in [
        "Error: Cannot find module 'shop-client'",
        "Module not found: Error: Can't resolve 'shop-client' in '/home/runner/work/shop/shop/src'",
        "src/basket.ts(3,22): error TS7016: Could not find a declaration file for module 'shop-client'.",
        // A file inside an installed package is the package's.
        "Error: Cannot find module '/home/runner/work/shop/shop/node_modules/shop-client/index.js'",
    ] {
        diagnosed(line, Category::DependencyError);
    }
}

#[test]
fn a_service_the_environment_was_to_provide_is_down_or_reached_with_the_wrong_account() {
    for line in [
        "Mysql2::Error: Can't connect to local MySQL server through socket '/var/run/mysqld/mysqld.sock' (2)",
        "MongoError: failed to connect to server [localhost:27017] on first connect",
        "ActiveRecord::ConnectionNotEstablished: could not connect to server: No such file or directory",
    ] {
        diagnosed(line, Category::InfraError);
    }
    for line in [
        "psql: FATAL:  password authentication failed for user \"shop\"",
        "ActiveRecord::NoDatabaseError: FATAL:  database \"shop_test\" does not exist",
        "Mysql2::Error: Access denied for user 'shop'@'localhost' (using password: NO)",
        "org.openqa.selenium.SessionNotCreatedException: session not created: This version of ChromeDriver only supports Chrome version 79",
    ] {
        diagnosed(line, Category::ConfigError);
    }
}

#[test]
fn runtimes_and_platforms_the_configuration_asks_for_and_the_machine_lacks() {
    for log in [
        // pip refusing a package's Requires-Python.
        "ERROR: Package 'shopcart' requires a different Python: 2.7.18 not in '>=3.8'",
        // The Android SDK platform or licence the build names.
        "> Failed to find target with hash string 'android-33' in: /opt/android-sdk",
        "> You have not accepted the license agreements of the following SDK components:\n  [Android SDK Build-Tools 33.0.1].",
        // dash, with its path, on a command the configuration expects.
        "/bin/sh: 1: shopcart-lint: not found",
    ] {
        diagnosed(log, Category::ConfigError);
    }
}

#[test]
fn a_mix_dependency_that_does_not_compile_is_the_dependency_s() {
    let d = diagnosed(
        "==> plugcart\n** (Mix) Could not compile dependency :plugcart, \"mix compile\" failed. Errors may have been logged above.",
        Category::DependencyError,
    );
    assert_eq!(package(&d, "plugcart").name, "plugcart");
}

#[test]
fn the_network_the_mirror_and_the_machine_in_the_tools_own_words() {
    for log in [
        // Gradle's and Maven's wording of a repository's 5xx.
        "> Could not resolve com.acme:shopcart:2.1.\n   > Could not GET 'https://repo.example.org/com/acme/shopcart/2.1/shopcart-2.1.pom'. Received status code 502 from server: Bad Gateway",
        // yarn's socket timeout, libcurl's timeout, rsync's dropped link.
        "error An unexpected error occurred: \"https://registry.example.org/shopcart/-/shopcart-1.0.0.tgz: ESOCKETTIMEDOUT\".",
        "Error: Timeout was reached",
        "rsync: connection unexpectedly closed (0 bytes received so far) [sender]",
        // apt on a mirror caught mid-sync, and on DNS.
        "E: Failed to fetch http://mirror.example.org/pool/main/s/shopcart/shopcart_1.0_amd64.deb  Hash Sum mismatch",
        "Err:3 http://mirror.example.org/ubuntu focal InRelease\n  Temporary failure resolving 'mirror.example.org'",
        // the kernel killing the compiler or make's child.
        "c++: internal compiler error: Killed (program cc1plus)",
        "make[2]: *** [src/CMakeFiles/shopcart.dir/basket.cpp.o] Killed",
        // Bundler and GnuPG failing to fetch.
        "Could not fetch specs from https://gems.example.org/",
        "gpg: keyserver receive failed: No data",
        // the Docker CLI's newer wording; a database the JDBC driver cannot reach.
        "Failed to connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
        "com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure",
        "org.postgresql.util.PSQLException: Connection to localhost:5432 refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.",
    ] {
        diagnosed(log, Category::InfraError);
    }
    // A package the mirror no longer has is not the network.
    let d = diagnose_text(
        "E: Failed to fetch http://mirror.example.org/pool/main/s/shopcart/shopcart_1.0_amd64.deb  404  Not Found [IP: 10.0.0.1 80]",
    );
    assert_eq!(d.category, Category::DependencyError);
}

#[test]
fn apt_s_warnings_are_not_the_failure_its_errors_are() {
    // Written for this test: `apt-get update` warns about a source it
    // could not reach and carries on with the others; a `W:` line is not
    // why a job failed. The same words behind `E:` are.
    for line in [
        "W: Failed to fetch http://ppa.example.net/shop/ubuntu/dists/focal/InRelease  Could not connect to ppa.example.net:80 (203.0.113.7), connection timed out",
        "W: Failed to fetch http://mirror.example.org/ubuntu/dists/focal/main/binary-amd64/Packages  Hash Sum mismatch",
    ] {
        not_diagnosed(line, Category::InfraError);
    }
    diagnosed(
        "E: Failed to fetch http://ppa.example.net/shop/ubuntu/pool/main/s/shopcart/shopcart_1.0_amd64.deb  Could not connect to ppa.example.net:80 (203.0.113.7), connection timed out",
        Category::InfraError,
    );
}

#[test]
fn an_installed_library_built_against_another_version_is_a_dependency() {
    // Written for this test: a wheel's extension module built against
    // another version of its native library.
    diagnosed_by(
        "ImportError: /opt/venv/lib/python3.11/site-packages/shopcart/_speedups.cpython-311-x86_64-linux-gnu.so: undefined symbol: cart_total_v2",
        Category::DependencyError,
        "ld.missing_lib",
    );
    // The project's own extension module is its code.
    not_diagnosed(
        "ImportError: /home/ci/shop/build/lib/shopcart/_speedups.so: undefined symbol: cart_total_v2",
        Category::DependencyError,
    );
}

#[test]
fn network_failures_in_more_runtimes_and_package_managers_own_words() {
    for log in [
        // Go's HTTP client; yarn's retry notice; curl's older resolver wording.
        "Get \"https://proxy.example.org/shopcart/@v/list\": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)",
        "info There appears to be trouble with your network connection. Retrying...",
        "curl: (6) Couldn't resolve host 'downloads.example.org'",
        "curl: (52) Empty reply from server",
        // Python's http.client and urllib3, in words rather than by type.
        "http.client.RemoteDisconnected: Remote end closed connection without response",
        "ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='pypi.example.org', port=443): Max retries exceeded with url: /simple/shopcart/",
        "urllib.error.HTTPError: HTTP Error 502: Proxy Error",
        "ssl.SSLEOFError: EOF occurred in violation of protocol (_ssl.c:2396)",
        // RubyGems, the JDK's TLS, Apache HttpClient, .NET and NuGet.
        "ERROR:  While executing gem ... (Gem::RemoteFetcher::UnknownHostError)\n    timed out (https://gems.example.org/specs.4.8.gz)",
        "javax.net.ssl.SSLHandshakeException: Remote host terminated the handshake",
        "org.apache.http.conn.HttpHostConnectException: Connect to repo.example.org:443 failed",
        "error : Unable to load the service index for source https://feed.example.org/v3/index.json.",
        "Unhandled exception. ---> The remote server returned an error: (503) Server Unavailable.",
        // bash reporting that the kernel killed its child.
        "./ci/test.sh: line 12:  4711 Killed                  python -m pytest tests",
        // Testcontainers without a Docker daemon.
        "java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration",
    ] {
        diagnosed(log, Category::InfraError);
    }
    // The logout script killing a server the job left running is clean-up.
    diagnosed(
        "/home/ci/.bash_logout: line 4:  3346 Killed                  java -jar ./target/shop-server.war",
        Category::Unknown,
    );
    // A test that expects a server error from its own handler is not the network.
    diagnosed(
        "FAILED tests/test_api.py::test_refund - AssertionError: expected status 503, got 200",
        Category::TestFailure,
    );
}

#[test]
fn configuration_paths_credentials_and_files_in_the_tools_own_words() {
    for log in [
        // The JVM launcher; an SDK home the environment was to set.
        "Error: Could not find or load main class com.acme.shop.Main",
        "ERROR: JAVA_HOME is set to an invalid directory: /usr/lib/jvm/java-99",
        "Error: ANDROID_HOME is not set and \"android\" command not in your PATH.",
        // Gradle's own build script does not compile.
        "FAILURE: Build failed with an exception.\n\n* Where:\nBuild file '/home/ci/shop/build.gradle' line: 12\n\n* What went wrong:\nCould not compile build file '/home/ci/shop/build.gradle'.\n> startup failed:",
        // Test runners pointed at paths that are not there.
        "ERROR: file or package not found: tests/unit",
        "ERROR: file not found: tests/test_basket.py",
        "Error: No test files found: \"test/unit\"",
        // git: credentials, a missing repository, a shallow clone's tags.
        "fatal: repository 'https://git.example.org/acme/private.git/' not found",
        "remote: Repository not found.\nfatal: Authentication failed",
        "Host key verification failed.\nfatal: Could not read from remote repository.",
        "git@git.example.org: Permission denied (publickey).",
        "fatal: No names found, cannot describe anything.",
        // coreutils on a path the script names.
        "cp: cannot stat 'config/settings.yml.example': No such file or directory",
        "./ci/build.sh: line 3: cd: tools: No such file or directory",
        "sh: 1: ./node_modules/.bin/shopcart-lint: not found",
        // Project files and manifests the build tool cannot find or parse.
        "error: could not find `Cargo.toml` in `/srv/ci/shop` or any parent directory",
        "The SDK 'Microsoft.NET.Sdk.Shop' specified could not be found.",
        "MSBUILD : error MSB1003: Specify a project or solution file. The current working directory does not contain a project or solution file.",
        "Could not locate Gemfile or .bundle/ directory",
        "[!] Invalid `Podfile` file: syntax error, unexpected end-of-input.",
        "ERROR: Invalid requirement: 'shopcart=1.0'",
        "django.core.exceptions.ImproperlyConfigured: Requested setting DATABASES, but settings are not configured.",
        "ERROR: In file './docker-compose.yml', service 'web' must be a mapping not a string.",
        "yaml.scanner.ScannerError: mapping values are not allowed here\n  in \"ci/matrix.yml\", line 4, column 9",
        // Command-line usage errors (click, argparse).
        "Usage: shopcart [OPTIONS] COMMAND [ARGS]...\nError: No such command 'deploy'.",
        "usage: release.py [-h] --token TOKEN\nrelease.py: error: the following arguments are required: --token",
    ] {
        diagnosed(log, Category::ConfigError);
    }
}

#[test]
fn dependency_resolution_and_builds_in_the_package_managers_own_words() {
    for log in [
        "pkg_resources.ContextualVersionConflict: (six 1.10.0 (/usr/lib/python3/dist-packages), Requirement.parse('six>=1.12'), {'shopcart'})",
        "No local packages or working download links found for shopcart>=2\nerror: Could not find suitable distribution for Requirement.parse('shopcart>=2')",
        "Could not satisfy constraints for package 'shopcart'",
        "error: Setup script exited with error: command 'x86_64-linux-gnu-gcc' failed with exit status 1",
        "error: Microsoft Visual C++ 14.0 is required. Get it with \"Build Tools for Visual Studio\"",
        "node-pre-gyp ERR! build error",
        "error https://registry.example.org/shopcart/-/shopcart-2.0.0.tgz: Request failed \"404 Not Found\"",
        "Error: composer.lock is out of date",
        "Your lock file does not contain a compatible set of packages. Please run composer update.",
        "npm ERR! cipm can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync.",
    ] {
        diagnosed(log, Category::DependencyError);
    }
}

#[test]
fn a_jsp_page_that_does_not_compile_is_a_code_error() {
    for log in [
        "[ERROR] Failed to execute goal org.eclipse.jetty:jetty-jspc-maven-plugin:9.4.8:jspc (jspc) on project shop-web: Failure processing jsps\n[ERROR] An error occurred at line: 12 in the jsp file: /cart-summary.jsp\n[ERROR] Unreachable code",
        "org.apache.jasper.JasperException: An error occurred at line: [7] in the jsp file: [/WEB-INF/views/basket.jsp]",
        "org.apache.jasper.JasperException: Unable to compile class for JSP",
    ] {
        diagnosed_by(log, Category::CodeError, "jsp.compile");
    }
}

/// A Maven build whose only stack trace was printed by a test class that
/// then passed, and whose failure is elsewhere (`tail`).
fn surefire_log(clean_class: bool, tail: &str) -> String {
    let verdict = if clean_class {
        "Tests run: 3, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.4 sec - in com.acme.shop.CartTest"
    } else {
        "Tests run: 3, Failures: 0, Errors: 1, Skipped: 0, Time elapsed: 0.4 sec <<< FAILURE! - in com.acme.shop.CartTest"
    };
    let mut log = String::from(
        "$ mvn -B verify\n[INFO] Scanning for projects...\n\n-------------------------------------------------------\n T E S T S\n-------------------------------------------------------\n",
    );
    for i in 0..30 {
        log.push_str(&format!("Running com.acme.shop.Other{i}Test\nTests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.01 sec - in com.acme.shop.Other{i}Test\n"));
    }
    log.push_str("Running com.acme.shop.CartTest\nemptying the cart of a closed session\njava.lang.IllegalStateException: session closed\n\tat com.acme.shop.Cart.clear(Cart.java:41)\n\tat com.acme.shop.CartTest.clearsClosed(CartTest.java:19)\n");
    log.push_str(verdict);
    log.push_str("\n\nResults :\n\nTests run: 63, Failures: 0, Errors: 0, Skipped: 0\n\n");
    log.push_str(tail);
    log.push_str(
        "\nThe command \"mvn -B verify\" exited with 1.\n\nDone. Your build exited with 1.\n",
    );
    log
}

/// The excerpt the worker's `log_excerpt` tool takes of `log`.
pub(super) fn excerpt_of_text(log: &str) -> crate::logs::Excerpt {
    crate::logs::excerpt_reader(
        std::io::Cursor::new(log.as_bytes().to_vec()),
        &crate::logs::ExcerptOptions {
            max_lines: EXCERPT_LINES,
            ..crate::logs::ExcerptOptions::default()
        },
    )
    .expect("reads from memory")
}

#[test]
fn what_a_test_class_printed_before_it_passed_is_not_read_as_the_failure() {
    // Nothing else failed in the log: the trace of a class that passed is
    // no uncaught error (it decided CODE_ERROR before; what is left is the
    // failed step's own prior, below auto-completion).
    // Nor is it shown (session 34): the step's last lines are.
    let ex = excerpt_of_text(&surefire_log(true, "[INFO] BUILD FAILURE"));
    assert!(
        !ex.lines
            .iter()
            .any(|l| l.text.contains("IllegalStateException")),
        "the excerpt shows the passed class's trace: {ex:#?}"
    );
    assert!(!ex.passed.is_empty(), "{ex:#?}");
    let d = diagnose(&ex);
    assert!(d.decided_by.starts_with("failed step"), "{d:#?}");
    assert!(d.confidence < 0.5, "{d:#?}");
    assert!(
        d.findings.iter().all(|f| f.rule != "java.exception"),
        "{d:#?}"
    );
    // The same trace in the class that errored is the failure.
    let d = diagnose(&excerpt_of_text(&surefire_log(
        false,
        "[INFO] BUILD FAILURE",
    )));
    assert_eq!(d.category, Category::CodeError, "{d:#?}");
    assert!(d.decided_by.starts_with("java.exception"), "{d:#?}");
    // With the class's trace out of the way, the build's real error is read.
    let d = diagnose(&excerpt_of_text(&surefire_log(
        true,
        "[ERROR] Failed to execute goal org.eclipse.jetty:jetty-jspc-maven-plugin:9.4.8:jspc (jspc) on project shop-web: Failure processing jsps\n[ERROR] An error occurred at line: 12 in the jsp file: /cart-summary.jsp\n[ERROR] Unreachable code\n[ERROR] -> [Help 1]",
    )));
    assert_eq!(d.category, Category::CodeError, "{d:#?}");
    assert!(d.decided_by.contains("jsp.compile"), "{d:#?}");
}

#[test]
fn a_connection_error_a_passing_jest_file_logged_does_not_outweigh_the_failed_test() {
    let log = "\
$ npm test

> shop@1.0.0 test /home/travis/build/acme/shop
> jest --ci

 FAIL  src/cart/checkout.test.js
  ● checkout › totals the basket

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 3

      10 |   const total = checkout(basket);
    > 11 |   expect(total).toBe(4);
         |                 ^

      at Object.<anonymous> (src/cart/checkout.test.js:11:17)

 PASS  src/cart/cache.test.js
  ● Console

    console.error
      Error: connect ECONNREFUSED 127.0.0.1:6379
          at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 7 passed, 8 total
Snapshots:   0 total
Time:        2.31 s
Ran all test suites.
npm ERR! Test failed.  See above for more details.
The command \"npm test\" exited with 1.

Done. Your build exited with 1.
";
    let ex = excerpt_of_text(log);
    assert_eq!(ex.passed.len(), 1, "{ex:#?}");
    let d = diagnose(&ex);
    assert_eq!(d.category, Category::TestFailure, "{d:#?}");
    assert!(
        d.findings
            .iter()
            .all(|f| f.category != Category::InfraError),
        "{d:#?}"
    );
}

#[test]
fn a_connection_error_a_passing_mocha_pytest_or_gradle_test_printed_is_not_the_cause() {
    // Written for this test: each runner's own bracket of a test that
    // passed (a spec reporter's marks, pytest's `-v -s`, Gradle's standard
    // streams) holds a refused connection the test exercised; the job
    // failed on an assertion reported later.
    let mocha = "\
$ npm test

> shop@1.4.0 test /home/travis/build/acme/shop
> mocha --reporter spec test/

  cart
    \u{2713} totals the basket
  cache
Error: connect ECONNREFUSED 127.0.0.1:6379
    at TCPConnectWrap.afterConnect [as oncomplete] (net.js:1107:14)
    \u{2713} falls back to memory when redis is down (55ms)
  checkout
    1) charges the card

  2 passing (1s)
  1 failing

  1) checkout
       charges the card:

      AssertionError: expected 1999 to equal 2000
      at Context.<anonymous> (test/checkout.test.js:21:30)

npm ERR! Test failed.  See above for more details.

The command \"npm test\" exited with 1.
";
    let pytest = "\
$ pytest -v -s tests/
============================= test session starts ==============================
collected 3 items

tests/test_cache.py::test_totals PASSED
tests/test_cache.py::test_falls_back_to_memory connecting to redis
redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.
PASSED
tests/test_checkout.py::test_charge FAILED

=================================== FAILURES ===================================
_________________________________ test_charge __________________________________

    def test_charge():
>       assert charge(basket) == 2000
E       assert 1999 == 2000

tests/test_checkout.py:21: AssertionError
====================== 1 failed, 2 passed in 0.31 seconds ======================
The command \"pytest -v -s tests/\" exited with 1.
";
    let gradle = "\
$ ./gradlew test
> Task :test

com.acme.shop.CacheTest > fallsBackToMemory() STANDARD_ERROR
    java.net.ConnectException: Connection refused (Connection refused)
        at java.base/sun.nio.ch.Net.connect0(Native Method)
com.acme.shop.CacheTest > fallsBackToMemory() PASSED

com.acme.shop.CheckoutTest > charges() FAILED
    org.opentest4j.AssertionFailedError: expected: <2000> but was: <1999>
        at com.acme.shop.CheckoutTest.charges(CheckoutTest.java:21)

2 tests completed, 1 failed

> Task :test FAILED

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':test'.
> There were failing tests. See the report at: file:///home/travis/build/acme/shop/build/reports/tests/test/index.html

BUILD FAILED in 12s
The command \"./gradlew test\" exited with 1.
";
    for (runner, log) in [("mocha", mocha), ("pytest", pytest), ("gradle", gradle)] {
        let ex = excerpt_of_text(log);
        assert!(!ex.passed.is_empty(), "{runner}: {ex:#?}");
        let d = diagnose(&ex);
        assert_eq!(d.category, Category::TestFailure, "{runner}: {d:#?}");
        assert!(
            d.findings
                .iter()
                .all(|f| f.category != Category::InfraError),
            "{runner}: {d:#?}"
        );
    }
}

#[test]
fn a_network_error_after_the_failed_steps_footer_is_not_its_cause() {
    // Written for this test: a Travis job whose docs build failed, then
    // whose cache upload met a dropped connection on the way out.
    let log = |after: &str| {
        format!(
            "$ sphinx-build -nW -b html . _build/html\n\
             Running Sphinx v1.5.1\n\
             writing output... [100%] index\n\
             \n\
             Warning, treated as error:\n\
             /home/ci/docs/guide/install.rst:7: WARNING: unknown document: ../setup/intro\n\
             \n\
             The command \"sphinx-build -nW -b html . _build/html\" exited with 1.\n\
             {after}\
             \n\
             Done. Your build exited with 1.\n"
        )
    };
    let d = diagnose(&excerpt_of_text(&log(
        "store build cache\nchanges detected, packing new archive\nuploading archive\nfailed to upload cache\ncurl: (56) Recv failure: Connection reset by peer\n",
    )));
    assert_eq!(d.category, Category::CodeError, "{d:#?}");
    // The same connection error before the footer is the step's.
    let d = diagnose(&excerpt_of_text(
        "$ ./ci/fetch-fixtures.sh\n\
         curl: (56) Recv failure: Connection reset by peer\n\
         The command \"./ci/fetch-fixtures.sh\" exited with 56.\n\
         \n\
         Done. Your build exited with 1.\n",
    ));
    assert_eq!(d.category, Category::InfraError, "{d:#?}");
}

#[test]
fn a_cause_inside_a_build_tool_s_wrapper_line_is_read_and_decides() {
    // Written for this test: Travis jobs whose only failure line is a
    // package manager's or Maven's wrapper naming the cause.
    let job = |cmd: &str, body: &str| {
        format!(
            "$ git clone --depth=50 https://github.com/example/shelf.git\n\
             $ {cmd}\n{body}\n\
             The command \"{cmd}\" exited with 1.\n\
             \n\
             Done. Your build exited with 1.\n"
        )
    };
    for (cmd, body, want, rule) in [
        (
            "npm run lint",
            "npm ERR! missing script: lint\n\
             npm ERR! A complete log of this run can be found in:\n\
             npm ERR!     /home/travis/.npm/_logs/2019-03-02T10_00_00_000Z-debug.log",
            Category::ConfigError,
            "npm.missing_script",
        ),
        (
            "mvn -B install",
            "[INFO] BUILD FAILURE\n\
             [INFO] ------------------------------------------------------------------------\n\
             [ERROR] Failed to execute goal on project shelf: Could not resolve dependencies for project org.example:shelf:jar:1.0: Could not find artifact org.example:spine:jar:2.4 in central (https://repo.maven.apache.org/maven2) -> [Help 1]",
            Category::DependencyError,
            "maven.resolve",
        ),
        (
            "mvn -B test",
            "[INFO] BUILD FAILURE\n\
             [ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.8.0:compile (default-compile) on project shelf: Fatal error compiling: invalid target release: 11 -> [Help 1]",
            Category::ConfigError,
            "maven.config",
        ),
    ] {
        let ex = excerpt_of_text(&job(cmd, body));
        assert!(
            ex.lines.iter().any(|l| l.text.contains(rule_line(body))),
            "the cause's line is shown: {ex:#?}"
        );
        let d = diagnose(&ex);
        assert_eq!(d.category, want, "{d:#?}");
        assert!(d.decided_by.starts_with(rule), "{d:#?}");
    }
}

/// The line of a snippet the cause is on: npm's `missing script` or
/// Maven's `Failed to execute goal` line.
fn rule_line(body: &str) -> &str {
    body.lines()
        .find(|l| l.contains("missing script") || l.contains("Failed to execute goal"))
        .expect("the snippet has a cause line")
}

#[test]
fn more_tools_own_words_for_compilers_dependencies_configuration_and_the_machine() {
    // Written for this test from the tools' documented formats.
    for (log, want) in [
        (
            "Analyzing lib...\n  error • Undefined name 'spine' at lib/shelf.dart:12:5 • (undefined_identifier)\n1 error found.",
            Category::CodeError,
        ),
        (
            "  error - lib/shelf.dart:12:5 - Undefined name 'spine'. - undefined_identifier",
            Category::CodeError,
        ),
        (
            "shelf.nim(12, 5) Error: undeclared identifier: 'spine'",
            Category::CodeError,
        ),
        (
            "source/shelf.d(12,5): Error: undefined identifier `spine`",
            Category::CodeError,
        ),
        (
            "in src/shelf.cr:12: undefined method 'spine' for Shelf",
            Category::CodeError,
        ),
        (
            "ERROR: LoadError: ArgumentError: Module Spine not found in current path.\nRun `Pkg.add(\"Spine\")` to install the Spine package.",
            Category::DependencyError,
        ),
        (
            "Traceback (most recent call last):\n  File \"setup.py\", line 3, in <module>\n    import shelf\npkg_resources.VersionConflict: (six 1.10.0 (/usr/lib/python2.7/dist-packages), Requirement.parse('six>=1.12'))",
            Category::DependencyError,
        ),
        (
            "Traceback (most recent call last):\n  File \"shelf/index.py\", line 40, in build\n    table = [0] * size\nMemoryError",
            Category::InfraError,
        ),
        (
            "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc",
            Category::InfraError,
        ),
        (
            "Error: spawn phantomjs ENOENT\n    at _errnoException (util.js:1022:11)",
            Category::ConfigError,
        ),
        (
            "gpg: no default secret key: secret key not available\ngpg: signing failed: secret key not available",
            Category::ConfigError,
        ),
        (
            "Still running (29 of 30): mvn verify\nTimeout (30 minutes) reached. Terminating \"mvn verify\"",
            Category::InfraError,
        ),
    ] {
        diagnosed(log, want);
    }
    // An XCTest assertion in the compiler's `file:line: error:` form is the
    // test's, not a compiler error.
    diagnosed(
        "/Users/travis/build/example/shelf/ShelfTests/ShelfTests.m:12: error: -[ShelfTests testCount] : XCTAssertEqual failed: (\"2\") is not equal to (\"3\")",
        Category::TestFailure,
    );
}

#[test]
fn hosted_ci_tools_own_words_for_versions_credentials_lockfiles_and_browsers() {
    // Written for this test from the tools' documented messages: the
    // setup actions, cloud and registry logins, pnpm, Go modules, rustc,
    // the .NET SDK, Node's OpenSSL 3, ESLint 9, Playwright, pre-commit.
    for (log, want) in [
        (
            "Error: The version '3.5' with architecture 'x64' was not found for Ubuntu 24.04.",
            Category::ConfigError,
        ),
        (
            "Error: Unable to find Node version '10' for platform linux and architecture arm64.",
            Category::ConfigError,
        ),
        (
            "RequestError [HttpError]: Resource not accessible by integration\nError: Unhandled error: HttpError: Resource not accessible by integration",
            Category::ConfigError,
        ),
        (
            "Error: Credentials could not be loaded, please check your action inputs: Could not load credentials from any providers",
            Category::ConfigError,
        ),
        (
            "npm ERR! code ENEEDAUTH\nnpm ERR! need auth This command requires you to be logged in to https://registry.npmjs.org/",
            Category::ConfigError,
        ),
        (
            " ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up to date with shelf/package.json",
            Category::DependencyError,
        ),
        (
            "Error: Cannot find module @shelfjs/native-linux-arm64-musl. npm has a bug related to optional dependencies.",
            Category::DependencyError,
        ),
        (
            "go: updates to go.mod needed; to update it:\n\tgo mod tidy",
            Category::DependencyError,
        ),
        (
            "error: package `spine v2.1.0` cannot be built because it requires rustc 1.80 or newer, while the currently active rustc version is 1.72.1",
            Category::ConfigError,
        ),
        (
            "error NETSDK1045: The current .NET SDK does not support targeting .NET 9.0.  Either target .NET 7.0 or lower.",
            Category::ConfigError,
        ),
        (
            "Error: error:0308010C:digital envelope routines::unsupported\n    at new Hash (node:internal/crypto/hash:71:19) {\n  code: 'ERR_OSSL_EVP_UNSUPPORTED'\n}",
            Category::ConfigError,
        ),
        (
            "Oops! Something went wrong! :(\nESLint: 9.3.0\nESLint couldn't find an eslint.config.(js|mjs|cjs) file.",
            Category::ConfigError,
        ),
        (
            "    Error: browserType.launch: Executable doesn't exist at /home/runner/.cache/ms-playwright/firefox-1440/firefox/firefox",
            Category::ConfigError,
        ),
        (
            "> No matching toolchains found for requested specification: {languageVersion=22, vendor=any} for LINUX on aarch64.",
            Category::ConfigError,
        ),
        (
            "dependency failed to start: container shelf-cache-1 is unhealthy",
            Category::InfraError,
        ),
        (
            "isort....................................................................Failed\n- hook id: isort\n- files were modified by this hook",
            Category::CodeError,
        ),
        (
            "[ERROR] Rule 0: org.apache.maven.enforcer.rules.version.RequireJavaVersion failed with message:\n[ERROR] Detected JDK version 1.8.0-402 (JAVA_HOME=/opt/jdk8) is not in the allowed range [21,).",
            Category::ConfigError,
        ),
        (
            "Dependency convergence error for org.shelf:spine:2.3 paths to dependency are:\n+-org.shelf:shelf:1.0\n  +-org.shelf:spine:2.3",
            Category::DependencyError,
        ),
        (
            "  Problem 1\n    - shelf/spine 3.1.0 requires php ^8.2 -> your php version (8.0.30) does not satisfy that requirement.",
            Category::ConfigError,
        ),
        (
            "E   selenium.common.exceptions.WebDriverException: Message: 'geckodriver' executable needs to be in PATH.",
            Category::ConfigError,
        ),
        (
            "ruby: No such file or directory -- script/shelf_ci.rb (LoadError)",
            Category::ConfigError,
        ),
        (
            "_____ ERROR at setup of test_spine _____\n  def test_spine(spine_index):\nE       fixture 'spine_index' not found\n===== 9 passed, 1 error in 0.20s =====",
            Category::CodeError,
        ),
    ] {
        diagnosed(log, want);
    }
}

#[test]
fn a_syntax_error_node_reports_in_an_installed_package_is_the_dependency_s() {
    // Written for this test: Node's report of a file it cannot parse. In
    // an installed package, the package does not run on this Node; in the
    // project's own file, the code is wrong.
    diagnosed(
        "/home/runner/work/shelf/shelf/node_modules/spine-cli/lib/index.js:212\n        const width = opts?.width ?? 80;\n                           ^\n\nSyntaxError: Unexpected token '.'\n    at wrapSafe (internal/modules/cjs/loader.js:915:16)",
        Category::DependencyError,
    );
    diagnosed(
        "/home/runner/work/shelf/shelf/src/index.js:12\n        const width = opts?.width ?? 80;\n                           ^\n\nSyntaxError: Unexpected token '.'\n    at wrapSafe (internal/modules/cjs/loader.js:915:16)",
        Category::CodeError,
    );
}

#[test]
fn rails_refusing_a_database_the_job_did_not_set_up_is_the_configuration() {
    // Written for this test: ActiveRecord's own words when the suite starts
    // against a database nobody created, configured or migrated. Before,
    // the uncaught-exception recognisers read them as the code's error.
    for log in [
        "/home/travis/build/shelf/shelf/vendor/bundle/gems/activerecord-5.2.1/lib/active_record/connection_adapters/connection_specification.rb:248:in `resolve_symbol_connection': 'test' database is not configured. Available: [\"development\"] (ActiveRecord::AdapterNotSpecified)",
        "/home/travis/build/shelf/shelf/spec/rails_helper.rb:9:in `<top (required)>': Migrations are pending. To resolve this issue, run: bin/rails db:migrate RAILS_ENV=test (ActiveRecord::PendingMigrationError)",
        "rake aborted!\nActiveRecord::NoDatabaseError: FATAL:  database \"spine_test\" does not exist\n/home/travis/build/shelf/shelf/bin/rails:9:in `<main>'",
    ] {
        let d = diagnosed(log, Category::ConfigError);
        assert_eq!(d.findings[0].rule, "rails.database_setup", "{log}");
    }
    // Another ActiveRecord error is still the code's.
    diagnosed(
        "ActiveRecord::RecordNotFound: Couldn't find Shelf with 'id'=7",
        Category::CodeError,
    );
}

#[test]
fn a_runtime_or_a_tool_refusing_the_configuration_it_was_given_is_a_config_error() {
    for (line, rule) in [
        // A JVM option the installed JDK no longer knows.
        ("Unrecognized VM option 'UseSplitVerifier'", "jvm.options"),
        ("Invalid initial heap size: -Xms8gb", "jvm.options"),
        ("Invalid maximum heap size: -Xmx4gb", "jvm.options"),
        // Linters reading a configuration written for another version.
        (
            "Error: unrecognized cop Shop/OldCheck found in .rubocop.yml",
            "rubocop.config",
        ),
        (
            "(obsolete configuration found in .rubocop.yml, please update it)",
            "rubocop.config",
        ),
        (
            "Error: The `Shop/LegacyCheck` cop has been removed. Please use `Shop/Check` instead.",
            "rubocop.config",
        ),
        (
            "Error: .eslintrc.json: Configuration for rule \"shop-quotes\" is invalid:",
            "eslint.config",
        ),
        // Ruby's ENV.fetch of a variable the job did not set.
        (
            "key not found: \"SHOP_API_TOKEN\" (KeyError)",
            "env.key_error",
        ),
        // A registry refusing the credentials sent (or not sent).
        (
            "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-deploy-plugin:3.1.1:deploy (default-deploy) on project shop: Failed to deploy artifacts: Could not transfer artifact com.acme:shop:jar:1.0 from/to acme-releases (https://repo.acme.test/releases): status code: 401, reason phrase: Unauthorized (401) -> [Help 1]",
            "env.unauthorized",
        ),
        ("npm ERR! code E401", "env.unauthorized"),
        // Manifests go and cargo were pointed at but cannot use.
        (
            "go: cannot find main module, but found .git/config in /home/runner/work/shop",
            "project.missing",
        ),
        (
            "error: failed to parse manifest at `/home/runner/work/shop/Cargo.toml`",
            "project.missing",
        ),
    ] {
        diagnosed_by(line, Category::ConfigError, rule);
    }
    // A lower-case key is the code's own mapping, not the environment.
    not_diagnosed(
        "key not found: \"basket\" (KeyError)",
        Category::ConfigError,
    );
}

#[test]
fn a_module_swift_cannot_find_is_a_package_not_fetched() {
    diagnosed_by(
        "/home/runner/work/shop/Sources/Shop/Cart.swift:3:8: error: no such module 'ShopKit'",
        Category::DependencyError,
        "swift.no_module",
    );
    // Any other compiler error in the same file is the code's.
    diagnosed(
        "/home/runner/work/shop/Sources/Shop/Cart.swift:9:5: error: cannot find 'total' in scope",
        Category::CodeError,
    );
}

#[test]
fn the_shared_file_line_error_shape_is_a_compile_error_where_no_tool_rule_reads_it() {
    for line in [
        "res/layout/main_screen.xml:40: error: 'middle' is incompatible with attribute gravity (attr) flags",
        "aapt2 build/res/values/strings.xml:12:5: error: resource string/title not found.",
        "proto/orders.proto:7:3: error: \"Money\" is not defined.",
    ] {
        diagnosed_by(line, Category::CodeError, "generic.diagnostic");
    }
    // A tool's own rule reads its line: the shared shape adds nothing.
    let d =
        diagnose_text("src/cart.c:12:5: error: 'total' undeclared (first use in this function)");
    assert!(d.decided_by.starts_with("cc.error"), "{}", d.decided_by);
    assert!(
        d.findings.iter().all(|f| f.rule != "generic.diagnostic"),
        "{:#?}",
        d.findings
    );
    // A warning in that shape is not an error.
    assert_eq!(
        diagnose_text("docs/guide.txt:3: warning: unknown word").category,
        Category::Unknown
    );
}

#[test]
fn configuration_the_job_lacks_git_identity_ssh_keys_a_tool_config_meson_options() {
    for (text, rule) in [
        (
            "*** Please tell me who you are.\nfatal: empty ident name (for <ci@runner.(none)>) not allowed",
            "git.identity",
        ),
        (
            "deploy@example.org: Permission denied (publickey,password).\nrsync: connection unexpectedly closed (0 bytes received so far) [sender]",
            "ssh.auth",
        ),
        (
            "Error: can't load config: unsupported version of the configuration",
            "tool.config_load",
        ),
        (
            "meson.build:1:0: ERROR: Unknown compiler(s): [['xcc']]",
            "meson.config",
        ),
        (
            "ERROR: Value \"yes\" for combo option is not one of the choices. Possible choices are: \"enabled\", \"disabled\", \"auto\".",
            "meson.config",
        ),
        (
            "     | The term 'shopctl' is not recognized as a name of a cmdlet, function, script file, or executable program.",
            "windows.not_recognized",
        ),
    ] {
        diagnosed_by(text, Category::ConfigError, rule);
    }
    diagnosed(
        "meson.build:20:2: ERROR: Dependency \"libshop\" not found, tried pkgconfig",
        Category::DependencyError,
    );
    // A build script asking git for a version outside a checkout is not
    // why a missing package failed the build.
    diagnosed(
        "fatal: not a git repository (or any of the parent directories): .git\nCMake Error at cmake/FindThing.cmake:9 (message):\n  Could NOT find Shopkit (missing: SHOPKIT_LIBRARY)",
        Category::DependencyError,
    );
}

#[test]
fn crashes_r_errors_wasm_traps_and_abort_exit_codes() {
    for (text, rule) in [
        (
            "Quitting from lines 10-14 (intro.Rmd)\nError: processing vignette 'intro.Rmd' failed with diagnostics:\nobject 'basket' not found",
            "r.knitr",
        ),
        (
            "Error in total(cart) : object 'cart' not found\nCalls: checkout -> total\nExecution halted",
            "r.error",
        ),
        (
            "    3: wasm trap: out of bounds memory access",
            "native.crash",
        ),
        (
            "##[error]Process completed with exit code 134.",
            "native.crash",
        ),
    ] {
        diagnosed_by(text, Category::CodeError, rule);
    }
    // R's missing package is a dependency, not the code's error.
    diagnosed(
        "Error in library(shopr) : there is no package called ‘shopr’",
        Category::DependencyError,
    );
}

#[test]
fn jenkins_remoting_and_scm_timeouts_are_the_machine() {
    for (text, rule) in [
        (
            "FATAL: java.io.StreamCorruptedException: invalid stream header: 7B226964\nCaused: hudson.remoting.RequestAbortedException",
            "jenkins.agent",
        ),
        (
            " > git fetch --tags --force --progress https://git.example.org/shop.git # timeout=10\nERROR: Timeout after 10 minutes",
            "timeout.run",
        ),
    ] {
        diagnosed_by(text, Category::InfraError, rule);
    }
}

#[test]
fn vitest_and_go_subtest_reports_are_test_failures() {
    for (text, rule) in [
        (
            " FAIL  test/cart.test.ts > cart > adds an item\n Test Files  1 failed | 3 passed (4)\n      Tests  1 failed | 10 passed (11)",
            "vitest.summary",
        ),
        (
            "--- FAIL: e2e (12.40s)\n    --- FAIL: e2e/checkout (3.10s)",
            "gotest.fail",
        ),
    ] {
        diagnosed_by(text, Category::TestFailure, rule);
    }
}

#[test]
fn a_bundler_refusing_the_source_is_a_compile_error() {
    for text in [
        "> Build error occurred\nError: Turbopack build failed with 1 errors:\n./src/app/page.tsx:3:1\nParsing ecmascript source code failed",
        "Failed to compile.\n\n./src/Cart.js\nModule build failed (from ./node_modules/babel-loader/lib/index.js):",
        "✘ [ERROR] Expected \";\" but found \"total\"\n\n    src/cart.ts:4:9:",
    ] {
        diagnosed_by(text, Category::CodeError, "bundler.error");
    }
    // A package the bundler cannot resolve is still a dependency.
    diagnosed(
        "Failed to compile.\n\nModule not found: Error: Can't resolve 'shop-widgets' in '/app/src'",
        Category::DependencyError,
    );
}

#[test]
fn minitest_reporters_errors_are_uncaught_errors() {
    diagnosed_by(
        "  ERROR (0:00:01.204) test_0001_totals the basket\n        No such file or directory - /tmp/basket.csv\n\n120 tests, 119 passed, 0 failures, 1 errors, 0 skips, 340 assertions",
        Category::CodeError,
        "tests.",
    );
}

#[test]
fn a_built_in_the_selected_runtime_is_too_old_for_is_its_configuration() {
    for text in [
        "FATAL Something went wrong\nTypeError: Object.values is not a function\n    at Cart.totals (/app/lib/cart.js:12:22)",
        "Uncaught TypeError: Promise.allSettled is not a function",
        "ReferenceError: structuredClone is not defined\n    at copyBasket (/app/src/basket.js:4:10)",
    ] {
        diagnosed_by(text, Category::ConfigError, "js.runtime_version");
    }
    // The project's own function missing is still its code's error.
    diagnosed_by(
        "TypeError: basket.totals is not a function\n    at Checkout.run (/app/src/checkout.js:9:14)",
        Category::CodeError,
        "js.uncaught",
    );
}

#[test]
fn loaders_refusing_an_installed_library_are_dependency_errors() {
    for (text, rule) in [
        (
            "/home/ci/app/spec/spec_helper.rb:3:in `require': cannot load such file -- basket/money (LoadError)",
            "ruby.load_error",
        ),
        (
            "/usr/lib/ruby/2.7.0/rubygems/specification.rb:2240:in `check_version_conflict': can't activate shoplib-1.2.0, already activated shoplib-2.0.1 (Gem::LoadError)",
            "bundler.install",
        ),
        (
            "    at Module._extensions..node (node:internal/modules/cjs/loader:1210:18)\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 72. This version of Node.js requires\nNODE_MODULE_VERSION 93.",
            "node.native_abi_conflict",
        ),
        (
            "Error: Cannot find module '/app/node_modules/fastcart/build/Release/cart.node'",
            "node.native_abi_conflict",
        ),
        (
            "Unhandled exception. System.TypeLoadException: Could not load type 'Shop.Cart' from assembly 'Shop.Core, Version=2.0.0.0'.",
            "dotnet.linkage_conflict",
        ),
        (
            "PHP Fatal error:  Uncaught Error: Failed opening required '/app/vendor/autoload.php' (include_path='.:/usr/share/php') in /app/tests/bootstrap.php:3",
            "php.autoload_missing",
        ),
    ] {
        diagnosed_by(text, Category::DependencyError, rule);
    }
}

#[test]
fn latex_s_layout_warnings_are_weak_beside_its_errors() {
    // Overfull boxes and undefined references print in builds that pass:
    // beside a real error they are not the failure.
    diagnosed_by(
        "Overfull \\hbox (12.5pt too wide) in paragraph at lines 40--42\nLaTeX Warning: There were undefined references.\n! Undefined control sequence.\nl.57 \\shopname",
        Category::CodeError,
        "latex.error",
    );
}

#[test]
fn a_gem_that_needs_a_newer_ruby_is_a_dependency_the_job_cannot_install() {
    diagnosed_by(
        "ERROR:  Error installing shop-deploy:\n\tbasket-client requires Ruby version >= 2.6.0. The current ruby version is 2.4.5.335.",
        Category::DependencyError,
        "gem.ruby_conflict",
    );
    // The project's own Gemfile asking for another Ruby is its configuration.
    diagnosed_by(
        "Your Ruby version is 2.4.5, but your Gemfile specified 2.6.3",
        Category::ConfigError,
        "ruby.version",
    );
}

#[test]
fn pytest_s_summary_in_the_seconds_form_older_releases_print() {
    for summary in [
        "==================== 2 failed, 35 passed in 14.14 seconds ====================",
        "========================= 1 failed, 41 passed in 2.13s =========================",
    ] {
        diagnosed_by(summary, Category::TestFailure, "pytest.summary");
    }
}

#[test]
fn decrypting_with_keys_the_job_was_not_given_is_its_configuration() {
    for log in [
        // openssl with `-K $encrypted_key -iv $encrypted_iv` both empty.
        "$ openssl aes-256-cbc -K -iv -in deploy_key.enc -out deploy_key -d\niv undefined",
        // openssl with keys that do not fit the file.
        "bad decrypt\n140152389617312:error:06065064:digital envelope routines:EVP_DecryptFinal_ex:bad decrypt:evp_enc.c:529:",
        // gpg without the private key.
        "gpg: encrypted with RSA key, ID 5F3A9C21\ngpg: decryption failed: No secret key",
    ] {
        diagnosed_by(log, Category::ConfigError, "env.decrypt");
    }
}

#[test]
fn a_connection_a_logger_noted_below_the_error_level_is_not_why_tests_failed() {
    // The program warned and went on; the test failed on its assertion.
    diagnosed_by(
        "Running com.acme.shop.ServerTest\n\
         WARNING: Failed to restart: java.net.ConnectException: Connection refused\n\
         Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 2.1 sec <<< FAILURE!\n\
         testStart(com.acme.shop.ServerTest)  Time elapsed: 0.1 sec  <<< FAILURE!\n\
         java.lang.AssertionError: expected:<1> but was:<2>\n\
         \tat org.junit.Assert.fail(Assert.java:88)",
        Category::TestFailure,
        "surefire.case",
    );
    // A retry warning says the operation that follows failed for it.
    diagnosed(
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f3c>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/shopcart/\n\
         ERROR: Could not find a version that satisfies the requirement shopcart==1.2 (from versions: none)",
        Category::InfraError,
    );
}

#[test]
fn an_error_thrown_inside_a_dependency_that_the_project_never_called_is_the_dependencys() {
    // A build tool's plugin that no longer loads: every frame is
    // node_modules' or Node's own.
    diagnosed_by(
        "TypeError: Cannot read property 'bind' of undefined\n    \
         at Object.<anonymous> (/home/travis/build/acme/shop/node_modules/gulp-widgets/index.js:10:20)\n    \
         at Module._compile (module.js:570:32)\n    \
         at require (internal/module.js:20:19)\n    \
         at Liftoff.handleArguments (/home/travis/build/acme/shop/node_modules/gulp-cli/index.js:148:3)\n\n\
         The command \"gulp build\" exited with 1.",
        Category::DependencyError,
        "dep.vendored_error",
    );
    // A gem calling a method its own dependency removed.
    diagnosed_by(
        "NoMethodError: undefined method `last_thing' for #<Taskr::Application:0x0000>\n\
         /home/travis/.rvm/gems/ruby-2.3.1/gems/specr-core-3.4.4/lib/specr/core/task.rb:12:in `block'\n\
         /home/travis/.rvm/gems/ruby-2.3.1/gems/taskr-11.0.1/lib/taskr/task.rb:40:in `execute'\n\n\
         The command \"bundle exec taskr\" exited with 1.",
        Category::DependencyError,
        "dep.vendored_error",
    );
    // Through the worker's excerpt, which drops the blank lines a job's
    // output can hold between a trace's lines.
    let log = "$ gulp build\n[10:01:02] Using gulpfile ~/build/acme/shop/gulpfile.js\n\
               TypeError: Cannot read property 'bind' of undefined\n\n    \
               at Object.<anonymous> (/home/travis/build/acme/shop/node_modules/gulp-widgets/index.js:10:20)\n\n    \
               at Module._compile (module.js:570:32)\n\n\
               The command \"gulp build\" exited with 1.\n\nDone. Your build exited with 1.\n";
    let d = super::diagnose(&excerpt_of_text(log));
    assert_eq!(d.category, Category::DependencyError, "{d:#?}");
    // Rake prints the trace flush left under the error: the excerpt shows
    // the error (what people mark) and keeps the frames for the diagnosis.
    let log = "$ bundle exec rake\nrake aborted!\n\
               NoMethodError: undefined method `last_thing' for #<Taskr::Application:0x0000>\n\
               /home/travis/build/acme/shop/vendor/bundle/ruby/2.3.0/gems/specr-core-3.4.4/lib/specr/core/task.rb:12:in `<class:Task>'\n\
               /home/travis/build/acme/shop/Rakefile:4:in `<top (required)>'\n\
               (See full trace by running task with --trace)\n\
               The command \"bundle exec rake\" exited with 1.\n";
    let after: String = (1..=12)
        .map(|i| format!("store build cache: part {i} uploaded\n"))
        .collect();
    let excerpt = excerpt_of_text(&format!("{log}{after}\nDone. Your build exited with 1.\n"));
    assert!(
        excerpt.lines.iter().all(|l| !l.text.contains("task.rb")),
        "{excerpt:#?}"
    );
    assert_eq!(excerpt.trace.len(), 2, "{excerpt:#?}");
    let d = super::diagnose(&excerpt);
    assert_eq!(d.category, Category::DependencyError, "{d:#?}");
    // RubyGems finding no gem for an executable is a dependency too.
    diagnosed(
        "/home/travis/.rvm/rubies/ruby-2.5.3/lib/ruby/2.5.0/rubygems.rb:289:in `find_spec_for_exe': can't find gem bundler (>= 0.a) with executable bundle (Gem::GemNotFoundException)",
        Category::DependencyError,
    );
    // A build tool's entry file (a Rakefile, a gulpfile) only loads the
    // tool: a gem failing against another gem as the Rakefile loads it is
    // still the dependency's.
    diagnosed_by(
        "NoMethodError: undefined method `last_thing' for #<Taskr::Application:0x0000>\n\
         /home/travis/build/acme/shop/vendor/bundle/ruby/2.3.0/gems/specr-core-3.4.4/lib/specr/core/task.rb:12:in `<class:Task>'\n\
         /home/travis/build/acme/shop/Rakefile:4:in `<top (required)>'\n\n\
         The command \"bundle exec taskr\" exited with 1.",
        Category::DependencyError,
        "dep.vendored_error",
    );
    diagnosed_by(
        "TypeError: Cannot read property 'bind' of undefined\n    \
         at Object.<anonymous> (/home/travis/build/acme/shop/node_modules/gulp-widgets/index.js:10:20)\n    \
         at Object.<anonymous> (/home/travis/build/acme/shop/gulpfile.js:3:12)\n\n\
         The command \"gulp build\" exited with 1.",
        Category::DependencyError,
        "dep.vendored_error",
    );
    // The same error on its way through the project's own source is the
    // project's: the library may be refusing what it was given.
    diagnosed(
        "TypeError: Cannot read property 'bind' of undefined\n    \
         at Object.<anonymous> (/home/travis/build/acme/shop/node_modules/gulp-widgets/index.js:10:20)\n    \
         at buildWidgets (/home/travis/build/acme/shop/src/widgets.js:3:12)\n    \
         at Object.<anonymous> (/home/travis/build/acme/shop/gulpfile.js:8:1)\n\n\
         The command \"gulp build\" exited with 1.",
        Category::CodeError,
    );
    diagnosed(
        "NoMethodError: undefined method `name' for nil:NilClass\n\
         /home/travis/.rvm/gems/ruby-2.3.1/gems/widgets-1.0.0/lib/widgets.rb:12:in `render'\n\
         ./spec/shop_spec.rb:8:in `block (2 levels) in <top (required)>'\n\n\
         The command \"bundle exec rspec\" exited with 1.",
        Category::CodeError,
    );
    // Python is left alone: a project installed into its own
    // site-packages shows its own code there.
    not_diagnosed(
        "Traceback (most recent call last):\n  \
         File \"/home/travis/virtualenv/python3.6/lib/python3.6/site-packages/shop/cart.py\", line 3, in total\n    \
         return sum(prices)\n\
         TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        Category::DependencyError,
    );
}

#[test]
fn what_a_step_that_exited_0_printed_is_not_why_another_step_failed() {
    let lint = "$ npm run lint || true\n\n> shop@1.0.0 lint /home/travis/build/acme/shop\n> eslint src\n\n\
                /home/travis/build/acme/shop/src/cart.js\n  \
                3:8  error  'User' is defined but never used  no-unused-vars\n  \
                9:1  error  Unexpected console statement      no-console\n\n\
                ✖ 2 problems (2 errors, 0 warnings)\n\n\
                The command \"npm run lint || true\" exited with 0.\n";
    let log = format!(
        "{lint}$ npm test\n\n> shop@1.0.0 test /home/travis/build/acme/shop\n> node test/run.js\n\n\
         Running cart tests\ncart total with discount: got 90, wanted 100\n\
         1 of 12 cart tests did not pass\n\n\
         The command \"npm test\" exited with 1.\n\nDone. Your build exited with 1.\n"
    );
    let d = super::diagnose(&excerpt_of_text(&log));
    assert!(
        d.findings.iter().all(|f| f.kind != super::Kind::Lint),
        "{d:#?}"
    );
    // No step's footer says it failed: the job may have failed on what
    // the passed step printed (a script counting its lines afterwards).
    let log = format!(
        "{lint}$ test $(grep -c error lint.log) -eq 0\n\nDone. Your build exited with 1.\n"
    );
    let d = super::diagnose(&excerpt_of_text(&log));
    assert_eq!(d.category, Category::CodeError, "{d:#?}");
    assert!(d.decided_by.starts_with("eslint."), "{d:#?}");
}

#[test]
fn pip_refusing_an_os_managed_python_is_the_jobs_configuration() {
    diagnosed_by(
        "Run pip install -r requirements.txt\n\
         error: externally-managed-environment\n\
         \n\
         × This environment is externally managed\n\
         ╰─> To install Python packages system-wide, try apt install\n\
         \x20   python3-xyz, where xyz is the package you are trying to\n\
         \x20   install.\n\
         ##[error]Process completed with exit code 1.",
        Category::ConfigError,
        "pip.externally_managed",
    );
}

#[test]
fn a_variable_named_in_capitals_and_not_set_is_configuration() {
    diagnosed_by(
        "Run ./scripts/release.sh\n\
         Publishing build 512 to the staging bucket\n\
         Error: STAGING_BUCKET_REGION is not set\n\
         ##[error]Process completed with exit code 1.",
        Category::ConfigError,
        "env.missing",
    );
    // A sentence that happens to start with a capital is not a variable.
    not_diagnosed(
        "Warning: Cache is not set up for this branch, saving a new one\n\
         FAIL src/cart.test.js\n\
         \x20 ● cart › totals\n\
         \x20   expect(received).toBe(expected)\n\
         Tests:       1 failed, 8 passed, 9 total",
        Category::ConfigError,
    );
}

#[test]
fn a_coverage_upload_failing_on_the_service_is_infrastructure() {
    diagnosed(
        "Run codecov/codecov-action@v3\n\
         [2024-03-01T10:00:11.000Z] ['error'] There was an error running the uploader: \
         Error uploading to https://codecov.io: Error: There was an error fetching the storage \
         URL during POST: 503 - upstream connect error or disconnect/reset before headers. \
         reset reason: connection failure\n\
         ##[error]Codecov: Failed to properly upload: The process '/home/runner/work/_actions/codecov/codecov-action/v3/dist/codecov' failed with exit code 255",
        Category::InfraError,
    );
    // Without a token on a protected branch it is the job's credentials.
    diagnosed(
        "Run codecov/codecov-action@v4\n\
         error - 2024-03-01 10:00:11,000 -- Commit creating failed: {\"message\":\"Token required because branch is protected\"}\n\
         ##[error]Codecov: Failed to properly upload: The process '/home/runner/work/_actions/codecov/codecov-action/v4/dist/codecov' failed with exit code 1",
        Category::ConfigError,
    );
}

#[test]
fn playwright_test_failures() {
    let d = diagnosed_by(
        "Running 12 tests using 2 workers\n\
         \x20 1) [chromium] › tests/cart.spec.ts:14:3 › cart › shows the total ──────────\n\
         \n\
         \x20   Error: Timed out 5000ms waiting for expect(locator).toHaveText(expected)\n\
         \n\
         \x20   Locator: getByTestId('total')\n\
         \x20   Expected string: \"12.50\"\n\
         \x20   Received string: \"0.00\"\n\
         \n\
         \x20 1 failed\n\
         \x20   [chromium] › tests/cart.spec.ts:14:3 › cart › shows the total ───────────\n\
         \x20 11 passed (20.1s)",
        Category::TestFailure,
        "playwright.",
    );
    assert!(d.confidence >= 0.85, "{d:#?}");
}

#[test]
fn pip_hash_mismatch_and_poetry_resolution_are_dependency_errors() {
    diagnosed_by(
        "Collecting certifi==2024.2.2\n\
         ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have \
         updated the package versions, please update the hashes.\n\
         \x20   certifi==2024.2.2 from https://files.pythonhosted.org/packages/certifi-2024.2.2-py3-none-any.whl:\n\
         \x20       Expected sha256 0f1e\n\
         \x20            Got        9a8b",
        Category::DependencyError,
        "pip.hashes",
    );
    let d = diagnosed_by(
        "Updating dependencies\n\
         Resolving dependencies...\n\
         \n\
         Because shop-api depends on fastcodec (^4.0) which doesn't match any versions, version solving failed.",
        Category::DependencyError,
        "poetry.resolve",
    );
    assert!(format!("{:?}", d.facts).contains("fastcodec"), "{d:#?}");
}

#[test]
fn a_registry_refusing_a_push_is_the_jobs_credentials() {
    diagnosed_by(
        "Run docker push ghcr.io/acme/shop:latest\n\
         The push refers to repository [ghcr.io/acme/shop]\n\
         denied: permission_denied: write_package\n\
         ##[error]Process completed with exit code 1.",
        Category::ConfigError,
        "docker.config",
    );
}

#[test]
fn pods_out_of_sync_with_their_lock_file_and_an_emulator_that_never_booted() {
    diagnosed_by(
        "error: The sandbox is not in sync with the Podfile.lock. Run 'pod install' or update \
         your CocoaPods installation.\n\
         ** BUILD FAILED **",
        Category::DependencyError,
        "cocoapods.resolve",
    );
    diagnosed(
        "$ android-wait-for-emulator\n\
         Waiting for emulator to start\n\
         Timeout waiting for emulator to boot\n\
         The command \"android-wait-for-emulator\" failed and exited with 1 during before_script.",
        Category::InfraError,
    );
}

#[test]
fn a_shareable_eslint_config_or_type_stubs_not_installed_are_missing_packages() {
    diagnosed_by(
        "Oops! Something went wrong! :(\n\
         \n\
         ESLint: 8.57.0\n\
         \n\
         ESLint couldn't find the config \"standard-react\" to extend from. Please check that \
         the name of the config is correct.",
        Category::DependencyError,
        "eslint.missing_package",
    );
    diagnosed_by(
        "src/shop/client.py:3: error: Library stubs not installed for \"yaml\"  [import-untyped]\n\
         src/shop/client.py:3: note: Hint: \"python3 -m pip install types-PyYAML\"\n\
         Found 1 error in 1 file (checked 9 source files)",
        Category::DependencyError,
        "mypy.missing_stubs",
    );
}

#[test]
fn the_runners_own_words_for_a_bad_env_file_a_missing_lock_file_and_a_missing_interpreter() {
    diagnosed_by(
        "##[error]Unable to process file command 'output' successfully.\n\
         ##[error]Invalid format 'release notes'",
        Category::ConfigError,
        "ci.github_actions",
    );
    diagnosed_by(
        "##[error]Dependencies lock file is not found in /home/runner/work/shop/shop. Supported \
         file patterns: package-lock.json,npm-shrinkwrap.json,yarn.lock",
        Category::ConfigError,
        "ci.github_actions",
    );
    diagnosed_by(
        "py38: skipped because could not find python interpreter with spec(s): py38\n\
         \x20 py38: SKIP (0.01 seconds)\n\
         \x20 evaluation failed :( (0.05 seconds)",
        Category::ConfigError,
        "python.version",
    );
}

#[test]
fn a_gradle_daemon_stopped_for_memory_is_the_machine() {
    diagnosed_by(
        "> Task :test\n\
         Gradle build daemon has been stopped: since the JVM garbage collector is thrashing\n\
         FAILURE: Build failed with an exception.",
        Category::InfraError,
        "gradle.daemon",
    );
}

#[test]
fn setup_ruby_asked_for_a_version_the_runner_image_does_not_have() {
    diagnosed_by(
        "Run ruby/setup-ruby@v1\n\
         ##[error]Unknown version 2.3 for ruby on ubuntu-22.04\n\
         \x20       available versions for ruby on ubuntu-22.04: 2.6.10, 2.7.8, 3.0.6",
        Category::ConfigError,
        "ci.github_actions",
    );
}

#[test]
fn a_traceback_that_ends_the_failed_step_was_not_caught_whatever_was_logged_above_it() {
    // Written for this test: a script that logs its progress at INFO and
    // dies of an uncaught error, the last thing its step prints.
    let log = "$ python -m sitegen build\n\
         INFO sitegen: reading 42 pages from docs/\n\
         Traceback (most recent call last):\n\
         \x20 File \"/home/travis/build/acme/site/sitegen/tree.py\", line 31, in build\n\
         \x20   return build(child, depth + 1)\n\
         RecursionError: maximum recursion depth exceeded\n\
         \n\
         The command \"python -m sitegen build\" exited with 1.\n\
         \n\
         Done. Your build exited with 1.\n";
    let d = diagnose(&excerpt_of_text(log));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(
        d.decided_by.contains("python.exception"),
        "{}",
        d.decided_by
    );
    // The same trace a logger printed while the program went on is not the
    // failure: the step failed on what came after it.
    let logged = "$ python -m sitegen build\n\
         INFO sitegen: page cache cold, rebuilding\n\
         Traceback (most recent call last):\n\
         \x20 File \"/home/travis/build/acme/site/sitegen/cache.py\", line 12, in load\n\
         \x20   return pickle.load(f)\n\
         RecursionError: maximum recursion depth exceeded\n\
         INFO sitegen: wrote 42 pages\n\
         INFO sitegen: checking links\n\
         INFO sitegen: all pages written\n\
         The command \"python -m sitegen build\" exited with 1.\n\
         \n\
         Done. Your build exited with 1.\n";
    let d = diagnose(&excerpt_of_text(logged));
    assert!(
        !d.decided_by.contains("python.exception"),
        "{}",
        d.decided_by
    );
}

#[test]
fn a_coverage_gate_that_failed_is_a_check_on_the_code() {
    // Written for this test, in JaCoCo's, pytest-cov's, Jest's, nyc's and
    // coverage.py's words.
    for text in [
        "[ERROR] Failed to execute goal org.jacoco:jacoco-maven-plugin:0.8.11:check (check) on project ledger: Coverage checks have not been met. See log for details.",
        "FAIL Required test coverage of 90% not reached. Total coverage: 87.21%",
        "Jest: \"global\" coverage threshold for branches (80%) not met: 74.5%",
        "ERROR: Coverage for lines (71.3%) does not meet global threshold (85%)",
        "Coverage failure: total of 78 is less than fail-under=90",
    ] {
        diagnosed_by(text, Category::CodeError, "check.coverage");
    }
}

#[test]
fn a_release_tool_without_its_token_and_a_gradle_toolchain_not_installed_are_configuration() {
    // Written for this test: semantic-release's error codes, and Gradle
    // asking for a JDK the runner does not have.
    for text in [
        "[12:01:02 PM] [semantic-release] › ✘  ENOGHTOKEN No GitHub token specified.",
        "[semantic-release] › ✘  EINVALIDNPMTOKEN Invalid npm token.",
    ] {
        diagnosed_by(text, Category::ConfigError, "env.credentials");
    }
    diagnosed_by(
        "   > Cannot find a Java installation on your machine matching this tasks requirements: {languageVersion=21, vendor=any, implementation=vendor-specific} for LINUX on x86_64.",
        Category::ConfigError,
        "jdk.version",
    );
}

#[test]
fn pyright_bandit_detekt_and_robot_framework_report_in_their_own_words() {
    // Written for this test, in each tool's console format.
    diagnosed_by(
        "  /home/runner/work/tides/tides/src/tides/reader.py:42:24 - error: Argument of type \"str | None\" cannot be assigned to parameter \"path\" of type \"str\"",
        Category::CodeError,
        "pyright.error",
    );
    diagnosed_by(
        "2 errors, 0 warnings, 0 informations ",
        Category::CodeError,
        "pyright.error",
    );
    diagnosed_by(
        ">> Issue: [B602:subprocess_popen_with_shell_equals_true] subprocess call with shell=True identified, security issue.",
        Category::CodeError,
        "bandit.issue",
    );
    diagnosed_by(
        "> Analysis failed with 4 weighted issues.",
        Category::CodeError,
        "detekt",
    );
    diagnosed_by(
        "Refund Restores Stock Level                                   | FAIL |\n\
         Expected 12 but was 11",
        Category::TestFailure,
        "robot.fail",
    );
    // Zero failures is no failure.
    not_diagnosed("4 tests, 4 passed, 0 failed", Category::TestFailure);
}

#[test]
fn uv_unsatisfiable_requirements_an_upload_with_no_files_and_no_aws_region() {
    // Written for this test: uv's resolver, actions/upload-artifact with
    // `if-no-files-found: error`, and the AWS CLI without a region.
    diagnosed_by(
        "  × No solution found when resolving dependencies:\n\
         \x20 ╰─▶ Because tidekit==0.3.1 depends on numpy<2 and your project depends on numpy>=2.1, we can conclude that your project's requirements are unsatisfiable.",
        Category::DependencyError,
        "uv.resolve",
    );
    diagnosed_by(
        "##[error]No files were found with the provided path: build/reports/tests/. No artifacts will be uploaded.",
        Category::ConfigError,
        "ci.github_actions",
    );
    diagnosed_by(
        "You must specify a region. You can also configure your region by running \"aws configure\".",
        Category::ConfigError,
        "env.credentials",
    );
}

#[test]
fn a_step_that_failed_after_the_first_on_its_own_words_holds_the_answer_for_review() {
    // Written for this test: a workflow whose linter step may fail
    // (`continue-on-error`), then a test step that failed on its own.
    let lint = r#"##[group]Run yarn lint
yarn lint
shell: /usr/bin/bash -e {0}
##[endgroup]
yarn run v1.22.21
$ eslint src --ext .ts,.tsx

/home/runner/work/tally/tally/src/pages/Ledger.tsx
  9:10  error  'groupBy' is defined but never used  @typescript-eslint/no-unused-vars

✖ 1 problem (1 error, 0 warnings)
error Command failed with exit code 1.
info Visit https://yarnpkg.com/en/docs/cli/run for documentation about this command.
##[error]Process completed with exit code 1.
##[group]Run yarn test --ci --watchAll=false
"#;
    let failed_tests = r#"yarn test --ci --watchAll=false
shell: /usr/bin/bash -e {0}
##[endgroup]
yarn run v1.22.21
$ jest --ci --watchAll=false
PASS src/utils/__tests__/slugify.test.ts
PASS src/components/__tests__/StarButton.test.tsx
  ● Console

    console.error
      [api] could not load stars TypeError: Failed to fetch
          at fetchStars (/home/runner/work/tally/tally/src/api/stars.ts:12:11)

      at logError (src/api/client.ts:31:13)

PASS src/components/__tests__/SearchBox.test.tsx
FAIL src/utils/__tests__/scaleTotals.test.ts
  ● scaleTotals › rounds fractional cups to the nearest quarter

    expect(received).toEqual(expected) // deep equality

    - Expected  - 1
    + Received  + 1

      {
    -   "amount": 1.75,
    +   "amount": 1.7,
        "unit": "cup",
      }

      22 |   it('rounds fractional cups to the nearest quarter', () => {
      23 |     const result = scaleTotals({ amount: 0.68, unit: 'cup' }, 2.5);
    > 24 |     expect(result).toEqual({ amount: 1.75, unit: 'cup' });
         |                    ^
      25 |   });
      26 |

      at Object.toEqual (src/utils/__tests__/scaleTotals.test.ts:24:20)

PASS src/pages/__tests__/Ledger.test.tsx
PASS src/components/__tests__/RecipeCard.test.tsx

Test Suites: 1 failed, 5 passed, 6 total
Tests:       1 failed, 47 passed, 48 total
Snapshots:   4 passed, 4 total
Time:        8.317 s
Ran all test suites.
error Command failed with exit code 1.
info Visit https://yarnpkg.com/en/docs/cli/run for documentation about this command.
##[error]Process completed with exit code 1.
Post job cleanup.
"#;
    let d = diagnose(&excerpt_of_text(&format!("{lint}{failed_tests}")));
    assert!(
        d.confidence <= ONLY_COUNTS_CONFIDENCE
            && d.decided_by
                .contains("a step that failed later reads TEST_FAILURE"),
        "{} {}",
        d.confidence,
        d.decided_by
    );
    // When the tests pass, the linter is the only failure and its answer
    // completes on its own.
    let passed = "yarn run v1.22.21\n\
         $ jest --ci --watchAll=false\n\
         PASS src/utils/__tests__/scaleTotals.test.ts\n\
         Tests:       48 passed, 48 total\n\
         Done in 9.12s.\n\
         Post job cleanup.\n";
    let d = diagnose(&excerpt_of_text(&format!("{lint}{passed}")));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.confidence >= 0.85, "{} {}", d.confidence, d.decided_by);
}

#[test]
fn dash_errors_poetry_on_the_wrong_python_and_a_missing_working_directory_are_configuration() {
    // Written for this test: dash (the `/bin/sh` a Jenkins `sh` step runs)
    // refusing a script and missing a tool, Poetry on a Python the project
    // does not support, and a workflow step's working directory absent.
    diagnosed_by(
        "/home/jenkins/workspace/tally_main@tmp/durable-1a2b3c4d/script.sh.copy: 1: ./gradlew: Permission denied",
        Category::ConfigError,
        "shell.permission",
    );
    diagnosed_by(
        "/home/jenkins/workspace/tally_main@tmp/durable-1a2b3c4d/script.sh.copy: 1: mvn: not found",
        Category::ConfigError,
        "shell.command_not_found",
    );
    diagnosed_by(
        "The currently activated Python version 3.9.18 is not supported by the project (>=3.10,<4.0).\n\
         Trying to find and use a compatible version.\n\
         Poetry was unable to find a compatible version. If you have one, you can explicitly use it via the \"env use\" command.",
        Category::ConfigError,
        "python.version",
    );
    diagnosed_by(
        "##[error]An error occurred trying to start process '/usr/bin/bash' with working directory '/home/runner/work/tally/tally/apps/web'. No such file or directory",
        Category::ConfigError,
        "ci.github_actions",
    );
}

#[test]
fn a_full_disk_while_installing_into_site_packages_is_the_machine_alone() {
    // Written for this test: pip's words when the disk fills mid-install.
    let d = diagnosed_by(
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device: '/home/jenkins/workspace/tally/.venv/lib/python3.12/site-packages/tally/data/rates.bin'",
        Category::InfraError,
        "disk",
    );
    assert!(d.confidence >= 0.85, "{} {}", d.confidence, d.decided_by);
    // javac refusing the release the build asks for is the JDK selected,
    // not a compile error beside it (the two tied at 0.35).
    let d = diagnosed_by(
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.13.0:compile (default-compile) on project tally: Fatal error compiling: error: release version 21 not supported -> [Help 1]",
        Category::ConfigError,
        "jdk.version",
    );
    assert!(d.confidence >= 0.8, "{} {}", d.confidence, d.decided_by);
}
