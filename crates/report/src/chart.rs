//! What every level's charts share: the [`Palette`] that gives each policy
//! one colour and line style across a page's charts, tables and legend, and
//! the panels' sizes, so that charts of any level line up in rows of the
//! page's width.
//!
//! Every element of a policy carries the classes `pol p<i>` (its palette
//! index), which the legend's checkboxes use to hide it
//! ([`page`](crate::page)).

use crate::svg::put;

/// Okabe–Ito's colours (colour-blind safe), yellow swapped for Paul Tol's olive,
/// which reads on white, then four more of Tol's colour-blind-safe "muted" set
/// (wine, indigo, sand, grey); the order gives the first policies the most
/// distinct colours. Policies past these reuse them, lines dotted.
const COLOURS: [&str; 12] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999933",
    "#882255", "#332288", "#DDCC77", "#AAAAAA",
];

/// Size of a chart (width, height), px: three fit in a row of the page's
/// 1280 px.
pub(crate) const PANEL: (f64, f64) = (390.0, 280.0);

/// Size of a wide chart (width, height), px: two fit in a row.
pub(crate) const WIDE_PANEL: (f64, f64) = (600.0, 300.0);

/// Margins (left, right, top, bottom) around a chart's plot area, px: room
/// for the value axis's labels and title on the left, the time or rate axis's
/// below.
pub(crate) const MARGIN: (f64, f64, f64, f64) = (66.0, 16.0, 28.0, 40.0);

/// Least distance between labelled ticks on a vertical axis, px: a line of
/// label text.
pub(crate) const Y_TICK_GAP: f64 = 22.0;

/// The policies of a page in order of first appearance, each with a fixed
/// colour and line style: sim-only policies dashed, dotted once the colours
/// repeat.
#[derive(Clone, Debug, Default)]
pub(crate) struct Palette {
    /// (name, sim only), distinct names.
    policies: Vec<(String, bool)>,
}

impl Palette {
    /// A palette of `names` (duplicates after the first ignored), none
    /// sim-only: the node and cluster levels, which have no such policies.
    pub(crate) fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Palette {
        let mut palette = Palette::default();
        for name in names {
            palette.add(name, false);
        }
        palette
    }

    /// Adds `policy` if it is not there yet.
    pub(crate) fn add(&mut self, policy: &str, sim_only: bool) {
        if !self.policies.iter().any(|(n, _)| n == policy) {
            self.policies.push((policy.to_string(), sim_only));
        }
    }

    /// Every policy, in palette order: (index, name, sim only).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &str, bool)> {
        self.policies
            .iter()
            .enumerate()
            .map(|(i, (n, s))| (i, n.as_str(), *s))
    }

    /// How many policies.
    pub(crate) fn len(&self) -> usize {
        self.policies.len()
    }

    /// Whether any policy is sim-only.
    pub(crate) fn any_sim_only(&self) -> bool {
        self.policies.iter().any(|&(_, s)| s)
    }

    /// The palette index of `policy` (0 if unknown: a programmer error, drawn
    /// in the first colour rather than failing the report).
    pub(crate) fn index(&self, policy: &str) -> usize {
        self.policies
            .iter()
            .position(|(n, _)| n == policy)
            .unwrap_or(0)
    }

    /// The colour of `policy`.
    pub(crate) fn colour(&self, policy: &str) -> &'static str {
        COLOURS[self.index(policy) % COLOURS.len()]
    }

    /// The line dash of `policy`, if it has one: dashed when sim-only,
    /// dotted once colours repeat, both if both.
    fn dash(&self, policy: &str) -> Option<&'static str> {
        let i = self.index(policy);
        let sim_only = self.policies.get(i).is_some_and(|&(_, s)| s);
        match (sim_only, i >= COLOURS.len()) {
            (false, false) => None,
            (true, false) => Some("7 4"),
            (false, true) => Some("2 3"),
            (true, true) => Some("9 3 2 3"),
        }
    }

    /// The attributes of a line of `policy`: class, stroke and dash.
    pub(crate) fn line_attrs(&self, policy: &str) -> String {
        let mut a = format!(
            "class=\"line pol p{}\" stroke=\"{}\"",
            self.index(policy),
            self.colour(policy)
        );
        if let Some(d) = self.dash(policy) {
            put!(&mut a, " stroke-dasharray=\"{d}\"");
        }
        a
    }

    /// The attributes of a bar or marker of `policy`: class and fill.
    pub(crate) fn fill_attrs(&self, policy: &str) -> String {
        format!(
            "class=\"pol p{}\" fill=\"{}\"",
            self.index(policy),
            self.colour(policy)
        )
    }

    /// A small line sample in `policy`'s colour and dash, for the legend and
    /// the tables.
    pub(crate) fn swatch(&self, policy: &str) -> String {
        let dash = self
            .dash(policy)
            .map(|d| format!(" stroke-dasharray=\"{d}\""))
            .unwrap_or_default();
        format!(
            "<svg class=\"sw\" width=\"22\" height=\"10\" viewBox=\"0 0 22 10\" aria-hidden=\"true\">\
             <line x1=\"0\" y1=\"5\" x2=\"22\" y2=\"5\" stroke=\"{}\" stroke-width=\"3\"{dash}/></svg>",
            self.colour(policy)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_follow_the_policy_and_mark_sim_only_and_repeated_colours() {
        let mut p = Palette::of(["cfs", "fifo", "cfs"]);
        p.add("srpt", true);
        p.add("fifo", true);
        assert_eq!(p.len(), 3);
        assert_eq!((p.index("fifo"), p.index("srpt")), (1, 2));
        assert!(p.any_sim_only());
        assert_eq!(
            p.line_attrs("cfs"),
            "class=\"line pol p0\" stroke=\"#0072B2\""
        );
        assert!(p.line_attrs("srpt").ends_with("stroke-dasharray=\"7 4\""));
        assert_eq!(p.fill_attrs("fifo"), "class=\"pol p1\" fill=\"#D55E00\"");
        let names: Vec<String> = (0..13).map(|i| format!("p{i}")).collect();
        let many = Palette::of(names.iter().map(String::as_str));
        assert_eq!(many.colour("p12"), many.colour("p0"));
        assert!(many.line_attrs("p12").ends_with("stroke-dasharray=\"2 3\""));
        assert!(!Palette::of(["a"]).any_sim_only());
    }
}
