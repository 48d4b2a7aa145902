//! Every SQL statement of the storage layer prepares against the migrated
//! schema, so a wrong table, column or `$n` type fails here rather than in
//! production; and a stored value the code does not know is a decode error
//! naming it and its column.
//!
//! How the statements are enumerated: the literal ones (`sqlx::query("…")`,
//! `r#"…"#`) are read from the source files of `shared/src/storage`, next to
//! their call sites; the ones built at run time (from column lists, shared
//! clauses, the checkpoint's parts) come from
//! `storage::built_statements()`, which lists them by name with every
//! checkpoint variant. The scan also checks every call site that does not
//! pass a literal names one of those, so a new statement cannot escape the
//! test: either it is a literal the scan reads, or it must be registered.

use std::{collections::BTreeSet, fs, path::PathBuf};

use faultline_shared::{
    queue::Broker,
    storage::{self, events, runs, tokens},
};
use faultline_tests::TestDb;
use sqlx::{AssertSqlSafe, Executor, SqlSafeStr};

/// A statement found in the source: where, and its text (or, for a call
/// site that passes no literal, the argument it passes).
struct CallSite {
    file: String,
    line: usize,
    arg: Arg,
}

enum Arg {
    Literal(String),
    Named(String),
}

fn storage_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/src/storage")
}

fn source_files(dir: &PathBuf, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Reads the Rust string literal at the start of `s` (`"…"` with escapes,
/// `r"…"`, `r#"…"#`): its value and its length in `s`.
fn literal(s: &str) -> Option<(String, usize)> {
    if let Some(rest) = s.strip_prefix('r') {
        let hashes = rest.chars().take_while(|&c| c == '#').count();
        let body = rest[hashes..].strip_prefix('"')?;
        let close = format!("\"{}", "#".repeat(hashes));
        let end = body.find(&close)?;
        return Some((body[..end].to_string(), 1 + hashes + 1 + end + close.len()));
    }
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 2)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                '\'' => out.push('\''),
                // A line continuation: the newline and the next line's indent go.
                '\n' => {
                    while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                        chars.next();
                    }
                }
                other => panic!("an escape \\{other} the scan does not read"),
            },
            c => out.push(c),
        }
    }
    None
}

/// Every `sqlx::query*(` call site of the storage modules.
fn call_sites() -> Vec<CallSite> {
    let mut files = Vec::new();
    source_files(&storage_dir(), &mut files);
    files.sort();
    let mut sites = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut from = 0;
        while let Some(at) = text[from..].find("sqlx::query") {
            let at = from + at;
            from = at + 1;
            let rest = &text[at + "sqlx::query".len()..];
            // query, query_as, query_scalar, with or without a turbofish.
            let Some(open) = rest.find('(') else { continue };
            let head = &rest[..open];
            if !(head.is_empty()
                || head.starts_with("_as")
                || head.starts_with("_scalar")
                || head.starts_with("::<"))
            {
                continue;
            }
            let arg = rest[open + 1..].trim_start();
            let line = text[..at].lines().count();
            let arg = match literal(arg) {
                Some((sql, _)) => Arg::Literal(sql),
                None => {
                    let end = arg.find(['\n', ')']).unwrap_or(arg.len());
                    Arg::Named(arg[..end].trim().to_string())
                }
            };
            sites.push(CallSite {
                file: format!("{module}.rs"),
                line,
                arg,
            });
        }
    }
    sites
}

/// Whether the argument `arg` of a call site in `module` uses one of the
/// registered statement names (`module::IDENT…`).
fn names_a_registered_statement(module: &str, arg: &str, registered: &BTreeSet<String>) -> bool {
    arg.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|ident| !ident.is_empty())
        .any(|ident| {
            let name = format!("{module}::{ident}");
            registered.iter().any(|r| {
                r == &name
                    || r.strip_prefix(&name)
                        .is_some_and(|rest| rest.starts_with(['(', '.']))
            })
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn every_storage_statement_prepares_against_the_migrated_schema() {
    let db = TestDb::new().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let built = storage::built_statements();
    let registered: BTreeSet<String> = built.iter().map(|s| s.name.clone()).collect();
    assert_eq!(registered.len(), built.len(), "statement names are unique");
    // Every variant of the checkpoint statement is there.
    assert_eq!(
        built
            .iter()
            .filter(|s| s.name.starts_with("checkpoint::checkpoint_sql("))
            .count(),
        64
    );

    let mut failures = Vec::new();
    let mut literals = 0;
    for site in call_sites() {
        let module = site.file.trim_end_matches(".rs");
        match &site.arg {
            Arg::Literal(sql) => {
                literals += 1;
                if let Err(e) = (&mut *conn).prepare(AssertSqlSafe(sql.clone()).into_sql_str()).await {
                    failures.push(format!("{}:{}: {e}\n{sql}", site.file, site.line));
                }
            }
            Arg::Named(arg) if names_a_registered_statement(module, arg, &registered) => {}
            Arg::Named(arg) => failures.push(format!(
                "{}:{}: the statement `{arg}` is neither a literal nor listed in storage::built_statements()",
                site.file, site.line
            )),
        }
    }
    for statement in &built {
        let sql = AssertSqlSafe(statement.sql).into_sql_str();
        let prepared = match &statement.param_types {
            Some(types) => (&mut *conn).prepare_with(sql, types).await,
            None => (&mut *conn).prepare(sql).await,
        };
        if let Err(e) = prepared {
            failures.push(format!("{}: {e}\n{}", statement.name, statement.sql));
        }
    }
    // The scan found the storage layer's literal statements (a scan that
    // reads nothing would pass anything).
    assert!(literals >= 50, "only {literals} literal statements found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The generic plan of `sql` (parameters bound as NULL, which a generic
/// plan does not look at), as EXPLAIN's JSON text.
async fn generic_plan(
    conn: &mut sqlx::PgConnection,
    sql: &str,
    types: Option<&[sqlx::postgres::PgTypeInfo]>,
) -> Result<String, sqlx::Error> {
    use sqlx::TypeInfo as _;
    let types = types.map_or(String::new(), |t| {
        let names: Vec<&str> = t.iter().map(|t| t.name()).collect();
        format!("({})", names.join(", "))
    });
    conn.execute(AssertSqlSafe(format!("PREPARE plan_of {types} AS {sql}")).into_sql_str())
        .await?;
    let params: i32 = sqlx::query_scalar(
        "SELECT coalesce(cardinality(parameter_types), 0) FROM pg_prepared_statements WHERE name = 'plan_of'",
    )
    .fetch_one(&mut *conn)
    .await?;
    let nulls = vec!["NULL"; params as usize].join(", ");
    let args = if nulls.is_empty() {
        String::new()
    } else {
        format!("({nulls})")
    };
    let plan: serde_json::Value = sqlx::query_scalar(AssertSqlSafe(format!(
        "EXPLAIN (FORMAT JSON) EXECUTE plan_of{args}"
    )))
    .fetch_one(&mut *conn)
    .await?;
    // By name: DEALLOCATE ALL would also drop sqlx's own statements.
    conn.execute("DEALLOCATE plan_of").await?;
    Ok(plan.to_string())
}

/// A statement that reaches a run by its id (`id = $n`, or a list of ids)
/// takes `analysis_runs_pkey`, even when the statistics say almost no run
/// is running or queued (analysed at a quiet moment, before a burst). With
/// a bare `status = 'running'` beside the id, the planner then prefers
/// `analysis_runs_status`, and every commit walks all the runs in flight.
#[tokio::test(flavor = "multi_thread")]
async fn statements_that_reach_a_run_by_its_id_use_the_primary_key_whatever_the_statistics() {
    let db = TestDb::new().await;
    // Statistics of a quiet moment: every run finished.
    sqlx::query(
        "WITH e AS (
             INSERT INTO failure_events (id, dedup_key, source)
             SELECT gen_random_uuid(), 'quiet:' || g, 'test' FROM generate_series(1, 3000) g
             RETURNING id)
         INSERT INTO analysis_runs (id, event_id, priority, max_iterations, max_attempts, status, finished_at)
         SELECT gen_random_uuid(), e.id, 0, 6, 5, 'completed', now() FROM e",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE").execute(&db.pool).await.unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    conn.execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();

    // The setup provokes the hazard: the bare form takes the status index.
    let bare = generic_plan(
        &mut conn,
        "UPDATE analysis_runs SET updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND status = 'running'",
        None,
    )
    .await
    .unwrap();
    assert!(bare.contains("analysis_runs_status"), "{bare}");

    let by_id = regex::Regex::new(r"(?:^|[^\w.]|\br\.)id = (?:\$\d+|h\.id)\b").unwrap();
    let mut candidates: Vec<(String, String, Option<Vec<sqlx::postgres::PgTypeInfo>>)> =
        call_sites()
            .into_iter()
            .filter_map(|site| match site.arg {
                Arg::Literal(sql) => Some((format!("{}:{}", site.file, site.line), sql, None)),
                Arg::Named(_) => None,
            })
            .collect();
    candidates.extend(
        storage::built_statements()
            .into_iter()
            .map(|s| (s.name, s.sql.to_string(), s.param_types)),
    );
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, sql, types) in candidates {
        if !sql.contains("analysis_runs") || !by_id.is_match(&sql) {
            continue;
        }
        let plan = generic_plan(&mut conn, &sql, types.as_deref())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}\n{sql}"));
        checked += 1;
        if plan.contains("analysis_runs_status") {
            failures.push(format!("{name}: scans analysis_runs_status\n{sql}"));
        }
    }
    // The claim, the release, the lease check, the renewal, a failed
    // attempt and the 64 checkpoint variants, at least.
    assert!(checked >= 69, "only {checked} statements reach a run by id");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn preparing_catches_a_wrong_column() {
    let db = TestDb::new().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let err = (&mut *conn)
        .prepare("SELECT id, no_such_column FROM analysis_runs WHERE id = $1".into_sql_str())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no_such_column"), "{err}");
}

/// A queued run of a fresh event.
async fn a_run(db: &TestDb) -> uuid::Uuid {
    let event = events::NewEvent {
        dedup_key: "unknown-values".into(),
        source: "test".into(),
        ..events::NewEvent::default()
    };
    let limits = runs::RunLimits {
        max_iterations: 5,
        max_attempts: 5,
        priority: 10,
        shadowed: false,
    };
    storage::ingest(
        &db.pool,
        &Broker::Postgres,
        &event,
        &b"error: boom\n"[..],
        limits,
    )
    .await
    .unwrap()
    .run_id
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_run_status_is_a_decode_error_naming_it_and_its_column() {
    let db = TestDb::new().await;
    let run = a_run(&db).await;
    // A status this code does not know (say, written by a newer version
    // whose migration widened the CHECK).
    sqlx::query("ALTER TABLE analysis_runs DROP CONSTRAINT analysis_runs_status_check")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE analysis_runs SET status = 'paused' WHERE id = $1")
        .bind(run)
        .execute(&db.pool)
        .await
        .unwrap();
    let err = runs::get(&db.pool, run).await.unwrap_err().to_string();
    assert!(
        err.contains("\"status\"") && err.contains("unknown run status \"paused\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_category_is_a_decode_error_naming_it_and_its_column() {
    let db = TestDb::new().await;
    let run = a_run(&db).await;
    sqlx::query("UPDATE analysis_runs SET category = 'COSMIC_RAY' WHERE id = $1")
        .bind(run)
        .execute(&db.pool)
        .await
        .unwrap();
    let err = runs::get(&db.pool, run).await.unwrap_err().to_string();
    assert!(
        err.contains("\"category\"") && err.contains("unknown category \"COSMIC_RAY\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_token_role_grants_nothing_it_is_an_error() {
    let db = TestDb::new().await;
    let token = tokens::generate();
    tokens::create(&db.pool, "ops", tokens::Role::Reviewer, &token, None)
        .await
        .unwrap()
        .expect("created");
    sqlx::query("ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE api_tokens SET role = 'root' WHERE name = 'ops'")
        .execute(&db.pool)
        .await
        .unwrap();
    let err = tokens::find_active(&db.pool, &token)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"role\"") && err.contains("unknown token role \"root\""),
        "{err}"
    );
}
