//! Live pages and run streams: one LISTEN connection per server process,
//! fanned out to every open stream:
//!
//! - `faultline_review` (a trigger on `review_items`, once per changing
//!   statement): a console page that hears `queue` fetches itself again and
//!   swaps the parts that changed, so a claim by someone else shows at once.
//! - `faultline_run_steps` (`"<run> <iteration>"`, sent by the checkpoint of
//!   a watched run) and `faultline_run_finished` (`"<run>"`): a run's event
//!   stream ([`run_events`]) sends each committed iteration once, in order,
//!   then the verdict; resumable with `Last-Event-ID`.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::State,
    http::HeaderMap,
    response::sse::{Event, KeepAlive, Sse},
};
use faultline_shared::storage::{
    runs::{self, FINISHED_CHANNEL, STEPS_CHANNEL},
    steps::{self, StepRow},
};
use futures::Stream;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::broadcast;
use uuid::Uuid;

use super::{super::AppState, Signed};

/// The channel the `review_items` trigger notifies on.
pub const REVIEW_CHANNEL: &str = "faultline_review";

/// What the database announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The review queue changed.
    Review,
    /// A watched run committed an iteration.
    Step(Uuid),
    /// A run reached a terminal state.
    Finished(Uuid),
    /// The listener was lost and is back: anything may have changed.
    Resync,
}

/// Fans the database's notifications out to the open streams.
pub struct Hub {
    tx: broadcast::Sender<Change>,
    /// True once the server shuts down: every stream ends, so a graceful
    /// shutdown does not wait on open pages.
    closing: tokio::sync::watch::Sender<bool>,
}

impl Hub {
    /// Starts listening in the background (reconnecting after a lost
    /// connection, with a refresh for every page then, since notifications
    /// sent meanwhile are lost).
    pub fn start(pool: PgPool) -> Arc<Hub> {
        let (tx, _) = broadcast::channel(1024);
        let hub = Arc::new(Hub {
            tx: tx.clone(),
            closing: tokio::sync::watch::channel(false).0,
        });
        tokio::spawn(async move {
            loop {
                if let Err(e) = listen(&pool, &tx).await {
                    tracing::warn!(error = %e, "console live updates: listener lost; retrying in 1s");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        hub
    }

    /// Ends every open stream (at shutdown).
    pub fn close(&self) {
        let _ = self.closing.send(true);
    }

    /// Resolves when the server shuts down.
    fn closed(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut rx = self.closing.subscribe();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }
}

async fn listen(pool: &PgPool, tx: &broadcast::Sender<Change>) -> sqlx::Result<()> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener
        .listen_all([REVIEW_CHANNEL, STEPS_CHANNEL, FINISHED_CHANNEL])
        .await?;
    // Listening (again): what changed before this moment was not heard.
    let _ = tx.send(Change::Resync);
    loop {
        let change = match listener.try_recv().await? {
            Some(n) => match n.channel() {
                REVIEW_CHANNEL => Change::Review,
                STEPS_CHANNEL => match n.payload().split_once(' ').map(|(r, _)| r.parse()) {
                    Some(Ok(run)) => Change::Step(run),
                    _ => continue,
                },
                FINISHED_CHANNEL => match n.payload().parse() {
                    Ok(run) => Change::Finished(run),
                    Err(_) => continue,
                },
                _ => continue,
            },
            // The connection was lost; the next try_recv reconnects.
            // Notifications sent meanwhile are lost: every stream resyncs.
            None => Change::Resync,
        };
        let _ = tx.send(change);
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
    let closed = state.live.closed();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(Change::Review | Change::Resync)
                | Err(broadcast::error::RecvError::Lagged(_)) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    while rx.try_recv().is_ok() {}
                    return Some((Ok(Event::default().event("queue").data("changed")), rx));
                }
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let stream = futures::StreamExt::take_until(stream, closed);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// How long a stream's watch of its run lasts; renewed at half of it.
const WATCH_TTL: Duration = Duration::from_secs(60);

/// Where a resumed stream starts: after the iteration of `Last-Event-ID`
/// (an iteration number, or `verdict` when everything was sent).
pub fn last_event_id(headers: &HeaderMap, query: Option<&str>) -> Result<Resume, String> {
    let value = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .or(query)
        .map(str::trim)
        .filter(|v| !v.is_empty());
    match value {
        None => Ok(Resume::After(0)),
        Some("verdict") => Ok(Resume::Done),
        Some(v) => v
            .parse::<i32>()
            .ok()
            .filter(|n| *n >= 0)
            .map(Resume::After)
            .ok_or_else(|| {
                format!("Last-Event-ID: {v:?} is not an iteration number or \"verdict\"")
            }),
    }
}

/// Where a run's stream resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Send iterations after this one (0: from the start).
    After(i32),
    /// The verdict was sent: nothing is left.
    Done,
}

/// How an iteration is sent: JSON for the API, HTML for the console.
pub type Render = fn(&StepRow) -> String;

struct RunStream {
    pool: PgPool,
    rx: broadcast::Receiver<Change>,
    run: Uuid,
    last: i32,
    /// Read but not yet sent.
    pending: std::collections::VecDeque<Event>,
    done: bool,
    render: Render,
    renew_at: tokio::time::Instant,
}

/// The events of one run: `iteration` (id: its number; data: `render` of
/// the journal row) for each committed iteration after `resume`, once and
/// in order, then `verdict` (id `verdict`; data: status and result) when
/// the run is terminal. Fed by the commits' notifications (the run is
/// watched while the stream is open); the journal is read when one
/// arrives, never polled.
pub async fn run_events(
    state: &AppState,
    run: Uuid,
    resume: Resume,
    render: Render,
) -> sqlx::Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>> {
    // Subscribe and watch before reading, so no commit falls in between.
    let rx = state.live.tx.subscribe();
    runs::watch(&state.pool, run, WATCH_TTL).await?;
    let mut s = RunStream {
        pool: state.pool.clone(),
        rx,
        run,
        last: match resume {
            Resume::After(n) => n,
            Resume::Done => i32::MAX,
        },
        pending: Default::default(),
        done: resume == Resume::Done,
        render,
        renew_at: tokio::time::Instant::now() + WATCH_TTL / 2,
    };
    if !s.done {
        s.catch_up().await?;
    }
    let stream = futures::stream::unfold(s, |mut s| async move {
        loop {
            if let Some(e) = s.pending.pop_front() {
                return Some((Ok(e), s));
            }
            if s.done {
                return None;
            }
            let renew = tokio::time::sleep_until(s.renew_at);
            let change = tokio::select! {
                c = s.rx.recv() => c,
                () = renew => {
                    s.renew_at = tokio::time::Instant::now() + WATCH_TTL / 2;
                    if runs::watch(&s.pool, s.run, WATCH_TTL).await.is_err() {
                        return None;
                    }
                    continue;
                }
            };
            let read = match change {
                Ok(Change::Step(r) | Change::Finished(r)) if r == s.run => true,
                Ok(Change::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => true,
                Ok(_) => false,
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if read && s.catch_up().await.is_err() {
                return None;
            }
        }
    });
    let stream = futures::StreamExt::take_until(stream, state.live.closed());
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The data of a stream's last event, `verdict`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Verdict {
    pub status: faultline_shared::RunStatus,
    /// The run's verdict, as `GET /api/v1/analyses/{id}` shows it.
    pub result: Option<serde_json::Value>,
    /// How many iterations the run took.
    pub iterations: i32,
}

impl RunStream {
    /// Queues the iterations committed after `last`, then the verdict if
    /// the run is terminal.
    async fn catch_up(&mut self) -> sqlx::Result<()> {
        // Status first: a run terminal now has all its iterations in the
        // journal read next.
        let run = runs::get(&self.pool, self.run).await?;
        let journal = steps::list_after(&self.pool, self.run, self.last).await?;
        for step in journal {
            self.last = step.iteration;
            self.pending.push_back(
                Event::default()
                    .event("iteration")
                    .id(step.iteration.to_string())
                    .data((self.render)(&step)),
            );
        }
        match run {
            Some(r) if r.status.is_terminal() => {
                self.pending.push_back(
                    Event::default().event("verdict").id("verdict").data(
                        serde_json::to_string(&Verdict {
                            status: r.status,
                            result: r.result,
                            iterations: r.iteration,
                        })
                        .unwrap_or_default(),
                    ),
                );
                self.done = true;
            }
            Some(_) => {}
            None => self.done = true,
        }
        Ok(())
    }
}
