//! A POSIX-shell-like tokenizer for a pasted launch command: whitespace separates words; single
//! quotes keep everything literally; double quotes keep everything but `\"`, `\\`, `\$` and
//! `` \` `` escapes; a backslash outside quotes escapes the next character, and a
//! backslash-newline is a line continuation (removed). `#` at the start of a word comments out the
//! rest of the line. Unquoted `;`, `&&`, `||`, `|` and `&` end a command; the tokens of each
//! command are returned separately so the caller can pick the one that launches the server.
//!
//! Nothing is expanded: `$VAR` and `$(…)` stay as written (the simulator cannot know their
//! values, and a value that still holds a `$` is reported as such by the caller).

/// The commands of `text`, each a list of words. An unterminated quote ends at the end of the
/// text (a truncated paste is read as far as it goes; the caller's checks see the words).
pub fn commands(text: &str) -> Vec<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = vec![Vec::new()];
    let mut word = String::new();
    // A word exists once a character or a pair of quotes was seen (`''` is an empty word).
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let end_word = |cmds: &mut Vec<Vec<String>>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            cmds.last_mut()
                .expect("one command")
                .push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                }
                Some(n) => {
                    word.push(n);
                    in_word = true;
                }
                None => {}
            },
            '\'' => {
                in_word = true;
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    word.push(n);
                }
            }
            '"' => {
                in_word = true;
                while let Some(n) = chars.next() {
                    match n {
                        '"' => break,
                        '\\' => match chars.peek().copied() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => {
                                chars.next();
                                word.push(e);
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        other => word.push(other),
                    }
                }
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
            }
            ';' | '&' | '|' => {
                end_word(&mut cmds, &mut word, &mut in_word);
                // `&&`, `||` are one operator.
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                if !cmds.last().expect("one command").is_empty() {
                    cmds.push(Vec::new());
                }
            }
            c if c.is_whitespace() => end_word(&mut cmds, &mut word, &mut in_word),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut cmds, &mut word, &mut in_word);
    cmds.retain(|c| !c.is_empty());
    cmds
}

/// Refuses what a launch text cannot mean for sure, each in one line: more than one server
/// command (`… && vllm serve …`: which one ran?), TensorRT-LLM's `trtllm-serve` (not simulated),
/// and a typographic dash where `--` belongs (`—tp 8`, a word processor's autocorrect: the
/// engine's argparse would take it as a positional word).
pub fn check_launch_text(cmds: &[Vec<String>]) -> Result<(), String> {
    let servers: Vec<&str> = cmds
        .iter()
        .filter_map(|c| crate::engine::command::launch_engine(c))
        .collect();
    if servers.len() > 1 {
        return Err(format!(
            "--server-args holds {} server commands ({}) joined by `&&`, `;` or `|`: shardwise reads one launch; give the one that ran",
            servers.len(),
            servers.join(", ")
        ));
    }
    if servers == ["TensorRT-LLM"] {
        return Err("`trtllm-serve` is TensorRT-LLM's server: shardwise simulates SGLang (`python -m sglang.launch_server …`) and vLLM (`vllm serve …`); give one of those launch lines".into());
    }
    let dash = cmds.iter().flatten().find(|w| {
        let mut c = w.chars();
        matches!(c.next(), Some('—' | '–' | '−'))
            && c.next()
                .is_some_and(|c| c.is_alphabetic() || matches!(c, '—' | '–' | '-'))
    });
    if let Some(w) = dash {
        let fixed = format!("--{}", w.trim_start_matches(['—', '–', '−', '-']));
        return Err(format!(
            "`{w}`: a typographic dash where `--` belongs (pasted through a word processor?); write `{fixed}`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        commands(s).concat()
    }

    #[test]
    fn quotes_escapes_and_continuations() {
        assert_eq!(
            words("python -m x --a 'b c' --d \"e \\\"f\\\"\" \\\n  --g=h\\ i"),
            [
                "python", "-m", "x", "--a", "b c", "--d", "e \"f\"", "--g=h i"
            ]
        );
        assert_eq!(words("a '' b"), ["a", "", "b"]);
        assert_eq!(words("--x '{\"k\": 1}'"), ["--x", "{\"k\": 1}"]);
        assert_eq!(words("a # comment\nb"), ["a", "b"]);
        assert_eq!(words("a#b"), ["a#b"]);
        assert_eq!(words("a \\\r\n b"), ["a", "b"]);
    }

    #[test]
    fn operators_split_commands() {
        let c = commands(
            "cd /x && CUDA_VISIBLE_DEVICES=0,1 python3 -m sglang.launch_server --tp 2 | tee log; echo done &",
        );
        assert_eq!(c.len(), 4);
        assert_eq!(c[0], ["cd", "/x"]);
        assert_eq!(c[1][0], "CUDA_VISIBLE_DEVICES=0,1");
        assert_eq!(c[2], ["tee", "log"]);
    }

    #[test]
    fn unterminated_quotes_read_to_the_end() {
        assert_eq!(words("--a 'b c"), ["--a", "b c"]);
        assert_eq!(words("--a \"b"), ["--a", "b"]);
        assert_eq!(words("x \\"), ["x"]);
    }

    #[test]
    fn launch_texts_that_cannot_mean_one_server_are_refused() {
        let check = |t: &str| check_launch_text(&commands(t));
        assert!(check("export A=1 && python -m sglang.launch_server --tp 8").is_ok());
        let two = check("python -m sglang.launch_server --tp 8 && vllm serve m -tp 8").unwrap_err();
        assert!(two.contains("2 server commands (SGLang, vLLM)"), "{two}");
        let trt = check("trtllm-serve nvidia/DeepSeek-R1 --tp_size 8").unwrap_err();
        assert!(trt.contains("TensorRT-LLM"), "{trt}");
        let dash = check("vllm serve m —tp 8").unwrap_err();
        assert!(dash.contains("write `--tp`"), "{dash}");
        assert!(
            check("vllm serve m –-max-model-len 8")
                .unwrap_err()
                .contains("`--max-model-len`")
        );
        assert!(check("python -m sglang.launch_server --tp 8 # — note").is_ok());
    }
}
