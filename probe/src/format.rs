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
