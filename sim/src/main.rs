//! `sim`: predict how an SGLang-style server performs on a machine for every parallel layout.
//!
//! Exit codes: 0 success; 2 bad input or environment (one line on stderr says what and what to
//! do); 101 a bug (panic).

mod cli;

use clap::{CommandFactory, FromArgMatches};

/// Every option that takes a value takes a negative one as its value (`--batch -1`), so that the
/// error names the flag and says what it needs rather than "unexpected argument '-1'".
fn negative_values_are_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_num_args().is_some_and(|n| n.takes_values()) || a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negative_values_are_values)
}

fn main() {
    default_sigpipe();
    let parsed = negative_values_are_values(cli::Cli::command())
        .try_get_matches()
        .and_then(|m| cli::Cli::from_arg_matches(&m));
    let cli = parsed.unwrap_or_else(|e| {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
            || matches!(
                e.kind(),
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            )
        {
            e.exit();
        }
        // One line, as for every other bad input: the message and clap's tip, no usage block.
        let text = e.to_string();
        let line: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| {
                !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
            })
            .collect();
        eprintln!("{}", line.join("; "));
        std::process::exit(2);
    });
    if let Err(e) = cli::dispatch(cli) {
        // Each cause once: anyhow's `{:#}` would repeat an io error a typed error already prints.
        eprintln!("error: {}", models::error::one_line(e.as_ref()));
        std::process::exit(2);
    }
}

/// Dies quietly of SIGPIPE when the reader of stdout goes away (`sim … | head`), as every Unix
/// tool does; Rust ignores SIGPIPE by default, which turns a closed pipe into a panic in `print!`.
#[cfg(unix)]
fn default_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}
