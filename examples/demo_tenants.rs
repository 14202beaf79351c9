//! `demo_server --tenants FILE`: the tenant policy and the tool set of each tenant, read
//! from one TOML file, and re-read on SIGHUP.
//!
//! The file is a `TenantPolicy` (`[defaults]`, `[tenants.NAME]`, `max_tenants`: quotas,
//! rates, restart budgets) plus a `[tools]` table of the demo's own: for each tenant named
//! there, the demo's tools it sees (`acme = ["echo", "add"]`). Each such tenant gets its
//! own router, a fork of the demo's with the other tools removed, swapped in with
//! `Server::set_tenant_handler`; a tenant not named in `[tools]` sees every tool. On
//! SIGHUP the file is read again and `[tools]` applied anew (a new router per tenant,
//! requests already running finish on the old one); the policy's limits are fixed when the
//! server starts, so a change to them is logged as needing a restart.
//!
//! It is not the policy's enforcement (the runtime's and `arbor_http`'s) nor how a request
//! picks its tenant (`demo_server.rs`: the `x-arbor-tenant` header without OAuth, the
//! token's `tenant` claim with it).
//!
//! Invariant: a file that does not parse, or names a tool the demo does not have, changes
//! nothing: at start the demo refuses to run, on SIGHUP the tool sets in force stay.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbor_server::tenant::TenantPolicy;
use arbor_server::{Router, Server};
use serde::Deserialize;

/// Each named tenant's tools, by tenant.
pub type ToolSets = BTreeMap<String, Vec<String>>;

/// The header naming a request's tenant when OAuth is off (development only).
pub const TENANT_HEADER: &str = "x-arbor-tenant";

/// The claim naming a request's tenant when OAuth is on.
pub const TENANT_CLAIM: &str = "tenant";

/// The file's `[tools]` table; every other table is the policy's.
#[derive(Deserialize)]
struct ToolsTable {
    #[serde(default)]
    tools: ToolSets,
}

/// The policy and tool sets in `path`, every tool checked against `known`.
pub fn read(path: &Path, known: &[String]) -> Result<(TenantPolicy, ToolSets), String> {
    let policy = TenantPolicy::from_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Read again for `[tools]`: the file is small and read only at start and on SIGHUP.
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let table: ToolsTable = toml::from_str(&text).map_err(|e| format!("{}: [tools]: {e}", path.display()))?;
    for (tenant, tools) in &table.tools {
        if let Some(unknown) = tools.iter().find(|t| !known.contains(t)) {
            return Err(format!(
                "{}: [tools].{tenant} names `{unknown}`, which the demo does not have (it has {})",
                path.display(),
                known.join(", ")
            ));
        }
    }
    Ok((policy, table.tools))
}

/// The demo's tool names, from a throwaway router (asking the served one would make it
/// dynamic, which changes what it advertises).
pub fn tool_names(fork: &dyn Fn() -> Router) -> Vec<String> {
    fork().handle().tool_names()
}

/// Gives each tenant of `sets` its router: a fork of the demo's with only its tools; a
/// tenant of `previous` that `sets` no longer names gets the demo's own handler back. One
/// log line per tool set applied, with the version the server gave it.
pub fn apply_tool_sets(server: &Server, previous: &ToolSets, sets: &ToolSets, fork: &dyn Fn() -> Router) {
    for (tenant, tools) in sets {
        let mut router = fork();
        let all = fork().handle().tool_names();
        for name in all.iter().filter(|name| !tools.contains(name)) {
            router = router.without_tool(name);
        }
        let version = server.set_tenant_handler(tenant, router);
        tracing::info!(tenant, ?tools, version, "demo_server: tool set applied");
    }
    for tenant in previous.keys().filter(|t| !sets.contains_key(*t)) {
        let version = server.clear_tenant_handler(tenant);
        tracing::info!(tenant, version, "demo_server: tool set applied: every tool (the server's own handler)");
    }
}

/// On SIGHUP, reads `path` again and applies its `[tools]` (see the module); `loaded` is
/// the policy the server started with, `sets` the tool sets it applied.
#[cfg(unix)]
pub fn reload_on_sighup(
    server: Server,
    path: PathBuf,
    loaded: TenantPolicy,
    mut sets: ToolSets,
    fork: Box<dyn Fn() -> Router + Send + Sync>,
) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    // Registered now, so a SIGHUP from here on never kills the process.
    let mut hangups = signal(SignalKind::hangup())?;
    let known = tool_names(&*fork);
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!(path = %path.display(), "demo_server: SIGHUP: re-reading the tenant policy");
            match read(&path, &known) {
                Err(why) => {
                    tracing::warn!(%why, "demo_server: the tenant file did not load; the tool sets in force stay")
                }
                Ok((policy, new)) => {
                    if policy != loaded {
                        tracing::warn!(
                            path = %path.display(),
                            "demo_server: the tenant limits changed; they take effect on a restart (only [tools] is re-applied)"
                        );
                    }
                    apply_tool_sets(&server, &sets, &new, &*fork);
                    sets = new;
                }
            }
        }
    });
    Ok(())
}
