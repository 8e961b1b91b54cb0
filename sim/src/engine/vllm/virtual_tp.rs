//! The b12x vLLM fork's "virtual TP" (local-inference-lab/vllm `vllm/config/virtual_tp.py`,
//! `maybe_apply_b12x_virtual_tp_padding`): a DSA model whose attention heads the TP size does
//! not divide (GLM-5.x's 64 at TP6) is run with its heads, expert slices and vocabulary padded
//! ([`models::head_padding`]) instead of refused. Stock vLLM and SGLang refuse such a layout.
//!
//! No flag asks for it: the fork pads on its own when the sparse-MLA attention it runs is
//! B12X's, and then requires the native b12x MoE backend and no expert parallelism
//! (`_validate_b12x_virtual_tp_config`). shardwise reads the fork from its attention backend's
//! name, `--attention-backend B12X_MLA_SPARSE`, which only the fork has. Not read (assumed
//! absent): the fork's default of B12X attention on any SM120 GPU without the flag, its
//! `VLLM_USE_B12X_MOE=1` spelling of the MoE backend, and the older `--virtual-tp-sharding
//! b12x-padded` flag (DeepSeek-V4 only).

use crate::engine::Engine;
use crate::options::ServerOptions;
use models::head_padding::HeadPadding;
use models::{Layout, ModelSpec};
use std::borrow::Cow;

/// The fork's sparse-MLA attention backend, as `--attention-backend` names it.
pub const B12X_ATTENTION_BACKEND: &str = "B12X_MLA_SPARSE";
/// The MoE backend the padding requires (`--moe-backend b12x`).
const B12X_MOE_BACKEND: &str = "b12x";

/// Whether `opts` run the fork's B12X sparse-MLA attention under vLLM.
pub fn runs_b12x_attention(opts: &ServerOptions) -> bool {
    opts.engine == Engine::Vllm
        && opts
            .attention_backend
            .as_deref()
            .is_some_and(|b| b.eq_ignore_ascii_case(B12X_ATTENTION_BACKEND))
}

/// The padding the fork applies to `model` under `layout` with `opts`: `Ok(None)` where it pads
/// nothing (the TP size divides the heads, another engine or attention backend, a model it does
/// not pad: the layout check then refuses as the stock engines do), `Err` with the fork's reason
/// where it refuses the launch.
pub fn head_padding(
    model: &ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
) -> Result<Option<HeadPadding>, String> {
    if !runs_b12x_attention(opts) || layout.dp_attention {
        return Ok(None);
    }
    let Some(p) = model.head_padding(layout.tp) else {
        return Ok(None);
    };
    if layout.ep > 1 {
        return Err(format!(
            "the b12x fork's virtual TP padding ({}) is incompatible with expert parallelism: drop --enable-expert-parallel, or use a --tp that divides the {} heads",
            p.describe(),
            p.heads.0
        ));
    }
    let b12x_moe = opts
        .moe_runner_backend
        .as_deref()
        .is_some_and(|b| b.eq_ignore_ascii_case(B12X_MOE_BACKEND));
    if !b12x_moe {
        return Err(format!(
            "the b12x fork's virtual TP padding ({}) requires the native B12X MoE backend: pass --moe-backend b12x, or use a --tp that divides the {} heads",
            p.describe(),
            p.heads.0
        ));
    }
    Ok(Some(p))
}

/// `model` as the server holds it under `layout`: padded where the fork pads it, with the note
/// that says so; else `model` itself.
pub fn served_spec<'a>(
    model: &'a ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
) -> Result<(Cow<'a, ModelSpec>, Option<String>), String> {
    Ok(match head_padding(model, layout, opts)? {
        None => (Cow::Borrowed(model), None),
        Some(p) => (
            Cow::Owned(model.with_head_padding(&p)),
            Some(format!(
                "vLLM b12x fork (--attention-backend {B12X_ATTENTION_BACKEND}): virtual TP padding, {}; the zero-filled heads, expert columns and vocabulary rows are stored, read and computed as real ones (local-inference-lab/vllm vllm/config/virtual_tp.py)",
                p.describe()
            )),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(attention: Option<&str>, moe: Option<&str>) -> ServerOptions {
        ServerOptions {
            engine: Engine::Vllm,
            attention_backend: attention.map(str::to_string),
            moe_runner_backend: moe.map(str::to_string),
            ..ServerOptions::default()
        }
    }

    #[test]
    fn the_fork_pads_only_with_its_attention_and_moe_backends() {
        let glm = ModelSpec::preset("glm-5.2-nvfp4").unwrap();
        let tp6 = Layout::tp(6);
        let fork = opts(Some("B12X_MLA_SPARSE"), Some("b12x"));
        let p = head_padding(&glm, &tp6, &fork).unwrap().unwrap();
        assert_eq!(p.heads, (64, 96));
        // stock vLLM (another backend) pads nothing: the layout check refuses as before
        for stock in [opts(None, Some("b12x")), opts(Some("FLASHINFER_MLA"), None)] {
            assert_eq!(head_padding(&glm, &tp6, &stock).unwrap(), None);
        }
        // SGLang never pads
        let sglang = ServerOptions {
            engine: Engine::Sglang,
            ..fork.clone()
        };
        assert_eq!(head_padding(&glm, &tp6, &sglang).unwrap(), None);
        // the fork refuses without its MoE backend, and with EP
        let err = head_padding(&glm, &tp6, &opts(Some("B12X_MLA_SPARSE"), None)).unwrap_err();
        assert!(err.contains("--moe-backend b12x"), "{err}");
        let ep6 = Layout { ep: 6, ..tp6 };
        assert!(
            head_padding(&glm, &ep6, &fork)
                .unwrap_err()
                .contains("expert parallelism")
        );
        // TP8 divides the heads: nothing to pad
        assert_eq!(head_padding(&glm, &Layout::tp(8), &fork).unwrap(), None);
        let (spec, note) = served_spec(&glm, &tp6, &fork).unwrap();
        assert_eq!(spec.attention.num_heads(), 96);
        assert!(note.unwrap().contains("64 -> 96"));
    }
}
