//! Request lengths of bench_serving's `--dataset-name sharegpt`.
//!
//! bench_serving (`python/sglang/benchmark/datasets/sharegpt.py` @ `515b8b31`,
//! `sample_sharegpt_requests`) keeps conversations with at least two turns, takes the first
//! turn as the prompt and the second as the completion, shuffles, tokenizes both, uses the
//! completion's length as the output length unless `--sharegpt-output-len` fixes it, prunes pairs
//! with a prompt or output under 2 tokens and, with `--sharegpt-context-len`, pairs longer than
//! that, and takes the first `--num-prompts` that remain.
//!
//! Two sources of lengths:
//! - the user's own dataset (`--dataset-path`, the ShareGPT JSON bench_serving reads): the same
//!   selection, with tokens estimated as ⌈UTF-8 bytes / 4⌉ (about 4 characters per token for
//!   English text with GPT- and Llama-style tokenizers; bench_serving counts exactly with the
//!   model's tokenizer, which this simulator does not have);
//! - without a file, the published distribution: ShareGPT's mean input 161.31 and mean output
//!   337.99 tokens (Kwon et al., "Efficient Memory Management for Large Language Model Serving
//!   with PagedAttention", SOSP 2023, §6.1 and Fig. 11). The paper gives the means and
//!   histograms, not a formula: the lengths are drawn from log-normals with those means and
//!   σ = 1.0 (input) and 0.8 (output), an assumption chosen so the 99th percentiles (≈1000 and
//!   ≈1600 tokens) sit at the 1024-token prompt and 2048-token sequence caps of that
//!   benchmark. Predictions for `sharegpt` without `--dataset-path` carry that assumption.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Published mean prompt length of ShareGPT, tokens (Kwon et al. 2023, Fig. 11).
pub const PUBLISHED_MEAN_INPUT_TOKENS: f64 = 161.31;
/// Published mean output length of ShareGPT, tokens (Kwon et al. 2023, Fig. 11).
pub const PUBLISHED_MEAN_OUTPUT_TOKENS: f64 = 337.99;
/// Assumed log-normal σ of the prompt length (see the module docs).
pub const ASSUMED_SIGMA_INPUT: f64 = 1.0;
/// Assumed log-normal σ of the output length.
pub const ASSUMED_SIGMA_OUTPUT: f64 = 0.8;
/// bench_serving prunes prompts and outputs shorter than this.
const MIN_TOKENS: u32 = 2;

/// Where a ShareGPT workload's lengths come from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ShareGptLengths {
    /// `published` or the dataset file's path.
    pub source: String,
    /// (prompt, completion) token lengths of the file's conversations in file order; empty for
    /// the published distribution. Not serialized: a workload read back from JSON draws from
    /// the published distribution.
    #[serde(skip)]
    pub pairs: Arc<Vec<(u32, u32)>>,
    /// `--sharegpt-output-len`: every request generates this many tokens.
    #[serde(default)]
    pub fixed_output_len: Option<u32>,
    /// `--sharegpt-context-len`: pairs longer than this are pruned (the model's context always
    /// bounds them too).
    #[serde(default)]
    pub context_len: Option<u32>,
}

/// Why a ShareGPT dataset cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ShareGptError {
    #[error(transparent)]
    Read(#[from] models::ModelsError),
    #[error(
        "{path}: not a ShareGPT JSON (a list of {{\"conversations\": [{{\"value\": …}}, …]}}): {problem}"
    )]
    Format { path: String, problem: String },
    #[error("{path}: no conversation with two turns")]
    Empty { path: String },
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default, alias = "conversation")]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default, deserialize_with = "byte_len")]
    value: usize,
}

/// The length of a string value, without keeping the string.
fn byte_len<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let s: std::borrow::Cow<'de, str> = Deserialize::deserialize(d)?;
    Ok(s.len())
}

/// ⌈bytes / 4⌉: the token estimate of a text.
fn tokens_of(bytes: usize) -> u32 {
    bytes.div_ceil(4).min(u32::MAX as usize) as u32
}

impl ShareGptLengths {
    /// The published distribution.
    pub fn published(fixed_output_len: Option<u32>, context_len: Option<u32>) -> Self {
        ShareGptLengths {
            source: "published".into(),
            pairs: Arc::new(Vec::new()),
            fixed_output_len,
            context_len,
        }
    }

    /// The conversations of a ShareGPT JSON file (at most [`models::io::LOG_LIMIT_BYTES`]).
    pub fn from_file(
        path: &Path,
        fixed_output_len: Option<u32>,
        context_len: Option<u32>,
    ) -> Result<Self, ShareGptError> {
        let text = models::io::read_text_limited(path, models::io::LOG_LIMIT_BYTES)?;
        let shown = path.display().to_string();
        let convs: Vec<Conversation> =
            serde_json::from_str(&text).map_err(|e| ShareGptError::Format {
                path: shown.clone(),
                problem: e.to_string(),
            })?;
        let pairs: Vec<(u32, u32)> = convs
            .iter()
            .filter(|c| c.conversations.len() >= 2)
            .map(|c| {
                (
                    tokens_of(c.conversations[0].value),
                    tokens_of(c.conversations[1].value),
                )
            })
            .collect();
        if pairs.is_empty() {
            return Err(ShareGptError::Empty { path: shown });
        }
        Ok(ShareGptLengths {
            source: shown,
            pairs: Arc::new(pairs),
            fixed_output_len,
            context_len,
        })
    }

    /// Whether the lengths are the published distribution (an assumption) rather than a file.
    pub fn is_published(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Whether a pair survives bench_serving's pruning and fits `context_limit`.
    fn keep(&self, (i, o): (u32, u32), context_limit: u64) -> bool {
        let limit = self
            .context_len
            .map_or(context_limit, |c| (c as u64).min(context_limit));
        i >= MIN_TOKENS && o >= MIN_TOKENS && (i as u64 + o as u64) <= limit
    }

    fn with_output(&self, (i, o): (u32, u32)) -> (u32, u32) {
        (i, self.fixed_output_len.unwrap_or(o))
    }

    /// `n` (prompt, output) lengths, as bench_serving would pick them, reproducible from `rng`.
    /// Fewer come back when the file has fewer usable conversations (bench_serving likewise).
    pub fn draw(&self, rng: &mut ChaCha8Rng, n: u32, context_limit: u64) -> Vec<(u32, u32)> {
        if self.pairs.is_empty() {
            let mut out = Vec::with_capacity(n as usize);
            // Bounded retries: a context too short for any draw returns what was found.
            for _ in 0..(n as u64 * 64).max(64) {
                if out.len() == n as usize {
                    break;
                }
                let i = lognormal(rng, PUBLISHED_MEAN_INPUT_TOKENS, ASSUMED_SIGMA_INPUT);
                let o = lognormal(rng, PUBLISHED_MEAN_OUTPUT_TOKENS, ASSUMED_SIGMA_OUTPUT);
                let p = self.with_output((i, o));
                if self.keep(p, context_limit) {
                    out.push(p);
                }
            }
            return out;
        }
        // bench_serving shuffles the conversations and takes the first usable ones.
        let mut order: Vec<usize> = (0..self.pairs.len()).collect();
        for k in (1..order.len()).rev() {
            let j = rng.random_range(0..=k);
            order.swap(k, j);
        }
        order
            .into_iter()
            .map(|k| self.with_output(self.pairs[k]))
            .filter(|p| self.keep(*p, context_limit))
            .take(n as usize)
            .collect()
    }

    /// Mean (prompt, output) tokens of the source, for labels and the EP question's context.
    pub fn mean_lengths(&self) -> (f64, f64) {
        let (i, o) = if self.pairs.is_empty() {
            (PUBLISHED_MEAN_INPUT_TOKENS, PUBLISHED_MEAN_OUTPUT_TOKENS)
        } else {
            let n = self.pairs.len() as f64;
            let (si, so) = self
                .pairs
                .iter()
                .fold((0.0, 0.0), |(a, b), (i, o)| (a + *i as f64, b + *o as f64));
            (si / n, so / n)
        };
        (i, self.fixed_output_len.map_or(o, f64::from))
    }
}

/// A log-normal draw with the given mean, rounded to whole tokens (Box–Muller from two
/// uniforms; `1 − u` keeps the logarithm finite).
fn lognormal(rng: &mut ChaCha8Rng, mean: f64, sigma: f64) -> u32 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    let mu = mean.ln() - sigma * sigma / 2.0;
    (mu + sigma * z).exp().round().clamp(0.0, u32::MAX as f64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_published_distribution_has_the_published_means() {
        let d = ShareGptLengths::published(None, None);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let v = d.draw(&mut rng, 20_000, 1 << 20);
        assert_eq!(v.len(), 20_000);
        let mean =
            |f: fn(&(u32, u32)) -> u32| v.iter().map(|p| f(p) as f64).sum::<f64>() / v.len() as f64;
        let (mi, mo) = (mean(|p| p.0), mean(|p| p.1));
        // Pruning below 2 tokens lifts the mean a little.
        assert!(
            (mi / PUBLISHED_MEAN_INPUT_TOKENS - 1.0).abs() < 0.05,
            "{mi}"
        );
        assert!(
            (mo / PUBLISHED_MEAN_OUTPUT_TOKENS - 1.0).abs() < 0.05,
            "{mo}"
        );
        assert!(v.iter().all(|&(i, o)| i >= 2 && o >= 2));
        // The context bounds every pair; a fixed output length replaces the drawn one.
        let d = ShareGptLengths::published(Some(64), Some(512));
        let v = d.draw(&mut rng, 500, 1 << 20);
        assert!(v.iter().all(|&(i, o)| o == 64 && i + o <= 512));
    }

    #[test]
    fn a_dataset_file_is_read_and_pruned_like_bench_serving() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sg.json");
        std::fs::write(
            &p,
            r#"[{"id": "a", "conversations": [{"from": "human", "value": "Hello there, how are you?"}, {"from": "gpt", "value": "Fine, thanks \u00e9"}]},
                {"id": "b", "conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "too short a prompt"}]},
                {"id": "c", "conversation": [{"from": "human", "value": "only one turn"}]}]"#,
        )
        .unwrap();
        let d = ShareGptLengths::from_file(&p, None, None).unwrap();
        assert_eq!(*d.pairs, vec![(7, 4), (1, 5)]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(d.draw(&mut rng, 10, 1 << 20), vec![(7, 4)]);
        std::fs::write(&p, r#"{"not": "a list"}"#).unwrap();
        let e = ShareGptLengths::from_file(&p, None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a ShareGPT JSON"), "{e}");
    }
}
