//! What every level's terminal table shares: columns as wide as their
//! widest cell, the first two left-aligned and the others right-aligned.

/// Each column's width over `rows`: its widest cell, in characters.
pub(crate) fn widths<'a, const N: usize>(
    rows: impl IntoIterator<Item = &'a [String; N]>,
) -> [usize; N] {
    let mut widths = [0; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}

/// One row padded to `widths` with two spaces between columns, the first two
/// left-aligned and the others right-aligned, without trailing spaces.
pub(crate) fn aligned<const N: usize>(cells: &[String; N], widths: &[usize; N]) -> String {
    let mut text: String = cells
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(col, (cell, &w))| match col {
            0 => format!("{cell:<w$}"),
            1 => format!("  {cell:<w$}"),
            _ => format!("  {cell:>w$}"),
        })
        .collect();
    text.truncate(text.trim_end().len());
    text
}

/// `rows` (the header first) as aligned lines, each ending in a newline.
pub(crate) fn render<const N: usize>(rows: &[[String; N]]) -> String {
    let widths = widths(rows);
    rows.iter()
        .map(|cells| aligned(cells, &widths) + "\n")
        .collect()
}
