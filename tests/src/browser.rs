//! A real headless Chromium for the console's tests, driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`; `scripts/setup-services.sh`
//! installs them). Each [`Browser`] is its own chromedriver and browser
//! profile, so tests run in parallel and two browsers are two users.
//! Without Chromium the tests fail with a message saying how to get it:
//! they are never skipped.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use fantoccini::{
    Client, ClientBuilder, Locator,
    actions::{InputSource, KeyAction, KeyActions},
    elements::Element,
    key::Key,
};
use serde_json::json;

/// A chromedriver and one browser session; both end when dropped.
pub struct Browser {
    pub client: Client,
    _driver: tokio::process::Child,
    pub base: String,
    /// The browser's own profile folder: it names every process of this
    /// browser, so dropping kills them all (chromedriver's death alone
    /// leaves Chromium running, reconnecting its pages' event streams to
    /// ports that other tests may have by then).
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver's whole process tree (the browser, its zygotes and
        // renderers), read before anything dies and is re-parented, plus
        // any process that names this browser's profile.
        let mut doomed: Vec<i32> = Vec::new();
        if let Some(root) = self._driver.id() {
            doomed.push(root as i32);
        }
        let procs = processes();
        let mark = self.profile.to_string_lossy().to_string();
        doomed.extend(
            procs
                .iter()
                .filter(|p| p.cmdline.contains(&mark))
                .map(|p| p.pid),
        );
        let mut i = 0;
        while i < doomed.len() {
            let parent = doomed[i];
            for p in &procs {
                if p.ppid == parent && !doomed.contains(&p.pid) {
                    doomed.push(p.pid);
                }
            }
            i += 1;
        }
        for pid in doomed {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

struct Proc {
    pid: i32,
    ppid: i32,
    cmdline: String,
}

/// Every process: its id, its parent's, its command line.
fn processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            Some(Proc {
                pid,
                ppid,
                cmdline: String::from_utf8_lossy(&cmdline).into_owned(),
            })
        })
        .collect()
}

fn found(var: &str, candidates: &[&str]) -> PathBuf {
    if let Ok(p) = std::env::var(var) {
        return PathBuf::from(p);
    }
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "{} not found ({}): the console's browser tests need Debian's chromium and \
                 chromium-driver. Run `bash scripts/setup-services.sh` (it installs them) or \
                 `apt-get install chromium chromium-driver`, or set {var}.",
                candidates[0],
                candidates.join(", ")
            )
        })
}

impl Browser {
    /// Starts chromedriver on a free port and opens a headless Chromium
    /// whose pages are under `base` (`http://127.0.0.1:PORT`).
    pub async fn start(base: &str) -> Browser {
        let driver = found(
            "CHROMEDRIVER",
            &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"],
        );
        let chromium = found(
            "CHROMIUM",
            &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", driver.display()));
        let url = format!("http://127.0.0.1:{port}");
        let profile = std::env::temp_dir().join(format!(
            "faultline-chromium-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let caps = json!({
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,1000", "--force-device-scale-factor=1",
                         "--no-first-run", "--disable-extensions",
                         format!("--user-data-dir={}", profile.display())]
            }
        });
        let caps = match caps {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let client = loop {
            match ClientBuilder::new(connector.clone())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if tokio::time::Instant::now() > deadline => {
                    panic!(
                        "no WebDriver session from {} within 30s: {e}",
                        driver.display()
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Browser {
            client,
            _driver: child,
            base: base.to_string(),
            profile,
        }
    }

    pub async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap_or_else(|e| panic!("goto {path}: {e}"));
    }

    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        }
    }

    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css:?} within 10s: {e}"))
    }

    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        self.client.find_all(Locator::Css(css)).await.unwrap()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// The page's HTML.
    pub async fn source(&self) -> String {
        self.client.source().await.unwrap()
    }

    /// Signs in with `token` on the sign-in form (the one shown, or a fresh one).
    pub async fn sign_in(&self, token: &str) {
        if !self.path().await.starts_with("/ui/login") {
            self.goto("/ui/login").await;
        }
        let field = self.find("input[name=token]").await;
        field.send_keys(token).await.unwrap();
        field
            .send_keys(&String::from(char::from(Key::Enter)))
            .await
            .unwrap();
        self.wait_for_path_not("/ui/login").await;
    }

    /// Presses keys on whatever has the focus, as a user at the keyboard
    /// (WebDriver key actions; `Key::…` characters for special keys).
    pub async fn press(&self, keys: &str) {
        let mut actions = KeyActions::new("keyboard".into());
        for c in keys.chars() {
            actions = actions
                .then(KeyAction::Down { value: c })
                .then(KeyAction::Up { value: c });
        }
        self.client.perform_actions(actions).await.unwrap();
    }

    /// Presses `modifier` + `key` together (Ctrl+Enter, Ctrl+A).
    pub async fn chord(&self, modifier: Key, key: char) {
        let m = char::from(modifier);
        let actions = KeyActions::new("chord".into())
            .then(KeyAction::Down { value: m })
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key })
            .then(KeyAction::Up { value: m });
        self.client.perform_actions(actions).await.unwrap();
    }

    /// Waits until the page's path (with query) satisfies `check`.
    pub async fn wait_for_path(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let path = self.path().await;
            if check(&path) {
                return path;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "still on {path} after 15s, waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_for_path_not(&self, path: &str) -> String {
        self.wait_for_path(&format!("a page other than {path}"), |p| {
            !p.starts_with(path)
        })
        .await
    }

    /// Waits until the script returns true (it is the body of a function).
    pub async fn wait_for_js(&self, what: &str, script: &str, deadline: Duration) {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let v = self.client.execute(script, vec![]).await.unwrap();
            if v.as_bool() == Some(true) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < end,
                "{what}: not within {deadline:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Saves a PNG of the window under `target/console-screenshots/NAME.png`
    /// and returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}
