use super::*;

fn row(
    group: &str,
    label: &str,
    ratio: f64,
    ci: Option<(f64, f64)>,
    outcome: Outcome,
) -> ForestRow {
    ForestRow {
        group: group.into(),
        label: label.into(),
        ratio,
        ci,
        outcome,
    }
}

fn forest(rows: Vec<ForestRow>) -> Forest {
    Forest {
        id: "t".into(),
        title: "Every comparison".into(),
        axis: "NEW ÷ BASE".into(),
        interval: "95 % CI".into(),
        delta: Some(0.05),
        rows,
    }
}

fn sample() -> Forest {
    forest(vec![
        row(
            "small",
            "[100] a vs b",
            1.3,
            Some((1.1, 1.5)),
            Outcome::Better,
        ),
        row(
            "small",
            "[200] a vs b",
            0.7,
            Some((0.6, 0.8)),
            Outcome::Worse,
        ),
        row(
            "large",
            "a vs b",
            1.01,
            Some((0.98, 1.03)),
            Outcome::Equivalent,
        ),
        row(
            "large",
            "a vs c",
            1.02,
            Some((0.9, 1.2)),
            Outcome::Undecided,
        ),
    ])
}

#[test]
fn one_mark_per_comparison_coloured_by_outcome() {
    let s = svg(&sample());
    assert_eq!(s.matches("<g class=\"mark ").count(), 4);
    for o in Outcome::ALL {
        assert_eq!(
            s.matches(&format!("<g class=\"mark {}\"", o.word()))
                .count(),
            1,
            "{o:?}"
        );
    }
    // Every mark says its figures and its outcome in words.
    assert!(
        s.contains("1.30 [1.10–1.50] <tspan fill=\"#009e73\" font-weight=\"bold\">better</tspan>")
    );
    assert!(s.contains("0.700 [0.600–0.800]"));
}

#[test]
fn groups_are_headed_once_in_order() {
    let s = svg(&sample());
    let groups: Vec<&str> = s
        .match_indices("<text class=\"group\"")
        .map(|(i, _)| {
            let rest = &s[i..];
            let a = rest.find('>').unwrap() + 1;
            let b = rest.find("</text>").unwrap();
            &rest[a..b]
        })
        .collect();
    assert_eq!(groups, ["small", "large"]);
}

#[test]
fn the_svg_is_well_formed_and_accessible() {
    let s = svg(&sample());
    let doc = roxmltree::Document::parse(&s).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("role"), Some("img"));
    assert_eq!(root.attribute("aria-labelledby"), Some("t-title t-desc"));
    let title = root.children().find(|n| n.has_tag_name("title")).unwrap();
    assert_eq!(title.text(), Some("Every comparison"));
    let desc = root.children().find(|n| n.has_tag_name("desc")).unwrap();
    let d = desc.text().unwrap();
    assert!(d.starts_with("4 comparison(s)"), "{d}");
    assert!(
        d.contains("1 better, 1 worse, 1 equivalent, 1 undecided"),
        "{d}"
    );
    assert!(d.contains("equivalence band 0.952–1.05"), "{d}");
    // Every mark has its own title (a tooltip, and read out).
    let marks: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("mark ")))
        .collect();
    assert_eq!(marks.len(), 4);
    assert!(marks
        .iter()
        .all(|m| m.children().any(|c| c.has_tag_name("title"))));
    // No script, no external reference.
    assert!(!s.contains("<script") && !s.contains("href"));
}

#[test]
fn the_axis_is_logarithmic_with_round_ticks_around_one() {
    let axis = LogAxis { lo: 0.5, hi: 2.0 };
    // Symmetric on a log axis: 1/2 and 2 are as far from 1.
    let (a, one, b) = (axis.x(0.5), axis.x(1.0), axis.x(2.0));
    assert!((one - a - (b - one)).abs() < 1e-9);
    assert!((axis.x(4.0) - b).abs() < 1e-9, "clamped to the area");
    let t = axis.ticks();
    assert!(
        t.contains(&1.0) && t.contains(&0.5) && t.contains(&2.0),
        "{t:?}"
    );
    assert!(t.windows(2).all(|w| w[0] < w[1]));
    assert!(t.len() >= 5 && t.len() <= 17, "{t:?}");
    // The picture's ticks are labelled.
    let s = svg(&sample());
    assert!(s.matches("<text class=\"tick\"").count() >= 3);
    assert!(s.contains(">1</text>"), "{s}");
    assert_eq!(tick_text(0.2), "0.2");
    assert_eq!(tick_text(1.25), "1.25");
}

#[test]
fn the_axis_fits_every_interval_and_the_band() {
    let f = sample();
    let rows: Vec<&ForestRow> = f.rows.iter().collect();
    let axis = LogAxis::fitting(&rows, f.delta);
    assert!(axis.lo < 0.6 && axis.hi > 1.5, "{axis:?}");
    // A narrow one is still at least a factor of 1.25 wide.
    let r = row("", "x", 1.0, Some((0.999, 1.001)), Outcome::Equivalent);
    let axis = LogAxis::fitting(&[&r], None);
    assert!(axis.hi / axis.lo >= 1.25, "{axis:?}");
}

#[test]
fn the_band_spans_one_over_one_plus_delta_to_one_plus_delta() {
    let f = sample();
    let s = svg(&f);
    let rows: Vec<&ForestRow> = f.rows.iter().collect();
    let axis = LogAxis::fitting(&rows, f.delta);
    let (a, b) = (axis.x(1.0 / 1.05), axis.x(1.05));
    assert!(s.contains(&format!(
        "<rect class=\"band\" x=\"{a:.1}\" y=\"58.0\" width=\"{:.1}\"",
        b - a
    )));
    let mut none = sample();
    none.delta = None;
    assert!(!svg(&none).contains("class=\"band\""));
}

#[test]
fn labels_are_escaped_and_shortened() {
    let long = "x".repeat(80);
    let f = forest(vec![
        row("<w&1>", "\"a\" vs <b>", 1.2, None, Outcome::Undecided),
        row("w2", &long, 1.2, None, Outcome::Undecided),
    ]);
    let s = svg(&f);
    assert!(s.contains("&lt;w&amp;1&gt;"));
    assert!(s.contains("&quot;a&quot; vs &lt;b&gt;"));
    assert!(!s.contains("<b>") && !s.contains("<w&1>"));
    roxmltree::Document::parse(&s).expect("still well-formed");
    // Drawn shortened, kept whole in the mark's title.
    assert!(s.contains(&format!("{}…", "x".repeat(LABEL_CHARS - 1))));
    assert!(s.contains(&format!("w2: {long}")));
}

#[test]
fn rows_without_a_ratio_are_left_out_and_counted() {
    let f = forest(vec![
        row(
            "w",
            "ok",
            1.1,
            Some((0.0, f64::INFINITY)),
            Outcome::Undecided,
        ),
        row("w", "none", f64::NAN, None, Outcome::Undecided),
        row("w", "zero", 0.0, None, Outcome::Undecided),
    ]);
    let s = svg(&f);
    assert_eq!(s.matches("<g class=\"mark ").count(), 1);
    assert!(s.contains("2 without a ratio left out"));
    // Open interval ends are arrows at the axis' edges, not caps.
    assert_eq!(s.matches("fill=\"none\" stroke=\"#777777\"").count(), 2);
    roxmltree::Document::parse(&s).expect("well-formed");
}

#[test]
fn the_same_input_draws_the_same_bytes() {
    assert_eq!(svg(&sample()), svg(&sample()));
}

#[test]
fn study_verdicts_become_rows_from_the_leaders_side() {
    let v = |outcome, ratio: f64, step: Option<&str>| StudyVerdict {
        workload: "small".into(),
        step: step.map(String::from),
        metric: httplab_model::MetricKey::Known(httplab_model::Metric::ReplyRate),
        outcome: Some(outcome),
        leader: Some("mine".into()),
        runner_up: Some("nginx".into()),
        ratio: Some(ratio),
        ratio_ci: Some([ratio * 0.9, ratio * 1.1]),
        ..Default::default()
    };
    let vs = [
        v(VerdictOutcome::Winner, 1.3, Some("100")),
        v(VerdictOutcome::Winner, 0.7, None),
        v(VerdictOutcome::Equivalent, 1.0, None),
        v(VerdictOutcome::Inconclusive, 1.1, None),
    ];
    let rows = study_rows(&vs);
    let outcomes: Vec<Outcome> = rows.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Better,
            Outcome::Worse,
            Outcome::Equivalent,
            Outcome::Undecided
        ]
    );
    assert_eq!(rows[0].group, "small · replies/s");
    assert_eq!(rows[0].label, "[100] mine vs nginx");
    assert_eq!(rows[0].ci, Some((1.3 * 0.9, 1.3 * 1.1)));
    // A workload's metrics each make a group, their rows together, in order of appearance.
    let mut cpu = v(VerdictOutcome::Winner, 1.2, None);
    cpu.metric = httplab_model::MetricKey::Known(httplab_model::Metric::ServerCpuPerKreq);
    let mixed = [vs[0].clone(), cpu.clone(), vs[1].clone(), cpu];
    let groups: Vec<String> = study_rows(&mixed).into_iter().map(|r| r.group).collect();
    let cpu_group = format!(
        "small · {}",
        httplab_model::Metric::ServerCpuPerKreq.label()
    );
    assert_eq!(
        groups,
        [
            "small · replies/s".to_string(),
            "small · replies/s".to_string(),
            cpu_group.clone(),
            cpu_group
        ]
    );
}
