//! SGLang's `bench_serving` runs, read and written: [`read`] takes measured runs from the files
//! people have (its `--output-file` JSONL, its printed summary, a small CSV, a runs file), one
//! module per format; [`write`] appends a predicted run in the JSONL layout it writes, so that the
//! same scripts read predicted and measured lines alike.

pub mod flags;
pub mod read;
pub mod write;
