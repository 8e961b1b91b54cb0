//! bench_serving's `--output-file` JSONL: one object per run, in either key layout (see
//! [`super`]); Python's bare `Infinity`/`NaN` read as the floats they stand for.

use super::{MeasuredMetrics, MeasuredPoint, MeasuredSet, PYTHON_NON_FINITE, num, workload};
use serde_json::Value;

pub(super) fn jsonl(path: &str, text: &str) -> MeasuredSet {
    let mut set = MeasuredSet::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{path}:{}", i + 1);
        match jsonl_point(&at, line) {
            Ok(p) => set.points.push(p),
            Err(why) => set.skipped.push(format!("{at}: {why}")),
        }
    }
    set
}

/// Python's `json.dumps` writes non-finite floats as bare `Infinity`, `-Infinity` and `NaN`
/// (bench_serving's default `request_rate` is `inf`); strict JSON has no such tokens. Rewrites
/// them, outside strings, to strings of themselves (`"NaN"`), which [`num`] reads back.
fn python_json_to_strict(line: &str) -> std::borrow::Cow<'_, str> {
    if !(line.contains("Infinity") || line.contains("NaN")) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = PYTHON_NON_FINITE
            .iter()
            .map(|(t, _)| *t)
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(token);
            out.push('"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

fn jsonl_point(at: &str, line: &str) -> Result<MeasuredPoint, String> {
    let v: Value = serde_json::from_str(&python_json_to_strict(line))
        .map_err(|e| format!("not a complete JSON object, truncated or malformed ({e})"))?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    let req = |k: &str| num(&v, k).ok_or_else(|| format!("missing key `{k}`"));
    let completed = req("completed")?;
    if completed < 1.0 {
        return Err("`completed` is 0: no request succeeded".into());
    }
    let output_throughput = req("output_throughput")?;
    let duration = req("duration")?;
    if v.get("request_rate").and_then(Value::as_str) == Some("trace") {
        return Err(
            "`request_rate` is \"trace\" (trace timestamps), which cannot be replayed".into(),
        );
    }
    // `random_*_len` are written whatever the dataset (their defaults, 1024, for ShareGPT), so
    // they describe the run only for the random datasets; otherwise use the measured means.
    let random = v
        .get("dataset_name")
        .and_then(Value::as_str)
        .is_none_or(|d| d.starts_with("random"));
    let mean_of = |k: &str| num(&v, k).map(|t| t / completed);
    let (input, output) = if random {
        (
            num(&v, "random_input_len").or_else(|| mean_of("total_input_tokens")),
            num(&v, "random_output_len").or_else(|| mean_of("total_output_tokens")),
        )
    } else {
        (
            mean_of("total_input_tokens"),
            mean_of("total_output_tokens"),
        )
    };
    let input = input.ok_or("missing key `random_input_len` (and `total_input_tokens`)")?;
    let output = output.ok_or("missing key `random_output_len` (and `total_output_tokens`)")?;
    let conc = num(&v, "max_concurrency");
    let mut w = workload(
        conc,
        num(&v, "request_rate"),
        input.round() as u32,
        output.round() as u32,
        completed as u32,
    );
    if random && let Some(r) = num(&v, "random_range_ratio") {
        w.random_range_ratio = r;
    }
    Ok(MeasuredPoint {
        source: at.into(),
        workload: w,
        metrics: MeasuredMetrics {
            duration: Some(duration),
            output_throughput: Some(output_throughput),
            total_throughput: num(&v, "total_throughput")
                .or_else(|| num(&v, "input_throughput").map(|i| i + output_throughput)),
            request_throughput: num(&v, "request_throughput"),
            mean_ttft_ms: num(&v, "mean_ttft_ms"),
            median_ttft_ms: num(&v, "median_ttft_ms"),
            mean_tpot_ms: num(&v, "mean_tpot_ms"),
            median_tpot_ms: num(&v, "median_tpot_ms"),
            mean_itl_ms: num(&v, "mean_itl_ms"),
            mean_e2e_latency_ms: num(&v, "mean_e2e_latency_ms"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_keeps_good_lines_and_counts_bad_ones() {
        let text = concat!(
            r#"{"completed": 100, "duration": 10.0, "output_throughput": 1000.0, "max_concurrency": 8, "random_input_len": 128, "random_output_len": 100, "mean_ttft_ms": 50.0}"#,
            "\n",
            r#"{"completed": 100, "duration": 10.0}"#,
            "\n{not json\n"
        );
        let s = jsonl("x.jsonl", text);
        assert_eq!(s.points.len(), 1);
        assert_eq!(s.skipped.len(), 2);
        assert!(
            s.skipped[0].contains("output_throughput"),
            "{:?}",
            s.skipped
        );
        let p = &s.points[0];
        assert_eq!(p.workload.max_concurrency, Some(8));
        assert_eq!(p.workload.num_prompts, 100);
        assert_eq!(p.metrics.mean_ttft_ms, Some(50.0));
    }
}
