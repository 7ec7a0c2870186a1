//! What a user module may be before it is compiled. A compile takes time
//! and memory in proportion to a module's functions and code: a module of
//! 100,000 trivial functions, 600 KB of it, costs seconds and hundreds of
//! MiB kept for as long as it is registered, and deep nesting costs the
//! compiler more still. So the module is read once first, its functions
//! and its deepest nesting counted, and one past [`MAX_FUNCTIONS`] or
//! [`MAX_NESTING`] is refused before anything is compiled.

use crate::{Fault, Result};
use wasmparser::{Operator, Parser, Payload};

/// Functions a user module (or one module of a component) may define:
/// room for CPython's, whose interpreter module in a componentize-py
/// component defines 10,625.
pub const MAX_FUNCTIONS: u32 = 16_384;

/// Blocks, loops and ifs a function may nest.
pub const MAX_NESTING: u32 = 1_000;

/// Refuses module `name` (wasm bytes) past the limits, or one the parser
/// cannot read; says nothing of what the compile checks.
pub(crate) fn check(name: &str, wasm: &[u8]) -> Result<()> {
    let malformed = |reason: String| Fault::Malformed {
        name: name.to_owned(),
        reason,
    };
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| malformed(e.to_string()))? {
            Payload::FunctionSection(functions) if functions.count() > MAX_FUNCTIONS => {
                return Err(malformed(format!(
                    "it defines {} functions, more than the {MAX_FUNCTIONS} a module may",
                    functions.count()
                )));
            }
            Payload::CodeSectionEntry(body) => {
                let mut operators = body
                    .get_operators_reader()
                    .map_err(|e| malformed(e.to_string()))?;
                let mut depth: u32 = 0;
                while !operators.eof() {
                    match operators.read().map_err(|e| malformed(e.to_string()))? {
                        Operator::Block { .. }
                        | Operator::Loop { .. }
                        | Operator::If { .. }
                        | Operator::TryTable { .. } => {
                            depth += 1;
                            if depth > MAX_NESTING {
                                return Err(malformed(format!(
                                    "a function nests blocks deeper than the {MAX_NESTING} a \
                                     module may"
                                )));
                            }
                        }
                        Operator::End => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn functions(n: usize) -> Vec<u8> {
        let mut wat = String::from("(module");
        for _ in 0..n {
            wat.push_str(" (func)");
        }
        wat.push(')');
        wat::parse_str(&wat).unwrap()
    }

    fn nested(depth: usize) -> Vec<u8> {
        let wat = format!(
            "(module (func {}{}))",
            "(block ".repeat(depth),
            ")".repeat(depth)
        );
        wat::parse_str(&wat).unwrap()
    }

    #[test]
    fn a_module_is_refused_past_its_functions_or_its_nesting() {
        check("m", &functions(MAX_FUNCTIONS as usize)).unwrap();
        let e = check("m", &functions(MAX_FUNCTIONS as usize + 1)).unwrap_err();
        assert!(e.to_string().contains("defines 16385 functions"), "{e}");
        check("m", &nested(MAX_NESTING as usize)).unwrap();
        let e = check("m", &nested(MAX_NESTING as usize + 1)).unwrap_err();
        assert!(
            e.to_string().contains("nests blocks deeper than the 1000"),
            "{e}"
        );
        let e = check("m", b"\0asm\x01\0\0\0\x99").unwrap_err();
        assert!(matches!(e, Fault::Malformed { .. }), "{e:?}");
    }
}
