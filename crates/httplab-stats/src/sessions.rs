//! Runs of two builds saved in several sessions (a result file is one session): the
//! comparison's unit is the session, not the run, because runs of one session share whatever
//! the machine was doing then and sessions differ by more than their runs do.
//!
//! - Both sides with two or more sessions: Welch's interval on the session means (the mean log
//!   of each session's runs). The spread between sessions is then in every interval.
//! - One side with one session (a new result against a baseline saved from several sessions):
//!   the other side's spread of session means stands for both, with its degrees of freedom
//!   (k − 1 over the k sessions it came from): the one session could be anywhere in that
//!   spread.
//! - One session per side: the spread between sessions is not measured. The comparison is
//!   Welch's on the runs, and [`SessionRatios::unit`] says so, so that the reader is told that a
//!   difference between the two sessions would be reported as the builds' difference.
//!
//! The spread between sessions is also estimated on its own ([`SessionRatios::spread`]): the
//! variance of the session means less the part the runs' own spread explains (one-way random
//! effects, method of moments: [`OneWay`]).

use serde::{Deserialize, Serialize};

use crate::decide::{LogRatios, Unpaired};
use crate::oneway::{self, OneWay};
use crate::Better;

/// What one comparison's unit was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Each side is one session: runs compared, the spread between sessions unmeasured.
    RunsOfOneSession,
    /// Sessions compared (their mean logs).
    Sessions,
}

/// A comparison of two sides' runs grouped by session.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRatios {
    /// The log ratios the decision reads.
    pub ratios: LogRatios,
    /// Sessions with a usable value on side a and on side b.
    pub sessions: [usize; 2],
    /// What was compared.
    pub unit: Unit,
    /// Standard deviation of the log of a session's true level from session to session
    /// (exp(spread) − 1 is the relative spread), where some side has two sessions or more.
    pub spread: Option<f64>,
}

/// One side's sessions: the logs of each session's usable values.
fn side(sessions: &[Vec<f64>]) -> OneWay {
    let logs: Vec<Vec<f64>> = sessions.iter().map(|s| crate::logs(s)).collect();
    OneWay::of(&logs)
}

/// Compares side `a` against side `b`, each given as its sessions' values (positive log
/// differences: `a` better, as [`LogRatios::unpaired`]). Values that are missing, not finite
/// or not positive are left out; a session without a value is no session.
pub fn by_sessions(a: &[Vec<f64>], b: &[Vec<f64>], better: Better) -> SessionRatios {
    let (sa, sb) = (side(a), side(b));
    let (ka, kb) = (sa.means.len(), sb.means.len());
    let flat = |s: &[Vec<f64>]| -> Vec<f64> { s.iter().flatten().copied().collect() };
    if ka <= 1 && kb <= 1 {
        return SessionRatios {
            ratios: LogRatios::unpaired(&flat(a), &flat(b), better),
            sessions: [ka, kb],
            unit: Unit::RunsOfOneSession,
            spread: None,
        };
    }
    // The variance of the session means, pooled over the sides that have one.
    let (va, vb) = (sa.means_var(), sb.means_var());
    let between_df = ka.saturating_sub(1) as f64 + kb.saturating_sub(1) as f64;
    let pooled_means =
        (ka.saturating_sub(1) as f64 * va + kb.saturating_sub(1) as f64 * vb) / between_df.max(1.0);
    // What the runs' own spread contributes to a session mean: s_w² / (harmonic mean size).
    let within = oneway::pooled(&[&sa, &sb]);
    let harmonic = oneway::harmonic(&[&sa, &sb]);
    let spread = Some((pooled_means - within / harmonic).max(0.0).sqrt());
    let (ma, mb) = (&sa.means, &sb.means);
    let diff = crate::mean(ma) - crate::mean(mb);
    let mean = match better {
        Better::Higher => diff,
        Better::Lower => -diff,
    };
    let (u, n) = if ka >= 2 && kb >= 2 {
        let u = Unpaired {
            n_a: ka,
            n_b: kb,
            sd_a: va.sqrt(),
            sd_b: vb.sqrt(),
            df: None,
        };
        (u, ka.min(kb))
    } else {
        // One side has one session: the other's spread stands for both.
        let u = Unpaired {
            n_a: ka,
            n_b: kb,
            sd_a: pooled_means.sqrt(),
            sd_b: pooled_means.sqrt(),
            df: Some(between_df),
        };
        (u, ka.max(kb))
    };
    SessionRatios {
        ratios: LogRatios {
            n,
            mean,
            sd: (u.sd_a * u.sd_a + u.sd_b * u.sd_b).sqrt(),
            trimmed: 0,
            unpaired: Some(u),
        },
        sessions: [ka, kb],
        unit: Unit::Sessions,
        spread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_session_a_side_is_welch_on_the_runs() {
        let a = vec![vec![10.0, 10.2, 9.9]];
        let b = vec![vec![11.0, 11.1, 10.8]];
        let s = by_sessions(&a, &b, Better::Lower);
        assert_eq!(s.unit, Unit::RunsOfOneSession);
        assert_eq!(s.sessions, [1, 1]);
        let w = LogRatios::unpaired(&a[0], &b[0], Better::Lower);
        assert_eq!(s.ratios, w);
        assert!(s.spread.is_none());
    }

    #[test]
    fn sessions_are_the_unit_and_their_spread_widens_the_interval() {
        // Runs agree closely within a session; sessions differ by a few per cent.
        let base = vec![
            vec![100.0, 100.1, 99.9],
            vec![104.0, 104.1, 103.9],
            vec![97.0, 97.1, 96.9],
            vec![102.0, 102.1, 101.9],
        ];
        let new = vec![vec![103.0, 103.1, 102.9]];
        let runs = LogRatios::unpaired(&new.concat(), &base.concat(), Better::Lower);
        let s = by_sessions(&new, &base, Better::Lower);
        assert_eq!(s.unit, Unit::Sessions);
        assert_eq!(s.sessions, [1, 4]);
        assert!(
            s.ratios.se() > 3.0 * runs.se(),
            "{} vs {}",
            s.ratios.se(),
            runs.se()
        );
        assert!((s.ratios.df() - 3.0).abs() < 1e-12);
        let spread = s.spread.unwrap_or(0.0);
        assert!(spread > 0.02 && spread < 0.04, "{spread}");
        // The same mean as the session means give.
        let means: f64 = base
            .iter()
            .map(|x| x.iter().map(|v: &f64| v.ln()).sum::<f64>() / 3.0)
            .sum::<f64>()
            / 4.0;
        assert!((s.ratios.mean - (means - 103f64.ln())).abs() < 1e-3);
    }

    #[test]
    fn two_sessions_a_side_is_welch_on_the_session_means() {
        let a = vec![vec![10.0, 10.5], vec![11.0]];
        let b = vec![vec![12.0], vec![12.5, 12.4], vec![]];
        let s = by_sessions(&a, &b, Better::Higher);
        assert_eq!(s.sessions, [2, 2]);
        let ma = [(10f64.ln() + 10.5f64.ln()) / 2.0, 11f64.ln()];
        let mb = [12f64.ln(), (12.5f64.ln() + 12.4f64.ln()) / 2.0];
        let w = LogRatios::unpaired(&ma.map(f64::exp), &mb.map(f64::exp), Better::Higher);
        assert!((s.ratios.mean - w.mean).abs() < 1e-12);
        assert!((s.ratios.se() - w.se()).abs() < 1e-12);
        assert!((s.ratios.df() - w.df()).abs() < 1e-9);
    }
}
