//! A multimodal checkpoint's vision tower, as far as memory is concerned.

use serde::{Deserialize, Serialize};

/// The vision tower (a ViT) and its projector into the language model, as a multimodal
/// checkpoint's `vision_config` describes them; stored in BF16 (the quantizers of the carried
/// checkpoints leave them out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionSpec {
    /// HF `architectures[0]` of the checkpoint (`KimiK25ForConditionalGeneration`): SGLang treats
    /// a checkpoint as multimodal by this name (`model_config.py::multimodal_model_archs`).
    pub architecture: String,
    /// Transformer blocks of the tower (`vt_num_hidden_layers`, else `num_hidden_layers`).
    pub num_layers: u32,
    /// Width of the tower (`vt_hidden_size`, else `hidden_size`).
    pub hidden_size: u64,
    /// MLP width of a block (`vt_intermediate_size`, else `intermediate_size`).
    pub intermediate_size: u64,
    /// Side of a square patch in pixels (`patch_size`).
    pub patch_size: u32,
    /// Learned position-embedding positions (`init_pos_emb_height × init_pos_emb_width`; 0 when
    /// the config gives none).
    pub pos_emb_positions: u64,
    /// Patches merged into one language-model token (`merge_kernel_size` product; 1 if absent).
    pub merge_patches: u32,
}

impl VisionSpec {
    /// Parameters of one GPU's copy under TP `tp`: the blocks' attention (qkv + output, with
    /// biases) split across TP, everything else replicated on every rank (the blocks' MLP and
    /// norms, patch and position embeddings, the projector: layer norm, a square merge layer and
    /// the projection to the language model's `text_hidden` width). From SGLang's
    /// `models/kimi_k25.py` / `kimi_vl_moonvit.py` placement (attention `QKVParallelLinear`,
    /// MLP and projector replicated).
    pub fn params_per_gpu(&self, tp: u32, text_hidden: u64) -> u64 {
        let (h, i, l) = (
            self.hidden_size,
            self.intermediate_size,
            self.num_layers as u64,
        );
        let attention = l * (4 * h * h + 4 * h) / tp.max(1) as u64;
        let mlp_and_norms = l * (2 * h * i + i + h + 4 * h);
        let p = self.patch_size as u64;
        let embeddings = 3 * p * p * h + h + self.pos_emb_positions * h + 2 * h;
        let merged = h * self.merge_patches.max(1) as u64;
        let projector = 2 * h + merged * merged + merged + merged * text_hidden + text_hidden;
        attention + mlp_and_norms + embeddings + projector
    }
}
