//! The deployment files under `deploy/` parse and agree with the code:
//! every YAML document parses, Kubernetes objects are well-formed, every
//! Secret a manifest reads is in the secret template, the worker's grace
//! period outlasts its drain, files the compose stack mounts exist, and every
//! metric an alert uses is one the binaries export, and the operations
//! guide runs only commands the README (or docs/usage.md) and the Makefile
//! have; and `docs/configuration.md` lists exactly the settings the
//! settings loaders read (their serde field names), and nothing else reads one. Runs in `make lint` (`cargo test -p faultline-tests
//! --test deploy`): no cluster, no Docker.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use yaml_rust2::{Yaml, YamlLoader};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

fn load(path: &Path) -> Vec<Yaml> {
    let text = fs::read_to_string(path).unwrap();
    YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

fn str_of<'a>(y: &'a Yaml, what: &str, path: &Path) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{}: {what} is missing or not a string", path.display()))
}

/// Every value under a key named `key`, anywhere in the document.
fn find_all<'a>(y: &'a Yaml, key: &str, out: &mut Vec<&'a Yaml>) {
    match y {
        Yaml::Hash(h) => {
            for (k, v) in h {
                if k.as_str() == Some(key) {
                    out.push(v);
                }
                find_all(v, key, out);
            }
        }
        Yaml::Array(a) => a.iter().for_each(|v| find_all(v, key, out)),
        _ => {}
    }
}

#[test]
fn every_yaml_file_under_deploy_parses_into_non_empty_documents() {
    let mut files = Vec::new();
    yaml_files(&root().join("deploy"), &mut files);
    assert!(files.len() >= 10, "found only {files:?}");
    for path in &files {
        let docs = load(path);
        assert!(!docs.is_empty(), "{} is empty", path.display());
        for doc in &docs {
            assert!(
                matches!(doc, Yaml::Hash(h) if !h.is_empty()),
                "{}: every document is a non-empty mapping",
                path.display()
            );
        }
    }
}

#[test]
fn kubernetes_manifests_are_objects_and_read_only_templated_secrets() {
    let dir = root().join("deploy/k8s");
    let template = dir.join("secret-example.yaml");
    let mut defined = BTreeSet::new();
    for doc in load(&template) {
        assert_eq!(str_of(&doc["kind"], "kind", &template), "Secret");
        let name = str_of(&doc["metadata"]["name"], "metadata.name", &template);
        for (key, _) in doc["stringData"].as_hash().expect("stringData") {
            defined.insert((name.to_string(), key.as_str().unwrap().to_string()));
        }
    }
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    for path in files.iter().filter(|p| **p != template) {
        for doc in load(path) {
            str_of(&doc["apiVersion"], "apiVersion", path);
            let kind = str_of(&doc["kind"], "kind", path);
            if kind == "Kustomization" {
                for res in doc["resources"].as_vec().unwrap() {
                    let res = str_of(res, "a resource", path);
                    assert!(dir.join(res).exists(), "kustomization lists missing {res}");
                }
                continue;
            }
            str_of(&doc["metadata"]["name"], "metadata.name", path);
            assert_ne!(
                kind,
                "Secret",
                "{}: real Secrets do not belong in the repository",
                path.display()
            );
            let mut refs = Vec::new();
            find_all(&doc, "secretKeyRef", &mut refs);
            for r in refs {
                let name = str_of(&r["name"], "secretKeyRef.name", path).to_string();
                let key = str_of(&r["key"], "secretKeyRef.key", path).to_string();
                assert!(
                    defined.contains(&(name.clone(), key.clone())),
                    "{} reads secret {name}/{key}, which secret-example.yaml does not define",
                    path.display()
                );
            }
            let mut targets = Vec::new();
            find_all(&doc, "secretTargetRef", &mut targets);
            for t in targets.iter().flat_map(|t| t.as_vec().unwrap()) {
                let name = str_of(&t["name"], "secretTargetRef.name", path).to_string();
                let key = str_of(&t["key"], "secretTargetRef.key", path).to_string();
                assert!(
                    defined.contains(&(name, key)),
                    "{}: unknown secret",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn the_worker_grace_period_outlasts_its_drain() {
    let path = root().join("deploy/k8s/worker-deployment.yaml");
    let doc = &load(&path)[0];
    let pod = &doc["spec"]["template"]["spec"];
    let grace = pod["terminationGracePeriodSeconds"].as_i64().unwrap();
    let env = pod["containers"][0]["env"].as_vec().unwrap();
    let drain_ms: i64 = env
        .iter()
        .find(|e| e["name"].as_str() == Some("FAULTLINE_SHUTDOWN_GRACE_MS"))
        .and_then(|e| e["value"].as_str())
        .expect("the manifest sets FAULTLINE_SHUTDOWN_GRACE_MS")
        .parse()
        .unwrap();
    assert!(
        grace * 1000 > drain_ms + 10_000,
        "grace {grace}s vs drain {drain_ms}ms"
    );
    let probes = ["readinessProbe", "livenessProbe"];
    for probe in probes {
        assert!(
            pod["containers"][0][probe]["httpGet"]["path"]
                .as_str()
                .is_some(),
            "{probe}"
        );
    }
}

#[test]
fn files_the_compose_stack_mounts_exist() {
    let deploy = root().join("deploy");
    let path = deploy.join("compose.yaml");
    let doc = &load(&path)[0];
    let services = doc["services"].as_hash().unwrap();
    for name in [
        "postgres",
        "redis",
        "migrate",
        "producer",
        "worker",
        "otel-collector",
        "prometheus",
    ] {
        assert!(
            services.contains_key(&Yaml::String(name.into())),
            "compose has no {name}"
        );
    }
    assert_eq!(
        doc["services"]["worker"]["deploy"]["replicas"].as_i64(),
        Some(3)
    );
    for (_, service) in services {
        for volume in service["volumes"].as_vec().into_iter().flatten() {
            let spec = volume.as_str().unwrap();
            if let Some(local) = spec.strip_prefix("./") {
                let file = local.split(':').next().unwrap();
                assert!(deploy.join(file).exists(), "compose mounts missing {file}");
            }
        }
    }
}

#[test]
fn alerts_use_only_metrics_the_binaries_export() {
    let source = fs::read_to_string(root().join("shared/src/metrics.rs")).unwrap();
    let path = root().join("deploy/prometheus/alerts.yaml");
    let doc = &load(&path)[0];
    let mut used = BTreeSet::new();
    for group in doc["groups"].as_vec().unwrap() {
        for rule in group["rules"].as_vec().unwrap() {
            str_of(&rule["alert"], "alert", &path);
            let expr = str_of(&rule["expr"], "expr", &path);
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("faultline_") {
                    used.insert(word.to_string());
                }
            }
        }
    }
    assert!(used.len() >= 8, "{used:?}");
    for metric in used {
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| metric.strip_suffix(s))
            .unwrap_or(&metric);
        assert!(
            source.contains(&format!("\"{base}\"")),
            "alerts.yaml uses {metric}, which shared/src/metrics.rs does not record"
        );
    }
}

/// The words of every command line in fenced code blocks and `inline code`
/// of a Markdown file that start with one of `programs`.
fn commands_in(markdown: &str, programs: &[&str]) -> BTreeSet<Vec<String>> {
    let mut pieces: Vec<String> = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            pieces.push(line.split('#').next().unwrap_or("").to_string());
        } else {
            pieces.extend(line.split('`').skip(1).step_by(2).map(str::to_string));
        }
    }
    pieces
        .iter()
        .map(|p| p.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|words| {
            words
                .first()
                .is_some_and(|w| programs.contains(&w.as_str()))
        })
        .collect()
}

#[test]
fn the_operations_guide_uses_the_commands_of_the_readme_and_the_makefile() {
    let guide = fs::read_to_string(root().join("docs/operations.md")).unwrap();
    // The README shows the main commands, docs/usage.md every one.
    let readme = ["README.md", "docs/usage.md"]
        .map(|f| fs::read_to_string(root().join(f)).unwrap())
        .join("\n");
    let makefile = fs::read_to_string(root().join("Makefile")).unwrap();
    let targets: BTreeSet<&str> = makefile
        .lines()
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .filter(|t| {
            !t.is_empty() && !t.starts_with(['.', '\t', ' ', '#']) && !t.contains(['=', '$'])
        })
        .collect();
    // A subcommand is its first word after the program, plus the second for
    // the ones with subcommands of their own; flags and arguments may vary.
    let nested = ["review", "token", "kb", "reprocess"];
    let key = |words: &Vec<String>| -> Vec<String> {
        let depth = if words.get(1).is_some_and(|w| nested.contains(&w.as_str())) {
            3
        } else {
            2
        };
        words
            .iter()
            .take(depth)
            .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .cloned()
            .collect()
    };
    let documented: BTreeSet<Vec<String>> = commands_in(&readme, &["faultline", "make"])
        .iter()
        .map(key)
        .collect();
    let used = commands_in(&guide, &["faultline", "make"]);
    assert!(
        used.len() >= 8,
        "the guide's commands were not found: {used:?}"
    );
    for words in &used {
        let k = key(words);
        if k[0] == "make" {
            let target = k.get(1).expect("make without a target");
            assert!(
                targets.contains(target.as_str()),
                "the guide runs `make {target}`, which the Makefile lacks"
            );
        }
        assert!(
            documented.contains(&k),
            "the guide runs `{}`, which neither the README nor docs/usage.md shows",
            k.join(" ")
        );
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The prefixes of Faultline's settings (and of the standard variables it
/// reads itself).
const SETTING_PREFIXES: [&str; 14] = [
    "FAULTLINE_",
    "LLM_",
    "GITHUB_",
    "JENKINS_",
    "NOTIFY_",
    "REDIS_",
    "DATABASE_",
    "QUEUE_",
    "TOOL_",
    "REVIEW_",
    "OTEL_",
    "WORKER_",
    "LOG_",
    "RUST_",
];

/// Documented variables that are not settings of a loader, each with what
/// reads it.
const READ_OUTSIDE_THE_LOADERS: [&str; 7] = [
    // tracing-subscriber's filter (never named in our code).
    "RUST_LOG",
    // shared/src/telemetry.rs: logging and tracing start before the settings are read.
    "LOG_FORMAT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    // The worker's command line (clap's `env`): `--id`, `--http-addr`.
    "FAULTLINE_WORKER_ID",
    "WORKER_HTTP_ADDR",
    // `faultline eval --labelled-view` (clap's `env`).
    "FAULTLINE_EVAL_LABELLED_VIEW",
];

/// Documented variables read by a library, not by name in our code.
const READ_BY_LIBRARIES: [&str; 1] = ["RUST_LOG"];

/// Standard variables our code names but leaves to the OpenTelemetry SDK's
/// own documentation (the reference says so in the endpoint's row).
const STANDARD_OTEL: [&str; 1] = ["OTEL_SERVICE_NAME"];

/// The first column of docs/configuration.md's table.
fn documented_settings() -> BTreeSet<String> {
    let reference = fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let mut documented = BTreeSet::new();
    for row in reference.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split('|').nth(1).unwrap_or_default();
        for name in first.split('`').skip(1).step_by(2) {
            documented.insert(name.to_string());
        }
    }
    documented
}

#[test]
fn the_configuration_reference_lists_exactly_the_settings_the_loaders_read() {
    use faultline_producer::config::ServerConfig;
    use faultline_shared::Settings;
    use faultline_worker::{
        agent::llm::config::LlmConfig, notify::NotifyConfig, sources::SourcesConfig,
    };
    // What the loaders read: the serde field names of every settings struct.
    let loaded: BTreeSet<String> = [
        Settings::variables(),
        ServerConfig::variables(),
        SourcesConfig::variables(),
        LlmConfig::variables(),
        NotifyConfig::variables(),
    ]
    .concat()
    .into_iter()
    .collect();
    assert!(loaded.len() > 80, "too few settings found: {loaded:?}");
    assert!(loaded.contains("LLM_JUDGE_TIMEOUT_MS") && loaded.contains("FAULTLINE_BIND"));
    let documented = documented_settings();
    let undocumented: Vec<_> = loaded.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "read by a settings loader but not in docs/configuration.md: {undocumented:?}"
    );
    let unread: Vec<_> = documented
        .iter()
        .filter(|n| !loaded.contains(*n) && !READ_OUTSIDE_THE_LOADERS.contains(&n.as_str()))
        .collect();
    assert!(
        unread.is_empty(),
        "in docs/configuration.md but read by no settings loader: {unread:?}"
    );
    for name in READ_OUTSIDE_THE_LOADERS {
        assert!(
            documented.contains(name) && !loaded.contains(name),
            "{name} is documented and read outside the loaders"
        );
    }
}

#[test]
fn no_code_reads_a_setting_the_reference_does_not_list() {
    // Quoted upper-case names with a setting prefix in non-test code
    // (before a file's `#[cfg(test)]`): a variable read past the loaders
    // (`std::env::var("…")`, a clap `env`) shows here.
    let mut files = Vec::new();
    for krate in ["shared", "worker", "producer", "analysis"] {
        rust_files(&root().join(krate).join("src"), &mut files);
    }
    let mut read = BTreeSet::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for quoted in code.split('"').skip(1).step_by(2) {
            // A prefix (`LLM_JUDGE_`) is no name.
            let is_name = quoted.len() > 4
                && !quoted.ends_with('_')
                && quoted
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if is_name && SETTING_PREFIXES.iter().any(|p| quoted.starts_with(p)) {
                read.insert(quoted.to_string());
            }
        }
    }
    let documented = documented_settings();
    let undocumented: Vec<_> = read
        .iter()
        .filter(|n| !documented.contains(*n) && !STANDARD_OTEL.contains(&n.as_str()))
        .collect();
    assert!(
        undocumented.is_empty(),
        "named in the code but not in docs/configuration.md: {undocumented:?}"
    );
    // The variables read outside the loaders are read by name, except the
    // one a library reads.
    for name in READ_OUTSIDE_THE_LOADERS {
        assert!(
            read.contains(name) || READ_BY_LIBRARIES.contains(&name),
            "{name} is listed as read outside the loaders, but no code names it"
        );
    }
}
