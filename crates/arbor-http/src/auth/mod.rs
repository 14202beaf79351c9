//! OAuth 2.1 for the resource server: every request of every era tied to a verified
//! [`Principal`], or refused with the challenge the MCP authorization spec names.
//!
//! Pieces: a [`TokenVerifier`] judges a token (built in: [`JwtVerifier`] for RFC 9068
//! JWTs against the issuer's JWKS, [`IntrospectionVerifier`] for RFC 7662, and
//! [`StaticVerifier`] for tests); the authenticator runs before routing on every POST,
//! GET and DELETE, caches verified tokens by digest, applies the scope policy and builds
//! the `WWW-Authenticate` challenges ([`challenge`]); the protected resource metadata
//! (RFC 9728) is served beside the endpoint. [`AuthConfig`] puts them together.
//!
//! This module is not an authorization server and never forwards a token: handlers get
//! the principal ([`RequestContext::principal`](arbor_server::RequestContext::principal)),
//! never the token. Invariant: no token appears in a log line, span, error or snapshot.

pub(crate) mod authenticator;
pub mod challenge;
mod claims;
mod config;
mod introspection;
mod jwks;
mod jwt;
pub(crate) mod metadata;
mod static_verifier;
mod verify;

pub use arbor_server::{Principal, ScopeHierarchy};
pub use authenticator::Verified;
pub use config::{AuthConfig, TenantSource};
pub use introspection::{IntrospectionAuth, IntrospectionConfig, IntrospectionConfigError, IntrospectionVerifier};
/// The signature algorithms, as [`JwtConfig::algorithms`] names them.
pub use jsonwebtoken::Algorithm;
pub use jwks::JwksStats;
pub use jwt::{JwtConfig, JwtConfigError, JwtVerifier};
pub use static_verifier::StaticVerifier;
pub use verify::{TokenVerifier, VerifyError};
