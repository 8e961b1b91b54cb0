//! `sim`: predict how an SGLang-style server performs on a machine for every parallel layout.
//!
//! Exit codes: 0 success; 2 bad input or environment (one line on stderr says what and what to
//! do); 101 a bug (panic).

mod cli;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(e) = cli::dispatch(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
