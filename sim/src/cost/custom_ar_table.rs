//! SGLang's custom all-reduce on NVLink boxes as measured, in place of the one-shot model where a
//! table holds the GPU and group size (`data/observations/custom-allreduce-sglang-0.5.14.csv`,
//! distilled by `scripts/distill-custom-allreduce.py` from NVIDIA aiconfigurator's database:
//! SGLang 0.5.14's `tensor_model_parallel_all_reduce`, bf16, CUDA-graph replay, 2 / 4 / 8 GPUs of
//! an HGX B200, H200 or H100 box, 256 B – 8 MiB).
//!
//! The model it replaces (a 5 µs kernel plus the message at the NCCL curve's large-message rate,
//! [`super::comm`]) misses both ends the tables show: the kernel is 2.3–3.7 µs on Hopper up to a
//! few KiB, and from tens of KiB on the one-shot kernel's `n − 1` peer loads share each GPU's
//! NVLink ports rather than running at the NCCL rate (B200, 8 GPUs: 786 KiB, a 64-token decode
//! step of a 6,144-wide model, takes 13.3 µs, where the model gave 6.7). Above 256 KiB (8 GPUs)
//! the kernel is the two-stage one; the table holds whichever ran.
//!
//! The collector times one call repeated, so each size's row can carry a first-call or
//! scheduling outlier (B200 8 GPUs 256 B: 7.0 µs against 4.5 at 512 B; H100 8 GPUs 2 KiB: 38 µs):
//! a size is read as the least time of it and every larger size (a larger message is never
//! faster), which drops those and keeps the rest as measured.

use std::collections::BTreeMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../data/observations/custom-allreduce-sglang-0.5.14.csv");

/// One GPU kind and group size's times: (message bytes, seconds), ascending in bytes, made
/// non-decreasing (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomArCurve {
    pub gpu: String,
    pub num_gpus: u32,
    points: Vec<(f64, f64)>,
}

fn curves() -> &'static BTreeMap<(String, u32), CustomArCurve> {
    static C: OnceLock<BTreeMap<(String, u32), CustomArCurve>> = OnceLock::new();
    C.get_or_init(|| {
        let mut raw: BTreeMap<(String, u32), Vec<(f64, f64)>> = BTreeMap::new();
        for l in TABLE.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            let (Some(gpu), Some(Ok(n)), Some(Ok(b)), Some(Ok(us))) = (
                f.first(),
                f.get(1).map(|s| s.trim().parse::<u32>()),
                f.get(2).map(|s| s.trim().parse::<f64>()),
                f.get(3).map(|s| s.trim().parse::<f64>()),
            ) else {
                continue;
            };
            raw.entry((gpu.to_string(), n))
                .or_default()
                .push((b, us * 1e-6));
        }
        raw.into_iter()
            .map(|((gpu, n), mut points)| {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut least = f64::INFINITY;
                for p in points.iter_mut().rev() {
                    least = least.min(p.1);
                    p.1 = least;
                }
                let c = CustomArCurve {
                    gpu: gpu.clone(),
                    num_gpus: n,
                    points,
                };
                ((gpu, n), c)
            })
            .collect()
    })
}

impl CustomArCurve {
    /// The curve measured for GPU preset `gpu` (`b200`, `h200`, `h100-sxm`) and `num_gpus`.
    pub fn find(gpu: &str, num_gpus: usize) -> Option<&'static CustomArCurve> {
        curves()
            .get(&(gpu.to_string(), num_gpus as u32))
            .filter(|c| c.points.len() >= 2)
    }

    /// Seconds for a message of `bytes`: the first row below the smallest size, linear between
    /// rows, and past the largest row (8 MiB, SGLang's limit) at the last two rows' rate.
    pub fn time_s(&self, bytes: f64) -> f64 {
        let p = &self.points;
        let i = p.partition_point(|&(x, _)| x < bytes);
        if i == 0 {
            return p[0].1;
        }
        let (a, b) = if i == p.len() {
            (p[p.len() - 2], p[p.len() - 1])
        } else {
            (p[i - 1], p[i])
        };
        a.1 + (b.1 - a.1) * (bytes - a.0) / (b.0 - a.0)
    }

    /// Where the price came from, for the cost model's notes.
    pub fn note(&self) -> String {
        format!(
            "custom all-reduce: SGLang 0.5.14's kernel measured on {} {} GPUs (aiconfigurator, CUDA graph), {:.1} µs at 16 KiB, {:.1} µs at 1 MiB",
            self.num_gpus,
            self.gpu,
            self.time_s(16384.0) * 1e6,
            self.time_s(1048576.0) * 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows as distilled, outliers read away: B200 8 GPUs at 786 KiB (a 64-token step of a
    /// 6,144-wide model) between the 512 KiB and 1 MiB rows, 11.6 and 15.0 µs; its 256 B row's
    /// 7.0 µs read as the 512 B row's 4.5; H100's 38 µs at 2 KiB as its 4 KiB row's 3.5.
    #[test]
    fn the_tables_read_as_measured_and_never_fall_with_size() {
        let b200 = CustomArCurve::find("b200", 8).unwrap();
        let t = b200.time_s(786_432.0) * 1e6;
        assert!((11.6..15.0).contains(&t), "{t}");
        assert!((b200.time_s(256.0) * 1e6 - 4.526).abs() < 1e-6);
        let h100 = CustomArCurve::find("h100-sxm", 8).unwrap();
        assert!(h100.time_s(2048.0) * 1e6 < 4.0);
        for n in [2, 4, 8] {
            for gpu in ["b200", "h200", "h100-sxm"] {
                let c = CustomArCurve::find(gpu, n).unwrap();
                assert!(c.points.windows(2).all(|w| w[1].1 >= w[0].1), "{gpu} {n}");
            }
        }
        assert!(CustomArCurve::find("rtx-pro-6000-server", 8).is_none());
        assert!(CustomArCurve::find("b200", 6).is_none());
    }
}
