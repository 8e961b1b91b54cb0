//! A tiny backtracking regex matcher for the `re:` patterns of compressed-tensors `ignore` lists
//! (e.g. `re:.*mlp\.(gate|up|gate_up|down)_proj.*`). Supports literals, `.`, `\` escapes
//! (`\d`, `\w`, `\s` and escaped punctuation), `[...]` classes with ranges and `^` negation,
//! groups `( | )` (also `(?: )`), and the quantifiers `*`, `+`, `?`. Anchors `^`/`$` at the ends
//! are accepted and ignored since matching is always whole-string (Python's `re.fullmatch`).
//! An unparsable pattern matches nothing.

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    Group(Vec<Vec<Node>>),
    Repeat {
        node: Box<Node>,
        min: usize,
        max: Option<usize>,
    },
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl Parser<'_> {
    fn alternatives(&mut self) -> Option<Vec<Vec<Node>>> {
        let mut alts = vec![Vec::new()];
        while let Some(&c) = self.chars.peek() {
            match c {
                ')' => break,
                '|' => {
                    self.chars.next();
                    alts.push(Vec::new());
                }
                _ => {
                    let atom = self.atom()?;
                    let atom = self.quantified(atom);
                    alts.last_mut()?.push(atom);
                }
            }
        }
        Some(alts)
    }

    fn quantified(&mut self, atom: Node) -> Node {
        let (min, max) = match self.chars.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            _ => return atom,
        };
        self.chars.next();
        // A lazy marker changes nothing for a full match.
        if self.chars.peek() == Some(&'?') {
            self.chars.next();
        }
        Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        }
    }

    fn escape(c: char) -> Node {
        let class = |ranges: Vec<(char, char)>| Node::Class {
            ranges,
            negated: false,
        };
        match c {
            'd' => class(vec![('0', '9')]),
            'w' => class(vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]),
            's' => class(vec![(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]),
            other => Node::Char(other),
        }
    }

    fn atom(&mut self) -> Option<Node> {
        match self.chars.next()? {
            '.' => Some(Node::Any),
            '\\' => Some(Self::escape(self.chars.next()?)),
            '(' => {
                if self.chars.peek() == Some(&'?') {
                    self.chars.next();
                    (self.chars.next()? == ':').then_some(())?;
                }
                let alts = self.alternatives()?;
                (self.chars.next()? == ')').then_some(Node::Group(alts))
            }
            '[' => self.class(),
            '*' | '+' | '?' => None,
            c => Some(Node::Char(c)),
        }
    }

    fn class(&mut self) -> Option<Node> {
        let negated = self.chars.peek() == Some(&'^');
        if negated {
            self.chars.next();
        }
        let mut ranges = Vec::new();
        loop {
            let c = match self.chars.next()? {
                ']' => break,
                '\\' => self.chars.next()?,
                c => c,
            };
            if self.chars.peek() == Some(&'-') {
                self.chars.next();
                match self.chars.peek() {
                    Some(&']') => {
                        ranges.push((c, c));
                        ranges.push(('-', '-'));
                    }
                    _ => {
                        let hi = self.chars.next()?;
                        ranges.push((c, hi));
                    }
                }
            } else {
                ranges.push((c, c));
            }
        }
        Some(Node::Class { ranges, negated })
    }
}

fn parse(pattern: &str) -> Option<Vec<Vec<Node>>> {
    let p = pattern.strip_prefix('^').unwrap_or(pattern);
    let p = p.strip_suffix('$').unwrap_or(p);
    let mut parser = Parser {
        chars: p.chars().peekable(),
    };
    let alts = parser.alternatives()?;
    parser.chars.next().is_none().then_some(alts)
}

fn single(node: &Node, c: char) -> bool {
    match node {
        Node::Char(x) => *x == c,
        Node::Any => c != '\n',
        Node::Class { ranges, negated } => {
            ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
        _ => false,
    }
}

/// Matches `seq` at `s[i..]`, then calls `k` with each end position until `k` accepts.
fn match_seq(seq: &[Node], s: &[char], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let Some((first, rest)) = seq.split_first() else {
        return k(i);
    };
    match_node(first, s, i, &mut |j| match_seq(rest, s, j, k))
}

fn match_node(node: &Node, s: &[char], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match node {
        Node::Group(alts) => alts.iter().any(|alt| match_seq(alt, s, i, k)),
        Node::Repeat { node, min, max } => match_repeat(node, *min, *max, s, i, k),
        leaf => i < s.len() && single(leaf, s[i]) && k(i + 1),
    }
}

/// Greedy repetition with backtracking; stops on empty iterations to avoid looping forever.
fn match_repeat(
    node: &Node,
    min: usize,
    max: Option<usize>,
    s: &[char],
    i: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if max != Some(0)
        && match_node(node, s, i, &mut |j| {
            j > i && match_repeat(node, min.saturating_sub(1), max.map(|m| m - 1), s, j, k)
        })
    {
        return true;
    }
    min == 0 && k(i)
}

/// True when `pattern` matches the whole of `text` (Python `re.fullmatch` semantics for the
/// supported subset).
pub fn full_match(pattern: &str, text: &str) -> bool {
    let Some(alts) = parse(pattern) else {
        return false;
    };
    let s: Vec<char> = text.chars().collect();
    alts.iter()
        .any(|alt| match_seq(alt, &s, 0, &mut |j| j == s.len()))
}

#[cfg(test)]
mod tests {
    use super::full_match;

    #[test]
    fn compressed_tensors_patterns() {
        let mlp = r".*mlp\.(gate|up|gate_up|down)_proj.*";
        assert!(full_match(mlp, "model.layers.0.mlp.gate_proj"));
        assert!(full_match(
            mlp,
            "language_model.model.layers.0.mlp.down_proj.weight"
        ));
        assert!(!full_match(mlp, "model.layers.1.mlp.experts.0.gate_proj"));
        assert!(!full_match(
            mlp,
            "model.layers.1.mlp.shared_experts.gate_proj"
        ));
        assert!(full_match(
            r".*self_attn.*",
            "model.layers.3.self_attn.q_a_proj"
        ));
        assert!(full_match(
            r"model\.layers\.\d+\.mlp\.gate",
            "model.layers.12.mlp.gate"
        ));
        assert!(!full_match(
            r"model\.layers\.\d+\.mlp\.gate",
            "model.layers.x.mlp.gate"
        ));
        assert!(full_match("a[b-d]+e?", "abcd"));
        assert!(!full_match("a[^b]", "ab"));
        assert!(full_match("(?:ab)*c", "ababc"));
        assert!(!full_match("(unclosed", "(unclosed"));
        assert!(full_match("(a*)*b", "aaab"));
    }
}
