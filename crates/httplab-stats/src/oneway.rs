//! One-way random effects by the method of moments: values in groups (runs in sessions, slices
//! in rounds, rounds in server starts), each value = group level + its own noise. The spread
//! inside the groups estimates the noise of one value; what the group means spread beyond what
//! that noise explains estimates how much the groups' true levels differ. Used wherever a
//! spread is split into its parts (`crate::sessions`, and the study's noise components).

use serde::{Deserialize, Serialize};

/// The groups' means and the pooled spread inside them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OneWay {
    /// Mean of each group that has a value, in the order given.
    pub means: Vec<f64>,
    /// Values in each of those groups.
    pub sizes: Vec<usize>,
    /// Sum of squares of the values around their group's mean.
    pub within_ss: f64,
    /// Its degrees of freedom: values less groups.
    pub within_df: f64,
}

impl OneWay {
    /// The groups' means and spread; non-finite values are left out, and a group without a
    /// value is no group.
    pub fn of(groups: &[Vec<f64>]) -> OneWay {
        let mut o = OneWay::default();
        for g in groups {
            let v: Vec<f64> = g.iter().copied().filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                continue;
            }
            let m = crate::mean(&v);
            o.within_ss += v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
            o.within_df += (v.len() - 1) as f64;
            o.means.push(m);
            o.sizes.push(v.len());
        }
        o
    }

    /// Variance of one value around its group's level (0 without degrees of freedom).
    pub fn within_var(&self) -> f64 {
        pooled(&[self])
    }

    /// Sample variance of the group means (0 with fewer than two groups).
    pub fn means_var(&self) -> f64 {
        if self.means.len() < 2 {
            return 0.0;
        }
        crate::sample_variance(&self.means, crate::mean(&self.means))
    }

    /// Harmonic mean of the group sizes (for unequal groups, the size whose mean's variance is
    /// the average one); 0 without groups.
    pub fn harmonic_size(&self) -> f64 {
        harmonic(&[self])
    }

    /// Variance of the groups' true levels: the means' variance less the part the values' own
    /// noise gives a mean of `harmonic_size` values, never below 0. `None` with fewer than two
    /// groups.
    pub fn between_var(&self) -> Option<f64> {
        (self.means.len() >= 2)
            .then(|| (self.means_var() - self.within_var() / self.harmonic_size()).max(0.0))
    }

    /// p value of "the groups' true levels are equal" (the one-way F test), when there are two
    /// groups or more and noise inside them.
    pub fn p_levels_equal(&self) -> Option<f64> {
        use statrs::distribution::{ContinuousCDF, FisherSnedecor};
        let k = self.means.len();
        let w = self.within_var();
        if k < 2 || self.within_df < 1.0 || w <= 0.0 {
            return None;
        }
        let n: usize = self.sizes.iter().sum();
        let grand = self
            .means
            .iter()
            .zip(&self.sizes)
            .map(|(m, &s)| m * s as f64)
            .sum::<f64>()
            / n as f64;
        let between_ss: f64 = self
            .means
            .iter()
            .zip(&self.sizes)
            .map(|(m, &s)| s as f64 * (m - grand) * (m - grand))
            .sum();
        let f = (between_ss / (k - 1) as f64) / w;
        let dist = FisherSnedecor::new((k - 1) as f64, self.within_df).ok()?;
        Some(dist.sf(f))
    }
}

/// The spread inside the groups of several one-way layouts, pooled (each layout may have its
/// own grand mean): Σ within_ss / Σ within_df, 0 without degrees of freedom.
pub fn pooled(parts: &[&OneWay]) -> f64 {
    let ss: f64 = parts.iter().map(|o| o.within_ss).sum();
    let df: f64 = parts.iter().map(|o| o.within_df).sum();
    if df > 0.0 {
        ss / df
    } else {
        0.0
    }
}

/// Harmonic mean of every group size of several layouts; 0 without groups.
pub fn harmonic(parts: &[&OneWay]) -> f64 {
    let sizes: Vec<f64> = parts
        .iter()
        .flat_map(|o| o.sizes.iter().map(|&n| n as f64))
        .collect();
    if sizes.is_empty() {
        return 0.0;
    }
    sizes.len() as f64 / sizes.iter().map(|n| 1.0 / n).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_noise_are_told_apart() {
        // Three groups at levels 0, 1, 2, each with noise ±0.1 around its level.
        let g = vec![
            vec![-0.1, 0.1],
            vec![0.9, 1.1],
            vec![1.9, 2.1, f64::NAN],
            vec![],
        ];
        let o = OneWay::of(&g);
        assert_eq!(o.sizes, vec![2, 2, 2]);
        assert!((o.within_var() - 0.02).abs() < 1e-12);
        assert!((o.means_var() - 1.0).abs() < 1e-12);
        assert!((o.harmonic_size() - 2.0).abs() < 1e-12);
        assert!((o.between_var().unwrap_or(0.0) - 0.99).abs() < 1e-12);
        // F = 2 / 0.02 = 100 on (2, 3) degrees of freedom: p ≈ 0.0018.
        assert!(o.p_levels_equal().unwrap_or(1.0) < 0.01);
    }

    #[test]
    fn equal_levels_give_no_between_part_and_a_large_p() {
        let o = OneWay::of(&[vec![0.0, 1.0], vec![1.0, 0.0]]);
        assert_eq!(o.between_var(), Some(0.0));
        // scipy.stats.f_oneway([0, 1], [1, 0]) -> F = 0, p = 1.0
        assert!((o.p_levels_equal().unwrap_or(0.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn f_test_matches_a_reference() {
        // F = (27/7) / (7/5) = 2.7551 on (1, 5) degrees of freedom, the square of a t of 1.6599
        // on 5: p = 0.15784 (scipy.stats.f_oneway([1, 2, 3], [2, 3, 4, 5]) gives the same).
        let o = OneWay::of(&[vec![1.0, 2.0, 3.0], vec![2.0, 3.0, 4.0, 5.0]]);
        assert!((o.p_levels_equal().unwrap_or(0.0) - 0.157_84).abs() < 1e-4);
    }

    #[test]
    fn one_group_has_no_between_part() {
        let o = OneWay::of(&[vec![1.0, 2.0]]);
        assert_eq!(o.between_var(), None);
        assert_eq!(o.p_levels_equal(), None);
        assert!((o.within_var() - 0.5).abs() < 1e-12);
    }
}
