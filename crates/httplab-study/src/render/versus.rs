//! The answer to "is my server faster or cheaper than nginx, by how much,
//! and how sure": the first lines of the terminal output, of index.html and
//! of summary.md when the study has a `[compare] baseline`. Every line is
//! one of the study's own verdicts (`analyse::decisions`: the baseline
//! pairs, the questions' pairs, or a step comparison of the same two
//! servers) read in the pair's direction: the first server's figure over
//! the second's, with the verdict's 95 % interval, and its outcome. No
//! statistic is computed here; a ratio is only turned around (1/r, its
//! interval's ends swapped) when the verdict names the servers the other
//! way round or its metric is better when lower.

use std::fmt::Write as _;

use httplab_model as m;

use crate::spec::{self, Metric, StudyFile};

/// One pair's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PairAnswer {
    /// The server asked about (e.g. "mine").
    pub subject: String,
    /// The server it is compared with (the baseline, e.g. "nginx").
    pub versus: String,
    /// One sentence per compared workload step and metric.
    pub items: Vec<String>,
    /// Why there is no comparison at all (a server not installed, failed).
    pub none: Option<String>,
}

/// The pairs to answer, in order: with a study, every server against its
/// baseline and its questions' pairs, grouped by their first server in the
/// study's server order; from a saved document alone, the pairs its
/// verdicts name. Empty without a baseline comparison.
pub fn pairs(res: &m::StudyResult, study: Option<&StudyFile>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |a: &str, b: &str| {
        let seen = out
            .iter()
            .any(|(x, y)| (x == a && y == b) || (x == b && y == a));
        if a != b && !seen {
            out.push((a.to_string(), b.to_string()));
        }
    };
    match study {
        Some(s) => {
            let Some(base) = &s.compare.baseline else {
                return Vec::new();
            };
            for inst in spec::expand_servers(s) {
                add(&inst.name, base);
            }
            for q in &s.questions {
                for e in &q.evidence {
                    add(&e.server, &e.versus);
                }
            }
            // Each server's pairs together, in the study's server order
            // (mine vs nginx, mine vs h2o, then h2o vs nginx).
            let order: Vec<String> = spec::expand_servers(s)
                .into_iter()
                .map(|i| i.name)
                .collect();
            out.sort_by_key(|(a, _)| order.iter().position(|n| n == a));
        }
        None => {
            for v in res
                .verdicts
                .iter()
                .filter(|v| v.kind == m::VerdictKind::Pair)
            {
                if let (Some(a), Some(b)) = (&v.leader, &v.runner_up) {
                    add(a, b);
                }
            }
        }
    }
    out
}

/// Every pair's answer (see [`pairs`]).
pub fn answers(res: &m::StudyResult, study: Option<&StudyFile>) -> Vec<PairAnswer> {
    pairs(res, study)
        .into_iter()
        .map(|(a, b)| answer(res, &a, &b))
        .collect()
}

fn answer(res: &m::StudyResult, a: &str, b: &str) -> PairAnswer {
    let mut seen: Vec<(&str, &Option<String>, &str)> = Vec::new();
    let mut items = Vec::new();
    for v in &res.verdicts {
        let names = (v.leader.as_deref(), v.runner_up.as_deref());
        if names != (Some(a), Some(b)) && names != (Some(b), Some(a)) {
            continue;
        }
        let key = (v.workload.as_str(), &v.step, v.metric.key());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        items.push(item(v, a, b, res));
    }
    let none = items.is_empty().then(|| why_none(res, a, b));
    PairAnswer {
        subject: a.to_string(),
        versus: b.to_string(),
        items,
        none,
    }
}

/// Why two servers have no verdict: the first reason a server's runs give.
fn why_none(res: &m::StudyResult, a: &str, b: &str) -> String {
    for s in [b, a] {
        let runs: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.server == s).collect();
        if runs.is_empty() {
            return format!("{s} did not run");
        }
        if runs.iter().all(|r| r.status != "ok") {
            let why = &runs[0].reason;
            return format!("{s}: {} ({why})", runs[0].status);
        }
    }
    "no workload step measured both".into()
}

/// "serves", "the requests per second" and the adjective of the better one.
fn words(metric: Option<Metric>) -> (&'static str, &'static str, &'static str) {
    match metric {
        Some(Metric::ReplyRate) => ("serves", "the requests per second", "faster"),
        Some(Metric::ThroughputMbS) => ("moves", "the MB per second", "faster"),
        Some(Metric::MaxRate) => ("sustains", "the connection rate", "faster"),
        Some(Metric::ReqPerServerCpuS) => {
            ("serves", "the requests per server CPU-second", "cheaper")
        }
        Some(Metric::ServerCpuUsPerReq | Metric::ServerCpuPerKreq) => {
            ("costs", "the server CPU per request", "cheaper")
        }
        Some(Metric::ServerRssMb) => ("uses", "the peak memory", "leaner"),
        Some(Metric::Accuracy) => ("delivers", "the intact bytes", "more accurate"),
        Some(Metric::ResponseMs) => ("takes", "the mean response time", "faster"),
        Some(Metric::P50Ms) => ("takes", "the median response time", "faster"),
        Some(Metric::P99Ms) => ("takes", "the 99th-percentile response time", "faster"),
        Some(Metric::ConnectionMs) => ("takes", "the mean connection time", "faster"),
        Some(Metric::SessionMs) => ("takes", "the mean session time", "faster"),
        Some(Metric::SessionP50Ms) => ("takes", "the median session time", "faster"),
        Some(Metric::ProbeP50Ms) => (
            "takes",
            "the unqueued probe's median response time",
            "faster",
        ),
        Some(Metric::ProbeP99Ms) => (
            "takes",
            "the unqueued probe's 99th-percentile response time",
            "faster",
        ),
        Some(Metric::P999Ms) => ("takes", "the 99.9th-percentile response time", "faster"),
        Some(Metric::ClientCpuUsPerReq) => ("costs", "the client CPU per request", "cheaper"),
        Some(Metric::ErrorPct) => ("fails", "the calls", "more reliable"),
        None => ("measures", "the figure", "better"),
    }
}

/// `a`'s figure over `b`'s, with its 95 % interval, from a verdict whose
/// ratio is leader over runner-up in the better direction.
pub fn raw_ratio(v: &m::StudyVerdict, a: &str) -> Option<(f64, Option<[f64; 2]>)> {
    let flip = |r: f64, ci: Option<[f64; 2]>| (1.0 / r, ci.map(|[l, h]| [1.0 / h, 1.0 / l]));
    let (mut r, mut ci) = (v.ratio?, v.ratio_ci);
    if v.leader.as_deref() != Some(a) {
        (r, ci) = flip(r, ci);
    }
    if v.better == m::Direction::Lower {
        (r, ci) = flip(r, ci);
    }
    Some((r, ci))
}

/// A confidence level as httplab-stats writes it: "95 %", "99.72 %".
fn level_text(level: f64) -> String {
    let s = format!("{:.2}", level * 100.0);
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
}

/// A fraction as a percentage, written as httplab-stats writes its notes.
fn pct(x: f64) -> String {
    let v = x * 100.0;
    if v >= 10.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} %")
    } else {
        format!("{v:.1} %")
    }
}

fn sig3(x: f64) -> String {
    httplab_stats::format_sig3(x)
}

fn item(v: &m::StudyVerdict, a: &str, b: &str, res: &m::StudyResult) -> String {
    let place = match &v.step {
        Some(s) => format!("{} [{s}]", v.workload),
        None => v.workload.clone(),
    };
    let (verb, what, adj) = words(v.metric.metric());
    let Some((r, ci)) = raw_ratio(v, a) else {
        return format!(
            "{place}: {a} vs {b} on {}: no decision ({})",
            v.metric, v.note
        );
    };
    let r = sig3(r);
    if v.pairs < 2 {
        return format!(
            "{place}: {a} {verb} {r}× {what} of {b}, from {} paired round(s): no decision (too few rounds)",
            v.pairs
        );
    }
    let level = level_text(v.ratio_ci_level.unwrap_or(0.95));
    let ci = ci.map_or_else(String::new, |[l, h]| {
        format!(" ({level} CI {}–{}×)", sig3(l), sig3(h))
    });
    let delta = v
        .delta
        .or(res.protocol.as_ref().map(|p| p.min_effect))
        .unwrap_or(0.05);
    let outcome = match v.outcome() {
        m::VerdictOutcome::Winner => {
            format!("decided: {} is {adj}", v.winner.as_deref().unwrap_or("?"))
        }
        m::VerdictOutcome::Equivalent => {
            format!("equivalent: any difference is under {}", pct(delta))
        }
        m::VerdictOutcome::Inconclusive => inconclusive(v, delta),
    };
    format!("{place}: {a} {verb} {r}× {what} of {b}{ci}: {outcome}")
}

fn inconclusive(v: &m::StudyVerdict, delta: f64) -> String {
    if !v.client_bound.is_empty() {
        return format!(
            "inconclusive: the load generator limited {} (client-bound: a bound, not a measurement)",
            v.client_bound.join(" and ")
        );
    }
    // The same words and bounds as httplab-stats' notes (decide.rs).
    let mut s = match v.detectable {
        Some(e) if e.is_finite() && e < 9.0 => {
            format!(
                "inconclusive: the run could have seen a difference of ≥ {}",
                pct(e)
            )
        }
        Some(_) => "inconclusive: the run could have seen only differences of 10× or more".into(),
        None => "inconclusive".into(),
    };
    if let Some(n) = v.rounds_to_settle.filter(|&n| n > v.pairs) {
        s.push_str(&format!(
            "; about {n} rounds in one look would settle it at ±{}",
            pct(delta)
        ));
    }
    s
}

/// The heading of a pair's answer.
pub fn heading(p: &PairAnswer) -> String {
    format!(
        "{} vs {} ({}'s figure over {}'s, with the interval each decision reads):",
        p.subject, p.versus, p.subject, p.versus
    )
}

/// How to read "decided" next to an interval (the study's rule, in words).
pub fn footnote(res: &m::StudyResult) -> String {
    let delta = res.protocol.as_ref().map_or(0.05, |p| p.min_effect);
    format!(
        "(each interval is at the level of the whole study's {n} comparisons, so that all of them hold together with 95 % confidence: decided when it leaves 1× out, equivalent when it lies within ±{}; docs/statistics.md)",
        pct(delta),
        n = res.verdicts.len()
    )
}

/// The answer as terminal lines (empty without a baseline comparison).
pub fn lines(res: &m::StudyResult, study: Option<&StudyFile>) -> Vec<String> {
    let mut out = Vec::new();
    for p in answers(res, study) {
        out.push(heading(&p));
        if let Some(why) = &p.none {
            out.push(format!("  no comparison: {why}"));
        }
        out.extend(p.items.iter().map(|i| format!("  {i}")));
    }
    if !out.is_empty() {
        out.push(footnote(res));
    }
    out
}

/// The answer as markdown (empty without a baseline comparison).
pub fn markdown(res: &m::StudyResult, study: Option<&StudyFile>) -> String {
    let mut o = String::new();
    for p in answers(res, study) {
        let _ = writeln!(o, "**{}**\n", heading(&p));
        if let Some(why) = &p.none {
            let _ = writeln!(o, "- no comparison: {why}");
        }
        for i in &p.items {
            let _ = writeln!(o, "- {i}");
        }
        o.push('\n');
    }
    if !o.is_empty() {
        let _ = writeln!(o, "{}\n", footnote(res));
    }
    o
}

/// The answer as an HTML section (nothing without a baseline comparison).
pub fn html(h: &mut String, res: &m::StudyResult, study: Option<&StudyFile>) {
    let all = answers(res, study);
    if all.is_empty() {
        return;
    }
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let _ = writeln!(h, "<section id=\"answer\">");
    for p in all {
        let _ = writeln!(h, "<h2>{}</h2><ul>", esc(&heading(&p)));
        if let Some(why) = &p.none {
            let _ = writeln!(h, "<li>no comparison: {}</li>", esc(why));
        }
        for i in &p.items {
            let _ = writeln!(h, "<li>{}</li>", esc(i));
        }
        let _ = writeln!(h, "</ul>");
    }
    let _ = writeln!(h, "<p>{}</p>", esc(&footnote(res)));
    let _ = writeln!(h, "</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(
        leader: &str,
        runner_up: &str,
        metric: &str,
        better: m::Direction,
    ) -> m::StudyVerdict {
        m::StudyVerdict {
            workload: "w".into(),
            step: None,
            metric: metric.into(),
            better,
            outcome: Some(m::VerdictOutcome::Winner),
            kind: m::VerdictKind::Pair,
            measured_by: None,
            winner: Some(leader.into()),
            leader: Some(leader.into()),
            runner_up: Some(runner_up.into()),
            ratio: Some(1.25),
            ratio_ci: Some([1.1, 1.6]),
            ratio_ci_level: None,
            ratio_ci90: None,
            p_value: Some(0.01),
            p_equivalent: None,
            significant: true,
            n: Default::default(),
            pairs: 3,
            client_bound: Vec::new(),
            detectable: Some(0.08),
            rounds_to_settle: None,
            delta: Some(0.05),
            noise: None,
            note: String::new(),
        }
    }

    #[test]
    fn pairs_group_by_their_first_server_in_study_order() {
        let m = crate::studies::mine::Mine::new(
            Some("srv {port} {root}"),
            &["nginx,h2o,caddy".to_string()],
            None,
        )
        .unwrap();
        let s = crate::studies::mine::study(&m).unwrap();
        let p = pairs(&m::StudyResult::default(), Some(&s));
        let names: Vec<String> = p.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        assert_eq!(
            names,
            [
                "mine/nginx",
                "mine/h2o",
                "mine/caddy",
                "h2o/nginx",
                "caddy/nginx"
            ]
        );
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ratios_are_turned_to_the_pairs_direction_and_the_raw_figure() {
        // Higher is better, mine leads: mine's figure is 1.25× nginx's.
        let v = verdict("mine", "nginx", "reply_rate", m::Direction::Higher);
        let (r, ci) = raw_ratio(&v, "mine").unwrap();
        assert!(close(r, 1.25));
        assert_eq!(ci, Some([1.1, 1.6]));
        // Asked the other way round: nginx's over mine's.
        let (r, ci) = raw_ratio(&v, "nginx").unwrap();
        assert!(close(r, 0.8));
        let [l, h] = ci.unwrap();
        assert!(close(l, 1.0 / 1.6) && close(h, 1.0 / 1.1));
        // Lower is better (CPU per request), mine leads by 1.25: mine costs 0.8×.
        let v = verdict(
            "mine",
            "nginx",
            "server_cpu_us_per_req",
            m::Direction::Lower,
        );
        let (r, _) = raw_ratio(&v, "mine").unwrap();
        assert!(close(r, 0.8));
        // Lower is better and nginx leads: mine costs 1.25× nginx's.
        let v = verdict(
            "nginx",
            "mine",
            "server_cpu_us_per_req",
            m::Direction::Lower,
        );
        let (r, ci) = raw_ratio(&v, "mine").unwrap();
        assert!(close(r, 1.25));
        assert_eq!(ci, Some([1.1, 1.6]));
    }

    #[test]
    fn a_sentence_names_both_servers_the_figure_and_the_outcome() {
        let mut res = m::StudyResult::default();
        res.verdicts
            .push(verdict("mine", "nginx", "reply_rate", m::Direction::Higher));
        let mut v = verdict(
            "nginx",
            "mine",
            "server_cpu_us_per_req",
            m::Direction::Lower,
        );
        v.outcome = Some(m::VerdictOutcome::Inconclusive);
        v.winner = None;
        v.rounds_to_settle = Some(9);
        res.verdicts.push(v);
        let l = lines(&res, None);
        assert_eq!(
            l[0],
            "mine vs nginx (mine's figure over nginx's, with the interval each decision reads):"
        );
        assert_eq!(
            l[1],
            "  w: mine serves 1.25× the requests per second of nginx (95 % CI 1.10–1.60×): decided: mine is faster"
        );
        assert_eq!(
            l[2],
            "  w: mine costs 1.25× the server CPU per request of nginx (95 % CI 1.10–1.60×): inconclusive: the run could have seen a difference of ≥ 8 %; about 9 rounds in one look would settle it at ±5 %"
        );
    }
}
