//! A measured figure kept as the source printed it ("~1550", "5,154 tok/s", "56.6 tok/s",
//! "5,719 ⚠️", "1003.5, 998.6 (two runs)"), with the number read out of it and the marks beside it.

use serde::{Deserialize, Serialize};

/// One measured figure of a record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredValue {
    /// The text as the source shows it.
    pub raw: String,
    /// Every number in the text, in order (several when the source lists runs).
    pub numbers: Vec<f64>,
    /// The mean of `numbers`: the value compared; `None` when the text holds no number.
    pub value: Option<f64>,
    /// `~` or `≈` in the text: the source gives an approximate figure.
    pub approximate: bool,
    /// A warning sign (⚠) beside it: the source itself doubts the figure.
    pub flagged: bool,
    /// The words right after the first number (`tok/s`, `GB/s each direction`); empty if none.
    pub unit: String,
}

/// A JSON number or string, as records carry their figures.
#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for MeasuredValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(d) {
            Ok(NumberOrText::Number(v)) => Ok(MeasuredValue::parse(&v.to_string())),
            Ok(NumberOrText::Text(s)) => Ok(MeasuredValue::parse(&s)),
            Err(_) => Err(serde::de::Error::custom(
                "a measured figure must be a number or a string such as \"5,154 tok/s\"",
            )),
        }
    }
}

impl MeasuredValue {
    /// Reads `raw`: numbers with `,` thousands groups (`5,154`) and decimals; `, ` between
    /// numbers separates runs.
    pub fn parse(raw: &str) -> MeasuredValue {
        let chars: Vec<char> = raw.chars().collect();
        let mut numbers = Vec::new();
        let mut unit = String::new();
        let mut i = 0;
        while i < chars.len() {
            let starts = chars[i].is_ascii_digit()
                || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit));
            if !starts {
                i += 1;
                continue;
            }
            let (v, end) = read_number(&chars, i);
            if numbers.is_empty() {
                unit = unit_after(&chars[end..]);
            }
            if let Some(v) = v {
                numbers.push(v);
            }
            i = end;
        }
        let value =
            (!numbers.is_empty()).then(|| numbers.iter().sum::<f64>() / numbers.len() as f64);
        MeasuredValue {
            raw: raw.to_string(),
            numbers,
            value,
            approximate: raw.contains('~') || raw.contains('≈'),
            flagged: raw.contains('⚠'),
            unit,
        }
    }
}

/// The number starting at `start`, and where it ends. A comma joins digit groups only when exactly
/// three digits follow it (`5,154`), so `1003.5, 998.6` stays two numbers.
fn read_number(chars: &[char], start: usize) -> (Option<f64>, usize) {
    let mut text = String::new();
    let mut i = start;
    let digits_at =
        |j: usize, n: usize| (j..j + n).all(|k| chars.get(k).is_some_and(char::is_ascii_digit));
    let mut seen_point = false;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            text.push(c);
            i += 1;
        } else if c == ','
            && !seen_point
            && !text.is_empty()
            && digits_at(i + 1, 3)
            && !digits_at(i + 4, 1)
        {
            i += 1;
        } else if c == '.' && !seen_point && digits_at(i + 1, 1) {
            seen_point = true;
            text.push(c);
            i += 1;
        } else {
            break;
        }
    }
    (text.parse::<f64>().ok().filter(|v| v.is_finite()), i)
}

/// Words after a number up to the next separator: a comma, a parenthesis, a warning sign or the
/// next number.
fn unit_after(rest: &[char]) -> String {
    let s: String = rest
        .iter()
        .take_while(|c| !matches!(c, ',' | '(' | '⚠' | ';') && !c.is_ascii_digit())
        .filter(|c| !matches!(c, '\u{fe0f}' | '~' | '≈'))
        .collect();
    s.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &str) -> MeasuredValue {
        MeasuredValue::parse(s)
    }

    #[test]
    fn reads_the_records_spellings() {
        assert_eq!(v("~1550").value, Some(1550.0));
        assert!(v("~1550").approximate);
        let t = v("5,154 tok/s");
        assert_eq!((t.value, t.unit.as_str()), (Some(5154.0), "tok/s"));
        assert_eq!(v("56.6 tok/s").value, Some(56.6));
        let w = v("5,719 ⚠️");
        assert_eq!(
            (w.value, w.flagged, w.unit.as_str()),
            (Some(5719.0), true, "")
        );
        assert_eq!(v("73,198 ⚠️").value, Some(73198.0));
        let runs = v("1003.5, 998.6 (two runs)");
        assert_eq!(runs.numbers, vec![1003.5, 998.6]);
        assert!((runs.value.unwrap() - 1001.05).abs() < 1e-9);
        let bw = v("~120GB/s each direction");
        assert_eq!(
            (bw.value, bw.unit.as_str()),
            (Some(120.0), "GB/s each direction")
        );
        assert_eq!(v("1,234,567.5").value, Some(1_234_567.5));
        assert_eq!(v("12,34").numbers, vec![12.0, 34.0]);
        assert_eq!(v("n/a").value, None);
        assert_eq!(v("0.20 ⚠️").value, Some(0.2));
    }

    #[test]
    fn json_numbers_and_strings_both_read() {
        let n: MeasuredValue = serde_json::from_str("92.4").unwrap();
        assert_eq!(n.value, Some(92.4));
        let s: MeasuredValue = serde_json::from_str("\"92.4\"").unwrap();
        assert_eq!(s.value, Some(92.4));
        assert!(serde_json::from_str::<MeasuredValue>("[1]").is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(s in "\\PC{0,40}") {
            let m = MeasuredValue::parse(&s);
            prop_assert!(m.numbers.iter().all(|x| x.is_finite() && *x >= 0.0));
            prop_assert_eq!(m.value.is_some(), !m.numbers.is_empty());
        }

        #[test]
        fn plain_and_grouped_numbers_read_back(x in 0u64..10_000_000_000) {
            prop_assert_eq!(v(&x.to_string()).value, Some(x as f64));
            let grouped = x.to_string().as_bytes().rchunks(3).rev()
                .map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(",");
            prop_assert_eq!(v(&format!("{grouped} tok/s")).value, Some(x as f64));
        }
    }
}
