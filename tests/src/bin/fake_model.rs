//! `faultline-fake-model`: the scripted model of
//! `faultline_tests::scripted_model` on an address, for trying the LLM
//! reasoner (and `faultline eval --compare openai:scripted`) without one.
//!
//! usage: faultline-fake-model [--addr 127.0.0.1:0] [--delay-ms N]
//! Prints `listening on http://ADDR/v1` (the LLM_BASE_URL) and serves until killed.

use std::{net::SocketAddr, time::Duration};

use anyhow::{Context, bail};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut addr: SocketAddr = "127.0.0.1:0".parse()?;
    let mut delay = Duration::ZERO;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--addr" => {
                let v = value("--addr")?;
                addr = v
                    .parse()
                    .with_context(|| format!("--addr {v}: not HOST:PORT"))?;
            }
            "--delay-ms" => {
                let v = value("--delay-ms")?;
                delay = Duration::from_millis(
                    v.parse()
                        .with_context(|| format!("--delay-ms {v}: not a number"))?,
                );
            }
            "-h" | "--help" => {
                println!("usage: faultline-fake-model [--addr 127.0.0.1:0] [--delay-ms N]");
                return Ok(());
            }
            other => bail!(
                "unknown argument {other:?} (usage: faultline-fake-model [--addr HOST:PORT] [--delay-ms N])"
            ),
        }
    }
    let bound = faultline_tests::scripted_model::serve(addr, delay).await?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{bound}/v1")?;
        out.flush()?;
    }
    std::future::pending::<()>().await;
    Ok(())
}
