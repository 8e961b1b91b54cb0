//! What a quantized checkpoint keeps in BF16, grouped by module and layers, for people.

use super::{Bf16Modules, LayerSet, ModelPart, ModelSpec};
use crate::format::WeightFormat;
use std::collections::BTreeMap;

impl ModelSpec {
    /// The modules this checkpoint keeps in BF16 while others are quantized, with the layers
    /// where they are and their bytes; empty for a checkpoint stored in BF16 throughout.
    /// Whole-model tensors (`embed_tokens`, `lm_head`) are listed when any module is quantized;
    /// norms and routers (always BF16) are not.
    pub fn bf16_modules(&self) -> Vec<Bf16Modules> {
        let mut by_name: BTreeMap<&'static str, (Vec<u32>, f64, usize)> = BTreeMap::new();
        let mut order = 0;
        let mut any_quantized = false;
        for layer in self.all_layer_indices() {
            for m in self.layer_modules(layer) {
                if self.module_format(layer, &m) == WeightFormat::Bf16 {
                    let e = by_name.entry(m.name).or_insert_with(|| {
                        order += 1;
                        (Vec::new(), 0.0, order)
                    });
                    e.0.push(layer);
                    e.1 += m.params as f64 * 2.0;
                } else {
                    any_quantized = true;
                }
            }
        }
        if !any_quantized {
            return Vec::new();
        }
        let mut out: Vec<(usize, Bf16Modules)> = by_name
            .into_iter()
            .map(|(name, (layers, bytes, order))| {
                (
                    order,
                    Bf16Modules {
                        module: name.to_string(),
                        layers: LayerSet::from_layers(layers),
                        bytes: bytes.round() as u64,
                    },
                )
            })
            .collect();
        out.sort_by_key(|(o, _)| *o);
        let params = self.params_by_part();
        let mut whole = Vec::new();
        for (name, part) in [
            ("model.embed_tokens", ModelPart::Embeddings),
            ("lm_head", ModelPart::LmHead),
        ] {
            let n = params[&part].saturating_sub(if part == ModelPart::LmHead {
                self.hidden_size
            } else {
                0
            });
            if n > 0 && self.format_of(part) == WeightFormat::Bf16 {
                whole.push(Bf16Modules {
                    module: name.to_string(),
                    layers: LayerSet::default(),
                    bytes: 2 * n,
                });
            }
        }
        whole.extend(out.into_iter().map(|(_, m)| m));
        whole
    }
}

/// One line per group of modules that stayed BF16 in the same layers, the modules of one block
/// written together: `self_attn.{q_a_proj, kv_b_proj} (layers 0-77): 3.42 GB`. MTP layers (from
/// `num_layers` on, as the checkpoint numbers them) are named as such.
pub fn describe_bf16_modules(spec: &ModelSpec) -> Vec<String> {
    let mut lines: Vec<(String, Vec<String>, LayerSet, u64)> = Vec::new();
    for g in spec.bf16_modules() {
        let (block, leaf) = match g.module.rsplit_once('.') {
            Some((b, l)) if !g.layers.is_empty() => (b.to_string(), l.to_string()),
            _ => (String::new(), g.module.clone()),
        };
        match lines.last_mut() {
            Some(last) if last.0 == block && last.2 == g.layers && !block.is_empty() => {
                last.1.push(leaf);
                last.3 += g.bytes;
            }
            _ => lines.push((block, vec![leaf], g.layers, g.bytes)),
        }
    }
    let mtp = spec.num_layers..spec.num_layers + spec.num_mtp_layers;
    lines
        .into_iter()
        .map(|(block, leaves, layers, bytes)| {
            let name = match (block.is_empty(), leaves.len()) {
                (true, _) => leaves.join(", "),
                (false, 1) => format!("{block}.{}", leaves[0]),
                (false, _) => format!("{block}.{{{}}}", leaves.join(", ")),
            };
            let at = if layers.is_empty() {
                String::new()
            } else if layers
                .0
                .iter()
                .all(|r| mtp.start <= r.start && r.end <= mtp.end)
            {
                format!(" (MTP layer {layers})")
            } else {
                format!(" (layers {layers})")
            };
            format!("{name}{at}: {:.2} GB", bytes as f64 / 1e9)
        })
        .collect()
}
