//! Reading launch lines, dumps and words into [`SglangArgs`], as SGLang's argparse does.

use super::literal::Literal;
use super::table::{self, Bounds, Kind, Resolved, Spec};
use super::{
    FlagClass, FlagEntry, Origin, Result, SglangArgs, SglangArgsError, Value, names, tokenize,
};

/// Reads a pasted launch command (see the module docs).
pub fn from_launch_line(text: &str) -> Result<SglangArgs> {
    let cmds = tokenize::commands(text);
    tokenize::check_launch_text(&cmds).map_err(SglangArgsError::NotALaunchLine)?;
    let is_launch = |w: &[String]| {
        w.iter().any(|x| x.ends_with("sglang.launch_server"))
            || w.windows(2)
                .any(|p| p[0].ends_with("sglang") && p[1] == "serve")
    };
    let cmd = cmds
        .iter()
        .find(|c| is_launch(c))
        .or_else(|| cmds.iter().find(|c| c.iter().any(|w| w.starts_with("--"))))
        .ok_or_else(|| {
            let shown: String = text.trim().chars().take(60).collect();
            SglangArgsError::NotALaunchLine(format!(
                "--server-args `{shown}`: no `python -m sglang.launch_server …` command and no flags in it; paste the whole launch command"
            ))
        })?;
    let mut env = Vec::new();
    let mut i = 0;
    while i < cmd.len() {
        let w = &cmd[i];
        if w == "env" {
            i += 1;
            continue;
        }
        match w.split_once('=') {
            Some((k, v)) if is_env_name(k) => env.push((k.to_string(), v.to_string())),
            _ => break,
        }
        i += 1;
    }
    let rest = &cmd[i..];
    let start = rest
        .iter()
        .position(|w| w.ends_with("sglang.launch_server"))
        .map(|p| p + 1)
        .or_else(|| {
            rest.windows(2)
                .position(|p| p[0].ends_with("sglang") && p[1] == "serve")
                .map(|p| p + 2)
        })
        .or_else(|| rest.iter().position(|w| w.starts_with("--")))
        .unwrap_or(rest.len());
    let mut args = parse_words(&rest[start..], Origin::LaunchLine)?;
    args.env = env;
    args.command = (start > 0).then(|| rest[..start].join(" "));
    Ok(args)
}

/// Reads SGLang's `server_args=ServerArgs(…)` dump as `(field, Python literal)` pairs.
pub fn from_pairs(pairs: &[(String, String)]) -> Result<SglangArgs> {
    let mut args = SglangArgs::default();
    for (key, text) in pairs {
        let key = key.trim();
        let lit = Literal::parse(text);
        let spec = table::spec(key);
        let class = spec.map_or(FlagClass::Unknown, |s| s.class);
        let spelled = format!("{key}={}", text.trim());
        let mut note = None;
        if let (Some(spec), Some(word)) = (spec, lit.as_word()) {
            let typed = match (&lit, spec.kind) {
                (Literal::Bool(b), Kind::Flag) => Some(Value::Bool(*b)),
                (_, Kind::Flag) => None,
                _ => typed_value(spec.kind, &word),
            };
            match typed {
                Some(v) => {
                    check(spec, &v, &spelled)?;
                    args.set(spec.dest, v, spelled, Origin::ServerArgsDump);
                }
                None if spec.class == FlagClass::Modelled => {
                    return Err(bad(&spelled, expected(spec.kind)));
                }
                None => note = Some(format!("not {}; ignored", expected(spec.kind))),
            }
        }
        args.entries.push(FlagEntry {
            given: key.to_string(),
            dest: (spec.is_some() || names::is_field(key)).then(|| key.to_string()),
            value: Some(text.trim().to_string()),
            class,
            origin: Origin::ServerArgsDump,
            note,
        });
    }
    Ok(args)
}

/// Reads SGLang-style words (`--tp`, `8`, `--mem-fraction-static=0.9`, …) from `origin`.
pub fn from_words(words: &[String], origin: Origin) -> Result<SglangArgs> {
    parse_words(words, origin)
}

fn is_env_name(k: &str) -> bool {
    let mut c = k.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A word argparse reads as an option (not a negative number).
fn is_option(w: &str) -> bool {
    w.starts_with('-') && w.len() > 1 && w.parse::<f64>().is_err()
}

pub(super) fn bad(spelled: &str, problem: impl Into<String>) -> SglangArgsError {
    SglangArgsError::BadValue {
        spelled: spelled.to_string(),
        problem: problem.into(),
    }
}

fn expected(kind: Kind) -> String {
    match kind {
        Kind::Int => "an integer".into(),
        Kind::Float => "a number".into(),
        Kind::Flag => "True or False".into(),
        Kind::Str => "a string".into(),
        Kind::Choice(c) => format!("one of {}", c.join(", ")),
        Kind::Ints => "one or more integers".into(),
        Kind::Strs => "one or more words".into(),
        Kind::HumanInt { .. } => "an integer (or 8k, 8K)".into(),
    }
}

/// The typed value of `word` for `kind`, `None` when it is not one.
fn typed_value(kind: Kind, word: &str) -> Option<Value> {
    match kind {
        Kind::Int => word.parse::<i64>().ok().map(Value::Int),
        Kind::Float => word
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Value::Float),
        Kind::Flag => Some(Value::Bool(true)),
        Kind::Str => Some(Value::Str(word.to_string())),
        Kind::Choice(c) => c.contains(&word).then(|| Value::Str(word.to_string())),
        // kept as written, checked here: `SglangArgs::ints` reads it
        Kind::Ints => table::int_list(word).map(|_| Value::Str(word.to_string())),
        Kind::Strs => Some(Value::Str(word.to_string())),
        // vLLM's flags only; read as vLLM reads them should a table ever give one to SGLang
        Kind::HumanInt { auto } => match table::human_int(word, auto) {
            Ok(table::HumanInt::Value(n)) => Some(Value::Int(n)),
            Ok(table::HumanInt::Auto) | Err(_) => None,
        },
    }
}

/// Whether `word` is a value of `spec` a launch line may give, its kind and its bounds checked as
/// [`from_words`] checks them (`spelled` names the flag in the error): a record stating a value
/// the launch line would refuse is refused too, never read as the default
/// ([`crate::engine::record::unreadable_values`]).
pub fn check_value(spec: &Spec, word: &str, spelled: &str) -> Result<()> {
    let v = typed_value(spec.kind, word)
        .ok_or_else(|| bad(spelled, format!("is not {}", expected(spec.kind))))?;
    check(spec, &v, spelled)
}

/// The table's range checks of a value (`spelled` names the flag in the error).
fn check(spec: &Spec, v: &Value, spelled: &str) -> Result<()> {
    let int = |min: i64, what: &str| match v {
        Value::Int(i) if *i < min => Err(bad(spelled, format!("must be at least {min}{what}"))),
        Value::Str(s) if spec.kind == Kind::Ints => match table::int_list(s) {
            Some(l) if l.iter().any(|i| i64::from(*i) < min) => {
                Err(bad(spelled, format!("each must be at least {min}{what}")))
            }
            _ => Ok(()),
        },
        Value::Int(i) if *i > u32::MAX as i64 => Err(bad(spelled, "is implausibly large")),
        _ => Ok(()),
    };
    match spec.bounds {
        Bounds::Any => Ok(()),
        Bounds::AtLeast(min) => int(min, ""),
        Bounds::AtLeastOr(_, off, _) if *v == Value::Int(off) => Ok(()),
        Bounds::AtLeastOr(min, off, does) => int(min, &format!(" (or {off} {does})")),
        Bounds::Fraction => match v {
            Value::Float(f) if !(*f > 0.0 && *f <= 1.0) => {
                Err(bad(spelled, "must be a fraction in (0, 1], e.g. 0.85"))
            }
            _ => Ok(()),
        },
        Bounds::AtLeastFloat(min, why) => match v {
            Value::Float(f) if *f < min => Err(bad(spelled, why)),
            _ => Ok(()),
        },
        Bounds::Refuse(refused) => match v {
            Value::Str(given) => match refused.iter().find(|(r, _)| r == given) {
                Some((_, why)) => Err(bad(spelled, *why)),
                None => Ok(()),
            },
            _ => Ok(()),
        },
        Bounds::Bytes => match v {
            Value::Int(i) if *i < 1 => Err(bad(spelled, "must be at least 1 byte")),
            _ => Ok(()),
        },
    }
}

fn stray(word: String, origin: Origin) -> FlagEntry {
    FlagEntry {
        given: word,
        dest: None,
        value: None,
        class: FlagClass::Unknown,
        origin,
        note: Some("not an option (SGLang's launch_server takes no positional arguments)".into()),
    }
}

fn parse_words(words: &[String], origin: Origin) -> Result<SglangArgs> {
    let mut args = SglangArgs::default();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if !is_option(w) {
            args.entries.push(stray(w.clone(), origin));
            continue;
        }
        let (opt, inline) = match w.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
            _ => (w.clone(), None),
        };
        // Every word up to the next option: a value (nargs="+" flags take several).
        let mut following = Vec::new();
        while i < words.len() && !is_option(&words[i]) {
            following.push(words[i].clone());
            i += 1;
        }
        if opt == "--config" {
            let file = inline.as_deref().or(following.first().map(String::as_str));
            return Err(bad(
                &format!("--config {}", file.unwrap_or("")),
                table::CONFIG_FILE_REFUSED,
            ));
        }
        let (dest, mut note) = resolve_option(&opt)?;
        let spec = dest.and_then(table::spec);
        let class = spec.map_or(FlagClass::Unknown, |s| s.class);
        // A flag without a value takes none of the following words, a typed flag one; an
        // `nargs="+"` row and an option shardwise does not know take them all.
        let takes = match (&inline, spec.map(|s| s.kind)) {
            (Some(_), _) | (None, Some(Kind::Flag)) => 0,
            (None, Some(Kind::Ints | Kind::Strs)) => following.len(),
            (None, Some(_)) => 1,
            (None, None) => following.len(),
        };
        let strays = following.split_off(takes.min(following.len()));
        let value = inline.or_else(|| (!following.is_empty()).then(|| following.join(" ")));
        let spelled = match &value {
            Some(v) => format!("{opt} {v}"),
            None => opt.clone(),
        };
        if let Some(spec) = spec {
            let typed = match (spec.kind, &value) {
                (Kind::Flag, None) => Some(Value::Bool(true)),
                (Kind::Flag, Some(_)) => None,
                (kind, Some(v)) => typed_value(kind, v),
                (_, None) => None,
            };
            let problem = || match (spec.kind, &value) {
                (Kind::Flag, _) => "takes no value (argparse refuses `=value` on it)".to_string(),
                (_, None) => format!("expects {}", expected(spec.kind)),
                (_, Some(v)) if v.contains('$') => format!(
                    "is not {} (shell variables are not expanded: paste the command as it ran)",
                    expected(spec.kind)
                ),
                _ => format!("is not {}", expected(spec.kind)),
            };
            match typed {
                Some(v) => {
                    check(spec, &v, &spelled)?;
                    if let Some(prev) = args.values.get(spec.dest) {
                        note = Some(format!("overrides {} given earlier", prev.spelled));
                    }
                    args.set(spec.dest, v, spelled.clone(), origin);
                }
                None if super::checked_both_ways(spec) => {
                    return Err(bad(&spelled, problem()));
                }
                None => note = Some(format!("{}; ignored", problem())),
            }
        } else if value.as_deref().is_some_and(|v| v.contains('$')) {
            note = Some("holds an unexpanded shell variable".into());
        }
        args.entries.push(FlagEntry {
            given: opt,
            dest: dest.map(str::to_string),
            value,
            class,
            origin,
            note,
        });
        // Words a flag did not take are stray positionals to argparse.
        for extra in strays {
            args.entries.push(stray(extra, origin));
        }
    }
    Ok(args)
}

/// Which option `opt` names, as argparse resolves it (exactly or as the one prefix match), with a
/// note for an abbreviation or an ambiguous prefix; a misspelling of a modelled flag is refused
/// as SGLang refuses it.
fn resolve_option(opt: &str) -> Result<(Option<&'static str>, Option<String>)> {
    Ok(match table::resolve(opt) {
        Resolved::Known { dest, expanded } => (
            Some(dest),
            expanded.as_ref().map(|e| format!("abbreviation of {e}")),
        ),
        Resolved::Ambiguous(c) => (
            None,
            Some(format!(
                "ambiguous abbreviation (SGLang refuses it): could be {}",
                c.join(", ")
            )),
        ),
        Resolved::Unknown => match table::misspelled_modelled(opt) {
            Some(meant) => {
                return Err(bad(
                    opt,
                    format!(
                        "not an SGLang option (SGLang refuses the line); did you mean {meant}?"
                    ),
                ));
            }
            None => (None, None),
        },
    })
}
