//! The one reader of figures written as text: records' metric strings (`~1550`, `5,154 tok/s`,
//! `1e3`, `1.2k`, `1003.5, 998.6 (two runs)`, `~61 (100K ctx)`), their counts (`"1,024"`,
//! `"128k"`), and bench_serving JSON values typed by hand (`"~225"`). A text is read whole by the
//! grammar below ([`figure`], [`whole`]), or refused with the reason ([`Unreadable`]); nothing
//! outside the grammar is guessed. A caller decides what a value means (negative, absurd).
//!
//! ```text
//! figure  := mark* [approx] body [spread] [unit] (aside | mark)*
//! approx  := "~" | "≈"                          the source gives an approximate figure
//! body    := number                             one figure
//!          | number (", " number)+              runs ("1003.5, 998.6"): their mean
//!          | number ("-" | "–" | " to ") number a range ("85-89"): its middle, marked a range
//! spread  := ("±" | "+/-" | "+-") number        "122 ± 3": 122, the spread kept beside it
//! number  := [sign] int ["." digits] [("e"|"E") [sign] digits] [mult]
//! sign    := "-" | "+" | "−"                    only at the start of the figure or after a space
//! int     := digits                             "1010"
//!          | d{1,3} ("," ddd)+                  thousands groups: "5,154", "1,234,567"
//!          | digits ("_" digits)+               Python's separator: "1_010"
//! mult    := "k" | "K" (×1e3) | "M" (×1e6) | "G" (×1e9), when no letter follows ("20K ctx")
//! unit    := words holding no digit             "tok/s", "GB/s each direction"
//! aside   := "(" … ")"                          said, not read: "~81 (20K ctx)" is 81
//! mark    := "⚠" | "*" | "†"                    a warning sign or footnote (⚠ flags the figure)
//! ```
//!
//! Refused, each with its reason: no number (`n/a`); a comma that is no thousands group
//! (`1010,6` — a decimal comma? — or `12,34`); a second decimal point (`1010.6.1`); a hexadecimal
//! or otherwise prefixed number (`0x3F2`); digits inside the words (`TP8 56 tok/s`); words before
//! the number; several numbers that are neither runs nor a range; a range from high to low; an
//! unclosed parenthesis; a number too large for an f64 (`1e400`). A count ([`whole`]) is one
//! number, not approximate, with no words but an aside, and a whole number of at most `u32`.

use serde::Serialize;

/// A figure read whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// The figure: the number, the runs' mean, or a range's middle.
    pub value: f64,
    /// Every number of the body, in order (runs, or a range's two ends).
    pub numbers: Vec<f64>,
    /// `~`/`≈`, or a range: the source does not give one exact figure.
    pub approximate: bool,
    /// The body is a range (`85-89`): `numbers` are its ends.
    pub range: bool,
    /// The `± x` beside the figure, when written.
    pub spread: Option<f64>,
    /// A warning sign (⚠) beside it: the source itself doubts the figure.
    pub flagged: bool,
    /// The words right after the body (`tok/s`); empty if none.
    pub unit: String,
    /// The parenthesised asides, as written (`20K ctx`).
    pub asides: Vec<String>,
}

/// Why a text is not read as a figure; its `Display` quotes the text and says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` {why}")]
pub struct Unreadable {
    pub text: String,
    pub why: String,
}

fn refuse<T>(text: &str, why: impl Into<String>) -> Result<T, Unreadable> {
    Err(Unreadable {
        text: text.to_string(),
        why: why.into(),
    })
}

/// Reads `text` whole as a figure (the grammar in the module docs), or says why not.
pub fn figure(text: &str) -> Result<Figure, Unreadable> {
    let (main, asides) = split_asides(text)?;
    let flagged = main.contains('⚠');
    let main: String = main
        .chars()
        .filter(|c| !matches!(c, '⚠' | '\u{fe0f}' | '*' | '†'))
        .collect();
    let body = main.trim();
    let (approx, body) = match body.strip_prefix(['~', '≈']) {
        Some(rest) => (true, rest.trim_start()),
        None => (false, body),
    };
    if body.is_empty() || !body.chars().any(|c| c.is_ascii_digit()) {
        return refuse(text, "holds no number");
    }
    let chars: Vec<char> = body.chars().collect();
    let (first, mut i) = number_at(&chars, 0, true).map_err(|why| Unreadable {
        text: text.to_string(),
        why,
    })?;
    let mut numbers = vec![first];
    let mut range = false;
    let mut spread = None;
    // runs: ", " then a number
    while chars.get(i) == Some(&',') && chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
        let j = skip_space(&chars, i + 1);
        let (n, end) = number_at(&chars, j, true).map_err(|why| Unreadable {
            text: text.to_string(),
            why: format!("lists runs, but {why}"),
        })?;
        numbers.push(n);
        i = end;
    }
    let after = skip_space(&chars, i);
    if numbers.len() == 1 {
        if let Some(sep) = range_separator(&chars, i) {
            let (hi, end) = number_at(&chars, sep, false).map_err(|why| Unreadable {
                text: text.to_string(),
                why: format!("reads as a range, but {why}"),
            })?;
            if hi < first {
                return refuse(text, "is a range from high to low; write it low-high");
            }
            numbers.push(hi);
            range = true;
            i = end;
        } else if let Some(sep) = spread_separator(&chars, after) {
            let (s, end) = number_at(&chars, sep, false).map_err(|why| Unreadable {
                text: text.to_string(),
                why: format!("gives a spread, but {why}"),
            })?;
            spread = Some(s);
            i = end;
        }
    }
    let unit: String = chars[i..].iter().collect::<String>().trim().to_string();
    // `0x3F2`, `0xAB`, `0b101`, `0o17`: a prefixed number, whatever digits follow the prefix
    let prefixed = numbers.len() == 1
        && first == 0.0
        && i == 1
        && matches!(chars.get(1), Some('x' | 'X' | 'b' | 'o'))
        && chars.get(2).is_some_and(char::is_ascii_hexdigit);
    if prefixed {
        return refuse(
            text,
            "is a prefixed (hexadecimal, binary, octal) number, no measurement",
        );
    }
    if unit.chars().any(|c| c.is_ascii_digit()) {
        return refuse(
            text,
            format!("holds more numbers after the figure (`{unit}`): which one is meant?"),
        );
    }
    if numbers.iter().any(|v| !v.is_finite()) || spread.is_some_and(|s: f64| !s.is_finite()) {
        return refuse(text, "is beyond any finite number");
    }
    let value = if range {
        (numbers[0] + numbers[1]) / 2.0
    } else {
        numbers.iter().sum::<f64>() / numbers.len() as f64
    };
    Ok(Figure {
        value,
        numbers,
        approximate: approx || range,
        range,
        spread,
        flagged,
        unit,
        asides,
    })
}

/// Reads `text` as a count: one number, exact, whole, at most `u32::MAX`, with nothing but an
/// aside beside it (`"1,024"`, `"1e3"`, `"128k"`, `"8 (one box)"`).
pub fn whole(text: &str) -> Result<u32, Unreadable> {
    let f = figure(text)?;
    let why = if f.numbers.len() > 1 {
        "is not a whole number: it lists several"
    } else if f.approximate || f.spread.is_some() {
        "is not a whole number: it is approximate"
    } else if !f.unit.is_empty() {
        "is not a whole number: it has words beside it"
    } else if f.value < 0.0 || f.value.fract() != 0.0 || f.value > f64::from(u32::MAX) {
        "is not a whole number of at most 4294967295"
    } else {
        return Ok(f.value as u32);
    };
    refuse(text, why)
}

/// `text` without its parenthesised asides, and the asides; an unclosed or unopened parenthesis
/// is refused (the figure's end is unknown).
fn split_asides(text: &str) -> Result<(String, Vec<String>), Unreadable> {
    let mut main = String::new();
    let mut asides = Vec::new();
    let mut depth = 0usize;
    let mut aside = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                if depth > 0 {
                    aside.push(c);
                }
                depth += 1;
            }
            ')' if depth == 0 => return refuse(text, "closes a parenthesis it never opened"),
            ')' => {
                depth -= 1;
                if depth == 0 {
                    asides.push(std::mem::take(&mut aside).trim().to_string());
                    main.push(' ');
                } else {
                    aside.push(c);
                }
            }
            _ if depth > 0 => aside.push(c),
            _ => main.push(c),
        }
    }
    if depth > 0 {
        return refuse(text, "opens a parenthesis it never closes");
    }
    Ok((main, asides))
}

fn skip_space(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

fn digit(chars: &[char], i: usize) -> bool {
    chars.get(i).is_some_and(char::is_ascii_digit)
}

/// Where the second number of a range starts, when `chars[i..]` is a range's separator: `-`,
/// `–` or `—` right after the number (spaces around allowed), or ` to `.
fn range_separator(chars: &[char], i: usize) -> Option<usize> {
    let j = skip_space(chars, i);
    if matches!(chars.get(j), Some('-' | '–' | '—')) {
        let k = skip_space(chars, j + 1);
        return (digit(chars, k) || chars.get(k) == Some(&'.')).then_some(k);
    }
    let word: String = chars.get(j..j + 3)?.iter().collect();
    (j > i && word == "to ").then(|| skip_space(chars, j + 3))
}

/// Where the spread's number starts, when `chars[i..]` is `±`, `+/-` or `+-`.
fn spread_separator(chars: &[char], i: usize) -> Option<usize> {
    let rest: String = chars.get(i..)?.iter().take(3).collect();
    let len = ["±", "+/-", "+-"]
        .iter()
        .find(|s| rest.starts_with(*s))?
        .chars()
        .count();
    Some(skip_space(chars, i + len))
}

/// The number starting at `i` (a sign allowed when `signed`) and where it ends, or why it is not
/// one number for sure.
fn number_at(chars: &[char], i: usize, signed: bool) -> Result<(f64, usize), String> {
    let (negative, mut j) = match chars.get(i) {
        Some('-' | '−') if signed => (true, i + 1),
        Some('+') if signed => (false, i + 1),
        _ => (false, i),
    };
    let starts = digit(chars, j) || (chars.get(j) == Some(&'.') && digit(chars, j + 1));
    if !starts {
        return Err("has words before the number; write the number first".into());
    }
    let mut text = String::new();
    let group_start = j;
    while digit(chars, j) {
        text.push(chars[j]);
        j += 1;
    }
    let lead = j - group_start;
    if chars.get(j) == Some(&',') && digit(chars, j + 1) {
        j = thousands_groups(chars, j, lead, &mut text)?;
    } else if chars.get(j) == Some(&'_') && digit(chars, j + 1) {
        while chars.get(j) == Some(&'_') && digit(chars, j + 1) {
            j += 1;
            while digit(chars, j) {
                text.push(chars[j]);
                j += 1;
            }
        }
    }
    if chars.get(j) == Some(&'.') && digit(chars, j + 1) {
        text.push('.');
        j += 1;
        while digit(chars, j) {
            text.push(chars[j]);
            j += 1;
        }
        if matches!(chars.get(j), Some('.' | ',')) && digit(chars, j + 1) {
            return Err(format!(
                "has a second `{}` inside one number; write one decimal point",
                chars[j]
            ));
        }
    }
    j = exponent(chars, j, &mut text);
    let mut scale = 1.0;
    if let Some(m) = chars.get(j)
        && matches!(m, 'k' | 'K' | 'M' | 'G')
        && !chars.get(j + 1).is_some_and(|c| c.is_alphabetic())
    {
        scale = match m {
            'M' => 1e6,
            'G' => 1e9,
            _ => 1e3,
        };
        j += 1;
    }
    let v = text
        .parse::<f64>()
        .map_err(|_| "holds no number".to_string())?
        * scale;
    Ok((if negative { -v } else { v }, j))
}

/// Reads `,ddd` groups after a lead of `lead` digits; a comma that is not a group of three is
/// refused (a decimal comma, or digits grouped wrongly).
fn thousands_groups(
    chars: &[char],
    mut j: usize,
    lead: usize,
    text: &mut String,
) -> Result<usize, String> {
    if lead > 3 {
        return Err("has a comma after more than three digits: a decimal comma? write `.` for the decimal point, `,` only between groups of three".into());
    }
    while chars.get(j) == Some(&',') && digit(chars, j + 1) {
        let n = (j + 1..).take_while(|&k| digit(chars, k)).count();
        if n != 3 {
            return Err("has a comma that is not a thousands group of three digits: a decimal comma? write `.` for the decimal point".into());
        }
        text.extend(&chars[j + 1..j + 4]);
        j += 4;
    }
    Ok(j)
}

/// Appends `e3`, `E-2`, `e+300` (only when digits follow) and returns where it ends.
fn exponent(chars: &[char], j: usize, text: &mut String) -> usize {
    if !matches!(chars.get(j), Some('e' | 'E')) {
        return j;
    }
    let signed = matches!(chars.get(j + 1), Some('-' | '+'));
    let mut k = j + 1 + usize::from(signed);
    if !digit(chars, k) {
        return j;
    }
    text.push('e');
    if signed {
        text.push(chars[j + 1]);
    }
    while digit(chars, k) {
        text.push(chars[k]);
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value(s: &str) -> Option<f64> {
        figure(s).ok().map(|f| f.value)
    }

    fn why(s: &str) -> String {
        figure(s).unwrap_err().to_string()
    }

    #[test]
    fn reads_what_people_write() {
        assert_eq!(value("~1550"), Some(1550.0));
        assert_eq!(value("5,154 tok/s"), Some(5154.0));
        assert_eq!(value("1e3"), Some(1000.0));
        assert_eq!(value("1e300"), Some(1e300));
        assert_eq!(value("1.2k"), Some(1200.0));
        assert_eq!(value("1.2k tok/s"), Some(1200.0));
        assert_eq!(value("2M tokens"), Some(2e6));
        assert_eq!(value("-50"), Some(-50.0));
        assert_eq!(value("−50 tok/s"), Some(-50.0));
        assert_eq!(value("1,234,567.5"), Some(1_234_567.5));
        assert_eq!(value("~120GB/s each direction"), Some(120.0));
        assert_eq!(value(".5"), Some(0.5));
        assert_eq!(value("1_010"), Some(1010.0));
        assert_eq!(value("**101 tok/s**"), Some(101.0));
        assert_eq!(value("1229.0*"), Some(1229.0));
        let runs = figure("1003.5, 998.6 (two runs)").unwrap();
        assert_eq!(runs.numbers, vec![1003.5, 998.6]);
        assert_eq!(runs.asides, vec!["two runs".to_string()]);
        let w = figure("5,719 ⚠️").unwrap();
        assert!(w.flagged && w.unit.is_empty() && w.value == 5719.0);
    }

    /// Issue 38's silent misreadings: each is now its figure, or refused.
    #[test]
    fn asides_spreads_and_ranges_are_what_they_say() {
        let ctx = figure("~81 (20K ctx)").unwrap();
        assert_eq!((ctx.value, ctx.approximate), (81.0, true));
        assert_eq!(value("~61 (100K ctx)"), Some(61.0));
        let pm = figure("122 ± 3").unwrap();
        assert_eq!((pm.value, pm.spread), (122.0, Some(3.0)));
        assert_eq!(figure("122 +/- 3 tok/s").unwrap().unit, "tok/s");
        let r = figure("85-89").unwrap();
        assert_eq!((r.value, r.range, r.approximate), (87.0, true, true));
        assert_eq!(value("85 – 89 tok/s"), Some(87.0));
        assert_eq!(value("85 to 89"), Some(87.0));
        assert!(why("1010,6").contains("decimal comma"), "{}", why("1010,6"));
        assert!(why("12,34").contains("thousands group"));
        assert!(why("1010.6.1").contains("second `.`"));
        assert!(why("0x3F2").contains("hexadecimal"));
        assert!(why("0xAB").contains("hexadecimal"));
        assert_eq!(value("0 bytes"), Some(0.0));
        assert!(why("89-85").contains("high to low"));
        assert!(why("TP8 56 tok/s").contains("words before"));
        assert!(why("56 tok/s at 8 streams").contains("more numbers"));
        assert!(why("56 (tok/s").contains("never closes"));
        assert_eq!(why("n/a"), "`n/a` holds no number");
        assert_eq!(why("1e400"), "`1e400` is beyond any finite number");
    }

    #[test]
    fn counts_read_by_the_same_grammar() {
        assert_eq!(whole("1,024"), Ok(1024));
        assert_eq!(whole("1e3"), Ok(1000));
        assert_eq!(whole("128k"), Ok(128_000));
        assert_eq!(whole(" 8 (one box)"), Ok(8));
        for bad in [
            "1 and high (not stated)",
            "1.5",
            "-4",
            "~8",
            "8-16",
            "1e12",
            "x",
        ] {
            assert!(whole(bad).is_err(), "{bad}");
        }
    }

    /// An independent reading of a figure's single number: the body's text with marks, the
    /// approximate sign, `,`/`_` separators and the multiplier taken off, through `str::parse`.
    fn oracle(text: &str) -> Option<f64> {
        let t = text.trim().trim_start_matches(['~', '≈']).trim();
        let t = t.replace('−', "-");
        let (t, scale) = match t.chars().last()? {
            'k' | 'K' => (&t[..t.len() - 1], 1e3),
            'M' => (&t[..t.len() - 1], 1e6),
            'G' => (&t[..t.len() - 1], 1e9),
            _ => (&t[..], 1.0),
        };
        Some(t.replace([',', '_'], "").parse::<f64>().ok()? * scale)
    }

    proptest! {
        /// Whatever the text, a value read is finite and, for one number with no words beside it,
        /// the one the oracle reads from the text.
        #[test]
        fn a_read_value_round_trips_to_the_text(s in "\\PC{0,40}") {
            if let Ok(f) = figure(&s) {
                prop_assert!(f.value.is_finite() && f.numbers.iter().all(|x| x.is_finite()));
                if f.numbers.len() == 1 && f.unit.is_empty() && f.asides.is_empty()
                    && f.spread.is_none() && !s.contains(['⚠', '*', '†', '\u{fe0f}']) {
                    prop_assert_eq!(oracle(&s), Some(f.value), "{:?}", s);
                }
            }
        }

        #[test]
        fn number_like_text_round_trips(s in "[-+−0-9.,_eEkKMG ~]{0,20}") {
            if let Ok(f) = figure(&s)
                && f.numbers.len() == 1 && f.unit.is_empty() && f.spread.is_none() {
                prop_assert_eq!(oracle(&s), Some(f.value), "{:?}", s);
            }
        }

        #[test]
        fn any_f64_formatted_reads_back(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
            for text in [format!("{x}"), format!("{x:e}"), format!("~{x} tok/s"), format!("{x:e} (run 2)")] {
                prop_assert_eq!(figure(&text).map(|f| f.value), Ok(x), "{}", text);
            }
        }

        #[test]
        fn grouped_integers_and_multipliers_read_back(n in 0u64..10_000_000_000, k in 0u32..1000) {
            let grouped = n.to_string().as_bytes().rchunks(3).rev()
                .map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(",");
            prop_assert_eq!(value(&format!("{grouped} tok/s")), Some(n as f64));
            prop_assert_eq!(whole(&format!("{k}k")), Ok(k * 1000));
            if let Ok(n32) = u32::try_from(n) {
                prop_assert_eq!(whole(&grouped), Ok(n32));
            }
        }
    }
}
