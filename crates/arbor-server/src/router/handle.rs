//! The router's shared state and [`RouterHandle`], its client API for changes at run time.
//!
//! Each list (tools, prompts, resources, templates) is an immutable [`Registry`] behind an
//! `ArcSwap`. A request loads the current one without locking; a change copies it, edits
//! the copy and swaps it in, under a writer mutex that is never held across an `.await`.
//! Each change is announced as a [`ListKind`] on a [`ListChangeSender`], which the runtime
//! reads through [`ServerHandler::list_changes`](crate::ServerHandler::list_changes) to
//! send `notifications/*/list_changed` where the client's revision has them.
//!
//! This module does not talk to clients. Invariant: a change is visible to every request
//! that starts after the change's `ListKind` was sent.

use super::error::{RouteKind, RouterError};
use super::prompt::PromptRoute;
use super::registry::Registry;
use super::resource::{ResourceRoute, TemplateRoute};
use super::tool::ToolRoute;
use crate::handler::{ListChangeSender, ListChanges, ListKind};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

/// Bits of `Shared::served`: which capabilities the router has had something to serve.
pub(crate) const TOOLS: u8 = 1;
pub(crate) const PROMPTS: u8 = 2;
pub(crate) const RESOURCES: u8 = 4;
pub(crate) const COMPLETIONS: u8 = 8;
/// A tool that may run as a task (the tasks extension) has been registered.
pub(crate) const TASKS: u8 = 16;
/// A skill source has been registered (the skills extension).
pub(crate) const SKILLS: u8 = 32;

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) tools: ArcSwap<Registry<ToolRoute>>,
    pub(crate) prompts: ArcSwap<Registry<PromptRoute>>,
    pub(crate) resources: ArcSwap<Registry<ResourceRoute>>,
    pub(crate) templates: ArcSwap<Registry<TemplateRoute>>,
    /// Serialises copy-on-write updates so that two concurrent changes cannot lose one.
    write: Mutex<()>,
    changes: ListChangeSender,
    /// Set once a [`RouterHandle`] exists: the lists may change while serving.
    pub(crate) dynamic: AtomicBool,
    /// Capabilities that have been served at some point. Sticky, so that a capability
    /// advertised to a client does not turn into -32601 when its last entry is removed.
    served: AtomicU8,
    /// The skill sources (`crate::skills`), shared with every fork: forks serve the
    /// same skill files, and a watched source's rescans update the original router's
    /// listed `SKILL.md` resources only.
    pub(crate) skills: Arc<crate::skills::Skills>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            tools: Default::default(),
            prompts: Default::default(),
            resources: Default::default(),
            templates: Default::default(),
            write: Mutex::new(()),
            changes: ListChangeSender::default(),
            dynamic: AtomicBool::new(false),
            served: AtomicU8::new(0),
            skills: Arc::default(),
        }
    }
}

impl Shared {
    /// A copy with the same lists, served marks and dynamism, but its own writer lock and
    /// change announcements: editing either leaves the other as it was. The lists are
    /// immutable behind their `ArcSwap`s, so the copy shares them until one side edits.
    pub(crate) fn fork(&self) -> Shared {
        let _writer = self.write.lock();
        Shared {
            tools: ArcSwap::new(self.tools.load_full()),
            prompts: ArcSwap::new(self.prompts.load_full()),
            resources: ArcSwap::new(self.resources.load_full()),
            templates: ArcSwap::new(self.templates.load_full()),
            write: Mutex::new(()),
            changes: ListChangeSender::default(),
            dynamic: AtomicBool::new(self.dynamic.load(Ordering::Acquire)),
            served: AtomicU8::new(self.served.load(Ordering::Acquire)),
            skills: self.skills.clone(),
        }
    }

    /// Removes the tool `name`; whether there was one (announced like any change).
    pub(crate) fn remove_tool(&self, name: &str) -> bool {
        self.update(&self.tools, ListKind::Tools, |r| r.remove(name))
    }

    /// Removes the resource at `uri`; whether there was one (announced like any change).
    pub(crate) fn remove_resource(&self, uri: &str) -> bool {
        self.update(&self.resources, ListKind::Resources, |r| r.remove(uri))
    }

    pub(crate) fn serves(&self, bit: u8) -> bool {
        self.served.load(Ordering::Acquire) & bit != 0
    }

    pub(crate) fn mark_served(&self, bits: u8) {
        self.served.fetch_or(bits, Ordering::AcqRel);
    }

    pub(crate) fn subscribe(&self) -> ListChanges {
        self.changes.subscribe()
    }

    /// Applies `edit` to a copy of `list`, publishes the copy, and announces `kind` when
    /// `edit` says something changed.
    fn update<T>(
        &self,
        list: &ArcSwap<Registry<T>>,
        kind: ListKind,
        edit: impl FnOnce(&mut Registry<T>) -> bool,
    ) -> bool {
        let changed = {
            // A panic while editing a copy leaves the published list intact, so the
            // next writer finds nothing broken behind the lock.
            let _writer = self.write.lock();
            let mut next = Registry::clone(&list.load());
            let changed = edit(&mut next);
            if changed {
                list.store(Arc::new(next));
            }
            changed
        };
        if changed {
            self.changes.send(kind);
        }
        changed
    }

    /// Registers `route` under `key` in `list` unless something is registered there
    /// already, checked and inserted under the writer lock so that two racing
    /// registrations of one key cannot both succeed. Nothing changes (and nothing is
    /// announced or marked served) on a duplicate; on success the capability `bits` are
    /// marked before the new list is published, so no request that sees the entry finds
    /// its capability unserved.
    fn add<T>(
        &self,
        list: &ArcSwap<Registry<T>>,
        kind: ListKind,
        bits: u8,
        (key, route): (String, T),
        replace: bool,
    ) -> Result<bool, String> {
        let mut outcome = Ok(false);
        self.update(list, kind, |r| {
            if !replace && r.contains(&key) {
                outcome = Err(key);
                return false;
            }
            self.mark_served(bits);
            outcome = Ok(r.insert(key, route));
            true
        });
        outcome
    }

    /// Registers a tool; returns whether one of that name was replaced, or, when
    /// `replace` is false, refuses a duplicate with the [`RouterError`] naming it.
    pub(crate) fn add_tool(&self, route: ToolRoute, replace: bool) -> Result<bool, RouterError> {
        let bits = TOOLS | if route.task_policy.allows_tasks() { TASKS } else { 0 };
        let name = route.tool.name.clone();
        // A refused duplicate marks nothing: it must not advertise tasks it brought.
        self.add(&self.tools, ListKind::Tools, bits, (name, route), replace).map_err(duplicate(RouteKind::Tool))
    }

    pub(crate) fn add_prompt(&self, route: PromptRoute, replace: bool) -> Result<bool, RouterError> {
        let bits = PROMPTS | if route.completers.is_empty() { 0 } else { COMPLETIONS };
        let name = route.prompt.name.clone();
        self.add(&self.prompts, ListKind::Prompts, bits, (name, route), replace).map_err(duplicate(RouteKind::Prompt))
    }

    pub(crate) fn add_resource(&self, route: ResourceRoute, replace: bool) -> Result<bool, RouterError> {
        let uri = route.resource.uri.clone();
        self.add(&self.resources, ListKind::Resources, RESOURCES, (uri, route), replace)
            .map_err(duplicate(RouteKind::Resource))
    }

    pub(crate) fn add_template(&self, route: TemplateRoute, replace: bool) -> Result<bool, RouterError> {
        let bits = RESOURCES | if route.completers.is_empty() { 0 } else { COMPLETIONS };
        let key = route.template.uri_template.clone();
        self.add(&self.templates, ListKind::Resources, bits, (key, route), replace)
            .map_err(duplicate(RouteKind::Template))
    }
}

fn duplicate(kind: RouteKind) -> impl FnOnce(String) -> RouterError {
    move |name| RouterError::Duplicate { kind, name }
}

/// A cloneable handle for changing a [`Router`](super::Router)'s lists while it serves.
///
/// Every change is announced to connected clients (`notifications/tools/list_changed` and
/// its siblings, where the client's revision has them). Taking a handle makes the router
/// *dynamic*: it then advertises `listChanged: true`. Take it before the router starts
/// serving, so the capabilities say so from the first connection on.
///
/// Nothing here panics: the `add_*` methods replace an entry of the same name, the
/// `try_add_*` methods refuse it with a [`RouterError`], and routes built with their `try_`
/// constructors ([`ToolRoute::try_new`], [`TemplateRoute::try_new`]) report a bad schema or
/// template as an error too.
///
/// ```
/// # use arbor_server::router::{Router, ToolRoute, NoArgs};
/// async fn ping(_: NoArgs) -> &'static str { "pong" }
///
/// let router = Router::new("demo", "1.0.0");
/// let handle = router.handle();
/// // Later, while serving:
/// handle.add_tool(ToolRoute::new("ping", ping).description("Answers pong"));
/// // Or, refusing a duplicate instead of replacing it:
/// let again = ToolRoute::try_new("ping", ping).expect("an object schema");
/// assert!(handle.try_add_tool(again).is_err());
/// assert!(handle.remove_tool("ping"));
/// ```
#[derive(Clone, Debug)]
pub struct RouterHandle {
    pub(crate) shared: Arc<Shared>,
}

impl RouterHandle {
    /// Adds a tool, or replaces the tool of the same name in place. Returns whether one
    /// was replaced.
    pub fn add_tool(&self, route: ToolRoute) -> bool {
        // Replacing cannot be refused: the only error `add_tool` has is a duplicate.
        matches!(self.shared.add_tool(route, true), Ok(true))
    }

    /// Adds a tool unless the tool of the same name is registered already, which is
    /// refused with [`RouterError::Duplicate`] and changes nothing. Build the route with its
    /// `try_` constructor too, and nothing registered at run time can panic.
    pub fn try_add_tool(&self, route: ToolRoute) -> Result<(), RouterError> {
        self.shared.add_tool(route, false).map(|_| ())
    }

    /// Removes the tool called `name`; returns whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.shared.remove_tool(name)
    }

    /// Adds a prompt, or replaces the prompt of the same name in place.
    pub fn add_prompt(&self, route: PromptRoute) -> bool {
        // Replacing cannot be refused: the only error `add_prompt` has is a duplicate.
        matches!(self.shared.add_prompt(route, true), Ok(true))
    }

    /// Adds a prompt unless the prompt of the same name is registered already, which is
    /// refused with [`RouterError::Duplicate`] and changes nothing. Build the route with its
    /// `try_` constructor too, and nothing registered at run time can panic.
    pub fn try_add_prompt(&self, route: PromptRoute) -> Result<(), RouterError> {
        self.shared.add_prompt(route, false).map(|_| ())
    }

    /// Removes the prompt called `name`; returns whether there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.shared.update(&self.shared.prompts, ListKind::Prompts, |r| r.remove(name))
    }

    /// Adds a static resource, or replaces the one with the same URI in place.
    pub fn add_resource(&self, route: ResourceRoute) -> bool {
        // Replacing cannot be refused: the only error `add_resource` has is a duplicate.
        matches!(self.shared.add_resource(route, true), Ok(true))
    }

    /// Adds a resource unless the one with the same URI is registered already, which is
    /// refused with [`RouterError::Duplicate`] and changes nothing. Build the route with its
    /// `try_` constructor too, and nothing registered at run time can panic.
    pub fn try_add_resource(&self, route: ResourceRoute) -> Result<(), RouterError> {
        self.shared.add_resource(route, false).map(|_| ())
    }

    /// Removes the static resource at `uri`; returns whether there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.shared.update(&self.shared.resources, ListKind::Resources, |r| r.remove(uri))
    }

    /// Adds a resource template, or replaces the one with the same URI template in place.
    pub fn add_template(&self, route: TemplateRoute) -> bool {
        // Replacing cannot be refused: the only error `add_template` has is a duplicate.
        matches!(self.shared.add_template(route, true), Ok(true))
    }

    /// Adds a resource template unless the one with the same URI template is registered already, which is
    /// refused with [`RouterError::Duplicate`] and changes nothing. Build the route with its
    /// `try_` constructor too, and nothing registered at run time can panic.
    pub fn try_add_template(&self, route: TemplateRoute) -> Result<(), RouterError> {
        self.shared.add_template(route, false).map(|_| ())
    }

    /// Removes the resource template `uri_template`; returns whether there was one.
    pub fn remove_template(&self, uri_template: &str) -> bool {
        self.shared.update(&self.shared.templates, ListKind::Resources, |r| r.remove(uri_template))
    }

    /// The names of the registered tools, in list order.
    pub fn tool_names(&self) -> Vec<String> {
        self.shared.tools.load().iter().map(|t| t.tool.name.clone()).collect()
    }
}
