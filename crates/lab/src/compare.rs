//! Both worlds side by side: what every level's `compare` is made of. A
//! row is one run (its key: a policy, a rate) with a side of numbers per
//! world; a ranking is each world's order of the policies by one metric,
//! and whether the two agree. The sides, the keys and what is ranked are
//! the level's; the shapes, the order and the cells are these.

use serde::Serialize;

/// One run, simulated and live.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row<K, S> {
    /// What names the run: its fields lead the row in compare.json.
    #[serde(flatten)]
    pub key: K,
    /// Simulated.
    pub sim: S,
    /// Measured live.
    pub live: S,
}

/// How each world orders the policies, best (lowest) first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranking<K> {
    /// What was ranked: its fields lead the ranking in compare.json.
    #[serde(flatten)]
    pub key: K,
    /// Simulated.
    pub sim: Vec<String>,
    /// Live.
    pub live: Vec<String>,
    /// Whether the two orders are the same.
    pub same: bool,
    /// Pairs of policies both worlds rank.
    pub pairs: usize,
    /// Of them, the pairs both put in the same order (Kendall's concordant
    /// pairs): how far two orders that differ agree.
    pub pairs_alike: usize,
}

impl<K> Ranking<K> {
    /// The two worlds' orders under `key`.
    pub fn new(key: K, sim: Vec<String>, live: Vec<String>) -> Ranking<K> {
        let at = |name: &String| live.iter().position(|l| l == name);
        let mut pairs = 0;
        let mut pairs_alike = 0;
        for (i, a) in sim.iter().enumerate() {
            for b in &sim[i + 1..] {
                if let (Some(x), Some(y)) = (at(a), at(b)) {
                    pairs += 1;
                    pairs_alike += usize::from(x < y);
                }
            }
        }
        Ranking {
            key,
            same: sim == live,
            pairs,
            pairs_alike,
            sim,
            live,
        }
    }

    /// How far the orders agree, for a table: `same`, or the pairs alike.
    pub fn agreement(&self) -> String {
        if self.same {
            "same".to_string()
        } else {
            format!("{} of {} pairs alike", self.pairs_alike, self.pairs)
        }
    }
}

/// The names by their values, lowest first; ties keep their order, and a
/// name without a value (nothing finished) comes last.
pub fn rank<'a>(values: impl IntoIterator<Item = (&'a str, Option<f64>)>) -> Vec<String> {
    let mut order: Vec<(f64, &str)> = values
        .into_iter()
        .map(|(name, v)| (v.unwrap_or(f64::INFINITY), name))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    order.into_iter().map(|(_, n)| n.to_string()).collect()
}

/// A table cell of both worlds, `sim / live`, each with `digits` decimals
/// or `-`.
pub fn pair(sim: Option<f64>, live: Option<f64>, digits: usize) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"));
    format!("{} / {}", f(sim), f(live))
}

/// `header` and `rows` as lines of columns two spaces apart, each as wide
/// as its widest cell: the first `right_from` columns left-aligned, the
/// rest right-aligned; trailing spaces trimmed. The header's line first.
pub fn aligned(header: &[&str], rows: &[Vec<String>], right_from: usize) -> Vec<String> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| match i < right_from {
                true => format!("{c:<w$}"),
                false => format!("{c:>w$}"),
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    std::iter::once(line(header.to_vec()))
        .chain(
            rows.iter()
                .map(|r| line(r.iter().map(String::as_str).collect())),
        )
        .collect()
}

/// A compare.csv cell: the value as Rust prints it, empty without one.
pub fn cell(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| format!("{v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_lowest_first_ties_in_order_and_the_unmeasured_last() {
        let ranked = rank([
            ("a", Some(2.0)),
            ("b", None),
            ("c", Some(1.0)),
            ("d", Some(2.0)),
        ]);
        assert_eq!(ranked, ["c", "a", "d", "b"]);
    }

    #[test]
    fn a_ranking_counts_the_pairs_both_worlds_order_alike() {
        let names = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let r = Ranking::new((), names("a b c d"), names("b a c d"));
        assert_eq!((r.same, r.pairs, r.pairs_alike), (false, 6, 5));
        assert_eq!(r.agreement(), "5 of 6 pairs alike");
        // Reversed: no pair alike; a name only one world ranks pairs with none.
        let r = Ranking::new((), names("a b c"), names("c b a"));
        assert_eq!((r.pairs, r.pairs_alike), (3, 0));
        let r = Ranking::new((), names("a b x"), names("a b"));
        assert_eq!((r.pairs, r.pairs_alike), (1, 1));
        let r = Ranking::new((), names("a b"), names("a b"));
        assert_eq!(r.agreement(), "same");
    }

    #[test]
    fn a_row_and_a_ranking_lead_with_their_key() {
        #[derive(Serialize)]
        struct Key {
            rate_rps: f64,
            policy: &'static str,
        }
        let row = Row {
            key: Key {
                rate_rps: 10.0,
                policy: "p",
            },
            sim: 1,
            live: 2,
        };
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"rate_rps":10.0,"policy":"p","sim":1,"live":2}"#
        );
        let r = Ranking::new(
            Key {
                rate_rps: 1.0,
                policy: "x",
            },
            vec!["a".into()],
            vec!["a".into()],
        );
        assert!(r.same);
        assert_eq!(pair(Some(1.0), None, 2), "1.00 / -");
        assert_eq!(
            (cell(Some(0.5)), cell(None)),
            ("0.5".to_string(), String::new())
        );
    }

    #[test]
    fn columns_align_left_then_right() {
        let rows = vec![
            vec!["ab".to_string(), "1".into()],
            vec!["a".into(), "123".into()],
        ];
        assert_eq!(
            aligned(&["k", "v"], &rows, 1),
            ["k     v", "ab    1", "a   123"]
        );
        assert_eq!(
            aligned(&["k", "v"], &rows, 9),
            ["k   v", "ab  1", "a   123"]
        );
    }
}
