//! Numbers and durations as the plan and the report write them.

/// `12` for 12.0, `12.5` otherwise.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `3 min 20 s`, `45 s`.
pub fn human_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

/// `core(s) 0,1` or `any core`.
pub fn cores_text(c: &[usize]) -> String {
    let c: Vec<u32> = c.iter().map(|&x| x as u32).collect();
    httplab_model::study_facts::cores_text(&c)
}

/// `a_b_c` for `a/b.c`: a file name made of any text.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
