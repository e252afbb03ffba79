//! The forest plot: every comparison of a report in one picture — its ratio
//! and the interval its verdict reads, on a log axis around 1, the
//! equivalence band [1/(1+δ), 1+δ] shaded, each mark coloured and shaped by
//! its outcome, grouped under their workload (or cell). The one drawing
//! behind the study report, `httplab compare`'s report and `httplab report`'s
//! page; the callers turn their own typed verdicts into [`Outcome`]s.
//!
//! Hand-written SVG (no fonts, no script, no external resource), readable
//! without colour (shape and the outcome's word on every row) and by a screen
//! reader (`<title>` and `<desc>`, and a `<title>` per mark). Every mark is
//! one `<g class="mark OUTCOME">`. Nothing is computed here but positions:
//! the ratios and intervals are the caller's.

use std::fmt::Write as _;

use httplab_model::{StudyVerdict, VerdictOutcome};

use crate::text::esc_html;

/// What one comparison found, read from the first side's point of view
/// (the candidate, NEW, the leader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The first side is better, decided.
    Better,
    /// The first side is worse, decided.
    Worse,
    /// The interval lies inside the equivalence band.
    Equivalent,
    /// Not decided either way.
    Undecided,
}

impl Outcome {
    /// Every outcome, in legend order.
    pub const ALL: [Outcome; 4] = [
        Outcome::Better,
        Outcome::Worse,
        Outcome::Equivalent,
        Outcome::Undecided,
    ];

    /// "better", "worse", "equivalent", "undecided" (also the mark's class).
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Better => "better",
            Outcome::Worse => "worse",
            Outcome::Equivalent => "equivalent",
            Outcome::Undecided => "undecided",
        }
    }

    /// Okabe–Ito colours: green, vermillion, blue, grey.
    fn colour(self) -> &'static str {
        match self {
            Outcome::Better => "#009e73",
            Outcome::Worse => "#d55e00",
            Outcome::Equivalent => "#0072b2",
            Outcome::Undecided => "#777777",
        }
    }

    /// The point's shape at (x, y): a disc, a square, a diamond, a ring.
    fn glyph(self, x: f64, y: f64) -> String {
        let c = self.colour();
        match self {
            Outcome::Better => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{c}\"/>"),
            Outcome::Worse => format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"{c}\"/>",
                x - 4.5,
                y - 4.5
            ),
            Outcome::Equivalent => format!(
                "<path d=\"M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z\" fill=\"{c}\"/>",
                y - 6.0,
                x + 6.0,
                y + 6.0,
                x - 6.0
            ),
            Outcome::Undecided => format!(
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"#ffffff\" stroke=\"{c}\" stroke-width=\"2\"/>"
            ),
        }
    }
}

/// One comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    /// The group it is drawn under (a workload, a cell).
    pub group: String,
    /// Its own label within the group (step, the two sides, the metric).
    pub label: String,
    /// The ratio (first side over second); rows without a finite positive
    /// ratio are left out of the picture and counted in its description.
    pub ratio: f64,
    /// The interval the verdict reads, when there is one (an end of 0 or
    /// infinity is drawn as an arrow to the axis' edge).
    pub ci: Option<(f64, f64)>,
    /// The outcome.
    pub outcome: Outcome,
}

/// A whole forest plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    /// Prefix of the SVG's element ids (unique within a page).
    pub id: String,
    /// Title, drawn and given to screen readers.
    pub title: String,
    /// What the axis shows ("NEW ÷ BASE", with what > 1 means).
    pub axis: String,
    /// What the whiskers are ("the interval each verdict reads").
    pub interval: String,
    /// δ of the equivalence band [1/(1+δ), 1+δ] (no band when None or ≤ 0).
    pub delta: Option<f64>,
    /// The comparisons, in drawing order (rows of a group together).
    pub rows: Vec<ForestRow>,
}

const WIDTH: f64 = 980.0;
/// Left edge of the plot area (labels on its left).
const PLOT_X0: f64 = 330.0;
/// Right edge of the plot area (figures on its right).
const PLOT_X1: f64 = 730.0;
const ROW_H: f64 = 22.0;
/// First row's top.
const TOP: f64 = 62.0;
const FONT: &str = "font-family=\"sans-serif\"";
/// The widest domain drawn; ends beyond it are arrows.
const DOMAIN_LIMIT: (f64, f64) = (1e-4, 1e4);
/// Longest label drawn, in characters (the mark's title keeps it whole).
const LABEL_CHARS: usize = 48;

/// A log-scaled axis over `[lo, hi]` mapped onto the plot area.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogAxis {
    /// Lower end of the domain.
    pub lo: f64,
    /// Upper end of the domain.
    pub hi: f64,
}

impl LogAxis {
    /// The axis that holds 1, the band, every ratio and every finite
    /// positive interval end, padded a little, within [`DOMAIN_LIMIT`].
    pub fn fitting(rows: &[&ForestRow], delta: Option<f64>) -> LogAxis {
        let mut vals = vec![1.0];
        if let Some(d) = delta.filter(|d| *d > 0.0 && d.is_finite()) {
            vals.extend([1.0 / (1.0 + d), 1.0 + d]);
        }
        for r in rows {
            vals.push(r.ratio);
            if let Some((a, b)) = r.ci {
                vals.extend([a, b]);
            }
        }
        let usable = |v: &&f64| v.is_finite() && **v > 0.0;
        let (mut lo, mut hi) = vals
            .iter()
            .filter(usable)
            .fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
        lo = lo.max(DOMAIN_LIMIT.0);
        hi = hi.min(DOMAIN_LIMIT.1);
        // At least a factor of 1.25 wide, and 6 % of the span spare each side.
        let span = (hi / lo).ln().max(1.25f64.ln());
        let mid = (hi.ln() + lo.ln()) / 2.0;
        let half = span / 2.0 * 1.12;
        LogAxis {
            lo: (mid - half).exp(),
            hi: (mid + half).exp(),
        }
    }

    /// The x coordinate of `v`, clamped to the plot area.
    pub fn x(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        PLOT_X0 + (v / self.lo).ln() / (self.hi / self.lo).ln() * (PLOT_X1 - PLOT_X0)
    }

    /// Tick values: 1 always, then round values (1, 1.1, 1.2, 1.25, 1.5, 2,
    /// 2.5, 3, 4, 5, 6, 8 × 10^k) outwards, each at least an eighth of the
    /// axis from the last one kept.
    pub fn ticks(&self) -> Vec<f64> {
        const MANTISSAS: [f64; 12] = [1.0, 1.1, 1.2, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0];
        let mut candidates = Vec::new();
        for k in -5..=5 {
            for m in MANTISSAS {
                let v = m * 10f64.powi(k);
                if v >= self.lo && v <= self.hi {
                    candidates.push(v);
                }
            }
        }
        candidates.sort_by(f64::total_cmp);
        let gap = (self.hi / self.lo).ln() / 8.0;
        let mut out = vec![1.0];
        let mut last = 1.0f64;
        for v in candidates.iter().filter(|v| **v > 1.0) {
            if (v / last).ln() >= gap * 0.999 {
                out.push(*v);
                last = *v;
            }
        }
        last = 1.0;
        for v in candidates.iter().rev().filter(|v| **v < 1.0) {
            if (last / v).ln() >= gap * 0.999 {
                out.push(*v);
                last = *v;
            }
        }
        out.sort_by(f64::total_cmp);
        out
    }
}

/// A ratio in three significant digits: "1.23", "0.987", "12.3".
pub fn ratio_text(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        return if x > 0.0 { "∞".into() } else { "–".into() };
    }
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.1 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// A tick's value: [`ratio_text`] without trailing zeros ("0.2", "1", "1.25").
fn tick_text(x: f64) -> String {
    let s = ratio_text(x);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// "1.23 [1.10–1.38]" or "1.23" without an interval.
fn figures(r: &ForestRow) -> String {
    match r.ci {
        Some((a, b)) => format!(
            "{} [{}–{}]",
            ratio_text(r.ratio),
            ratio_text(a),
            ratio_text(b)
        ),
        None => ratio_text(r.ratio),
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= LABEL_CHARS {
        s.to_string()
    } else {
        let mut o: String = s.chars().take(LABEL_CHARS - 1).collect();
        o.push('…');
        o
    }
}

fn drawable(r: &ForestRow) -> bool {
    r.ratio.is_finite() && r.ratio > 0.0
}

/// The forest plot as an SVG document (without an XML declaration, so it
/// can be inlined in HTML as it is).
pub fn svg(f: &Forest) -> String {
    let rows: Vec<&ForestRow> = f.rows.iter().filter(|r| drawable(r)).collect();
    let axis = LogAxis::fitting(&rows, f.delta);
    let lines = layout(&rows);
    let bottom = TOP + lines.len() as f64 * ROW_H;
    let height = bottom + 58.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"forest\" role=\"img\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" aria-labelledby=\"{id}-title {id}-desc\">\n<title id=\"{id}-title\">{}</title>\n<desc id=\"{id}-desc\">{}</desc>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
        esc_html(&f.title),
        esc_html(&description(f, rows.len())),
        id = esc_html(&f.id),
    );
    let _ = writeln!(
        s,
        "<text x=\"10\" y=\"22\" {FONT} font-size=\"16\" font-weight=\"bold\" fill=\"#1a1a1a\">{}</text>",
        esc_html(&f.title)
    );
    legend(&mut s, f);
    grid_and_band(&mut s, f, &axis, bottom);
    for (i, line) in lines.iter().enumerate() {
        let y = TOP + i as f64 * ROW_H + ROW_H / 2.0;
        match line {
            Line::Group(g) => {
                let _ = writeln!(
                    s,
                    "<text class=\"group\" x=\"10\" y=\"{:.1}\" {FONT} font-size=\"13\" font-weight=\"bold\" fill=\"#1a1a1a\">{}</text>",
                    y + 4.5,
                    esc_html(&shorten(g))
                );
            }
            Line::Row(r) => mark(&mut s, r, &axis, y),
        }
    }
    x_axis(&mut s, f, &axis, bottom);
    s.push_str("</svg>\n");
    s
}

/// A line of the picture: a group's heading or one comparison.
enum Line<'a> {
    Group(&'a str),
    Row(&'a ForestRow),
}

/// Rows under a heading each time the group changes.
fn layout<'a>(rows: &[&'a ForestRow]) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    let mut current: Option<&str> = None;
    for r in rows {
        if current != Some(r.group.as_str()) && !r.group.is_empty() {
            out.push(Line::Group(&r.group));
        }
        current = Some(r.group.as_str());
        out.push(Line::Row(r));
    }
    out
}

/// What the picture shows, in words, for screen readers.
fn description(f: &Forest, drawn: usize) -> String {
    let mut d = format!(
        "{drawn} comparison(s): {} on a log axis, whiskers: {}",
        f.axis, f.interval
    );
    if let Some(delta) = f.delta.filter(|d| *d > 0.0) {
        let _ = write!(
            d,
            "; shaded: the equivalence band {}–{}",
            ratio_text(1.0 / (1.0 + delta)),
            ratio_text(1.0 + delta)
        );
    }
    let counts: Vec<String> = Outcome::ALL
        .iter()
        .map(|o| {
            let n = f
                .rows
                .iter()
                .filter(|r| drawable(r) && r.outcome == *o)
                .count();
            format!("{n} {}", o.word())
        })
        .collect();
    let _ = write!(d, "; {}", counts.join(", "));
    let left_out = f.rows.len() - drawn;
    if left_out > 0 {
        let _ = write!(d, "; {left_out} without a ratio left out");
    }
    d.push('.');
    d
}

/// The legend line under the title: one glyph and word per outcome, the band.
fn legend(s: &mut String, f: &Forest) {
    let y = 44.0;
    let mut x = 14.0;
    for o in Outcome::ALL {
        s.push_str(&o.glyph(x, y - 4.0));
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{y:.1}\" {FONT} font-size=\"12\" fill=\"#333333\">{}</text>",
            x + 10.0,
            o.word()
        );
        x += 24.0 + 7.0 * o.word().len() as f64 + 8.0;
    }
    if f.delta.is_some_and(|d| d > 0.0) {
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"14\" height=\"10\" fill=\"#0072b2\" fill-opacity=\"0.14\"/><text x=\"{:.1}\" y=\"{y:.1}\" {FONT} font-size=\"12\" fill=\"#333333\">band: ±δ = {} %</text>",
            y - 9.0,
            x + 18.0,
            f.delta.map_or(String::new(), |d| tick_text(d * 100.0))
        );
        x += 130.0;
    }
    let _ = writeln!(
        s,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" {FONT} font-size=\"12\" fill=\"#333333\">whisker: {}</text>",
        esc_html(&f.interval)
    );
}

/// Faint grid lines at the ticks, the shaded band and the line at 1.
fn grid_and_band(s: &mut String, f: &Forest, axis: &LogAxis, bottom: f64) {
    let top = TOP - 4.0;
    for t in axis.ticks() {
        let x = axis.x(t);
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"#e6e6e6\"/>"
        );
    }
    if let Some(d) = f.delta.filter(|d| *d > 0.0 && d.is_finite()) {
        let (a, b) = (axis.x(1.0 / (1.0 + d)), axis.x(1.0 + d));
        let _ = writeln!(
            s,
            "<rect class=\"band\" x=\"{a:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#0072b2\" fill-opacity=\"0.14\"><title>equivalence band: {}–{} (δ = {} %)</title></rect>",
            b - a,
            bottom - top,
            ratio_text(1.0 / (1.0 + d)),
            ratio_text(1.0 + d),
            ratio_text(d * 100.0)
        );
    }
    let x1 = axis.x(1.0);
    let _ = writeln!(
        s,
        "<line class=\"one\" x1=\"{x1:.1}\" y1=\"{top:.1}\" x2=\"{x1:.1}\" y2=\"{bottom:.1}\" stroke=\"#444444\" stroke-dasharray=\"4 3\"/>"
    );
}

/// One comparison's label, whisker, point and figures.
fn mark(s: &mut String, r: &ForestRow, axis: &LogAxis, y: f64) {
    let c = r.outcome.colour();
    let whole = if r.group.is_empty() {
        r.label.clone()
    } else {
        format!("{}: {}", r.group, r.label)
    };
    let _ = writeln!(
        s,
        "<g class=\"mark {}\"><title>{}: {} ({})</title>",
        r.outcome.word(),
        esc_html(&whole),
        esc_html(&figures(r)),
        r.outcome.word()
    );
    let _ = writeln!(
        s,
        "<text x=\"22\" y=\"{:.1}\" {FONT} font-size=\"12\" fill=\"#1a1a1a\">{}</text>",
        y + 4.0,
        esc_html(&shorten(&r.label))
    );
    if let Some((lo, hi)) = r.ci {
        let (xa, xb) = (axis.x(lo), axis.x(hi));
        let _ = writeln!(
            s,
            "<line x1=\"{xa:.1}\" y1=\"{y:.1}\" x2=\"{xb:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"2\"/>"
        );
        for (v, x, dir) in [(lo, xa, -1.0), (hi, xb, 1.0)] {
            if v.is_finite() && v > axis.lo && v < axis.hi {
                let _ = writeln!(
                    s,
                    "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"2\"/>",
                    y - 5.0,
                    y + 5.0
                );
            } else {
                // Beyond the axis (0, infinity or past its limit): an arrowhead at the edge.
                let _ = writeln!(
                    s,
                    "<path d=\"M{:.1},{:.1} L{x:.1},{y:.1} L{:.1},{:.1}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
                    x - dir * 6.0,
                    y - 4.0,
                    x - dir * 6.0,
                    y + 4.0
                );
            }
        }
    }
    s.push_str(&r.outcome.glyph(axis.x(r.ratio), y));
    let _ = writeln!(
        s,
        "\n<text x=\"{:.1}\" y=\"{:.1}\" {FONT} font-size=\"12\" fill=\"#1a1a1a\">{} <tspan fill=\"{c}\" font-weight=\"bold\">{}</tspan></text>\n</g>",
        PLOT_X1 + 12.0,
        y + 4.0,
        esc_html(&figures(r)),
        r.outcome.word()
    );
}

/// The axis line, its ticks and labels, and what it shows.
fn x_axis(s: &mut String, f: &Forest, axis: &LogAxis, bottom: f64) {
    let y = bottom + 4.0;
    let _ = writeln!(
        s,
        "<line x1=\"{PLOT_X0:.1}\" y1=\"{y:.1}\" x2=\"{PLOT_X1:.1}\" y2=\"{y:.1}\" stroke=\"#5a5a5a\"/>"
    );
    for t in axis.ticks() {
        let x = axis.x(t);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#5a5a5a\"/><text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" {FONT} font-size=\"12\" text-anchor=\"middle\" fill=\"#333333\">{}</text>",
            y + 5.0,
            y + 19.0,
            tick_text(t)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} font-size=\"13\" text-anchor=\"middle\" fill=\"#1a1a1a\">{} (log scale)</text>",
        (PLOT_X0 + PLOT_X1) / 2.0,
        y + 40.0,
        esc_html(&f.axis)
    );
}

/// A study verdict's outcome from the leader's side: a winner is `Better`
/// when the ratio (leader over runner-up, in the better direction) is at
/// least 1, `Worse` otherwise (a named pair whose baseline won).
pub fn study_outcome(v: &StudyVerdict) -> Outcome {
    match v.outcome() {
        VerdictOutcome::Winner if v.ratio.is_some_and(|r| r < 1.0) => Outcome::Worse,
        VerdictOutcome::Winner => Outcome::Better,
        VerdictOutcome::Equivalent => Outcome::Equivalent,
        VerdictOutcome::Inconclusive => Outcome::Undecided,
    }
}

/// A study's verdicts as rows: grouped by workload and metric ("keep-alive ·
/// replies/s", in the order the verdicts first name them), labelled "[step]
/// leader vs runner-up", the verdict's own ratio and interval (verdicts
/// without a ratio are left out by [`svg`] and counted).
pub fn study_rows<'a>(verdicts: impl IntoIterator<Item = &'a StudyVerdict>) -> Vec<ForestRow> {
    let mut rows: Vec<ForestRow> = verdicts
        .into_iter()
        .map(|v| {
            let mut label = String::new();
            if let Some(step) = &v.step {
                let _ = write!(label, "[{step}] ");
            }
            let _ = write!(
                label,
                "{} vs {}",
                v.leader.as_deref().unwrap_or("?"),
                v.runner_up.as_deref().unwrap_or("?")
            );
            let metric = v.metric.metric().map_or(v.metric.key(), |m| m.label());
            ForestRow {
                group: format!("{} · {metric}", v.workload),
                label,
                ratio: v.ratio.unwrap_or(f64::NAN),
                ci: v.ratio_ci.map(|[a, b]| (a, b)),
                outcome: study_outcome(v),
            }
        })
        .collect();
    // A group's rows together, groups in the order of their first row (a stable sort).
    let mut order: Vec<String> = Vec::new();
    for r in &rows {
        if !order.contains(&r.group) {
            order.push(r.group.clone());
        }
    }
    rows.sort_by_key(|r| order.iter().position(|g| *g == r.group));
    rows
}

/// The axis words of a study's forest plot.
pub const STUDY_AXIS: &str = "first server ÷ second, > 1: the first is better";

#[cfg(test)]
mod tests;
