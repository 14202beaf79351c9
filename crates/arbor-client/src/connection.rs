//! The connection actor: one per server, supervised, owning the link's life.
//!
//! It opens the link and the session in `pre_start` (so a client exists only once the
//! server answered), hears when the link goes down (a stdio server exiting, a legacy
//! HTTP session expiring), restarts the server on request or by policy, and closes
//! everything in `post_stop`. It is not on the call path: calls write to the link and
//! wait in their own tasks, so a slow server never queues work in this mailbox.
//!
//! ```text
//! client:<server>      supervisor, one_for_one           started by Client::connect
//! └─ connection        actor, temporary                   this module; owns the process/link
//!    ├─ reader         tokio task                         link/stream.rs (stdio, memory)
//!    ├─ stderr         tokio task                         server stderr → tracing
//!    ├─ POST tasks     one tokio task per HTTP request    link/http.rs
//!    └─ handler        HandlerRuntime                     its own task supervisor and worker
//! ```
//!
//! Invariant: events carry the generation of the link they concern, and a stale one (from
//! a link already replaced) is ignored; after `post_stop` no request is left pending.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::ConnectError;
use crate::link::http::HttpLink;
use crate::link::stream::{self, StreamParts};
use crate::link::Link;
use crate::options::RestartPolicy;
use crate::shared::{Failure, Shared};
use crate::target::ServerTarget;

/// What the link side reports.
#[derive(Debug)]
pub(crate) enum Event {
    LinkDown { generation: u64, reason: crate::error::TransportError },
    SessionExpired { generation: u64 },
}

pub(crate) enum ConnMsg {
    Event(Event),
    Restart(RpcReplyPort<Result<(), ConnectError>>),
}

pub(crate) struct ConnArgs {
    pub(crate) shared: Arc<Shared>,
    pub(crate) target: ServerTarget,
    pub(crate) report: Mutex<Option<oneshot::Sender<Result<(), ConnectError>>>>,
}

pub(crate) struct ConnectionActor;

pub(crate) struct ConnState {
    shared: Arc<Shared>,
    target: ServerTarget,
    parts: Option<Parts>,
    restarts: VecDeque<Instant>,
    down: bool,
}

enum Parts {
    Stream(Box<StreamParts>),
    Http(Arc<HttpLink>),
}

impl ConnState {
    async fn close_parts(&mut self) {
        self.shared.set_link(None);
        match self.parts.take() {
            Some(Parts::Stream(p)) => p.close().await,
            Some(Parts::Http(h)) => h.close().await,
            None => {}
        }
    }

    /// Opens a fresh link (a new generation) and the session over it.
    async fn open(&mut self) -> Result<(), ConnectError> {
        let generation = self.shared.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let shared = &self.shared;
        let parts = match &self.target {
            ServerTarget::Stdio(cmd) => Parts::Stream(Box::new(stream::spawn(cmd, shared, generation)?)),
            ServerTarget::Transport { factory, .. } => {
                let transport = factory().await.map_err(|e| {
                    if e.to_string() == crate::target::USED {
                        ConnectError::NotRestartable
                    } else {
                        ConnectError::Transport(crate::error::OpenError::Factory(e))
                    }
                })?;
                Parts::Stream(Box::new(stream::start(transport, shared, generation)))
            }
            ServerTarget::Http(target) => {
                let link = HttpLink::open(target, generation)?;
                if let Some(rt) = &shared.runtime {
                    rt.set_server_origin(Some(link.origin()));
                }
                Parts::Http(link)
            }
        };
        let link = match &parts {
            Parts::Stream(p) => Link::Stream(p.writer.clone()),
            Parts::Http(h) => Link::Http(h.clone()),
        };
        self.parts = Some(parts);
        shared.set_link(Some(link));
        let identity = self.target.identity();
        match crate::era::establish(shared, identity.as_deref()).await {
            Ok(session) => {
                if let Some(rt) = &shared.runtime {
                    rt.set_era(match session.era {
                        arbor_protocol::version::Era::Modern => crate::handler::Era::Modern,
                        arbor_protocol::version::Era::Legacy => crate::handler::Era::Legacy,
                    });
                }
                shared.set_session(Some(session));
                self.down = false;
                Ok(())
            }
            Err(e) => {
                self.close_parts().await;
                self.down = true;
                Err(e)
            }
        }
    }

    fn may_restart(&mut self) -> bool {
        let RestartPolicy::OnExit { max_restarts, within } = self.shared.options.restart else { return false };
        let now = Instant::now();
        while self.restarts.front().is_some_and(|t| now.duration_since(*t) > within) {
            self.restarts.pop_front();
        }
        if self.restarts.len() as u32 >= max_restarts {
            return false;
        }
        self.restarts.push_back(now);
        true
    }
}

impl Actor for ConnectionActor {
    type Msg = ConnMsg;
    type State = ConnState;
    type Arguments = Arc<ConnArgs>;

    async fn pre_start(&self, myself: ActorRef<ConnMsg>, args: Arc<ConnArgs>) -> Result<ConnState, ActorProcessingErr> {
        *args.shared.events.lock() = Some(myself);
        let mut state = ConnState {
            shared: args.shared.clone(),
            target: args.target.clone(),
            parts: None,
            restarts: VecDeque::new(),
            down: true,
        };
        let opened = state.open().await;
        let failed = opened.as_ref().err().map(|e| e.to_string());
        if let Some(report) = args.report.lock().take() {
            let _ = report.send(opened);
        }
        match failed {
            None => Ok(state),
            Some(e) => Err(e.into()),
        }
    }

    async fn handle(
        &self,
        _: ActorRef<ConnMsg>,
        msg: ConnMsg,
        state: &mut ConnState,
    ) -> Result<(), ActorProcessingErr> {
        let current = state.shared.generation.load(std::sync::atomic::Ordering::SeqCst);
        match msg {
            ConnMsg::Event(Event::LinkDown { generation, reason }) if generation == current && !state.down => {
                tracing::warn!(target: "arbor_client", "the server connection went down: {reason}");
                state.close_parts().await;
                state.shared.fail_all(Failure::Transport(reason));
                state.down = true;
                if state.may_restart() {
                    if let Err(e) = state.open().await {
                        tracing::warn!(target: "arbor_client", "restarting the server failed: {e}");
                    }
                }
            }
            ConnMsg::Event(Event::SessionExpired { generation }) if generation == current => {
                // 404 on a legacy session: the client MUST re-initialize.
                if let Some(Parts::Http(h)) = &state.parts {
                    h.forget_session();
                    let identity = state.target.identity();
                    match crate::era::establish(&state.shared, identity.as_deref()).await {
                        Ok(s) => state.shared.set_session(Some(s)),
                        Err(e) => tracing::warn!(target: "arbor_client", "re-initializing failed: {e}"),
                    }
                }
            }
            ConnMsg::Event(_) => {}
            ConnMsg::Restart(reply) => {
                state.close_parts().await;
                state.shared.fail_all(Failure::Disconnected);
                let _ = reply.send(state.open().await);
            }
        }
        Ok(())
    }

    async fn post_stop(&self, _: ActorRef<ConnMsg>, state: &mut ConnState) -> Result<(), ActorProcessingErr> {
        *state.shared.events.lock() = None;
        state.close_parts().await;
        state.shared.fail_all(Failure::Disconnected);
        if let Some(rt) = &state.shared.runtime {
            rt.shutdown().await;
        }
        Ok(())
    }
}

/// How long `Client::close` waits for the actor to stop before it is killed.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(5);
