//! The engines' acceptance as they print it, read into one [`Measured`] and converted by the
//! functions of [`super`]: vLLM's `SpecDecoding metrics` log line, vLLM's Prometheus counters,
//! SGLang's decode log line.

use super::{length_from_counts, length_from_positions, length_from_rate};

/// Acceptance read from an engine's output: counters where it printed them, else its figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measured {
    /// Accepted draft tokens (bonus tokens not counted).
    pub accepted_tokens: Option<f64>,
    /// Drafted tokens.
    pub drafted_tokens: Option<f64>,
    /// Drafts: request-steps, each of `k` drafted tokens.
    pub drafts: Option<f64>,
    /// Per-position acceptance rates, position 1 first.
    pub per_position: Vec<f64>,
    /// A length the engine printed itself (vLLM's `Mean acceptance length`, SGLang's
    /// `accept len`).
    pub printed_length: Option<f64>,
    /// A rate the engine printed itself (`Avg Draft acceptance rate`, percent → share).
    pub printed_rate: Option<f64>,
}

impl Measured {
    /// The acceptance length, tokens a request gains per step: from the counters (`1 + accepted
    /// ÷ drafts`), else the printed length, else the per-position rates, else the rate with `k`
    /// drafted tokens a step (`k` is needed only there: the older vLLM line without positions).
    pub fn length(&self, k: Option<u32>) -> Option<f64> {
        if let (Some(a), Some(d)) = (self.accepted_tokens, self.drafts) {
            return length_from_counts(a, d);
        }
        if let Some(l) = self.printed_length {
            return Some(l);
        }
        if !self.per_position.is_empty() {
            return Some(length_from_positions(&self.per_position));
        }
        let rate = match (self.accepted_tokens, self.drafted_tokens) {
            (Some(a), Some(d)) if d > 0.0 => Some(a / d),
            _ => self.printed_rate,
        }?;
        length_from_rate(rate, k?).ok()
    }
}

/// The number after `key` in `text` (`key: 2.71`, `key: 49.4%`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = text.split_once(key)?.1.trim_start_matches([':', ' ']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|x: &f64| x.is_finite())
}

/// vLLM's `SpecDecoding metrics: Mean acceptance length: A, Accepted throughput: …, Drafted
/// throughput: …, Accepted: N tokens, Drafted: M tokens, Per-position acceptance rate: r1, r2,
/// …, Avg Draft acceptance rate: R%` (`v1/spec_decode/metrics.py`; older builds print `Draft
/// acceptance rate: R%` and no length or positions). `None` for another line.
pub fn vllm_spec_line(line: &str) -> Option<Measured> {
    let rest = line.split_once("SpecDecoding metrics:")?.1;
    let positions = rest
        .split_once("Per-position acceptance rate:")
        .map(|(_, p)| {
            p.split(',')
                .map_while(|x| x.trim().parse::<f64>().ok())
                .collect()
        })
        .unwrap_or_default();
    let rate_pct = number_after(rest, "Avg Draft acceptance rate")
        .or_else(|| number_after(rest, "Draft acceptance rate"));
    let drafted = number_after(rest, "Drafted:");
    let per_position: Vec<f64> = positions;
    let k = per_position.len();
    Some(Measured {
        accepted_tokens: number_after(rest, "Accepted:"),
        drafted_tokens: drafted,
        drafts: drafted.filter(|_| k > 0).map(|d| d / k as f64),
        per_position,
        printed_length: number_after(rest, "Mean acceptance length"),
        printed_rate: rate_pct.map(|r| r / 100.0),
    })
}

/// SGLang's decode log line (`Decode batch …, accept len: 2.71, accept rate: 0.68, …`,
/// `scheduler_metrics_mixin.py`): `accept len` counts the bonus token (the scheduler adds each
/// request's verified token to `spec_num_total_accepted_tokens`), so it is the length as is.
/// `None` for a line without it.
pub fn sglang_decode_line(line: &str) -> Option<Measured> {
    let l = number_after(line, "accept len")?;
    Some(Measured {
        printed_length: Some(l),
        printed_rate: number_after(line, "accept rate"),
        ..Measured::default()
    })
}

/// vLLM's Prometheus counters (`/metrics`): `vllm:spec_decode_num_accepted_tokens_total`,
/// `…_num_draft_tokens_total`, `…_num_drafts_total` and the per-position
/// `…_num_accepted_tokens_per_pos_total{position="i"}`, each summed over its label sets
/// (engines, models). `None` when the text has no accepted-token counter.
pub fn vllm_prometheus(text: &str) -> Option<Measured> {
    let mut sums: [Option<f64>; 3] = [None; 3];
    let mut per_pos: Vec<f64> = Vec::new();
    const NAMES: [&str; 3] = [
        "vllm:spec_decode_num_accepted_tokens",
        "vllm:spec_decode_num_draft_tokens",
        "vllm:spec_decode_num_drafts",
    ];
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        let Some((name_labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = name_labels
            .split_once('{')
            .map_or((name_labels, ""), |(n, l)| (n, l));
        let name = name.trim_end_matches("_total");
        if name == "vllm:spec_decode_num_accepted_tokens_per_pos" {
            let pos = labels
                .split_once("position=\"")
                .and_then(|(_, p)| p.split('"').next()?.parse::<usize>().ok());
            if let Some(p) = pos {
                if per_pos.len() <= p {
                    per_pos.resize(p + 1, 0.0);
                }
                per_pos[p] += v;
            }
            continue;
        }
        if let Some(i) = NAMES.iter().position(|n| *n == name) {
            sums[i] = Some(sums[i].unwrap_or(0.0) + v);
        }
    }
    let [accepted, drafted, drafts] = sums;
    accepted?;
    let per_position = match drafts {
        Some(d) if d > 0.0 => per_pos.iter().map(|a| a / d).collect(),
        _ => Vec::new(),
    };
    Some(Measured {
        accepted_tokens: accepted,
        drafted_tokens: drafted,
        drafts,
        per_position,
        ..Measured::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as vllm-project/vllm-ascend issue 13640 quotes it (7 drafted tokens a step): the
    /// counters give `1 + 44 ÷ (161 ÷ 7)` = 2.91, the length printed beside them.
    #[test]
    fn a_vllm_spec_decoding_line_gives_its_length() {
        let m = vllm_spec_line("INFO 08-05 12:25:03 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.91, Accepted throughput: 0.72 tokens/s, Drafted throughput: 2.64 tokens/s, Accepted: 44 tokens, Drafted: 161 tokens, Per-position acceptance rate: 0.739, 0.478, 0.261, 0.174, 0.130, 0.087, 0.043, Avg Draft acceptance rate: 27.3%").unwrap();
        assert_eq!(m.per_position.len(), 7);
        assert_eq!(m.printed_length, Some(2.91));
        assert!((m.printed_rate.unwrap() - 0.273).abs() < 1e-9);
        let l = m.length(None).unwrap();
        assert!((l - 2.913).abs() < 0.01, "{l}");
        assert!((length_from_positions(&m.per_position) - l).abs() < 0.01);
        assert!(vllm_spec_line("INFO Avg prompt throughput: 1.0 tokens/s").is_none());
    }

    /// An older vLLM line (`Draft acceptance rate: R%`, no positions) needs the drafted tokens a
    /// step from the launch line.
    #[test]
    fn an_older_vllm_line_needs_the_draft_length() {
        let m = vllm_spec_line("SpecDecoding metrics: Draft acceptance rate: 49.4%, System efficiency: 0.6, Number of speculative tokens: 3, Accepted: 494 tokens, Drafted: 1000 tokens").unwrap();
        assert_eq!(m.length(None), None);
        assert!((m.length(Some(3)).unwrap() - 2.482).abs() < 1e-9);
    }

    /// SGLang's `accept len` already counts the bonus token.
    #[test]
    fn an_sglang_decode_line_is_a_length() {
        let m = sglang_decode_line("Decode batch [1234], #running-req: 8, #full token: 900, full token usage: 0.01, accept len: 2.71, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 410.00, #queue-req: 3, ").unwrap();
        assert_eq!(m.length(Some(3)), Some(2.71));
        assert_eq!(m.printed_rate, Some(0.68));
        assert!(sglang_decode_line("Decode batch [1], #running-req: 8").is_none());
    }

    /// vLLM's counters, summed over two engines: `1 + 300 ÷ 200` = 2.5 tokens a step.
    #[test]
    fn vllm_prometheus_counters_sum_over_engines() {
        let text = r#"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 120.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 80.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 600.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 200.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 100.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 150.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 100.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 50.0
"#;
        let m = vllm_prometheus(text).unwrap();
        assert_eq!(m.length(None), Some(2.5));
        assert_eq!(m.per_position, vec![0.75, 0.5, 0.25]);
        assert!(vllm_prometheus("vllm:num_requests_running 3").is_none());
    }
}
