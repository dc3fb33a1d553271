//! The file's own launch as kt's default (kt-cuda's `HostLaunch`): where the user gave no sidecar value or
//! flag, the block the program launches with is the default launch, its grid gives the problem size and the
//! grid divisors, its dynamic shared memory the shared-memory rule, and the asserts before it (`assert(n % 4 ==
//! 0)`) the valid sizes. Each takes a line saying where it came from; a sidecar that disagrees is kept and the
//! difference is said.

use kt_cuda::HostLaunch;

use crate::input::loaded_kernel::LoadedKernel;

const XYZ: [char; 3] = ['x', 'y', 'z'];

/// The launch kt follows: the first whose block is a constant, else the first.
fn chosen(kernel: &kt_cuda::Kernel) -> Option<&HostLaunch> {
    let launches = &kernel.host_launches;
    launches
        .iter()
        .find(|l| l.block_values.is_some())
        .or(launches.first())
}

/// `add<<<grid, block>>>` (line 9), or with the header's name when the launch is in one.
fn place(l: &HostLaunch) -> String {
    match &l.file {
        Some(f) => format!("`{}` ({f}:{})", l.text, l.location.line),
        None => format!("`{}` (line {})", l.text, l.location.line),
    }
}

fn same(a: &str, b: &str) -> bool {
    let flat = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    flat(a) == flat(b)
}

/// Takes what `loaded` does not yet say from the file's own launch; a line each for the user.
pub fn take_host_launch(loaded: &mut LoadedKernel) -> Vec<String> {
    let Some(launch) = chosen(&loaded.parsed).cloned() else {
        return Vec::new();
    };
    let at = place(&launch);
    let mut lines = Vec::new();
    if let Some([x, y, z]) = launch.block_values {
        let block = [x, y, z].map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        match loaded.default_block {
            None => {
                loaded.default_block = Some(block);
                lines.push(format!(
                    "default launch: block {x}x{y}x{z}, the file's own launch {at}"
                ));
            }
            Some(given) if given != block => lines.push(format!(
                "the sidecar's default_block {}x{}x{} differs from the file's own launch {at} with block {x}x{y}x{z}: the sidecar's is used",
                given[0], given[1], given[2]
            )),
            Some(_) => {}
        }
    }
    if let Some(inputs) = &mut loaded.inputs {
        for a in &launch.size_asserts {
            if !inputs.size_rules.contains_key(&a.param) {
                inputs.size_rules.insert(a.param.clone(), a.rule);
                lines.push(format!(
                    "valid sizes: `{}` {}, from `assert({})` before the file's own launch {at}",
                    a.param,
                    a.rule.describe(),
                    a.text
                ));
            }
        }
    }
    let geometry = &mut loaded.kernel.geometry;
    if geometry.problem_size.is_empty() {
        let read: Vec<String> = launch
            .grid_facts
            .iter()
            .map_while(|f| f.as_ref().map(|f| f.problem.clone()))
            .collect();
        if !read.is_empty() {
            lines.push(format!(
                "problem size {}: the grid of the file's own launch {at}",
                read.join(", ")
            ));
            loaded.dims = read.len();
            geometry.problem_size = read;
        }
    }
    for (d, fact) in launch.grid_facts.iter().enumerate() {
        let Some(fact) = fact else { continue };
        let matches = geometry
            .problem_size
            .get(d)
            .is_some_and(|p| same(p, &fact.problem));
        if matches && geometry.grid_div[d] != fact.divisors {
            let divided = if fact.divisors.is_empty() {
                format!("one block per `{}`", fact.problem)
            } else {
                format!("`{}` / {}", fact.problem, fact.divisors.join(" * "))
            };
            lines.push(format!(
                "grid {}: {divided} (grid divisors [{}]), as the file's own launch {at}",
                XYZ[d],
                fact.divisors.join(", ")
            ));
            geometry.grid_div[d] = fact.divisors.clone();
        }
    }
    match (&geometry.shared_mem, &launch.shared_mem, &launch.shared_mem_written) {
        (None, Some(rule), Some(written)) => {
            lines.push(format!(
                "dynamic shared memory {rule} bytes: `{written}` of the file's own launch {at}"
            ));
            geometry.shared_mem = Some(rule.clone());
        }
        (None, None, Some(written)) => lines.push(format!(
            "the file's own launch {at} passes `{written}` bytes of dynamic shared memory, which kt could not read: give --shared-mem EXPR (block_size_x and the kernel's scalars may appear)"
        )),
        _ => {}
    }
    lines
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::input::{SidecarChoice, load_kernel_with};

    fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    const SOFTMAX: &str = "__global__ void softmax(float *out, const float *inp, int N, int C) {\n\
        extern __shared__ float s[];\n  int row = blockIdx.x;\n  s[threadIdx.x] = inp[row * C];\n  out[row * C] = s[0];\n}\n\
        void run(float *o, const float *i, int n, int c) {\n  assert(c % 4 == 0);\n  softmax<<<n, 256, 256 * sizeof(float)>>>(o, i, n, c);\n}\n";

    #[test]
    fn without_a_sidecar_the_files_launch_is_the_default_launch_grid_and_shared_memory() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = write(tmp.path(), "softmax.cu", SOFTMAX);
        let loaded = load_kernel_with(&cu, None, SidecarChoice::Without, &[]).unwrap();
        assert_eq!(loaded.default_block, Some([256, 1, 1]));
        let g = &loaded.kernel.geometry;
        assert_eq!(g.problem_size, ["N"]);
        assert!(g.grid_div[0].is_empty(), "{:?}", g.grid_div);
        assert_eq!(g.shared_mem.as_deref(), Some("block_size_x * 4"));
        assert_eq!(loaded.dims, 1);
        let lines = loaded.host_launch_lines.join("\n");
        for part in [
            "default launch: block 256x1x1",
            "problem size N",
            "grid x: one block per `N`",
            "dynamic shared memory block_size_x * 4 bytes",
            "(line 9)",
        ] {
            assert!(lines.contains(part), "`{part}` in\n{lines}");
        }
    }

    #[test]
    fn a_sidecar_keeps_its_values_and_its_disagreement_is_said() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = write(tmp.path(), "softmax.cu", SOFTMAX);
        write(
            tmp.path(),
            "softmax.toml",
            "kernel = \"softmax\"\ndescription = \"rows\"\nproblem_size = [\"N\"]\noutputs = [\"out\"]\n\
             default_block = [128]\nflops = \"N * C\"\nbytes = \"8 * N * C\"\nshared_mem = \"block_size_x * 8\"\n\
             [bench]\nN = 64\nC = 32\n[inputs]\nout = \"zeros\"\ninp = \"randn\"\n[sizes]\nout = \"N * C\"\ninp = \"N * C\"\n",
        );
        let loaded = load_kernel_with(&cu, None, SidecarChoice::Beside, &[]).unwrap();
        assert_eq!(loaded.default_block, Some([128, 1, 1]));
        let g = &loaded.kernel.geometry;
        assert_eq!(g.shared_mem.as_deref(), Some("block_size_x * 8"));
        // the sidecar's problem size is the launch's: the grid follows the program (one block per row)
        assert!(g.grid_div[0].is_empty(), "{:?}", g.grid_div);
        let lines = loaded.host_launch_lines.join("\n");
        assert!(
            lines.contains("default_block 128x1x1 differs from the file's own launch"),
            "{lines}"
        );
        let rule = loaded.inputs.as_ref().unwrap().size_rules["C"];
        assert_eq!(rule.multiple_of, Some(4));
        assert!(
            lines.contains("valid sizes: `C` a multiple of 4, from `assert(c % 4 == 0)`"),
            "{lines}"
        );
    }

    #[test]
    fn a_file_without_a_launch_says_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = write(
            tmp.path(),
            "k.cu",
            "__global__ void k(float *a) { a[0] = 1; }\n",
        );
        let loaded = load_kernel_with(&cu, None, SidecarChoice::Without, &[]).unwrap();
        assert!(loaded.host_launch_lines.is_empty());
        assert_eq!(loaded.default_block, None);
    }
}
