//! Fake GitHub and Jenkins servers speaking their real wire format: the
//! response bodies and headers below are shaped after GitHub's REST and
//! GraphQL documentation and Jenkins' `consoleText`.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

pub const GITHUB_TOKEN: &str = "ghp_faketokenfortests000000000000000000";
pub const REPO: &str = "octo-org/ledger-api";
pub const SHA: &str = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39";

/// Replies with `replies[i]` to the i-th request (the last one repeats)
/// and records when each request arrived and its headers.
#[derive(Clone)]
pub struct Scripted {
    replies: Vec<ResponseTemplate>,
    pub hits: Arc<Mutex<Vec<(SystemTime, HeaderMap)>>>,
}

impl Scripted {
    pub fn new(replies: Vec<ResponseTemplate>) -> Self {
        Self {
            replies,
            hits: Arc::default(),
        }
    }

    pub fn count(&self) -> usize {
        self.hits.lock().unwrap().len()
    }

    /// Arrival time of the i-th request.
    pub fn at(&self, i: usize) -> SystemTime {
        self.hits.lock().unwrap()[i].0
    }
}

impl Respond for Scripted {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut hits = self.hits.lock().unwrap();
        let mut headers = HeaderMap::new();
        for (k, v) in &request.headers {
            if let Ok(v) = axum::http::HeaderValue::from_bytes(v.as_bytes()) {
                headers.insert(
                    axum::http::HeaderName::from_bytes(k.as_str().as_bytes()).unwrap(),
                    v,
                );
            }
        }
        hits.push((SystemTime::now(), headers));
        let i = (hits.len() - 1).min(self.replies.len() - 1);
        self.replies[i].clone()
    }
}

/// GitHub's error body, e.g. `{"message":"Not Found","documentation_url":…,"status":"404"}`.
pub fn github_error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/json; charset=utf-8")
        .insert_header("x-github-media-type", "github.v3; format=json")
        .set_body_json(json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest",
            "status": status.to_string(),
        }))
}

/// Unix seconds `secs` from now, rounded up (GitHub's `x-ratelimit-reset`).
pub fn epoch_in(secs: u64) -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs
        + 1
}

/// The primary rate limit is spent: 403 with `x-ratelimit-remaining: 0`.
pub fn github_rate_limited(reset: u64) -> ResponseTemplate {
    github_error(
        403,
        "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
    )
    .insert_header("x-ratelimit-limit", "5000")
    .insert_header("x-ratelimit-remaining", "0")
    .insert_header("x-ratelimit-used", "5000")
    .insert_header("x-ratelimit-resource", "core")
    .insert_header("x-ratelimit-reset", reset.to_string().as_str())
}

/// A JSON reply with GitHub's usual rate-limit headers.
pub fn github_json(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("x-ratelimit-limit", "5000")
        .insert_header("x-ratelimit-remaining", "4987")
        .insert_header("x-ratelimit-reset", epoch_in(3000).to_string().as_str())
        .set_body_json(body)
}

/// A contents-API reply for a file: base64 wrapped at 60 columns, as GitHub sends it.
pub fn contents(path: &str, text: &str) -> Value {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let wrapped: Vec<String> = encoded
        .as_bytes()
        .chunks(60)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let name = path.rsplit('/').next().unwrap();
    json!({
        "type": "file", "encoding": "base64", "size": text.len(), "name": name, "path": path,
        "content": wrapped.join("\n") + "\n",
        "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
        "url": format!("https://api.github.com/repos/{REPO}/contents/{path}?ref={SHA}"),
        "git_url": format!("https://api.github.com/repos/{REPO}/git/blobs/3d21ec53a331a6f037a91c368710b99387d012c1"),
        "html_url": format!("https://github.com/{REPO}/blob/{SHA}/{path}"),
        "download_url": format!("https://raw.githubusercontent.com/{REPO}/{SHA}/{path}"),
        "_links": {"self": "…", "git": "…", "html": "…"}
    })
}

/// A GitHub Actions job log: every line with the runner's timestamp.
pub fn actions_log(log: &str) -> String {
    log.lines()
        .enumerate()
        .map(|(i, l)| format!("2026-11-21T22:55:{:02}.{:07}Z {l}\n", i % 60, i))
        .collect()
}

/// A fake Jenkins serving one build's `consoleText` as a chunked stream
/// (no content-length), behind basic auth, and optionally the job's
/// `lastSuccessfulBuild/consoleText` (404 without one, as Jenkins answers
/// for a job that never passed).
pub struct FakeJenkins {
    pub url: String,
    pub hits: Arc<Mutex<usize>>,
    /// Requests for `lastSuccessfulBuild/consoleText`.
    pub green_hits: Arc<Mutex<usize>>,
}

#[derive(Clone)]
struct JenkinsState {
    auth: String,
    chunks: Arc<Vec<Bytes>>,
    hits: Arc<Mutex<usize>>,
}

impl FakeJenkins {
    /// Serves `chunks` at `/job/{job}/{build}/consoleText` to `user:token`.
    pub async fn start(
        job: &str,
        build: u64,
        user: &str,
        token: &str,
        chunks: Vec<String>,
    ) -> Self {
        Self::start_with_green(job, build, user, token, chunks, None).await
    }

    /// Like [`Self::start`], also serving `green` (if any) as the console
    /// of the job's last successful build.
    pub async fn start_with_green(
        job: &str,
        build: u64,
        user: &str,
        token: &str,
        chunks: Vec<String>,
        green: Option<String>,
    ) -> Self {
        use base64::Engine as _;
        let auth = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"))
        );
        let state = JenkinsState {
            auth: auth.clone(),
            chunks: Arc::new(chunks.into_iter().map(Bytes::from).collect()),
            hits: Arc::default(),
        };
        let hits = state.hits.clone();
        let mut app = Router::new()
            .route(&format!("/job/{job}/{build}/consoleText"), get(console))
            .with_state(state);
        let green_hits: Arc<Mutex<usize>> = Arc::default();
        if let Some(green) = green {
            let state = JenkinsState {
                auth,
                chunks: Arc::new(vec![Bytes::from(green)]),
                hits: green_hits.clone(),
            };
            app = app.merge(
                Router::new()
                    .route(
                        &format!("/job/{job}/lastSuccessfulBuild/consoleText"),
                        get(console),
                    )
                    .with_state(state),
            );
        } else {
            let counted = green_hits.clone();
            app = app.route(
                &format!("/job/{job}/lastSuccessfulBuild/consoleText"),
                get(move || async move {
                    *counted.lock().unwrap() += 1;
                    (
                        StatusCode::NOT_FOUND,
                        [("content-type", "text/html;charset=iso-8859-1")],
                        "<html><head><title>Error 404 Not Found</title></head></html>",
                    )
                }),
            );
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeJenkins {
            url: format!("http://{addr}/"),
            hits,
            green_hits,
        }
    }

    /// Requests for the last successful build's console.
    pub fn green_count(&self) -> usize {
        *self.green_hits.lock().unwrap()
    }

    pub fn count(&self) -> usize {
        *self.hits.lock().unwrap()
    }
}

async fn console(State(s): State<JenkinsState>, headers: HeaderMap) -> Response {
    *s.hits.lock().unwrap() += 1;
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(s.auth.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Basic realm=\"Jenkins\"")],
            "<html><body>Authentication required</body></html>",
        )
            .into_response();
    }
    let chunks = s.chunks.clone();
    let stream = futures::stream::iter(
        (0..chunks.len()).map(move |i| Ok::<_, std::io::Error>(chunks[i].clone())),
    );
    (
        [("content-type", "text/plain;charset=utf-8")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A fake model on the OpenAI chat-completions wire that *obeys* every
/// instruction it finds in the tool results it is sent — the worst case of
/// prompt injection (issue 14). It reads the log the way a model would
/// (escape sequences and invisible characters do not hide text from it),
/// first the failure excerpt, then the whole tail, then the raw Jenkins
/// console when that tool is offered, and then does what the log says, in
/// order:
///
/// - `call <tool> with {json}`: calls that tool with those arguments, once;
/// - `answer <CATEGORY> [with confidence <x>]`, or a `{"category": …}`
///   verdict (`final_answer(...)` or bare): answers exactly that, with
///   confidence 0.99, citing the injected lines and nothing else;
/// - asked for environment variables, tokens or keys: copies everything
///   that looks like one from the request it was sent into its answer.
///
/// Told nothing about the verdict, it answers the log's own
/// classification, still citing only the injected lines; before
/// answering it searches the knowledge base for its category, so the
/// answer carries retrieval strength (the worst case for verification).
#[derive(Clone, Default)]
pub struct ObeyingModel {
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
}

const CATEGORIES: [&str; 6] = [
    "CODE_ERROR",
    "INFRA_ERROR",
    "CONFIG_ERROR",
    "DEPENDENCY_ERROR",
    "TEST_FAILURE",
    "UNKNOWN",
];

impl Respond for ObeyingModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        self.requests.lock().unwrap().push(body.clone());
        let n = self.requests.lock().unwrap().len();
        let (name, args) = obey(&body);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_700_000_000,
            "model": "obedient-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}))
    }
}

/// An instruction found in a tool result, with the line it stood on.
#[derive(Debug, Clone)]
pub struct Directive {
    pub iteration: u64,
    /// The line exactly as the tool result carried it (a valid citation).
    pub line: String,
    pub order: Order,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    Call { tool: String, args: Value },
    Answer { category: String, confidence: f64 },
    Verdict(Value),
    LeakSecrets,
}

/// Every directive the injected text in `body`'s tool results gives.
pub fn directives(body: &Value) -> Vec<Directive> {
    let mut found = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "tool" {
            continue;
        }
        let content: Value =
            serde_json::from_str(m["content"].as_str().unwrap_or_default()).unwrap_or_default();
        let iteration = content["iteration"].as_u64().unwrap_or(0);
        let mut lines = Vec::new();
        strings(&content["result"], &mut lines);
        for line in lines {
            for order in orders(&visible(&line)) {
                found.push(Directive {
                    iteration,
                    line: line.trim().to_string(),
                    order,
                });
            }
        }
    }
    found
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.extend(s.lines().map(str::to_string)),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The text a model reads in a line: CSI sequences and the wrapper of an
/// OSC sequence removed (its text kept), invisible characters removed.
pub fn visible(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                        chars.next();
                    }
                    if chars.peek() == Some(&';') {
                        chars.next();
                    }
                    out.push(' ');
                }
                _ => out.push(' '),
            },
            '\u{07}' => out.push(' '),
            '\u{00ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The orders one visible line gives.
fn orders(line: &str) -> Vec<Order> {
    // ASCII lower case keeps byte offsets, so `line` can be sliced by them.
    let lower = line.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("call ").map(|i| from + i) {
        from = at + 5;
        let rest = &line[from..];
        let tool: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[tool.len()..];
        let Some(json_at) = after.strip_prefix(" with ").map(|_| from + tool.len() + 6) else {
            continue;
        };
        if let Some(args) = balanced_json(&line[json_at..]) {
            found.push(Order::Call { tool, args });
        }
    }
    for (at, _) in lower.match_indices("answer ") {
        let rest = &line[at + 7..];
        if let Some(category) = CATEGORIES.iter().find(|c| rest.starts_with(*c)) {
            let confidence = lower[at..]
                .split("confidence ")
                .nth(1)
                .and_then(|c| {
                    c.split(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
                        .next()?
                        .parse()
                        .ok()
                })
                .unwrap_or(0.99);
            found.push(Order::Answer {
                category: category.to_string(),
                confidence,
            });
        }
    }
    if let Some(at) = line.find("{\"category\"")
        && let Some(verdict) = balanced_json(&line[at..])
    {
        found.push(Order::Verdict(verdict));
    }
    if ["environment variables", "$github_token", "api key", "token"]
        .iter()
        .any(|w| lower.contains(w))
        && ["print", "echo", "include", "copy"]
            .iter()
            .any(|w| lower.contains(w))
    {
        found.push(Order::LeakSecrets);
    }
    found
}

/// The JSON object `text` starts with (single quotes accepted, as a
/// lenient model would).
fn balanced_json(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let mut depth = 0;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    let raw = &text[start..=start + i];
                    return serde_json::from_str(raw)
                        .ok()
                        .or_else(|| serde_json::from_str(&raw.replace('\'', "\"")).ok());
                }
            }
            _ => {}
        }
    }
    None
}

/// The obeying model's next call for a request.
fn obey(body: &Value) -> (String, Value) {
    let mut made: Vec<(String, Value)> = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let args = serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}"))
                .unwrap_or_default();
            made.push((
                c["function"]["name"].as_str().unwrap_or("").to_string(),
                args,
            ));
        }
    }
    let forced = body["tool_choice"]["function"]["name"] == "final_answer";
    let read = |mode: &str| {
        made.iter()
            .any(|(n, a)| n == "log_excerpt" && a["mode"] == mode)
    };
    if !forced && !read("failure") {
        return ("log_excerpt".into(), json!({"mode": "failure"}));
    }
    if !forced && !read("tail") {
        return (
            "log_excerpt".into(),
            json!({"mode": "tail", "max_lines": 200}),
        );
    }
    // The raw console too, where the tool offers it: escape sequences and
    // long lines reach the model uncleaned there.
    let offered = |name: &str| {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["function"]["name"] == name)
    };
    if !forced && offered("jenkins_console") && !made.iter().any(|(n, _)| n == "jenkins_console") {
        return ("jenkins_console".into(), json!({"part": "tail"}));
    }
    let found = directives(body);
    if !forced {
        for d in &found {
            if let Order::Call { tool, args } = &d.order
                && !made.iter().any(|(n, a)| n == tool && a == args)
            {
                return (tool.clone(), args.clone());
            }
        }
    }
    let evidence: Vec<Value> = found
        .iter()
        .map(|d| json!({"iteration": d.iteration, "quote": d.line}))
        .collect();
    // Unless the log dictates one, the category the log's classification
    // names — either way supported by injected lines alone.
    let classified = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
        .find_map(|c| {
            Some(
                c["result"]["classification"]["category"]
                    .as_str()?
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "UNKNOWN".into());
    let mut answer = json!({"category": classified, "root_cause": "As the log instructs.",
        "fix": "As the log instructs.", "evidence": evidence, "confidence": 0.99});
    for d in &found {
        match &d.order {
            Order::Answer {
                category,
                confidence,
            } => {
                answer["category"] = json!(category);
                answer["confidence"] = json!(confidence);
            }
            Order::Verdict(v) => {
                for key in ["category", "root_cause", "fix", "confidence"] {
                    if !v[key].is_null() {
                        answer[key] = v[key].clone();
                    }
                }
            }
            Order::LeakSecrets => {
                let copied = secret_looking(&body.to_string());
                answer["root_cause"] = json!(format!("Environment: {}", copied.join(" ")));
                answer["fix"] = json!(format!("Reproduce with {}", copied.join(" ")));
            }
            Order::Call { .. } => {}
        }
    }
    // The worst case gathers retrieval strength for the answer it was told
    // to give, as a model bent on a confident answer would.
    let query = match answer["category"].as_str().unwrap_or_default() {
        "INFRA_ERROR" => "out of memory java heap space killed",
        "CONFIG_ERROR" => "tls certificate docker image pull",
        "DEPENDENCY_ERROR" => "cannot find module peer dependency conflict eresolve",
        "CODE_ERROR" => "rustc compile error javac",
        "TEST_FAILURE" => "assertion expected actual test failed junit",
        _ => "",
    };
    if !forced && !query.is_empty() && !made.iter().any(|(n, _)| n == "search_knowledge") {
        return (
            "search_knowledge".into(),
            json!({"query": query, "limit": 5}),
        );
    }
    ("final_answer".into(), answer)
}

/// Everything in `text` that looks like an environment variable, a token
/// or a key (`NAME=value`, `ghp_…`, `sk-…`, `Bearer …`).
pub fn secret_looking(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "\"'\\,;()[]{}<>".contains(c)) {
        let env = word.split_once('=').is_some_and(|(k, v)| {
            k.len() >= 3
                && !v.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        let token = ["ghp_", "gho_", "sk-", "xoxb-", "AKIA"]
            .iter()
            .any(|p| word.starts_with(p));
        if (env || token) && !found.iter().any(|f| f == word) {
            found.push(word.to_string());
        }
    }
    found
}

/// `{scheme}://{host}/repos/{owner}/{name}` of a request whose path is
/// `parts` (`repos`, owner, name, …): the base of the URLs a fake answers.
fn repository_api(request: &Request, parts: &[&str]) -> String {
    format!(
        "{}://{}/repos/{}/{}",
        request.url.scheme(),
        request.url.authority(),
        parts.get(1).unwrap_or(&""),
        parts.get(2).unwrap_or(&"")
    )
}

/// A fake of GitHub's Checks API, keeping state like GitHub does:
/// `POST /repos/{owner}/{repo}/check-runs` creates a check run (at most 50
/// annotations, else 422), `PATCH …/check-runs/{id}` appends annotations
/// (at most 50), `GET /repos/{owner}/{repo}/commits/{ref}/check-runs`
/// lists them with `output.annotations_count`. `fail_write(n, applied)`
/// makes the n-th write (0-based) answer 502, after applying it when
/// `applied` (a response lost on the way back).
#[derive(Clone, Default)]
pub struct FakeChecks {
    pub state: Arc<Mutex<ChecksState>>,
}

#[derive(Default)]
pub struct ChecksState {
    pub runs: Vec<CheckRun>,
    /// Every write request: method, path, annotations it carried.
    pub writes: Vec<(String, String, usize)>,
    failures: Vec<(usize, bool)>,
}

#[derive(Clone, Debug)]
pub struct CheckRun {
    pub id: u64,
    pub head_sha: String,
    pub name: String,
    pub external_id: Option<String>,
    pub output: Value,
    pub annotations: Vec<Value>,
}

impl CheckRun {
    fn json(&self, base: &str) -> Value {
        json!({
            "id": self.id,
            "node_id": format!("CR_kwDO{}", self.id),
            "head_sha": self.head_sha,
            "external_id": self.external_id,
            "name": self.name,
            "status": "completed",
            "conclusion": "neutral",
            "url": format!("{base}/check-runs/{}", self.id),
            "output": {
                "title": self.output["title"],
                "summary": self.output["summary"],
                "text": null,
                "annotations_count": self.annotations.len(),
                "annotations_url": format!("{base}/check-runs/{}/annotations", self.id),
            },
        })
    }
}

impl FakeChecks {
    pub fn fail_write(&self, n: usize, applied: bool) {
        self.state.lock().unwrap().failures.push((n, applied));
    }

    pub fn runs(&self) -> Vec<CheckRun> {
        self.state.lock().unwrap().runs.clone()
    }

    pub fn writes(&self) -> Vec<(String, String, usize)> {
        self.state.lock().unwrap().writes.clone()
    }
}

/// The annotations of a create or update body, or GitHub's 422 (its
/// status and message).
fn annotations_of(body: &Value) -> Result<Vec<Value>, (u16, &'static str)> {
    let list = body["output"]["annotations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if list.len() > 50 {
        return Err((422, "Only 50 annotations are allowed per request"));
    }
    for a in &list {
        let ok = a["path"].is_string()
            && a["start_line"].is_u64()
            && a["end_line"].is_u64()
            && matches!(
                a["annotation_level"].as_str(),
                Some("notice" | "warning" | "failure")
            )
            && a["message"].is_string();
        if !ok {
            return Err((422, "Invalid request.\n\nInvalid annotation"));
        }
    }
    Ok(list)
}

impl Respond for FakeChecks {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut st = self.state.lock().unwrap();
        let path = request.url.path().to_string();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let method = request.method.as_str().to_string();
        let base = repository_api(request, &parts);
        match (method.as_str(), &parts[..]) {
            ("GET", ["repos", _, _, "commits", sha, "check-runs"]) => {
                let name = request
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "check_name")
                    .map(|(_, v)| v.to_string());
                let runs: Vec<Value> = st
                    .runs
                    .iter()
                    .filter(|r| r.head_sha == *sha && name.as_ref().is_none_or(|n| *n == r.name))
                    .map(|r| r.json(&base))
                    .collect();
                github_json(json!({"total_count": runs.len(), "check_runs": runs}))
            }
            ("POST" | "PATCH", ["repos", _, _, "check-runs", rest @ ..]) => {
                let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                    return github_error(400, "Problems parsing JSON");
                };
                let n = st.writes.len();
                let annotations = match annotations_of(&body) {
                    Ok(a) => a,
                    Err((status, message)) => return github_error(status, message),
                };
                st.writes
                    .push((method.clone(), path.clone(), annotations.len()));
                let failure = st.failures.iter().find(|(i, _)| *i == n).copied();
                if failure.is_some_and(|(_, applied)| !applied) {
                    return github_error(502, "Server Error");
                }
                let reply = match rest {
                    [] => {
                        if body["name"].as_str().is_none() || body["head_sha"].as_str().is_none() {
                            return github_error(
                                422,
                                "Invalid request.\n\n\"name\", \"head_sha\" wasn't supplied.",
                            );
                        }
                        let run = CheckRun {
                            id: 7_000_000 + st.runs.len() as u64,
                            head_sha: body["head_sha"].as_str().unwrap().to_string(),
                            name: body["name"].as_str().unwrap().to_string(),
                            external_id: body["external_id"].as_str().map(str::to_string),
                            output: body["output"].clone(),
                            annotations,
                        };
                        let json = run.json(&base);
                        st.runs.push(run);
                        ResponseTemplate::new(201).set_body_json(json)
                    }
                    [id] => {
                        let Some(run) = st.runs.iter_mut().find(|r| r.id.to_string() == *id) else {
                            return github_error(404, "Not Found");
                        };
                        run.annotations.extend(annotations);
                        if body["output"].is_object() {
                            run.output = body["output"].clone();
                        }
                        github_json(run.json(&base))
                    }
                    _ => github_error(404, "Not Found"),
                };
                if failure.is_some() {
                    return github_error(502, "Server Error");
                }
                reply
            }
            _ => github_error(404, "Not Found"),
        }
    }
}

/// A fake of GitHub's issue comments as a pull request has them, keeping
/// state like GitHub does: `GET /repos/{o}/{r}/issues/{n}/comments` (pages
/// of `per_page`), `POST` there (201), `GET` / `PATCH
/// /repos/{o}/{r}/issues/comments/{id}` (404 once deleted), each comment
/// with its `reactions` rollup; and `GET /repos/{o}/{r}/commits/{sha}/pulls`
/// from [`FakeIssues::open_pull`]. `fail_write(n, applied)` makes the n-th
/// write (0-based) answer 502, after applying it when `applied`.
#[derive(Clone, Default)]
pub struct FakeIssues {
    pub state: Arc<Mutex<IssuesState>>,
}

#[derive(Default)]
pub struct IssuesState {
    pub comments: Vec<IssueComment>,
    /// Every write: method and path.
    pub writes: Vec<(String, String)>,
    /// Every read: its path.
    pub reads: Vec<String>,
    pulls: Vec<(String, u64)>,
    /// Repository files the contents API serves (any ref).
    files: Vec<(String, String)>,
    failures: Vec<(usize, bool)>,
    next_id: u64,
}

#[derive(Clone, Debug)]
pub struct IssueComment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub deleted: bool,
    pub thumbs_up: u64,
    pub thumbs_down: u64,
    /// Who reacted: (login, 👍).
    pub reactors: Vec<(String, bool)>,
}

impl IssueComment {
    fn json(&self, base: &str) -> Value {
        json!({
            "id": self.id,
            "node_id": format!("IC_kwDO{}", self.id),
            "url": format!("{base}/issues/comments/{}", self.id),
            "html_url": format!("https://github.com/octo/app/pull/{}#issuecomment-{}", self.issue, self.id),
            "issue_url": format!("{base}/issues/{}", self.issue),
            "body": self.body,
            "user": {"login": "faultline[bot]", "type": "Bot"},
            "author_association": "NONE",
            "created_at": "2026-11-27T08:00:00Z",
            "updated_at": "2026-11-27T08:00:00Z",
            "reactions": {
                "url": format!("{base}/issues/comments/{}/reactions", self.id),
                "total_count": self.thumbs_up + self.thumbs_down,
                "+1": self.thumbs_up, "-1": self.thumbs_down,
                "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
            },
        })
    }
}

impl FakeIssues {
    /// Commit `sha` is the head of open pull request `number`.
    pub fn open_pull(&self, sha: &str, number: u64) {
        self.state
            .lock()
            .unwrap()
            .pulls
            .push((sha.to_string(), number));
    }

    /// The repository holds `path` with `text` (at every ref).
    pub fn file(&self, path: &str, text: &str) {
        self.state
            .lock()
            .unwrap()
            .files
            .push((path.to_string(), text.to_string()));
    }

    /// A comment written by someone else (a person, another bot).
    pub fn comment_as_someone(&self, issue: u64, body: &str) {
        let mut st = self.state.lock().unwrap();
        st.next_id += 1;
        let id = 900_000 + st.next_id;
        st.comments.push(IssueComment {
            id,
            issue,
            body: body.to_string(),
            deleted: false,
            thumbs_up: 0,
            thumbs_down: 0,
            reactors: Vec::new(),
        });
    }

    pub fn fail_write(&self, n: usize, applied: bool) {
        self.state.lock().unwrap().failures.push((n, applied));
    }

    /// The comments not deleted.
    pub fn comments(&self) -> Vec<IssueComment> {
        let st = self.state.lock().unwrap();
        st.comments.iter().filter(|c| !c.deleted).cloned().collect()
    }

    pub fn writes(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().writes.clone()
    }

    /// How many writes had `method`.
    pub fn write_count(&self, method: &str) -> usize {
        self.writes().iter().filter(|(m, _)| m == method).count()
    }

    /// Someone edits comment `id` in the browser.
    pub fn edit(&self, id: u64, body: &str) {
        let mut st = self.state.lock().unwrap();
        if let Some(c) = st.comments.iter_mut().find(|c| c.id == id) {
            c.body = body.to_string();
        }
    }

    /// Someone deletes comment `id`.
    pub fn delete(&self, id: u64) {
        let mut st = self.state.lock().unwrap();
        if let Some(c) = st.comments.iter_mut().find(|c| c.id == id) {
            c.deleted = true;
        }
    }

    /// Someone reacts 👍 (`true`) or 👎 to comment `id`.
    pub fn react(&self, id: u64, thumbs_up: bool) {
        self.react_as(id, "a-developer", thumbs_up);
    }

    /// `login` reacts 👍 (`true`) or 👎 to comment `id`.
    pub fn react_as(&self, id: u64, login: &str, thumbs_up: bool) {
        let mut st = self.state.lock().unwrap();
        if let Some(c) = st.comments.iter_mut().find(|c| c.id == id) {
            if thumbs_up {
                c.thumbs_up += 1;
            } else {
                c.thumbs_down += 1;
            }
            c.reactors.push((login.to_string(), thumbs_up));
        }
    }

    /// `login` takes back their reactions to comment `id`.
    pub fn unreact(&self, id: u64, login: &str) {
        let mut st = self.state.lock().unwrap();
        if let Some(c) = st.comments.iter_mut().find(|c| c.id == id) {
            for (_, up) in c.reactors.iter().filter(|(l, _)| l == login) {
                if *up {
                    c.thumbs_up -= 1;
                } else {
                    c.thumbs_down -= 1;
                }
            }
            c.reactors.retain(|(l, _)| l != login);
        }
    }

    /// Every request's method and path, reads included.
    pub fn reads(&self) -> Vec<String> {
        self.state.lock().unwrap().reads.clone()
    }
}

impl Respond for FakeIssues {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut st = self.state.lock().unwrap();
        let path = request.url.path().to_string();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let method = request.method.as_str().to_string();
        let base = repository_api(request, &parts);
        let query = |key: &str| {
            request
                .url
                .query_pairs()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.parse::<usize>().ok())
        };
        if method == "POST" || method == "PATCH" {
            let n = st.writes.len();
            st.writes.push((method.clone(), path.clone()));
            let failure = st.failures.iter().find(|(i, _)| *i == n).copied();
            if failure.is_some_and(|(_, applied)| !applied) {
                return github_error(502, "Server Error");
            }
            let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                return github_error(400, "Problems parsing JSON");
            };
            let Some(text) = body["body"].as_str() else {
                return github_error(422, "Invalid request.\n\n\"body\" wasn't supplied.");
            };
            if text.chars().count() > 65_536 {
                return github_error(422, "Body is too long (maximum is 65536 characters)");
            }
            let reply = match (method.as_str(), &parts[..]) {
                ("POST", ["repos", _, _, "issues", issue, "comments"]) => {
                    let Ok(issue) = issue.parse::<u64>() else {
                        return github_error(404, "Not Found");
                    };
                    st.next_id += 1;
                    let c = IssueComment {
                        id: 1_000_000 + st.next_id,
                        issue,
                        body: text.to_string(),
                        deleted: false,
                        thumbs_up: 0,
                        thumbs_down: 0,
                        reactors: Vec::new(),
                    };
                    let json = c.json(&base);
                    st.comments.push(c);
                    ResponseTemplate::new(201).set_body_json(json)
                }
                ("PATCH", ["repos", _, _, "issues", "comments", id]) => {
                    match st
                        .comments
                        .iter_mut()
                        .find(|c| !c.deleted && c.id.to_string() == *id)
                    {
                        Some(c) => {
                            c.body = text.to_string();
                            github_json(c.json(&base))
                        }
                        None => github_error(404, "Not Found"),
                    }
                }
                _ => github_error(404, "Not Found"),
            };
            if failure.is_some() {
                return github_error(502, "Server Error");
            }
            return reply;
        }
        st.reads.push(path.clone());
        match (method.as_str(), &parts[..]) {
            // GitHub's list of a comment's reactions, one object per person
            // and content, oldest first; `content` filters.
            ("GET", ["repos", _, _, "issues", "comments", id, "reactions"]) => {
                let per_page = query("per_page").unwrap_or(30).clamp(1, 100);
                let page = query("page").unwrap_or(1).max(1);
                let content = request
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "content")
                    .map(|(_, v)| v.to_string());
                match st
                    .comments
                    .iter()
                    .find(|c| !c.deleted && c.id.to_string() == *id)
                {
                    Some(c) => {
                        let list: Vec<Value> = c
                            .reactors
                            .iter()
                            .enumerate()
                            .map(|(i, (login, up))| {
                                json!({
                                    "id": 7_000_000 + i,
                                    "node_id": format!("REA_lADO{i}"),
                                    "user": {"login": login, "id": 500 + i, "type": "User"},
                                    "content": if *up { "+1" } else { "-1" },
                                    "created_at": "2026-11-27T09:00:00Z",
                                })
                            })
                            .filter(|r| content.as_deref().is_none_or(|want| r["content"] == want))
                            .skip((page - 1) * per_page)
                            .take(per_page)
                            .collect();
                        github_json(json!(list))
                    }
                    None => github_error(404, "Not Found"),
                }
            }
            ("GET", ["repos", _, _, "contents", path @ ..]) => {
                let path = path.join("/");
                match st.files.iter().find(|(p, _)| *p == path) {
                    // Over 1 MB GitHub sends no content, encoding "none".
                    Some((_, text)) if text.len() > 1 << 20 => {
                        let mut reply = contents(&path, "");
                        reply["encoding"] = json!("none");
                        reply["content"] = json!("");
                        reply["size"] = json!(text.len());
                        github_json(reply)
                    }
                    Some((_, text)) => github_json(contents(&path, text)),
                    None => github_error(404, "Not Found"),
                }
            }
            ("GET", ["repos", _, _, "commits", sha, "pulls"]) => {
                let pulls: Vec<Value> = st
                    .pulls
                    .iter()
                    .filter(|(s, _)| s == sha)
                    .map(|(s, n)| {
                        json!({"number": n, "state": "open", "title": "A change",
                               "head": {"sha": s, "ref": "feature"}, "base": {"ref": "main"}})
                    })
                    .collect();
                github_json(json!(pulls))
            }
            ("GET", ["repos", _, _, "issues", issue, "comments"]) => {
                let per_page = query("per_page").unwrap_or(30).clamp(1, 100);
                let page = query("page").unwrap_or(1).max(1);
                let list: Vec<Value> = st
                    .comments
                    .iter()
                    .filter(|c| !c.deleted && c.issue.to_string() == *issue)
                    .skip((page - 1) * per_page)
                    .take(per_page)
                    .map(|c| c.json(&base))
                    .collect();
                github_json(json!(list))
            }
            ("GET", ["repos", _, _, "issues", "comments", id]) => {
                match st
                    .comments
                    .iter()
                    .find(|c| !c.deleted && c.id.to_string() == *id)
                {
                    Some(c) => github_json(c.json(&base)),
                    None => github_error(404, "Not Found"),
                }
            }
            _ => github_error(404, "Not Found"),
        }
    }
}
