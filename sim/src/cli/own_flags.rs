//! How `sim`'s own command line spells a launch knob. Its server flags are rows of SGLang's flag
//! table (and `--server-args` reads an SGLang line unless it says `vllm serve`), so the
//! commands' messages ask that table ([`Engine::flag`]) rather than write a flag out. Its own
//! module, below the argument groups, so that each of them can ask it.

use sim::engine::{Engine, Knob};

/// `knob` as `sim`'s command line (SGLang's flag table) spells it.
pub fn sim_flag(knob: Knob) -> &'static str {
    Engine::Sglang.flag(knob)
}
