//! Each ecosystem's recognisers on short snippets written for these tests
//! in the tools' real output formats (not lines of any labelled data set).

use super::ecosystems::{diagnosed, excerpt_of_text, not_diagnosed};
use super::*;

fn category(text: &str) -> Category {
    diagnose_text(text).category
}

#[test]
fn nothing_recognised_is_unknown() {
    let d = diagnose_text("Cloning into 'x'...\nall good here\n");
    assert_eq!(d.category, Category::Unknown);
    assert!(d.confidence < 0.3);
}

#[test]
fn pytest_failure_names_the_test() {
    let d = diagnose_text(
        "____________________ test_totals_round ____________________\n\
         E       assert 3 == 4\n\
         tests/test_money.py:12: AssertionError\n\
         FAILED tests/test_money.py::test_totals_round - assert 3 == 4\n\
         ========== 1 failed, 20 passed in 1.20s ==========",
    );
    assert_eq!(d.category, Category::TestFailure);
    let t = &d.facts.failing_tests[0];
    assert_eq!(t.name, "test_totals_round");
    assert_eq!(t.file.as_deref(), Some("tests/test_money.py"));
}

#[test]
fn rustc_error_is_code_with_location() {
    let d = diagnose_text(
        "error[E0308]: mismatched types\n  --> src/ledger.rs:42:9\n   |\nerror: could not compile `ledger` due to previous error",
    );
    assert_eq!(d.category, Category::CodeError);
    let diag = d.facts.diagnostic.unwrap();
    assert_eq!(diag.code.as_deref(), Some("E0308"));
    assert_eq!(diag.file.as_deref(), Some("src/ledger.rs"));
    assert_eq!(diag.line, Some(42));
}

#[test]
fn missing_module_explains_the_test_errors_it_causes() {
    let d = diagnose_text(
        "ImportError while importing test module 'tests/test_cfg.py'.\n\
         E   ModuleNotFoundError: No module named 'yaml'\n\
         ERROR tests/test_cfg.py\n!!!!! Interrupted: 1 error during collection !!!!!",
    );
    assert_eq!(d.category, Category::DependencyError);
    assert_eq!(d.facts.packages[0].name, "yaml");
}

#[test]
fn a_time_limit_explains_the_tests_it_cut_short() {
    let d = diagnose_text(
        "--- FAIL: TestSync (0.20s)\n\
         No output has been received in the last 10m0s, this potentially indicates a stalled build or something wrong with the build itself.",
    );
    assert_eq!(d.category, Category::InfraError);
}

#[test]
fn an_uncaught_error_in_a_test_is_a_code_error() {
    let d = diagnose_text(
        "  1) parser handles empty input:\n     TypeError: Cannot read properties of undefined (reading 'length')\n      at parse (lib/parser.js:10:3)\n\n  1 failing",
    );
    assert_eq!(d.category, Category::CodeError);
}

#[test]
fn lint_and_link_checks_are_code_errors() {
    assert_eq!(
        category(
            "src/app.js\n  12:5  error  'x' is defined but never used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)"
        ),
        Category::CodeError
    );
    assert_eq!(
        category("> Links\n  1. [L0042] 404 https://example.org/gone\n> Dupes\n  None ✓"),
        Category::CodeError
    );
}

#[test]
fn command_not_found_is_config() {
    let d = diagnose_text("./ci/build.sh: line 4: bazel: command not found");
    assert_eq!(d.category, Category::ConfigError);
}

#[test]
fn npm_404_names_the_package() {
    let d = diagnose_text(
        "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found",
    );
    assert_eq!(d.category, Category::DependencyError);
    assert_eq!(d.facts.packages[0].name, "left-padd");
}

#[test]
fn every_rule_compiles_and_documents_itself_in_the_knowledge_base() {
    let _ = &*COMPILED;
    let mut ids = std::collections::HashSet::new();
    for r in rules::RULES {
        assert!(ids.insert(r.id), "duplicate rule id {}", r.id);
        assert!(r.weight > 0.0 && r.weight <= 1.0, "{}", r.id);
        let slug = rules::kb_slug(r);
        let entry =
            crate::kb::lookup(slug).unwrap_or_else(|| panic!("{}: no kb entry {slug}", r.id));
        assert_eq!(
            entry.category,
            r.kind.category().as_str(),
            "{} -> {slug}",
            r.id
        );
    }
}

#[test]
fn go_test_failure_about_a_status_code_is_a_test_failure() {
    let d = diagnose_text(
        "=== RUN   TestSignup\n--- FAIL: TestSignup (0.02s)\n    signup_test.go:31: got status 500, want 201\nFAIL\texample.com/svc/signup\t0.120s",
    );
    assert_eq!(d.category, Category::TestFailure);
    let t = &d.facts.failing_tests[0];
    assert_eq!(
        (t.name.as_str(), t.file.as_deref(), t.line),
        ("TestSignup", Some("signup_test.go"), Some(31))
    );
}

#[test]
fn a_missing_report_after_a_failed_build_is_not_the_cause() {
    let d = diagnose_text(
        "Recording test results\nNo test report files were found. Configuration error?\nFinished: FAILURE",
    );
    assert!(d.confidence < 0.5, "{d:?}");
}

#[test]
fn apt_failing_to_fetch_a_package_index_is_a_dependency_error() {
    let d = diagnose_text(
        "Err:7 http://ppa.example.net/ubuntu focal/main amd64 Packages\n  404  Not Found [IP: 203.0.113.5 80]\n\
         E: Failed to fetch http://ppa.example.net/ubuntu/dists/focal/main/binary-amd64/Packages  404  Not Found [IP: 203.0.113.5 80]\n\
         E: Some index files failed to download. They have been ignored, or old ones used instead.",
    );
    assert_eq!(d.category, Category::DependencyError, "{d:?}");
}

#[test]
fn a_script_raising_because_its_command_failed_is_not_a_crash_of_the_script() {
    let text = "E: Unable to locate package libfoo-dev\n\
         Traceback (most recent call last):\n  File \"ci/bootstrap.py\", line 40, in <module>\n    run(['apt-get', 'install', 'libfoo-dev'])\n\
         subprocess.CalledProcessError: Command '['apt-get', 'install', 'libfoo-dev']' returned non-zero exit status 100";
    let d = diagnose_text(text);
    assert_eq!(d.category, Category::DependencyError, "{d:?}");
    assert!(
        d.findings.iter().all(|f| f.rule != "python.traceback"),
        "{d:?}"
    );
    // Without the wrapper line the traceback is a crash finding.
    let bare =
        diagnose_text("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>");
    assert!(bare.findings.iter().any(|f| f.rule == "python.traceback"));
}

#[test]
fn an_xctest_case_that_crashed_is_a_code_error() {
    let d = diagnose_text(
        "✗ testParsesEmptyFeed, Test crashed\n\
         Executed 120 tests, with 1 failure (0 unexpected) in 3.210 (3.402) seconds",
    );
    assert_eq!(d.category, Category::CodeError, "{d:?}");
}

#[test]
fn a_lit_package_missing_from_the_store_is_a_dependency_error() {
    let d = diagnose_text(
        "fail: [string \"bundle:libs/codec.lua\"]:88: No such hash: 0123456789abcdef0123456789abcdef01234567",
    );
    assert_eq!(d.category, Category::DependencyError, "{d:?}");
}

#[test]
fn line_strength_grades_tool_formats_above_vocabulary() {
    assert!(line_strength("FAILED tests/test_a.py::test_b - assert 1 == 2") >= 0.9);
    assert_eq!(line_strength("an error happened somewhere"), 0.0);
}

#[test]
fn a_failure_count_alone_is_not_confident() {
    let d =
        diagnose_text("Executed 48 tests, with 2 failures (0 unexpected) in 1.204 (1.310) seconds");
    assert_eq!(d.category, Category::TestFailure);
    assert!(d.confidence <= ONLY_COUNTS_CONFIDENCE, "{d:?}");
    // Naming the failing test lifts the cap.
    let named = diagnose_text(
        "Test Case '-[FeedTests testParsesEmptyFeed]' failed (0.012 seconds).\n\
         Executed 48 tests, with 2 failures (0 unexpected) in 1.204 (1.310) seconds",
    );
    assert!(named.confidence > ONLY_COUNTS_CONFIDENCE, "{named:?}");
}

#[test]
fn a_runner_up_as_strong_as_the_winner_leaves_no_confidence() {
    assert_eq!(confidence(0.9, 0.9), 0.0);
    assert!((confidence(0.8, 0.4) - 0.6).abs() < 1e-3);
    assert!((confidence(0.9, 0.0) - 0.9).abs() < 1e-3);
}

#[test]
fn perl_classes_become_ascii_and_keep_their_meaning() {
    assert_eq!(ascii_classes(r"^\w+:\d+"), "^[0-9A-Za-z_]+:[0-9]+");
    assert_eq!(
        ascii_classes(r"[\w.-]+\s"),
        r"[0-9A-Za-z_.-]+[\t\n\x0B\x0C\r ]"
    );
    assert_eq!(ascii_classes(r"\bfoo\b"), r"(?-u:\b)foo(?-u:\b)");
    assert_eq!(
        ascii_classes(r"\\w \[x\] [^\]a] [[:alpha:]\d]"),
        r"\\w \[x\] [^\]a] [[:alpha:]0-9]"
    );
    assert_eq!(
        ascii_classes("[‘'`](?P<pkg>\\S+)"),
        "[‘'`](?P<pkg>[^\\t\\n\\x0B\\x0C\\r ]+)"
    );
    // On ASCII tool output every rule matches what its Unicode form
    // matches: probed with the lines of every ecosystem snippet and of the
    // project's fixture logs.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut corpus = include_str!("ecosystems.rs").to_string();
    for dir in ["samples", "tests/fixtures/logs", "tests/fixtures/baseline"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            corpus += &std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        }
    }
    let probes: Vec<String> = corpus
        .lines()
        .map(|l| clean_line(l).trim().to_string())
        .filter(|l| l.is_ascii() && !l.is_empty())
        .collect();
    let mut exercised = 0;
    for r in rules::RULES {
        let (u, a) = (
            Regex::new(r.pattern).unwrap(),
            Regex::new(&ascii_classes(r.pattern)).unwrap(),
        );
        let mut hit = false;
        for p in &probes {
            let m = u.is_match(p);
            assert_eq!(m, a.is_match(p), "{}: {p}", r.id);
            hit |= m;
        }
        exercised += usize::from(hit);
    }
    assert!(
        exercised * 3 > rules::RULES.len(),
        "only {exercised} rules exercised"
    );
}

#[test]
fn swiftc_messages_listed_by_xcodebuild_are_compile_errors() {
    let d = diagnose_text(
        "Testing failed:\n\t'balance' is inaccessible due to 'private' protection level\n\tWallet-macOSTests:\n** TEST FAILED **",
    );
    assert_eq!(d.category, Category::CodeError, "{d:?}");
}

#[test]
fn an_errno_name_inside_a_file_name_is_not_a_network_error() {
    let d =
        diagnose_text("Running 'test-tcp-econnrefused.lua', 'test-fs.lua'\nError: 1 test failed");
    assert_ne!(d.category, Category::InfraError, "{d:?}");
    assert_eq!(
        category("Error: connect ECONNREFUSED 127.0.0.1:5432"),
        Category::InfraError
    );
}

/// Two rules matching one line with one weight: the diagnosis is the same
/// every time (it once followed a hash map's per-instance order).
#[test]
fn rules_tied_on_one_line_are_ordered_the_same_every_time() {
    let text = "pkg/config.go:1::warning: file is not gofmted with -s (gofmt)";
    let first = diagnose_text(text);
    assert!(first.findings.len() >= 2, "{first:?}");
    for _ in 0..64 {
        let again = diagnose_text(text);
        assert_eq!(again.decided_by, first.decided_by);
        assert_eq!(again.findings, first.findings);
    }
}

#[test]
fn a_network_exception_inside_a_test_is_the_network() {
    // Written for this test in the runtimes' formats.
    for text in [
        "FAILED tests/test_sync.py::test_pull - requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.org', port=443)",
        "Tests run: 3, Failures: 0, Errors: 1\nCaused by: java.net.ConnectException: Connection refused (Connection refused)",
        "1) Client fetches the index\n   Failure/Error: get '/index'\n   Errno::ECONNREFUSED:\n     Failed to open TCP connection to localhost:9200",
    ] {
        diagnosed(text, Category::InfraError);
    }
}

#[test]
fn a_java_package_of_the_project_itself_missing_is_its_code() {
    // Written for this test, in javac's own format.
    let d = diagnose_text(
        "/home/ci/shop/src/main/java/com/acme/shop/cart/Cart.java:7: error: package com.acme.shop.pricing does not exist\n\
         import com.acme.shop.pricing.Rates;",
    );
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.decided_by.starts_with("javac."), "{}", d.decided_by);
    // The same through Maven's compiler plugin, which prints `[line,col]`.
    let d = diagnose_text(
        "[ERROR] /home/ci/shop/src/main/java/com/acme/shop/cart/Cart.java:[7,25] error: package com.acme.shop.pricing does not exist",
    );
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    // Another organisation's package is a missing library.
    let d = diagnose_text(
        "/home/ci/shop/src/test/java/com/acme/shop/cart/CartTest.java:3: error: package org.junit does not exist",
    );
    assert_eq!(d.category, Category::DependencyError, "{}", d.decided_by);
    // Sharing only the organisation's domain is not enough.
    let d = diagnose_text(
        "/home/ci/commons-x/src/main/java/org/apache/x/Io.java:5: error: package org.apache.commons.io does not exist",
    );
    assert_eq!(d.category, Category::DependencyError, "{}", d.decided_by);
}

#[test]
fn a_stack_trace_a_logger_printed_is_not_an_uncaught_error() {
    // Written for this test: errors a program caught and logged with
    // their stack trace (logback, Maven's debug output, java.util.logging,
    // Python's logging), as passing runs print them.
    for text in [
        "10:01:02.345 [main] ERROR c.e.store.Query - Error running query: \n\
         java.lang.NullPointerException: null\n\
         \tat com.example.store.Query.run(Query.java:91) [classes/:na]\n\
         Caused by: java.lang.IllegalStateException: not started\n\
         \t... 12 more",
        "[DEBUG] com.example.Checker: Update check failed!\njava.lang.NullPointerException\n\tat com.example.Checker.check(Checker.java:54)",
        "Mar 3, 2024 10:01:02 AM com.example.Loader load\nWARNING: Failed to read file.\njava.lang.IllegalArgumentException: protocol = http host = null",
        "    [Test worker] ERROR com.example.Runner - after scenario\n    java.lang.IllegalStateException: after scenario\n        at com.example.Runner.run(Runner.java:12)",
        "ERROR:root:could not refresh the cache\nTraceback (most recent call last):\n  File \"app/cache.py\", line 3, in refresh\n    token = env['TOKEN']\nKeyError: 'TOKEN'",
    ] {
        not_diagnosed(text, Category::CodeError);
    }
    // Uncaught, or reported by the runner as the error a test died of:
    // a code error.
    for text in [
        "testLoad(com.example.LoaderTest)  Time elapsed: 0.01 sec  <<< ERROR!\njava.lang.NullPointerException\n\tat com.example.Loader.load(Loader.java:12)",
        "[ERROR] testLoad(com.example.LoaderTest)  Time elapsed: 0.01 s  <<< ERROR!\njava.lang.NullPointerException\n\tat com.example.Loader.load(Loader.java:12)",
        "Exception in thread \"main\" java.lang.IllegalStateException: not started\n\tat com.example.Main.main(Main.java:5)",
        "Running the loader\nTraceback (most recent call last):\n  File \"app/cache.py\", line 3, in refresh\n    token = env['TOKEN']\nTypeError: 'NoneType' object is not subscriptable",
        // A record, then something else, then an error: not the record's.
        "10:01:02.345 [main] INFO  c.e.App - starting\nloading fixtures\njava.lang.NullPointerException\n\tat com.example.App.main(App.java:5)",
    ] {
        diagnosed(text, Category::CodeError);
    }
}

#[test]
fn an_expectation_on_a_skip_notice_or_an_info_record_is_not_a_test_failing() {
    // Written for this test: a deploy script that skips itself on the
    // wrong branch, and a program's own INFO record, both in the words of
    // an expectation.
    for text in [
        "Skipping release upload: wrong branch. Expected 'main' but was 'fix-cart-total'.",
        "INFO: Format mismatch: expected 'ISO_8601' but got 'RFC_2822' (trying the next parser)",
    ] {
        diagnosed(text, Category::Unknown);
    }
    // The same words from a test are its expectation.
    diagnosed(
        "AssertionError: release upload: Expected 'main' but was 'fix-cart-total'.",
        Category::TestFailure,
    );
}

#[test]
fn what_the_trace_of_a_warning_names_is_not_the_failure() {
    // Written for this test: a program that warns, with the trace, that an
    // optional import failed and goes on — the message introducing the
    // trace on its own line, or a logger's warning record above it.
    for text in [
        "Warning: the optional plotting backend is off due to traceback: Traceback (most recent call last):\n\
         \t  File \"/opt/venv/lib/python3.11/site-packages/plotkit/backend.py\", line 12, in load\n\
         \t    import gtkplot\n\
         \tModuleNotFoundError: No module named 'gtkplot'",
        "WARNING:plotkit:optional backend unavailable\n\
         Traceback (most recent call last):\n  File \"plotkit/backend.py\", line 12, in load\n    import gtkplot\n\
         ModuleNotFoundError: No module named 'gtkplot'",
    ] {
        diagnosed(text, Category::Unknown);
    }
    // The same trace uncaught, or after an error record, still names the
    // missing module.
    for text in [
        "Traceback (most recent call last):\n  File \"plotkit/backend.py\", line 12, in load\n    import gtkplot\n\
         ModuleNotFoundError: No module named 'gtkplot'",
        "ERROR:plotkit:backend unavailable\n\
         Traceback (most recent call last):\n  File \"plotkit/backend.py\", line 12, in load\n    import gtkplot\n\
         ModuleNotFoundError: No module named 'gtkplot'",
    ] {
        diagnosed(text, Category::DependencyError);
    }
}

#[test]
fn a_stack_trace_after_a_java_util_logging_record_in_another_language_is_handled() {
    // Written for this test: java.util.logging's two-line records as a JVM
    // in Swedish, French or German prints them (upper case in JDK 8, title
    // case since), each followed by the stack trace it logged.
    for level in ["ALLVARLIG", "AVERTISSEMENT", "Schwerwiegend", "Advertencia"] {
        let text = format!(
            "jan 13, 2024 2:28:43 EM com.example.Loader load\n\
             {level}: Failed to read file.\n\
             java.lang.IllegalArgumentException: protocol = http host = null\n\
             \tat com.example.Loader.load(Loader.java:40)"
        );
        not_diagnosed(&text, Category::CodeError);
    }
}

#[test]
fn javac_and_javadoc_warnings_are_not_compile_errors() {
    // Written for this test, in javac's, javadoc's and Maven's formats.
    for text in [
        "/home/ci/shop/src/main/java/com/acme/shop/Cart.java:90: warning: [deprecation] getHours() in Date has been deprecated",
        "/home/ci/shop/src/main/java/com/acme/shop/Cart.java:268: warning - @return tag has no arguments.",
        "[WARNING] /home/ci/shop/src/main/java/com/acme/shop/Cart.java:[41,17] warning: [unchecked] unchecked conversion",
    ] {
        not_diagnosed(text, Category::CodeError);
    }
    // Its errors, with or without `error: ` (JDK 6 printed none), are.
    for text in [
        "/home/ci/shop/src/main/java/com/acme/shop/Cart.java:90: error: cannot find symbol",
        "/home/ci/shop/src/main/java/com/acme/shop/Cart.java:90: cannot find symbol",
        "[ERROR] /home/ci/shop/src/main/java/com/acme/shop/Cart.java:[41,17] incompatible types: int cannot be converted to String",
    ] {
        diagnosed(text, Category::CodeError);
    }
}

#[test]
fn a_network_error_logged_as_handled_is_not_the_failure() {
    // Written for this test: an HTTP client's notice of a request it
    // retries, and network errors a logger printed at INFO or DEBUG or a
    // build tool at its warning level.
    for text in [
        "Mar 3, 2024 10:01:02 AM org.apache.http.impl.execchain.RetryExec execute\n\
         INFO: I/O exception (java.net.SocketException) caught when processing request to {}->https://repo.example.org:443: Connection reset",
        "INFO: Retrying request to {}->https://repo.example.org:443",
        "[INFO] Unable to reach mirror: java.net.ConnectException: Connection refused",
        "2024-03-03 10:01:02,123 [pool-1] DEBUG o.e.client.Pool - java.net.SocketTimeoutException: Read timed out",
        // A build tool's warning: it went on without what it could not
        // fetch (Maven's snapshot metadata, sbt's `[warn]`).
        "[WARNING] Could not transfer metadata com.example:lib:1.0-SNAPSHOT/maven-metadata.xml from/to snapshots (https://repo.example.org/snapshots): repo.example.org: Name or service not known",
        "[warn] Unable to reach https://repo.example.org: java.net.ConnectException: Connection refused",
        // A logger whose prefix has two bracketed fields.
        "1042 [worker 7] [main] DEBUG ConnPool - Failed to create connection: java.net.ConnectException: Connection refused",
    ] {
        not_diagnosed(text, Category::InfraError);
    }
    // The same exception reported as an error is the network.
    let d =
        diagnose_text("[ERROR] Failed to fetch index: java.net.SocketException: Connection reset");
    assert_eq!(d.category, Category::InfraError, "{}", d.decided_by);
    let d = diagnose_text(
        "[ERROR] Could not transfer artifact com.example:lib:jar:1.0 from/to central (https://repo.example.org): repo.example.org: Name or service not known",
    );
    assert_eq!(d.category, Category::InfraError, "{}", d.decided_by);
}

#[test]
fn a_parser_s_invalid_token_is_not_a_credential() {
    // Written for this test: parsers name the token they could not read;
    // a service that refuses a credential says the token is invalid.
    for text in [
        "[ERROR] WARNING: CSS error: 'http://localhost:8080/app/css/site.css' [4:18] Error in style rule. (Invalid token \":\". Was expecting one of: <EOF>, <S>.)",
        "ParseError: invalid token '}' at line 3, column 7",
    ] {
        not_diagnosed(text, Category::ConfigError);
    }
    for text in [
        "Error: Invalid token",
        "{\"message\":\"Invalid token\"}",
        "error: invalid access token provided",
        "Upload failed: invalid API key",
    ] {
        diagnosed(text, Category::ConfigError);
    }
}

#[test]
fn a_closed_socket_or_channel_of_the_program_is_not_the_network_or_a_lost_agent() {
    // Written for this test: a network library's own tests close sockets
    // and NIO channels on purpose, and a clean-up step names a generated
    // page after an exception class. None of it is the machine.
    for text in [
        "java.net.SocketException: Socket closed\n\tat java.net.PlainSocketImpl.socketAccept(Native Method)",
        "java.lang.RuntimeException: java.nio.channels.ClosedChannelException\n\tat com.example.net.Pipe.write(Pipe.java:88)",
        "rm 'docs/api/com/example/io/ChannelClosedException.html'",
    ] {
        not_diagnosed(text, Category::InfraError);
    }
    // A Jenkins agent's channel closing, and a connection the peer reset,
    // are.
    for text in [
        "hudson.remoting.ChannelClosedException: Channel \"hudson.remoting.Channel@5e2c:agent-7\": Remote call on agent-7 failed. The channel is closing down or has closed down",
        "java.io.IOException: Backing channel 'agent-7' is disconnected.",
        "[ERROR] Failed to fetch index: java.net.SocketException: Connection reset",
    ] {
        diagnosed(text, Category::InfraError);
    }
}

#[test]
fn tests_in_error_without_an_assertion_are_a_code_error() {
    assert_eq!(
        category(
            "Results :\n\nTests in error: \n  shouldParse(com.example.ParserTest): null\n\nTests run: 12, Failures: 0, Errors: 1, Skipped: 0\n\
         java.lang.NullPointerException\n\tat com.example.Parser.parse(Parser.java:42)",
        ),
        Category::CodeError
    );
}

#[test]
fn an_exception_pytest_reports_behind_e_is_a_crash() {
    assert_eq!(
        category(
            "    def test_total():\n>       assert total(None) == 0\n\
         E       TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'\n",
        ),
        Category::CodeError
    );
}

#[test]
fn a_jvm_linkage_error_between_library_versions_is_a_dependency_error() {
    assert_eq!(
        category(
            "Exception in thread \"main\" java.lang.NoSuchMethodError: com.example.json.Reader.read(Ljava/io/Reader;)V\n\tat com.example.App.main(App.java:10)",
        ),
        Category::DependencyError
    );
}

#[test]
fn the_learned_model_advises_with_its_probabilities_and_reasons() {
    let d = diagnose_text(
        "____________________ test_totals_round ____________________\n\
         E       assert 3 == 4\n\
         FAILED tests/test_money.py::test_totals_round - assert 3 == 4\n",
    );
    let m = d.model.expect("the shipped model advises");
    assert_eq!(m.probabilities[0].0, Category::TestFailure);
    assert!((m.probabilities.iter().map(|p| p.1).sum::<f32>() - 1.0).abs() < 0.01);
    assert!(!m.deciding.is_empty());
    // Tests that failed without an assertion read: the model says why a
    // human should look.
    let d = diagnose_text("--- FAIL: TestSync (0.20s)\nFAIL\tgithub.com/acme/sync\t0.2s\n");
    let m = d.model.expect("the shipped model advises");
    assert!(m.review_reason.is_some_and(|r| r.contains("no assertion")));
}

#[test]
fn linters_reporting_under_a_test_command_are_a_code_error() {
    // Written for this test in each tool's reporter format.
    for text in [
        // jshint's default reporter
        "lib/shapes.js: line 8, col 14, Missing semicolon.\n\n1 error\nnpm ERR! Test failed.",
        // standard / xo: the shared `file:line:col: message` shape
        "standard: Use JavaScript Standard Style\n  /work/app/lib/shapes.js:3:10: Extra semicolon.",
        // prettier --check
        "Checking formatting...\n[warn] src/shapes.js\n[warn] Code style issues found in the above file. Forgot to run Prettier?",
        // a make target of the style check
        "gofmt -l .\nshapes/area.go\nmake: *** [fmt] Error 1",
    ] {
        diagnosed(text, Category::CodeError);
    }
}

#[test]
fn a_linter_message_that_says_expected_is_not_an_assertion() {
    let d = diagnose_text(
        "/work/app/src/shapes.js\n  12:5  error  Expected indentation of 2 spaces but found 4  indent\n\n✖ 1 problem (1 error, 0 warnings)",
    );
    assert_eq!(d.category, Category::CodeError);
    assert!(
        d.findings.iter().all(|f| f.kind != Kind::Assertion),
        "{d:#?}"
    );
    assert!(d.confidence >= 0.8, "{d:#?}");
}

#[test]
fn warnings_in_the_shared_diagnostic_shape_are_not_the_failure() {
    let d = diagnose_text(
        "src/shapes.c:4:7: warning: unused variable 'n' [-Wunused-variable]\nlib/area.js:3:1: note: declared here",
    );
    assert!(
        d.findings.iter().all(|f| f.rule != "lint.diagnostic"),
        "{d:#?}"
    );
    assert!(line_strength("src/shapes.c:4:7: warning: unused variable 'n'") == 0.0);
}

#[test]
fn surefire_errors_that_name_an_uncaught_exception_are_a_code_error() {
    let d = diagnose_text(
        "[ERROR] Tests run: 5, Failures: 0, Errors: 1, Skipped: 0\n\
         [ERROR] Errors: \n\
         [ERROR]   ShapeTest.areaOfNothing:31 » NullPointer\n\
         [INFO] BUILD FAILURE",
    );
    assert_eq!(d.category, Category::CodeError);
    assert!(d.confidence >= 0.6, "{d:#?}");
    // The failing test is still named.
    assert!(
        d.facts
            .failing_tests
            .iter()
            .any(|t| t.name == "areaOfNothing")
    );
    // Surefire 2.13–2.18's shape (written for this test): no `[ERROR]`,
    // helper frames after `->`, a superclass's method after `>`, and no
    // `»` when the test's own code threw.
    for line in [
        "  ShapeTest.areaOfNothing:31->scaled:12 » StringIndexOutOfBounds",
        "  ShapeTest>BaseShapeTest.setUp:20 » IllegalState not started",
        "  ShapeTest.areaOfNothing:31->scaled:12 NullPointer",
    ] {
        let d = diagnose_text(&format!("Tests in error: \n{line}\n"));
        assert!(
            d.findings.iter().any(|f| f.rule == "surefire.error_type"),
            "{line}: {d:#?}"
        );
        assert_eq!(d.category, Category::CodeError, "{line}");
    }
    // A failed assertion in the same summary is no uncaught error.
    let d = diagnose_text("Failed tests: \n  ShapeTest.area:31 expected:<4> but was:<5>\n");
    assert!(d.findings.iter().all(|f| f.rule != "surefire.error_type"));
    // The same summary naming a network exception is the network.
    assert_eq!(
        category("[ERROR] Errors: \n[ERROR]   ClientIT.fetch:40 » SocketTimeout connect timed out"),
        Category::InfraError
    );
}

#[test]
fn a_lost_test_browser_a_dead_build_daemon_and_os_limits_are_the_machine() {
    // Written for this test in each tool's format.
    for text in [
        "WARN [HeadlessChrome 90.0 (Linux x86_64)]: Disconnected (0 times), because no message in 30000 ms.\nExecuted 12 of 40 DISCONNECTED (30.1 secs / 0.2 secs)",
        "FAILURE: Build failed with an exception.\n* What went wrong:\nGradle build daemon disappeared unexpectedly (it may have been killed or may have crashed)",
        "java.io.IOException: Too many open files\n\tat java.io.FileInputStream.open0(Native Method)",
        "Error: EMFILE: too many open files, open '/tmp/cache/a.json'",
        "psql: FATAL:  the database system is starting up",
    ] {
        diagnosed(text, Category::InfraError);
    }
    let d = diagnose_text(
        "ERROR [launcher]: Cannot start ChromeHeadless\n\tNo binary for ChromeHeadless browser on your platform.",
    );
    assert_eq!(d.category, Category::ConfigError, "{d:#?}");
    assert_eq!(d.findings[0].kb, "command-not-found");
}

#[test]
fn a_test_the_framework_aborted_at_its_time_limit_is_a_failed_test() {
    // Written for this test in each framework's format.
    for text in [
        "  1) Store\n       saves a cart:\n     Error: Timeout of 2000ms exceeded. For async tests and hooks, ensure \"done()\" is called.",
        "org.junit.runners.model.TestTimedOutException: test timed out after 500 milliseconds",
        "E       Failed: Timeout >30.0s",
        "panic: test timed out after 10m0s\n\ngoroutine 7 [running]:",
    ] {
        let d = diagnosed(text, Category::TestFailure);
        assert_eq!(d.findings[0].kb, "test-timeout", "{text}\n{d:#?}");
    }
}

#[test]
fn compilers_and_runtimes_of_more_languages_are_code_errors() {
    // Written for this test in each compiler's or runtime's format.
    for (text, kb) in [
        (
            "Exception in thread \"main\" java.lang.RuntimeException: Unable to resolve symbol: totl in this context, compiling:(shop/cart.clj:9:3)",
            "jvm-compile-error",
        ),
        (
            "Global symbol \"$totl\" requires explicit package name (did you forget to declare \"my $totl\"?) at lib/Shop/Cart.pm line 9.",
            "syntax-error",
        ),
        (
            "File \"src/cart.ml\", line 9, characters 2-6:\nError: Unbound value totl",
            "syntax-error",
        ),
        (
            "/work/shop/src/Cart.groovy: 9: unable to resolve class Totl",
            "jvm-compile-error",
        ),
        (
            "e: /work/shop/src/main/kotlin/Cart.kt: (9, 5): Unresolved reference: totl",
            "jvm-compile-error",
        ),
        (
            "Parse error: syntax error, unexpected '}' in /work/shop/src/Cart.php on line 9",
            "syntax-error",
        ),
        (
            "terminate called after throwing an instance of 'std::out_of_range'\n  what():  vector::_M_range_check",
            "uncaught-exception",
        ),
        (
            "ERROR: LoadError: UndefVarError: totl not defined",
            "uncaught-exception",
        ),
    ] {
        let d = diagnosed(text, Category::CodeError);
        assert_eq!(d.findings[0].kb, kb, "{text}\n{d:#?}");
    }
    let d = diagnose_text(
        "Test Failed at /work/shop/test/runtests.jl:9\n  Expression: total([1, 2]) == 4\n   Evaluated: 3 == 4",
    );
    assert_eq!(d.category, Category::TestFailure, "{d:#?}");
}

/// A mocha run (written for this test) whose failure report ends the step,
/// with `cause` printed by the server the tests talk to far above it.
fn mocha_step(cause: &str) -> crate::logs::Excerpt {
    let mut log = String::from("$ npm test\n\n> shop@1.0.0 test\n> mocha\n\n");
    log.push_str(cause);
    for i in 0..60 {
        log.push_str(&format!("    ✓ prices item {i} ({i}ms)\n"));
    }
    log.push_str(
        "\n  59 passing (2s)\n  1 failing\n\n  1) cart\n       totals the basket:\n\n      \
         AssertionError: expected 3 to equal 4\n      + expected - actual\n\n      -3\n      +4\n\n      \
         at Context.<anonymous> (test/cart.test.js:12:20)\n\n\n\
         The command \"npm test\" exited with 1.\n",
    );
    excerpt_of_text(&log)
}

#[test]
fn a_cause_printed_away_from_the_report_holds_the_answer_for_review() {
    let plain = diagnose(&mocha_step(""));
    assert_eq!(plain.category, Category::TestFailure, "{plain:#?}");
    assert!(plain.confidence > ONLY_COUNTS_CONFIDENCE, "{plain:#?}");

    let ex = mocha_step(
        "  server\nError: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n\n",
    );
    // The excerpt shows the report; the refused connection is read aside.
    assert!(
        ex.lines.iter().any(|l| l.text.contains("AssertionError")),
        "{ex:#?}"
    );
    assert!(
        !ex.lines.iter().any(|l| l.text.contains("ECONNREFUSED")),
        "{ex:#?}"
    );
    assert!(
        ex.aside.iter().any(|l| l.text.contains("ECONNREFUSED")),
        "{ex:#?}"
    );
    let d = diagnose(&ex);
    // It does not vote (the report still decides) but holds the answer.
    assert_eq!(d.category, Category::TestFailure, "{d:#?}");
    assert!(d.confidence <= ONLY_COUNTS_CONFIDENCE, "{d:#?}");
    assert!(
        d.decided_by.contains("held for review") && d.decided_by.contains("INFRA_ERROR"),
        "{}",
        d.decided_by
    );
}

#[test]
fn a_symptom_printed_away_from_the_report_changes_nothing() {
    // Another test's report above the one the excerpt shows is the same
    // kind of evidence: no hold.
    let ex = mocha_step("  0) setup\n     AssertionError: expected true to be false\n\n");
    let d = diagnose(&ex);
    assert_eq!(d.category, Category::TestFailure, "{d:#?}");
    assert!(d.confidence > ONLY_COUNTS_CONFIDENCE, "{d:#?}");
    assert!(
        !d.decided_by.contains("held for review"),
        "{}",
        d.decided_by
    );
}

#[test]
fn a_lint_script_that_failed_under_npm_test_stands_for_the_step() {
    let log = |script: &str| {
        format!(
            "$ npm test\n\n> app@1.0.0 test /home/travis/build/o/app\n> npm run {script} && mocha\n\n\
             > app@1.0.0 {script} /home/travis/build/o/app\n> ./scripts/check-headers.sh\n\n\
             src/a.js has no license header\n\
             npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n\
             npm ERR! app@1.0.0 {script}: `./scripts/check-headers.sh`\nnpm ERR! Exit status 1\n\
             npm ERR! Test failed.  See above for more details.\n\
             The command \"npm test\" exited with 1.\n"
        )
    };
    let diagnosed = |text: String| {
        let ex = crate::logs::excerpt_reader(
            std::io::Cursor::new(text.into_bytes()),
            &crate::logs::ExcerptOptions::default(),
        )
        .unwrap();
        diagnose(&ex)
    };
    let d = diagnosed(log("lint"));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.decided_by.contains("`lint`"), "{}", d.decided_by);
    // A test script failing the same way is the test step's: its name
    // does not stand for the step (what does is that no test failed).
    let d = diagnosed(log("test:unit"));
    assert!(!d.decided_by.contains("`test:unit`"), "{}", d.decided_by);
    assert!(
        d.decided_by.contains("no failed test read"),
        "{}",
        d.decided_by
    );
}

/// An excerpt line (for excerpts built by hand).
fn excerpt_line(line_no: u64, text: &str) -> crate::logs::ExcerptLine {
    crate::logs::ExcerptLine {
        line_no,
        text: text.into(),
        score: 1.0,
    }
}

/// A Maven test step (written for this test) whose block read first is the
/// build tool's generic footer, with `shown` the block the learned ranking
/// shows, `aside` another block of the step and `tail` the log's last lines.
fn maven_footer_excerpt(
    shown: &[(u64, &str)],
    aside: &[(u64, &str)],
    tail: &[(u64, &str)],
) -> crate::logs::Excerpt {
    let footer = [
        (90, "[ERROR] "),
        (
            91,
            "[ERROR] Please refer to /home/ci/app/target/surefire-reports for the individual test results.",
        ),
        (92, "[ERROR] -> [Help 1]"),
        (
            93,
            "[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.",
        ),
    ];
    let mut excerpt = two_block_excerpt(shown, &footer, "mvn test -B", 95);
    excerpt.aside = aside.iter().map(|(n, t)| excerpt_line(*n, t)).collect();
    excerpt.tail = tail.iter().map(|(n, t)| (*n, t.to_string())).collect();
    excerpt
}

/// An excerpt whose two rankings chose differently: `shown` the block the
/// learned ranking shows, `read` the one the diagnosis reads, in a step
/// running `command` that failed with exit code 1 at line `footer` (the
/// log's last but one).
fn two_block_excerpt(
    shown: &[(u64, &str)],
    read: &[(u64, &str)],
    command: &str,
    footer: u64,
) -> crate::logs::Excerpt {
    let lines = |l: &[(u64, &str)]| l.iter().map(|(n, t)| excerpt_line(*n, t)).collect();
    crate::logs::Excerpt {
        lines: lines(shown),
        evidence: lines(read),
        failed_steps: vec![crate::logs::excerpt::FailedStep {
            line_no: footer,
            command: Some(command.into()),
            exit_code: Some(1),
        }],
        total_lines: footer + 1,
        ..crate::logs::Excerpt::default()
    }
}

#[test]
fn a_block_read_first_that_holds_nothing_gives_way_to_the_block_shown() {
    let crash = [
        (
            40,
            "parsesHeader(app.HeaderTest)  Time elapsed: 0.01 sec  <<< ERROR!",
        ),
        (41, "java.lang.ArrayIndexOutOfBoundsException: 7"),
        (42, "\tat app.Header.parse(Header.java:31)"),
    ];
    let d = diagnose(&maven_footer_excerpt(
        &crash,
        &[],
        &[(96, "Done. Your build exited with 1.")],
    ));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.decided_by.contains("another block"), "{}", d.decided_by);
    assert!(
        d.confidence <= ONLY_COUNTS_CONFIDENCE,
        "goes to review: {}",
        d.confidence
    );
    // Nothing in either block: the failed step is all there is, and a
    // test step that reports no failed test failed around its tests.
    let d = diagnose(&maven_footer_excerpt(
        &[],
        &[],
        &[(96, "Done. Your build exited with 1.")],
    ));
    assert_eq!(d.category, Category::CodeError);
    assert!(d.decided_by.starts_with("failed step"), "{}", d.decided_by);
    assert!(
        d.decided_by.contains("no failed test read"),
        "{}",
        d.decided_by
    );
    // Maven saying tests failed is enough for the step to be a test run.
    let tests_failed = [(94, "[ERROR] There are test failures.")];
    let d = diagnose(&maven_footer_excerpt(&[], &[], &tests_failed));
    assert_eq!(d.category, Category::TestFailure, "{}", d.decided_by);
    // And it names no cause: the report it points at, in the block shown,
    // is read (without it, a weak "tests failed" from the tail).
    let d = diagnose(&maven_footer_excerpt(&crash, &[], &tests_failed));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.decided_by.contains("another block"), "{}", d.decided_by);
    // A block shown that is no test report is not the report they point
    // at: tests failed, as the last lines say.
    let d = diagnose(&maven_footer_excerpt(
        &[(
            40,
            "cp: cannot stat 'config/app.properties': No such file or directory",
        )],
        &[],
        &tests_failed,
    ));
    assert_eq!(d.category, Category::TestFailure, "{}", d.decided_by);
    // A cause in the last lines is read as before: the block shown is not.
    let d = diagnose(&maven_footer_excerpt(
        &crash,
        &[],
        &[(
            94,
            "No output has been received in the last 10m0s, this potentially indicates a stalled build or something wrong with the build itself.",
        )],
    ));
    assert_eq!(d.category, Category::InfraError, "{}", d.decided_by);
}

#[test]
fn a_test_step_that_reports_no_failed_test_failed_around_its_tests() {
    let step = |lines: &[(u64, &str)], command: Option<&str>| {
        let mut ex = maven_footer_excerpt(lines, &[], &[(96, "Done. Your build exited with 1.")]);
        ex.failed_steps[0].command = command.map(Into::into);
        diagnose(&ex)
    };
    // Written for this test: a check no recogniser knows, run by `npm test`.
    let check = [(40, "dist/app.min.js is 212 kB, over its budget of 200 kB")];
    let d = step(&check, Some("npm test"));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(
        d.decided_by.contains("no failed test read"),
        "{}",
        d.decided_by
    );
    // An inference from what is missing never completes on its own.
    assert!(d.confidence <= 0.3, "{}", d.confidence);
    // It stands in for a weaker finding of its category (make's own
    // "Error 2" alone is no answer).
    let d = step(
        &[(40, "make: *** [integration] Error 2")],
        Some("make test"),
    );
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.confidence < 0.4, "{}", d.confidence);
    // Nor does it add to a finding of the same category: an uncaught error
    // under a test step that reports no failed test is as sure as without
    // a step.
    let crash = [
        (
            40,
            "TypeError: Cannot read properties of undefined (reading 'id')",
        ),
        (41, "    at render (/home/ci/app/src/view.js:12:9)"),
    ];
    let with_step = step(&crash, Some("npm test"));
    let without = step(&crash, None);
    assert_eq!(
        with_step.category,
        Category::CodeError,
        "{}",
        with_step.decided_by
    );
    assert_eq!(with_step.confidence, without.confidence);
}

#[test]
fn another_block_of_the_failed_step_votes_only_when_nothing_else_was_recognised() {
    let aside = [(
        30,
        "java.lang.IllegalStateException: connection pool closed",
    )];
    let d = diagnose(&maven_footer_excerpt(
        &[],
        &aside,
        &[(96, "Done. Your build exited with 1.")],
    ));
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(d.decided_by.contains("another block"), "{}", d.decided_by);
    assert!(d.confidence <= ONLY_COUNTS_CONFIDENCE);
    // The log's last lines count the failed tests: the aside block only
    // holds back, as before.
    let tail = [(94, "Tests run: 12, Failures: 2, Errors: 0, Skipped: 0")];
    let d = diagnose(&maven_footer_excerpt(&[], &aside, &tail));
    assert_eq!(d.category, Category::TestFailure, "{}", d.decided_by);
    assert!(!d.decided_by.contains("another block"), "{}", d.decided_by);
}

#[test]
fn pytest_prefixes_the_syntax_error_of_a_module_it_collects() {
    let d = diagnose_text(
        "____________ ERROR collecting tests/test_parse.py ____________\n\
         tests/test_parse.py:1: in <module>\n    from parse import read\n\
         E     File \"/src/parse.py\", line 7\n\
         E       def read(:\n\
         E               ^\n\
         E   SyntaxError: invalid syntax\n",
    );
    assert_eq!(d.category, Category::CodeError, "{}", d.decided_by);
    assert!(
        d.decided_by.starts_with("python.syntax"),
        "{}",
        d.decided_by
    );
}

#[test]
fn a_build_that_skips_its_tests_is_not_a_test_step() {
    let step = |command: &str| {
        let mut ex = maven_footer_excerpt(&[], &[], &[(96, "Done. Your build exited with 1.")]);
        ex.failed_steps[0].command = Some(command.into());
        diagnose(&ex)
    };
    for command in [
        "mvn install -DskipTests=true -Dmaven.javadoc.skip=true -B -V",
        "mvn verify -Dmaven.test.skip=true",
        "./gradlew build -x test",
        "./gradlew assemble",
        "cargo build --release",
    ] {
        let d = step(command);
        assert_eq!(
            d.category,
            Category::CodeError,
            "{command}: {}",
            d.decided_by
        );
        assert!(d.decided_by.starts_with("failed step"), "{}", d.decided_by);
    }
    // Test steps: theirs when a test failed.
    for command in ["mvn install -B", "./gradlew build", "cargo test"] {
        let mut ex = maven_footer_excerpt(
            &[],
            &[],
            &[(94, "Tests run: 12, Failures: 2, Errors: 0, Skipped: 0")],
        );
        ex.failed_steps[0].command = Some(command.into());
        assert_eq!(diagnose(&ex).category, Category::TestFailure, "{command}");
    }
}

#[test]
fn a_property_that_skips_a_check_does_not_name_the_step() {
    // Travis' default Java install line skips the tests and the javadoc:
    // it builds.
    assert_eq!(
        step_kind("mvn install -DskipTests=true -Dmaven.javadoc.skip=true -B -V"),
        Some(Kind::Compile)
    );
    assert_eq!(
        step_kind("mvn -B verify -Dcheckstyle.skip=true -Dlicense.skip"),
        Some(Kind::TestFailed)
    );
    // The check itself, as a goal or a plugin, names a check.
    assert_eq!(step_kind("mvn javadoc:javadoc"), Some(Kind::Lint));
    assert_eq!(step_kind("maven-javadoc-plugin"), Some(Kind::Lint));
    assert_eq!(step_kind("japicmp-maven-plugin"), Some(Kind::Lint));
    assert_eq!(step_kind("apache-rat-plugin"), Some(Kind::Lint));
}

#[test]
fn checks_beside_the_compiler_are_code_errors() {
    // Each line in its tool's documented shape, names written for the test.
    for line in [
        "[ERROR] Failed to execute goal com.github.siom79.japicmp:japicmp-maven-plugin:0.11.0:cmp (default) on project shop: Breaking the build because there is at least one incompatibility: com.shop.Basket.add(int):METHOD_REMOVED",
        "[error] shop: Failed binary compatibility check against com.shop:shop_2.12:1.0.0! Found 2 potential problems",
        "FAIL ./dist/shop.js: 12.5KB > maxSize 10KB (gzip)",
        "  Package size limit has exceeded by 1.2 KB",
        "[ERROR] Failed to execute goal com.github.spotbugs:spotbugs-maven-plugin:3.1.1:check (default) on project shop: failed with 1 bugs and 0 errors",
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-pmd-plugin:3.8:check (default) on project shop: You have 3 PMD violations. For more details see: /home/travis/build/target/pmd.xml",
        "[ERROR] Failed to execute goal org.apache.rat:apache-rat-plugin:0.12:check (default) on project shop: Too many files with unapproved license: 1 See RAT report in: /home/travis/build/shop/target/rat.txt",
        "[ERROR] Failed to execute goal com.mycila:license-maven-plugin:3.0:check (default) on project shop: Some files do not have the expected license header",
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-javadoc-plugin:3.0.0:jar (attach-javadocs) on project shop: MavenReportException: Error while generating Javadoc:",
        "Warning, treated as error:",
    ] {
        let d = diagnosed(line, Category::CodeError);
        assert!(
            d.decided_by.starts_with("check."),
            "{line}: {}",
            d.decided_by
        );
    }
}

#[test]
fn maven_s_dependency_goals_name_the_step_only_when_nothing_else_runs() {
    for cmd in [
        "mvn dependency:go-offline",
        "mvn -B -q clean dependency:resolve dependency:resolve-plugins",
        "./mvnw dependency:tree -Dverbose",
    ] {
        assert_eq!(step_kind(cmd), Some(Kind::Dependency), "{cmd}");
    }
    // The goals list the dependencies, then the tests run: a test step.
    assert_eq!(
        step_kind("mvn clean dependency:list test -Pcoverage -Dsort"),
        Some(Kind::TestFailed)
    );
}

#[test]
fn a_jvm_flag_that_names_out_of_memory_is_not_one() {
    // The JVM's own options name the error they react to; a daemon's
    // settings print them (invented values).
    let d = diagnose_text(
        "Received result Failure[value=Execution failed for task ':compileTestJava'.] from daemon \
         DaemonInfo{pid=4121, context=DefaultDaemonContext[javaHome=/usr/lib/jvm/java-8, \
         daemonOpts=-XX:MaxMetaspaceSize=256m,-XX:+HeapDumpOnOutOfMemoryError,-Xmx512m]}",
    );
    assert_ne!(d.category, Category::InfraError, "{d:#?}");
    diagnosed(
        "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
        Category::InfraError,
    );
}

#[test]
fn a_missing_module_of_the_project_itself_is_a_code_error() {
    // Python 3: the frames show `shop/` is a directory of the checkout.
    let own = r#"Traceback (most recent call last):
  File "/home/travis/build/acme/shop/shop/__init__.py", line 3, in <module>
    from shop.cart import Cart
  File "/home/travis/build/acme/shop/shop/cart.py", line 5, in <module>
    from shop.pricing.rules import discount
ImportError: No module named 'shop.pricing.rules'"#;
    let d = diagnosed(own, Category::CodeError);
    assert!(d.decided_by.starts_with("python.own_module"), "{d:#?}");
    assert!(d.facts.packages.is_empty(), "{:#?}", d.facts);
    // Python 2 names only the last part; the import above names the rest,
    // and pytest's relative frame the project's directory.
    diagnosed(
        "shop/models/order.py:41: in total\n    from shop.models.tax import vat\nE   ImportError: No module named tax",
        Category::CodeError,
    );
    // A third-party package imported by the project's code stays the
    // dependency's.
    let third = own.replace("shop.pricing.rules'", "requests_toolbelt'");
    diagnosed(&third, Category::DependencyError);
    diagnosed(
        "ModuleNotFoundError: No module named 'yaml'",
        Category::DependencyError,
    );
}

#[test]
fn the_machine_failing_in_the_block_shown_explains_the_block_read() {
    // Written for this test: the hand-set ranking reads a test report, the
    // learned one shows the refused connection printed above it.
    let shown = [
        (
            40,
            "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.",
        ),
        (41, "ERROR: could not reach the cache"),
    ];
    let read = [
        (60, "    def test_cached_shelf():"),
        (61, ">       assert cache.get('shelf') == 'spine'"),
        (62, "E       AssertionError: assert None == 'spine'"),
        (63, "tests/test_cache.py:12: AssertionError"),
    ];
    let excerpt = |shown: &[(u64, &str)]| two_block_excerpt(shown, &read, "pytest", 70);
    let d = diagnose(&excerpt(&shown));
    assert_eq!(d.category, Category::InfraError, "{}", d.decided_by);
    assert!(d.decided_by.starts_with("network."), "{}", d.decided_by);
    // Anything else the block shown says is not read with it.
    let d = diagnose(&excerpt(&[(
        40,
        "E   TypeError: 'NoneType' object is not subscriptable",
    )]));
    assert_eq!(d.category, Category::TestFailure, "{}", d.decided_by);
}

/// A Travis job (written for this test) whose `./configure` gives up on a
/// missing library, after which `make` finds no makefile.
fn configure_then_make(configure_fails: bool) -> String {
    let mut log = String::from("$ ./configure\n");
    for i in 0..200 {
        log.push_str(&format!("checking for header{i}.h... yes\n"));
    }
    log.push_str("checking for shopkit... ");
    if configure_fails {
        log.push_str(
            "no\nconfigure: error: Package requirements (shopkit) were not met:\n\n\
             No package 'shopkit' found\n\n\
             Consider adjusting the PKG_CONFIG_PATH environment variable if you\n\
             installed software in a non-standard prefix.\n\n\
             The command \"./configure\" exited with 1.\n",
        );
    } else {
        log.push_str(
            "yes\nconfigure: creating ./config.status\n\nThe command \"./configure\" exited with 0.\n",
        );
    }
    log.push_str(
        "$ make\nmake: *** No targets specified and no makefile found.  Stop.\n\n\
         The command \"make\" exited with 2.\n\nDone. Your build exited with 1.\n",
    );
    log
}

#[test]
fn the_first_failed_step_outweighs_the_steps_that_failed_after_it() {
    let d = diagnose(&excerpt_of_text(&configure_then_make(true)));
    assert_eq!(d.category, Category::DependencyError, "{d:#?}");
    assert!(d.decided_by.starts_with("configure.missing"), "{d:#?}");
    // Alone, make's complaint is the configuration's.
    let d = diagnose(&excerpt_of_text(&configure_then_make(false)));
    assert_eq!(d.category, Category::ConfigError, "{d:#?}");
}

/// A Travis job whose failed step `cmd` printed a C compiler's error.
fn compiler_error_in(cmd: &str) -> String {
    format!(
        "$ {cmd}\n\
         compiling cart.c\n\
         cart.c:12:3: error: 'Handle' was not declared in this scope\n\
         \x20  Handle<Value> Total(const Arguments& args) {{\n\
         \x20  ^\n\n\
         The command \"{cmd}\" failed and exited with 1 during .\n\n\
         Your build has been stopped.\n"
    )
}

#[test]
fn a_compiler_error_while_the_job_installs_its_dependencies_is_the_dependency_s() {
    for cmd in [
        "npm install",
        "pip install -r requirements.txt",
        "bundle install --jobs=3",
    ] {
        let d = diagnose(&excerpt_of_text(&compiler_error_in(cmd)));
        assert_eq!(d.category, Category::DependencyError, "{cmd}: {d:#?}");
        assert!(
            d.decided_by.starts_with("dep.install_step"),
            "{cmd}: {d:#?}"
        );
    }
    // The same error in a build step, or in a command that installs the
    // project itself, is the project's code.
    for cmd in ["make", "pip install -e .", "python setup.py install"] {
        let d = diagnose(&excerpt_of_text(&compiler_error_in(cmd)));
        assert_eq!(d.category, Category::CodeError, "{cmd}: {d:#?}");
    }
}

/// A Maven build whose Surefire report says tests errored, followed by the
/// build's generic `[ERROR]` footer (the block the hand-set ranking reads).
const SUREFIRE_ERRORS_THEN_FOOTER: &str = concat!(
    "Running com.acme.shop.cart.CartSuite\n",
    "Tests run: 12, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.41 sec - in com.acme.shop.cart.CartSuite\n",
    "Running com.acme.shop.ledger.LedgerSuite\n",
    "Skipping the ledger's export tests: no export directory configured.\n",
    "Tests run: 7, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.08 sec - in com.acme.shop.ledger.LedgerSuite\n",
    "\n",
    "Results :\n",
    "\n",
    "Tests in error: \n",
    "  LedgerTest.post:88 » IllegalState ledger closed before posting\n",
    "  LedgerTest.reverse:120 » IllegalState ledger closed before posting\n",
    "\n",
    "Tests run: 212, Failures: 0, Errors: 2, Skipped: 0\n",
    "\n",
    "[INFO] ------------------------------------------------------------------------\n",
    "[INFO] Reactor Summary:\n",
    "[INFO] \n",
    "[INFO] Shop core .......................................... FAILURE [01:48 min]\n",
    "[INFO] Shop web ........................................... SKIPPED\n",
    "[INFO] ------------------------------------------------------------------------\n",
    "[INFO] BUILD FAILURE\n",
    "[INFO] ------------------------------------------------------------------------\n",
    "[INFO] Total time: 01:51 min\n",
    "[INFO] Finished at: 2016-05-02T10:14:13+00:00\n",
    "[INFO] Final Memory: 24M/310M\n",
    "[INFO] ------------------------------------------------------------------------\n",
    "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:2.18.1:test (default-test) on project shop-core: There are test failures.\n",
    "[ERROR] \n",
    "[ERROR] Please refer to /home/travis/build/acme/shop/core/target/surefire-reports for the individual test results.\n",
    "[ERROR] -> [Help 1]\n",
    "[ERROR] \n",
    "[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n",
    "[ERROR] Re-run Maven using the -X switch to enable full debug logging.\n",
    "[ERROR] \n",
    "[ERROR] For more information about the errors and possible solutions, please read the following articles:\n",
    "[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException\n",
    "\n",
    "The command \"mvn test -B\" exited with 1.\n",
    "\n",
    "Done. Your build exited with 1.\n",
);

#[test]
fn a_report_of_tests_in_error_is_read_when_the_block_read_is_maven_s_footer() {
    let d = diagnose(&excerpt_of_text(SUREFIRE_ERRORS_THEN_FOOTER));
    assert_eq!(d.category, Category::CodeError, "{d:#?}");
    assert!(d.decided_by.starts_with("surefire."), "{d:#?}");
}
