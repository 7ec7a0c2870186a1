//! The error of a policy parameter out of its range, shared by every policy's
//! parameter table.

use std::fmt::Display;

/// A parameter out of its range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("parameter `{table}.{name}` is {value}, but must be {expected}")]
pub struct BadParam {
    /// The TOML table the parameter belongs to (`alps`, `hybrid`).
    pub table: &'static str,
    /// The parameter, as TOML names it.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What it must be.
    pub expected: &'static str,
}

impl BadParam {
    /// `Ok` if `ok`, else the error for `table.name` holding `value`.
    pub fn require(
        ok: bool,
        table: &'static str,
        name: &'static str,
        value: impl Display,
        expected: &'static str,
    ) -> Result<(), BadParam> {
        if ok {
            return Ok(());
        }
        Err(BadParam {
            table,
            name,
            value: value.to_string(),
            expected,
        })
    }
}
