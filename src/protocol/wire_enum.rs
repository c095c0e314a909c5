//! `wire_enum!`: a closed set of wire spellings declared once.
//!
//! Each variant is written next to its exact wire spelling; the macro derives everything
//! else from that one table: `ALL` (declaration order), `NAMES`, `as_str`, `parse`,
//! `Display`, `FromStr`, and serde `Serialize`/`Deserialize` as that string (an unknown
//! spelling is serde's usual `unknown variant` error listing the allowed ones). No
//! `#[serde(rename)]` repeats the spelling, and no hand-written `match` can drift from it.

/// Declares a wire enum; see the module documentation.
///
/// ```ignore
/// wire_enum! {
///     /// Doc comment.
///     pub enum Horizon {
///         Ambient = "ambient",
///         Workspace = "workspace",
///     }
/// }
/// ```
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident = $wire:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $(
                $(#[$variant_meta])*
                $variant,
            )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; { [$($wire),+].len() }] = [$($name::$variant),+];
            /// Every wire spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// The variant spelled `text` on the wire.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::protocol::UnknownVariant;

            fn from_str(text: &str) -> Result<$name, Self::Err> {
                $name::parse(text).ok_or_else(|| $crate::protocol::UnknownVariant {
                    found: text.to_owned(),
                    expected: $name::NAMES,
                })
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                struct Spelling;

                impl ::serde::de::Visitor<'_> for Spelling {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, "one of {:?}", $name::NAMES)
                    }

                    fn visit_str<E: ::serde::de::Error>(self, text: &str) -> Result<$name, E> {
                        $name::parse(text).ok_or_else(|| E::unknown_variant(text, $name::NAMES))
                    }
                }

                deserializer.deserialize_str(Spelling)
            }
        }
    };
}

/// A spelling that names no variant of a wire enum.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{found:?} is not one of {}", expected.join(", "))]
pub struct UnknownVariant {
    pub found: String,
    pub expected: &'static [&'static str],
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    wire_enum! {
        /// A test enum.
        pub enum Colour {
            Red = "red",
            DarkBlue = "dark_blue",
        }
    }

    #[test]
    fn one_table_drives_names_parsing_display_and_serde() {
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        assert_eq!(Colour::NAMES, ["red", "dark_blue"]);
        for colour in Colour::ALL {
            assert_eq!(Colour::parse(colour.as_str()), Some(colour));
            assert_eq!(colour.to_string(), colour.as_str());
            assert_eq!(serde_json::to_value(colour).unwrap(), json!(colour.as_str()));
            assert_eq!(
                serde_json::from_value::<Colour>(json!(colour.as_str())).unwrap(),
                colour
            );
        }
        let error = serde_json::from_value::<Colour>(json!("green"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("unknown variant `green`") && error.contains("dark_blue"),
            "{error}"
        );
        assert!(serde_json::from_value::<Colour>(json!(1)).is_err());
        assert_eq!(
            "Red".parse::<Colour>().unwrap_err().to_string(),
            r#""Red" is not one of red, dark_blue"#
        );
    }
}
