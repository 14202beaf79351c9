//! Byte-stream links: a spawned server process (stdin/stdout, stderr captured to
//! tracing) or any `arbor_transport::Transport`, read by one reader task.
//!
//! The reader hands every frame to `Shared::inbound`; when the stream ends it fails the
//! pending requests at once (no caller waits for a timeout on a dead process) and tells
//! the connection actor, which decides about restarting. It does not restart anything.
//! Invariant: a reader reports the end of its stream once, tagged with the link's
//! generation, so a report from a replaced link is ignored.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use arbor_transport::{FrameReader, FrameWriter, Inbound, Transport};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::Origin;
use crate::connection::Event;
use crate::error::{ConnectError, OpenError, TransportError};
use crate::shared::{Failure, Shared};
use crate::target::StdioCommand;

/// What the actor owns of an open stream link.
#[derive(Debug)]
pub(crate) struct StreamParts {
    pub(crate) writer: FrameWriter,
    pub(crate) reader: JoinHandle<()>,
    pub(crate) child: Option<Child>,
    pub(crate) stderr: Option<JoinHandle<()>>,
}

impl StreamParts {
    /// Closes stdin (the graceful signal), waits for the process, then kills it.
    pub(crate) async fn close(mut self) {
        self.writer.close().await;
        if let Some(mut child) = self.child.take() {
            match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill().await;
                }
            }
        }
        self.reader.abort();
        if let Some(s) = self.stderr {
            s.abort();
        }
    }
}

/// Spawns the server process and starts reading it.
pub(crate) fn spawn(cmd: &StdioCommand, shared: &Arc<Shared>, generation: u64) -> Result<StreamParts, ConnectError> {
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(&cmd.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    let mut child = command.spawn().map_err(ConnectError::Spawn)?;
    let stdin = child.stdin.take().ok_or_else(|| ConnectError::Transport(OpenError::MissingPipe("stdin")))?;
    let stdout = child.stdout.take().ok_or_else(|| ConnectError::Transport(OpenError::MissingPipe("stdout")))?;
    let stderr = child.stderr.take().map(|err| {
        let server = shared.options.server_id.clone().unwrap_or_else(|| cmd.program.display().to_string());
        tokio::spawn(async move {
            // stderr is free-form logging, never an error signal.
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "arbor_client::stderr", server = %server, "{line}");
            }
        })
    });
    let transport = Transport::new(stdout, stdin);
    let mut parts = start(transport, shared, generation);
    parts.child = Some(child);
    parts.stderr = stderr;
    Ok(parts)
}

/// Starts reading an already connected transport.
pub(crate) fn start(transport: Transport, shared: &Arc<Shared>, generation: u64) -> StreamParts {
    let (reader, writer) = transport.into_parts();
    // Requests are sent by callers the reader just woke: batching them needs no IO poll.
    writer.yield_to_tasks_only();
    let reader = tokio::spawn(read_loop(reader, shared.clone(), generation));
    StreamParts { writer, reader, child: None, stderr: None }
}

async fn read_loop(mut reader: FrameReader, shared: Arc<Shared>, generation: u64) {
    let reason = loop {
        while let Some(inbound) = reader.next_buffered() {
            match inbound {
                Inbound::Frame(bytes) => shared.inbound(bytes, Origin::Stream),
                Inbound::Oversized { limit, .. } => {
                    shared.count_malformed("frame", &format_args!("a frame over {limit} bytes was skipped"))
                }
            }
        }
        match reader.fill().await {
            Ok(true) => {}
            Ok(false) => break TransportError::Closed,
            Err(e) => break TransportError::Read(Arc::new(e.0)),
        }
    };
    if shared.generation.load(std::sync::atomic::Ordering::SeqCst) == generation {
        shared.fail_all(Failure::Transport(reason.clone()));
    }
    shared.event(Event::LinkDown { generation, reason });
}
