//! autobench's CSV/TSV output, byte for byte.
//!
//! autobench 2.1 writes one header line, then one line per rate:
//! `dem_req_rate` (rate × num_call), then for each host the ten fields
//! `req_rate_HOST con_rate_HOST min_rep_rate_HOST avg_rep_rate_HOST
//! max_rep_rate_HOST stddev_rep_rate_HOST resp_time_HOST net_io_HOST
//! errors_HOST` — the host name is a *suffix*. The rates, the response time
//! and the net I/O are the one-decimal figures httperf prints; `errors` is a
//! percentage of replies, printed as a Perl number (`%.15g`), and 101 when a
//! test got no reply at all ("test invalid").

use httplab_model::RunResult;

/// Field separator: autobench's `output_fmt` (`csv` or `tsv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Comma-separated.
    #[default]
    Csv,
    /// Tab-separated.
    Tsv,
}

impl Format {
    /// Parses autobench's `output_fmt` value.
    pub fn parse(s: &str) -> Option<Format> {
        match s.trim() {
            "csv" => Some(Format::Csv),
            "tsv" => Some(Format::Tsv),
            _ => None,
        }
    }

    fn sep(self) -> &'static str {
        match self {
            Format::Csv => ",",
            Format::Tsv => "\t",
        }
    }
}

/// The per-host fields, in autobench's order.
pub const HOST_FIELDS: [&str; 9] = [
    "req_rate",
    "con_rate",
    "min_rep_rate",
    "avg_rep_rate",
    "max_rep_rate",
    "stddev_rep_rate",
    "resp_time",
    "net_io",
    "errors",
];

/// The header line (without newline) for the given host names.
pub fn header(hosts: &[&str], fmt: Format) -> String {
    let mut cols = vec!["dem_req_rate".to_string()];
    for h in hosts {
        for f in HOST_FIELDS {
            cols.push(format!("{f}_{h}"));
        }
    }
    cols.join(fmt.sep())
}

/// Formats a number the way Perl prints it (`%.15g`): integers without a
/// decimal point, others with up to 15 significant digits and no trailing
/// zeros, exponent form outside 1e-4 ..= 1e15.
pub fn perl_number(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..15).contains(&exp) {
        let s = format!("{:.14e}", v);
        // Rust: 1.23400000000000e5 → mantissa, exponent.
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = trim_zeros(m);
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", e.abs());
    }
    let decimals = (14 - exp).max(0) as usize;
    trim_zeros(&format!("{:.*}", decimals, v))
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// httperf's one-decimal figure.
fn d1(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "0.0".into()
    }
}

/// autobench's `percent_errors`: 100 × errors / replies, 101 with no replies.
pub fn percent_errors(run: &RunResult) -> f64 {
    if run.totals.replies == 0 {
        101.0
    } else {
        100.0 * run.errors.total as f64 / run.totals.replies as f64
    }
}

/// The nine per-host fields of one run.
pub fn host_fields(run: &RunResult) -> [String; 9] {
    [
        d1(run.request.rate_per_s),
        d1(run.connection.rate_per_s),
        d1(run.reply.rate.min),
        d1(run.reply.rate.avg),
        d1(run.reply.rate.max),
        d1(run.reply.rate.stddev),
        d1(run.reply.response_ms),
        d1(run.resources.net_kb_per_s),
        perl_number(percent_errors(run)),
    ]
}

/// One data line (without newline): `dem_req_rate` then each host's fields.
/// `rate` is the demanded connection rate; `num_calls` the calls per connection.
pub fn row(rate: f64, num_calls: u64, runs: &[&RunResult], fmt: Format) -> String {
    let mut cols = vec![perl_number(rate * num_calls as f64)];
    for r in runs {
        cols.extend(host_fields(r));
    }
    cols.join(fmt.sep())
}

/// A whole file from a sweep: the header, then one line per demanded rate
/// (every rate any target ran, ascending) with each target's fields in target
/// order. A target without a run at some rate (only possible with
/// `--find-max`) gets empty fields there, so every line has the same columns.
pub fn write_sweep(sweep: &httplab_model::SweepResult, num_calls: u64, fmt: Format) -> String {
    let hosts: Vec<String> = sweep.targets.iter().map(host_of).collect();
    let host_refs: Vec<&str> = hosts.iter().map(|s| s.as_str()).collect();
    let mut out = header(&host_refs, fmt);
    out.push('\n');
    let mut rates: Vec<f64> = sweep
        .targets
        .iter()
        .flat_map(|t| t.steps.iter().map(|s| s.demanded_rate))
        .collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    rates.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    for rate in rates {
        let mut cols = vec![perl_number(rate * num_calls as f64)];
        for t in &sweep.targets {
            match t
                .steps
                .iter()
                .find(|s| (s.demanded_rate - rate).abs() < 1e-9)
            {
                Some(s) => cols.extend(host_fields(&s.run)),
                None => cols.extend(vec![String::new(); HOST_FIELDS.len()]),
            }
        }
        out.push_str(&cols.join(fmt.sep()));
        out.push('\n');
    }
    out
}

/// The host name autobench would use for a target: the host part of its URL,
/// else its label.
pub fn host_of(t: &httplab_model::SweepTarget) -> String {
    let url = t.url.as_str();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) => {
            let hostport = r.split('/').next().unwrap_or(r);
            let host = if let Some(stripped) = hostport.strip_prefix('[') {
                stripped.split(']').next().unwrap_or(stripped)
            } else {
                hostport.split(':').next().unwrap_or(hostport)
            };
            host.to_string()
        }
        None => t.label.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_numbers() {
        assert_eq!(perl_number(0.0), "0");
        assert_eq!(perl_number(10.0), "10");
        assert_eq!(perl_number(101.0), "101");
        assert_eq!(perl_number(100.0 / 3.0), "33.3333333333333");
        assert_eq!(perl_number(834.0 * 100.0 / 5166.0), "16.144018583043");
        assert_eq!(perl_number(0.5), "0.5");
        assert_eq!(perl_number(0.0001), "0.0001");
        assert_eq!(perl_number(0.00001), "1e-05");
        assert_eq!(perl_number(1e20), "1e+20");
        assert_eq!(perl_number(2500.0), "2500");
    }

    #[test]
    fn header_two_hosts() {
        assert_eq!(
            header(&["a", "b"], Format::Tsv).split('\t').count(),
            19,
            "dem_req_rate + 9 per host"
        );
    }
}
