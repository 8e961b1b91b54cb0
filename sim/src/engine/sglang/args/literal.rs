//! The Python literals of SGLang's `server_args=ServerArgs(key=value, …)` dump (`repr` of each
//! field): `None`, `True`/`False`, ints, floats, quoted strings (`'x'`, `"x"`, with backslash
//! escapes), and containers (`[1, 2]`, `{}`, `(…)`), which are kept as text.

/// One field's value as the dump prints it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A list, dict, tuple or anything else, as written.
    Other(String),
}

impl Literal {
    /// Reads one value; never fails (what is not a scalar literal is kept as `Other`).
    pub(super) fn parse(text: &str) -> Literal {
        let t = text.trim();
        match t {
            "None" => return Literal::None,
            "True" => return Literal::Bool(true),
            "False" => return Literal::Bool(false),
            _ => {}
        }
        if let Some(s) = unquote(t) {
            return Literal::Str(s);
        }
        if let Ok(i) = t.parse::<i64>() {
            return Literal::Int(i);
        }
        // Python prints floats as `0.848`, `1e-05`, `inf`; Rust reads the same spellings.
        if t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
            && let Ok(f) = t.parse::<f64>()
        {
            return Literal::Float(f);
        }
        Literal::Other(t.to_string())
    }

    /// The value as a launch-line word (`None` has none).
    pub(super) fn as_word(&self) -> Option<String> {
        match self {
            Literal::None => None,
            Literal::Bool(b) => Some(b.to_string()),
            Literal::Int(i) => Some(i.to_string()),
            Literal::Float(f) => Some(f.to_string()),
            Literal::Str(s) | Literal::Other(s) => Some(s.clone()),
        }
    }
}

/// The content of a Python string literal `'…'` or `"…"`, with `\\`, `\'`, `\"`, `\n`, `\t`
/// unescaped; `None` when `t` is not one quoted string.
fn unquote(t: &str) -> Option<String> {
    let q = t.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    if t.len() < 2 || !t.ends_with(q) {
        return None;
    }
    let body = &t[1..t.len() - 1];
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(e) => out.push(e),
                None => out.push('\\'),
            }
        } else if c == q {
            // An unescaped quote inside: two literals side by side, not one string.
            return None;
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        assert_eq!(Literal::parse("None"), Literal::None);
        assert_eq!(Literal::parse("True"), Literal::Bool(true));
        assert_eq!(Literal::parse("8192"), Literal::Int(8192));
        assert_eq!(Literal::parse("-1"), Literal::Int(-1));
        assert_eq!(Literal::parse("0.848"), Literal::Float(0.848));
        assert_eq!(Literal::parse("1e-05"), Literal::Float(1e-5));
        assert_eq!(
            Literal::parse("'zai-org/GLM-4.7-FP8'"),
            Literal::Str("zai-org/GLM-4.7-FP8".into())
        );
        assert_eq!(Literal::parse(r"'it\'s'"), Literal::Str("it's".into()));
        assert_eq!(Literal::parse("'{}'"), Literal::Str("{}".into()));
        assert_eq!(
            Literal::parse("[1, 2, 4]"),
            Literal::Other("[1, 2, 4]".into())
        );
        assert_eq!(Literal::parse("'a' 'b'"), Literal::Other("'a' 'b'".into()));
        assert_eq!(Literal::parse("'"), Literal::Other("'".into()));
        assert_eq!(Literal::parse("inf"), Literal::Other("inf".into()));
    }
}
