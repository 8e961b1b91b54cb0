//! A checkpoint's BF16 weights quantized as the engine loads them (vLLM's online quantization,
//! `--quantization-config '{"linear": {"weight": "mxfp8"}, "ignore": […]}'` or a `--quantization`
//! shorthand; either engine's `--quantization fp8` on a BF16 checkpoint): the bytes and kernels
//! the served model has, not the checkpoint's.

use crate::format::WeightFormat;
use crate::quant::pattern_matches;
use crate::spec::{LayerSet, ModelPart, ModelSpec, ModuleOverride};

/// The parts whose weights are `LinearBase` layers an online linear spec converts where the
/// checkpoint leaves them in BF16: attention (with the DSA indexer's `wq_b` / `wk`, built with
/// the model's quantization config), dense MLPs and shared experts. Not the routed experts
/// (`FusedMoE`: the spec's `moe` side), the router gates and the indexer's `weights_proj` (built
/// without a quantization config), the embedding or the LM head (vocabulary-parallel
/// embeddings, not `LinearBase`), nor the MTP layers, whose draft model's loading of the
/// config is not stated (vLLM main `vllm/config/quantization.py`, `online/mxfp8.py` @28be48fa;
/// `deepseek_v2.py`'s gate and indexer).
const LINEAR_PARTS: [ModelPart; 3] = [
    ModelPart::Attention,
    ModelPart::DenseMlp,
    ModelPart::SharedExperts,
];

impl ModelSpec {
    /// Whether the checkpoint stores every part in BF16 (what a `--quantization` method
    /// quantizes at load; on a quantized checkpoint the method names that checkpoint's scheme).
    pub fn stored_in_bf16(&self) -> bool {
        self.formats_used().iter().all(|x| *x == WeightFormat::Bf16)
    }

    /// Every format the checkpoint stores a quantizable part or a module override in (the
    /// embedding table, never quantized by the supported schemes, left out), without repeats.
    pub fn formats_used(&self) -> Vec<WeightFormat> {
        let f = &self.formats;
        let mut out: Vec<WeightFormat> = Vec::new();
        for x in [
            f.attention,
            f.dense_mlp,
            f.shared_experts,
            f.routed_experts,
            f.lm_head,
            f.mtp,
        ]
        .into_iter()
        .chain(self.module_formats.overrides.iter().map(|o| o.format))
        {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        out
    }

    /// This spec as an online quantization loads it: each of [`LINEAR_PARTS`] stored in BF16
    /// takes `linear`, BF16 routed experts take `moe` (the experts of the MTP layers too being
    /// beyond what is stated, they keep the checkpoint's), and a linear module whose name an
    /// `ignore` entry matches (`re:` regex or glob, as vLLM and compressed-tensors write them:
    /// `re:.*kv_b_proj`) stays BF16 in every main-model layer. Parts the checkpoint quantized keep
    /// their format. Returns the spec and the parts converted.
    pub fn with_online_quant(
        &self,
        linear: Option<WeightFormat>,
        moe: Option<WeightFormat>,
        ignore: &[String],
    ) -> (ModelSpec, Vec<ModelPart>) {
        let mut s = self.clone();
        let mut converted = Vec::new();
        let sides = LINEAR_PARTS
            .iter()
            .map(|p| (*p, linear))
            .chain([(ModelPart::RoutedExperts, moe)]);
        for (part, format) in sides {
            let Some(format) = format else { continue };
            let f = match part {
                ModelPart::Attention => &mut s.formats.attention,
                ModelPart::DenseMlp => &mut s.formats.dense_mlp,
                ModelPart::SharedExperts => &mut s.formats.shared_experts,
                _ if self.moe.is_some() => &mut s.formats.routed_experts,
                _ => continue,
            };
            if *f == WeightFormat::Bf16 {
                *f = format;
                converted.push(part);
            }
        }
        let mut kept: Vec<(&'static str, Vec<u32>)> = Vec::new();
        for layer in 0..self.num_layers {
            for m in self.layer_modules(layer) {
                let full = format!("model.layers.{layer}.{}", m.name);
                let ignored = ignore
                    .iter()
                    .any(|p| pattern_matches(p, m.name) || pattern_matches(p, &full));
                if !ignored || !converted.contains(&m.base) {
                    continue;
                }
                match kept.iter_mut().find(|(n, _)| *n == m.name) {
                    Some((_, layers)) => layers.push(layer),
                    None => kept.push((m.name, vec![layer])),
                }
            }
        }
        for (name, layers) in kept {
            s.module_formats.overrides.push(ModuleOverride {
                module: name.to_string(),
                layers: LayerSet::from_layers(layers),
                format: WeightFormat::Bf16,
            });
        }
        (s, converted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GLM-5.2 NVFP4 under `{"linear": {"weight": "mxfp8"}, "ignore": ["re:.*kv_b_proj"]}`: its
    /// BF16 attention, dense MLPs and shared experts take MXFP8 (1 + 1/32 bytes a value), the
    /// NVFP4 routed experts and the MTP layer stay, and `kv_b_proj` stays BF16 in every layer:
    /// the main model's weights shrink by what those parts' BF16 bytes less their MXFP8 bytes
    /// are, and no more.
    #[test]
    fn online_mxfp8_converts_the_bf16_linears_but_the_ignored_ones() {
        let spec = ModelSpec::preset("glm-5.2-nvfp4").unwrap();
        let ignore = vec!["re:.*kv_b_proj".to_string()];
        let (q, parts) = spec.with_online_quant(Some(WeightFormat::Mxfp8), None, &ignore);
        assert_eq!(
            parts,
            [
                ModelPart::Attention,
                ModelPart::DenseMlp,
                ModelPart::SharedExperts
            ]
        );
        assert_eq!(q.formats.routed_experts, WeightFormat::Nvfp4);
        assert_eq!(q.formats.mtp, spec.formats.mtp);
        let format_of = |name: &str| {
            let m = q
                .layer_modules(5)
                .into_iter()
                .find(|m| m.name.ends_with(name));
            q.module_format(5, &m.unwrap())
        };
        assert_eq!(format_of("kv_b_proj"), WeightFormat::Bf16);
        assert_eq!(format_of("q_b_proj"), WeightFormat::Mxfp8);
        let (before, after) = (
            spec.total_weight_bytes_without_mtp(),
            q.total_weight_bytes_without_mtp(),
        );
        assert!(after < before, "{after} < {before}");
        // nothing ignored: kv_b_proj converts too, so the model is smaller still
        let (all, _) = spec.with_online_quant(Some(WeightFormat::Mxfp8), None, &[]);
        assert!(all.total_weight_bytes_without_mtp() < after);
        // a checkpoint with no BF16 linear part converts nothing
        let fp8 = ModelSpec::preset("glm-5-fp8").unwrap();
        let (same, none) = fp8.with_online_quant(Some(WeightFormat::Mxfp8), None, &ignore);
        assert!(none.is_empty());
        assert_eq!(
            same.total_weight_bytes_without_mtp(),
            fp8.total_weight_bytes_without_mtp()
        );
    }

    /// `--quantization fp8` on a BF16 MoE checkpoint: linears and routed experts alike take FP8
    /// (one byte a value), about halving the weights; the same on an FP8 checkpoint changes
    /// nothing.
    #[test]
    fn online_fp8_halves_a_bf16_moe_checkpoint() {
        let bf16 = ModelSpec::preset("qwen3-30b-a3b").unwrap();
        let fp8 = WeightFormat::Fp8 { block: 0 };
        let (q, parts) = bf16.with_online_quant(Some(fp8), Some(fp8), &[]);
        assert!(parts.contains(&ModelPart::RoutedExperts), "{parts:?}");
        assert_eq!(q.formats.routed_experts, fp8);
        let ratio = q.total_weight_bytes_without_mtp() as f64
            / bf16.total_weight_bytes_without_mtp() as f64;
        assert!((0.5..0.6).contains(&ratio), "{ratio}");
        let glm = ModelSpec::preset("glm-5-fp8").unwrap();
        let (same, _) = glm.with_online_quant(Some(fp8), Some(fp8), &[]);
        assert_eq!(same.total_weight_bytes(), glm.total_weight_bytes());
        assert!(bf16.stored_in_bf16() && !glm.stored_in_bf16());
    }
}
