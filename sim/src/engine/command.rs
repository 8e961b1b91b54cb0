//! Which server a command launches, from its words: the one recognizer the launch-line readers
//! and the records' flag reader share (engine-neutral, below both).

/// The server a command launches, by the engine's name: `SGLang` (`python -m
/// sglang.launch_server`, `sglang serve`), `vLLM` (`vllm serve`, its OpenAI server module),
/// `TensorRT-LLM` (`trtllm-serve`); `None` for any other command (`export`, `cd`, `echo`).
pub fn launch_engine(words: &[String]) -> Option<&'static str> {
    let pair = |a: &str, b: &str| {
        words
            .windows(2)
            .any(|p| (p[0] == a || p[0].ends_with(&format!("/{a}"))) && p[1] == b)
    };
    if words.iter().any(|w| w.ends_with("sglang.launch_server")) || pair("sglang", "serve") {
        Some("SGLang")
    } else if words
        .iter()
        .any(|w| w.ends_with("vllm.entrypoints.openai.api_server"))
        || pair("vllm", "serve")
    {
        Some("vLLM")
    } else if words
        .iter()
        .any(|w| w == "trtllm-serve" || w.ends_with("/trtllm-serve"))
    {
        Some("TensorRT-LLM")
    } else {
        None
    }
}
