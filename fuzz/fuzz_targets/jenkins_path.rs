//! A notification's `build.full_url` (or a tool's `job` argument) through
//! the worker's Jenkins path validation, and the URL it rebuilds: whatever
//! the text, the URL the worker would GET with the Jenkins credentials
//! stays under `JENKINS_URL`, is a job's console (or the job itself), has
//! no query or fragment, and climbs out of no job even behind a proxy that
//! decodes `%2F` and resolves `..`/`..;` once more.
//!
//! Input layout: byte 0 picks the reader (0: build URL, 1: job URL,
//! 2: job names), the rest is the text.

use faultline_worker::sources::jenkins_path::JobPath;
use url::Url;

const ROOT: &str = "https://ci.example.com/jenkins/";

/// The path a proxy that decodes once and normalises dot segments (and
/// Tomcat's `..;`) would pass on.
fn as_a_proxy_reads(path: &str) -> String {
    let decoded: Vec<u8> = percent_decode(path.as_bytes());
    let text = String::from_utf8_lossy(&decoded).replace('\\', "/");
    let mut out: Vec<&str> = Vec::new();
    for segment in text.split('/') {
        let plain = segment.split(';').next().unwrap_or("");
        match plain {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(segment),
        }
    }
    out.join("/")
}

fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Ok(hex) = std::str::from_utf8(hex)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

fn check(url: &Url, root: &Url, tail: &str) {
    assert_eq!(url.scheme(), root.scheme(), "{url}");
    assert_eq!(url.host_str(), root.host_str(), "{url}");
    assert_eq!(url.port(), root.port(), "{url}");
    assert!(url.query().is_none() && url.fragment().is_none(), "{url}");
    let path = url.path();
    assert!(path.starts_with("/jenkins/job/"), "{url}");
    assert!(path.ends_with(tail), "{url} does not end with {tail}");
    let seen = as_a_proxy_reads(path);
    assert!(
        seen.starts_with("/jenkins/job/"),
        "{url} reads as {seen} behind a decoding proxy"
    );
    assert_eq!(
        seen.split('/').count(),
        path.split('/').count(),
        "{url}: a decoding proxy would read another number of segments ({seen})"
    );
}

fn main() {
    let root = Url::parse(ROOT).expect("a root URL");
    afl::fuzz!(|data: &[u8]| {
        let [which, text @ ..] = data else {
            return;
        };
        let Ok(text) = std::str::from_utf8(text) else {
            return;
        };
        match which % 3 {
            0 => {
                if let Ok((job, build)) = JobPath::from_build_url(text) {
                    assert!(build > 0);
                    let url = job.console_url(&root, build);
                    check(&url, &root, &format!("/{build}/consoleText"));
                    // The allow-list reads the job back from the URL.
                    let back = JobPath::of_url(&root, &url).expect("a built URL reads back");
                    assert_eq!(back.names(), job.names(), "{url}");
                    // What the worker builds, it reads back as the same build.
                    assert_eq!(
                        JobPath::from_build_url(url.as_str()),
                        Ok((job, build)),
                        "{url} does not read back"
                    );
                }
            }
            1 => {
                if let Ok(job) = JobPath::from_job_url(text) {
                    let url = job.url(&root, &[""]);
                    check(&url, &root, "/");
                    assert_eq!(JobPath::from_job_url(url.as_str()), Ok(job), "{url}");
                }
            }
            _ => {
                if let Ok(job) = JobPath::from_names(text) {
                    let url = job.url(&root, &["1", "consoleText"]);
                    check(&url, &root, "/1/consoleText");
                    assert_eq!(
                        JobPath::from_build_url(url.as_str()),
                        Ok((job, 1)),
                        "{url}"
                    );
                }
            }
        }
    });
}
