//! Live pages: one `LISTEN faultline_review` connection per server process
//! (the trigger on `review_items` notifies once per changing statement),
//! fanned out to every open console page as server-sent events. A page
//! that hears `queue` fetches itself again and swaps the parts that
//! changed, so a claim by someone else shows at once without a reload.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::State,
    response::sse::{Event, KeepAlive, Sse},
};
use futures::Stream;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::broadcast;

use super::{super::AppState, Signed};

/// The channel the `review_items` trigger notifies on.
pub const REVIEW_CHANNEL: &str = "faultline_review";

/// Fans the database's notifications out to the open pages.
pub struct Hub {
    tx: broadcast::Sender<()>,
}

impl Hub {
    /// Starts listening in the background (reconnecting after a lost
    /// connection, with a refresh for every page then, since notifications
    /// sent meanwhile are lost).
    pub fn start(pool: PgPool) -> Arc<Hub> {
        let (tx, _) = broadcast::channel(64);
        let hub = Arc::new(Hub { tx: tx.clone() });
        tokio::spawn(async move {
            loop {
                if let Err(e) = listen(&pool, &tx).await {
                    tracing::warn!(error = %e, "console live updates: listener lost; retrying in 1s");
                }
                let _ = tx.send(());
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        hub
    }
}

async fn listen(pool: &PgPool, tx: &broadcast::Sender<()>) -> sqlx::Result<()> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(REVIEW_CHANNEL).await?;
    loop {
        match listener.try_recv().await? {
            Some(_) => {
                let _ = tx.send(());
            }
            // The connection was lost; the next try_recv reconnects. Pages
            // refresh, as notifications may have been missed.
            None => {
                let _ = tx.send(());
            }
        }
    }
}

/// `GET /ui/live`: an event `queue` whenever the review queue changed
/// (changes within 100 ms are folded into one), and a comment every 15 s
/// to keep the connection open through proxies.
pub async fn events(
    State(state): State<AppState>,
    _: Signed,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = state.live.tx.subscribe();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                while rx.try_recv().is_ok() {}
                Some((Ok(Event::default().event("queue").data("changed")), rx))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
