//! The report behind `kt inspect`: a stable JSON document (schema in docs/inspect-schema.md, versioned by
//! `schema_version`) and a readable text summary of each kernel.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::error::CudaError;
use crate::includes::{IncludeRecord, SourceFile};
use crate::kernel::Kernel;
use crate::source::{CudaSource, DeviceFunction, MacroDefinition};
use crate::unit::{UnitItem, extract_unit};

/// The items of one kernel's compilation unit (what `kt inspect --unit` prints), for the JSON report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UnitSummary {
    pub kernel: String,
    pub items: Vec<UnitItem>,
    /// `#include "…"` headers that were not found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_includes: Vec<String>,
}

/// Bumped whenever a field of [`InspectReport`] (or of a type inside it) is renamed, removed or changes
/// meaning; adding a field does not bump it.
pub const INSPECT_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InspectReport {
    pub schema_version: u32,
    /// The file as the user named it.
    pub file: String,
    /// All kernels in source order, or only the one asked for.
    pub kernels: Vec<Kernel>,
    /// The names of every kernel of the file, in source order (also when `kernels` holds only one).
    #[serde(default)]
    pub kernels_in_file: Vec<String>,
    /// Kernels defined through a macro invocation: listed, not analysed.
    #[serde(default)]
    pub macro_kernels: Vec<crate::macro_kernels::MacroKernel>,
    pub device_functions: Vec<DeviceFunction>,
    pub defines: Vec<MacroDefinition>,
    pub constants: Vec<String>,
    /// File-scope `__constant__` variables (each kernel's `constant_memory` lists those it reads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constant_symbols: Vec<crate::constant_symbol::ConstantSymbol>,
    /// Every `#include` seen (followed or not), in order.
    #[serde(default)]
    pub includes: Vec<IncludeRecord>,
    /// Each reported kernel's compilation unit, as items.
    #[serde(default)]
    pub units: Vec<UnitSummary>,
}

impl InspectReport {
    /// [`InspectReport::new`] for a file with its headers, with each kernel's unit items.
    pub fn for_file(
        file: &SourceFile,
        source: &CudaSource,
        kernel: Option<&str>,
    ) -> Result<Self, CudaError> {
        let mut report = Self::new(&file.name, source, kernel)?;
        report.includes = file.includes.clone();
        for k in &report.kernels {
            if report.units.iter().any(|u| u.kernel == k.name) {
                continue;
            }
            let unit = extract_unit(file, &k.name)?;
            report.units.push(UnitSummary {
                kernel: k.name.clone(),
                items: unit.items,
                missing_includes: unit.missing_includes,
            });
        }
        Ok(report)
    }

    /// A report of `source`; with `kernel`, only that kernel (an error lists the available ones).
    pub fn new(file: &str, source: &CudaSource, kernel: Option<&str>) -> Result<Self, CudaError> {
        let kernels = match kernel {
            Some(_) => vec![source.select_kernel_in(kernel, file)?.clone()],
            None => source.kernels().to_vec(),
        };
        Ok(InspectReport {
            schema_version: INSPECT_SCHEMA_VERSION,
            file: file.to_string(),
            kernels,
            kernels_in_file: source.kernel_names(),
            macro_kernels: source.macro_kernels.clone(),
            device_functions: source.device_functions.clone(),
            defines: source.defines.clone(),
            constants: source.constants.clone(),
            constant_symbols: source.constant_symbols.clone(),
            includes: Vec::new(),
            units: Vec::new(),
        })
    }

    /// A summary for people: one block per kernel.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let count = self.kernels_in_file.len().max(self.kernels.len());
        let plural = if count == 1 { "" } else { "s" };
        let shown: Vec<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
        let others: Vec<&str> = self
            .kernels_in_file
            .iter()
            .map(String::as_str)
            .filter(|n| !shown.contains(n))
            .collect();
        if others.is_empty() {
            let _ = writeln!(out, "{}: {count} kernel{plural}", self.file);
        } else {
            let _ = writeln!(
                out,
                "{}: {count} kernel{plural}, showing {} (the others: {})",
                self.file,
                shown.join(", "),
                others.join(", ")
            );
        }
        if !self.macro_kernels.is_empty() {
            let listed: Vec<String> = self
                .macro_kernels
                .iter()
                .map(|m| format!("{} ({}, line {})", m.name, m.macro_name, m.location.line))
                .collect();
            let _ = writeln!(
                out,
                "kernels defined through macros (listed, not analysed: expand the macro to tune one): {}",
                listed.join(", ")
            );
        }
        for k in &self.kernels {
            out.push('\n');
            if let Some(origin) = k.origin_file.as_ref().filter(|o| **o != self.file) {
                let _ = writeln!(out, "(defined in {origin})");
            }
            out.push_str(&describe_kernel(k));
        }
        out
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// What `kt inspect` says of one kernel, section by section.
fn describe_kernel(k: &Kernel) -> String {
    let mut out = String::new();
    write_signature(&mut out, k);
    write_parameters(&mut out, k);
    write_what_it_uses(&mut out, k);
    write_features(&mut out, k);
    write_launch_facts(&mut out, k);
    write_host_launches(&mut out, k);
    out
}

/// The file's own launches: block, grid as problem over divisors, shared memory (what `kt tune` defaults to).
fn write_host_launches(out: &mut String, k: &Kernel) {
    for l in &k.host_launches {
        let place = match &l.file {
            Some(f) => format!("{f}:{}", l.location.line),
            None => format!("line {}", l.location.line),
        };
        let _ = writeln!(*out, "  host launch ({place}): {}", l.text);
        let block = match l.block_values {
            Some([x, y, z]) => format!("{x}x{y}x{z}"),
            None => format!("{} (not a constant)", l.block.join(" x ")),
        };
        let _ = writeln!(*out, "    block: {block}");
        for (d, g) in l.grid.iter().enumerate().filter(|(_, g)| *g != "1") {
            let c = ['x', 'y', 'z'][d];
            let read = match &l.grid_facts[d] {
                Some(f) if f.divisors.is_empty() => format!("one block per `{}`", f.problem),
                Some(f) => format!("problem `{}` / {}", f.problem, f.divisors.join(" * ")),
                None => "not read (names that are not the kernel's parameters)".into(),
            };
            let _ = writeln!(*out, "    grid {c}: {g}: {read}");
        }
        for a in &l.size_asserts {
            let _ = writeln!(
                *out,
                "    valid sizes: {} {} (assert({}))",
                a.param,
                a.rule.describe(),
                a.text
            );
        }
        match (&l.shared_mem, &l.shared_mem_written) {
            (Some(rule), Some(w)) => {
                let _ = writeln!(*out, "    dynamic shared memory: {w} = {rule} bytes");
            }
            (None, Some(w)) => {
                let _ = writeln!(
                    *out,
                    "    dynamic shared memory: {w} (not read: give --shared-mem)"
                );
            }
            _ => {}
        }
    }
}

/// Its name, lines, linkage and template parameters.
fn write_signature(out: &mut String, k: &Kernel) {
    let linkage = if k.extern_c {
        "extern \"C\""
    } else {
        "C++ linkage: name is mangled"
    };
    let _ = writeln!(
        *out,
        "kernel {} (lines {}-{}, {linkage})",
        k.name, k.span.start.line, k.span.end.line
    );
    if k.is_template() {
        let params: Vec<String> = k
            .template_params
            .iter()
            .map(|t| match &t.default {
                Some(d) => format!("{} {} = {d}", t.kind, t.name),
                None => format!("{} {}", t.kind, t.name),
            })
            .collect();
        let _ = writeln!(*out, "  template <{}>", params.join(", "));
    }
}

/// One line per parameter: name, type, pointer or scalar, qualifiers, array dimensions.
fn write_parameters(out: &mut String, k: &Kernel) {
    let _ = writeln!(*out, "  parameters:");
    let width = k.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let type_width = k
        .params
        .iter()
        .map(|p| p.type_text.len())
        .max()
        .unwrap_or(0);
    for (i, p) in k.params.iter().enumerate() {
        let mut notes = vec![if p.is_pointer() { "pointer" } else { "scalar" }.to_string()];
        if p.is_const {
            notes.push("const".into());
        }
        if p.is_restrict {
            notes.push("restrict".into());
        }
        if !p.array_dims.is_empty() {
            notes.push(format!("array [{}]", p.array_dims.join("][")));
        }
        let _ = writeln!(
            *out,
            "    {i:>2}  {:<width$}  {:<type_width$}  {}",
            p.name,
            p.type_text,
            notes.join(", ")
        );
    }
}

/// Launch bounds, helpers, macros, constants and the mutable globals it writes.
fn write_what_it_uses(out: &mut String, k: &Kernel) {
    if let Some(b) = &k.launch_bounds {
        let min = b
            .min_blocks_per_sm
            .as_ref()
            .map(|m| format!(", min {m} blocks/SM"))
            .unwrap_or_default();
        let _ = writeln!(
            *out,
            "  launch bounds: max {} threads/block{min}",
            b.max_threads_per_block
        );
    }
    let _ = writeln!(*out, "  helpers: {}", list_or_none(&k.helpers));
    let _ = writeln!(*out, "  macros used: {}", list_or_none(&k.macros_used));
    let _ = writeln!(
        *out,
        "  constants used: {}",
        list_or_none(&k.constexprs_used)
    );
    if !k.constant_memory.is_empty() {
        let read: Vec<String> = k.constant_memory.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            *out,
            "  constant memory read: {} (inputs: describe each under `constants` in the sidecar)",
            read.join(", ")
        );
    }
    if !k.mutable_globals.is_empty() {
        let globals: Vec<String> = k
            .mutable_globals
            .iter()
            .map(|g| format!("{} {} (written at {})", g.space, g.name, g.written_at))
            .collect();
        let _ = writeln!(
            *out,
            "  mutable globals written: {} (state that outlives a launch)",
            globals.join(", ")
        );
    }
}

/// The CUDA features it uses, tunable template parameters and barriers.
fn write_features(out: &mut String, k: &Kernel) {
    let f = &k.features;
    let mut uses = Vec::new();
    for (on, name) in [
        (f.uses_block_dim, "blockDim"),
        (f.uses_grid_dim, "gridDim"),
        (
            f.uses_shared_memory && !f.uses_dynamic_shared_memory,
            "shared memory",
        ),
        (f.uses_dynamic_shared_memory, "dynamic shared memory"),
        (f.uses_syncthreads, "__syncthreads"),
    ] {
        if on {
            uses.push(name.to_string());
        }
    }
    uses.extend(f.atomics.iter().cloned());
    uses.extend(f.warp_intrinsics.iter().cloned());
    let _ = writeln!(*out, "  uses: {}", list_or_none(&uses));
    if !k.tunable_template_params.is_empty() {
        let _ = writeln!(
            *out,
            "  tunable template parameters: {}",
            k.tunable_template_params.join(", ")
        );
    }
    if f.barriers + f.warp_barriers > 0 {
        let _ = writeln!(
            *out,
            "  barriers: {} block-wide, {} warp-level{}",
            f.barriers,
            f.warp_barriers,
            if f.uses_cooperative_groups {
                " (cooperative groups used)"
            } else {
                ""
            }
        );
    }
}

/// Restrictions, grid divisors and the launch assumptions the code makes.
fn write_launch_facts(out: &mut String, k: &Kernel) {
    for r in &k.restrictions {
        let _ = writeln!(
            *out,
            "  restriction: {}  (line {}: {})",
            r.expr, r.location.line, r.reason
        );
    }
    for d in &k.grid_divisors {
        let _ = writeln!(
            *out,
            "  grid {}: problem size / {}, not / block_size_{0}  (line {}: {}; kt tune uses it unless --grid-div-{0} says otherwise)",
            ['x', 'y', 'z'][d.dim.min(2)],
            d.value,
            d.location.line,
            d.reason
        );
    }
    if k.launch_assumptions.is_empty() {
        let _ = writeln!(
            *out,
            "  launch assumptions: none (block size read from blockDim or not used)"
        );
    } else {
        let _ = writeln!(*out, "  launch assumptions:");
        for a in &k.launch_assumptions {
            let why = match a.kind {
                crate::kernel::AssumptionKind::LiteralBlockSize => "fixed block size",
                crate::kernel::AssumptionKind::FixedSharedArray => "fixed shared array size",
                crate::kernel::AssumptionKind::LiteralThreadBound => "fixed thread bound",
                crate::kernel::AssumptionKind::TileSize => {
                    "tile of work per block, not the block size:"
                }
            };
            let _ = writeln!(
                *out,
                "    line {}: {} ({why} {})",
                a.location.line, a.text, a.value
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn human_summary_names_each_parameter_and_the_linkage() {
        let s = parse("extern \"C\" __global__ void add(const float *a, float *b, int n) { b[threadIdx.x] = a[blockIdx.x * 128 + threadIdx.x]; }").unwrap();
        let text = InspectReport::new("add.cu", &s, None).unwrap().human();
        assert!(text.starts_with("add.cu: 1 kernel\n"), "{text}");
        assert!(
            text.contains("kernel add (lines 1-1, extern \"C\")"),
            "{text}"
        );
        assert!(text.contains("a  const float *  pointer, const"), "{text}");
        assert!(text.contains("fixed block size 128"), "{text}");
    }

    #[test]
    fn a_named_kernel_limits_the_report_and_a_wrong_name_fails() {
        let s = parse("__global__ void a() {}\n__global__ void b() {}").unwrap();
        assert_eq!(
            InspectReport::new("f.cu", &s, None).unwrap().kernels.len(),
            2
        );
        let only_b = InspectReport::new("f.cu", &s, Some("b")).unwrap();
        assert_eq!(only_b.kernels[0].name, "b");
        // the file's other kernels are never hidden
        assert!(
            only_b
                .human()
                .starts_with("f.cu: 2 kernels, showing b (the others: a)\n"),
            "{}",
            only_b.human()
        );
        let err = InspectReport::new("f.cu", &s, Some("z")).unwrap_err();
        assert!(err.to_string().contains("available: a, b"), "{err}");
    }

    #[test]
    fn kernels_made_by_a_macro_are_listed_and_asking_for_one_says_why_not() {
        let s = parse("#define UNARY(name, op) __global__ void name(float *x) { x[threadIdx.x] = op(x[threadIdx.x]); }\nUNARY(abs_k, fabsf)\n__global__ void plain(float *x) { x[0] = 1; }\n").unwrap();
        let text = InspectReport::new("m.cu", &s, None).unwrap().human();
        assert!(
            text.contains("kernels defined through macros (listed, not analysed: expand the macro to tune one): abs_k (UNARY, line 2)"),
            "{text}"
        );
        let err = s
            .select_kernel_in(Some("abs_k"), "m.cu")
            .unwrap_err()
            .to_string();
        assert!(err.contains("defined through the macro `UNARY`"), "{err}");
    }

    #[test]
    fn the_files_own_launch_is_shown_with_what_was_read_from_it() {
        let src = "#define BS 16\n__global__ void add(float *c, int w, int h) { c[0] = 0; }\n\
                   int main() {\n  int W = 100, H = 50;\n  assert(W % 4 == 0);\n  dim3 block(BS, BS);\n  dim3 grid((W + BS - 1) / BS, (H + BS - 1) / BS);\n  \
                   add<<<grid, block, BS * sizeof(float)>>>(d_c, W, H);\n}\n";
        let s = parse(src).unwrap();
        let k = &s.kernels()[0];
        assert_eq!(k.host_launches.len(), 1);
        assert_eq!(k.host_launches[0].location.line, 8);
        let text = InspectReport::new("add.cu", &s, None).unwrap().human();
        for line in [
            "host launch (line 8): add<<<grid, block, BS * sizeof(float)>>>",
            "valid sizes: w a multiple of 4 (assert(W % 4 == 0))",
            "block: 16x16x1",
            "grid x: (w + 16 - 1) / 16: problem `w` / block_size_x",
            "grid y: (h + 16 - 1) / 16: problem `h` / block_size_y",
            "dynamic shared memory: BS * sizeof(float) = block_size_x * 4 bytes",
        ] {
            assert!(text.contains(line), "`{line}` in\n{text}");
        }
    }

    #[test]
    fn constant_memory_the_kernel_reads_is_shown_and_in_the_json() {
        let src = "#define TAPS 3\n__constant__ float w[TAPS * 3];\n\
                   __global__ void blur(float *o, const float *i) { o[threadIdx.x] = w[0] * i[threadIdx.x]; }\n";
        let s = parse(src).unwrap();
        let report = InspectReport::new("blur.cu", &s, None).unwrap();
        let text = report.human();
        assert!(
            text.contains("constant memory read: __constant__ float w[TAPS * 3] (9 elements)"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["constant_symbols"][0]["dtype"], "float32");
        assert_eq!(json["kernels"][0]["constant_memory"][0]["length"], 9);
    }

    #[test]
    fn json_carries_the_schema_version() {
        let s = parse("__global__ void a() {}").unwrap();
        let json = serde_json::to_value(InspectReport::new("f.cu", &s, None).unwrap()).unwrap();
        assert_eq!(json["schema_version"], 1);
    }
}
