//! One exporter per output format, behind one trait (hyperfine's `Exporter`): a command builds
//! its typed result and hands it to [`export`] with the format asked for. How each format is
//! written is decided here, once (JSON is serde's pretty text for every command); what a result
//! shows in the other formats is its [`Export`] impl, beside the command's tables.

use super::args::{OutputFormat, ValidateFormat};
use anyhow::{Context, Result, bail};
use serde::Serialize;

/// Every output format a command may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

impl From<OutputFormat> for Format {
    fn from(f: OutputFormat) -> Format {
        match f {
            OutputFormat::Table => Format::Table,
            OutputFormat::Json => Format::Json,
            OutputFormat::Csv => Format::Csv,
        }
    }
}

impl From<ValidateFormat> for Format {
    fn from(f: ValidateFormat) -> Format {
        match f {
            ValidateFormat::Table => Format::Table,
            ValidateFormat::Json => Format::Json,
            ValidateFormat::Csv => Format::Csv,
            ValidateFormat::Markdown => Format::Markdown,
        }
    }
}

/// A command's result as the exporters see it.
pub trait Export {
    /// What `--format json` writes (the schema-versioned output type).
    type Json: Serialize + ?Sized;
    /// The command or mode a refused format names (`` `sim report` ``, `--server-log`).
    const WHAT: &'static str;

    fn json(&self) -> &Self::Json;
    /// Prints the terminal tables (and the lines around them).
    fn print_table(&self) -> Result<()>;
    /// The CSV text, where the command offers CSV.
    fn csv(&self) -> Option<String> {
        None
    }
    /// The markdown text, where the command offers markdown.
    fn markdown(&self) -> Option<String> {
        None
    }
}

/// Writes a result in one format.
pub trait Exporter {
    fn export<R: Export + ?Sized>(&self, result: &R) -> Result<()>;
}

pub struct TableExporter;
pub struct JsonExporter;
pub struct CsvExporter;
pub struct MarkdownExporter;

impl Exporter for TableExporter {
    fn export<R: Export + ?Sized>(&self, result: &R) -> Result<()> {
        result.print_table()
    }
}

impl Exporter for JsonExporter {
    fn export<R: Export + ?Sized>(&self, result: &R) -> Result<()> {
        let text = serde_json::to_string_pretty(result.json()).context("writing the JSON")?;
        println!("{text}");
        Ok(())
    }
}

impl Exporter for CsvExporter {
    fn export<R: Export + ?Sized>(&self, result: &R) -> Result<()> {
        print_offered::<R>(result.csv())
    }
}

impl Exporter for MarkdownExporter {
    fn export<R: Export + ?Sized>(&self, result: &R) -> Result<()> {
        print_offered::<R>(result.markdown())
    }
}

/// Prints the text of a format `R` offers; refuses, in one line, a format it does not.
fn print_offered<R: Export + ?Sized>(text: Option<String>) -> Result<()> {
    match text {
        Some(text) => print!("{text}"),
        None => bail!("{} prints table or json", R::WHAT),
    }
    Ok(())
}

/// Writes `result` in `format` to stdout.
pub fn export<R: Export + ?Sized>(format: impl Into<Format>, result: &R) -> Result<()> {
    match format.into() {
        Format::Table => TableExporter.export(result),
        Format::Json => JsonExporter.export(result),
        Format::Csv => CsvExporter.export(result),
        Format::Markdown => MarkdownExporter.export(result),
    }
}
