//! `probe` binary: parses the command line, runs it, and turns every failure into one line on
//! stderr with a documented exit code (0 ok, 1 measurement failed, 2 bad input / environment).

use clap::Parser;

fn main() {
    default_sigpipe();
    // The CUDA bindings panic when a library vanishes mid-run; keep that to one line too.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        eprintln!("error: {}", msg.lines().next().unwrap_or(""));
    }));
    let cli = probe::cli::Cli::parse();
    match std::panic::catch_unwind(|| probe::cli::dispatch(cli)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("error: {}", models::error::one_line(&e));
            std::process::exit(probe::cli::exit_code(&e));
        }
        Err(_) => std::process::exit(probe::error::EXIT_BAD_INPUT),
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
