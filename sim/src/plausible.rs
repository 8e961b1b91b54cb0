//! What a measured figure can physically be: the bounds a user's measurement (records,
//! `--measured` runs) is checked against before it is compared, each with its reason. A figure
//! outside them is a typo, a unit error or a broken run, never a measurement to fit or score.

use crate::machine::Machine;
use crate::options::ServerOptions;
use models::ModelSpec;

/// Most tokens per second one GPU can process, any model, any GPU. Every token (prompt or output)
/// costs at least 2 FLOPs per active parameter; the model with the fewest active parameters
/// shardwise has a preset for (`qwen3-30b-a3b`, 3.04 B) thus needs 6.1 GFLOP per token, and no
/// GPU's datasheet reaches 20 PFLOP/s dense (dense FP4: B200 9 PFLOP/s, B300 15): at most
/// 3.3 M tok/s.
/// Prompt tokens served from the prefix cache cost little compute, so total tok/s gets 3× that,
/// rounded up.
pub const MAX_TOK_PER_S_PER_GPU: f64 = 1e7;

/// Longest mean latency (TTFT, TPOT, ITL, end to end) a benchmark run can report, ms:
/// bench_serving gives up on a request after 6 hours (`AIOHTTP_TIMEOUT`, `total=6 * 60 * 60`).
pub const MAX_LATENCY_MS: f64 = 6.0 * 3600.0 * 1e3;

/// Fewest bytes one weight can take: 4 bits (NVFP4, INT4; their scales only add).
const MIN_WEIGHT_BYTES: f64 = 0.5;

/// Most output tokens per second one stream can decode on `machine` with `spec`: a decode step
/// reads every active weight at least once, so it is no shorter than the active weights at 4
/// bits over the datasheet bandwidth of all the machine's GPUs together; one step yields one token
/// per stream, or up to the draft tokens of speculative decoding (`--speculative-*` in `opts`).
/// GLM-5 (40.8 B active) on 8× RTX PRO 6000 (1.79 TB/s each): ~700 tok/s per stream.
pub fn max_stream_tok_per_s(machine: &Machine, spec: &ModelSpec, opts: &ServerOptions) -> f64 {
    let bandwidth_bytes_per_s = machine.gpu.memory_gb_per_s * 1e9 * f64::from(machine.gpu_count);
    let step_bytes = spec.active_params_per_token() as f64 * MIN_WEIGHT_BYTES;
    let tokens_per_step = opts
        .speculative
        .as_ref()
        .map_or(1, |s| s.num_draft_tokens.max(s.num_steps + 1).max(1));
    f64::from(tokens_per_step) * bandwidth_bytes_per_s / step_bytes.max(1.0)
}

/// `value` for a message: plain below 10 million, else in scientific notation (Rust prints
/// `1e300` with all 301 digits).
pub fn shown(value: f64) -> String {
    if value.is_finite() && value.abs() >= 1e7 {
        format!("{value:.3e}")
    } else if value.fract() == 0.0 || !value.is_finite() {
        format!("{value}")
    } else {
        format!("{value:.3}")
    }
}

/// Why `value` (ms) is not a plausible mean latency, if it is not: non-finite, negative or above
/// [`MAX_LATENCY_MS`].
pub fn latency_problem(value: f64) -> Option<String> {
    if !value.is_finite() {
        Some(format!("{value} is not a finite number"))
    } else if value < 0.0 {
        Some(format!("{} is negative", shown(value)))
    } else if value > MAX_LATENCY_MS {
        Some(format!(
            "{} ms is more than the 6 hours after which bench_serving gives up on a request",
            shown(value)
        ))
    } else {
        None
    }
}

/// Why `value` (tok/s of a server of `gpus` GPUs, `None`: not known) is not a plausible
/// throughput, if it is not: non-finite, not positive, or above [`MAX_TOK_PER_S_PER_GPU`] per GPU.
pub fn throughput_problem(value: f64, gpus: Option<u32>) -> Option<String> {
    let max = gpus.map_or(f64::INFINITY, |g| {
        MAX_TOK_PER_S_PER_GPU * f64::from(g.max(1))
    });
    if !value.is_finite() {
        Some(format!("{value} is not a finite number"))
    } else if value <= 0.0 {
        Some(format!("{} tok/s is not positive", shown(value)))
    } else if value > max {
        Some(format!(
            "{} tok/s is more than {max:e}, {MAX_TOK_PER_S_PER_GPU:e} per GPU (2 FLOPs per active parameter of the smallest model at 20 PFLOP/s)",
            shown(value)
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_say_why() {
        assert!(
            throughput_problem(f64::NAN, None)
                .unwrap()
                .contains("not a finite")
        );
        assert!(
            throughput_problem(-50.0, Some(8))
                .unwrap()
                .contains("not positive")
        );
        assert!(
            throughput_problem(1e300, Some(8))
                .unwrap()
                .contains("per GPU")
        );
        assert_eq!(throughput_problem(5154.0, Some(8)), None);
        assert_eq!(throughput_problem(1e300, None), None);
        assert!(latency_problem(f64::INFINITY).is_some());
        assert!(latency_problem(-1.0).unwrap().contains("negative"));
        assert!(latency_problem(1e9).unwrap().contains("6 hours"));
        assert_eq!(latency_problem(0.0), None);
    }

    #[test]
    fn one_stream_of_glm5_on_rtx_pro_6000_is_bounded_near_700_tok_s() {
        let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let opts = ServerOptions::default();
        let b = max_stream_tok_per_s(&m, &spec, &opts);
        assert!((600.0..800.0).contains(&b), "{b}");
        // ~11 tok/s measured on that box passes; 50,000 does not
        assert!(b > 11.0 && b < 50_000.0);
    }
}
