//! Kernel-launch floors (`probe run --only launch`): what a kernel costs when it does (almost)
//! nothing, the floor under every small kernel of a decode step.
//!
//! Per GPU and kernel (an NVRTC-compiled empty kernel, one block of one thread; a cuBLASLt bf16
//! product of one token row against a 256 × 256 weight):
//! - graph: a chain of `launch_chain_length` launches captured into a CUDA graph, uploaded, and
//!   replayed; CUDA events around one replay, divided by the graph's node count: GPU µs per
//!   node, what a graph-mode (CUDA-graph) decode step pays per kernel;
//! - eager: the same chain launched one kernel at a time from this thread; the host clock around
//!   the launch loop divided by the launches is the CPU cost of this host's launch path (what an
//!   eager step pays per kernel), and CUDA events around the chain give its GPU µs per kernel
//!   (close to the host figure when the GPU waits for the launches).
//!
//! `bench/launch_reference.py` times the same chains with CuPy and PyTorch.

use super::gemm::TinyGemm;
use super::kernels::{EMPTY_KERNEL, LoadedKernel, empty_ptx};
use super::{Event, Gpu, check, check_raw};
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use crate::stats::summarize;
use cudarc::driver::{result, sys};
use models::profile::{LaunchKernel, LaunchKind, LaunchMeasurement};
use std::time::{Duration, Instant};

/// A captured and instantiated CUDA graph.
struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// Nodes in the graph (kernels: one per empty launch, one or more per cuBLASLt product).
    nodes: usize,
}

impl Graph {
    /// Captures `launches` calls of `op` on `gpu`'s main stream into a graph and instantiates
    /// and uploads it.
    fn capture(
        gpu: &Gpu,
        launches: u32,
        op: &mut dyn FnMut(sys::CUstream) -> Result<()>,
    ) -> Result<Graph> {
        gpu.bind()?;
        let s = gpu.stream;
        check_raw(
            unsafe {
                sys::cuStreamBeginCapture_v2(
                    s,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            || "cuStreamBeginCapture".into(),
        )?;
        let mut captured = Ok(());
        for _ in 0..launches {
            captured = op(s);
            if captured.is_err() {
                break;
            }
        }
        // Always ended, so a failed launch does not leave the stream capturing.
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let ended = check_raw(unsafe { sys::cuStreamEndCapture(s, &mut graph) }, || {
            "cuStreamEndCapture".into()
        });
        let mut g = Graph {
            graph,
            exec: std::ptr::null_mut(),
            nodes: 0,
        };
        captured?;
        ended?;
        check_raw(
            unsafe { sys::cuGraphGetNodes(g.graph, std::ptr::null_mut(), &mut g.nodes) },
            || "cuGraphGetNodes".into(),
        )?;
        check_raw(
            unsafe { sys::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0) },
            || "cuGraphInstantiate".into(),
        )?;
        check_raw(unsafe { sys::cuGraphUpload(g.exec, s) }, || {
            "cuGraphUpload".into()
        })?;
        Ok(g)
    }

    fn launch(&self, stream: sys::CUstream) -> Result<()> {
        check_raw(unsafe { sys::cuGraphLaunch(self.exec, stream) }, || {
            "cuGraphLaunch".into()
        })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            if !self.graph.is_null() {
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// Launches the empty kernel (one block of one thread) on `stream`.
fn launch_empty(k: &LoadedKernel, stream: sys::CUstream) -> Result<()> {
    let mut params: [*mut std::ffi::c_void; 0] = [];
    check(
        unsafe { result::launch_kernel(k.func, (1, 1, 1), (1, 1, 1), 0, stream, &mut params) },
        || "launching the empty kernel".into(),
    )
}

/// Untimed runs last at least this long: an idle GPU clocks down (an H200 idles at 345 MHz),
/// and a launch floor is mostly clock cycles of the GPU's front end.
const WARM_UP: Duration = Duration::from_millis(50);

/// Host and GPU seconds of each sample of `op` on `gpu`'s main stream, after at least `warmup`
/// runs and [`WARM_UP`]: the host clock around the call (enqueueing only) and CUDA events around
/// its work.
fn sample_host_and_gpu(
    gpu: &Gpu,
    warmup: u32,
    samples: u32,
    op: &mut dyn FnMut(sys::CUstream) -> Result<()>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    gpu.bind()?;
    let (start, end) = (Event::new()?, Event::new()?);
    let warming = Instant::now();
    let mut runs = 0;
    while runs < warmup.max(1) || warming.elapsed() < WARM_UP {
        op(gpu.stream)?;
        gpu.sync()?;
        runs += 1;
    }
    let (mut host, mut dev) = (Vec::new(), Vec::new());
    for _ in 0..samples.max(1) {
        start.record(gpu.stream)?;
        let t0 = Instant::now();
        op(gpu.stream)?;
        host.push(t0.elapsed().as_secs_f64());
        end.record(gpu.stream)?;
        dev.push(start.seconds_to(&end)?);
    }
    Ok((host, dev))
}

/// One kernel to measure: which, its shape, how to launch it once.
struct Chain<'a> {
    kernel: LaunchKernel,
    shape: Option<String>,
    launch: Box<dyn FnMut(sys::CUstream) -> Result<()> + 'a>,
}

/// Both figures for one kernel on one GPU.
fn measure_chain(
    gpu: &Gpu,
    plan: &RunPlan,
    chain: &mut Chain,
    notes: &mut Vec<String>,
) -> Result<[LaunchMeasurement; 2]> {
    let n = plan.launch_chain_length.max(1);
    let r = plan.repeats;
    let us_per = |v: &[f64], per: f64| v.iter().map(|s| s * 1e6 / per).collect::<Vec<f64>>();
    let graph = Graph::capture(gpu, n, &mut chain.launch)?;
    let (_, graph_s) = sample_host_and_gpu(gpu, r.warmup, r.samples, &mut |s| graph.launch(s))?;
    let nodes = graph.nodes.max(1);
    if nodes != n as usize {
        notes.push(format!(
            "launch floors, GPU {}: {:?} chain of {n} launches captured as {nodes} graph nodes ({:.2} per launch); graph figures are per node, eager ones per launch",
            gpu.ordinal,
            chain.kernel,
            nodes as f64 / n as f64
        ));
    }
    drop(graph);
    let (host_s, gpu_s) = sample_host_and_gpu(gpu, r.warmup, r.samples, &mut |s| {
        (0..n).try_for_each(|_| (chain.launch)(s))
    })?;
    let m = |kind, per_kernel_us, gpu_per_kernel_us| LaunchMeasurement {
        device: gpu.ordinal,
        kind,
        kernel: chain.kernel,
        shape: chain.shape.clone(),
        chain_length: n,
        per_kernel_us,
        gpu_per_kernel_us,
    };
    Ok([
        m(
            LaunchKind::GraphNode,
            summarize(&us_per(&graph_s, nodes as f64)),
            None,
        ),
        m(
            LaunchKind::EagerLaunch,
            summarize(&us_per(&host_s, n as f64)),
            Some(summarize(&us_per(&gpu_s, n as f64))),
        ),
    ])
}

/// Measures the launch floors on every GPU of `gpus`.
pub fn measure_launch(
    gpus: &[Gpu],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<LaunchMeasurement>> {
    let ptx = match empty_ptx() {
        Ok(p) => Some(p),
        Err(e) => {
            notes.push(format!("empty-kernel launch floors skipped: {e}"));
            None
        }
    };
    let (tokens, n_out, k) = plan.launch_gemm;
    let shape = format!("m={tokens} n={n_out} k={k} bf16");
    let mut out = Vec::new();
    for gpu in gpus {
        tick(format!("launch floors GPU {}", gpu.ordinal));
        let empty = ptx
            .as_ref()
            .map(|p| LoadedKernel::load(gpu, p, EMPTY_KERNEL))
            .transpose()?;
        let gemm = match TinyGemm::new(gpu, tokens, n_out, k) {
            Ok(g) => Some(g),
            Err(e @ ProbeError::MissingLibrary { .. }) => {
                notes.push(format!("tiny-GEMM launch floors skipped: {e}"));
                None
            }
            Err(e) => return Err(e),
        };
        let mut chains = Vec::new();
        if let Some(k) = &empty {
            chains.push(Chain {
                kernel: LaunchKernel::Empty,
                shape: None,
                launch: Box::new(move |s| launch_empty(k, s)),
            });
        }
        if let Some(g) = &gemm {
            // Once eagerly first: cuBLASLt loads its kernel on the first call, which must not
            // happen inside a capture.
            g.run(gpu.stream)?;
            gpu.sync()?;
            chains.push(Chain {
                kernel: LaunchKernel::TinyGemm,
                shape: Some(shape.clone()),
                launch: Box::new(move |s| g.run(s)),
            });
        }
        for chain in &mut chains {
            out.extend(measure_chain(gpu, plan, chain, notes)?);
        }
        if let Some(g) = &gemm
            && let Some(bad) = g.verify(gpu)?
        {
            return Err(ProbeError::Cuda {
                what: format!("tiny GEMM check on GPU {}", gpu.ordinal),
                message: bad,
            });
        }
    }
    notes.push(format!(
        "launch floors: chains of {} launches (empty kernel: NVRTC, 1 block of 1 thread; tiny GEMM: cuBLASLt {shape}, TN, fp32 accumulate); untimed runs for at least 50 ms first (GPU clocks up); graph-node = CUDA events around one replay of the captured chain / its nodes; eager-launch = host clock around the launch loop / launches, with CUDA events around the same chain for its GPU time",
        plan.launch_chain_length
    ));
    Ok(out)
}
