//! Numbers as the study's tables write them: about three significant digits
//! with thousands separators, and an estimate with its 95 % interval.

use httplab_model as m;

/// A number for tables: thousands separators, about 3 significant digits.
pub fn fmt_val(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        return "–".into();
    }
    if a >= 1000.0 {
        let s = format!("{:.0}", x);
        let (sign, digits) = s.split_at(if s.starts_with('-') { 1 } else { 0 });
        let mut o = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(c);
        }
        format!("{sign}{o}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `mean [low–high]` (n), or `≥ mean` for a client-bound figure.
pub fn fmt_estimate(e: &m::Estimate, client_bound: bool, higher_is_better: bool) -> String {
    let bound = if client_bound {
        if higher_is_better {
            "≥ "
        } else {
            "≤ "
        }
    } else {
        ""
    };
    match (e.ci_low, e.ci_high) {
        (Some(l), Some(h)) => format!("{bound}{} [{}–{}]", fmt_val(e.mean), fmt_val(l), fmt_val(h)),
        _ => format!("{bound}{} (n = {})", fmt_val(e.mean), e.n),
    }
}
