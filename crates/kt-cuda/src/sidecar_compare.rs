//! The sidecar's `compare`: how each output is checked against the reference. Element by element unless it
//! says otherwise; `total` compares only the sum of the output, for a kernel that writes partial sums whose
//! number and place depend on the launch (one per thread block, say) and whose user sums the array.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::kernel::Kernel;
use crate::sidecar::{Sidecar, SidecarProblem};

/// How one output is compared with its expected values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputCompare {
    /// Every element within tolerance of its expected value (the default).
    #[default]
    Elements,
    /// Only the sum of all elements, within tolerance of the expected sum.
    Total,
}

impl OutputCompare {
    /// The spellings a sidecar may use, with what each means (for messages).
    pub const ALLOWED: &'static str =
        "`elements` (element by element, the default) or `total` (the sum of all its elements)";

    /// The comparison a sidecar spells `text`; None for anything else.
    pub fn parse(text: &str) -> Option<OutputCompare> {
        match text {
            "elements" => Some(OutputCompare::Elements),
            "total" => Some(OutputCompare::Total),
            _ => None,
        }
    }
}

/// Reads `compare = { out = "total" }`, refusing an unknown comparison with the output it was given to and
/// the allowed ones.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, OutputCompare>, D::Error> {
    let raw = BTreeMap::<String, String>::deserialize(d)?;
    raw.into_iter()
        .map(|(name, text)| match OutputCompare::parse(&text) {
            Some(c) => Ok((name, c)),
            None => Err(de::Error::custom(format!(
                "`compare` gives `{name}` the comparison `{text}`, which kt does not know: use {}",
                OutputCompare::ALLOWED
            ))),
        })
        .collect()
}

impl Sidecar {
    /// Every pointer parameter `compare` names is one of `outputs` (a name that is no pointer parameter is
    /// reported with the other names).
    pub(crate) fn check_compare(&self, kernel: &Kernel, problems: &mut Vec<SidecarProblem>) {
        for name in self.compare.keys() {
            let pointer = kernel.param(name).is_some_and(|p| p.is_pointer());
            if pointer && !self.outputs.contains(name) {
                problems.push(SidecarProblem::NotAnOutput {
                    field: "compare".into(),
                    name: name.clone(),
                });
            }
        }
    }

    /// How `output` is compared (element by element unless `compare` says otherwise).
    pub fn compare_of(&self, output: &str) -> OutputCompare {
        self.compare.get(output).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::OutputCompare;
    use crate::parse::parse;
    use crate::sidecar::{Sidecar, SidecarProblem};

    const PARTIALS: &str =
        "extern \"C\" __global__ void partials(double *out, const double *in, int n) {}";
    const SIDECAR: &str = r#"
kernel = "partials"
description = "one partial sum per block"
problem_size = ["n"]
outputs = ["out"]
default_block = [128, 1, 1]
bench = { n = 4096 }
inputs = { out = "zeros", in = "randn" }
sizes = { out = "n", in = "n" }
flops = "n"
bytes = "16 * n"
"#;

    fn with(line: &str) -> Result<Sidecar, String> {
        Sidecar::from_toml(&format!("{SIDECAR}{line}\n"), Path::new("partials.toml"))
            .map_err(|e| e.to_string())
    }

    fn problems(sidecar: &Sidecar) -> Vec<String> {
        let source = parse(PARTIALS).unwrap();
        match sidecar.check_against(source.select_kernel(None).unwrap()) {
            Ok(()) => vec![],
            Err(p) => p.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn total_and_elements_are_read_and_elements_is_the_default() {
        let sc = with("compare = { out = \"total\" }").unwrap();
        assert_eq!(sc.compare_of("out"), OutputCompare::Total);
        assert_eq!(problems(&sc), Vec::<String>::new());
        let sc = with("compare = { out = \"elements\" }").unwrap();
        assert_eq!(sc.compare_of("out"), OutputCompare::Elements);
        let sc = with("").unwrap();
        assert_eq!(sc.compare_of("out"), OutputCompare::Elements);
        assert!(sc.compare.is_empty());
    }

    #[test]
    fn an_unknown_comparison_is_refused_naming_the_output_and_the_allowed_ones() {
        for bad in ["sum", "totals", "Total", ""] {
            let err = with(&format!("compare = {{ out = \"{bad}\" }}")).unwrap_err();
            assert!(err.contains("line 12:"), "{err}");
            assert!(
                err.contains(&format!("gives `out` the comparison `{bad}`")),
                "{err}"
            );
            assert!(
                err.contains("`elements`") && err.contains("`total`"),
                "{err}"
            );
        }
        let err = with("compare = { out = 1 }").unwrap_err();
        assert!(err.contains("line 12:"), "{err}");
    }

    #[test]
    fn compare_may_name_only_outputs() {
        let sc = with("compare = { in = \"total\", n = \"total\", nope = \"total\" }").unwrap();
        let found = problems(&sc);
        assert!(
            found.contains(&"`compare` mentions `in`, which is not one of `outputs`".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(
                &"`compare` mentions `n`, but `compare` needs a pointer parameter".to_string()
            ),
            "{found:?}"
        );
        assert!(
            found.contains(
                &"`compare` mentions `nope`, which is not a parameter of the kernel".to_string()
            ),
            "{found:?}"
        );
        assert!(
            sc.check_against(parse(PARTIALS).unwrap().select_kernel(None).unwrap())
                .unwrap_err()
                .contains(&SidecarProblem::NotAnOutput {
                    field: "compare".into(),
                    name: "in".into()
                })
        );
    }

    #[test]
    fn a_total_comparison_survives_a_round_trip() {
        let sc = with("compare = { out = \"total\" }").unwrap();
        let text = toml::to_string(&sc).unwrap();
        assert!(text.contains("total"), "{text}");
        let back = Sidecar::from_toml(&text, Path::new("again.toml")).unwrap();
        assert_eq!(back, sc);
    }
}
