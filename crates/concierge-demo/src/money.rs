//! Dollars as the finance, HR and food domains write and read them.

/// Dollars as people write them: `$1,250.50` (from cents).
pub fn dollars(cents: i64) -> String {
    let whole = (cents.unsigned_abs() / 100).to_string();
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${grouped}.{:02}", cents.unsigned_abs() % 100)
}

/// An amount of dollars as whole cents, if it is positive, finite and has
/// at most two decimals' worth of precision that matters.
pub fn cents(amount: f64) -> Option<i64> {
    if !amount.is_finite() || amount <= 0.0 || amount >= 1e13 {
        return None;
    }
    let cents = (amount * 100.0).round();
    ((amount * 100.0 - cents).abs() < 1e-6 && cents >= 1.0).then_some(cents as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_and_cents() {
        assert_eq!(dollars(50_000), "$500.00");
        assert_eq!(dollars(125_050), "$1,250.50");
        assert_eq!(dollars(-2_005), "-$20.05");
        assert_eq!(dollars(7), "$0.07");
        assert_eq!(cents(500.0), Some(50_000));
        assert_eq!(cents(0.1 + 0.2), Some(30));
        assert_eq!(cents(1.005_5), None, "a fraction of a cent");
        assert_eq!(cents(0.0), None);
        assert_eq!(cents(-3.0), None);
        assert_eq!(cents(f64::NAN), None);
    }
}
