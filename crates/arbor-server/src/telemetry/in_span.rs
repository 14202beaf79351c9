//! [`InSpan`]: a request's boxed work polled inside its span, as `tracing::Instrumented`
//! does, without `Instrumented`'s second entry of the span to drop the work: a work that
//! finished is dropped inside its last poll, already in the span, so only a work dropped
//! unfinished (cancelled, timed out, shut down) enters the span again to be dropped.
//! With a subscriber, that second entry and exit cost about 450 instructions per request.
//!
//! Invariant: the work, and everything it drops, runs inside the span: each poll enters
//! it, and the work is dropped either inside a poll or inside the span.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tracing::Span;

/// `work` polled and dropped inside `span`.
pub(crate) struct InSpan<F> {
    span: Span,
    /// `None` once the work finished (and was dropped, inside the span).
    work: Option<Pin<Box<F>>>,
}

impl<F> InSpan<F> {
    pub(crate) fn new(work: Pin<Box<F>>, span: Span) -> InSpan<F> {
        InSpan { span, work: Some(work) }
    }
}

impl<F: Future> Future for InSpan<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Unpin: the work is boxed.
        let this = self.get_mut();
        let _entered = this.span.enter();
        let work = this.work.as_mut().expect("InSpan polled after it finished");
        let output = ready!(work.as_mut().poll(cx));
        this.work = None;
        Poll::Ready(output)
    }
}

impl<F> Drop for InSpan<F> {
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            let _entered = self.span.enter();
            drop(work);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Notes, when dropped, whether a span was entered then.
    struct NotesDrop(Arc<AtomicUsize>);

    impl Drop for NotesDrop {
        fn drop(&mut self) {
            if !Span::current().is_none() {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn the_work_is_polled_and_dropped_inside_its_span_whether_it_finished_or_not() {
        let subscriber = tracing_subscriber::registry();
        tracing::subscriber::with_default(subscriber, || {
            let in_span = Arc::new(AtomicUsize::new(0));
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);

            // Finished: its state is dropped inside its last poll.
            let notes = NotesDrop(in_span.clone());
            let work = Box::pin(async move {
                let _notes = notes;
                assert!(!Span::current().is_none(), "polled outside its span");
                7
            });
            let mut done = InSpan::new(work, tracing::info_span!("request"));
            assert_eq!(Pin::new(&mut done).poll(&mut cx), Poll::Ready(7));
            assert_eq!(in_span.load(Ordering::SeqCst), 1);
            drop(done);

            // Dropped unfinished: entered again to be dropped.
            let notes = NotesDrop(in_span.clone());
            let work = Box::pin(async move {
                let _notes = notes;
                std::future::pending::<()>().await
            });
            let mut pending = InSpan::new(work, tracing::info_span!("request"));
            assert!(Pin::new(&mut pending).poll(&mut cx).is_pending());
            drop(pending);
            assert_eq!(in_span.load(Ordering::SeqCst), 2);
        });
    }
}
