//! GEMM ceilings through cuBLASLt: bf16 (and fp8 e4m3 where the GPU has fp8 tensor cores) at a
//! large square size and at decode shapes (M tokens against a K × N weight). TN layout (A
//! transposed), fp32 accumulation, bf16 output, random data (never zeros: they run faster), and
//! a check of sampled outputs against a float64 CPU dot product.

use super::{DeviceBuf, Gpu, dtoh, htod, time_on_streams};
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use crate::stats::{gemm_tflops, summarize};
use cudarc::cublaslt::{result as lt, sys as ltsys};
use models::profile::GemmMeasurement;
use std::ffi::c_void;
use std::rc::Rc;

/// A random matrix in device encoding. Element `i` is a pure function of `(seed, i)`
/// ([`element`]), so the check can recompute any input without keeping a float copy.
struct HostMatrix {
    dtype: GemmDtype,
    seed: u64,
    bytes: Vec<u8>,
}

impl HostMatrix {
    fn value(&self, i: usize) -> f32 {
        element(self.dtype, self.seed, i as u64).1
    }
}

/// Generated inputs by (dtype, elements, seed), shared by every GPU and shape of a run:
/// generating the 7168 × 18432 weight takes longer than timing it.
#[derive(Default)]
struct MatrixCache {
    made: std::collections::HashMap<(u8, usize, u64), Rc<HostMatrix>>,
}

impl MatrixCache {
    fn get(&mut self, dtype: GemmDtype, len: usize, seed: u64) -> Rc<HostMatrix> {
        self.made
            .entry((dtype.bytes() as u8, len, seed))
            .or_insert_with(|| {
                let mut bytes = vec![0u8; len * dtype.bytes()];
                // Generated on every core: one 8192² bf16 operand is 67 M elements.
                match dtype {
                    GemmDtype::Bf16 => {
                        // SAFETY: [u8; 2] has alignment 1, so the whole buffer is the middle part.
                        let (_, pairs, _) = unsafe { bytes.align_to_mut::<[u8; 2]>() };
                        crate::par::fill_indexed(pairs, |i| element(dtype, seed, i as u64).0);
                    }
                    GemmDtype::Fp8E4m3 => crate::par::fill_indexed(&mut bytes, |i| {
                        element(dtype, seed, i as u64).0[0]
                    }),
                }
                Rc::new(HostMatrix { dtype, seed, bytes })
            })
            .clone()
    }
}

/// Element type of the GEMM inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GemmDtype {
    /// bfloat16 inputs.
    Bf16,
    /// fp8 e4m3 inputs with per-tensor scale pointers (Ada / Hopper / Blackwell).
    Fp8E4m3,
}

impl GemmDtype {
    fn name(&self) -> &'static str {
        match self {
            GemmDtype::Bf16 => "bf16",
            GemmDtype::Fp8E4m3 => "fp8",
        }
    }
    fn bytes(&self) -> usize {
        match self {
            GemmDtype::Bf16 => 2,
            GemmDtype::Fp8E4m3 => 1,
        }
    }
    fn cuda_type(&self) -> ltsys::cudaDataType {
        match self {
            GemmDtype::Bf16 => ltsys::cudaDataType::CUDA_R_16BF,
            GemmDtype::Fp8E4m3 => ltsys::cudaDataType::CUDA_R_8F_E4M3,
        }
    }
}

/// Whether libcublasLt can be loaded.
pub fn cublaslt_present() -> bool {
    unsafe { ltsys::is_culib_present() }
}

fn lt_err(what: &str) -> impl FnOnce(lt::CublasError) -> ProbeError + '_ {
    move |e| ProbeError::cuda(what.to_string(), e)
}

/// Element `i` of the random matrix `seed`: its encoding (little-endian, `dtype.bytes()` used)
/// and its exact value. bf16 values are uniform in [-1, 1); fp8 e4m3 values have exponents
/// 2^-4 … 2^0 and any mantissa (all finite, magnitude < 2). Never zeros: they run faster.
fn element(dtype: GemmDtype, seed: u64, i: u64) -> ([u8; 2], f32) {
    // splitmix64 of (seed, i): counter-based, so any element can be recomputed on its own.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    match dtype {
        GemmDtype::Bf16 => {
            let f = ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
            let b = (f.to_bits() >> 16) as u16; // truncation: the value kept is exact
            (b.to_le_bytes(), f32::from_bits((b as u32) << 16))
        }
        GemmDtype::Fp8E4m3 => {
            let s = (x >> 63) as u8;
            let e = 3 + ((x >> 32) % 5) as u8;
            let m = ((x >> 20) & 7) as u8;
            let v = (1.0 + m as f32 / 8.0) * 2f32.powi(e as i32 - 7);
            ([(s << 7) | (e << 3) | m, 0], if s == 1 { -v } else { v })
        }
    }
}

/// One GEMM problem set up on a GPU: D (m×n, bf16) = Aᵀ (A stored k×m) · B (k×n).
struct Problem {
    m: u64,
    n: u64,
    k: u64,
    a: DeviceBuf,
    b: DeviceBuf,
    d: DeviceBuf,
    a_host: Rc<HostMatrix>,
    b_host: Rc<HostMatrix>,
    desc: ltsys::cublasLtMatmulDesc_t,
    la: ltsys::cublasLtMatrixLayout_t,
    lb: ltsys::cublasLtMatrixLayout_t,
    ld: ltsys::cublasLtMatrixLayout_t,
    algo: ltsys::cublasLtMatmulAlgo_t,
    _scale: Option<DeviceBuf>,
}

impl Drop for Problem {
    fn drop(&mut self) {
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            let _ = lt::destroy_matrix_layout(self.la);
            let _ = lt::destroy_matrix_layout(self.lb);
            let _ = lt::destroy_matrix_layout(self.ld);
        }
    }
}

/// cuBLASLt handle and workspace on one GPU.
struct Lt {
    handle: ltsys::cublasLtHandle_t,
    ws: DeviceBuf,
}

impl Drop for Lt {
    fn drop(&mut self) {
        unsafe {
            let _ = lt::destroy_handle(self.handle);
        }
    }
}

const WORKSPACE_BYTES: usize = 64 << 20;

impl Lt {
    fn new(gpu: &Gpu) -> Result<Lt> {
        gpu.bind()?;
        let handle = lt::create_handle().map_err(lt_err("cublasLtCreate"))?;
        Ok(Lt {
            handle,
            ws: gpu.alloc(WORKSPACE_BYTES)?,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn problem(
        &self,
        gpu: &Gpu,
        dtype: GemmDtype,
        m: u64,
        n: u64,
        k: u64,
        a_host: Rc<HostMatrix>,
        b_host: Rc<HostMatrix>,
    ) -> Result<Problem> {
        gpu.bind()?;
        let a = gpu.alloc(a_host.bytes.len())?;
        let b = gpu.alloc(b_host.bytes.len())?;
        let d = gpu.alloc((m * n * 2) as usize)?;
        htod(a.ptr, a_host.bytes.as_ptr(), a_host.bytes.len(), gpu.stream)?;
        htod(b.ptr, b_host.bytes.as_ptr(), b_host.bytes.len(), gpu.stream)?;
        gpu.sync()?;
        let t = dtype.cuda_type();
        let la = lt::create_matrix_layout(t, k, m, k as i64).map_err(lt_err("layout A"))?;
        let lb = lt::create_matrix_layout(t, k, n, k as i64).map_err(lt_err("layout B"))?;
        let ld = lt::create_matrix_layout(ltsys::cudaDataType::CUDA_R_16BF, m, n, m as i64)
            .map_err(lt_err("layout D"))?;
        let desc = lt::create_matmul_desc(
            ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ltsys::cudaDataType::CUDA_R_32F,
        )
        .map_err(lt_err("cublasLtMatmulDescCreate"))?;
        let op_t: i32 = 1; // CUBLAS_OP_T
        unsafe {
            lt::set_matmul_desc_attribute(
                desc,
                ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &op_t as *const i32 as *const c_void,
                4,
            )
            .map_err(lt_err("TRANSA"))?;
        }
        let mut scale = None;
        if dtype == GemmDtype::Fp8E4m3 {
            // fp8 needs scale pointers for A and B; 1.0 keeps the values as generated.
            let s = gpu.alloc(4)?;
            let one = 1.0f32.to_le_bytes();
            htod(s.ptr, one.as_ptr(), 4, gpu.stream)?;
            gpu.sync()?;
            for attr in [
                ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
            ] {
                unsafe {
                    lt::set_matmul_desc_attribute(
                        desc,
                        attr,
                        &s.ptr as *const u64 as *const c_void,
                        8,
                    )
                    .map_err(lt_err("scale pointer"))?;
                }
            }
            scale = Some(s);
        }
        let pref = lt::create_matmul_pref().map_err(lt_err("preference"))?;
        let ws = WORKSPACE_BYTES as u64;
        let heuristic = unsafe {
            lt::set_matmul_pref_attribute(
                pref,
                ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                8,
            )
            .map_err(lt_err("workspace preference"))?;
            let h = lt::get_matmul_algo_heuristic(self.handle, desc, la, lb, ld, ld, pref);
            let _ = lt::destroy_matmul_pref(pref);
            h.map_err(lt_err("cublasLtMatmulAlgoGetHeuristic"))?
        };
        Ok(Problem {
            m,
            n,
            k,
            a,
            b,
            d,
            a_host,
            b_host,
            desc,
            la,
            lb,
            ld,
            algo: heuristic.algo,
            _scale: scale,
        })
    }

    fn run(&self, p: &Problem, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        let alpha = 1.0f32;
        let beta = 0.0f32;
        unsafe {
            lt::matmul(
                self.handle,
                p.desc,
                &alpha as *const f32 as *const c_void,
                &beta as *const f32 as *const c_void,
                p.a.ptr as *const c_void,
                p.la,
                p.b.ptr as *const c_void,
                p.lb,
                p.d.ptr as *const c_void,
                p.ld,
                p.d.ptr as *mut c_void,
                p.ld,
                &p.algo,
                self.ws.ptr as *mut c_void,
                WORKSPACE_BYTES,
                stream as ltsys::cudaStream_t,
            )
            .map_err(lt_err("cublasLtMatmul"))
        }
    }

    /// Compares 16 sampled outputs with float64 dot products of the exact inputs.
    fn verify(&self, gpu: &Gpu, p: &Problem) -> Result<Option<String>> {
        let mut out = vec![0u8; (p.m * p.n * 2) as usize];
        dtoh(out.as_mut_ptr(), p.d.ptr, out.len(), gpu.stream)?;
        gpu.sync()?;
        let k = p.k as usize;
        for s in 0..16u64 {
            let i = ((s * 7919 + 13) % p.m) as usize;
            let j = ((s * 104_729 + 5) % p.n) as usize;
            let reference: f64 = (0..k)
                .map(|t| p.a_host.value(i * k + t) as f64 * p.b_host.value(j * k + t) as f64)
                .sum();
            let at = (j * p.m as usize + i) * 2;
            let got =
                f32::from_bits((u16::from_le_bytes([out[at], out[at + 1]]) as u32) << 16) as f64;
            // bf16 output rounding (2^-8 relative) on sums whose spread grows with sqrt(k).
            let tol = 1e-2 * (reference.abs() + (k as f64).sqrt() * 0.5);
            // Written so a NaN output fails the check.
            let within = (got - reference).abs() <= tol;
            if !within {
                return Ok(Some(format!(
                    "{}x{}x{}: D[{i},{j}] = {got}, expected {reference:.4}",
                    p.m, p.n, p.k
                )));
            }
        }
        Ok(None)
    }
}

/// One small bf16 product set up on a GPU for the launch floors (`cuda::launch`): the same
/// cuBLASLt path, layout and check as the GEMM step, at a decode-sized shape.
pub(crate) struct TinyGemm {
    // Declared before `lt` so the problem's buffers go before the handle and its workspace.
    problem: Problem,
    lt: Lt,
}

impl TinyGemm {
    /// `tokens` rows against an `n_out` × `k` weight, random bf16 inputs, on `gpu`.
    pub(crate) fn new(gpu: &Gpu, tokens: u64, n_out: u64, k: u64) -> Result<TinyGemm> {
        if !cublaslt_present() {
            return Err(ProbeError::MissingLibrary {
                library: "libcublasLt".into(),
                hint: "install the CUDA cuBLAS library (libcublas) for the tiny-GEMM launch floor"
                    .into(),
            });
        }
        let mut cache = MatrixCache::default();
        let a = cache.get(GemmDtype::Bf16, (k * n_out) as usize, 0x71_4E ^ n_out);
        let b = cache.get(GemmDtype::Bf16, (k * tokens) as usize, 0x70_4B ^ tokens);
        let lt = Lt::new(gpu)?;
        let problem = lt.problem(gpu, GemmDtype::Bf16, n_out, tokens, k, a, b)?;
        Ok(TinyGemm { problem, lt })
    }

    /// Enqueues one product on `stream`.
    pub(crate) fn run(&self, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        self.lt.run(&self.problem, stream)
    }

    /// Checks sampled outputs of the last product (see [`Lt::verify`]); the mismatch if any.
    pub(crate) fn verify(&self, gpu: &Gpu) -> Result<Option<String>> {
        self.lt.verify(gpu, &self.problem)
    }
}

/// Measures GEMM throughput on every GPU of `gpus`.
pub fn measure_gemm(
    gpus: &[Gpu],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<GemmMeasurement>> {
    if !cublaslt_present() {
        return Err(ProbeError::MissingLibrary {
            library: "libcublasLt".into(),
            hint: "install the CUDA cuBLAS library (libcublas) or drop `gemm` from --only".into(),
        });
    }
    let mut out = Vec::new();
    let r = plan.repeats;
    let (wk, wn) = plan.decode_weight;
    let mut cache = MatrixCache::default();
    let gpus = if plan.gemm_all_gpus {
        gpus
    } else {
        &gpus[..gpus.len().min(1)]
    };
    if gpus.len() == 1 && !plan.gemm_all_gpus {
        notes.push("--quick: GEMM measured on the first GPU only".into());
    }
    for gpu in gpus {
        let cc = (
            gpu.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            gpu.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let mut dtypes = vec![GemmDtype::Bf16];
        if cc >= (8, 9) {
            dtypes.push(GemmDtype::Fp8E4m3);
        }
        let lt_h = Lt::new(gpu)?;
        for dtype in dtypes {
            let sq = plan.gemm_square;
            // (tokens M, weight N, K); cuBLAS m = N so the weight is the transposed A operand.
            let mut shapes = vec![(sq, sq, sq)];
            shapes.extend(plan.gemm_decode_m.iter().map(|&m| (m, wn, wk)));
            for (tokens, n_out, k) in shapes {
                tick(format!(
                    "gemm {} {tokens}x{n_out}x{k} GPU {}",
                    dtype.name(),
                    gpu.ordinal
                ));
                let a_host = cache.get(dtype, (k * n_out) as usize, 0x5EED ^ n_out ^ (k << 20));
                let b_host = cache.get(dtype, (k * tokens) as usize, 0xBEEF ^ tokens);
                let p = match lt_h.problem(gpu, dtype, n_out, tokens, k, a_host, b_host) {
                    Ok(p) => p,
                    Err(e) if dtype == GemmDtype::Fp8E4m3 => {
                        notes.push(format!("fp8 GEMM skipped on GPU {}: {e}", gpu.ordinal));
                        break;
                    }
                    Err(e) => return Err(e),
                };
                lt_h.run(&p, gpu.stream)?;
                if let Some(bad) = lt_h.verify(gpu, &p)? {
                    return Err(ProbeError::Cuda {
                        what: format!("{} GEMM check on GPU {}", dtype.name(), gpu.ordinal),
                        message: bad,
                    });
                }
                let flops_per_run = 2.0 * (tokens * n_out * k) as f64;
                // Batch small products so one sample lasts ≥ ~1 ms of GPU time.
                let reps = ((1e-3 * 400e12 / flops_per_run).ceil() as u32).clamp(1, 200);
                let secs = time_on_streams(gpu, r.warmup.max(2), r.samples, reps, |s, _| {
                    lt_h.run(&p, s)
                })?;
                let tf: Vec<f64> = secs
                    .iter()
                    .map(|&s| gemm_tflops(tokens, n_out, k, s))
                    .collect();
                let us: Vec<f64> = secs.iter().map(|s| s * 1e6).collect();
                out.push(GemmMeasurement {
                    device: gpu.ordinal,
                    dtype: dtype.name().into(),
                    m: tokens,
                    n: n_out,
                    k,
                    time_us: summarize(&us),
                    tflops: summarize(&tf),
                });
            }
        }
    }
    notes.push(
        "GEMM: cuBLASLt, TN layout, fp32 accumulate, bf16 output, random inputs in [-1,1); m = tokens, n = weight output dim, k = weight input dim".into(),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_encoding_decodes_to_the_kept_values() {
        for i in 0..1000 {
            let (b, v) = element(GemmDtype::Fp8E4m3, 3, i);
            let e = ((b[0] >> 3) & 0xF) as i32;
            let m = (b[0] & 7) as f32;
            assert_eq!(v.abs(), (1.0 + m / 8.0) * 2f32.powi(e - 7));
            assert!(v.abs() < 2.0 && v != 0.0);
        }
    }

    #[test]
    fn bf16_values_are_exact_uniform_and_recomputable() {
        let m = MatrixCache::default().get(GemmDtype::Bf16, 1000, 9);
        assert_eq!(m.bytes.len(), 2000);
        for i in 0..1000 {
            let v = m.value(i);
            let b = u16::from_le_bytes([m.bytes[2 * i], m.bytes[2 * i + 1]]);
            assert_eq!(f32::from_bits((b as u32) << 16), v);
            assert!(v.abs() <= 1.0);
        }
        let mean: f32 = (0..1000).map(|i| m.value(i)).sum::<f32>() / 1000.0;
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!((0..1000).filter(|&i| m.value(i) == 0.0).count() < 5);
    }
}
