//! `#[arbor::tool]`: a plain async function becomes a tool with its metadata beside it.
//!
//! The function stays as written (callable, testable); next to it the expansion adds a
//! braced struct of the same name, which lives in the type namespace only, so it never
//! clashes with the function, and whose `route()` builds the `ToolRoute` the router
//! registers. This module only reads the signature and the attribute; schemas, validation
//! and calling are the router's, reached through `::arbor::__private`.
//!
//! Invariant: every misuse is a `syn::Error` at the span of the offending token, never a
//! panic, and the expansion names nothing but `::arbor::__private::…` and the user's own
//! items.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, FnArg, Ident, ItemFn, Lit, LitBool, LitStr, Type};

/// The keys `#[arbor::tool(...)]` accepts, for the unknown-key error.
const KEYS: &str =
    "`name`, `title`, `description`, `structured`, `read_only`, `destructive`, `idempotent`, `open_world`, `scopes`";

/// What the attribute says.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    structured: Option<LitBool>,
    read_only: Option<LitBool>,
    destructive: Option<LitBool>,
    idempotent: Option<LitBool>,
    open_world: Option<LitBool>,
    scopes: Option<Vec<LitStr>>,
}

impl Options {
    fn parse(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
        match key.as_str() {
            "name" => set(&meta, &mut self.name, string(&meta)?),
            "title" => set(&meta, &mut self.title, string(&meta)?),
            "description" => set(&meta, &mut self.description, string(&meta)?),
            "structured" => set(&meta, &mut self.structured, flag(&meta)?),
            "read_only" => set(&meta, &mut self.read_only, flag(&meta)?),
            "destructive" => set(&meta, &mut self.destructive, flag(&meta)?),
            "idempotent" => set(&meta, &mut self.idempotent, flag(&meta)?),
            "open_world" => set(&meta, &mut self.open_world, flag(&meta)?),
            "scopes" => set(&meta, &mut self.scopes, scopes(&meta)?),
            _ => Err(meta.error(format_args!("unknown `#[arbor::tool]` key; the keys are {KEYS}"))),
        }
    }
}

fn set<T>(meta: &ParseNestedMeta<'_>, slot: &mut Option<T>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error("this key is given twice"));
    }
    *slot = Some(value);
    Ok(())
}

fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    let value: LitStr = meta.value()?.parse()?;
    if value.value().trim().is_empty() {
        return Err(syn::Error::new(value.span(), "this must not be empty"));
    }
    Ok(value)
}

/// `read_only` alone means `true`; `read_only = false` says so explicitly.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<LitBool> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse()
    } else {
        Ok(LitBool::new(true, meta.path.span()))
    }
}

/// `scopes = ["files:read", "files:write"]`: OAuth scope tokens (RFC 6749 §3.3).
fn scopes(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let array: ExprArray = meta.value()?.parse()?;
    let mut scopes = Vec::with_capacity(array.elems.len());
    for elem in &array.elems {
        let Expr::Lit(syn::ExprLit { lit: Lit::Str(scope), .. }) = elem else {
            return Err(syn::Error::new_spanned(elem, "a scope is a string literal"));
        };
        let text = scope.value();
        let valid = !text.is_empty()
            && text.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid {
            return Err(syn::Error::new(
                scope.span(),
                "a scope is a non-empty OAuth scope token: printable ASCII without spaces, `\"` or `\\`",
            ));
        }
        if scopes.iter().any(|s: &LitStr| s.value() == text) {
            return Err(syn::Error::new(scope.span(), "this scope is listed twice"));
        }
        scopes.push(scope.clone());
    }
    Ok(scopes)
}

/// The spec's SHOULD for tool names, made a MUST here: clients may drop other names.
fn is_conventional_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// The doc comment's text: the lines joined, their common indentation removed, blank lines
/// at either end dropped. `None` when there is no doc comment or only whitespace.
fn doc_text(attrs: &[syn::Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                // `split`, not `lines`: a bare `///` is an empty string, a blank line kept.
                lines.extend(s.value().split('\n').map(|l| l.trim_end().to_owned()));
            }
        }
    }
    let indent = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min()?;
    let lines: Vec<&str> = lines.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    let text = lines.join("\n");
    let text = text.trim_matches('\n');
    (!text.trim().is_empty()).then(|| text.to_owned())
}

/// The two inputs a tool takes.
enum Param {
    Args(Box<Type>),
    Context,
}

fn is_request_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "RequestContext" && matches!(s.arguments, syn::PathArguments::None)),
        _ => false,
    }
}

fn params(function: &ItemFn) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    let (mut args, mut context) = (None::<Span>, None::<Span>);
    for input in &function.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new_spanned(
                    receiver,
                    "an `#[arbor::tool]` is a free async fn, not a method; for a tool that holds state, implement `arbor::server::router::Tool`",
                ))
            }
            FnArg::Typed(typed) => typed,
        };
        if is_request_context(&typed.ty) {
            if context.is_some() {
                return Err(syn::Error::new_spanned(typed, "a tool takes the `RequestContext` once"));
            }
            context = Some(typed.span());
            params.push(Param::Context);
        } else {
            if args.is_some() {
                return Err(syn::Error::new_spanned(
                    typed,
                    "a tool takes one argument struct (deriving `Deserialize` and `JsonSchema`) and, optionally, a `RequestContext`; put every argument in that struct",
                ));
            }
            args = Some(typed.span());
            params.push(Param::Args(typed.ty.clone()));
        }
    }
    Ok(params)
}

/// Checks what a tool function cannot be.
fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(sig.fn_token, "an `#[arbor::tool]` must be an `async fn`"));
    }
    if let Some(unsafety) = sig.unsafety {
        return Err(syn::Error::new_spanned(unsafety, "an `#[arbor::tool]` cannot be `unsafe`"));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(abi, "an `#[arbor::tool]` cannot have an ABI"));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(variadic, "an `#[arbor::tool]` cannot be variadic"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "an `#[arbor::tool]` cannot be generic: its schema comes from one concrete argument type",
        ));
    }
    Ok(())
}

/// The whole expansion, or the first error in it.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    syn::parse::Parser::parse2(parser, attr)?;
    let function: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`#[arbor::tool]` goes on an `async fn` (a free function, not a method or another item)",
        )
    })?;
    check_signature(&function)?;
    let params = params(&function)?;
    let ident = &function.sig.ident;

    let name = match &options.name {
        Some(name) => name.clone(),
        None => LitStr::new(&ident.unraw().to_string(), ident.span()),
    };
    if !is_conventional_name(&name.value()) {
        return Err(syn::Error::new(
            name.span(),
            "a tool name is 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.'; give one with `#[arbor::tool(name = \"...\")]`",
        ));
    }
    let description = match (&options.description, doc_text(&function.attrs)) {
        (Some(description), _) => description.clone(),
        (None, Some(doc)) => LitStr::new(&doc, ident.span()),
        (None, None) => {
            return Err(syn::Error::new(
                ident.span(),
                "a tool needs a description for the model: write a doc comment (`/// What it does.`) or `#[arbor::tool(description = \"...\")]`",
            ))
        }
    };

    // The closure always takes both inputs, so the router's `HandlerFn` has one impl to
    // pick; mixed-site names cannot capture or shadow anything of the user's.
    let uses_args = params.iter().any(|p| matches!(p, Param::Args(_)));
    let uses_cx = params.iter().any(|p| matches!(p, Param::Context));
    let args = Ident::new(if uses_args { "args" } else { "_args" }, Span::mixed_site());
    let cx = Ident::new(if uses_cx { "cx" } else { "_cx" }, Span::mixed_site());
    let arg_ty = params
        .iter()
        .find_map(|p| match p {
            Param::Args(ty) => Some(ty.to_token_stream()),
            Param::Context => None,
        })
        .unwrap_or_else(|| quote!(::arbor::__private::NoArgs));
    let call_args = params.iter().map(|p| match p {
        Param::Args(_) => &args,
        Param::Context => &cx,
    });
    let structured = options.structured.as_ref().is_some_and(LitBool::value);
    let output_span = match &function.sig.output {
        syn::ReturnType::Default => ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };
    let constructor = if structured { format_ident!("try_with_output") } else { format_ident!("try_new") };
    // Spanned at the return type, so a result the router cannot send points there.
    let route = quote_spanned! {output_span=>
        ::arbor::__private::ToolRoute::#constructor(
            #name,
            move |#args: #arg_ty, #cx: ::arbor::__private::RequestContext| #ident(#(#call_args),*),
        )
    };
    let title = options.title.iter().map(|t| quote!(.title(#t)));
    let hints = [
        ("read_only_hint", &options.read_only),
        ("destructive_hint", &options.destructive),
        ("idempotent_hint", &options.idempotent),
        ("open_world_hint", &options.open_world),
    ]
    .into_iter()
    .filter_map(|(method, value)| {
        let method = Ident::new(method, Span::call_site());
        value.as_ref().map(|v| quote!(.#method(#v)))
    });
    let scopes = options
        .scopes
        .as_ref()
        .map(|scopes| quote!(let route = ::arbor::__private::with_scopes(route, &[#(#scopes),*]);));

    let vis = &function.vis;
    let struct_doc = format!(
        "The `#[arbor::tool]` registration of the tool `{}` ([`{ident}`](fn@{ident})): register it with `Router::tool_route({ident}::route())` (or `try_tool_route({ident}::try_route()?)`).",
        name.value()
    );
    Ok(quote! {
        #function

        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #vis struct #ident {}

        impl #ident {
            /// The tool's route: its name, description, schemas, hints and handler.
            ///
            /// # Panics
            ///
            /// With the error `try_route` returns.
            #[must_use]
            #[track_caller]
            pub fn route() -> ::arbor::__private::ToolRoute {
                match Self::try_route() {
                    ::core::result::Result::Ok(route) => route,
                    ::core::result::Result::Err(error) => ::core::panic!("{error}"),
                }
            }

            /// The tool's route, or why it cannot be one: the argument (or, for
            /// `structured`, the output) type's schema is not an object schema.
            pub fn try_route() -> ::core::result::Result<::arbor::__private::ToolRoute, ::arbor::__private::RouterError> {
                let route = #route?.description(#description) #(#title)* #(#hints)*;
                #scopes
                ::core::result::Result::Ok(route)
            }
        }
    })
}

#[cfg(test)]
mod tests;
