//! The serde plumbing every model type shares: a struct macro and a tagged-enum macro.
//!
//! Both macros write `Serialize`/`Deserialize` by hand instead of deriving them with
//! `#[serde(flatten)]` and `#[serde(tag = ...)]`, because those two attributes buffer
//! every member into serde's private `Content` tree first, which made typed decoding
//! slower than decoding into `serde_json::Value`. Here a struct reads its members
//! straight from the input, and a tagged enum reads the tag when it comes first (the
//! usual case) and only buffers when it does not.
//!
//! This module is not public API: it generates ordinary structs and enums whose
//! fields are public. Invariant: every struct keeps the members it does not know in
//! `extra`, and writes them back after its known members, so decode→encode never
//! loses a key.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A map key that borrows from the input when it can, so known keys cost no allocation.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Declares a model struct with known members, an `extra` map for unknown ones, and
/// hand-written serde impls. Each member has a kind (see `wire_field_ty!`): `req`
/// members must be present; `opt`, `val` and `nul` members are `Option`s, left out
/// of the output when `None`. An optional `tag` names a discriminator member (such
/// as `"type": "text"`) that is always written and, when read, must carry that value.
macro_rules! wire_struct {
    (
        $(#[$attr:meta])*
        pub struct $name:ident $(tag $tagkey:literal = $tagval:literal)? {
            $(
                $(#[$fattr:meta])*
                $kind:ident $field:ident : $ty:ty = $key:literal
            ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            $(
                $(#[$fattr])*
                pub $field: wire_field_ty!($kind $ty),
            )*
            /// Members this crate does not know, kept so that they survive a round trip.
            pub extra: serde_json::Map<String, serde_json::Value>,
        }

        impl $name {
            /// Reads the members left in a map that a caller may already have started.
            #[allow(unused_mut, clippy::redundant_field_names)]
            pub(crate) fn read_rest<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
                $( let mut $field: wire_ty!($kind $ty) = None; )*
                let mut extra = serde_json::Map::new();
                while let Some(key) = map.next_key::<$crate::model::wire::Key<'de>>()? {
                    match &*key.0 {
                        $( $key => $field = wire_read!($kind map $ty), )*
                        $( $tagkey => {
                            let tag: $crate::model::wire::Key<'de> = map.next_value()?;
                            if &*tag.0 != $tagval {
                                return Err(<A::Error as serde::de::Error>::invalid_value(
                                    serde::de::Unexpected::Str(&tag.0),
                                    &$tagval,
                                ));
                            }
                        } )?
                        _ => {
                            let value: serde_json::Value = map.next_value()?;
                            extra.insert(key.0.into_owned(), value);
                        }
                    }
                }
                Ok($name { $( $field: wire_build!($kind $field $key A), )* extra })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                $( map.serialize_entry($tagkey, $tagval)?; )?
                $( wire_ser!($kind map $key self.$field); )*
                for (k, v) in &self.extra {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$name, A::Error> {
                        $name::read_rest(map)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// The type of a member's slot while a struct is being read: `None` until seen.
macro_rules! wire_ty {
    (req $ty:ty) => { Option<$ty> };
    (opt $ty:ty) => { Option<$ty> };
    (val $ty:ty) => { Option<$ty> };
    (nul $ty:ty) => { Option<Option<$ty>> };
}

/// The Rust type of a `wire_struct!` field, by kind:
/// - `req T`: `T`, required;
/// - `opt T`: `Option<T>`; an explicit `null` reads as absent, as serde's derive
///   reads `Option`;
/// - `val T`: `Option<T>` for a free JSON value; an explicit `null` is kept as `Some(Null)`;
/// - `nul T`: `Option<Option<T>>` for a nullable member; absent is `None`, `null` is `Some(None)`.
macro_rules! wire_field_ty {
    (req $ty:ty) => { $ty };
    (opt $ty:ty) => { Option<$ty> };
    (val $ty:ty) => { Option<$ty> };
    (nul $ty:ty) => { Option<Option<$ty>> };
}

/// Reads one member's value into its slot.
macro_rules! wire_read {
    (req $map:ident $ty:ty) => {
        Some($map.next_value::<$ty>()?)
    };
    (opt $map:ident $ty:ty) => {
        $map.next_value::<Option<$ty>>()?
    };
    (val $map:ident $ty:ty) => {
        Some($map.next_value::<$ty>()?)
    };
    (nul $map:ident $ty:ty) => {
        Some($map.next_value::<Option<$ty>>()?)
    };
}

/// Turns a member's slot into its field value, failing on a missing `req` member.
macro_rules! wire_build {
    (req $field:ident $key:literal $A:ident) => {
        match $field {
            Some(v) => v,
            None => return Err(<$A::Error as serde::de::Error>::missing_field($key)),
        }
    };
    ($kind:ident $field:ident $key:literal $A:ident) => {
        $field
    };
}

/// Writes one member, leaving out `opt` members that are `None`.
macro_rules! wire_ser {
    (req $map:ident $key:literal $value:expr) => {
        $map.serialize_entry($key, &$value)?;
    };
    ($kind:ident $map:ident $key:literal $value:expr) => {
        if let Some(v) = &$value {
            $map.serialize_entry($key, v)?;
        }
    };
}

/// Declares an enum of `wire_struct!` types told apart by a tag member (for content
/// blocks, `"type"`). Decoding streams when the tag is the first member and buffers
/// the object into a `serde_json::Map` only when it is not.
macro_rules! wire_tagged_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident tag $tagkey:literal {
            $(
                $(#[$vattr:meta])*
                $variant:ident($inner:ty) = $tagval:literal
            ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        // Messages are decoded once and moved rarely; boxing the big variants would add
        // an allocation to every decode of the common ones.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $( $(#[$vattr])* $variant($inner), )*
        }

        impl $name {
            /// Every tag value this enum knows.
            pub const TAGS: &'static [&'static str] = &[$($tagval),*];

            /// The tag value this variant is written with.
            pub fn tag(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => $tagval, )*
                }
            }

            /// Reads the enum from a map no member of which has been read yet.
            pub(crate) fn read_map<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
                use serde::de::Error as _;
                let first = map.next_key::<$crate::model::wire::Key<'de>>()?;
                if let Some(key) = &first {
                    if &*key.0 == $tagkey {
                        let tag: $crate::model::wire::Key<'de> = map.next_value()?;
                        return match &*tag.0 {
                            $( $tagval => <$inner>::read_rest(map).map($name::$variant), )*
                            other => Err(A::Error::unknown_variant(other, Self::TAGS)),
                        };
                    }
                }
                // The tag is not first: buffer the object, then read it from the buffer.
                let mut buf = serde_json::Map::new();
                if let Some(key) = first {
                    let value: serde_json::Value = map.next_value()?;
                    buf.insert(key.0.into_owned(), value);
                }
                while let Some(key) = map.next_key::<$crate::model::wire::Key<'de>>()? {
                    let value: serde_json::Value = map.next_value()?;
                    buf.insert(key.0.into_owned(), value);
                }
                let tag = match buf.get($tagkey) {
                    Some(serde_json::Value::String(tag)) => tag.clone(),
                    _ => return Err(A::Error::missing_field($tagkey)),
                };
                let value = serde_json::Value::Object(buf);
                match tag.as_str() {
                    $( $tagval => <$inner as serde::Deserialize>::deserialize(value)
                        .map($name::$variant)
                        .map_err(A::Error::custom), )*
                    other => Err(A::Error::unknown_variant(other, Self::TAGS)),
                }
            }
        }

        $(
            impl From<$inner> for $name {
                fn from(v: $inner) -> Self {
                    $name::$variant(v)
                }
            }
        )*

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( $name::$variant(v) => v.serialize(s), )*
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$name, A::Error> {
                        $name::read_map(map)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// Decodes a JSON object by first buffering it into a `serde_json::Map`, for the few
/// unions whose variants are told apart by which members are present rather than by
/// a tag. `pick` looks at the buffered object and decodes it.
pub(crate) fn from_buffered<'de, D, T>(
    d: D,
    pick: impl FnOnce(serde_json::Map<String, serde_json::Value>) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    pick(map).map_err(de::Error::custom)
}
