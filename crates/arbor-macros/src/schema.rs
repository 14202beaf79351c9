//! `#[derive(arbor::JsonSchema)]`: schemars' own derive, reached through the facade.
//!
//! schemars' derive writes relative `schemars::…` paths, so it works only where a crate
//! or an item named `schemars` is in scope; a user of `arbor` alone has neither, and a
//! derive cannot add the `#[schemars(crate = "…")]` attribute to the item it reads. So
//! this derive emits, inside an anonymous `const` block, a copy of the type (same name,
//! fields, generics, docs and `serde`/`schemars`/`validate`/`garde` attributes, nothing
//! else) with `use ::arbor::__private::schemars;` in scope, derives schemars' `JsonSchema`
//! on the copy, and implements `JsonSchema` for the user's type by delegating every method
//! to the copy. It is not a second schema generator: every schema decision is schemars'.
//!
//! Invariant: the user's type gets exactly the schema, name and id schemars would give it
//! (the copy has the same name in the same module); the copy is never constructed.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Data, DeriveInput, Fields, GenericParam, Ident};

/// The attributes schemars' derive reads; every other attribute (other derives' helpers,
/// `repr`, `non_exhaustive`, ...) would be unknown or meaningless on the copy.
const READ_BY_SCHEMARS: [&str; 6] = ["doc", "serde", "schemars", "validate", "garde", "deprecated"];

fn keep(attrs: &mut Vec<Attribute>) {
    attrs.retain(|a| READ_BY_SCHEMARS.iter().any(|name| a.path().is_ident(name)));
}

fn keep_fields(fields: &mut Fields) {
    for field in fields.iter_mut() {
        keep(&mut field.attrs);
    }
}

/// Whether the container says `#[serde(default)]` or `#[schemars(default)]` without a
/// path: schemars then calls `Self::default()`, which the copy answers with the user's
/// `Default`.
fn container_default(attrs: &[Attribute]) -> bool {
    let mut found = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars")) {
        // Attributes this does not understand are schemars' to judge; only `default` matters.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            } else if meta.path.is_ident("default") {
                found = true;
            }
            Ok(())
        });
    }
    found
}

pub(crate) fn expand(input: DeriveInput) -> syn::Result<TokenStream> {
    if let Data::Union(u) = &input.data {
        return Err(syn::Error::new(u.union_token.span, "`JsonSchema` cannot be derived for a union"));
    }
    let ident = &input.ident;
    let mut copy = input.clone();
    copy.vis = syn::Visibility::Inherited;
    keep(&mut copy.attrs);
    match &mut copy.data {
        Data::Struct(s) => keep_fields(&mut s.fields),
        Data::Enum(e) => {
            for variant in &mut e.variants {
                keep(&mut variant.attrs);
                keep_fields(&mut variant.fields);
            }
        }
        Data::Union(_) => unreachable!("refused above"),
    }

    // The alias names the user's type from a block where the copy shadows its name.
    let alias = Ident::new(&format!("__ArborJsonSchemaOf{ident}"), Span::mixed_site());
    let alias_params: Vec<TokenStream> = input
        .generics
        .params
        .iter()
        .map(|p| match p {
            GenericParam::Lifetime(l) => {
                let lifetime = &l.lifetime;
                quote!(#lifetime)
            }
            GenericParam::Type(t) => {
                let ident = &t.ident;
                quote!(#ident)
            }
            GenericParam::Const(c) => {
                let (ident, ty) = (&c.ident, &c.ty);
                quote!(const #ident: #ty)
            }
        })
        .collect();
    let alias_generics = (!alias_params.is_empty()).then(|| quote!(<#(#alias_params),*>));
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut predicates = where_clause.map(|w| w.predicates.clone()).unwrap_or_default();
    predicates.push(syn::parse_quote!(#ident #ty_generics: schemars::JsonSchema));
    let default = container_default(&input.attrs).then(|| {
        quote! {
            impl #impl_generics #ident #ty_generics where #predicates {
                fn default() -> #alias #ty_generics where #alias #ty_generics: ::core::default::Default {
                    <#alias #ty_generics as ::core::default::Default>::default()
                }
            }
        }
    });

    Ok(quote! {
        #[doc(hidden)]
        #[allow(deprecated, dead_code, non_camel_case_types, type_alias_bounds, clippy::all)]
        const _: () = {
            type #alias #alias_generics = #ident #ty_generics;
            const _: () = {
                use ::arbor::__private::schemars;

                #[derive(schemars::JsonSchema)]
                #copy

                #default

                #[automatically_derived]
                impl #impl_generics schemars::JsonSchema for #alias #ty_generics where #predicates {
                    fn inline_schema() -> bool {
                        <#ident #ty_generics as schemars::JsonSchema>::inline_schema()
                    }
                    fn schema_name() -> schemars::_private::alloc::borrow::Cow<'static, str> {
                        <#ident #ty_generics as schemars::JsonSchema>::schema_name()
                    }
                    fn schema_id() -> schemars::_private::alloc::borrow::Cow<'static, str> {
                        <#ident #ty_generics as schemars::JsonSchema>::schema_id()
                    }
                    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                        <#ident #ty_generics as schemars::JsonSchema>::json_schema(generator)
                    }
                    fn _schemars_private_non_optional_json_schema(
                        generator: &mut schemars::SchemaGenerator,
                    ) -> schemars::Schema {
                        <#ident #ty_generics as schemars::JsonSchema>::_schemars_private_non_optional_json_schema(generator)
                    }
                    fn _schemars_private_is_option() -> bool {
                        <#ident #ty_generics as schemars::JsonSchema>::_schemars_private_is_option()
                    }
                }
            };
        };
    })
}
