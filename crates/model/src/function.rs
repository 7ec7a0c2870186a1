//! Function identities: a dense numeric id for the hot paths (policies key their
//! per-function state by it) and the name, shared, for the outputs.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Dense id of a function within one workload, assigned in order of first sight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FunctionId(pub u32);

/// A function as invocations carry it: its id and its name.
///
/// Cloning is cheap (the name is shared), so every invocation and outcome can
/// carry one without a lookup table travelling alongside.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Function {
    /// Dense id, unique within the workload that interned it.
    pub id: FunctionId,
    /// The function's name as the workload spells it (e.g. `fib-3`).
    pub name: Arc<str>,
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Interns function names into dense ids, in order of first sight.
#[derive(Clone, Debug, Default)]
pub struct Functions {
    all: Vec<Function>,
    by_name: HashMap<Arc<str>, FunctionId>,
}

impl Functions {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The function named `name`, added if it is new.
    pub fn intern(&mut self, name: &str) -> Function {
        if let Some(&id) = self.by_name.get(name) {
            return self.all[id.0 as usize].clone();
        }
        let id = FunctionId(self.all.len() as u32);
        let name: Arc<str> = Arc::from(name);
        self.by_name.insert(name.clone(), id);
        let f = Function { id, name };
        self.all.push(f.clone());
        f
    }

    /// The function named `name`, if the table holds it.
    pub fn find(&self, name: &str) -> Option<&Function> {
        self.by_name.get(name).and_then(|&id| self.get(id))
    }

    /// The function with this id, if the table holds it.
    pub fn get(&self, id: FunctionId) -> Option<&Function> {
        self.all.get(id.0 as usize)
    }

    /// Number of distinct functions.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether no function has been interned.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// All functions in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Function> {
        self.all.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_dense() {
        let mut t = Functions::new();
        let a = t.intern("fib-1");
        let b = t.intern("bfs-2");
        assert_eq!(t.intern("fib-1"), a);
        assert_eq!((a.id, b.id), (FunctionId(0), FunctionId(1)));
        assert_eq!(t.get(FunctionId(1)).map(|f| &*f.name), Some("bfs-2"));
        assert_eq!(t.find("bfs-2"), Some(&b));
        assert_eq!(t.find("bfs-3"), None);
        assert_eq!(t.len(), 2);
    }
}
