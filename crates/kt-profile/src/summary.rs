//! A profile in a CUDA programmer's words, at most ten lines: what binds the kernel (memory, compute or
//! latency, and why), where warps wait, and spills and bank conflicts when there are any. This is what
//! goes into the LLM's prompts.

use crate::error::ProfileError;
use crate::profile::KernelProfile;
use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::{Deserialize, Serialize};

/// A unit is "busy" from this share of its peak on (below it on both memory and compute, the kernel is
/// latency-bound: neither is the limit, warps wait). Nsight Compute uses the same 60 % line.
const BUSY_PCT: f64 = 60.0;
/// Below this achieved occupancy there are too few warps to hide latency.
const LOW_OCCUPANCY_PCT: f64 = 40.0;
/// The summary never exceeds this many lines.
pub const MAX_LINES: usize = 10;

const TEMPLATE: &str = "\
{{ kernel }}{% if launch %} ({{ launch }}){% endif %}: {{ binding }}.
{% if occupancy %}Occupancy: {{ occupancy }}.{% endif %}
{% if waves %}The grid makes only {{ waves }} of a wave: too few blocks to fill every SM.{% endif %}
{% if stalls %}Warps stall most on:{% for s in stalls %}
- {{ s.name }}: {{ s.share }} of stall cycles{% endfor %}{% endif %}
{% if traffic %}Memory: {{ traffic }}.{% endif %}
{% if spills %}Register spills: {{ spills }} of local-memory traffic.{% endif %}
{% if conflicts %}Shared-memory bank conflicts: {{ conflicts }} extra wavefronts.{% endif %}
";

/// What limits the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Binding {
    /// Memory units at `memory_pct` of peak; `dram_pct` of that is DRAM bandwidth.
    Memory {
        memory_pct: f64,
        dram_pct: Option<f64>,
    },
    Compute {
        compute_pct: f64,
    },
    /// Neither memory nor compute is busy: warps wait. `cause` says why when occupancy is low.
    Latency {
        memory_pct: f64,
        compute_pct: f64,
        cause: Option<String>,
    },
    /// ncu gave no throughput figures.
    Unknown,
}

impl Binding {
    pub fn of(p: &KernelProfile) -> Binding {
        let (Some(memory_pct), Some(compute_pct)) =
            (p.throughput.memory_pct, p.throughput.compute_pct)
        else {
            return Binding::Unknown;
        };
        if memory_pct >= BUSY_PCT && memory_pct >= compute_pct {
            return Binding::Memory {
                memory_pct,
                dram_pct: p.throughput.dram_pct,
            };
        }
        if compute_pct >= BUSY_PCT {
            return Binding::Compute { compute_pct };
        }
        Binding::Latency {
            memory_pct,
            compute_pct,
            cause: low_occupancy_cause(p),
        }
    }

    /// One clause: "memory-bound at 82 % of DRAM bandwidth".
    pub fn sentence(&self) -> String {
        match self {
            Binding::Memory {
                memory_pct,
                dram_pct: Some(dram),
            } if *dram >= 0.75 * memory_pct => {
                format!("memory-bound at {} of DRAM bandwidth", pct(*dram))
            }
            Binding::Memory {
                memory_pct,
                dram_pct,
            } => format!(
                "memory-bound in the caches: L1/L2 at {} of peak{}",
                pct(*memory_pct),
                dram_pct
                    .map(|d| format!(", DRAM at {}", pct(d)))
                    .unwrap_or_default()
            ),
            Binding::Compute { compute_pct } => {
                format!(
                    "compute-bound: the busiest SM pipe at {} of peak",
                    pct(*compute_pct)
                )
            }
            Binding::Latency {
                memory_pct,
                compute_pct,
                cause: Some(cause),
            } => format!(
                "latency-bound with low occupancy because of {cause} (memory at {}, compute at {} of peak)",
                pct(*memory_pct),
                pct(*compute_pct)
            ),
            Binding::Latency {
                memory_pct,
                compute_pct,
                cause: None,
            } => format!(
                "latency-bound: memory at {} and compute at {} of peak, warps mostly wait",
                pct(*memory_pct),
                pct(*compute_pct)
            ),
            Binding::Unknown => "no throughput figures were measured".into(),
        }
    }
}

/// Why occupancy is low, when it is: the resource that limits it, or a grid too small for the GPU.
fn low_occupancy_cause(p: &KernelProfile) -> Option<String> {
    let o = &p.occupancy;
    if o.achieved_pct? >= LOW_OCCUPANCY_PCT {
        return None;
    }
    if o.waves_per_sm.is_some_and(|w| w < 1.0) {
        return Some("a grid too small to fill the GPU".into());
    }
    let limited = o.theoretical_pct.is_some_and(|t| t < 100.0);
    match (limited, o.limiter) {
        (true, Some(l)) => Some(l.describe().to_string()),
        _ => Some("uneven or short-lived warps (theoretical occupancy is not the limit)".into()),
    }
}

/// Renders the summary of `p` (at most [`MAX_LINES`] lines).
pub fn summarize(p: &KernelProfile) -> Result<String, ProfileError> {
    let mut env = Environment::new();
    env.add_template("summary", TEMPLATE)?;
    let text = env.get_template("summary")?.render(context! {
        kernel => format!("`{}`", short_name(&p.kernel)),
        launch => launch(p),
        binding => Binding::of(p).sentence(),
        occupancy => occupancy(p),
        waves => p.occupancy.waves_per_sm.filter(|w| *w < 1.0).map(|w| format!("{w:.2}")),
        stalls => Value::from(Serde(top_stalls(p))),
        traffic => traffic(p),
        spills => Some(p.spills.total_bytes()).filter(|b| *b > 0.0).map(bytes),
        conflicts => Some(p.bank_conflicts.total()).filter(|c| *c > 0.0).map(count),
    })?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(MAX_LINES)
        .collect();
    Ok(lines.join("\n"))
}

#[derive(Serialize)]
struct StallLine {
    name: &'static str,
    share: String,
}

/// The three largest stall reasons with their share of all stall cycles.
fn top_stalls(p: &KernelProfile) -> Vec<StallLine> {
    let total: f64 = p.stalls.iter().map(|s| s.cycles_per_instruction).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    p.stalls
        .iter()
        .take(3)
        .map(|s| StallLine {
            name: s.reason.describe(),
            share: pct(100.0 * s.cycles_per_instruction / total),
        })
        .collect()
}

fn launch(p: &KernelProfile) -> Option<String> {
    let parts: Vec<String> = [("block", &p.block), ("grid", &p.grid)]
        .into_iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what} {v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn occupancy(p: &KernelProfile) -> Option<String> {
    let o = &p.occupancy;
    let achieved = o.achieved_pct?;
    let mut s = format!("{} achieved", pct(achieved));
    if let Some(t) = o.theoretical_pct {
        s += &format!(" of {} theoretical", pct(t));
        if t < 100.0
            && let Some(l) = o.limiter
        {
            s += &format!(", limited by {}", l.describe());
        }
    }
    if let Some(r) = o.registers_per_thread {
        s += &format!("; {r:.0} registers per thread");
    }
    if let Some(sm) = o.shared_mem_per_block.filter(|b| *b > 0.0) {
        s += &format!(", {} shared memory per block", bytes(sm));
    }
    Some(s)
}

fn traffic(p: &KernelProfile) -> Option<String> {
    let m = &p.memory;
    let mut parts = Vec::new();
    if let (Some(r), Some(w)) = (m.dram_read_bytes, m.dram_write_bytes) {
        parts.push(format!("DRAM {} read, {} written", bytes(r), bytes(w)));
    }
    if let Some(h) = m.l2_hit_pct {
        parts.push(format!("L2 hit rate {}", pct(h)));
    }
    if let Some(h) = m.l1_hit_pct {
        parts.push(format!("L1 hit rate {}", pct(h)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// "matmul(float const*, float*, int)" → "matmul".
fn short_name(kernel: &str) -> &str {
    kernel.split('(').next().unwrap_or(kernel).trim()
}

fn pct(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0} %")
    } else {
        format!("{v:.1} %")
    }
}

fn bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

fn count(c: f64) -> String {
    match c {
        c if c >= 1e6 => format!("{:.1} M", c / 1e6),
        c if c >= 1e3 => format!("{:.1} k", c / 1e3),
        c => format!("{c:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{OccupancyLimiter, Throughput};
    use crate::stall::{Stall, StallReason};

    fn profile(memory: f64, compute: f64, dram: f64) -> KernelProfile {
        let mut p = KernelProfile::parse("\"ID\",\"Kernel Name\"\n\"0\",\"k(float*)\"\n").unwrap();
        p.throughput = Throughput {
            memory_pct: Some(memory),
            compute_pct: Some(compute),
            dram_pct: Some(dram),
        };
        p
    }

    #[test]
    fn a_busy_dram_makes_a_memory_bound_kernel() {
        let b = Binding::of(&profile(85.0, 30.0, 82.0));
        assert_eq!(b.sentence(), "memory-bound at 82 % of DRAM bandwidth");
        let caches = Binding::of(&profile(85.0, 30.0, 20.0)).sentence();
        assert_eq!(
            caches,
            "memory-bound in the caches: L1/L2 at 85 % of peak, DRAM at 20 %"
        );
    }

    #[test]
    fn busy_sm_pipes_make_a_compute_bound_kernel() {
        let b = Binding::of(&profile(40.0, 75.0, 30.0));
        assert_eq!(b, Binding::Compute { compute_pct: 75.0 });
    }

    #[test]
    fn low_occupancy_from_registers_is_named_as_the_cause_of_latency() {
        let mut p = profile(20.0, 25.0, 15.0);
        p.occupancy.achieved_pct = Some(18.0);
        p.occupancy.theoretical_pct = Some(25.0);
        p.occupancy.limiter = Some(OccupancyLimiter::Registers);
        let s = Binding::of(&p).sentence();
        assert!(
            s.starts_with("latency-bound with low occupancy because of registers per thread"),
            "{s}"
        );
        p.occupancy.waves_per_sm = Some(0.25);
        assert!(Binding::of(&p).sentence().contains("grid too small"));
        p.occupancy.achieved_pct = Some(70.0);
        assert!(
            Binding::of(&p)
                .sentence()
                .starts_with("latency-bound: memory at 20 %")
        );
    }

    #[test]
    fn the_summary_names_the_three_largest_stalls_with_their_share() {
        let mut p = profile(85.0, 30.0, 82.0);
        p.stalls = [
            (StallReason::LongScoreboard, 30.0),
            (StallReason::Barrier, 6.0),
            (StallReason::Wait, 2.0),
            (StallReason::Misc, 2.0),
        ]
        .map(|(reason, c)| Stall {
            reason,
            cycles_per_instruction: c,
        })
        .to_vec();
        let s = summarize(&p).unwrap();
        assert!(
            s.contains(
                "- waiting on global or local memory (long scoreboard): 75 % of stall cycles"
            ),
            "{s}"
        );
        assert!(
            s.contains("- waiting at a barrier (__syncthreads): 15 %"),
            "{s}"
        );
        assert!(!s.contains("misc"), "{s}");
    }

    #[test]
    fn spills_and_conflicts_appear_only_when_there_are_any() {
        let mut p = profile(85.0, 30.0, 82.0);
        let quiet = summarize(&p).unwrap();
        assert!(
            !quiet.contains("spills") && !quiet.contains("bank conflicts"),
            "{quiet}"
        );
        p.spills.local_store_bytes = Some(2.5e6);
        p.bank_conflicts.loads = Some(1500.0);
        let s = summarize(&p).unwrap();
        assert!(s.contains("Register spills: 2.5 MB"), "{s}");
        assert!(s.contains("bank conflicts: 1.5 k extra wavefronts"), "{s}");
    }

    #[test]
    fn a_summary_without_figures_still_says_so_in_one_line() {
        let p = KernelProfile::parse("\"ID\",\"Kernel Name\"\n\"0\",\"k\"\n").unwrap();
        assert_eq!(
            summarize(&p).unwrap(),
            "`k`: no throughput figures were measured."
        );
    }
}
