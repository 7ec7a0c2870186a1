//! One lookup for every level's catalogue: the OS level's steering
//! policies, the node's dispatch policies, the cluster's routers and
//! keep-alive policies.
//!
//! A catalogue is a static list of entries, each with the name `--policy`
//! and every output use and a line saying what it does. A name is looked up
//! once, where it enters (a flag, an experiment's case); an unknown name is
//! refused naming the catalogue's entries and, when one is spelled close to
//! it, suggesting that one ("did you mean `ch-rlu`?"). The same list makes
//! the flag's `--help`.

use std::fmt;

/// An entry of a catalogue.
pub trait Entry: Sync + 'static {
    /// The name `--policy` and every output use.
    fn name(&self) -> &'static str;
    /// What it does, in a line.
    fn about(&self) -> &'static str;
}

/// A level's catalogue of one kind of policy.
#[derive(Debug)]
pub struct Catalogue<E: 'static> {
    /// What an entry is called in messages: `policy`, `node policy`,
    /// `cluster policy`, `keep-alive policy`.
    pub kind: &'static str,
    /// A note that errors add after the list of names (how a name may be
    /// qualified), if any.
    pub note: Option<&'static str>,
    /// The entries, in the order `--help` lists them.
    pub entries: &'static [E],
}

impl<E: Entry> Catalogue<E> {
    /// The entry named `name`.
    pub fn lookup(&self, name: &str) -> Result<&'static E, Unknown> {
        self.entries
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| Unknown {
                kind: self.kind,
                name: name.to_string(),
                suggestion: closest(name, self.names()),
                known: self.names().collect(),
                note: self.note,
            })
    }

    /// A flag's parser of one name of this catalogue (`value_parser =
    /// ROUTERS.parser()`): the name, checked, or why it is not known.
    pub fn parser(&'static self) -> impl Fn(&str) -> Result<String, Unknown> + Clone + Send + Sync {
        move |name| self.lookup(name).map(|e| e.name().to_owned())
    }

    /// The entries of a `--policy` list, in its order, each looked up with
    /// `lookup` (which may parse a qualified name): an unknown name, one
    /// named twice (its runs would be the same, and the summaries, keyed
    /// by name, would keep only one) or an empty list is refused.
    pub fn list<T>(
        &self,
        names: &[String],
        lookup: impl Fn(&str) -> Result<T, Unknown>,
        name_of: impl Fn(&T) -> String,
    ) -> Result<Vec<T>, BadList> {
        let mut out: Vec<T> = Vec::with_capacity(names.len());
        for given in names {
            let t = lookup(given).map_err(BadList::Unknown)?;
            if out.iter().any(|u| name_of(u) == name_of(&t)) {
                return Err(BadList::Repeated {
                    kind: self.kind,
                    name: given.clone(),
                });
            }
            out.push(t);
        }
        if out.is_empty() {
            return Err(BadList::Empty(self.kind));
        }
        Ok(out)
    }

    /// Every entry, in order.
    pub fn iter(&self) -> std::slice::Iter<'static, E> {
        self.entries.iter()
    }

    /// Every entry's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(Entry::name)
    }

    /// A flag's long help: `heading`, then a line per entry with what it
    /// does.
    pub fn help(&self, heading: &str) -> String {
        let mut help = heading.to_string();
        for e in self.entries {
            help.push_str(&format!("\n  {}: {}", e.name(), e.about()));
        }
        help
    }
}

/// `kind` in the plural: `policy` → `policies`, `router` → `routers`.
fn plural(kind: &str) -> String {
    match kind.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{kind}s"),
    }
}

/// A name a catalogue does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// What the catalogue holds.
    pub kind: &'static str,
    /// The name given.
    pub name: String,
    /// The known name spelled closest to it, if one is close.
    pub suggestion: Option<&'static str>,
    /// Every name the catalogue knows.
    pub known: Vec<&'static str>,
    /// How a name may be qualified, if the catalogue says.
    pub note: Option<&'static str>,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} `{}`", self.kind, self.name)?;
        if let Some(s) = self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        write!(
            f,
            "; the {} are {}",
            plural(self.kind),
            self.known.join(", ")
        )?;
        if let Some(note) = self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Unknown {}

/// Why a list of names was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadList {
    /// A name the catalogue does not know.
    #[error(transparent)]
    Unknown(Unknown),
    /// A name given twice.
    #[error("{kind} `{name}` is listed twice")]
    Repeated {
        /// What the catalogue holds.
        kind: &'static str,
        /// The name, as given.
        name: String,
    },
    /// No name at all.
    #[error("no {0} given")]
    Empty(&'static str),
}

/// The name of `known` spelled closest to `name`: within a third of its
/// length in edits (at least one), or a name it starts or ends, so that a
/// typo or a dropped suffix finds its entry and a different word finds none.
fn closest(name: &str, known: impl Iterator<Item = &'static str>) -> Option<&'static str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .map(|k| (edits(name, k), k))
        .filter(|&(d, k)| d <= limit || (!name.is_empty() && (k.starts_with(name))))
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// The Levenshtein distance between `a` and `b`: the fewest insertions,
/// deletions and substitutions of characters that make one the other.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str);

    impl Entry for E {
        fn name(&self) -> &'static str {
            self.0
        }
        fn about(&self) -> &'static str {
            "about"
        }
    }

    static ENTRIES: [E; 4] = [E("ch-rlu"), E("ch-bl"), E("openwhisk"), E("least-loaded")];
    static CATALOGUE: Catalogue<E> = Catalogue {
        kind: "router",
        note: Some("ROUTER:KEEP-ALIVE names a keep-alive"),
        entries: &ENTRIES,
    };

    #[test]
    fn edits_count_insertions_deletions_and_substitutions() {
        assert_eq!(edits("", ""), 0);
        assert_eq!(edits("abc", ""), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("chrlu", "ch-rlu"), 1);
        assert_eq!(edits("ch-rlu", "ch-bl"), 2);
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_closest_known_one() {
        let err = CATALOGUE.lookup("chrlu").unwrap_err();
        assert_eq!(err.suggestion, Some("ch-rlu"));
        assert_eq!(
            err.to_string(),
            "unknown router `chrlu` (did you mean `ch-rlu`?); the routers are ch-rlu, ch-bl, \
             openwhisk, least-loaded (ROUTER:KEEP-ALIVE names a keep-alive)"
        );
        // A prefix finds its entry; a different word finds none.
        assert_eq!(
            CATALOGUE.lookup("least").unwrap_err().suggestion,
            Some("least-loaded")
        );
        assert_eq!(CATALOGUE.lookup("fifo").unwrap_err().suggestion, None);
        assert_eq!(CATALOGUE.lookup("ch-bl").unwrap().0, "ch-bl");
        assert_eq!(plural("node policy"), "node policies");
        assert_eq!(plural("router"), "routers");
    }

    #[test]
    fn a_list_refuses_unknown_repeated_and_no_names() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let list =
            |v: &[&str]| CATALOGUE.list(&names(v), |n| CATALOGUE.lookup(n), |e| e.0.to_string());
        let got: Vec<&str> = list(&["openwhisk", "ch-rlu"])
            .unwrap()
            .iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(got, ["openwhisk", "ch-rlu"]);
        assert_eq!(
            list(&["ch-bl", "ch-bl"]).unwrap_err().to_string(),
            "router `ch-bl` is listed twice"
        );
        assert_eq!(list(&[]).unwrap_err().to_string(), "no router given");
        assert!(matches!(list(&["x"]).unwrap_err(), BadList::Unknown(_)));
    }

    #[test]
    fn help_lists_every_entry_under_its_heading() {
        let help = CATALOGUE.help("Routers:\n");
        assert!(
            help.starts_with("Routers:\n\n  ch-rlu: about\n  ch-bl: about"),
            "{help}"
        );
    }
}
