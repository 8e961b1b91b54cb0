//! The probe's own kernels — the SM copy kernel for P2P and the empty kernel of the launch
//! floors — compiled at run time with NVRTC (so no CUDA toolkit is needed to build the probe) and
//! loaded into each GPU's context. NVRTC is chosen over hand-written PTX because the generated
//! code is portable across architectures; when libnvrtc is missing the figures that need a kernel
//! are skipped with a note instead of failing the run.

use super::{Gpu, check};
use crate::error::{ProbeError, Result};
use cudarc::driver::{result, sys};
use std::ffi::{CString, c_void};

const COPY_SRC: &str = r#"
extern "C" __global__ void copy_u4(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                   unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        dst[i] = src[i];
    }
}
"#;

/// A kernel's own round trips through host memory, as one step of NCCL's SHM ring pays them:
/// `host_chase` follows a ring of pointers with `n` dependent 8-byte volatile loads (one thread);
/// `host_pingpong` hands a counter between two blocks through two flags on separate lines
/// (`st.release.sys` / `ld.acquire.sys`), `base + 1 … base + n`, giving up (flag in `out`) after
/// 2e9 polls rather than hanging.
const ROUND_TRIP_SRC: &str = r#"
extern "C" __global__ void host_chase(const unsigned long long* buf, unsigned long long start,
                                      int n, unsigned long long* out) {
    unsigned long long i = start;
    for (int k = 0; k < n; ++k) {
        unsigned long long v;
        asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(buf + i));
        i = v;
    }
    out[0] = i;
}

extern "C" __global__ void host_pingpong(unsigned long long* flags, unsigned long long base,
                                         int n, unsigned long long* out) {
    if (threadIdx.x != 0) return;
    unsigned long long* a = flags;
    unsigned long long* b = flags + 16;
    long long guard = 0;
    for (int k = 1; k <= n; ++k) {
        unsigned long long want = base + (unsigned long long)k;
        unsigned long long v;
        if (blockIdx.x == 0) {
            asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(a), "l"(want) : "memory");
            do {
                asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(b) : "memory");
                if (++guard > 2000000000LL) { out[1] = 1; return; }
            } while (v != want);
        } else {
            do {
                asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
                if (++guard > 2000000000LL) { out[1] = 1; return; }
            } while (v != want);
            asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(b), "l"(want) : "memory");
        }
    }
}
"#;

/// Names of the round-trip kernels in [`round_trip_ptx`]'s module.
pub const CHASE_KERNEL: &str = "host_chase";
pub const PINGPONG_KERNEL: &str = "host_pingpong";

/// A kernel that does nothing: what a CUDA graph node or a launch costs with no work in it.
const EMPTY_SRC: &str = r#"
extern "C" __global__ void probe_empty() {}
"#;

/// Name of the empty kernel in [`empty_ptx`]'s module.
pub const EMPTY_KERNEL: &str = "probe_empty";

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles `src` to PTX; `needed_for` names the figures skipped without NVRTC.
fn compile(src: &str, needed_for: &str) -> Result<CString> {
    if !nvrtc_present() {
        return Err(ProbeError::MissingLibrary {
            library: "libnvrtc".into(),
            hint: format!("install the CUDA runtime compiler (cuda-nvrtc) for {needed_for}"),
        });
    }
    let ptx = cudarc::nvrtc::compile_ptx(src).map_err(|e| ProbeError::cuda("NVRTC", e))?;
    CString::new(ptx.to_src()).map_err(|e| ProbeError::cuda("NVRTC output", e))
}

/// Compiles the copy kernel to PTX once per process.
pub fn copy_ptx() -> Result<CString> {
    compile(COPY_SRC, "SM-kernel P2P figures")
}

/// Compiles the host round-trip kernels to PTX.
pub fn round_trip_ptx() -> Result<CString> {
    compile(ROUND_TRIP_SRC, "the host round trips (SHM ring steps)")
}

/// Compiles the empty kernel to PTX.
pub fn empty_ptx() -> Result<CString> {
    compile(EMPTY_SRC, "the empty-kernel launch floors")
}

/// A module loaded into one GPU's context and one function of it.
pub struct LoadedKernel {
    /// The function.
    pub func: sys::CUfunction,
    module: sys::CUmodule,
    ctx: sys::CUcontext,
}

impl LoadedKernel {
    /// Loads `ptx` into `gpu`'s context (this JIT-compiles it) and finds `name`.
    pub fn load(gpu: &Gpu, ptx: &CString, name: &str) -> Result<LoadedKernel> {
        gpu.bind()?;
        let module = check(
            unsafe { result::module::load_data(ptx.as_ptr() as *const c_void) },
            || format!("loading the module of {name}"),
        )?;
        let func = CString::new(name)
            .map_err(|e| ProbeError::cuda("kernel name", e))
            .and_then(|n| {
                check(unsafe { result::module::get_function(module, n) }, || {
                    format!("finding {name}")
                })
            });
        match func {
            Ok(func) => Ok(LoadedKernel {
                func,
                module,
                ctx: gpu.ctx,
            }),
            Err(e) => {
                unsafe {
                    let _ = result::module::unload(module);
                }
                Err(e)
            }
        }
    }
}

impl Drop for LoadedKernel {
    fn drop(&mut self) {
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::module::unload(self.module);
        }
    }
}

/// The copy kernel loaded on one GPU.
pub struct CopyKernel {
    kernel: LoadedKernel,
    blocks: u32,
}

impl CopyKernel {
    /// Loads `ptx` into `gpu`'s context.
    pub fn load(gpu: &Gpu, ptx: &CString) -> Result<CopyKernel> {
        let kernel = LoadedKernel::load(gpu, ptx, "copy_u4")?;
        let sms =
            gpu.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(CopyKernel {
            kernel,
            // Four blocks per SM keeps enough loads in flight to saturate a remote link.
            blocks: (sms.max(1) as u32) * 4,
        })
    }

    /// Enqueues a copy of `bytes` (a multiple of 16) from `src` to `dst` on `stream`.
    pub(crate) fn launch(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<()> {
        let mut s = src;
        let mut d = dst;
        let mut n = (bytes / 16) as u64;
        let blocks = (n.div_ceil(256) as u32).clamp(1, self.blocks);
        let mut params: [*mut c_void; 3] = [
            &mut s as *mut _ as *mut c_void,
            &mut d as *mut _ as *mut c_void,
            &mut n as *mut _ as *mut c_void,
        ];
        check(
            unsafe {
                result::launch_kernel(
                    self.kernel.func,
                    (blocks, 1, 1),
                    (256, 1, 1),
                    0,
                    stream,
                    &mut params,
                )
            },
            || "launching copy_u4".into(),
        )
    }
}
