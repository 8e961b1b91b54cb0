//! `sim`: predict how an SGLang-style server performs on a machine for every parallel layout.
//!
//! Exit codes: 0 success; 2 bad input or environment (one line on stderr says what and what to
//! do); 101 a bug (panic).

mod cli;

use clap::Parser;

fn main() {
    default_sigpipe();
    let cli = cli::Cli::try_parse().unwrap_or_else(|e| {
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
