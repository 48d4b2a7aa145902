//! The accept loop of `faultline serve`. `axum::serve` gives hyper no timer,
//! so a request head could take forever; here hyper's connection builder gets
//! `header_read_timeout`, open connections are capped (in all and per
//! client), each request carries its peer address (`ConnectInfo`) and its
//! client's ([`ClientAddr`], for per-client limits), and shutdown lets
//! in-flight requests finish.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{Router, extract::ConnectInfo, http::Request};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

use super::client::{ClientAddr, PerClient, TrustedProxies};

/// Connection-level limits.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    /// A request head must arrive within this, else the connection closes.
    pub header_read_timeout: Duration,
    /// Open connections at most; the next accept waits for one to close.
    pub max_connections: usize,
    /// Open connections of one client (IPv4 address or IPv6 /64) at most;
    /// one more is closed at once, so a single client cannot take all of
    /// `max_connections`. Trusted proxies carry many clients and are exempt.
    pub max_connections_per_client: usize,
    /// Whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Arc<TrustedProxies>,
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits for open
/// connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()>,
) {
    // HTTP/1.1 only: the auto builder's HTTP/2 detection first reads up to
    // 24 bytes with no timer, so a socket that sends nothing (or `P`, or the
    // h2 preface) held a connection slot forever and 1,024 of them stopped
    // the server. Webhook senders and API clients speak HTTP/1.1; hyper's
    // head timer runs from the first poll of every request head, the first
    // one included.
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_client = PerClient::new(limits.max_connections_per_client);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before accept.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let proxy = limits.trusted_proxies.contains(peer.ip());
        let held = if proxy {
            None
        } else {
            match per_client.try_take(peer.ip().into()) {
                Some(held) => Some(held),
                None => {
                    tracing::debug!(%peer, "per-client connection cap reached; closed");
                    continue;
                }
            }
        };
        let trusted = limits.trusted_proxies.clone();
        let service = app
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                let client = trusted.client(peer.ip(), request.headers());
                let extensions = request.extensions_mut();
                extensions.insert(ConnectInfo::<SocketAddr>(peer));
                extensions.insert(ClientAddr(client));
                request
            });
        let conn = builder
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop((permit, held));
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
