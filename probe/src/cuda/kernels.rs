//! The SM copy kernel for P2P: compiled at run time with NVRTC (so no CUDA toolkit is needed to
//! build the probe) and loaded into each GPU's context. NVRTC is chosen over hand-written PTX
//! because the generated code is portable across architectures; when libnvrtc is missing the
//! SM-kernel figures are skipped with a note instead of failing the run.

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

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles the copy kernel to PTX once per process.
pub fn copy_ptx() -> Result<CString> {
    if !nvrtc_present() {
        return Err(ProbeError::MissingLibrary {
            library: "libnvrtc".into(),
            hint: "install the CUDA runtime compiler (cuda-nvrtc) for SM-kernel P2P figures".into(),
        });
    }
    let ptx = cudarc::nvrtc::compile_ptx(COPY_SRC).map_err(|e| ProbeError::cuda("NVRTC", e))?;
    CString::new(ptx.to_src()).map_err(|e| ProbeError::cuda("NVRTC output", e))
}

/// The copy kernel loaded on one GPU.
pub struct CopyKernel {
    func: sys::CUfunction,
    module: sys::CUmodule,
    ctx: sys::CUcontext,
    blocks: u32,
}

impl CopyKernel {
    /// Loads `ptx` into `gpu`'s context.
    pub fn load(gpu: &Gpu, ptx: &CString) -> Result<CopyKernel> {
        gpu.bind()?;
        let module = check(
            unsafe { result::module::load_data(ptx.as_ptr() as *const c_void) },
            || "loading the copy kernel".into(),
        )?;
        let func = check(
            unsafe { result::module::get_function(module, CString::new("copy_u4").unwrap()) },
            || "finding copy_u4".into(),
        )?;
        let sms =
            gpu.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(CopyKernel {
            func,
            module,
            ctx: gpu.ctx,
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
                    self.func,
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

impl Drop for CopyKernel {
    fn drop(&mut self) {
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::module::unload(self.module);
        }
    }
}
