//! Where a server is: a command to spawn (stdio), a Streamable HTTP URL, or a factory of
//! in-memory (or any byte-stream) transports.
//!
//! This module only describes targets and gives each an identity for the era cache; the
//! `link` modules open them. Invariant: a target's identity is the same for every client
//! of the same server (command line with its working directory, or URL), so the era
//! learned by one client is reused by the next.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arbor_transport::Transport;
use futures::future::BoxFuture;
use parking_lot::Mutex;

/// The error a single-use transport target gives when asked for a second transport.
pub(crate) const USED: &str = "this transport was used already";

type TransportFactory = Arc<dyn Fn() -> BoxFuture<'static, std::io::Result<Transport>> + Send + Sync>;

/// A server to connect to.
#[derive(Clone)]
pub enum ServerTarget {
    /// Spawn a process and speak over its stdin/stdout.
    Stdio(StdioCommand),
    /// Streamable HTTP at a URL.
    Http(HttpTarget),
    /// A transport from a factory (called again on `restart`), e.g. one end of
    /// `Transport::memory_pair()` whose other end a server serves.
    Transport {
        /// The identity for the era cache, if any.
        identity: Option<String>,
        /// Makes a fresh transport.
        factory: TransportFactory,
    },
}

impl fmt::Debug for ServerTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerTarget::Stdio(c) => f.debug_tuple("Stdio").field(c).finish(),
            ServerTarget::Http(h) => f.debug_tuple("Http").field(&h.url).finish(),
            ServerTarget::Transport { identity, .. } => {
                f.debug_struct("Transport").field("identity", identity).finish()
            }
        }
    }
}

impl ServerTarget {
    /// A process to spawn.
    pub fn stdio(command: StdioCommand) -> Self {
        ServerTarget::Stdio(command)
    }

    /// A Streamable HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Self {
        ServerTarget::Http(HttpTarget::new(url))
    }

    /// One transport, usable once (a restart fails with `NotRestartable`).
    pub fn transport(transport: Transport) -> Self {
        let slot = Arc::new(Mutex::new(Some(transport)));
        ServerTarget::Transport {
            identity: None,
            factory: Arc::new(move || {
                let taken = slot.lock().take();
                Box::pin(async move { taken.ok_or_else(|| std::io::Error::other("this transport was used already")) })
            }),
        }
    }

    /// Transports made by `factory`, called again on every restart.
    pub fn transport_factory<F, Fut>(identity: Option<String>, factory: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::io::Result<Transport>> + Send + 'static,
    {
        ServerTarget::Transport { identity, factory: Arc::new(move || Box::pin(factory())) }
    }

    /// The key the era cache remembers this server under.
    pub fn identity(&self) -> Option<String> {
        match self {
            ServerTarget::Stdio(c) => Some(c.identity()),
            ServerTarget::Http(h) => Some(format!("http:{}", h.url)),
            ServerTarget::Transport { identity, .. } => identity.clone(),
        }
    }
}

/// A server process: command, arguments, environment, working directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to (or replacing) the inherited environment.
    pub env: BTreeMap<String, String>,
    /// The working directory (default: ours).
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// `program` with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        StdioCommand { program: program.into(), args: Vec::new(), env: BTreeMap::new(), cwd: None }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    fn identity(&self) -> String {
        let mut id = format!("stdio:{}", self.program.display());
        for a in &self.args {
            id.push(' ');
            id.push_str(a);
        }
        if let Some(cwd) = &self.cwd {
            id.push_str(&format!(" @{}", cwd.display()));
        }
        id
    }
}

/// A Streamable HTTP endpoint, the headers sent with every request, and how to
/// authorize when the server asks ([`HttpTarget::oauth`]).
#[derive(Clone, Debug)]
pub struct HttpTarget {
    /// The MCP endpoint URL.
    pub url: String,
    /// Extra headers, sent on every request.
    pub headers: Vec<(String, String)>,
    /// OAuth: with it, a 401 or a 403 `insufficient_scope` is answered by authorizing
    /// (`crate::auth`) and sending the request again.
    pub oauth: Option<Box<crate::auth::OAuth>>,
}

impl HttpTarget {
    /// The endpoint at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTarget { url: url.into(), headers: Vec::new(), oauth: None }
    }

    /// Adds a header sent on every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Authorizes with OAuth when the server asks (a 401, or a 403 `insufficient_scope`).
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(Box::new(oauth));
        self
    }
}
