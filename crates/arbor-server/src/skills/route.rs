//! How a [`Router`] takes skill sources: the builder methods, and the resource routes
//! that make each `SKILL.md` a listed resource and announce every skill file through the
//! template `skill://{+path}` (`resources/templates/list`, subscriptions).
//!
//! The routes hold the router's [`Skills`] and read the current snapshot on every call,
//! so a rescan needs to replace only the listed `SKILL.md` routes (their name,
//! description and size may change). A `resources/read` of a `skill://` URI that no
//! static resource has goes to the snapshot directly (the router's `read_resource`), so
//! a URI the template would not match is still refused as the extension says. This module does not scan or serve the extension's
//! own methods (the router's `ServerHandler` impl calls `serve`). Invariant: a source is
//! registered whole or not at all, and the template is registered once per router.

use std::sync::Arc;

use serde::Deserialize;

use super::catalog::SkillInfo;
use super::{scan, watch, SkillError, SkillSet, SkillSource, Skills};
use crate::context::RequestContext;
use crate::router::handle::{Shared, SKILLS};
use crate::router::{ResourceRoute, Router, RouterError, TemplateRoute};

/// The template every skill file is read through.
pub(crate) const TEMPLATE: &str = "skill://{+path}";

#[derive(Deserialize)]
struct PathArgs {
    path: String,
}

/// The listed route of one skill's `SKILL.md`.
pub(crate) fn skill_md_route(skills: &Arc<Skills>, info: &SkillInfo) -> ResourceRoute {
    let (skills, uri) = (skills.clone(), info.listed.uri.clone());
    let listed = &info.listed;
    let mut route = ResourceRoute::new(listed.uri.clone(), listed.name.clone(), move |cx: RequestContext| {
        let (skills, uri) = (skills.clone(), uri.clone());
        async move { skills.read(&uri, cx.connection().protocol_version) }
    });
    if let Some(description) = &listed.description {
        route = route.description(description.clone());
    }
    if let Some(mime) = &listed.mime_type {
        route = route.mime_type(mime.clone());
    }
    if let Some(size) = listed.size {
        route = route.size(size);
    }
    route
}

fn template_route(skills: &Arc<Skills>) -> Result<TemplateRoute, RouterError> {
    let skills = skills.clone();
    let route = TemplateRoute::try_new(TEMPLATE, "skill-file", move |args: PathArgs, cx: RequestContext| {
        let skills = skills.clone();
        async move {
            let uri = format!("{}{}", super::catalog::PREFIX, args.path);
            skills.read(&uri, cx.connection().protocol_version)
        }
    })?;
    Ok(route.description("A file of a skill (the skills extension): skill://<skill-path>/<file-path>"))
}

/// Registers `source` on the router whose lists are `shared`.
pub(crate) fn register(shared: &Arc<Shared>, source: SkillSource) -> Result<(), RouterError> {
    let catalog = scan::scan(&source.path, &source.shape, &source.limits)?;
    let watching = source.watch;
    let set = Arc::new(SkillSet {
        source,
        catalog: arc_swap::ArcSwap::from_pointee(catalog),
        watcher: parking_lot::Mutex::new(None),
    });
    let first = !shared.skills.any();
    shared.skills.add(set.clone())?;
    let catalog = set.catalog.load_full();
    for info in &catalog.skills {
        shared.add_resource(skill_md_route(&shared.skills, info), false)?;
    }
    if first {
        shared.add_template(template_route(&shared.skills)?, false)?;
    }
    shared.mark_served(SKILLS);
    if watching {
        let watcher = watch::start(&set, Arc::downgrade(shared))?;
        *set.watcher.lock() = Some(watcher);
    }
    Ok(())
}

impl Router {
    /// Serves every skill below the folder `path` ([`SkillSource::dir`]).
    ///
    /// # Panics
    ///
    /// If the folder is refused (see [`Router::try_skills`]).
    pub fn skills_dir(self, path: impl Into<std::path::PathBuf>) -> Self {
        self.skills(SkillSource::dir(path))
    }

    /// [`Router::skills_dir`], returning the error instead of panicking.
    pub fn try_skills_dir(self, path: impl Into<std::path::PathBuf>) -> Result<Self, RouterError> {
        self.try_skills(SkillSource::dir(path))
    }

    /// Serves the one skill in the folder `path` ([`SkillSource::skill`]).
    ///
    /// # Panics
    ///
    /// If the folder is refused (see [`Router::try_skills`]).
    pub fn skill(self, path: impl Into<std::path::PathBuf>) -> Self {
        self.skills(SkillSource::skill(path))
    }

    /// [`Router::skill`], returning the error instead of panicking.
    pub fn try_skill(self, path: impl Into<std::path::PathBuf>) -> Result<Self, RouterError> {
        self.try_skills(SkillSource::skill(path))
    }

    /// Serves the skills of `source` as the skills extension says (see [`crate::skills`]).
    ///
    /// # Panics
    ///
    /// If the source is refused (see [`Router::try_skills`]).
    pub fn skills(self, source: SkillSource) -> Self {
        self.try_skills(source).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::skills`], returning [`RouterError::Skills`] instead of panicking: a
    /// malformed `SKILL.md`, a file over a bound, a name or symlink that cannot be
    /// served, a skill path served twice (each naming the file or folder), or a
    /// `SKILL.md` URI already registered as a resource.
    pub fn try_skills(mut self, source: SkillSource) -> Result<Self, RouterError> {
        let watching = source.watch;
        if watching {
            // Updates reach only subscribers, and the listed SKILL.md files may change.
            self = self.subscriptions();
            let _ = self.handle();
        }
        register(&self.shared, source)?;
        Ok(self)
    }
}

impl From<SkillError> for RouterError {
    fn from(e: SkillError) -> Self {
        RouterError::Skills(e.into())
    }
}
