//! Whether a measured run's figures can be a measurement at all ([`crate::plausible`]): a
//! throughput that is negative, zero, NaN or infinite, a latency that is negative or longer than
//! bench_serving waits, a concurrency of 0, and, once the machine and model are known
//! ([`check_speed`]), a stream decoding faster than the GPUs can read the model's weights. Any one
//! refuses the file, naming the row and the field: a run that is dropped silently would leave the
//! comparison to the others ("RMS 0.000 over 0 values").

use super::{MeasuredPoint, ReadError};
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::plausible::{latency_problem, max_stream_tok_per_s, shown, throughput_problem};
use models::ModelSpec;

/// The first field of `p` that is no plausible measurement, with why; any number of GPUs.
pub fn implausible(p: &MeasuredPoint) -> Option<(&'static str, String)> {
    let m = &p.metrics;
    let throughputs = [
        ("output_throughput", m.output_throughput),
        ("total_throughput", m.total_throughput),
        ("request_throughput", m.request_throughput),
    ];
    let latencies = [
        ("mean_ttft_ms", m.mean_ttft_ms),
        ("median_ttft_ms", m.median_ttft_ms),
        ("mean_tpot_ms", m.mean_tpot_ms),
        ("median_tpot_ms", m.median_tpot_ms),
        ("mean_itl_ms", m.mean_itl_ms),
        ("mean_e2e_latency_ms", m.mean_e2e_latency_ms),
    ];
    let thr = throughputs.into_iter().find_map(|(k, v)| {
        // GPUs unknown here: the upper bound is `check_speed`'s
        Some((k, throughput_problem(v?, None)?))
    });
    let lat = || {
        latencies
            .into_iter()
            .find_map(|(k, v)| Some((k, latency_problem(v?)?)))
    };
    let conc = || {
        (p.workload.max_concurrency == Some(0)).then(|| {
            (
                "max_concurrency",
                "0: no request ran (leave it out for an open-loop run)".to_string(),
            )
        })
    };
    let duration = || {
        let d = m.duration?;
        (!(d.is_finite() && d > 0.0))
            .then(|| ("duration", format!("{} s is not a positive time", shown(d))))
    };
    thr.or_else(lat).or_else(duration).or_else(conc)
}

/// Refuses a point whose streams decode faster than `machine` can run `spec`
/// ([`max_stream_tok_per_s`]), or whose server makes more tokens than its GPUs can
/// ([`throughput_problem`]): the output throughput over the concurrency, or 1000 / TPOT or ITL.
pub fn check_speed(
    points: &[MeasuredPoint],
    machine: &Machine,
    spec: &ModelSpec,
    opts: &ServerOptions,
) -> Result<(), ReadError> {
    let max = max_stream_tok_per_s(machine, spec, opts);
    let why = |value: f64| {
        format!(
            "{} tok/s per stream is more than {max:.0}, the most {} GPUs of {:.0} GB/s can \
             decode {} (its {:.1} B active weights read once per step at 4 bits); if the run used \
             speculative decoding, pass its --speculative-* flags",
            shown(value),
            machine.gpu_count,
            machine.gpu.memory_gb_per_s,
            spec.name,
            spec.active_params_per_token() as f64 / 1e9
        )
    };
    for p in points {
        let m = &p.metrics;
        let per_stream = p
            .workload
            .max_concurrency
            .filter(|c| *c > 0)
            .and_then(|c| Some(m.output_throughput? / f64::from(c)));
        let from_latency = |ms: Option<f64>| ms.filter(|x| *x > 0.0).map(|x| 1e3 / x);
        let found = [
            ("output_throughput", per_stream),
            ("mean_tpot_ms", from_latency(m.mean_tpot_ms)),
            ("median_tpot_ms", from_latency(m.median_tpot_ms)),
            ("mean_itl_ms", from_latency(m.mean_itl_ms)),
        ]
        .into_iter()
        .find_map(|(k, v)| v.filter(|v| *v > max).map(|v| (k, why(v))))
        .or_else(|| {
            let (k, v) = ("output_throughput", m.output_throughput?);
            Some((k, throughput_problem(v, Some(machine.gpu_count))?))
        });
        if let Some((field, problem)) = found {
            return Err(ReadError::Implausible {
                source_: p.source.clone(),
                field: field.into(),
                problem,
            });
        }
    }
    Ok(())
}
