//! Number formatting for verdict notes.

/// Formats `x` with three significant digits, keeping trailing zeros ("1.40", "0.0312", "123");
/// numbers of 1000 and more are printed as whole numbers ("12346"). Non-finite values print as
/// "inf", "-inf" or "NaN".
pub fn format_sig3(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).max(0) as usize;
    let s = format!("{x:.decimals$}");
    // Rounding can carry into a new digit (0.09996 -> "0.1000"): drop the now fourth digit.
    let digits = s.chars().filter(|c| c.is_ascii_digit()).count();
    let leading_zeros = s
        .trim_start_matches('-')
        .chars()
        .take_while(|&c| c == '0' || c == '.')
        .filter(|&c| c == '0')
        .count();
    if decimals > 0 && digits - leading_zeros > 3 {
        format!("{x:.prec$}", prec = decimals - 1)
    } else {
        s
    }
}

/// Formats a p value for a note: "< 0.001" below 0.001, otherwise two significant digits
/// without trailing zeros ("0.0031", "0.41", "1").
pub fn format_p(p: f64) -> String {
    if p.is_nan() {
        return "NaN".to_string();
    }
    if p < 0.001 {
        return "< 0.001".to_string();
    }
    let magnitude = p.log10().floor() as i32;
    let decimals = (1 - magnitude).max(0) as usize;
    let s = format!("{p:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(format_sig3(1.3149), "1.31");
        assert_eq!(format_sig3(1.4), "1.40");
        assert_eq!(format_sig3(0.031249), "0.0312");
        assert_eq!(format_sig3(123.4), "123");
        assert_eq!(format_sig3(12345.6), "12346");
        assert_eq!(format_sig3(-2.5), "-2.50");
        assert_eq!(format_sig3(0.0), "0");
        assert_eq!(format_sig3(9.999), "10.0");
        assert_eq!(format_sig3(0.09996), "0.100");
        assert_eq!(format_sig3(f64::INFINITY), "inf");
    }

    #[test]
    fn p_values() {
        assert_eq!(format_p(0.0004), "< 0.001");
        assert_eq!(format_p(0.003), "0.003");
        assert_eq!(format_p(0.00314), "0.0031");
        assert_eq!(format_p(0.41), "0.41");
        assert_eq!(format_p(0.4), "0.4");
        assert_eq!(format_p(1.0), "1");
        assert_eq!(format_p(0.999), "1");
    }
}
