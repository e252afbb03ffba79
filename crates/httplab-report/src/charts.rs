//! SVG charts drawn with plotters' SVG backend (no fonts needed: text is
//! emitted as `<text>` elements in a generic sans-serif family).
//!
//! - [`reply_rate_chart`]: reply rate vs demanded request rate (seed 002's
//!   chart 1, left), the ideal diagonal, sample min–max whiskers and the
//!   saturation point marked.
//! - [`response_time_chart`]: p50 and p99 vs demanded rate (log scale), SLO and
//!   saturation marked (seed 002's chart 1, right).
//! - [`errors_chart`]: failed calls (errors and 5xx replies, % of calls) vs demanded rate.
//! - [`spectrum_chart`]: HDR percentile spectrum on a log "nines" axis.
//! - [`timeseries_chart`]: per-interval reply rate and latency of one run.
//!
//! Several sweep targets (servers) are overlaid in one chart. Client-bound runs
//! are circled and crossed in red on every chart, with a legend entry.

use crate::analysis::StepMetrics;
use crate::data::{RunItem, SweepSeries};
use anyhow::Result;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Default chart size, pixels.
pub const SIZE: (u32, u32) = (980, 450);
/// Width kept right of the plot for the legend, pixels.
const LEGEND_W: u32 = 280;
const FONT: &str = "sans-serif";
/// Okabe–Ito colour-blind-safe palette (yellow left out: too light on white).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(60, 60, 60),
];
/// Colour of the client-bound marker.
pub const CLIENT_BOUND_COLOR: RGBColor = RGBColor(200, 0, 40);
const GRID: RGBColor = RGBColor(226, 226, 226);
const FAINT: RGBColor = RGBColor(244, 244, 244);
const AXIS: RGBColor = RGBColor(90, 90, 90);

/// The colour of the n-th series.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Short number for axis labels: 950, 1.5k, 20k, 1.2M.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e3 {
        format!("{}k", trim(format!("{:.2}", v / 1e3)))
    } else if a >= 1.0 || a == 0.0 {
        trim(format!("{:.1}", v))
    } else {
        trim(format!("{:.3}", v))
    }
}

/// Latency label: 250 µs, 1.5 ms, 2 s.
pub fn ms_label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 1000.0 {
        format!("{} s", si(v / 1000.0))
    } else if v >= 1.0 {
        format!("{} ms", si(v))
    } else {
        format!("{} µs", si(v * 1000.0))
    }
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Glyph {
    /// Solid line (colour, width).
    Line(RGBColor, u32),
    /// Dashed line (colour, width, dash length).
    Dashed(RGBColor, u32, u32),
    /// Filled triangle.
    Triangle(RGBColor),
    /// The client-bound ring and cross.
    ClientBound,
}

/// A legend drawn in the margin right of the plot (plotters clips legend
/// samples to the plotting area, so it is drawn here on the canvas).
#[derive(Debug, Default)]
struct Legend(Vec<(String, Glyph)>);

impl Legend {
    fn push(&mut self, label: impl Into<String>, g: Glyph) {
        self.0.push((label.into(), g));
    }

    fn draw(&self, area: &DrawingArea<SVGBackend, Shift>, x0: i32, y0: i32) -> Result<()> {
        let style = (FONT, 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        // The client-bound entry goes last, whenever it was added.
        let ordered: Vec<&(String, Glyph)> = self
            .0
            .iter()
            .filter(|(_, g)| !matches!(g, Glyph::ClientBound))
            .chain(
                self.0
                    .iter()
                    .filter(|(_, g)| matches!(g, Glyph::ClientBound)),
            )
            .collect();
        for (i, (label, g)) in ordered.into_iter().enumerate() {
            let y = y0 + 22 * i as i32;
            match *g {
                Glyph::Line(c, w) => area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + 26, y)],
                    c.stroke_width(w),
                ))?,
                Glyph::Dashed(c, w, d) => area.draw(&DashedPathElement::new(
                    vec![(x0, y), (x0 + 26, y)],
                    d.min(8),
                    3,
                    c.stroke_width(w),
                ))?,
                Glyph::Triangle(c) => {
                    area.draw(&TriangleMarker::new((x0 + 13, y), 6, c.filled()))?
                }
                Glyph::ClientBound => {
                    area.draw(&Circle::new(
                        (x0 + 13, y),
                        7,
                        CLIENT_BOUND_COLOR.stroke_width(2),
                    ))?;
                    area.draw(&Cross::new(
                        (x0 + 13, y),
                        4,
                        CLIENT_BOUND_COLOR.stroke_width(2),
                    ))?;
                }
            }
            area.draw(&Text::new(label.clone(), (x0 + 34, y), style.clone()))?;
        }
        Ok(())
    }
}

/// Where the legend starts: right of the plot, below the caption.
const LEGEND_X: i32 = (SIZE.0 - LEGEND_W) as i32 + 8;
const LEGEND_Y: i32 = 56;

fn render<F>(size: (u32, u32), draw: F) -> Result<String>
where
    F: FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
{
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(s)
}

fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn x_extent(series: &[SweepSeries]) -> f64 {
    let m = series
        .iter()
        .flat_map(|s| s.metrics.iter().map(|m| m.demanded_req_rate))
        .fold(0.0, f64::max);
    if m > 0.0 {
        m * 1.05
    } else {
        1.0
    }
}

/// Formats one axis label.
type Labeler<V> = dyn Fn(&V) -> String;

/// The frame of a response-time chart against a rate: a linear x axis from
/// 0 to `xmax`, a log y axis from a decade under `lo` to a decade over
/// `hi` (ms), the caption, mesh and labels every such chart shares; with
/// the y axis' floor.
fn log_latency_frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    (xmax, x_desc): (f64, &str),
    (lo, hi, y_desc): (f64, f64, &str),
) -> Result<(LogLatencyChart<'a, 'b>, f64)> {
    let ylo = 10f64.powf((lo * 0.8).log10().floor());
    let yhi = 10f64.powf((hi * 1.3).log10().ceil());
    let mut chart = ChartBuilder::on(root)
        .caption(title, caption_style())
        .margin(14)
        .margin_right(LEGEND_W)
        .x_label_area_size(48)
        .y_label_area_size(74)
        .build_cartesian_2d(0f64..xmax, (ylo..yhi).log_scale())?;
    draw_mesh(
        &mut chart,
        (Some(x_desc), &|v| si(*v)),
        (y_desc, &|v| ms_label(*v)),
    )?;
    Ok((chart, ylo))
}

/// A chart of [`log_latency_frame`].
type LogLatencyChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// The grid, axes and label styles every chart shares; only the axis
/// descriptions and label formatters differ from chart to chart.
fn draw_mesh<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    (x_desc, x_fmt): (Option<&str>, &Labeler<X::ValueType>),
    (y_desc, y_fmt): (&str, &Labeler<Y::ValueType>),
) -> Result<()>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(FAINT)
        .bold_line_style(GRID)
        .axis_style(AXIS);
    if let Some(d) = x_desc {
        mesh.x_desc(d);
    }
    mesh.y_desc(y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()?;
    Ok(())
}

fn caption_style() -> TextStyle<'static> {
    (FONT, 20).into_font().color(&BLACK)
}

/// Draws a "no data" placeholder.
fn empty(root: &DrawingArea<SVGBackend, Shift>, title: &str, msg: &str) -> Result<()> {
    root.draw(&Text::new(title.to_string(), (20, 20), caption_style()))?;
    root.draw(&Text::new(
        msg.to_string(),
        (20, 60),
        (FONT, 15).into_font().color(&AXIS),
    ))?;
    Ok(())
}

fn cb_points(s: &SweepSeries, y: impl Fn(&StepMetrics) -> Option<f64>) -> Vec<(f64, f64)> {
    s.metrics
        .iter()
        .filter(|m| m.client_bound)
        .filter_map(|m| y(m).map(|v| (m.demanded_req_rate, v)))
        .collect()
}

/// Reply rate vs demanded request rate, one line per sweep target.
pub fn reply_rate_chart(series: &[SweepSeries]) -> Result<String> {
    render(SIZE, |root| {
        let mut legend = Legend::default();
        let title = "Reply rate vs demanded request rate";
        if series.iter().all(|s| s.metrics.is_empty()) {
            return empty(root, title, "no sweep steps");
        }
        let xmax = x_extent(series);
        // The y axis fits the replies (and the demand while it is met).
        let ymax = nice_max(
            series
                .iter()
                .flat_map(|s| {
                    s.metrics.iter().map(|m| {
                        m.reply_rate
                            .max(m.rep_max)
                            .max(m.demanded_req_rate.min(m.reply_rate * 1.25))
                    })
                })
                .fold(0.0, f64::max)
                * 1.08,
        );
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_style())
            .margin(14)
            .margin_right(LEGEND_W)
            .x_label_area_size(48)
            .y_label_area_size(68)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
        draw_mesh(
            &mut chart,
            (Some("demanded request rate (requests/s)"), &|v| si(*v)),
            ("reply rate (replies/s)", &|v| si(*v)),
        )?;
        let ideal = vec![(0.0, 0.0), (xmax.min(ymax), xmax.min(ymax))];
        chart.draw_series(DashedLineSeries::new(
            ideal,
            6,
            5,
            RGBColor(160, 160, 160).stroke_width(1),
        ))?;
        legend.push(
            "ideal (reply = demand)",
            Glyph::Dashed(RGBColor(160, 160, 160), 1, 5),
        );
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = s
                .metrics
                .iter()
                .map(|m| (m.demanded_req_rate, m.reply_rate))
                .collect();
            // Whiskers: min..max of the per-interval samples.
            chart.draw_series(s.metrics.iter().filter(|m| m.rep_samples > 0).map(|m| {
                PathElement::new(
                    vec![
                        (m.demanded_req_rate, m.rep_min),
                        (m.demanded_req_rate, m.rep_max),
                    ],
                    c.mix(0.45).stroke_width(1),
                )
            }))?;
            chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            legend.push(s.label.clone(), Glyph::Line(c, 2));
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            mark_saturation(&mut chart, s, c, i, false, &mut legend)?;
        }
        draw_client_bound(
            &mut chart,
            series
                .iter()
                .flat_map(|s| cb_points(s, |m| Some(m.reply_rate)))
                .collect(),
            &mut legend,
        )?;
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// Draws the max-sustainable line (dashed, series colour, labelled) and the
/// knee (triangle) of one series on a chart whose y runs up to `ytop`.
fn mark_saturation<'a, 'b: 'a, Y>(
    chart: &mut ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    s: &SweepSeries,
    c: RGBColor,
    index: usize,
    log: bool,
    legend: &mut Legend,
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    let (ylo, yhi) = {
        let r = chart.y_range();
        (r.start, r.end)
    };
    if let Some(x) = s.max_req_rate() {
        chart.draw_series(DashedLineSeries::new(
            vec![(x, ylo), (x, yhi)],
            8,
            4,
            c.stroke_width(2),
        ))?;
        legend.push(
            format!("{}: max sustainable {}/s", s.label, si(x)),
            Glyph::Dashed(c, 2, 6),
        );
    }
    if let Some(k) = s.knee_req_rate() {
        let y = y_at_fraction(ylo, yhi, 0.035, log);
        chart.draw_series(std::iter::once(TriangleMarker::new((k, y), 7, c.filled())))?;
        legend.push(format!("{}: knee {}/s", s.label, si(k)), Glyph::Triangle(c));
    }
    let _ = index;
    Ok(())
}

fn y_at_fraction(lo: f64, hi: f64, f: f64, log: bool) -> f64 {
    if log && lo > 0.0 {
        (lo.ln() + (hi.ln() - lo.ln()) * f).exp()
    } else {
        lo + (hi - lo) * f
    }
}

/// Red ring and cross at each client-bound point, with one legend entry.
fn draw_client_bound<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    pts: Vec<(f64, f64)>,
    legend: &mut Legend,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    if pts.is_empty() {
        return Ok(());
    }
    chart.draw_series(
        pts.iter()
            .map(|p| Circle::new(*p, 8, CLIENT_BOUND_COLOR.stroke_width(2))),
    )?;
    if !legend
        .0
        .iter()
        .any(|(_, g)| matches!(g, Glyph::ClientBound))
    {
        legend.push("client-bound run (generator limit)", Glyph::ClientBound);
    }
    chart.draw_series(
        pts.iter()
            .map(|p| Cross::new(*p, 5, CLIENT_BOUND_COLOR.stroke_width(2))),
    )?;
    Ok(())
}

/// Response time (p50 solid, p99 dashed) vs demanded request rate, log scale,
/// with the SLO and the saturation point marked.
pub fn response_time_chart(series: &[SweepSeries]) -> Result<String> {
    render(SIZE, |root| {
        let mut legend = Legend::default();
        let title = "Response time vs demanded request rate";
        let vals: Vec<f64> = series
            .iter()
            .flat_map(|s| s.metrics.iter().flat_map(|m| [m.p50_ms, m.p99_ms]))
            .flatten()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        if vals.is_empty() {
            return empty(root, title, "no latency data");
        }
        let slo = series.iter().map(|s| s.slo_ms).fold(0.0, f64::max);
        let lo = vals
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(0.001);
        let hi = vals.iter().copied().fold(0.0, f64::max).max(slo);
        let xmax = x_extent(series);
        let (mut chart, ylo) = log_latency_frame(
            root,
            title,
            (xmax, "demanded request rate (requests/s)"),
            (lo, hi, "response time (log scale)"),
        )?;
        if slo > 0.0 {
            chart.draw_series(DashedLineSeries::new(
                vec![(0.0, slo), (xmax, slo)],
                3,
                4,
                RGBColor(120, 120, 120).stroke_width(1),
            ))?;
            legend.push(
                format!("p99 SLO ({})", ms_label(slo)),
                Glyph::Dashed(RGBColor(120, 120, 120), 1, 3),
            );
        }
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let p50: Vec<(f64, f64)> = s
                .metrics
                .iter()
                .filter_map(|m| m.p50_ms.map(|v| (m.demanded_req_rate, v.max(ylo))))
                .collect();
            let p99: Vec<(f64, f64)> = s
                .metrics
                .iter()
                .filter_map(|m| m.p99_ms.map(|v| (m.demanded_req_rate, v.max(ylo))))
                .collect();
            chart.draw_series(LineSeries::new(p50.clone(), c.stroke_width(2)))?;
            legend.push(format!("{} p50", s.label), Glyph::Line(c, 2));
            chart.draw_series(p50.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            chart.draw_series(DashedLineSeries::new(p99.clone(), 7, 4, c.stroke_width(2)))?;
            legend.push(format!("{} p99", s.label), Glyph::Dashed(c, 2, 6));
            chart.draw_series(
                p99.iter()
                    .map(|p| Rectangle::new([(p.0, p.1), (p.0, p.1)], c.stroke_width(5))),
            )?;
            mark_saturation(&mut chart, s, c, i, true, &mut legend)?;
        }
        draw_client_bound(
            &mut chart,
            series
                .iter()
                .flat_map(|s| cb_points(s, |m| m.p99_ms.map(|v| v.max(ylo))))
                .collect(),
            &mut legend,
        )?;
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// One staged run's p50 and p99 (corrected) per stage against the
/// stage's mean offered rate (`httplab load --stages`): the response-time
/// curve of a sweep, from one run.
pub fn stage_latency_chart(label: &str, stages: &[httplab_model::StageResult]) -> Result<String> {
    render(SIZE, |root| {
        let title = format!("Response time per stage vs offered rate — {label}");
        let pts = |pct: f64| -> Vec<(f64, f64)> {
            stages
                .iter()
                .filter_map(|s| s.response.at(pct).map(|v| (s.offered_rate(), v)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect()
        };
        let (p50, p99) = (pts(50.0), pts(99.0));
        if p99.is_empty() {
            return empty(root, &title, "no stage has replies");
        }
        let lo = p50
            .iter()
            .chain(&p99)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min)
            .max(0.001);
        let hi = p99.iter().map(|p| p.1).fold(0.0, f64::max);
        let xmax = nice_max(stages.iter().map(|s| s.offered_rate()).fold(0.0, f64::max) * 1.05);
        let (mut chart, _) = log_latency_frame(
            root,
            &title,
            (xmax, "offered rate of the stage (mean, per s)"),
            (lo, hi, "response time, corrected (log scale)"),
        )?;
        let mut legend = Legend::default();
        let (c50, c99) = (color(0), color(1));
        chart.draw_series(p50.iter().map(|p| Circle::new(*p, 4, c50.filled())))?;
        legend.push("p50 of a stage", Glyph::Line(c50, 2));
        chart.draw_series(p99.iter().map(|p| Circle::new(*p, 4, c99.filled())))?;
        legend.push("p99 of a stage", Glyph::Line(c99, 2));
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// Failed calls (errors and 5xx replies, % of calls: the model's one definition) vs demanded
/// request rate.
pub fn errors_chart(series: &[SweepSeries]) -> Result<String> {
    render(SIZE, |root| {
        let mut legend = Legend::default();
        let title = "Errors vs demanded request rate";
        if series.iter().all(|s| s.metrics.is_empty()) {
            return empty(root, title, "no sweep steps");
        }
        let xmax = x_extent(series);
        let emax = series
            .iter()
            .flat_map(|s| s.metrics.iter().map(|m| m.error_pct))
            .fold(0.0, f64::max);
        let ymax = nice_max((emax * 1.1).max(1.0));
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_style())
            .margin(14)
            .margin_right(LEGEND_W)
            .x_label_area_size(48)
            .y_label_area_size(68)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
        draw_mesh(
            &mut chart,
            (Some("demanded request rate (requests/s)"), &|v| si(*v)),
            ("failed operations (% of attempts)", &|v| {
                format!("{}%", si(*v))
            }),
        )?;
        chart.draw_series(DashedLineSeries::new(
            vec![(0.0, 0.1), (xmax, 0.1)],
            3,
            4,
            RGBColor(120, 120, 120).stroke_width(1),
        ))?;
        legend.push(
            "0.1 % threshold",
            Glyph::Dashed(RGBColor(120, 120, 120), 1, 3),
        );
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = s
                .metrics
                .iter()
                .map(|m| (m.demanded_req_rate, m.error_pct))
                .collect();
            chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            legend.push(s.label.clone(), Glyph::Line(c, 2));
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            mark_saturation(&mut chart, s, c, i, false, &mut legend)?;
        }
        draw_client_bound(
            &mut chart,
            series
                .iter()
                .flat_map(|s| cb_points(s, |m| Some(m.error_pct)))
                .collect(),
            &mut legend,
        )?;
        if emax == 0.0 {
            chart.draw_series(std::iter::once(Text::new(
                "no errors at any rate",
                (xmax * 0.62, ymax * 0.5),
                (FONT, 15).into_font().color(&AXIS),
            )))?;
        }
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// One curve of a percentile spectrum.
#[derive(Debug, Clone)]
pub struct SpectrumCurve {
    /// Legend label.
    pub label: String,
    /// (percentile 0–100, latency ms), increasing percentile.
    pub points: Vec<(f64, f64)>,
    /// Drawn with the client-bound marker.
    pub client_bound: bool,
    /// Number of recorded values (sets how deep the percentile axis goes).
    pub count: u64,
}

/// The percentile spectrum of a run's response time (corrected), from its
/// HDR histogram when present, else from the stored percentiles.
pub fn spectrum_of(label: &str, run: &httplab_model::RunResult) -> SpectrumCurve {
    let lat = if run.latency.response.count > 0 {
        &run.latency.response
    } else {
        &run.latency.response_uncorrected
    };
    let mut points = Vec::new();
    if let Ok(Some(h)) = lat.histogram() {
        let min_us = h.min_nz();
        points.push((0.0, min_us as f64 / 1000.0));
        for v in h.iter_quantiles(5) {
            let q = v.quantile_iterated_to();
            if q >= 1.0 {
                break;
            }
            let us = h.highest_equivalent(v.value_iterated_to()).max(min_us);
            points.push((q * 100.0, us as f64 / 1000.0));
        }
        points.push((100.0, h.max() as f64 / 1000.0));
    } else {
        points.push((0.0, lat.min_ms));
        for p in &lat.percentiles {
            points.push((p.pct, p.ms));
        }
        if lat.count > 0 {
            points.push((100.0, lat.max_ms));
        }
    }
    points.retain(|p| p.0.is_finite() && p.1.is_finite());
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points.dedup_by(|a, b| a.0 == b.0);
    SpectrumCurve {
        label: if run.self_check.client_bound {
            format!("{label} [client-bound]")
        } else {
            label.to_string()
        },
        points,
        client_bound: run.self_check.client_bound,
        count: lat.count,
    }
}

/// The "nines" transform: percentile → 1 / (1 − p).
fn nines(pct: f64, cap: f64) -> f64 {
    let q = (pct / 100.0).min(1.0);
    if q >= 1.0 {
        cap
    } else {
        (1.0 / (1.0 - q)).min(cap)
    }
}

/// HDR percentile spectrum: latency (log) vs percentile on a log "nines" axis.
/// The maximum (p100) is drawn at the right edge.
pub fn spectrum_chart(curves: &[SpectrumCurve], title: &str) -> Result<String> {
    render(SIZE, |root| {
        let mut legend = Legend::default();
        let vals: Vec<f64> = curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .filter(|v| *v > 0.0)
            .collect();
        if vals.is_empty() {
            return empty(root, title, "no latency histogram");
        }
        // Right edge: the resolution of the largest sample (1 / count), ≤ 10^6.
        let count = curves.iter().map(|c| c.count).max().unwrap_or(0).max(100);
        let cap = 10f64.powf((count as f64).log10().ceil()).min(1e6);
        let lo = vals
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(0.001);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let ylo = 10f64.powf((lo * 0.9).log10().floor());
        let yhi = 10f64.powf((hi * 1.1).log10().ceil());
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_style())
            .margin(14)
            .margin_right(LEGEND_W)
            .x_label_area_size(48)
            .y_label_area_size(74)
            .build_cartesian_2d((1f64..cap).log_scale(), (ylo..yhi).log_scale())?;
        draw_mesh(
            &mut chart,
            (Some("percentile"), &|v| {
                let p = 100.0 * (1.0 - 1.0 / v);
                if p <= 0.0 {
                    "0%".into()
                } else {
                    let s = format!("{p:.4}");
                    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
                }
            }),
            ("response time (log scale)", &|v| ms_label(*v)),
        )?;
        for (i, c) in curves.iter().enumerate() {
            let col = color(i);
            let pts: Vec<(f64, f64)> = c
                .points
                .iter()
                .map(|(p, v)| (nines(*p, cap), v.max(ylo)))
                .collect();
            chart.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?;
            legend.push(c.label.clone(), Glyph::Line(col, 2));
            if c.client_bound {
                if let Some(last) = pts.last() {
                    draw_client_bound(&mut chart, vec![*last], &mut legend)?;
                }
            }
        }
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// Middle of an interval, seconds from the start.
fn mid(i: &httplab_model::Interval) -> f64 {
    (i.t_s - i.len_s / 2.0).max(0.0)
}

/// Per-interval time series of one run: reply rate (top) and p50/p99 response
/// time (bottom) against elapsed time.
pub fn timeseries_chart(item: &RunItem) -> Result<String> {
    let run = item.run;
    render((SIZE.0, 560), |root| {
        let title = format!("Time series — {}", item.label);
        if run.series.is_empty() {
            return empty(root, &title, "no per-interval data in this run");
        }
        // Partial intervals (the tail of a run) give noisy rates: left out.
        let full = run.series.iter().map(|i| i.len_s).fold(0.0, f64::max);
        let series: Vec<httplab_model::Interval> = run
            .series
            .iter()
            .copied()
            .filter(|i| i.len_s >= 0.5 * full)
            .collect();
        let (top, bottom) = root.split_vertically(290);
        let tmax = run
            .series
            .iter()
            .map(|i| i.t_s)
            .fold(0.0, f64::max)
            .max(1e-3);
        timeseries_rates(&top, run, &title, &series, tmax)?;
        timeseries_latency(&bottom, &series, tmax)
    })
}

/// The top of [`timeseries_chart`]: reply rate, the demanded rate dashed,
/// errors per second when there were any, the client-bound mark.
fn timeseries_rates(
    top: &DrawingArea<SVGBackend, Shift>,
    run: &httplab_model::RunResult,
    title: &str,
    series: &[httplab_model::Interval],
    tmax: f64,
) -> Result<()> {
    let mut legend = Legend::default();
    let calls = run.config.num_calls.unwrap_or(1).max(1) as f64;
    let demanded = run.config.rate.map(|r| r * calls);
    let rmax = nice_max(
        series
            .iter()
            .map(|i| {
                let e = if i.len_s > 0.0 {
                    i.errors as f64 / i.len_s
                } else {
                    0.0
                };
                i.reply_rate.max(e)
            })
            .fold(demanded.unwrap_or(0.0), f64::max)
            * 1.1,
    );
    let cap = if run.self_check.client_bound {
        format!("{title}  [client-bound]")
    } else {
        title.to_string()
    };
    let mut c1 = ChartBuilder::on(top)
        .caption(cap, caption_style())
        .margin(14)
        .margin_right(LEGEND_W)
        .x_label_area_size(30)
        .y_label_area_size(68)
        .build_cartesian_2d(0f64..tmax, 0f64..rmax)?;
    draw_mesh(
        &mut c1,
        (None, &|v| format!("{} s", si(*v))),
        ("replies/s", &|v| si(*v)),
    )?;
    if let Some(d) = demanded {
        c1.draw_series(DashedLineSeries::new(
            vec![(0.0, d), (tmax, d)],
            6,
            5,
            RGBColor(150, 150, 150).stroke_width(1),
        ))?;
        legend.push("demanded", Glyph::Dashed(RGBColor(150, 150, 150), 1, 5));
    }
    let c = color(0);
    c1.draw_series(LineSeries::new(
        series.iter().map(|i| (mid(i), i.reply_rate)),
        c.stroke_width(2),
    ))?;
    legend.push("reply rate", Glyph::Line(c, 2));
    let errs: Vec<(f64, f64)> = series
        .iter()
        .filter(|i| i.len_s > 0.0)
        .map(|i| (mid(i), i.errors as f64 / i.len_s))
        .collect();
    if series.iter().any(|i| i.errors > 0) {
        let e = color(1);
        c1.draw_series(LineSeries::new(errs, e.stroke_width(2)))?;
        legend.push("errors/s", Glyph::Line(e, 2));
    }
    if run.self_check.client_bound {
        let m = series[series.len() / 2];
        draw_client_bound(&mut c1, vec![(mid(&m), m.reply_rate)], &mut legend)?;
    }
    legend.draw(top, LEGEND_X, LEGEND_Y)
}

/// The bottom of [`timeseries_chart`]: p50 and p99 response time per
/// interval on a log scale (they often differ by orders of magnitude).
fn timeseries_latency(
    bottom: &DrawingArea<SVGBackend, Shift>,
    series: &[httplab_model::Interval],
    tmax: f64,
) -> Result<()> {
    let mut legend2 = Legend::default();
    // Latency on a log scale: p50 and p99 often differ by orders of magnitude.
    let lat: Vec<f64> = series
        .iter()
        .flat_map(|i| [i.p50_ms, i.p99_ms])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lmin = lat.iter().copied().fold(f64::INFINITY, f64::min);
    let lmax = lat.iter().copied().fold(0.0, f64::max);
    let (ylo, yhi) = if lat.is_empty() {
        (0.001, 1.0)
    } else {
        (
            10f64.powf((lmin * 0.9).max(1e-4).log10().floor()),
            10f64.powf((lmax * 1.1).log10().ceil()),
        )
    };
    let mut c2 = ChartBuilder::on(bottom)
        .margin(14)
        .margin_right(LEGEND_W)
        .x_label_area_size(44)
        .y_label_area_size(68)
        .build_cartesian_2d(0f64..tmax, (ylo..yhi).log_scale())?;
    draw_mesh(
        &mut c2,
        (Some("elapsed time"), &|v| format!("{} s", si(*v))),
        ("response time (log)", &|v| ms_label(*v)),
    )?;
    let c50 = color(0);
    let c99 = color(1);
    c2.draw_series(LineSeries::new(
        series.iter().map(|i| (mid(i), i.p50_ms.max(ylo))),
        c50.stroke_width(2),
    ))?;
    legend2.push("p50", Glyph::Line(c50, 2));
    c2.draw_series(LineSeries::new(
        series.iter().map(|i| (mid(i), i.p99_ms.max(ylo))),
        c99.stroke_width(2),
    ))?;
    legend2.push("p99", Glyph::Line(c99, 2));
    legend2.draw(bottom, LEGEND_X, 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(20000.0), "20k");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(250.0), "250");
        assert_eq!(ms_label(0.25), "250 µs");
        assert_eq!(ms_label(1500.0), "1.5 s");
        assert_eq!(nice_max(7.3), 8.0);
        assert_eq!(nice_max(1000.0), 1000.0);
    }
}

/// One bar of [`estimate_bars`]: a mean over repetitions and its 95 % CI.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateBar {
    /// Server (or other category) name.
    pub label: String,
    /// Mean.
    pub mean: f64,
    /// 95 % confidence interval of the mean, when known (n ≥ 2).
    pub ci: Option<(f64, f64)>,
    /// The load generator limited this figure (it is a bound).
    pub client_bound: bool,
}

/// One point of an [`EstimateSeries`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EstimatePoint {
    /// Mean.
    pub mean: f64,
    /// 95 % confidence interval of the mean, when known.
    pub ci: Option<(f64, f64)>,
    /// The load generator limited this figure.
    pub client_bound: bool,
}

/// One line of [`estimate_lines`]: a value with its CI per step (None: no data).
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateSeries {
    /// Series name (a server).
    pub label: String,
    /// Per step.
    pub points: Vec<Option<EstimatePoint>>,
}

/// A vertical 95 % CI whisker with caps at `x`.
fn draw_whisker<'a, 'b: 'a>(
    chart: &mut ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    x: f64,
    (lo, hi): (f64, f64),
    c: RGBColor,
) -> Result<()> {
    let st = c.stroke_width(2);
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(x, lo), (x, hi)],
        st,
    )))?;
    for y in [lo, hi] {
        chart.draw_series(std::iter::once(
            EmptyElement::at((x, y)) + PathElement::new(vec![(-6, 0), (6, 0)], st),
        ))?;
    }
    Ok(())
}

/// Bars of means with 95 % CI whiskers, one per category (the study's
/// per-workload chart). Client-bound bars are hatched in the marker colour
/// and labelled "≥": their true value may be higher (or, for times, lower).
pub fn estimate_bars(title: &str, y_desc: &str, bars: &[EstimateBar]) -> Result<String> {
    render(SIZE, |root| {
        if bars.iter().all(|b| !b.mean.is_finite()) {
            return empty(root, title, "no data");
        }
        let top = bars
            .iter()
            .map(|b| b.ci.map_or(b.mean, |c| c.1.max(b.mean)))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let ymax = nice_max(top * 1.08);
        let n = bars.len().max(1) as f64;
        let mut legend = Legend::default();
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_style())
            .margin(14)
            .margin_right(LEGEND_W)
            .x_label_area_size(56)
            .y_label_area_size(74)
            .build_cartesian_2d(0f64..n, 0f64..ymax)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .light_line_style(FAINT)
            .bold_line_style(GRID)
            .axis_style(AXIS)
            .y_desc(y_desc)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .y_label_formatter(&|v| si(*v))
            .draw()?;
        let label_style = (FONT, 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, b) in bars.iter().enumerate() {
            let c = color(i);
            let x = i as f64;
            if b.mean.is_finite() {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x + 0.18, 0.0), (x + 0.82, b.mean)],
                    c.mix(0.8).filled(),
                )))?;
                if b.client_bound {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x + 0.18, 0.0), (x + 0.82, b.mean)],
                        CLIENT_BOUND_COLOR.stroke_width(3),
                    )))?;
                }
                if let Some(ci) = b.ci {
                    draw_whisker(&mut chart, x + 0.5, ci, RGBColor(30, 30, 30))?;
                }
                let text = if b.client_bound {
                    format!("≥ {}", si(b.mean))
                } else {
                    si(b.mean)
                };
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x + 0.5, b.mean))
                        + Text::new(text, (4, -18), (FONT, 12).into_font().color(&AXIS)),
                ))?;
            }
            chart.draw_series(std::iter::once(
                EmptyElement::at((x + 0.5, 0.0))
                    + Text::new(b.label.clone(), (0, 8), label_style.clone()),
            ))?;
        }
        legend.push(
            "mean; whisker: 95 % CI",
            Glyph::Line(RGBColor(30, 30, 30), 2),
        );
        if bars.iter().any(|b| b.client_bound) {
            legend.push(
                "client-bound: a bound, not a measurement",
                Glyph::ClientBound,
            );
        }
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}

/// Lines of means over categorical steps (a study's varied parameter) with
/// 95 % CI whiskers; client-bound points ringed.
pub fn estimate_lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    steps: &[String],
    series: &[EstimateSeries],
) -> Result<String> {
    render(SIZE, |root| {
        let top = series
            .iter()
            .flat_map(|s| s.points.iter().flatten())
            .map(|p| p.ci.map_or(p.mean, |c| c.1.max(p.mean)))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        if top <= 0.0 {
            return empty(root, title, "no data");
        }
        let ymax = nice_max(top * 1.08);
        let n = steps.len().max(1) as f64;
        let mut legend = Legend::default();
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_style())
            .margin(14)
            .margin_right(LEGEND_W)
            .x_label_area_size(56)
            .y_label_area_size(74)
            .build_cartesian_2d(0f64..n, 0f64..ymax)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .light_line_style(FAINT)
            .bold_line_style(GRID)
            .axis_style(AXIS)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .y_label_formatter(&|v| si(*v))
            .draw()?;
        let label_style = (FONT, 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, st) in steps.iter().enumerate() {
            chart.draw_series(std::iter::once(
                EmptyElement::at((i as f64 + 0.5, 0.0))
                    + Text::new(st.clone(), (0, 8), label_style.clone()),
            ))?;
        }
        let mut cb = Vec::new();
        for (si_, s) in series.iter().enumerate() {
            let c = color(si_);
            // Small horizontal offsets keep overlapping whiskers apart.
            let off = (si_ as f64 - series.len() as f64 / 2.0) * 0.03;
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (i as f64 + 0.5 + off, p.mean)))
                .collect();
            chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
            for (i, p) in s.points.iter().enumerate() {
                if let Some(p) = p {
                    if let Some(ci) = p.ci {
                        draw_whisker(&mut chart, i as f64 + 0.5 + off, ci, c)?;
                    }
                    if p.client_bound {
                        cb.push((i as f64 + 0.5 + off, p.mean));
                    }
                }
            }
            legend.push(s.label.clone(), Glyph::Line(c, 2));
        }
        draw_client_bound(&mut chart, cb, &mut legend)?;
        legend.push("whiskers: 95 % CI of the mean", Glyph::Line(AXIS, 1));
        legend.draw(root, LEGEND_X, LEGEND_Y)?;
        Ok(())
    })
}
