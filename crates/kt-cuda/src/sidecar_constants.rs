//! The sidecar's `constants`: each `__constant__` symbol a kernel reads is an input no argument carries, so
//! the sidecar must say how to fill it (a distribution, as `inputs` does for arrays), and may name only
//! symbols the kernel reads. The tuner fills them in the loaded module before launching.

use crate::kernel::Kernel;
use crate::sidecar::{Sidecar, SidecarProblem};

impl Sidecar {
    /// Every `__constant__` symbol the kernel reads has an entry in `constants`, and every entry is one.
    pub(crate) fn check_constants(&self, kernel: &Kernel, problems: &mut Vec<SidecarProblem>) {
        let read = |name: &str| kernel.constant_memory.iter().any(|c| c.name == name);
        for c in kernel
            .constant_memory
            .iter()
            .filter(|c| !self.constants.contains_key(&c.name))
        {
            let dims: String = c.dims.iter().map(|d| format!("[{d}]")).collect();
            problems.push(SidecarProblem::MissingConstant {
                name: c.name.clone(),
                declaration: format!("__constant__ {} {}{dims}", c.element_type, c.name),
            });
        }
        for name in self.constants.keys().filter(|n| !read(n)) {
            problems.push(SidecarProblem::UnknownConstant {
                name: name.clone(),
                read: kernel
                    .constant_memory
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::parse::parse;
    use crate::sidecar::{Sidecar, SidecarProblem};

    const CONV: &str = "#define TAPS 5\n__constant__ float taps[TAPS];\n\
        extern \"C\" __global__ void conv(float *out, const float *in, int n) {\n\
        int i = threadIdx.x; float s = 0; for (int k = 0; k < TAPS; k++) s += taps[k] * in[i + k]; out[i] = s; }\n";
    const CONV_SIDECAR: &str = r#"
kernel = "conv"
description = "1-D convolution with a filter in constant memory"
problem_size = ["n"]
outputs = ["out"]
default_block = [128, 1, 1]
bench = { n = 4096 }
inputs = { out = "zeros", in = "randn" }
sizes = { out = "n", in = "n + 4" }
flops = "10 * n"
bytes = "8 * n"
"#;

    #[test]
    fn a_constant_the_kernel_reads_must_be_described_and_the_error_says_what_to_add() {
        let kernel = parse(CONV).unwrap().kernels[0].clone();
        let bare = Sidecar::from_toml(CONV_SIDECAR, Path::new("conv.toml")).unwrap();
        let problems = bare.check_against(&kernel).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        let text = problems[0].to_string();
        assert!(
            text.contains("reads constant memory `__constant__ float taps[TAPS]`")
                && text.contains("add `constants = { taps = \"randn\" }`"),
            "{text}"
        );
        let described = format!(
            "{CONV_SIDECAR}constants = {{ taps = \"rand\" }}\ndtypes = {{ taps = \"float32\" }}\n"
        );
        let sidecar = Sidecar::from_toml(&described, Path::new("conv.toml")).unwrap();
        assert_eq!(sidecar.check_against(&kernel), Ok(()));
        assert_eq!(sidecar.constants["taps"], "rand");
    }

    #[test]
    fn a_constant_the_kernel_does_not_read_is_refused() {
        let kernel = parse(CONV).unwrap().kernels[0].clone();
        let text =
            format!("{CONV_SIDECAR}constants = {{ taps = \"randn\", weights = \"randn\" }}\n");
        let problems = Sidecar::from_toml(&text, Path::new("conv.toml"))
            .unwrap()
            .check_against(&kernel)
            .unwrap_err();
        assert_eq!(
            problems,
            [SidecarProblem::UnknownConstant {
                name: "weights".into(),
                read: vec!["taps".into()]
            }]
        );
    }
}
