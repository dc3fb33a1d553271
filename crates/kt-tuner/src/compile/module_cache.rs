//! Compiled modules keyed by what determines their bytes: hash(source with defines, options, name expression,
//! headers given to NVRTC, the user headers the source includes, NVRTC version, and the nvcc that compiles
//! what NVRTC cannot, when the machine has one).
//! The architecture is one of the options. A module is compiled once and reused by every test and every
//! repetition; an on-disk directory (CUBIN + NVRTC log, or the log of a failed compile) makes a resumed run
//! compile nothing twice. Compilation runs on a pool of threads that works ahead of the GPU.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::compile::nvrtc::{self, Program};
use crate::error::TunerError;

/// The result of compiling one module.
#[derive(Debug, Clone)]
pub enum ModuleOutcome {
    Compiled {
        key: String,
        cubin: Arc<Vec<u8>>,
        log: String,
        ms: f64,
        from_disk: bool,
        /// The kernel's symbol, when the program had a name expression.
        lowered_name: Option<String>,
    },
    Failed {
        key: String,
        log: String,
    },
}

impl ModuleOutcome {
    pub fn key(&self) -> &str {
        match self {
            ModuleOutcome::Compiled { key, .. } | ModuleOutcome::Failed { key, .. } => key,
        }
    }
}

/// blake3 over every input that changes the CUBIN. `extra` is what the program pulls in from files (the
/// contents of the user headers it includes).
/// `compiler` names the compilers: NVRTC's version, and the nvcc of the fallback (a module that only nvcc
/// compiles must not be answered from a cache written where there was none).
pub fn module_key(program: &Program, extra: &[u8], compiler: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"kt-tuner module v2\0");
    h.update(program.source.as_bytes());
    h.update(b"\0");
    for o in &program.options {
        h.update(o.as_bytes());
        h.update(b"\0");
    }
    h.update(program.name_expression.as_deref().unwrap_or("").as_bytes());
    h.update(b"\0");
    for (name, text) in &program.headers {
        h.update(name.as_bytes());
        h.update(b"\0");
        h.update(text.as_bytes());
        h.update(b"\0");
    }
    h.update(extra);
    h.update(compiler.as_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// The on-disk half of the cache.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: Option<PathBuf>,
}

impl DiskCache {
    pub fn new(dir: Option<PathBuf>) -> Self {
        DiskCache { dir }
    }

    fn load(&self, key: &str) -> Option<ModuleOutcome> {
        let dir = self.dir.as_ref()?;
        if let Ok(cubin) = std::fs::read(dir.join(format!("{key}.cubin"))) {
            let log = std::fs::read_to_string(dir.join(format!("{key}.log"))).unwrap_or_default();
            let lowered_name = std::fs::read_to_string(dir.join(format!("{key}.symbol"))).ok();
            return Some(ModuleOutcome::Compiled {
                key: key.into(),
                cubin: Arc::new(cubin),
                log,
                ms: 0.0,
                from_disk: true,
                lowered_name,
            });
        }
        let log = std::fs::read_to_string(dir.join(format!("{key}.error.log"))).ok()?;
        Some(ModuleOutcome::Failed {
            key: key.into(),
            log,
        })
    }

    fn store(&self, outcome: &ModuleOutcome) {
        let Some(dir) = &self.dir else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        // Written to a temporary name and renamed, so a killed run never leaves a truncated CUBIN behind.
        let write = |name: String, bytes: &[u8]| {
            let tmp = dir.join(format!("{name}.tmp{}", std::process::id()));
            if std::fs::write(&tmp, bytes).is_ok() {
                let _ = std::fs::rename(&tmp, dir.join(name));
            }
        };
        match outcome {
            ModuleOutcome::Compiled {
                key,
                cubin,
                log,
                lowered_name,
                ..
            } => {
                write(format!("{key}.log"), log.as_bytes());
                if let Some(symbol) = lowered_name {
                    write(format!("{key}.symbol"), symbol.as_bytes());
                }
                // last: a CUBIN on disk means the module's other files are there too
                write(format!("{key}.cubin"), cubin);
            }
            ModuleOutcome::Failed { key, log } => write(format!("{key}.error.log"), log.as_bytes()),
        }
    }
}

struct Job {
    ticket: usize,
    key: String,
    program: Program,
}

/// What the pool hands back for one submitted job.
pub type Finished = (usize, Result<Arc<ModuleOutcome>, TunerError>);

/// A pool of compiler threads in front of a memory + disk cache.
pub struct CompilePool {
    jobs: Option<Sender<Job>>,
    results_tx: Sender<Finished>,
    results: Receiver<Finished>,
    memory: Arc<Mutex<HashMap<String, Arc<ModuleOutcome>>>>,
    disk: DiskCache,
    nvrtc_version: (i32, i32),
    /// NVRTC's version and the fallback nvcc, for module keys.
    compiler: String,
    workers: Vec<JoinHandle<()>>,
    /// Set when the pool is dropped: jobs still queued are skipped, so a search that stopped early (a time
    /// limit, an error) does not wait for the rest of its space to compile.
    closing: Arc<AtomicBool>,
}

/// How much lower than the search's the compiler threads' priority is (Linux nice steps). The pool has a
/// thread per core and works ahead of the GPU; at the same priority it would take the cores from the
/// thread that drives the search and from the worker's launches, which then wait for a core between samples.
const COMPILER_NICENESS: i32 = 5;

/// Lowers the calling compiler thread's scheduling priority (on Linux a thread has a nice value of its
/// own). A failure leaves it as it was: only the order in which busy cores are shared changes.
fn yield_to_the_search() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread.
        let (tid, now) = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            (tid, libc::getpriority(libc::PRIO_PROCESS, tid))
        };
        // SAFETY: as above.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, now + COMPILER_NICENESS) };
    }
}

/// The compilers' identity in module keys.
pub fn compiler_identity(nvrtc_version: (i32, i32), nvcc: Option<&std::path::Path>) -> String {
    let mut s = format!("nvrtc {}.{}", nvrtc_version.0, nvrtc_version.1);
    if let Some(n) = nvcc {
        s.push_str(&format!(" nvcc {}", n.display()));
    }
    s
}

impl CompilePool {
    pub fn new(threads: usize, disk: DiskCache) -> Result<Self, TunerError> {
        let nvrtc_version = nvrtc::version()?;
        let nvcc = crate::compile::nvcc::find();
        let compiler = compiler_identity(nvrtc_version, nvcc.as_deref());
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let (results_tx, results) = channel();
        let memory: Arc<Mutex<HashMap<String, Arc<ModuleOutcome>>>> = Arc::default();
        let mut workers = Vec::new();
        let closing = Arc::new(AtomicBool::new(false));
        for _ in 0..threads.max(1) {
            let closing = closing.clone();
            let jobs_rx = jobs_rx.clone();
            let tx = results_tx.clone();
            let memory = memory.clone();
            let disk = disk.clone();
            let nvcc = nvcc.clone();
            workers.push(std::thread::spawn(move || {
                yield_to_the_search();
                loop {
                    let job = match jobs_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    if closing.load(Ordering::Relaxed) {
                        return;
                    }
                    let outcome =
                        crate::compile::nvcc::compile_with_fallback(&job.program, nvcc.as_deref())
                            .map(|r| {
                                let o = match r {
                                    Ok(c) => ModuleOutcome::Compiled {
                                        key: job.key.clone(),
                                        cubin: Arc::new(c.cubin),
                                        log: c.log,
                                        ms: c.ms,
                                        from_disk: false,
                                        lowered_name: c.lowered_name,
                                    },
                                    Err(f) => ModuleOutcome::Failed {
                                        key: job.key.clone(),
                                        log: f.log,
                                    },
                                };
                                disk.store(&o);
                                let o = Arc::new(o);
                                if let Ok(mut m) = memory.lock() {
                                    m.insert(job.key.clone(), o.clone());
                                }
                                o
                            });
                    if tx.send((job.ticket, outcome)).is_err() {
                        return;
                    }
                }
            }));
        }
        Ok(CompilePool {
            jobs: Some(jobs_tx),
            results_tx,
            results,
            memory,
            disk,
            nvrtc_version,
            compiler,
            workers,
            closing,
        })
    }

    pub fn nvrtc_version(&self) -> (i32, i32) {
        self.nvrtc_version
    }

    /// Queues a compilation; its outcome arrives through `next_finished` tagged with `ticket`. A module
    /// already in memory or on disk is answered at once without compiling.
    pub fn submit(&self, ticket: usize, program: Program, extra: &[u8]) -> String {
        let key = module_key(&program, extra, &self.compiler);
        let known = self.memory.lock().ok().and_then(|m| m.get(&key).cloned());
        let known = known.or_else(|| {
            let o = Arc::new(self.disk.load(&key)?);
            if let Ok(mut m) = self.memory.lock() {
                m.insert(key.clone(), o.clone());
            }
            Some(o)
        });
        match known {
            Some(o) => {
                let _ = self.results_tx.send((ticket, Ok(o)));
            }
            None => {
                if let Some(jobs) = &self.jobs {
                    let _ = jobs.send(Job {
                        ticket,
                        key: key.clone(),
                        program,
                    });
                }
            }
        }
        key
    }

    /// Blocks until some submitted job is done.
    pub fn next_finished(&self) -> Option<Finished> {
        self.results.recv().ok()
    }
}

impl Drop for CompilePool {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Relaxed);
        self.jobs.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C0: &str = "nvrtc 13.0";

    #[cfg(target_os = "linux")]
    #[test]
    fn a_compiler_thread_runs_at_a_lower_priority_than_the_thread_that_started_it() {
        // SAFETY: plain system calls on the calling thread.
        let nice = || unsafe {
            libc::getpriority(
                libc::PRIO_PROCESS,
                libc::syscall(libc::SYS_gettid) as libc::id_t,
            )
        };
        let before = nice();
        let after = std::thread::spawn(move || {
            yield_to_the_search();
            nice()
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + COMPILER_NICENESS).min(19));
        assert_eq!(nice(), before, "the calling thread keeps its own priority");
    }

    #[test]
    fn key_changes_with_source_options_and_compiler() {
        let o = vec!["--gpu-architecture=sm_90".to_string()];
        let p = |src: &str, o: &[String]| Program::new(src, o.to_vec());
        let k = module_key(&p("a", &o), &[], C0);
        assert_eq!(k, module_key(&p("a", &o), &[], C0));
        assert_ne!(k, module_key(&p("b", &o), &[], C0));
        assert_ne!(
            k,
            module_key(&p("a", &["--gpu-architecture=sm_80".to_string()]), &[], C0)
        );
        assert_ne!(
            k,
            module_key(&p("a", &o), &[], &compiler_identity((13, 1), None))
        );
        // a machine with nvcc may compile what NVRTC rejects: not the same module
        assert_eq!(compiler_identity((13, 0), None), C0);
        let with_nvcc = compiler_identity((13, 0), Some(std::path::Path::new("/cuda/bin/nvcc")));
        assert_ne!(k, module_key(&p("a", &o), &[], &with_nvcc));
    }

    #[test]
    fn key_changes_with_name_expression_headers_and_included_files() {
        let base = Program::new("a", vec![]);
        let k = module_key(&base, &[], C0);
        let named = Program {
            name_expression: Some("&k<16>".into()),
            ..base.clone()
        };
        let other = Program {
            name_expression: Some("&k<32>".into()),
            ..base.clone()
        };
        assert_ne!(k, module_key(&named, &[], C0));
        assert_ne!(module_key(&named, &[], C0), module_key(&other, &[], C0));
        let with_header = Program {
            headers: vec![("stdio.h".into(), "".into())],
            ..base.clone()
        };
        assert_ne!(k, module_key(&with_header, &[], C0));
        assert_ne!(k, module_key(&base, b"common.h changed", C0));
    }

    #[test]
    fn disk_cache_round_trips_cubins_and_failures() {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskCache::new(Some(dir.path().to_path_buf()));
        disk.store(&ModuleOutcome::Compiled {
            key: "k1".into(),
            cubin: Arc::new(vec![1, 2, 3]),
            log: "warn".into(),
            ms: 5.0,
            from_disk: false,
            lowered_name: Some("_Z1kPf".into()),
        });
        disk.store(&ModuleOutcome::Failed {
            key: "k2".into(),
            log: "error: x".into(),
        });
        match disk.load("k1").unwrap() {
            ModuleOutcome::Compiled {
                cubin,
                log,
                from_disk,
                lowered_name,
                ..
            } => {
                assert_eq!(*cubin, vec![1, 2, 3]);
                assert_eq!(log, "warn");
                assert!(from_disk);
                assert_eq!(lowered_name.as_deref(), Some("_Z1kPf"));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(disk.load("k2").unwrap(), ModuleOutcome::Failed { log, .. } if log == "error: x")
        );
        assert!(disk.load("k3").is_none());
    }
}
