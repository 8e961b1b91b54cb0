//! Prints every shared HF config as the loader reads it, with totals (a development aid).
use models::ModelSpec;
use models::format::KvDtype;
fn main() {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hf-configs"
    ));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        if !n.ends_with(".json") || n.contains("hf_quant_config") {
            continue;
        }
        match ModelSpec::from_hf_config(&p) {
            Ok(s) => {
                let tp8 = models::footprint::footprint(&s, &models::Layout::tp(8));
                println!(
                    "{n:40} total {:8.2}B main {:8.2}B mtp {:6.2}B active {:6.2}B w/o mtp {:7.2} GB  kv {:6}  tp8 {:?} fmt att {} rout {} shared {} dense {} mtp {} kv {:?}",
                    s.total_params() as f64 / 1e9,
                    s.total_params_without_mtp() as f64 / 1e9,
                    s.mtp_checkpoint_params() as f64 / 1e9,
                    s.active_params_per_token() as f64 / 1e9,
                    s.total_weight_bytes_without_mtp() as f64 / 1e9,
                    s.kv_bytes_per_token(KvDtype::Bf16),
                    tp8.map(|f| f.max_weight_bytes_per_gpu() as f64 / 1e9)
                        .map_err(|e| e.to_string()),
                    s.formats.attention.name(),
                    s.formats.routed_experts.name(),
                    s.formats.shared_experts.name(),
                    s.formats.dense_mlp.name(),
                    s.formats.mtp.name(),
                    s.default_kv_dtype
                );
            }
            Err(e) => println!("{n}: ERROR {e}"),
        }
    }
}
