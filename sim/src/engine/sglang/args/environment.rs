//! Environment assignments before a launch command (`NCCL_P2P_LEVEL=SYS CUDA_VISIBLE_DEVICES=0,1
//! python -m sglang.launch_server …`): `NCCL_P2P_DISABLE` and `NCCL_P2P_LEVEL` are modelled (the
//! machine as NCCL then runs it, `machine::nccl_env`); the other NCCL settings that change the
//! collectives' curves are refused with what to do instead, since shardwise takes those curves
//! from `--machine` (a preset or a probe profile); the rest are recorded.

use super::parse::bad;
use super::{Result, SglangArgs};

/// SGLang's switch to its v2 speculative worker, which keeps the overlap scheduler on
/// ([`crate::engine::ServingEngine::overlap_scheduled`]).
pub const SGLANG_ENABLE_SPEC_V2: &str = "SGLANG_ENABLE_SPEC_V2";

/// The assignment that turns it on, as SGLang's guide spells it.
pub const SPEC_V2_ON: &str = "SGLANG_ENABLE_SPEC_V2=True";

/// Whether an environment value is true as SGLang's `get_bool_env_var` reads it (`true` or
/// `1`, any case).
pub fn env_true(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "1" | "true")
}

/// NCCL settings that change the transport or the collectives' curves, and what to do instead.
const NCCL_MACHINE: &[(&str, &str)] = &[
    (
        "NCCL_PROTO",
        "it changes NCCL's protocols and so its all-reduce curves: probe with the same setting, or use a preset measured with it (rtx-pro-6000-x8-baremetal-nccl-ll128, -nccl-tuned)",
    ),
    (
        "NCCL_ALGO",
        "it changes NCCL's algorithms and so its collectives' curves: probe with the same setting",
    ),
    (
        "NCCL_SHM_DISABLE",
        "it changes the transport between GPUs without P2P: probe with the same setting",
    ),
];

impl SglangArgs {
    /// Whether the server's environment runs SGLang's v2 speculative worker
    /// ([`SGLANG_ENABLE_SPEC_V2`]), which keeps the overlap scheduler on.
    pub(crate) fn spec_v2(&self) -> bool {
        self.env
            .iter()
            .any(|(k, v)| k == SGLANG_ENABLE_SPEC_V2 && env_true(v))
    }

    /// Checks the launch line's environment against a layout of `gpus` GPUs: refuses what
    /// changes the machine (naming what to do instead); returns the notes of what was read.
    pub(crate) fn check_environment(&self, gpus: u32) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        for (key, value) in &self.env {
            let spelled = format!("{key}={value}");
            if let Some((_, why)) = NCCL_MACHINE.iter().find(|(k, _)| k == key) {
                return Err(bad(
                    &spelled,
                    format!("not modelled from a launch line: {why}"),
                ));
            }
            if key == "CUDA_VISIBLE_DEVICES" {
                let visible = value.split(',').filter(|d| !d.trim().is_empty()).count() as u32;
                if visible < gpus {
                    return Err(bad(
                        &spelled,
                        format!(
                            "{visible} GPU(s) visible, but the layout needs {gpus}: list {gpus} devices or use a smaller --tp / --pp-size"
                        ),
                    ));
                }
                self.visible_devices()?;
                notes.push(format!(
                    "{spelled}: {visible} GPU(s) visible, the layout uses {gpus}: costed on the first {gpus} of them, as SGLang places its ranks (--base-gpu-id 0)"
                ));
            }
        }
        Ok(notes)
    }

    /// The CUDA device indices `CUDA_VISIBLE_DEVICES` lists, in its order (`None` when unset);
    /// GPU UUIDs or words are an error saying to list indices.
    pub fn visible_devices(&self) -> std::result::Result<Option<Vec<u32>>, super::SglangArgsError> {
        let Some((_, value)) = self.env.iter().find(|(k, _)| k == "CUDA_VISIBLE_DEVICES") else {
            return Ok(None);
        };
        value
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| {
                d.parse::<u32>().map_err(|_| {
                    bad(
                        &format!("CUDA_VISIBLE_DEVICES={value}"),
                        format!("`{d}` is not a device index: list the GPUs by index (0,1,2,3), as the machine's profile numbers them"),
                    )
                })
            })
            .collect::<std::result::Result<Vec<u32>, _>>()
            .map(Some)
    }

    /// The environment assignments that are only recorded, as `KEY=value`.
    pub(super) fn recorded_environment(&self) -> Vec<String> {
        self.env
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "CUDA_VISIBLE_DEVICES" | "NCCL_P2P_DISABLE" | "NCCL_P2P_LEVEL"
                )
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::from_launch_line;

    #[test]
    fn machine_changing_settings_are_refused_and_devices_counted() {
        let line =
            |env: &str| format!("{env} python -m sglang.launch_server --model-path x --tp 8");
        // modelled (machine::nccl_env), not refused; NCCL_PROTO still is
        let a = from_launch_line(&line("NCCL_P2P_DISABLE=1 NCCL_P2P_LEVEL=PHB")).unwrap();
        assert!(a.check_environment(8).unwrap().is_empty());
        assert!(a.recorded_environment().is_empty());
        let a = from_launch_line(&line("NCCL_PROTO=LL")).unwrap();
        let e = a.check_environment(8).unwrap_err().to_string();
        assert!(e.starts_with("NCCL_PROTO=LL: "), "{e}");
        assert!(e.contains("probe"), "{e}");
        let a = from_launch_line(&line("CUDA_VISIBLE_DEVICES=0,1,2,3")).unwrap();
        let e = a.check_environment(8).unwrap_err().to_string();
        assert!(
            e.contains("4 GPU(s) visible, but the layout needs 8"),
            "{e}"
        );
        assert_eq!(a.check_environment(4).unwrap().len(), 1);
        assert_eq!(a.visible_devices().unwrap(), Some(vec![0, 1, 2, 3]));
        let a = from_launch_line(&line("CUDA_VISIBLE_DEVICES=GPU-5e1a")).unwrap();
        let e = a.visible_devices().unwrap_err().to_string();
        assert!(e.contains("not a device index"), "{e}");
        let a = from_launch_line(&line("SGLANG_ENABLE_JIT_DEEPGEMM=0")).unwrap();
        assert!(a.check_environment(8).unwrap().is_empty());
        assert_eq!(a.recorded_environment(), ["SGLANG_ENABLE_JIT_DEEPGEMM=0"]);
    }
}
