//! The decision rule's arithmetic: the interval a comparison is decided on (one look, or two
//! stages combined by the inverse-normal method), and the power of that same rule, from which
//! the detectable effect and the rounds to settle are computed.
//!
//! Every claim is read off one interval per comparison, at the level of the decision: each tail
//! of the interval misses the true ratio with probability at most `a` (a = α / 2m for a family
//! of m comparisons, Bonferroni), so all m intervals hold together with probability ≥ 1 − α.
//!
//! Each stage is summarised by Yuen's trimmed t of its paired log differences (`trim.rs`): the
//! trimmed mean d̄ₜ, its standard error s_w / ((1 − 2k/n)·√n) and n − 2k − 1 degrees of
//! freedom (k rounds trimmed from each end; with k = 0 the plain t). Welch's t for unpaired
//! comparisons. Below, "t test" and "t interval" mean that statistic.
//!
//! **One look** (n rounds): the t interval d̄ₜ ± t₁₋ₐ,ᵥ · se, ν its degrees of freedom.
//!
//! **Two stages** (n₁ first rounds, then n₂ new rounds; the rounds of stage 2 are only the new
//! ones): for a hypothesised log ratio θ₀ each stage gives a one-sided t test of its own rounds,
//! p₁(θ₀) and p₂(θ₀), with normal scores zᵢ = Φ⁻¹(1 − pᵢ). θ₀ is rejected (upper tail) when
//! stage 1 alone rejects at s·a (z₁ ≥ z₁₋ₛₐ, s the interim share), or when the combination
//! w₁z₁ + w₂z₂ with weights fixed before the data (w₁² + w₂² = 1) reaches z₁₋₍₁₋ₛ₎ₐ. Given stage
//! 1, z₂ is standard normal under θ₀ whatever rule chose n₂ (the new rounds are independent of
//! the old), so the combination is standard normal and the two parts err with at most s·a and
//! (1 − s)·a: at most a, under any continuation rule (Lehmacher & Wassmer 1999). A comparison
//! not continued (n₂ < 2: a t statistic needs two rounds) is judged by stage 1 alone at s·a,
//! which only removes rejections. The interval is the set of θ₀ neither part rejects.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Standard normal distribution function.
pub(crate) fn phi(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal quantile.
pub(crate) fn phi_inv(p: f64) -> f64 {
    match Normal::new(0.0, 1.0) {
        Ok(n) => n.inverse_cdf(p.clamp(1e-300, 1.0 - 1e-16)),
        Err(_) => f64::NAN,
    }
}

fn t_dist(df: f64) -> Option<StudentsT> {
    crate::students_t(df)
}

/// The t quantile F_ν⁻¹(p), remembered: the rule asks for the same few levels again and again.
fn t_quantile(df: f64, p: f64) -> Option<f64> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<(u64, u64), f64>> = RefCell::new(HashMap::new());
    }
    let key = (df.to_bits(), p.to_bits());
    if let Some(q) = CACHE.with(|c| c.borrow().get(&key).copied()) {
        return Some(q);
    }
    let q = t_dist(df)?.inverse_cdf(p);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 65536 {
            c.clear();
        }
        c.insert(key, q);
    });
    Some(q)
}

/// Upper-tail normal score of a t statistic: Φ⁻¹(F_ν(t)), computed from the nearer tail.
fn score(t: f64, df: f64) -> Option<f64> {
    let d = t_dist(df)?;
    if t.is_infinite() {
        return Some(t.signum() * 40.0);
    }
    Some(if t > 0.0 {
        -phi_inv(d.sf(t))
    } else {
        phi_inv(d.cdf(t))
    })
}

/// One stage of a comparison: mean log difference, its standard error and degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Stage {
    pub mean: f64,
    pub se: f64,
    pub df: f64,
}

impl Stage {
    /// Normal score of the upper-tail test of "log ratio ≤ θ₀" (large: evidence above θ₀).
    fn z_above(&self, theta0: f64) -> Option<f64> {
        if self.se == 0.0 {
            let d = self.mean - theta0;
            return Some(if d > 0.0 {
                40.0
            } else if d < 0.0 {
                -40.0
            } else {
                0.0
            });
        }
        score((self.mean - theta0) / self.se, self.df)
    }

    /// One-sided t interval bounds at per-tail level `a`.
    fn bounds(&self, a: f64) -> Option<(f64, f64)> {
        let t = t_quantile(self.df, 1.0 - a)?;
        Some((self.mean - t * self.se, self.mean + t * self.se))
    }
}

/// The rule's boundaries for one comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rule {
    /// Per-tail error of the comparison's interval (α / 2m).
    pub a: f64,
    /// Share of `a` stage 1 alone may spend (two stages only).
    pub share: f64,
    /// Stage 1's weight w₁² in the combination (two stages only).
    pub w1sq: f64,
}

impl Rule {
    fn u1(&self) -> f64 {
        -phi_inv(self.share * self.a)
    }
    fn c(&self) -> f64 {
        -phi_inv((1.0 - self.share) * self.a)
    }
    fn w(&self) -> (f64, f64) {
        (self.w1sq.sqrt(), (1.0 - self.w1sq).sqrt())
    }

    /// One-sided p value of the upper-tail test of θ₀ (evidence above θ₀) by the rule, as a
    /// per-tail level: the smallest `a` at which the rule would reject. One look: the t test's.
    /// Two stages: min(p₁ / s, p_comb / (1 − s)), the union of the two parts.
    pub fn p_above(&self, one: &Stage, two: Option<&Stage>, theta0: f64) -> Option<f64> {
        let z1 = one.z_above(theta0)?;
        let p1 = phi(-z1);
        let Some(two) = two else {
            return Some(p1);
        };
        let z2 = two.z_above(theta0)?;
        let (w1, w2) = self.w();
        let pc = phi(-(w1 * z1 + w2 * z2));
        Some((p1 / self.share).min(pc / (1.0 - self.share)).min(1.0))
    }

    /// Log-scale interval at per-tail `a` of the rule (None: no spread estimate).
    pub fn interval(&self, one: &Stage, two: Option<&Stage>) -> Option<(f64, f64)> {
        let Some(two) = two else {
            return one.bounds(self.a);
        };
        let (l1, u1) = one.bounds(self.share * self.a)?;
        let (w1, w2) = self.w();
        let c = self.c();
        // The combination's bounds: where w1 z1(θ) + w2 z2(θ) = ±c (decreasing in θ).
        let comb = |th: f64| -> Option<f64> { Some(w1 * one.z_above(th)? + w2 * two.z_above(th)?) };
        let span = 60.0 * (one.se + two.se).max(1e-9) + (one.mean - two.mean).abs();
        let centre = 0.5 * (one.mean + two.mean);
        let solve = |target: f64| -> Option<f64> {
            let (mut lo, mut hi) = (centre - span, centre + span);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if comb(mid)? > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
                if hi - lo < 1e-12 {
                    break;
                }
            }
            Some(0.5 * (lo + hi))
        };
        let lc = solve(c)?;
        let uc = solve(-c)?;
        let (lo, hi) = (l1.max(lc), u1.min(uc));
        // Stage 1 and the combination disagree so far that nothing is left (rare): the
        // combination alone, an interval at the level of its own part.
        Some(if lo <= hi { (lo, hi) } else { (lc, uc) })
    }
}

/// E[f(S)] for S = √(V/ν), V chi-squared with ν degrees of freedom (Simpson's rule).
pub(crate) fn expect_chi(df: f64, f: impl Fn(f64) -> f64) -> f64 {
    let spread = 10.0 / (2.0 * df).sqrt();
    let (lo, hi) = (
        (1.0 - spread).max(0.0),
        1.0 + spread.max(0.0) + spread.min(6.0),
    );
    // Few degrees of freedom have a long, skewed density; many a narrow window.
    let k = if df < 10.0 { 240usize } else { 120 };
    let h = (hi - lo) / k as f64;
    let ln_norm = -(df / 2.0) * 2f64.ln() - statrs::function::gamma::ln_gamma(df / 2.0);
    let dens = |s: f64| -> f64 {
        if s <= 0.0 {
            // ν ≥ 2: the density vanishes at 0; ν = 1: finite limit 2·√(1/2π).
            return if (df - 1.0).abs() < 1e-12 {
                2.0 * (0.5 / std::f64::consts::PI).sqrt()
            } else {
                0.0
            };
        }
        let v = df * s * s;
        // f_V(v) · dv/ds with dv/ds = 2νs.
        ((df / 2.0 - 1.0) * v.ln() - v / 2.0 + ln_norm).exp() * 2.0 * df * s
    };
    let mut sum = 0.0;
    for i in 0..=k {
        let s = lo + i as f64 * h;
        let wgt = if i == 0 || i == k {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        };
        sum += wgt * dens(s) * f(s);
    }
    sum * h / 3.0
}

/// P(T ≥ q) for T noncentral t with ν degrees of freedom and noncentrality λ.
pub(crate) fn nct_sf(q: f64, df: f64, ncp: f64) -> f64 {
    expect_chi(df, |s| phi(ncp - q * s)).clamp(0.0, 1.0)
}

/// Power of one look (either tail) for a true log ratio of `k` standard errors: the chance the
/// interval at per-tail `a` leaves 0 out.
pub(crate) fn power_one_look(k: f64, df: f64, a: f64) -> Option<f64> {
    let t = t_quantile(df, 1.0 - a)?;
    Some(expect_chi(df, |s| phi(k - t * s) + phi(-k - t * s)).clamp(0.0, 1.0))
}

/// Chance that one look's interval at per-tail `a` lies inside ±`b` (log scale), for a true log
/// ratio `theta`, a standard error `se` (at the true spread) and `df` degrees of freedom.
pub(crate) fn power_equivalent(theta: f64, b: f64, se: f64, df: f64, a: f64) -> Option<f64> {
    if se <= 0.0 {
        return Some(if theta.abs() < b { 1.0 } else { 0.0 });
    }
    let t = t_quantile(df, 1.0 - a)?;
    Some(
        expect_chi(df, |s| {
            (phi((b - theta) / se - t * s) - phi((-b - theta) / se + t * s)).max(0.0)
        })
        .clamp(0.0, 1.0),
    )
}

/// The t quantiles of a two-stage power computation, which do not depend on the effect.
pub(crate) struct TwoStageGrid {
    df1: f64,
    df2: f64,
    n1: f64,
    n2: f64,
    /// Stage-1 rejection threshold on T₁.
    q1: f64,
    /// Cells of T₁ below q1: (lower edge, upper edge, threshold on T₂ at the lower edge).
    cells: Vec<(f64, f64, f64)>,
}

impl TwoStageGrid {
    /// The grid of a design of `n1` then `n2` rounds, each stage's t with its own degrees of
    /// freedom (n − 2k − 1 for Yuen's trimmed t, n − 1 without trimming).
    pub fn new(
        rule: &Rule,
        (n1, df1): (usize, f64),
        (n2, df2): (usize, f64),
    ) -> Option<TwoStageGrid> {
        if n1 < 2 || n2 < 2 || !(df1 > 0.0 && df2 > 0.0) {
            return None;
        }
        let (d1, d2) = (t_dist(df1)?, t_dist(df2)?);
        let u1 = rule.u1();
        let c = rule.c();
        let (w1, w2) = rule.w();
        let q1 = d1.inverse_cdf(phi(u1));
        let lo_z = -6.0;
        let cells_n = 48;
        let step = (u1 - lo_z) / cells_n as f64;
        let mut cells = Vec::with_capacity(cells_n);
        let mut prev = f64::NEG_INFINITY;
        for i in 0..cells_n {
            let z_hi = lo_z + (i + 1) as f64 * step;
            let z_lo = z_hi - step;
            let t_hi = if i + 1 == cells_n {
                q1
            } else {
                d1.inverse_cdf(phi(z_hi))
            };
            let r = (c - w1 * z_lo) / w2;
            let q2 = if r > 8.0 {
                f64::INFINITY
            } else {
                d2.inverse_cdf(phi(r))
            };
            cells.push((prev, t_hi, q2));
            prev = t_hi;
        }
        Some(TwoStageGrid {
            df1,
            df2,
            n1: n1 as f64,
            n2: n2 as f64,
            q1,
            cells,
        })
    }

    pub fn power(&self, k: f64) -> f64 {
        let l1 = k * self.n1.sqrt();
        let l2 = k * self.n2.sqrt();
        let mut p = nct_sf(self.q1, self.df1, l1);
        for &(lo, hi, q2) in &self.cells {
            if q2.is_infinite() {
                continue;
            }
            let mass = nct_sf(lo, self.df1, l1) - nct_sf(hi, self.df1, l1);
            if mass > 1e-9 {
                p += mass * nct_sf(q2, self.df2, l2);
            }
        }
        p.clamp(0.0, 1.0)
    }
}

/// Smallest k ≥ 0 with `power(k)` ≥ `target` (power increasing in k), by bisection.
pub(crate) fn solve_effect(target: f64, power: impl Fn(f64) -> Option<f64>) -> Option<f64> {
    let mut hi = 1.0;
    while power(hi)? < target {
        hi *= 2.0;
        if hi > 1e4 {
            return None;
        }
    }
    let mut lo = 0.0;
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if power(mid)? >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Chance that stage 2 of `n2` new rounds makes the combination reject θ₀ (upper tail), given
/// stage 1's score `z1` at θ₀ and a true excess over θ₀ of `k` per-round spreads (the spread of
/// the trimmed rule), with stage 2's t at the trimmed rule's ν = n₂ − 2⌊g·n₂⌋ − 1 degrees of
/// freedom. For planning only (how the rounds are handed out does not touch the error rate),
/// so it uses the usual normal approximations: the t quantile t ≈ z·(1 + (z² + 1)/4ν) and
/// P(T ≥ q) ≈ Φ((λ − q)/√(1 + q²/2ν)) for a noncentral T.
pub(crate) fn conditional_power(rule: &Rule, z1: f64, n2: usize, k: f64) -> f64 {
    if n2 < 2 {
        return 0.0;
    }
    let (w1, w2) = rule.w();
    let r = (rule.c() - w1 * z1) / w2;
    let df2 = crate::trim::df(n2);
    let q = r * (1.0 + (r * r + 1.0) / (4.0 * df2));
    let lambda = k * (n2 as f64).sqrt();
    phi((lambda - q) / (1.0 + q * q / (2.0 * df2)).sqrt())
}

/// Stage 1's score at θ₀ (upper tail), for planning.
pub(crate) fn stage_score(one: &Stage, theta0: f64) -> Option<f64> {
    one.z_above(theta0)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn noncentral_t_matches_scipy() {
        // scipy.stats.nct.sf(2.0, 5, 1.5) = 0.3467..., nct.sf(3.0, 3, 0.0) = t.sf(3, 3).
        let central = nct_sf(3.0, 3.0, 0.0);
        let want = t_dist(3.0).expect("t").sf(3.0);
        assert!((central - want).abs() < 1e-6, "{central} {want}");
        let central1 = nct_sf(2.0, 1.0, 0.0);
        let want1 = t_dist(1.0).expect("t").sf(2.0);
        assert!((central1 - want1).abs() < 1e-4, "{central1} {want1}");
        let big = nct_sf(1.7, 200.0, 0.0);
        let wantb = t_dist(200.0).expect("t").sf(1.7);
        assert!((big - wantb).abs() < 1e-6, "{big} {wantb}");
    }

    #[test]
    fn one_stage_interval_is_the_t_interval() {
        let s = Stage {
            mean: 0.1,
            se: 0.02,
            df: 4.0,
        };
        let rule = Rule {
            a: 0.025,
            share: 0.25,
            w1sq: 0.5,
        };
        let (lo, hi) = rule.interval(&s, None).expect("interval");
        let t = 2.776_445_105_197_793;
        assert!((lo - (0.1 - t * 0.02)).abs() < 1e-9 && (hi - (0.1 + t * 0.02)).abs() < 1e-9);
    }

    #[test]
    fn two_stage_interval_agrees_with_its_p_value() {
        let one = Stage {
            mean: 0.05,
            se: 0.02,
            df: 3.0,
        };
        let two = Stage {
            mean: 0.04,
            se: 0.015,
            df: 5.0,
        };
        let rule = Rule {
            a: 0.01,
            share: 0.25,
            w1sq: 0.4,
        };
        let (lo, _) = rule.interval(&one, Some(&two)).expect("interval");
        // At the lower bound the rule's p value is exactly a (the combination part binds here).
        let p = rule.p_above(&one, Some(&two), lo).expect("p");
        assert!((p - rule.a).abs() < 1e-6, "{p}");
    }
}
