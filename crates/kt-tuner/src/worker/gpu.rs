//! The real worker: owns the CUDA context, keeps each test's arrays on the GPU (a working copy, a pristine
//! copy and the expected outputs), loads CUBINs and launches, verifies and times kernels. Every CUDA call is
//! checked; a launch error that leaves the context usable (too many resources, invalid configuration) makes
//! the config invalid, anything found at synchronisation (illegal address, trap) ends this process after the
//! reply, because such a context cannot be used again.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::{self, CUdevice_attribute as A, CUfunction_attribute as F, CUresult};
use cudarc::driver::{CudaContext, DriverError, result};

use crate::args::{ArrayArg, ArraySource, Distribution, KernelTest};
use crate::device_kernels::{
    self as dk, CMP_FIRST, CMP_MAX_ABS, CMP_MAX_REL, CMP_MISMATCHES, CMP_POISON, CMP_WORDS,
};
use crate::dtype::DType;
use crate::measure::{TimingPolicy, TimingStats};
use crate::verify::{Mismatch, OutputReport, Tolerance, poison_bits};
use crate::worker::protocol::{
    DeviceInfo, FunctionInfo, LaunchArg, OutputFile, RecordedOutput, Reply, Request, RunOutcome,
    RunRequest, RunStatus,
};

type Ptr = sys::CUdeviceptr;

struct DevArray {
    meta: ArrayArg,
    work: Ptr,
    pristine: Ptr,
    expected: Option<Ptr>,
    /// Whether the reference proved it overwrites every element (then it is poisoned before verifying).
    poison: bool,
}

/// A snapshot of one array for a run: name, working, pristine and expected pointers, dtype, elements,
/// is-output, poisonable, tolerance.
type ArrayView = (
    String,
    Ptr,
    Ptr,
    Option<Ptr>,
    DType,
    u64,
    bool,
    bool,
    Tolerance,
);

struct DevTest {
    arrays: Vec<DevArray>,
    tolerances: HashMap<String, Tolerance>,
}

struct Loaded {
    _module: sys::CUmodule,
    func: sys::CUfunction,
}

#[derive(Default)]
pub struct GpuWorker {
    ctx: Option<Arc<CudaContext>>,
    info: Option<DeviceInfo>,
    /// kt's own modules, newest last (each covers the dtypes of the tests that needed it).
    util: Vec<sys::CUmodule>,
    util_funcs: HashMap<String, sys::CUfunction>,
    tests: HashMap<String, DevTest>,
    modules: HashMap<String, Loaded>,
    cmp: Ptr,
    events: Option<(sys::CUevent, sys::CUevent)>,
    flush: Option<(Ptr, usize)>,
}

fn cuda(context: &str, e: DriverError) -> String {
    format!("{context}: {:?}", e.0)
}

/// Launch errors after which the context is still usable: the configuration itself is at fault.
fn is_config_error(e: &DriverError) -> bool {
    matches!(
        e.0,
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            | CUresult::CUDA_ERROR_INVALID_VALUE
            | CUresult::CUDA_ERROR_INVALID_HANDLE
            | CUresult::CUDA_ERROR_NOT_SUPPORTED
    )
}

const STREAM: sys::CUstream = std::ptr::null_mut();

enum LaunchError {
    Invalid(String),
    Crashed(String),
}

impl GpuWorker {
    pub fn handler() -> impl FnMut(Request, Vec<u8>) -> (Reply, bool) {
        let mut w = GpuWorker::default();
        move |req, payload| w.handle(req, payload)
    }

    fn handle(&mut self, req: Request, payload: Vec<u8>) -> (Reply, bool) {
        let err = |message: String| {
            (
                Reply::Error {
                    message,
                    fatal: false,
                },
                false,
            )
        };
        match req {
            Request::Hello { ordinal } => match self.hello(ordinal) {
                Ok(info) => (Reply::Hello(info), false),
                Err(m) => (
                    Reply::Error {
                        message: m,
                        fatal: true,
                    },
                    true,
                ),
            },
            Request::LoadUtilities => match self.load_utilities(&payload) {
                Ok(()) => (Reply::Done { ms: 0.0 }, false),
                Err(m) => err(m),
            },
            Request::Upload { test } => {
                let t = Instant::now();
                match self.upload(test) {
                    Ok(()) => (
                        Reply::Done {
                            ms: t.elapsed().as_secs_f64() * 1e3,
                        },
                        false,
                    ),
                    Err(m) => err(m),
                }
            }
            Request::Load {
                key,
                kernel,
                dynamic_shared,
            } => match self.load(key, &kernel, dynamic_shared, &payload) {
                Ok(info) => (Reply::Loaded(info), false),
                Err(m) => (Reply::LoadFailed(m), false),
            },
            Request::Reference { run } => self.run(&run, true),
            Request::Run { run } => self.run(&run, false),
            Request::RecordOutputs { run, files } => self.record(&run, &files),
            Request::MeasureBandwidth { bytes } => match self.bandwidth(bytes as usize) {
                Ok(gbps) => (Reply::Bandwidth { gbps }, false),
                Err(m) => err(m),
            },
            Request::Shutdown => (Reply::Done { ms: 0.0 }, true),
        }
    }

    fn hello(&mut self, ordinal: usize) -> Result<DeviceInfo, String> {
        let t = Instant::now();
        // SAFETY: only dlopen.
        if !unsafe { sys::is_culib_present() } {
            return Err("libcuda.so not found: this machine has no NVIDIA driver".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| cuda("creating the CUDA context", e))?;
        let a = |attr| ctx.attribute(attr).map_err(|e| cuda("device attribute", e));
        let uuid = ctx.uuid().map_err(|e| cuda("device uuid", e))?;
        let b: Vec<u8> = uuid.bytes.iter().map(|&c| c as u8).collect();
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let uuid = format!(
            "GPU-{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        );
        let mut driver_version = 0;
        // SAFETY: writes one int.
        let _ = unsafe { sys::cuDriverGetVersion(&mut driver_version) };
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(|e| cuda("device name", e))?,
            uuid,
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| cuda("compute capability", e))?,
            sm_count: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_shared_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_per_block_optin: a(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            registers_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            l2_bytes: a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            total_memory: ctx.total_mem().map_err(|e| cuda("total memory", e))?,
            driver_version,
            // Deprecated in newer CUDA releases: absent means "no compute ceiling", not an error.
            clock_khz: a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0),
            context_ms: 0.0,
        };
        // Events with default flags: the `None` flags of some helpers disable timing.
        let e0 = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| cuda("event", e))?;
        let e1 = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| cuda("event", e))?;
        self.events = Some((e0, e1));
        // SAFETY: plain allocation in the current context.
        self.cmp = unsafe { result::malloc_sync(CMP_WORDS * 8) }
            .map_err(|e| cuda("allocating the compare buffer", e))?;
        self.ctx = Some(ctx);
        let info = DeviceInfo {
            context_ms: t.elapsed().as_secs_f64() * 1e3,
            ..info
        };
        self.info = Some(info.clone());
        Ok(info)
    }

    fn load_utilities(&mut self, cubin: &[u8]) -> Result<(), String> {
        let mut image = cubin.to_vec();
        image.push(0);
        // SAFETY: a CUBIN image produced by NVRTC for this device.
        let m = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| cuda("loading kt's utility kernels", e))?;
        self.util.push(m);
        Ok(())
    }

    fn util_fn(&mut self, name: &str) -> Result<sys::CUfunction, String> {
        if let Some(f) = self.util_funcs.get(name) {
            return Ok(*f);
        }
        let c = CString::new(name).map_err(|e| e.to_string())?;
        for m in self.util.iter().rev() {
            // SAFETY: module is loaded.
            if let Ok(f) = unsafe { result::module::get_function(*m, c.clone()) } {
                self.util_funcs.insert(name.to_string(), f);
                return Ok(f);
            }
        }
        Err(format!("utility kernel {name} not loaded"))
    }

    /// Launches a utility kernel over `n` elements with a grid-stride loop.
    fn util_launch(&mut self, name: &str, n: u64, params: &mut [Vec<u8>]) -> Result<(), String> {
        let f = self.util_fn(name)?;
        let sms = self.info.as_ref().map(|i| i.sm_count).unwrap_or(80).max(1) as u64;
        let blocks = n.div_ceil(256).clamp(1, sms * 16) as u32;
        let mut ptrs: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| p.as_mut_ptr() as *mut c_void)
            .collect();
        // SAFETY: parameters match the utility kernel's signature (built by the callers below).
        unsafe { result::launch_kernel(f, (blocks, 1, 1), (256, 1, 1), 0, STREAM, &mut ptrs) }
            .map_err(|e| cuda(name, e))
    }

    fn fill(
        &mut self,
        ptr: Ptr,
        a: &ArrayArg,
        dist: &Distribution,
        seed: u64,
    ) -> Result<(), String> {
        let (code, x, y) = match dist {
            Distribution::Randn => (dk::DIST_RANDN, 0.0, 0.0),
            Distribution::Rand => (dk::DIST_RAND, 0.0, 0.0),
            Distribution::Zeros => (dk::DIST_CONST, 0.0, 0.0),
            Distribution::Ones => (dk::DIST_CONST, 1.0, 0.0),
            Distribution::RandInt { lo, hi } => (dk::DIST_RANDINT, *lo as f64, *hi as f64),
        };
        let mut p = vec![
            ptr.to_le_bytes().to_vec(),
            a.elements.to_le_bytes().to_vec(),
            code.to_le_bytes().to_vec(),
            x.to_le_bytes().to_vec(),
            y.to_le_bytes().to_vec(),
            seed.to_le_bytes().to_vec(),
        ];
        self.util_launch(
            &format!("kt_fill_{}", dk::suffix(a.dtype)),
            a.elements,
            &mut p,
        )
    }

    fn poison(&mut self, ptr: Ptr, dtype: DType, n: u64) -> Result<(), String> {
        let mut p = vec![
            ptr.to_le_bytes().to_vec(),
            n.to_le_bytes().to_vec(),
            poison_bits(dtype).to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_poison_{}", dk::suffix(dtype)), n, &mut p)
    }

    /// Compares on the GPU; copies back only the five result words and, on mismatch, two elements.
    fn compare(
        &mut self,
        name: &str,
        got: Ptr,
        expected: Ptr,
        dtype: DType,
        n: u64,
        tol: Tolerance,
    ) -> Result<OutputReport, String> {
        let init: [u64; CMP_WORDS] = [0, u64::MAX, 0, 0, 0];
        // SAFETY: cmp holds CMP_WORDS u64.
        unsafe { result::memcpy_htod_sync(self.cmp, &init) }
            .map_err(|e| cuda("compare init", e))?;
        let mut p = vec![
            got.to_le_bytes().to_vec(),
            expected.to_le_bytes().to_vec(),
            n.to_le_bytes().to_vec(),
            tol.atol.to_le_bytes().to_vec(),
            tol.rtol.to_le_bytes().to_vec(),
            poison_bits(dtype).to_le_bytes().to_vec(),
            self.cmp.to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_compare_{}", dk::suffix(dtype)), n, &mut p)?;
        let mut out = [0u64; CMP_WORDS];
        // SAFETY: synchronous copy of CMP_WORDS u64.
        unsafe { result::memcpy_dtoh_sync(&mut out, self.cmp) }
            .map_err(|e| cuda("compare result", e))?;
        let mut r = OutputReport {
            name: name.to_string(),
            elements: n,
            mismatches: out[CMP_MISMATCHES],
            never_written: out[CMP_POISON],
            max_abs_error: f64::from_bits(out[CMP_MAX_ABS]),
            max_rel_error: f64::from_bits(out[CMP_MAX_REL]),
            first_mismatch: None,
            allowed_mismatches: (tol.max_mismatch_fraction * n as f64) as u64,
        };
        if r.mismatches > 0 && out[CMP_FIRST] < n {
            let i = out[CMP_FIRST];
            let g = self.element(got, dtype, i)?;
            let e = self.element(expected, dtype, i)?;
            r.first_mismatch = Some(Mismatch {
                index: i,
                expected: e.0,
                got: g.0,
                never_written: g.1,
            });
        }
        Ok(r)
    }

    /// One element as f64, and whether it is the poison pattern.
    fn element(&self, ptr: Ptr, dtype: DType, i: u64) -> Result<(f64, bool), String> {
        let size = dtype.size();
        let mut b = [0u8; 8];
        // SAFETY: index is inside the array (the compare kernel found it there).
        unsafe { result::memcpy_dtoh_sync(&mut b[..size], ptr + i * size as u64) }
            .map_err(|e| cuda("reading an element", e))?;
        let bits = u64::from_le_bytes(b);
        let v = match dtype {
            DType::Float16 => half_to_f64(bits as u16),
            DType::Float32 => f32::from_bits(bits as u32) as f64,
            DType::Float64 => f64::from_bits(bits),
            DType::Int8 => bits as u8 as i8 as f64,
            DType::Int16 => bits as u16 as i16 as f64,
            DType::Int32 => bits as u32 as i32 as f64,
            DType::Int64 => bits as i64 as f64,
            DType::Uint8 | DType::Uint16 | DType::Uint32 | DType::Uint64 => bits as f64,
        };
        Ok((v, bits == poison_bits(dtype)))
    }

    fn upload_source(&mut self, ptr: Ptr, a: &ArrayArg, src: &ArraySource) -> Result<(), String> {
        match src {
            ArraySource::Npy { path, offset } => {
                let mut f =
                    std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
                f.seek(SeekFrom::Start(*offset))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let mut buf = vec![0u8; a.bytes() as usize];
                f.read_exact(&mut buf).map_err(|e| {
                    format!(
                        "{}: {e} (file shorter than its header says?)",
                        path.display()
                    )
                })?;
                // SAFETY: ptr holds a.bytes() bytes.
                unsafe { result::memcpy_htod_sync(ptr, &buf) }.map_err(|e| cuda("uploading", e))
            }
            ArraySource::Generate { dist, seed } => self.fill(ptr, a, dist, *seed),
        }
    }

    fn free_test(&mut self, id: &str) {
        if let Some(t) = self.tests.remove(id) {
            for a in t.arrays {
                for p in [Some(a.work), Some(a.pristine), a.expected]
                    .into_iter()
                    .flatten()
                {
                    // SAFETY: allocated by malloc_sync and freed once.
                    let _ = unsafe { result::free_sync(p) };
                }
            }
        }
    }

    fn upload(&mut self, test: KernelTest) -> Result<(), String> {
        self.free_test(&test.id);
        let mut arrays = Vec::new();
        for a in test.arrays() {
            let bytes = (a.bytes() as usize).max(1);
            // SAFETY: plain allocations.
            let work = unsafe { result::malloc_sync(bytes) }
                .map_err(|e| cuda(&format!("allocating {} ({} bytes)", a.name, bytes), e))?;
            let pristine = unsafe { result::malloc_sync(bytes) }
                .map_err(|e| cuda(&format!("allocating {} ({} bytes)", a.name, bytes), e))?;
            let mut d = DevArray {
                meta: a.clone(),
                work,
                pristine,
                expected: None,
                poison: false,
            };
            self.upload_source(pristine, a, &a.source)?;
            if let Some(exp) = &a.expected {
                let e = unsafe { result::malloc_sync(bytes) }
                    .map_err(|e| cuda("allocating expected", e))?;
                self.upload_source(e, a, exp)?;
                d.expected = Some(e);
            }
            // SAFETY: both hold `bytes`.
            unsafe { result::memcpy_dtod_sync(work, pristine, bytes) }
                .map_err(|e| cuda("copy", e))?;
            arrays.push(d);
        }
        result::ctx::synchronize().map_err(|e| cuda("upload", e))?;
        self.tests.insert(
            test.id.clone(),
            DevTest {
                arrays,
                tolerances: test.tolerances.into_iter().collect(),
            },
        );
        Ok(())
    }

    fn load(
        &mut self,
        key: String,
        kernel: &str,
        dynamic_shared: u32,
        cubin: &[u8],
    ) -> Result<FunctionInfo, String> {
        let func = match self.modules.get(&key) {
            Some(l) => l.func,
            None => {
                let mut image = cubin.to_vec();
                image.push(0);
                // SAFETY: a CUBIN from NVRTC for this device's architecture.
                let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
                    .map_err(|e| cuda("loading the module", e))?;
                let name = CString::new(kernel).map_err(|e| e.to_string())?;
                // SAFETY: module just loaded.
                let func = unsafe { result::module::get_function(module, name) }.map_err(|e| {
                    format!(
                        "{}; is the kernel `{kernel}` declared extern \"C\"?",
                        cuda("finding the kernel", e)
                    )
                })?;
                self.modules.insert(
                    key.clone(),
                    Loaded {
                        _module: module,
                        func,
                    },
                );
                func
            }
        };
        // SAFETY: func is a loaded function.
        let attr = |a| {
            unsafe { result::function::get_function_attribute(func, a) }
                .map_err(|e| cuda("function attribute", e))
        };
        if dynamic_shared > 48 * 1024 {
            // SAFETY: as above; raising the opt-in limit for dynamic shared memory above 48 KB.
            unsafe {
                result::function::set_function_attribute(
                    func,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as i32,
                )
            }
            .map_err(|e| {
                cuda(
                    &format!("allowing {dynamic_shared} bytes of dynamic shared memory"),
                    e,
                )
            })?;
        }
        Ok(FunctionInfo {
            registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_shared_bytes: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        })
    }

    /// Launches the kernel once and checks both the launch and the last error.
    fn launch(
        &self,
        func: sys::CUfunction,
        r: &RunRequest,
        params: &mut [Vec<u8>],
        timed: bool,
    ) -> Result<f64, LaunchError> {
        let mut ptrs: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| p.as_mut_ptr() as *mut c_void)
            .collect();
        let (e0, e1) = self
            .events
            .ok_or_else(|| LaunchError::Crashed("no context".into()))?;
        let d = r.dims;
        if timed {
            // SAFETY: events belong to this context.
            unsafe { result::event::record(e0, STREAM) }
                .map_err(|e| LaunchError::Crashed(cuda("event", e)))?;
        }
        // SAFETY: arguments were built from the test's device arrays and encoded scalars in signature order.
        if let Err(e) = unsafe {
            result::launch_kernel(
                func,
                (d.grid[0], d.grid[1], d.grid[2]),
                (d.block[0], d.block[1], d.block[2]),
                d.shared_mem,
                STREAM,
                &mut ptrs,
            )
        } {
            return Err(if is_config_error(&e) {
                LaunchError::Invalid(cuda("launch refused", e))
            } else {
                LaunchError::Crashed(cuda("launch", e))
            });
        }
        if timed {
            // SAFETY: as above.
            unsafe { result::event::record(e1, STREAM) }
                .map_err(|e| LaunchError::Crashed(cuda("event", e)))?;
            unsafe { result::event::synchronize(e1) }
                .map_err(|e| LaunchError::Crashed(cuda("kernel failed", e)))?;
            let ms = unsafe { result::event::elapsed(e0, e1) }
                .map_err(|e| LaunchError::Crashed(cuda("event timing", e)))?;
            return Ok(ms as f64);
        }
        result::ctx::synchronize().map_err(|e| LaunchError::Crashed(cuda("kernel failed", e)))?;
        Ok(0.0)
    }

    fn run(&mut self, r: &RunRequest, reference: bool) -> (Reply, bool) {
        let result = self.run_inner(r, reference);
        ran_reply(result)
    }

    fn record(&mut self, r: &RunRequest, files: &[OutputFile]) -> (Reply, bool) {
        let result = self.record_inner(r, files);
        ran_reply(result)
    }
}

/// The reply to a launch request: a crash ends the worker after the reply.
fn ran_reply(result: Result<RunOutcome, LaunchError>) -> (Reply, bool) {
    let failed = |status| RunOutcome {
        status,
        outputs: vec![],
        inputs_modified: vec![],
        timing: None,
        occupancy: None,
        accumulating_outputs: vec![],
        recorded: vec![],
    };
    match result {
        Ok(outcome) => (Reply::Ran(outcome), false),
        Err(LaunchError::Invalid(m)) => (Reply::Ran(failed(RunStatus::Invalid(m))), false),
        Err(LaunchError::Crashed(m)) => (Reply::Ran(failed(RunStatus::Crashed(m))), true),
    }
}

/// Streams a device buffer into a .npy file through a bounded host buffer (outputs can be gigabytes).
fn write_npy_from_device(
    path: &std::path::Path,
    dtype: DType,
    shape: &[u64],
    src: Ptr,
    bytes: usize,
) -> Result<(), String> {
    use std::io::Write;
    const CHUNK: usize = 64 << 20;
    let io = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    w.write_all(&crate::npy::header(dtype, shape)).map_err(io)?;
    let data_bytes = shape.iter().product::<u64>() as usize * dtype.size();
    let mut buf = vec![0u8; CHUNK.min(bytes).min(data_bytes.max(1))];
    let mut done = 0usize;
    while done < data_bytes {
        let n = buf.len().min(data_bytes - done);
        // SAFETY: src holds at least data_bytes bytes; the host slice holds n.
        unsafe { result::memcpy_dtoh_sync(&mut buf[..n], src + done as u64) }
            .map_err(|e| cuda("reading an output back", e))?;
        w.write_all(&buf[..n]).map_err(io)?;
        done += n;
    }
    w.flush().map_err(io)?;
    Ok(())
}

impl GpuWorker {
    /// The function, its encoded arguments and a view of the test's arrays for one launch request, plus
    /// the occupancy bound of the launch.
    #[allow(clippy::type_complexity)]
    fn launch_setup(
        &self,
        r: &RunRequest,
    ) -> Result<(sys::CUfunction, Vec<Vec<u8>>, Vec<ArrayView>, Option<f64>), LaunchError> {
        let inv = LaunchError::Invalid;
        let func = self
            .modules
            .get(&r.module)
            .map(|l| l.func)
            .ok_or_else(|| inv(format!("module {} not loaded", r.module)))?;
        let test = self
            .tests
            .get(&r.test)
            .ok_or_else(|| inv(format!("test {} not uploaded", r.test)))?;
        let mut params: Vec<Vec<u8>> = Vec::new();
        for a in &r.args {
            match a {
                LaunchArg::Array(name) => {
                    let d = test
                        .arrays
                        .iter()
                        .find(|x| &x.meta.name == name)
                        .ok_or_else(|| inv(format!("no array `{name}` in test {}", r.test)))?;
                    params.push(d.work.to_le_bytes().to_vec());
                }
                LaunchArg::Scalar(b) => params.push(b.clone()),
            }
        }
        let threads = (r.dims.block[0] * r.dims.block[1] * r.dims.block[2]) as i32;
        // SAFETY: func is loaded.
        let occupancy = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                func,
                threads,
                r.dims.shared_mem as usize,
            )
        }
        .ok()
        .and_then(|b| {
            self.info
                .as_ref()
                .map(|i| (b * threads) as f64 / i.max_threads_per_sm.max(1) as f64)
        });
        let arrays: Vec<ArrayView> = test
            .arrays
            .iter()
            .map(|a| {
                (
                    a.meta.name.clone(),
                    a.work,
                    a.pristine,
                    a.expected,
                    a.meta.dtype,
                    a.meta.elements,
                    a.meta.is_output,
                    a.poison,
                    test.tolerances
                        .get(&a.meta.name)
                        .copied()
                        .unwrap_or_default(),
                )
            })
            .collect();
        Ok((func, params, arrays, occupancy))
    }

    fn run_inner(&mut self, r: &RunRequest, reference: bool) -> Result<RunOutcome, LaunchError> {
        let inv = LaunchError::Invalid;
        let (func, mut params, arrays, occupancy) = self.launch_setup(r)?;
        let c = |e: String| LaunchError::Crashed(e);
        // the first run's time (the verifying run or the warm-up), for the early abort
        let mut first_ms: Option<f64> = None;
        let mut outcome = RunOutcome {
            status: RunStatus::Ok,
            outputs: vec![],
            inputs_modified: vec![],
            timing: None,
            occupancy,
            accumulating_outputs: vec![],
            recorded: vec![],
        };

        if reference {
            for (_, work, pristine, _, dt, n, out, _, _) in &arrays {
                if *out {
                    // SAFETY: same-size device buffers.
                    unsafe {
                        result::memcpy_dtod_sync(*work, *pristine, (*n as usize) * dt.size())
                    }
                    .map_err(|e| c(cuda("reset", e)))?;
                }
            }
            self.launch(func, r, &mut params, false)?;
            // Expected values: the test's own, else this run's outputs.
            let mut expected = HashMap::new();
            for (name, work, _, exp, dt, n, out, _, tol) in &arrays {
                if !*out {
                    continue;
                }
                let e = match exp {
                    Some(e) => {
                        let rep = self.compare(name, *work, *e, *dt, *n, *tol).map_err(c)?;
                        outcome.outputs.push(rep);
                        *e
                    }
                    None => {
                        let bytes = (*n as usize * dt.size()).max(1);
                        // SAFETY: plain allocation and same-size copy.
                        let e = unsafe { result::malloc_sync(bytes) }
                            .map_err(|e| c(cuda("allocating expected", e)))?;
                        unsafe { result::memcpy_dtod_sync(e, *work, bytes) }
                            .map_err(|e| c(cuda("copy", e)))?;
                        e
                    }
                };
                expected.insert(name.clone(), e);
            }
            // A second run with every output poisoned: an output that still matches is fully overwritten by
            // the kernel and can be poisoned from now on; one that does not depends on its initial contents.
            for (_, work, _, _, dt, n, out, _, _) in &arrays {
                if *out {
                    self.poison(*work, *dt, *n).map_err(c)?;
                }
            }
            self.launch(func, r, &mut params, false)?;
            let mut poisonable = Vec::new();
            for (name, work, pristine, _, dt, n, out, _, tol) in &arrays {
                if !*out {
                    continue;
                }
                let e = expected[name];
                let rep = self.compare(name, *work, e, *dt, *n, *tol).map_err(c)?;
                if rep.passed() {
                    poisonable.push(name.clone());
                } else {
                    outcome.accumulating_outputs.push(name.clone());
                }
                // SAFETY: same-size buffers.
                unsafe { result::memcpy_dtod_sync(*work, *pristine, *n as usize * dt.size()) }
                    .map_err(|e| c(cuda("reset", e)))?;
            }
            if let Some(t) = self.tests.get_mut(&r.test) {
                for a in &mut t.arrays {
                    if let Some(e) = expected.get(&a.meta.name) {
                        a.expected = Some(*e);
                    }
                    a.poison = poisonable.contains(&a.meta.name);
                }
            }
        } else if r.verify {
            for (_, work, pristine, _, dt, n, out, poison, _) in &arrays {
                if *out {
                    if *poison {
                        self.poison(*work, *dt, *n).map_err(c)?;
                    } else {
                        // SAFETY: same-size buffers.
                        unsafe {
                            result::memcpy_dtod_sync(*work, *pristine, *n as usize * dt.size())
                        }
                        .map_err(|e| c(cuda("reset", e)))?;
                    }
                }
            }
            first_ms = Some(self.launch(func, r, &mut params, true)?);
            for (name, work, pristine, exp, dt, n, out, _, tol) in &arrays {
                if *out {
                    let Some(e) = exp else {
                        return Err(inv(format!(
                            "no expected values for output {name}: run the reference first"
                        )));
                    };
                    let rep = self.compare(name, *work, *e, *dt, *n, *tol).map_err(c)?;
                    outcome.outputs.push(rep);
                } else {
                    // inputs must come out unchanged: exact byte comparison with the pristine copy
                    let bytes = *n * dt.size() as u64;
                    // widest word that divides the size: far fewer elements than comparing byte by byte
                    let (word, words) = if bytes.is_multiple_of(8) {
                        (DType::Uint64, bytes / 8)
                    } else if bytes.is_multiple_of(4) {
                        (DType::Uint32, bytes / 4)
                    } else {
                        (DType::Uint8, bytes)
                    };
                    let rep = self
                        .compare(
                            name,
                            *work,
                            *pristine,
                            word,
                            words,
                            Tolerance {
                                rtol: 0.0,
                                atol: 0.0,
                                max_mismatch_fraction: 0.0,
                            },
                        )
                        .map_err(c)?;
                    if !rep.passed() {
                        outcome.inputs_modified.push(name.clone());
                        // SAFETY: same-size buffers; later configs must see the original inputs.
                        unsafe { result::memcpy_dtod_sync(*work, *pristine, bytes as usize) }
                            .map_err(|e| c(cuda("reset", e)))?;
                    }
                }
            }
        }

        if let Some(policy) = &r.timing {
            // Outputs that are also read (in-place kernels) start from their original values.
            for (_, work, pristine, _, dt, n, out, poison, _) in &arrays {
                if *out && (!*poison || !r.verify) {
                    // SAFETY: same-size buffers.
                    unsafe { result::memcpy_dtod_sync(*work, *pristine, *n as usize * dt.size()) }
                        .map_err(|e| c(cuda("reset", e)))?;
                }
            }
            let verified =
                outcome.outputs.iter().all(|o| o.passed()) && outcome.inputs_modified.is_empty();
            if r.verify && !verified {
                // a wrong answer is not timed: its time would never be used
                return Ok(outcome);
            }
            let mut initial = Vec::new();
            let mut first_counted = false;
            if r.verify && !reference && !policy.flush_l2 {
                // The verifying run verified: it is a launch like any other, so it is the first sample
                // (modules load eagerly and the function was queried before it; `time` still drops it as a
                // warm-up when the next sample shows it was slow).
                initial.extend(first_ms);
                first_counted = true;
            } else if !r.verify && !reference {
                // warm-up: not a sample, but timed so a hopeless configuration can stop here
                let ms = self.launch(func, r, &mut params, true)?;
                if policy.is_hopeless(&[ms], r.best) {
                    let mut s = TimingStats::from_samples(&[ms])
                        .ok_or_else(|| LaunchError::Crashed("no samples".into()))?;
                    s.aborted_early = true;
                    outcome.timing = Some(s);
                    return Ok(outcome);
                }
            }
            outcome.timing =
                Some(self.time(func, r, &mut params, policy, initial, first_counted)?);
        }
        Ok(outcome)
    }

    /// Samples until the policy is satisfied. `initial` holds samples already taken (the verifying run's,
    /// when `first_counted`); a counted verifying sample is dropped as a warm-up when the next sample shows
    /// it was slow.
    fn time(
        &mut self,
        func: sys::CUfunction,
        r: &RunRequest,
        params: &mut [Vec<u8>],
        policy: &TimingPolicy,
        initial: Vec<f64>,
        first_counted: bool,
    ) -> Result<TimingStats, LaunchError> {
        let mut samples = initial;
        let mut check_warmup = first_counted && samples.len() == 1;
        let mut warmup_discarded = false;
        if policy.flush_l2 && self.flush.is_none() {
            let bytes = (self.info.as_ref().map(|i| i.l2_bytes).unwrap_or(64 << 20) as usize)
                .max(1 << 20)
                * 2;
            // SAFETY: plain allocation.
            let p = unsafe { result::malloc_sync(bytes) }
                .map_err(|e| LaunchError::Crashed(cuda("L2 flush buffer", e)))?;
            self.flush = Some((p, bytes));
        }
        while policy.wants_more(&samples, r.best) {
            if let Some((p, bytes)) = self.flush {
                // SAFETY: writes the whole flush buffer, evicting the kernel's data from L2.
                unsafe { result::memset_d8_async(p, (samples.len() & 0xff) as u8, bytes, STREAM) }
                    .map_err(|e| LaunchError::Crashed(cuda("L2 flush", e)))?;
            }
            samples.push(self.launch(func, r, params, true)?);
            if check_warmup && samples.len() == 2 {
                check_warmup = false;
                if policy.first_is_warmup(samples[0], samples[1]) {
                    samples.remove(0);
                    warmup_discarded = true;
                }
            }
        }
        let mut s = TimingStats::from_samples(&samples)
            .ok_or_else(|| LaunchError::Crashed("no samples".into()))?;
        // fewer than min_reps only when the policy found the configuration hopeless
        s.aborted_early = (samples.len() as u32) < policy.min_reps;
        s.warmup_discarded = warmup_discarded;
        Ok(s)
    }

    /// `RecordOutputs`: run with the outputs at their initial contents, write the requested outputs to
    /// .npy files, probe with poisoned outputs for elements never written, time if asked.
    fn record_inner(
        &mut self,
        r: &RunRequest,
        files: &[OutputFile],
    ) -> Result<RunOutcome, LaunchError> {
        let inv = LaunchError::Invalid;
        let c = LaunchError::Crashed;
        let (func, mut params, arrays, occupancy) = self.launch_setup(r)?;
        let mut outcome = RunOutcome {
            status: RunStatus::Ok,
            outputs: vec![],
            inputs_modified: vec![],
            timing: None,
            occupancy,
            accumulating_outputs: vec![],
            recorded: vec![],
        };
        let mut targets = Vec::new();
        for f in files {
            let a = arrays
                .iter()
                .find(|a| a.0 == f.name)
                .ok_or_else(|| inv(format!("no array `{}` in test {}", f.name, r.test)))?;
            if f.shape.iter().product::<u64>() != a.5 {
                return Err(inv(format!(
                    "shape {:?} for `{}` does not hold its {} elements",
                    f.shape, f.name, a.5
                )));
            }
            targets.push((f, a));
        }
        let reset = |arrays: &[ArrayView]| -> Result<(), LaunchError> {
            for (_, work, pristine, _, dt, n, out, _, _) in arrays {
                if *out {
                    // SAFETY: same-size device buffers.
                    unsafe {
                        result::memcpy_dtod_sync(*work, *pristine, (*n as usize) * dt.size())
                    }
                    .map_err(|e| c(cuda("reset", e)))?;
                }
            }
            Ok(())
        };
        reset(&arrays)?;
        self.launch(func, r, &mut params, false)?;
        // keep this run's values on the device for the poison probe, and stream them to the files
        let mut kept: Vec<(Ptr, &OutputFile, &ArrayView)> = Vec::new();
        let mut failure = None;
        for (f, a) in &targets {
            let bytes = (a.5 as usize * a.4.size()).max(1);
            // SAFETY: plain allocation and a same-size copy.
            let copy = match unsafe { result::malloc_sync(bytes) } {
                Ok(p) => p,
                Err(e) => {
                    failure = Some(inv(cuda(&format!("keeping a copy of {}", f.name), e)));
                    break;
                }
            };
            kept.push((copy, f, a));
            // SAFETY: both hold `bytes`.
            if let Err(e) = unsafe { result::memcpy_dtod_sync(copy, a.1, bytes) } {
                failure = Some(c(cuda("copy", e)));
                break;
            }
            if let Err(m) = write_npy_from_device(&f.path, a.4, &f.shape, a.1, bytes) {
                failure = Some(inv(m));
                break;
            }
        }
        if failure.is_none() {
            let probe = (|| -> Result<(), LaunchError> {
                for (_, _, a) in &kept {
                    self.poison(a.1, a.4, a.5).map_err(c)?;
                }
                self.launch(func, r, &mut params, false)?;
                for (copy, f, a) in &kept {
                    let rep = self.compare(&a.0, a.1, *copy, a.4, a.5, a.8).map_err(c)?;
                    outcome.recorded.push(RecordedOutput {
                        name: f.name.clone(),
                        path: f.path.clone(),
                        dtype: a.4,
                        shape: f.shape.clone(),
                        never_written: rep.never_written,
                        depends_on_initial: rep.mismatches,
                    });
                    if !rep.passed() {
                        outcome.accumulating_outputs.push(f.name.clone());
                    }
                    outcome.outputs.push(rep);
                }
                Ok(())
            })();
            failure = probe.err();
        }
        for (copy, _, _) in &kept {
            // SAFETY: allocated above, freed once.
            let _ = unsafe { result::free_sync(*copy) };
        }
        if let Some(e) = failure {
            return Err(e);
        }
        reset(&arrays)?;
        if let Some(policy) = &r.timing {
            outcome.timing = Some(self.time(func, r, &mut params, policy, Vec::new(), false)?);
            reset(&arrays)?;
        }
        Ok(outcome)
    }

    fn bandwidth(&mut self, bytes: usize) -> Result<f64, String> {
        let (e0, e1) = self.events.ok_or("no context")?;
        // SAFETY: plain allocations, copies within them, events of this context.
        unsafe {
            let a = result::malloc_sync(bytes).map_err(|e| cuda("bandwidth buffer", e))?;
            let b = result::malloc_sync(bytes).map_err(|e| cuda("bandwidth buffer", e))?;
            result::memset_d8_sync(a, 1, bytes).map_err(|e| cuda("memset", e))?;
            result::memcpy_dtod_async(b, a, bytes, STREAM).map_err(|e| cuda("copy", e))?;
            let mut best = f64::MAX;
            for _ in 0..5 {
                result::event::record(e0, STREAM).map_err(|e| cuda("event", e))?;
                result::memcpy_dtod_async(b, a, bytes, STREAM).map_err(|e| cuda("copy", e))?;
                result::event::record(e1, STREAM).map_err(|e| cuda("event", e))?;
                result::event::synchronize(e1).map_err(|e| cuda("copy", e))?;
                best =
                    best.min(result::event::elapsed(e0, e1).map_err(|e| cuda("event", e))? as f64);
            }
            let _ = result::free_sync(a);
            let _ = result::free_sync(b);
            // bytes read plus bytes written
            Ok(2.0 * bytes as f64 / (best * 1e-3) / 1e9)
        }
    }
}

fn half_to_f64(h: u16) -> f64 {
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    match e {
        0 => s * m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                s * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => s * (m + 1024.0) * 2f64.powi(e - 25),
    }
}
