//! The compile queue in front of the compiler pool. Every module the tuner needs (a configuration of the
//! user's kernel, kt's own utility kernels for a set of dtypes) is submitted with a ticket and waited for by
//! ticket; results that arrive meanwhile are kept for their own waiter. Compiled modules are remembered by
//! key with what the worker needs to load them, so a fresh worker after a crash can load them again.

use std::collections::HashMap;
use std::sync::Arc;

use crate::compile::device_kernels;
use crate::compile::headers;
use crate::compile::module_cache::{CompilePool, ModuleOutcome};
use crate::compile::nvrtc::{self, Program};
use crate::compile::nvrtc_prelude;
use crate::error::TunerError;
use crate::model::expr::Bindings;
use crate::model::outcome::Verdict;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use kt_record::DType;

/// A configuration handed to the pool: its ticket, its module key and the dynamic shared memory its
/// launch asks for.
#[derive(Debug, Clone)]
pub(crate) struct Submitted {
    pub ticket: usize,
    pub key: String,
    pub shared: u32,
}

/// What the session knows about one compiled module across worker restarts.
pub(crate) struct ModuleEntry {
    pub outcome: Arc<ModuleOutcome>,
    pub kernel: String,
    pub dynamic_shared: u32,
}

type Finished = Result<Arc<ModuleOutcome>, TunerError>;

pub(crate) struct CompileQueue {
    pool: CompilePool,
    arch: (i32, i32),
    /// The CUDA toolkit's header directories (cuda_fp16.h, cooperative groups, libcu++), when the machine
    /// has them.
    cuda_include: Vec<std::path::PathBuf>,
    ticket: usize,
    /// Results that arrived while another ticket was awaited.
    finished: HashMap<usize, Finished>,
    /// kt's own kernels per dtype set: compile ticket, then the CUBIN once it is known.
    util_tickets: HashMap<Vec<DType>, usize>,
    util_cubins: HashMap<Vec<DType>, Arc<Vec<u8>>>,
    modules: HashMap<String, ModuleEntry>,
}

impl CompileQueue {
    pub fn new(pool: CompilePool, arch: (i32, i32)) -> Self {
        CompileQueue {
            pool,
            arch,
            cuda_include: headers::cuda_include_dirs(),
            ticket: 0,
            finished: HashMap::new(),
            util_tickets: HashMap::new(),
            util_cubins: HashMap::new(),
            modules: HashMap::new(),
        }
    }

    pub fn arch(&self) -> (i32, i32) {
        self.arch
    }

    fn next_ticket(&mut self) -> usize {
        self.ticket += 1;
        self.ticket
    }

    /// The NVRTC options of a kernel: the device's architecture, then the kernel's own (the identity of a
    /// kernel in the results cache).
    pub fn options_for(&self, kernel: &TunableKernel) -> Vec<String> {
        let mut o = vec![nvrtc::arch_option(self.arch)];
        o.extend(kernel.compiler_options.iter().cloned());
        o.extend(kernel.template_args.iter().map(|a| format!("template {a}")));
        o
    }

    /// The program NVRTC compiles for `kernel` at `config` ([`kernel_program`] for this device).
    pub fn program(
        &self,
        kernel: &TunableKernel,
        config: &Config,
        scalars: &Bindings,
        grid_defines: bool,
    ) -> Result<(Program, Vec<u8>), TunerError> {
        kernel_program(
            kernel,
            config,
            scalars,
            grid_defines,
            self.arch,
            &self.cuda_include,
        )
    }

    /// Submits a configuration's compilation. `grid_defines`: whether the `grid_size_*` defines go in
    /// (only when every test has the same launch).
    pub fn submit(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        scalars: &Bindings,
        grid_defines: bool,
    ) -> Result<Submitted, TunerError> {
        let (program, extra) = self.program(kernel, config, scalars, grid_defines)?;
        let ticket = self.next_ticket();
        // The pool's key names the CUBIN; two kernels of one source share it, so the session's key also
        // names the kernel looked up in it (else the second name would launch the first kernel).
        let key = format!(
            "{}#{}",
            self.pool.submit(ticket, program, &extra),
            kernel.kernel_name
        );
        let shared = kernel.geometry.launch(config, scalars)?.shared_mem;
        Ok(Submitted {
            ticket,
            key,
            shared,
        })
    }

    /// Queues kt's own kernels for these dtypes (first in the queue: the worker needs them to make the
    /// inputs).
    pub fn submit_util(&mut self, dtypes: &[DType]) {
        if self.util_tickets.contains_key(dtypes) || self.util_cubins.contains_key(dtypes) {
            return;
        }
        let ticket = self.next_ticket();
        self.pool.submit(
            ticket,
            Program::new(
                device_kernels::full_source(dtypes),
                vec![nvrtc::arch_option(self.arch)],
            ),
            &[],
        );
        self.util_tickets.insert(dtypes.to_vec(), ticket);
    }

    /// kt's own kernels for these dtypes, compiled (queued now if they were not).
    pub fn util_cubin(&mut self, dtypes: &[DType]) -> Result<Arc<Vec<u8>>, TunerError> {
        if let Some(c) = self.util_cubins.get(dtypes) {
            return Ok(c.clone());
        }
        self.submit_util(dtypes);
        let ticket = self
            .util_tickets
            .remove(dtypes)
            .ok_or_else(|| TunerError::Nvrtc("utility kernels were not queued".into()))?;
        match &*self.wait(ticket)? {
            ModuleOutcome::Compiled { cubin, .. } => {
                self.util_cubins.insert(dtypes.to_vec(), cubin.clone());
                Ok(cubin.clone())
            }
            ModuleOutcome::Failed { log, .. } => Err(TunerError::Nvrtc(format!(
                "kt's utility kernels did not compile for sm_{}{}: {log}",
                self.arch.0, self.arch.1
            ))),
        }
    }

    /// Waits for the pool to finish `ticket`, keeping other results that arrive meanwhile.
    pub fn wait(&mut self, ticket: usize) -> Result<Arc<ModuleOutcome>, TunerError> {
        loop {
            if let Some(r) = self.finished.remove(&ticket) {
                return r;
            }
            match self.pool.next_finished() {
                Some((t, r)) => {
                    self.finished.insert(t, r);
                }
                None => return Err(TunerError::Nvrtc("the compiler pool stopped".into())),
            }
        }
    }

    /// The first of `tickets` (in their order) whose compilation has finished, waiting for the pool until
    /// one has; its result stays for [`CompileQueue::wait`]. None when `tickets` is empty. A search
    /// measures whichever configuration is ready rather than the next in line, so one slow compilation
    /// does not hold the GPU up while later ones are done.
    pub fn first_ready(&mut self, tickets: &[usize]) -> Result<Option<usize>, TunerError> {
        if tickets.is_empty() {
            return Ok(None);
        }
        loop {
            if let Some(t) = tickets.iter().find(|t| self.finished.contains_key(t)) {
                return Ok(Some(*t));
            }
            match self.pool.next_finished() {
                Some((t, r)) => {
                    self.finished.insert(t, r);
                }
                None => return Err(TunerError::Nvrtc("the compiler pool stopped".into())),
            }
        }
    }

    /// Records a compiled module so later launches of `key` find it: the symbol to look up is the lowered
    /// name of its name expression, else the kernel's plain name.
    pub fn remember(&mut self, key: &str, outcome: Arc<ModuleOutcome>, kernel: &str, shared: u32) {
        let symbol = match &*outcome {
            ModuleOutcome::Compiled {
                lowered_name: Some(l),
                ..
            } => l.clone(),
            _ => kernel.to_string(),
        };
        self.modules.insert(
            key.to_string(),
            ModuleEntry {
                outcome,
                kernel: symbol,
                dynamic_shared: shared,
            },
        );
    }

    /// Submits `config` and waits for it: its module key, recorded for the worker to load, or the verdict of
    /// its failed compilation.
    pub fn compiled(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        scalars: &Bindings,
        grid_defines: bool,
    ) -> Result<Result<String, Verdict>, TunerError> {
        let submitted = self.submit(kernel, config, scalars, grid_defines)?;
        let outcome = self.wait(submitted.ticket)?;
        if let ModuleOutcome::Failed { log, .. } = &*outcome {
            return Ok(Err(Verdict::from_compile_log(log, &kernel.kernel_name)));
        }
        self.remember(
            &submitted.key,
            outcome,
            &kernel.kernel_name,
            submitted.shared,
        );
        Ok(Ok(submitted.key))
    }

    /// Waits for a module the run cannot do without (a reference) and records it; a compile failure is a
    /// reference error naming `what` and keeping NVRTC's log.
    pub fn wait_required(
        &mut self,
        submitted: &Submitted,
        kernel: &str,
        test: &str,
        what: &str,
    ) -> Result<Arc<ModuleOutcome>, TunerError> {
        let outcome = self.wait(submitted.ticket)?;
        if let ModuleOutcome::Failed { log, .. } = &*outcome {
            let reason = if nvrtc::log_says_kernel_missing(log, kernel) {
                format!("{what}: kernel `{kernel}` not found in its source:\n{log}")
            } else {
                format!("{what} does not compile:\n{log}")
            };
            return Err(TunerError::Reference {
                test: test.to_string(),
                reason,
            });
        }
        self.remember(&submitted.key, outcome.clone(), kernel, submitted.shared);
        Ok(outcome)
    }

    pub fn module(&self, key: &str) -> Option<&ModuleEntry> {
        self.modules.get(key)
    }
}

/// The program NVRTC compiles for `kernel` at `config` on a device of architecture `arch`: the standard
/// C names the unit uses (`nvrtc_prelude::standard_prelude`), the configuration's defines (template parameters excepted) in front of the source, the include directories
/// (the kernel's, then the toolkit's `cuda_include`), kt's built-in headers and the name expression; plus
/// the contents of the user headers it includes (part of the module's identity).
pub fn kernel_program(
    kernel: &TunableKernel,
    config: &Config,
    scalars: &Bindings,
    grid_defines: bool,
    arch: (i32, i32),
    cuda_include: &[std::path::PathBuf],
) -> Result<(Program, Vec<u8>), TunerError> {
    let mut defines = kernel.geometry.defines(config, scalars)?;
    defines.retain(|(n, _)| {
        (grid_defines || !n.starts_with("grid_size_")) && !kernel.is_template_param(n)
    });
    let generated = kernel.source_at(config)?;
    let (unroll, source) = unroll_factors(&mut defines, &generated);
    let mut options = vec![nvrtc::arch_option(arch)];
    options.extend(
        kernel
            .include_dirs
            .iter()
            .chain(cuda_include)
            .map(|d| format!("-I{}", d.display())),
    );
    options.extend(kernel.compiler_options.iter().cloned());
    let extra: Vec<u8> = headers::user_headers(&source, &kernel.include_dirs)
        .into_iter()
        .flat_map(|(path, bytes)| {
            let mut b = path.to_string_lossy().into_owned().into_bytes();
            b.push(0);
            b.extend(bytes);
            b
        })
        .collect();
    let family = program_family(&kernel.source, &options);
    let program = Program {
        source: nvrtc_prelude::standard_prelude(&source)
            + &unroll
            + &nvrtc::full_source(&defines, &source),
        options,
        headers: headers::builtin_headers()
            .into_iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect(),
        name_expression: Some(kernel.name_expression(config)),
        family: Some(family),
    };
    Ok((program, extra))
}

/// Kernel Tuner's convention for a parameter whose name holds `loop_unroll_factor`: it is the argument of
/// `#pragma unroll NAME`, which must be an integral constant expression, so it becomes `constexpr int NAME =
/// value;` instead of a `#define`; the value 0 removes those pragmas (the compiler decides). Returns the
/// `constexpr` lines and the source with the removed pragmas blanked (line numbers kept).
fn unroll_factors<'a>(
    defines: &mut Vec<(String, String)>,
    source: &'a str,
) -> (String, std::borrow::Cow<'a, str>) {
    let (factors, rest): (Vec<_>, Vec<_>) = std::mem::take(defines)
        .into_iter()
        .partition(|(n, _)| n.contains("loop_unroll_factor"));
    *defines = rest;
    let mut prefix = String::new();
    let mut removed = Vec::new();
    for (name, value) in factors {
        if value.trim() == "0" {
            removed.push(name);
        } else {
            prefix.push_str(&format!("constexpr int {name} = {value};\n"));
        }
    }
    if removed.is_empty() {
        return (prefix, std::borrow::Cow::Borrowed(source));
    }
    let lines: Vec<&str> = source
        .split_inclusive('\n')
        .map(|line| {
            let mut words = line.trim_start().trim_start_matches('#').split_whitespace();
            let is_pragma = line.trim_start().starts_with('#')
                && words.next() == Some("pragma")
                && words.next() == Some("unroll")
                && words.next().is_some_and(|w| removed.iter().any(|n| n == w));
            if !is_pragma {
                line
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            }
        })
        .collect();
    (prefix, std::borrow::Cow::Owned(lines.concat()))
}

/// The same for every configuration of one kernel: its unit and compiler options, hashed.
fn program_family(source: &str, options: &[String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    options.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::param_value::ParamValue;
    use crate::model::space::TunableParam;
    use crate::model::tunable_kernel::SourceGenerator;

    const REDUCE: &str = "__global__ void sum(float *out, const float *x, int n) {\n    float s = 0;\n    #pragma unroll loop_unroll_factor_0\n    for (int i = threadIdx.x; i < n; i += block_size_x) s += x[i];\n    out[threadIdx.x] = s;\n}\n";

    fn program(kernel: &TunableKernel, config: &Config) -> String {
        kernel_program(kernel, config, &Bindings::new(), false, (9, 0), &[])
            .unwrap()
            .0
            .source
    }

    #[test]
    fn a_loop_unroll_factor_is_a_constexpr_and_zero_removes_its_pragma() {
        let mut k = TunableKernel::new(REDUCE, "sum", vec!["1".into()]);
        k.params
            .push(TunableParam::new("loop_unroll_factor_0", [0, 8]));
        let eight = program(
            &k,
            &Config::ints([("block_size_x", 32), ("loop_unroll_factor_0", 8)]),
        );
        assert!(
            eight.contains("constexpr int loop_unroll_factor_0 = 8;\n"),
            "{eight}"
        );
        assert!(!eight.contains("#define loop_unroll_factor_0"), "{eight}");
        assert!(
            eight.contains("#pragma unroll loop_unroll_factor_0"),
            "{eight}"
        );
        let zero = program(
            &k,
            &Config::ints([("block_size_x", 32), ("loop_unroll_factor_0", 0)]),
        );
        assert!(!zero.contains("loop_unroll_factor_0"), "{zero}");
        // the line is blanked, not removed: the source's line numbers stay
        assert_eq!(zero.lines().count(), eight.lines().count() - 1, "{zero}");
        assert!(zero.contains("#define block_size_x 32"));
    }

    #[test]
    fn a_generator_writes_the_source_of_each_configuration() {
        let mut k = TunableKernel::new(REDUCE, "sum", vec!["1".into()]);
        k.generator = Some(SourceGenerator::new(|c: &Config| {
            match c.value("block_size_x") {
                Some(ParamValue::Int(64)) => Err("no 64".to_string()),
                Some(v) => Ok(format!("// block {v}\n{REDUCE}")),
                None => Ok(REDUCE.to_string()),
            }
        }));
        let p = program(&k, &Config::ints([("block_size_x", 32)]));
        assert!(p.contains("// block 32\n"), "{p}");
        let e = kernel_program(
            &k,
            &Config::ints([("block_size_x", 64)]),
            &Bindings::new(),
            false,
            (9, 0),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("source generator of kernel `sum` failed") && e.contains("no 64"),
            "{e}"
        );
    }
}
