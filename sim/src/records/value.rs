//! A measured figure kept as the source printed it ("~1550", "5,154 tok/s", "56.6 tok/s",
//! "5,719 ⚠️", "1003.5, 998.6 (two runs)", "1.2k", "1e3"), with the numbers read out of it
//! ([`crate::numtext`]) and the marks beside it; and a count a record states ([`Whole`]), which
//! may be words instead ("1 and high (not stated)").

use crate::numtext;
use serde::{Deserialize, Serialize};

/// One measured figure of a record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredValue {
    /// The text as the source shows it.
    pub raw: String,
    /// Every number of the figure, in order (several when the source lists runs, a range's two
    /// ends); empty when the text is not read.
    pub numbers: Vec<f64>,
    /// The value compared (the number, the runs' mean, a range's middle); `None` when the text
    /// is not read for sure (`unreadable` says why).
    pub value: Option<f64>,
    /// `~` or `≈` in the text, or a range: the source gives no one exact figure.
    pub approximate: bool,
    /// A warning sign (⚠) beside it: the source itself doubts the figure.
    pub flagged: bool,
    /// The words right after the figure (`tok/s`, `GB/s each direction`); empty if none.
    pub unit: String,
    /// The figure is a range (`85-89`): compared at its middle, marked as such.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub range: bool,
    /// Why the text is not read as a figure ([`numtext::Unreadable`]), `None` when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
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
    /// Reads `raw` whole by the one figure grammar ([`numtext::figure`]): thousands groups
    /// (`5,154`), decimals, exponents (`1e3`), `k`/`M` multipliers (`1.2k`), signs (`-50`), runs
    /// (`1003.5, 998.6`), ranges (`85-89`), spreads (`122 ± 3`), asides (`~81 (20K ctx)`);
    /// anything else is kept unread with its reason, never guessed.
    pub fn parse(raw: &str) -> MeasuredValue {
        match numtext::figure(raw) {
            Ok(f) => MeasuredValue {
                raw: raw.to_string(),
                value: Some(f.value),
                numbers: f.numbers,
                approximate: f.approximate,
                flagged: f.flagged,
                unit: f.unit,
                range: f.range,
                unreadable: None,
            },
            Err(e) => MeasuredValue {
                raw: raw.to_string(),
                numbers: Vec::new(),
                value: None,
                approximate: raw.contains('~') || raw.contains('≈'),
                flagged: raw.contains('⚠'),
                unit: String::new(),
                range: false,
                unreadable: Some(e.to_string()),
            },
        }
    }

    /// Why this figure cannot be compared as a positive quantity at most `max`, or `None` when it
    /// can: not read for sure (the grammar's reason), negative, zero or above `max` (`max_why`
    /// says what the bound is).
    pub fn unusable(&self, max: f64, max_why: &str) -> Option<String> {
        let raw = &self.raw;
        match self.value {
            None => Some(
                self.unreadable
                    .clone()
                    .unwrap_or_else(|| format!("`{raw}` holds no number")),
            ),
            Some(v) if v < 0.0 => Some(format!("`{raw}` is negative")),
            Some(0.0) => Some(format!("`{raw}` is zero")),
            Some(v) if v > max => Some(format!("`{raw}` is above {max:e} ({max_why})")),
            Some(_) => None,
        }
    }
}

/// A whole number a record states (GPUs, parallel sizes, lengths, concurrency), or what the
/// source wrote instead (`"1 and high (not stated)"`, `1.5`, `-4`): such a record is skipped
/// with its id and the words, not the whole file refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Whole {
    Stated(u32),
    /// The text, or the JSON number, that is not a whole number.
    Unreadable(String),
}

impl Whole {
    /// The number, when one was stated.
    pub fn get(&self) -> Option<u32> {
        match self {
            Whole::Stated(n) => Some(*n),
            Whole::Unreadable(_) => None,
        }
    }
}

impl From<u32> for Whole {
    fn from(n: u32) -> Self {
        Whole::Stated(n)
    }
}

impl Serialize for Whole {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Whole::Stated(n) => s.serialize_u32(*n),
            Whole::Unreadable(t) => s.serialize_str(t),
        }
    }
}

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match serde_json::Value::deserialize(d)? {
            // JSON `1e3` is the float 1000.0: a whole number all the same
            serde_json::Value::Number(n) => {
                match n.as_f64().map(|v| numtext::whole(&v.to_string())) {
                    Some(Ok(k)) if !n.to_string().starts_with('-') => Whole::Stated(k),
                    _ => Whole::Unreadable(n.to_string()),
                }
            }
            serde_json::Value::String(t) => match numtext::whole(&t) {
                Ok(n) => Whole::Stated(n),
                Err(_) => Whole::Unreadable(t),
            },
            other => Whole::Unreadable(other.to_string()),
        })
    }
}

impl Whole {
    /// Why the text is not a count (the grammar's reason, [`numtext::whole`]); `None` when stated.
    pub fn why_unreadable(&self) -> Option<String> {
        match self {
            Whole::Stated(_) => None,
            Whole::Unreadable(t) => Some(match numtext::whole(t) {
                Err(e) => e.to_string(),
                Ok(_) => format!("`{t}` is not a whole number"),
            }),
        }
    }
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
        assert_eq!(v("12,34").value, None);
        assert_eq!(v("n/a").value, None);
        assert_eq!(v("0.20 ⚠️").value, Some(0.2));
        // issue 21: these were read as 2.0, 150.5, 1.2 and 50
        assert_eq!(v("1e3").value, Some(1000.0));
        assert_eq!(v("1e300").value, Some(1e300));
        let k = v("1.2k tok/s");
        assert_eq!((k.value, k.unit.as_str()), (Some(1200.0), "tok/s"));
        assert_eq!(v("-50").value, Some(-50.0));
        assert_eq!(v("1e400").value, None);
        // issue 38: these were read as 10040.5, 62.5, 508.0, 1.0, 505.8, 87 unmarked, and zero
        assert_eq!(v("~81 (20K ctx)").value, Some(81.0));
        assert_eq!(v("122 ± 3").value, Some(122.0));
        assert_eq!(v("1_010").value, Some(1010.0));
        let range = v("85-89");
        assert_eq!(
            (range.value, range.range, range.approximate),
            (Some(87.0), true, true)
        );
        for unread in ["1010,6", "1010.6.1", "0x3F2"] {
            let m = v(unread);
            assert!(m.value.is_none() && m.unreadable.is_some(), "{unread}");
        }
    }

    #[test]
    fn unusable_figures_say_why() {
        let why = |s: &str| v(s).unusable(1e6, "the bound").unwrap_or_default();
        assert_eq!(why("-50"), "`-50` is negative");
        assert_eq!(why("0"), "`0` is zero");
        assert_eq!(why("n/a"), "`n/a` holds no number");
        assert_eq!(why("1e400"), "`1e400` is beyond any finite number");
        assert_eq!(why("1e300"), "`1e300` is above 1e6 (the bound)");
        assert_eq!(v("1.2k").unusable(1e6, ""), None);
    }

    #[test]
    fn whole_numbers_or_the_words_instead() {
        let w = |j: &str| serde_json::from_str::<Whole>(j).unwrap();
        assert_eq!(w("8"), Whole::Stated(8));
        assert_eq!(w("\"8\""), Whole::Stated(8));
        // one grammar with the figures: what the metric reader takes, a count takes too
        assert_eq!(w("\"1,024\""), Whole::Stated(1024));
        assert_eq!(w("\"1e3\""), Whole::Stated(1000));
        assert_eq!(w("\"128k\""), Whole::Stated(128_000));
        assert_eq!(w("1e3"), Whole::Stated(1000));
        for (j, text) in [
            ("\"1 and high (not stated)\"", "1 and high (not stated)"),
            ("1.5", "1.5"),
            ("-4", "-4"),
            ("1e12", "1000000000000.0"),
            ("\"~8\"", "~8"),
            ("\"8-16\"", "8-16"),
            ("[1]", "[1]"),
        ] {
            assert_eq!(w(j), Whole::Unreadable(text.into()), "{j}");
        }
        assert_eq!(serde_json::to_string(&Whole::Stated(4)).unwrap(), "4");
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
            prop_assert!(m.numbers.iter().all(|x| x.is_finite()));
            prop_assert_eq!(m.value.is_some(), m.unreadable.is_none());
            prop_assert!(m.value.is_none_or(f64::is_finite));
            let why = m.unusable(1e6, "");
            prop_assert!(why.is_none() == m.value.is_some_and(|x| x > 0.0 && x <= 1e6));
        }

        #[test]
        fn any_json_number_or_string_is_a_whole_or_its_text(s in "\\PC{0,12}", n in any::<i64>()) {
            let text = serde_json::to_string(&s).unwrap();
            let w: Whole = serde_json::from_str(&text).unwrap();
            // a count is what the one grammar reads as a count, or the text kept
            match w {
                Whole::Stated(k) => prop_assert_eq!(crate::numtext::whole(&s), Ok(k)),
                Whole::Unreadable(t) => {
                    prop_assert!(crate::numtext::whole(&s).is_err());
                    prop_assert_eq!(t, s);
                }
            }
            let w: Whole = serde_json::from_str(&n.to_string()).unwrap();
            prop_assert_eq!(w.get(), u32::try_from(n).ok());
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
