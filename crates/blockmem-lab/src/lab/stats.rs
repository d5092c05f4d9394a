//! Summary statistics of timing samples: min, median, max, quartiles, and a spread
//! measure the runner uses to warn about noisy cells.

/// Summary of one cell's samples (nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest sample.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// Quantile `q` in `[0, 1]` of sorted data, linearly interpolated.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let i = pos.floor() as usize;
            let f = pos - i as f64;
            if i + 1 < n {
                sorted[i] * (1.0 - f) + sorted[i + 1] * f
            } else {
                sorted[n - 1]
            }
        }
    }
}

impl Summary {
    /// Summarises `samples` (any order). NaN fields when empty.
    pub fn of(samples: &[f64]) -> Summary {
        let mut s: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        Summary {
            n,
            min: s.first().copied().unwrap_or(f64::NAN),
            q1: quantile_sorted(&s, 0.25),
            median: quantile_sorted(&s, 0.5),
            q3: quantile_sorted(&s, 0.75),
            max: s.last().copied().unwrap_or(f64::NAN),
            mean: if n == 0 {
                f64::NAN
            } else {
                s.iter().sum::<f64>() / n as f64
            },
        }
    }

    /// Interquartile range relative to the median: the lab's noise measure. Robust to a
    /// few outliers (an interrupt, a preemption) that would inflate max/min.
    pub fn relative_iqr(&self) -> f64 {
        if self.median > 0.0 {
            (self.q3 - self.q1) / self.median
        } else {
            0.0
        }
    }

    /// Bandwidth in GB/s (10^9 bytes/s) for `bytes` moved in the median time.
    pub fn gbps(&self, bytes: usize) -> f64 {
        if self.median > 0.0 {
            bytes as f64 / self.median
        } else {
            f64::INFINITY
        }
    }
}

/// Relative difference `|a - b| / min(a, b)` (0 when both are 0).
pub fn rel_diff(a: f64, b: f64) -> f64 {
    let lo = a.min(b);
    if lo <= 0.0 {
        if a == b {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (a - b).abs() / lo
    }
}

/// Median of `v`, as [`Summary::of`] computes it (sorts `v`). NaN when empty.
pub fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile_sorted(v, 0.5)
}

/// Resamples a bootstrap interval takes ([`median_ratio_ci`]).
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// A percentile-bootstrap confidence interval at `level` (0.95 for 95%) for
/// `median(base) / median(x)`, the lab's speed-up of `x` over `base`, from two
/// independent samples: both are resampled with replacement `resamples` times and the
/// interval is the central `level` of the resampled ratios. Deterministic for a
/// `seed`. `None` when either sample has fewer than 3 values or a median is not
/// positive.
///
/// Why: a grid's worst cell is the minimum of ~100 noisy ratios, so it sits below the
/// truth by construction; a cell whose interval still reaches the target is not
/// shown to miss it, and one whose interval lies wholly below it is.
pub fn median_ratio_ci(
    base: &[f64],
    x: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if base.len() < 3 || x.len() < 3 || resamples == 0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut b, mut y) = (vec![0.0; base.len()], vec![0.0; x.len()]);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for v in b.iter_mut() {
            *v = base[rng.usize(..base.len())];
        }
        for v in y.iter_mut() {
            *v = x[rng.usize(..x.len())];
        }
        let (mb, my) = (median_of(&mut b), median_of(&mut y));
        if !(mb > 0.0 && my > 0.0) {
            return None;
        }
        ratios.push(mb / my);
    }
    Some(central(ratios, level))
}

/// The central `level` of bootstrap replicates `v`: the percentile interval.
fn central(mut v: Vec<f64>, level: f64) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let tail = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    (quantile_sorted(&v, tail), quantile_sorted(&v, 1.0 - tail))
}

/// The pairs `base[i] / x[i]` of two sample lists taken side by side (sample `i` of
/// each in the same repetition), skipping pairs where either time is not positive
/// and finite. `None` when the lists differ in length (they were not taken in pairs).
pub fn pair_ratios(base: &[f64], x: &[f64]) -> Option<Vec<f64>> {
    (base.len() == x.len()).then(|| {
        base.iter()
            .zip(x)
            .filter(|(b, y)| b.is_finite() && y.is_finite() && **b > 0.0 && **y > 0.0)
            .map(|(b, y)| b / y)
            .collect()
    })
}

/// The paired speed-up of `x` over `base`: the median over repetitions of
/// `base[i] / x[i]`, where sample `i` of both was taken in the same repetition (the
/// runner interleaves a cell's methods per repetition, in a random order, on the same
/// freshly prepared buffers).
///
/// Why: a repetition's conditions (what the host's other tenants leave of the shared
/// LLC, page placement, frequency) hit both methods of a pair alike and cancel in their
/// ratio, where they stay in a ratio of two medians: pairing narrows the spread of
/// `libc_again`'s ratios over the policy grid
/// (`docs/results/xeon-avx512-2vcpu/policy-calibrated`).
/// `None` when the lists are not pairs (different lengths) or no pair is usable.
pub fn paired_median_ratio(base: &[f64], x: &[f64]) -> Option<f64> {
    let mut r = pair_ratios(base, x)?;
    (!r.is_empty()).then(|| median_of(&mut r))
}

/// A percentile-bootstrap confidence interval at `level` for
/// [`paired_median_ratio`]: the pairs are resampled with replacement (a repetition is
/// drawn whole), `resamples` times. Deterministic for a `seed`. `None` when there are
/// fewer than 3 usable pairs or the lists are not pairs.
pub fn paired_ratio_ci(
    base: &[f64],
    x: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    let r = pair_ratios(base, x)?;
    if r.len() < 3 || resamples == 0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draw = vec![0.0; r.len()];
    let mut meds = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for v in draw.iter_mut() {
            *v = r[rng.usize(..r.len())];
        }
        meds.push(median_of(&mut draw));
    }
    Some(central(meds, level))
}

/// A percentile-bootstrap confidence interval at `level` for the geometric mean over
/// cells of their paired speed-ups ([`paired_median_ratio`]), from each cell's pair
/// ratios ([`pair_ratios`]): a replicate resamples every cell's pairs with replacement
/// (a repetition is drawn whole), takes each cell's median and their geometric mean.
/// The interval is the measurement noise of the grid's mean, cells held fixed.
/// Deterministic for a `seed`. `None` without cells, or when a cell has fewer than 3
/// pairs.
pub fn paired_geomean_ci(
    cells: &[Vec<f64>],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if cells.is_empty() || resamples == 0 || cells.iter().any(|c| c.len() < 3) {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draw = Vec::new();
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut log_sum = 0.0;
        for c in cells {
            draw.clear();
            draw.extend((0..c.len()).map(|_| c[rng.usize(..c.len())]));
            log_sum += median_of(&mut draw).ln();
        }
        means.push((log_sum / cells.len() as f64).exp());
    }
    Some(central(means, level))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples around `center`, spread ±20% (deterministic).
    fn noisy(center: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n).map(|_| center * (0.8 + 0.4 * rng.f64())).collect()
    }

    #[test]
    fn bootstrap_interval_holds_the_true_ratio_and_narrows_with_samples() {
        // Same distribution: the interval holds 1.
        let (lo, hi) =
            median_ratio_ci(&noisy(100.0, 30, 1), &noisy(100.0, 30, 2), 0.95, 2000, 7).unwrap();
        assert!(lo < 1.0 && 1.0 < hi, "{lo} {hi}");
        // x twice as fast: the interval holds 2 and excludes 1.
        let (lo2, hi2) =
            median_ratio_ci(&noisy(100.0, 30, 3), &noisy(50.0, 30, 4), 0.95, 2000, 7).unwrap();
        assert!(lo2 < 2.0 && 2.0 < hi2 && lo2 > 1.0, "{lo2} {hi2}");
        // Ten times the samples: a narrower interval.
        let (lo3, hi3) =
            median_ratio_ci(&noisy(100.0, 300, 5), &noisy(100.0, 300, 6), 0.95, 2000, 7).unwrap();
        assert!(
            hi3 - lo3 < (hi - lo) / 2.0,
            "{lo3}..{hi3} against {lo}..{hi}"
        );
        // Deterministic for a seed; a wider level gives a wider interval.
        let a = median_ratio_ci(&noisy(100.0, 30, 1), &noisy(90.0, 30, 2), 0.95, 500, 9);
        assert_eq!(
            a,
            median_ratio_ci(&noisy(100.0, 30, 1), &noisy(90.0, 30, 2), 0.95, 500, 9)
        );
        let b = median_ratio_ci(&noisy(100.0, 30, 1), &noisy(90.0, 30, 2), 0.5, 500, 9);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(a.0 <= b.0 && b.1 <= a.1);
    }

    #[test]
    fn bootstrap_interval_refuses_what_it_cannot_judge() {
        assert_eq!(
            median_ratio_ci(&[1.0, 2.0], &[1.0, 2.0, 3.0], 0.95, 100, 1),
            None
        );
        assert_eq!(median_ratio_ci(&[0.0; 5], &[1.0; 5], 0.95, 100, 1), None);
        // Constant samples: a zero-width interval at the exact ratio.
        assert_eq!(
            median_ratio_ci(&[4.0; 5], &[2.0; 5], 0.95, 100, 1),
            Some((2.0, 2.0))
        );
    }

    #[test]
    fn paired_ratios_cancel_what_a_repetition_shares() {
        // Two methods of the same speed, each repetition scaled by a common drift of
        // up to 2x (the host's state at that moment) plus ±2% of their own.
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..31 {
            let drift = 1.0 + rng.f64();
            a.push(100.0 * drift * (0.98 + 0.04 * rng.f64()));
            b.push(100.0 * drift * (0.98 + 0.04 * rng.f64()));
        }
        let paired = paired_median_ratio(&a, &b).unwrap();
        assert!((paired - 1.0).abs() < 0.03, "{paired}");
        let (lo, hi) = paired_ratio_ci(&a, &b, 0.95, 2000, 3).unwrap();
        assert!(
            lo <= paired && paired <= hi && lo > 0.96 && hi < 1.04,
            "{lo} {hi}"
        );
        // The unpaired interval of the same data is several times as wide.
        let (ulo, uhi) = median_ratio_ci(&a, &b, 0.95, 2000, 3).unwrap();
        assert!(uhi - ulo > 3.0 * (hi - lo), "{ulo} {uhi} vs {lo} {hi}");
        // A method twice as fast reads 2x, whatever the drift.
        let half: Vec<f64> = a.iter().map(|t| t / 2.0).collect();
        assert_eq!(paired_median_ratio(&a, &half), Some(2.0));
        assert_eq!(paired_ratio_ci(&a, &half, 0.95, 500, 1), Some((2.0, 2.0)));
    }

    #[test]
    fn paired_ratios_refuse_what_is_not_paired() {
        assert_eq!(paired_median_ratio(&[1.0, 2.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(paired_median_ratio(&[], &[]), None);
        // Unusable pairs are skipped, not counted as zero or infinite.
        assert_eq!(
            paired_median_ratio(&[4.0, 0.0, f64::NAN, 6.0], &[2.0, 1.0, 1.0, 3.0]),
            Some(2.0)
        );
        assert_eq!(paired_median_ratio(&[0.0; 3], &[1.0; 3]), None);
        assert_eq!(
            paired_ratio_ci(&[4.0, 6.0], &[2.0, 3.0], 0.95, 100, 1),
            None
        );
        assert_eq!(paired_ratio_ci(&[4.0; 5], &[2.0; 4], 0.95, 100, 1), None);
        assert_eq!(paired_ratio_ci(&[4.0; 5], &[2.0; 5], 0.95, 0, 1), None);
    }

    #[test]
    fn geomean_interval_holds_the_mean_and_needs_pairs() {
        // Two cells: one 2x with ±10% noise, one 0.5x with ±10%: geomean near 1.
        let mut rng = fastrand::Rng::with_seed(3);
        let mut noisy =
            |r: f64| -> Vec<f64> { (0..25).map(|_| r * (0.9 + 0.2 * rng.f64())).collect() };
        let cells = vec![noisy(2.0), noisy(0.5)];
        let (lo, hi) = paired_geomean_ci(&cells, 0.95, 1000, 1).unwrap();
        assert!(lo < 1.0 && 1.0 < hi && hi - lo < 0.15, "{lo} {hi}");
        // Exact ratios: a zero-width interval at the geometric mean.
        let (lo, hi) = paired_geomean_ci(&[vec![4.0; 5], vec![1.0; 3]], 0.95, 100, 1).unwrap();
        assert!((lo - 2.0).abs() < 1e-12 && (hi - 2.0).abs() < 1e-12);
        assert_eq!(
            paired_geomean_ci(&[vec![1.0; 5], vec![1.0; 2]], 0.95, 100, 1),
            None
        );
        assert_eq!(paired_geomean_ci(&[], 0.95, 100, 1), None);
    }

    #[test]
    fn odd_and_even_medians() {
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Summary::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }

    #[test]
    fn min_max_mean_quartiles() {
        let s = Summary::of(&[5.0, 1.0, 9.0, 3.0, 7.0]);
        assert_eq!((s.min, s.max, s.mean, s.n), (1.0, 9.0, 5.0, 5));
        assert_eq!((s.q1, s.q3), (3.0, 7.0));
        assert!((s.relative_iqr() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn empty_and_nan_are_handled() {
        let s = Summary::of(&[]);
        assert!(s.median.is_nan() && s.n == 0);
        let s = Summary::of(&[f64::NAN, 2.0]);
        assert_eq!((s.n, s.median), (1, 2.0));
    }

    #[test]
    fn outlier_does_not_move_the_median_or_iqr_much() {
        let mut v = vec![100.0; 20];
        v.push(1e6);
        let s = Summary::of(&v);
        assert_eq!(s.median, 100.0);
        assert_eq!(s.relative_iqr(), 0.0);
        assert_eq!(s.max, 1e6);
    }

    #[test]
    fn bandwidth_and_rel_diff() {
        let s = Summary::of(&[1000.0]);
        assert_eq!(s.gbps(4000), 4.0);
        assert_eq!(rel_diff(100.0, 110.0), 0.1);
        assert_eq!(rel_diff(0.0, 0.0), 0.0);
    }
}
