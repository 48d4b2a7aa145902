//! `make run`'s demo (`scripts/run-demo.sh`) returns with the console still
//! serving, and the pid it prints stops it (issue 33).

use std::{process::Command, time::Duration};

use faultline_tests::{TestDb, bin, wait_until};

#[tokio::test]
async fn the_demo_returns_and_leaves_the_console_serving_until_its_pid_is_killed() {
    let db = TestDb::new().await;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let bin_dir = bin("faultline").parent().unwrap().to_path_buf();
    // `timeout` fails the test instead of hanging it when the script waits
    // on the server it left running.
    let out = tokio::task::spawn_blocking({
        let url = db.url.clone();
        move || {
            Command::new("timeout")
                .args(["120", "bash", "scripts/run-demo.sh"])
                .arg(&bin_dir)
                .current_dir(root)
                .env("DATABASE_URL", url)
                .env("DEMO_BIND", "127.0.0.1:0")
                .env_remove("CI")
                .output()
                .expect("run the demo")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the demo failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("open ")?.split_whitespace().next())
        .expect("the demo prints the console's URL")
        .to_string();
    let pid: i32 = stdout
        .lines()
        .find_map(|l| l.split("stop it with: kill ").nth(1))
        .and_then(|p| p.trim_end_matches(')').parse().ok())
        .expect("the demo prints how to stop the server");
    let login = url.replace("/ui/", "/ui/login");
    let http = reqwest::Client::new();
    let answered = http
        .get(&login)
        .send()
        .await
        .map(|r| r.status().is_success());
    assert!(
        matches!(answered, Ok(true)),
        "the console answers after the demo returned"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    wait_until(Duration::from_secs(30), || {
        let http = http.clone();
        let login = login.clone();
        async move { http.get(&login).send().await.is_err().then_some(()) }
    })
    .await;
}
