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
