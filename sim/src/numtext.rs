//! Numbers written inside text, as users' files carry them: records' metric strings (`~1550`,
//! `5,154 tok/s`, `1e3`, `1.2k`, `-50`, `1003.5, 998.6 (two runs)`) and bench_serving JSON values
//! people typed by hand (`"~225"`). The one reader of such numbers ([`scan`], [`first`]); a
//! caller decides what a number means (negative, absurd) and says why it skips one.
//!
//! A number is `[sign] digits [, ddd]… [. digits] [e|E [sign] digits] [k|K|M]`:
//! - a sign (`-`, `+`, `−`) counts only where no letter or digit stands right before it, so the
//!   `-` of `100-200` or `TP8-EP8` separates, it does not negate;
//! - a comma joins digit groups only before exactly three digits (`5,154`), so `1003.5, 998.6`
//!   stays two numbers;
//! - digits right after a letter or `_` are part of a name (`TP8`, `H200`, `fp8`), not a number;
//! - `k`/`K` (×1e3) and `M` (×1e6) multiply only when no letter follows (`1.2k tok/s`, not the
//!   `G` of `120GB/s`);
//! - a number too large for an f64 (`1e400`) is found but has no value.

/// A number found in a text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// Its value; `None` when the digits overflow an f64 (`1e400`).
    pub value: Option<f64>,
    /// Byte offsets of the number's text (sign and multiplier included).
    pub start: usize,
    pub end: usize,
}

/// Every number in `s`, in order.
pub fn scan(s: &str) -> Vec<Found> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(s.len(), |c| c.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let starts_number =
            c.is_ascii_digit() || (c == '.' && digit_at(&chars, i + 1) && !word_before(&chars, i));
        if !starts_number || word_before(&chars, i) {
            i += 1;
            continue;
        }
        let sign_at = i
            .checked_sub(1)
            .filter(|&j| matches!(chars[j].1, '-' | '+' | '−') && !word_before(&chars, j));
        let (value, end) = read(&chars, i);
        let negative = sign_at.is_some_and(|j| chars[j].1 != '+');
        out.push(Found {
            value: value.map(|v| if negative { -v } else { v }),
            start: byte_at(sign_at.unwrap_or(i)),
            end: byte_at(end),
        });
        i = end;
    }
    out
}

/// The first number of `s` that has a value ("~61 tokens" → 61).
pub fn first(s: &str) -> Option<f64> {
    scan(s).into_iter().find_map(|f| f.value)
}

fn digit_at(chars: &[(usize, char)], i: usize) -> bool {
    chars.get(i).is_some_and(|c| c.1.is_ascii_digit())
}

fn letter_at(chars: &[(usize, char)], i: usize) -> bool {
    chars.get(i).is_some_and(|c| c.1.is_alphabetic())
}

/// Whether the character before `i` is part of a word or a number (a letter, a digit, `_`).
fn word_before(chars: &[(usize, char)], i: usize) -> bool {
    i.checked_sub(1)
        .is_some_and(|j| chars[j].1.is_alphanumeric() || chars[j].1 == '_')
}

/// The magnitude of the number whose first digit (or point) is at `start`, and where it ends.
fn read(chars: &[(usize, char)], start: usize) -> (Option<f64>, usize) {
    let digits = |j: usize, n: usize| (j..j + n).all(|k| digit_at(chars, k));
    let mut text = String::new();
    let mut i = start;
    let mut seen_point = false;
    while let Some(&(_, c)) = chars.get(i) {
        if c.is_ascii_digit() {
            text.push(c);
        } else if c == ',' && !seen_point && !text.is_empty() && digits(i + 1, 3) {
            if digit_at(chars, i + 4) {
                break;
            }
        } else if c == '.' && !seen_point && digit_at(chars, i + 1) {
            seen_point = true;
            text.push(c);
        } else {
            break;
        }
        i += 1;
    }
    // exponent: `e3`, `E-2`, `e+300`, only when digits follow
    if let Some(&(_, e)) = chars.get(i)
        && matches!(e, 'e' | 'E')
    {
        let signed = chars.get(i + 1).is_some_and(|c| matches!(c.1, '-' | '+'));
        let first_digit = i + 1 + usize::from(signed);
        if digit_at(chars, first_digit) {
            text.push('e');
            if signed {
                text.push(chars[i + 1].1);
            }
            i = first_digit;
            while digit_at(chars, i) {
                text.push(chars[i].1);
                i += 1;
            }
        }
    }
    let mut scale = 1.0;
    if let Some(&(_, m)) = chars.get(i)
        && matches!(m, 'k' | 'K' | 'M')
        && !letter_at(chars, i + 1)
    {
        scale = if m == 'M' { 1e6 } else { 1e3 };
        i += 1;
    }
    let value = text
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite());
    (value, i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(s: &str) -> Vec<Option<f64>> {
        scan(s).into_iter().map(|f| f.value).collect()
    }

    #[test]
    fn reads_what_people_write() {
        assert_eq!(values("~1550"), vec![Some(1550.0)]);
        assert_eq!(values("5,154 tok/s"), vec![Some(5154.0)]);
        assert_eq!(values("1e3"), vec![Some(1000.0)]);
        assert_eq!(values("1e300"), vec![Some(1e300)]);
        assert_eq!(values("1.2k"), vec![Some(1200.0)]);
        assert_eq!(values("1.2k tok/s"), vec![Some(1200.0)]);
        assert_eq!(values("2M tokens"), vec![Some(2e6)]);
        assert_eq!(values("-50"), vec![Some(-50.0)]);
        assert_eq!(values("−50 tok/s"), vec![Some(-50.0)]);
        assert_eq!(
            values("1003.5, 998.6 (two runs)"),
            vec![Some(1003.5), Some(998.6)]
        );
        assert_eq!(values("1,234,567.5"), vec![Some(1_234_567.5)]);
        assert_eq!(values("12,34"), vec![Some(12.0), Some(34.0)]);
        assert_eq!(values("~120GB/s each direction"), vec![Some(120.0)]);
        assert_eq!(values("100-200"), vec![Some(100.0), Some(200.0)]);
        assert_eq!(values("TP8 on H200, 2epochs"), vec![Some(2.0)]);
        assert_eq!(values("1e400"), vec![None]);
        assert_eq!(values("n/a"), vec![]);
        assert_eq!(values(".5"), vec![Some(0.5)]);
        assert_eq!(first("short (~61 tokens, mostly cached)"), Some(61.0));
        assert_eq!(first("none"), None);
        let f = scan("about -1.5e3k/s")[0];
        assert_eq!((f.value, f.start, f.end), (Some(-1.5e6), 6, 13));
    }

    /// An independent reading of a found number's text: sign, `,` groups and a `k`/`M` multiplier
    /// taken off, the rest through `str::parse`.
    fn oracle(text: &str) -> Option<f64> {
        let (negative, rest) = match text.chars().next()? {
            c @ ('-' | '+' | '−') => (c != '+', &text[c.len_utf8()..]),
            _ => (false, text),
        };
        let (rest, scale) = match rest.chars().last()? {
            'k' | 'K' => (&rest[..rest.len() - 1], 1e3),
            'M' => (&rest[..rest.len() - 1], 1e6),
            _ => (rest, 1.0),
        };
        let v = rest.replace(',', "").parse::<f64>().ok()? * scale;
        Some(if negative { -v } else { v })
    }

    /// Every number found in `s` is one: it starts a word, holds digits, and its value is finite
    /// and the one [`oracle`] reads from its text.
    fn check(s: &str) -> Result<(), TestCaseError> {
        for f in scan(s) {
            prop_assert!(f.start < f.end && f.end <= s.len());
            prop_assert!(s.is_char_boundary(f.start) && s.is_char_boundary(f.end));
            let text = &s[f.start..f.end];
            prop_assert!(text.chars().any(|c| c.is_ascii_digit()), "{text:?}");
            let before = s[..f.start].chars().next_back();
            prop_assert!(
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_'),
                "{s:?}"
            );
            if let Some(x) = f.value {
                prop_assert!(x.is_finite());
                prop_assert_eq!(oracle(text), Some(x), "{:?} in {:?}", text, s);
            }
        }
        prop_assert_eq!(first(s), scan(s).into_iter().find_map(|f| f.value));
        Ok(())
    }

    proptest! {
        #[test]
        fn nothing_is_read_that_is_not_written(s in "\\PC{0,40}") {
            check(&s)?;
        }

        #[test]
        fn number_like_text_is_read_as_written(s in "[-+−0-9.,eEkKMG ~a_(/]{0,30}") {
            check(&s)?;
        }

        #[test]
        fn any_f64_formatted_reads_back(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
            for text in [format!("{x}"), format!("{x:e}"), format!("~{x} tok/s"), format!("({x:e})")] {
                let found = scan(&text);
                prop_assert_eq!(found.len(), 1, "{}", text);
                prop_assert_eq!(found[0].value, Some(x), "{}", text);
            }
        }

        #[test]
        fn grouped_integers_and_multipliers_read_back(n in 0u64..10_000_000_000, k in 0u32..1000) {
            let grouped = n.to_string().as_bytes().rchunks(3).rev()
                .map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(",");
            prop_assert_eq!(first(&format!("{grouped} tok/s")), Some(n as f64));
            prop_assert_eq!(first(&format!("{k}k")), Some(f64::from(k) * 1e3));
        }
    }
}
