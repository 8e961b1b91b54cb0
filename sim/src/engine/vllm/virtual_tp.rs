//! The b12x vLLM fork's "virtual TP" (local-inference-lab/vllm `vllm/config/virtual_tp.py`,
//! `maybe_apply_b12x_virtual_tp_padding`): a DSA model whose attention heads the TP size does
//! not divide (GLM-5.x's 64 at TP6) is run with its heads, expert slices and vocabulary padded
//! ([`models::head_padding`]) instead of refused. Stock vLLM and SGLang refuse such a layout.
//!
//! No flag asks for it: the fork pads on its own when a DSA model runs its B12X sparse-MLA
//! attention (`--attention-backend B12X_MLA_SPARSE`, or any DSA model on an SM120 GPU: its
//! `_uses_b12x_attention`) or its native b12x MoE (`--moe-backend b12x`), and then requires both
//! and no expert parallelism (`_validate_b12x_virtual_tp_config`). Both spellings are the fork's
//! own: stock vLLM has neither a `B12X_MLA_SPARSE` backend nor a `b12x` MoE backend (its
//! `MoEBackend` literal; upstream's is `flashinfer_b12x`). Not read (assumed absent): the fork's
//! `VLLM_USE_B12X_MOE=1` spelling of the MoE backend with `--moe-backend auto`, and the older
//! `--virtual-tp-sharding b12x-padded` flag (DeepSeek-V4 only).

use crate::engine::Engine;
use crate::options::ServerOptions;
use models::head_padding::HeadPadding;
use models::{Layout, ModelSpec};
use std::borrow::Cow;

/// The fork's sparse-MLA attention backend, as `--attention-backend` names it.
pub const B12X_ATTENTION_BACKEND: &str = "B12X_MLA_SPARSE";
/// The MoE backend the padding requires (`--moe-backend b12x`).
const B12X_MOE_BACKEND: &str = "b12x";

/// Whether `opts` name the fork's B12X sparse-MLA attention backend under vLLM.
pub fn runs_b12x_attention(opts: &ServerOptions) -> bool {
    opts.engine == Engine::Vllm
        && opts
            .attention_backend
            .as_deref()
            .is_some_and(|b| b.eq_ignore_ascii_case(B12X_ATTENTION_BACKEND))
}

/// Whether `opts` name the fork's native b12x MoE backend under vLLM.
fn runs_b12x_moe(opts: &ServerOptions) -> bool {
    opts.engine == Engine::Vllm
        && opts
            .moe_runner_backend
            .as_deref()
            .is_some_and(|b| b.eq_ignore_ascii_case(B12X_MOE_BACKEND))
}

/// The padding the fork applies to `model` under `layout` with `opts` on a GPU of SM120 or not:
/// `Ok(None)` where it pads nothing (the TP size divides the heads, another engine or backend, a
/// model it does not pad: the layout check then refuses as the stock engines do), `Err` with the
/// fork's reason where it refuses the launch.
pub fn head_padding(
    model: &ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
    sm120: bool,
) -> Result<Option<HeadPadding>, String> {
    let (attention, moe) = (runs_b12x_attention(opts), runs_b12x_moe(opts));
    if !(attention || moe) || layout.dp_attention {
        return Ok(None);
    }
    let Some(p) = model.head_padding(layout.tp) else {
        return Ok(None);
    };
    let refused = |what: &str| {
        Err(format!(
            "the b12x fork's virtual TP padding ({}) {what}, or use a --tp that divides the {} heads",
            p.describe(),
            p.heads.0
        ))
    };
    if layout.ep > 1 {
        return refused("is incompatible with expert parallelism: drop --enable-expert-parallel");
    }
    if !moe {
        return refused("requires the native B12X MoE backend: pass --moe-backend b12x");
    }
    // the fork takes any DSA model on SM120 as running its B12X attention
    if !(attention || sm120) {
        return refused(
            "requires the B12X sparse-MLA attention backend (SM120): pass --attention-backend B12X_MLA_SPARSE on an SM120 GPU",
        );
    }
    Ok(Some(p))
}

/// `model` as the server holds it under `layout`: padded where the fork pads it, with the note
/// that says so; else `model` itself.
pub fn served_spec<'a>(
    model: &'a ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
    sm120: bool,
) -> Result<(Cow<'a, ModelSpec>, Option<String>), String> {
    Ok(match head_padding(model, layout, opts, sm120)? {
        None => (Cow::Borrowed(model), None),
        Some(p) => (
            Cow::Owned(model.with_head_padding(&p)),
            Some(format!(
                "vLLM b12x fork (B12X sparse-MLA attention, b12x MoE): virtual TP padding, {}; the zero-filled heads, expert columns and vocabulary rows are stored, read and computed as real ones (local-inference-lab/vllm vllm/config/virtual_tp.py)",
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
        let p = head_padding(&glm, &tp6, &fork, true).unwrap().unwrap();
        assert_eq!(p.heads, (64, 96));
        // the b12x MoE alone: the fork takes a DSA model on SM120 as running B12X attention
        assert_eq!(
            head_padding(&glm, &tp6, &opts(None, Some("b12x")), true).unwrap(),
            Some(p)
        );
        let off_sm120 = head_padding(&glm, &tp6, &opts(None, Some("b12x")), false).unwrap_err();
        assert!(off_sm120.contains("B12X_MLA_SPARSE"), "{off_sm120}");
        // stock vLLM (neither of the fork's backends) pads nothing: the layout check refuses
        for stock in [
            opts(None, None),
            opts(Some("FLASHINFER_MLA"), Some("marlin")),
        ] {
            assert_eq!(head_padding(&glm, &tp6, &stock, true).unwrap(), None);
        }
        // SGLang never pads
        let sglang = ServerOptions {
            engine: Engine::Sglang,
            ..fork.clone()
        };
        assert_eq!(head_padding(&glm, &tp6, &sglang, true).unwrap(), None);
        // the fork refuses without its MoE backend, and with EP
        let err = head_padding(&glm, &tp6, &opts(Some("B12X_MLA_SPARSE"), None), true).unwrap_err();
        assert!(err.contains("--moe-backend b12x"), "{err}");
        let ep6 = Layout { ep: 6, ..tp6 };
        assert!(
            head_padding(&glm, &ep6, &fork, true)
                .unwrap_err()
                .contains("expert parallelism")
        );
        // TP8 divides the heads: nothing to pad; Kimi (MLA without DSA) is not padded
        assert_eq!(
            head_padding(&glm, &Layout::tp(8), &fork, true).unwrap(),
            None
        );
        let kimi = ModelSpec::preset("kimi-k2.5").unwrap();
        assert_eq!(head_padding(&kimi, &tp6, &fork, true).unwrap(), None);
        let (spec, note) = served_spec(&glm, &tp6, &fork, true).unwrap();
        assert_eq!(spec.attention.num_heads(), 96);
        assert!(note.unwrap().contains("64 -> 96"));
    }
}
