//! How far one distribution is from another: what `faasched compare` reports
//! to find where the simulator's kernel model disagrees with the real kernel.

/// The two-sample Kolmogorov–Smirnov distance: the largest gap between the
/// empirical CDFs of `a` and `b`, 0 (the same empirical CDF) to 1 (every
/// value of one below every value of the other).
/// Both must be sorted ascending; `None` if either is empty.
pub fn ks_distance(a: &[u64], b: &[u64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        // Step past every sample equal to the smaller value, in both, so
        // ties move the two CDFs together.
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] == x {
            i += 1;
        }
        while j < b.len() && b[j] == x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    Some(d)
}

/// Mean of `v` (`None` if empty).
pub fn mean(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_by_hand() {
        assert_eq!(ks_distance(&[1, 2, 3], &[1, 2, 3]), Some(0.0));
        assert_eq!(ks_distance(&[1, 2], &[3, 4]), Some(1.0));
        // CDFs at 1: 1/2 vs 0; at 2: 1/2 vs 1/2; at 3: 1 vs 1/2: max 1/2.
        assert_eq!(ks_distance(&[1, 3], &[2, 3]), Some(0.5));
        // a = {1,2,3,4}, b = {2}: at 1, 1/4 vs 0; at 2, 1/2 vs 1: 1/2.
        assert_eq!(ks_distance(&[1, 2, 3, 4], &[2]), Some(0.5));
        assert_eq!(ks_distance(&[], &[2]), None);
        assert_eq!(mean(&[1, 2, 3, 6]), Some(3.0));
    }
}
