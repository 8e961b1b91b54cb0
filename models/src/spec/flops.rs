//! FLOPs per token of decode and prefill, and the tokens attention reads (DSA's top-k cap, the
//! sliding window), layer kind by layer kind.

use super::{AttentionSpec, LayerAttention, ModelSpec};

impl ModelSpec {
    /// Tokens a query attends to when `context_tokens` are cached: DSA caps it at `index_topk`.
    pub fn attended_tokens(&self, context_tokens: u64) -> u64 {
        match self.attention.indexer() {
            Some(ix) => context_tokens.min(ix.topk as u64),
            None => context_tokens,
        }
    }

    /// Attention-score FLOPs of one query token over `attended` tokens in one layer, with the
    /// kernel SGLang runs: MLA decode absorbs `kv_b_proj` and attends in the latent space
    /// (`2·heads·attended·(2·kv_lora + rope)`), MLA prefill and GQA use per-head q·k and p·v.
    fn attention_score_flops(&self, attended: f64, absorbed: bool) -> f64 {
        self.attention_flops_per_pair(absorbed) * attended
    }

    /// Attention FLOPs per (query, attended key) pair in one layer, all heads together: scores
    /// and the weighted sum of values (see [`Self::attention_score_flops`]); the cost model
    /// divides it among the attention ranks. The one place these are written.
    pub fn attention_flops_per_pair(&self, absorbed: bool) -> f64 {
        match self.attention {
            AttentionSpec::Gqa {
                num_heads,
                head_dim,
                ..
            } => 4.0 * num_heads as f64 * head_dim as f64,
            AttentionSpec::Mla {
                num_heads,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                ..
            } => {
                let per_head = if absorbed {
                    2.0 * kv_lora_rank as f64 + qk_rope_head_dim as f64
                } else {
                    (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) as f64
                };
                2.0 * num_heads as f64 * per_head
            }
        }
    }

    /// DSA indexer score FLOPs for one query over `context` cached index keys in one layer.
    fn indexer_score_flops(&self, context: f64) -> f64 {
        self.attention.indexer().map_or(0.0, |ix| {
            2.0 * ix.num_heads as f64 * ix.head_dim as f64 * context
        })
    }

    /// FLOPs to decode one token with `context_tokens` already cached: `2·active params`
    /// (MLA absorbed-projection overhead ignored) plus attention over the attended tokens in full
    /// layers (DSA-capped), over the window in sliding layers, the Gated-DeltaNet state update in
    /// linear layers and, with DSA, the indexer's scan of every cached token. Main model only.
    pub fn flops_per_token_decode(&self, context_tokens: u64) -> f64 {
        let full = self.attention_score_flops(self.attended_tokens(context_tokens) as f64, true);
        let sliding = self.attention_score_flops(self.sliding_tokens(context_tokens) as f64, true);
        let linear = self
            .linear_attention
            .map_or(0.0, |la| la.decode_flops_per_token());
        self.flops_with(
            [full, sliding, linear],
            self.indexer_score_flops(context_tokens as f64),
        )
    }

    /// Mean FLOPs per token to prefill a prompt of `context_tokens` tokens with causal attention
    /// (token `i` attends to `i` tokens, capped by DSA's top-k, or by the window in sliding
    /// layers; the indexer scans all `i`); linear layers run the chunked Gated-DeltaNet kernel.
    pub fn flops_per_token_prefill(&self, context_tokens: u64) -> f64 {
        let n = context_tokens.max(1) as f64;
        let mean_context = (n + 1.0) / 2.0;
        let mean_attended = match self.attention.indexer() {
            Some(ix) => mean_capped(n, ix.topk as f64),
            None => mean_context,
        };
        let mean_sliding = self
            .sliding_window
            .map_or(mean_context, |w| mean_capped(n, w as f64));
        let linear = self
            .linear_attention
            .map_or(0.0, |la| la.prefill_flops_per_token());
        self.flops_with(
            [
                self.attention_score_flops(mean_attended, false),
                self.attention_score_flops(mean_sliding, false),
                linear,
            ],
            self.indexer_score_flops(mean_context),
        )
    }

    /// `2·active params` plus the per-layer attention FLOPs of each kind (`[full, sliding,
    /// linear]`) over the layers of that kind, and indexer FLOPs over the layers that run one.
    fn flops_with(&self, per_kind: [f64; 3], indexer_per_layer: f64) -> f64 {
        let kinds = [
            LayerAttention::Full,
            LayerAttention::Sliding,
            LayerAttention::Linear,
        ];
        let attention: f64 = kinds
            .iter()
            .zip(per_kind)
            .map(|(&k, f)| self.num_layers_of_kind(k) as f64 * f)
            .sum();
        2.0 * self.active_params_per_token() as f64
            + attention
            + self.num_indexer_layers() as f64 * indexer_per_layer
    }
}

/// Mean of `min(i, cap)` for `i = 1..=n`.
fn mean_capped(n: f64, cap: f64) -> f64 {
    let k = cap.min(n);
    (k * (k + 1.0) / 2.0 + (n - k) * k) / n
}
