//! The output format every probe command takes (`--format table|json`), in its own module because
//! the command modules (`run`, `charts`, `diff`, `import`) and the CLI all use it.

use clap::ValueEnum;

/// Output format of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable tables.
    Table,
    /// Machine-readable JSON on stdout.
    Json,
}

impl Format {
    /// Prints `value` as pretty JSON under `--format json`, else runs `table`: the one JSON
    /// branch of every command.
    pub fn print<T: serde::Serialize>(self, value: &T, table: impl FnOnce()) {
        match self {
            Format::Table => table(),
            Format::Json => println!(
                "{}",
                serde_json::to_string_pretty(value).expect("plain data serializes")
            ),
        }
    }
}
