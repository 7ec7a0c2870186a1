//! Serde for values whose form in a file is the text a user types on the
//! command line: a deadline spec (`sift=1.13ms,*=10x`), an estimate
//! (`noisy=0.2`), a preemption test (`paper`). Options hold the parsed
//! value, so a plan file and a flag go through the one `FromStr`, and a
//! plan printed with `--plan` reads back as it was given.
//!
//! Use as `#[serde(with = "crate::text")]`, or `crate::text::option` for an
//! `Option`.

use serde::de::{Deserialize, Deserializer, Error};
use serde::ser::Serializer;
use std::fmt::Display;
use std::str::FromStr;

/// Writes `value` as its text.
pub fn serialize<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// Reads a value from its text; a bad one is an error naming why.
pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
where
    T: FromStr,
    T::Err: Display,
    D: Deserializer<'de>,
{
    let text = String::deserialize(d)?;
    text.parse().map_err(D::Error::custom)
}

/// The same for an optional value, `null` when absent.
pub mod option {
    use super::*;

    /// Writes `value` as its text, or `null`.
    pub fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    /// Reads a value from its text, or `null`.
    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Option::<String>::deserialize(d)?
            .map(|text| text.parse().map_err(D::Error::custom))
            .transpose()
    }
}

/// A flag's parser of one of `names`, each read as its serde form: for the
/// enums of crates that do not depend on clap, which `--help` then lists
/// (`[possible values: cpu, wall]`) and clap refuses others of, as it does
/// a `ValueEnum`'s.
pub fn choice<T>(names: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    use serde::de::value::{Error as ValueError, StringDeserializer};
    PossibleValuesParser::new(names)
        .try_map(|name| T::deserialize(StringDeserializer::<ValueError>::new(name)))
}
