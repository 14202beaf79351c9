//! Reading one request body within its bounds: a size cap, a deadline for the whole body
//! and a minimum rate, so that a client declaring a body and sending it slowly (or never)
//! holds its connection for seconds, not forever.
//!
//! It is not the answer to a refused body (`server::read_body` turns a [`BodyError`] into
//! 413, 408 or 400) and it never parses what it reads.
//!
//! Invariant: a read ends by the deadline at the latest; once `window` has passed since the
//! read began (and every `window` after), a body not yet complete must have brought at
//! least `min_rate × window` bytes in that window. A body that arrives whole at once (the
//! usual case) costs no timer.

use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use http_body_util::BodyExt;
use tokio::time::Instant;

/// The bounds of one body read, from `HttpConfig`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    /// Largest body, in bytes.
    pub(crate) max: usize,
    /// The whole body within this.
    pub(crate) deadline: Duration,
    /// Bytes per second a body must keep up, per window; 0 turns the check off.
    pub(crate) min_rate: u64,
    /// The window the rate is measured over (and the grace before the first check).
    pub(crate) window: Duration,
}

/// Why a body was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// More than `max` bytes.
    TooLarge,
    /// Not complete by the deadline.
    TimedOut,
    /// Fewer than `min_rate × window` bytes in a window.
    TooSlow,
    /// The stream failed (the client went away mid-body, or framed it badly).
    Unreadable,
}

/// Reads `body` whole within `limits`.
pub(crate) async fn read(mut body: Body, limits: BodyLimits) -> Result<Bytes, BodyError> {
    let mut collected = Collect::default();
    // Fast path: what hyper already has needs no timer.
    while let Some(frame) = body.frame().now_or_never() {
        if collected.take(frame, limits.max)? {
            return Ok(collected.finish());
        }
    }
    let start = Instant::now();
    let deadline = tokio::time::sleep_until(start + limits.deadline);
    let check_rate = limits.min_rate > 0 && !limits.window.is_zero() && limits.window < limits.deadline;
    let window = tokio::time::sleep_until(start + limits.window);
    tokio::pin!(deadline, window);
    let needed = limits.min_rate.saturating_mul(limits.window.as_millis().try_into().unwrap_or(u64::MAX)) / 1000;
    let mut in_window = 0u64;
    loop {
        tokio::select! {
            biased;
            frame = body.frame() => {
                let before = collected.len;
                if collected.take(frame, limits.max)? {
                    return Ok(collected.finish());
                }
                in_window += (collected.len - before) as u64;
            }
            () = &mut deadline => return Err(BodyError::TimedOut),
            () = &mut window, if check_rate => {
                if in_window < needed {
                    return Err(BodyError::TooSlow);
                }
                in_window = 0;
                let next = window.deadline() + limits.window;
                window.as_mut().reset(next);
            }
        }
    }
}

/// The chunks read so far: the first kept as it came, copies only when there are more.
#[derive(Default)]
struct Collect {
    first: Option<Bytes>,
    rest: Option<BytesMut>,
    len: usize,
}

impl Collect {
    /// Takes one frame; `Ok(true)` at the end of the body.
    fn take(
        &mut self,
        frame: Option<Result<hyper::body::Frame<Bytes>, axum::Error>>,
        max: usize,
    ) -> Result<bool, BodyError> {
        let Some(frame) = frame else { return Ok(true) };
        let frame = frame.map_err(|_| BodyError::Unreadable)?;
        let Ok(data) = frame.into_data() else { return Ok(false) }; // trailers: nothing to keep
        self.len += data.len();
        if self.len > max {
            return Err(BodyError::TooLarge);
        }
        match (&self.first, &mut self.rest) {
            (None, _) => self.first = Some(data),
            (Some(first), None) => {
                let mut rest = BytesMut::with_capacity(self.len);
                rest.extend_from_slice(first);
                rest.extend_from_slice(&data);
                self.rest = Some(rest);
            }
            (Some(_), Some(rest)) => rest.extend_from_slice(&data),
        }
        Ok(false)
    }

    fn finish(self) -> Bytes {
        match (self.first, self.rest) {
            (_, Some(rest)) => rest.freeze(),
            (Some(first), None) => first,
            (None, None) => Bytes::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: BodyLimits =
        BodyLimits { max: 1 << 20, deadline: Duration::from_secs(30), min_rate: 256, window: Duration::from_secs(5) };

    /// A body fed by the test, chunk by chunk.
    fn fed() -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            let chunk = rx.recv().await?;
            Some((Ok::<_, std::io::Error>(hyper::body::Frame::data(chunk)), rx))
        });
        (tx, Body::new(http_body_util::StreamBody::new(stream)))
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_is_cut_after_one_window() {
        let (tx, body) = fed();
        tx.send(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",")).await.unwrap();
        let started = Instant::now();
        assert_eq!(read(body, LIMITS).await, Err(BodyError::TooSlow));
        assert_eq!(started.elapsed(), LIMITS.window);
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_above_the_rate_is_cut_at_the_deadline() {
        let (tx, body) = fed();
        tokio::spawn(async move {
            // 300 bytes a second: above the minimum rate, never done.
            for _ in 0..100 {
                if tx.send(Bytes::from(vec![b' '; 300])).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let started = Instant::now();
        assert_eq!(read(body, LIMITS).await, Err(BodyError::TimedOut));
        assert_eq!(started.elapsed(), LIMITS.deadline);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_but_steady_body_is_read_whole() {
        let (tx, body) = fed();
        tokio::spawn(async move {
            for _ in 0..20 {
                tx.send(Bytes::from(vec![b' '; 300])).await.unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        assert_eq!(read(body, LIMITS).await.map(|b| b.len()), Ok(6000));
    }

    #[tokio::test(start_paused = true)]
    async fn too_much_is_refused_and_the_rate_can_be_off() {
        let (tx, body) = fed();
        tx.send(Bytes::from(vec![b' '; 600])).await.unwrap();
        tx.send(Bytes::from(vec![b' '; 600])).await.unwrap();
        assert_eq!(read(body, BodyLimits { max: 1000, ..LIMITS }).await, Err(BodyError::TooLarge));
        let (tx, body) = fed();
        tx.send(Bytes::from_static(b"{")).await.unwrap();
        let started = Instant::now();
        assert_eq!(read(body, BodyLimits { min_rate: 0, ..LIMITS }).await, Err(BodyError::TimedOut));
        assert_eq!(started.elapsed(), LIMITS.deadline);
    }
}
