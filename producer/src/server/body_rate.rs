//! A minimum request body rate (`FAULTLINE_MIN_BODY_RATE` bytes/s after
//! `FAULTLINE_MIN_BODY_RATE_GRACE`), as Kestrel's `MinRequestBodyDataRate`
//! (240 B/s, 5 s grace): a body that averages less ends with 408. The body
//! read timeout only bounds each pause, so one byte every 14 s would
//! otherwise hold a slot for the whole request timeout.
//!
//! Only time spent waiting for the client counts: while the handler is busy
//! (looking a token up) nothing is charged to the client.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    BoxError,
    body::{Body, Bytes, HttpBody},
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::error::AppError;

#[derive(Debug, Clone, Copy)]
pub struct MinBodyRate {
    pub bytes_per_sec: u64,
    pub grace: Duration,
}

impl MinBodyRate {
    /// How long `received` bytes may take: the grace period, or longer at the rate.
    fn allowed(&self, received: u64) -> Duration {
        let at_rate = Duration::from_secs_f64(received as f64 / self.bytes_per_sec as f64);
        self.grace.max(at_rate)
    }
}

/// Middleware: wraps the request body; if it fell below the rate, the
/// answer is 408 whatever the handler made of the aborted body.
pub async fn enforce(State(rate): State<MinBodyRate>, request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let too_slow = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(Metered {
            inner: body,
            rate,
            too_slow: too_slow.clone(),
            received: 0,
            waited: Duration::ZERO,
            waiting_since: None,
            timer: None,
        })
    });
    let response = next.run(request).await;
    if too_slow.load(Ordering::Relaxed) {
        return AppError::RequestTimeout(format!(
            "the request body arrived slower than {} bytes/s",
            rate.bytes_per_sec
        ))
        .into_response();
    }
    response
}

/// The body arrived too slowly.
#[derive(Debug, thiserror::Error)]
#[error("the request body arrived slower than the minimum rate")]
struct TooSlow;

struct Metered {
    inner: Body,
    rate: MinBodyRate,
    too_slow: Arc<AtomicBool>,
    received: u64,
    /// Time spent waiting for data, up to the current wait.
    waited: Duration,
    /// Since when the current wait has lasted.
    waiting_since: Option<Instant>,
    /// Fires when the current wait would break the rate.
    timer: Option<Pin<Box<Sleep>>>,
}

impl Metered {
    fn give_up(&mut self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.too_slow.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(TooSlow.into())))
    }
}

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.too_slow.load(Ordering::Relaxed) {
            return Poll::Ready(Some(Err(TooSlow.into())));
        }
        let now = Instant::now();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if let Some(since) = this.waiting_since.take() {
                this.waited += now - since;
            }
            this.timer = None;
            if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref()) {
                this.received += data.len() as u64;
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let since = *this.waiting_since.get_or_insert(now);
        let left = this.rate.allowed(this.received).saturating_sub(this.waited);
        let deadline = since + left;
        if now >= deadline {
            return this.give_up();
        }
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        if timer.as_mut().poll(cx).is_ready() {
            return this.give_up();
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
