//! SGLang's own argument names, as data: every field of `ServerArgs` (the `dest` of its argparse
//! option, `--` + the name with `-` for `_` on the command line), in the order of the
//! `server_args=ServerArgs(…)` line SGLang logs at start-up. Copied from that line of the user's
//! server (`data/observations/logs/glm47-fp8-tp8-calibration.log`, SGLang main of 2026-01-28,
//! whose `server_args.py` is the version this module follows), plus the aliases and `dest`
//! renames `add_cli_args` declares. Used to read a launch line the way argparse does: an
//! abbreviation (`--mem-frac`) is accepted when it is the prefix of exactly one option.

/// `ServerArgs` fields, space-separated.
pub(super) const SGLANG_FIELDS: &str = "\
    model_path tokenizer_path tokenizer_mode tokenizer_worker_num skip_tokenizer_init \
    load_format model_loader_extra_config trust_remote_code context_length is_embedding \
    enable_multimodal revision model_impl host port fastapi_root_path grpc_mode \
    skip_server_warmup warmups nccl_port checkpoint_engine_wait_weights_before_ready dtype \
    quantization quantization_param_path kv_cache_dtype enable_fp32_lm_head modelopt_quant \
    modelopt_checkpoint_restore_path modelopt_checkpoint_save_path modelopt_export_path \
    quantize_and_serve rl_quant_profile mem_fraction_static max_running_requests \
    max_queued_requests max_total_tokens chunked_prefill_size enable_dynamic_chunking \
    max_prefill_tokens prefill_max_requests schedule_policy enable_priority_scheduling \
    abort_on_priority_when_disabled schedule_low_priority_values_first \
    priority_scheduling_preemption_threshold schedule_conservativeness page_size \
    swa_full_tokens_ratio disable_hybrid_swa_memory radix_eviction_policy enable_prefill_delayer \
    prefill_delayer_max_delay_passes prefill_delayer_token_usage_low_watermark \
    prefill_delayer_forward_passes_buckets prefill_delayer_wait_seconds_buckets device tp_size \
    pp_size pp_max_micro_batch_size pp_async_batch_depth stream_interval stream_output \
    random_seed constrained_json_whitespace_pattern constrained_json_disable_any_whitespace \
    watchdog_timeout soft_watchdog_timeout dist_timeout download_dir model_checksum base_gpu_id \
    gpu_id_step sleep_on_idle custom_sigquit_handler log_level log_level_http log_requests \
    log_requests_level log_requests_format log_requests_target crash_dump_folder show_time_cost \
    enable_metrics enable_metrics_for_all_schedulers tokenizer_metrics_custom_labels_header \
    tokenizer_metrics_allowed_custom_labels bucket_time_to_first_token \
    bucket_inter_token_latency bucket_e2e_request_latency collect_tokens_histogram \
    prompt_tokens_buckets generation_tokens_buckets gc_warning_threshold_secs \
    decode_log_interval enable_request_time_stats_logging kv_events_config enable_trace \
    otlp_traces_endpoint export_metrics_to_file export_metrics_to_file_dir api_key \
    served_model_name weight_version chat_template completion_template file_storage_path \
    enable_cache_report reasoning_parser tool_call_parser tool_server sampling_defaults dp_size \
    load_balance_method dist_init_addr nnodes node_rank json_model_override_args \
    preferred_sampling_params enable_lora max_lora_rank lora_target_modules lora_paths \
    max_loaded_loras max_loras_per_batch lora_eviction_policy lora_backend max_lora_chunk_size \
    attention_backend decode_attention_backend prefill_attention_backend sampling_backend \
    grammar_backend mm_attention_backend fp8_gemm_runner_backend nsa_prefill_backend \
    nsa_decode_backend disable_flashinfer_autotune speculative_algorithm \
    speculative_draft_model_path speculative_draft_model_revision speculative_draft_load_format \
    speculative_num_steps speculative_eagle_topk speculative_num_draft_tokens \
    speculative_accept_threshold_single speculative_accept_threshold_acc speculative_token_map \
    speculative_attention_mode speculative_draft_attention_backend \
    speculative_moe_runner_backend speculative_moe_a2a_backend \
    speculative_draft_model_quantization speculative_ngram_min_match_window_size \
    speculative_ngram_max_match_window_size speculative_ngram_min_bfs_breadth \
    speculative_ngram_max_bfs_breadth speculative_ngram_match_type \
    speculative_ngram_branch_length speculative_ngram_capacity enable_multi_layer_eagle ep_size \
    moe_a2a_backend moe_runner_backend flashinfer_mxfp4_moe_precision \
    enable_flashinfer_allreduce_fusion deepep_mode ep_num_redundant_experts \
    ep_dispatch_algorithm init_expert_location enable_eplb eplb_algorithm \
    eplb_rebalance_num_iterations eplb_rebalance_layers_per_chunk \
    eplb_min_rebalancing_utilization_threshold expert_distribution_recorder_mode \
    expert_distribution_recorder_buffer_size enable_expert_distribution_metrics deepep_config \
    moe_dense_tp_size elastic_ep_backend mooncake_ib_device max_mamba_cache_size mamba_ssm_dtype \
    mamba_full_memory_ratio mamba_scheduler_strategy mamba_track_interval \
    enable_hierarchical_cache hicache_ratio hicache_size hicache_write_policy hicache_io_backend \
    hicache_mem_layout hicache_storage_backend hicache_storage_prefetch_policy \
    hicache_storage_backend_extra_config hierarchical_sparse_attention_extra_config \
    enable_lmcache kt_weight_path kt_method kt_cpuinfer kt_threadpool_count kt_num_gpu_experts \
    kt_max_deferred_experts_per_token dllm_algorithm dllm_algorithm_config \
    enable_double_sparsity ds_channel_config_path ds_heavy_channel_num ds_heavy_token_num \
    ds_heavy_channel_type ds_sparse_decode_threshold cpu_offload_gb offload_group_size \
    offload_num_in_group offload_prefetch_step offload_mode multi_item_scoring_delimiter \
    disable_radix_cache cuda_graph_max_bs cuda_graph_bs disable_cuda_graph \
    disable_cuda_graph_padding enable_profile_cuda_graph enable_cudagraph_gc \
    enable_layerwise_nvtx_marker enable_nccl_nvls enable_symm_mem \
    disable_flashinfer_cutlass_moe_fp4_allgather enable_tokenizer_batch_encode \
    disable_tokenizer_batch_decode disable_outlines_disk_cache disable_custom_all_reduce \
    enable_mscclpp enable_torch_symm_mem disable_overlap_schedule enable_mixed_chunk \
    enable_dp_attention enable_dp_lm_head enable_two_batch_overlap enable_single_batch_overlap \
    tbo_token_distribution_threshold enable_torch_compile enable_piecewise_cuda_graph \
    enable_torch_compile_debug_mode torch_compile_max_bs piecewise_cuda_graph_max_tokens \
    piecewise_cuda_graph_tokens piecewise_cuda_graph_compiler torchao_config \
    enable_nan_detection enable_p2p_check triton_attention_reduce_in_fp32 \
    triton_attention_num_kv_splits triton_attention_split_tile_size num_continuous_decode_steps \
    delete_ckpt_after_loading enable_memory_saver enable_weights_cpu_backup \
    enable_draft_weights_cpu_backup allow_auto_truncate enable_custom_logit_processor \
    flashinfer_mla_disable_ragged disable_shared_experts_fusion disable_chunked_prefix_cache \
    disable_fast_image_processor keep_mm_feature_on_device enable_return_hidden_states \
    enable_return_routed_experts scheduler_recv_interval numa_node \
    enable_deterministic_inference rl_on_policy_target enable_attn_tp_input_scattered \
    enable_nsa_prefill_context_parallel nsa_prefill_cp_mode enable_fused_qk_norm_rope \
    enable_precise_embedding_interpolation enable_dynamic_batch_tokenizer \
    dynamic_batch_tokenizer_batch_size dynamic_batch_tokenizer_batch_timeout \
    debug_tensor_dump_output_folder debug_tensor_dump_layers debug_tensor_dump_input_file \
    debug_tensor_dump_inject disaggregation_mode disaggregation_transfer_backend \
    disaggregation_bootstrap_port disaggregation_decode_tp disaggregation_decode_dp \
    disaggregation_prefill_pp disaggregation_ib_device \
    disaggregation_decode_enable_offload_kvcache disaggregation_decode_enable_fake_auto \
    num_reserved_decode_tokens disaggregation_decode_polling_interval encoder_only language_only \
    encoder_transfer_backend encoder_urls custom_weight_loader weight_loader_disable_mmap \
    remote_instance_weight_loader_seed_instance_ip \
    remote_instance_weight_loader_seed_instance_service_port \
    remote_instance_weight_loader_send_weights_group_ports remote_instance_weight_loader_backend \
    remote_instance_weight_loader_start_seed_via_transfer_engine enable_pdmux pdmux_config_path \
    sm_group_num mm_max_concurrent_calls mm_per_request_timeout \
    enable_broadcast_mm_inputs_process enable_prefix_mm_cache mm_enable_dp_encoder \
    mm_process_config limit_mm_data_per_request decrypted_config_file \
    decrypted_draft_config_file forward_hooks";

/// Option strings that are not `--` + a field name: `(option, dest)`.
pub(super) const SGLANG_ALIASES: &[(&str, &str)] = &[
    ("--model", "model_path"),
    ("--tensor-parallel-size", "tp_size"),
    ("--pipeline-parallel-size", "pp_size"),
    ("--data-parallel-size", "dp_size"),
    ("--expert-parallel-size", "ep_size"),
    ("--ep", "ep_size"),
    ("--nccl-init-addr", "dist_init_addr"),
    ("--speculative-draft-model", "speculative_draft_model_path"),
    ("--fp8-gemm-backend", "fp8_gemm_runner_backend"),
    ("--fp4-gemm-backend", "fp4_gemm_runner_backend"),
    ("--config", "config"),
];

/// Fields whose option is only an alias (`--fp8-gemm-backend`, not `--fp8-gemm-runner-backend`).
pub(super) const FIELDS_WITHOUT_OWN_OPTION: &[&str] =
    &["fp8_gemm_runner_backend", "fp4_gemm_runner_backend"];

/// Every option string of SGLang's launch_server and its `dest`.
pub(super) fn options() -> impl Iterator<Item = (String, &'static str)> {
    SGLANG_FIELDS
        .split_whitespace()
        .filter(|f| !FIELDS_WITHOUT_OWN_OPTION.contains(f))
        .map(|f| (format!("--{}", f.replace('_', "-")), f))
        .chain(SGLANG_ALIASES.iter().map(|(o, d)| (o.to_string(), *d)))
}

/// Whether `name` is a `ServerArgs` field.
pub(super) fn is_field(name: &str) -> bool {
    SGLANG_FIELDS.split_whitespace().any(|f| f == name)
}
