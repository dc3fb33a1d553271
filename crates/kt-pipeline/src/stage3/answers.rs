//! The typed answers of the Stage 3 LLM calls. Each prompt template names one of these types in its front
//! matter (`answer = "Plan"`), and the JSON schema generated from the type is what structured output asks for.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `stage3-plan`, `stage3-replan`: the optimisation steps to take, in order. Empty means "nothing more to do".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Each step is one change to the kernel's device code, described in one or two sentences.
    #[serde(deserialize_with = "steps_as_text")]
    pub steps: Vec<String>,
}

/// A step as models give it: a string, or an object whose `step`, `description`, `text`, `title` or `name` is
/// the step (the first of those present; the others are ignored).
#[derive(Deserialize)]
#[serde(untagged)]
enum StepText {
    Text(String),
    Object(serde_json::Map<String, serde_json::Value>),
}

const STEP_KEYS: [&str; 5] = ["step", "description", "text", "title", "name"];

/// Steps given as strings or as objects (see [`StepText`]).
fn steps_as_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let items = Vec::<StepText>::deserialize(d)?;
    items
        .into_iter()
        .map(|item| match item {
            StepText::Text(t) => Ok(t),
            StepText::Object(map) => STEP_KEYS
                .iter()
                .find_map(|k| map.get(*k).and_then(|v| v.as_str()).map(str::to_string))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "a step is an object without any of the fields {}; give each step as a string",
                        STEP_KEYS.join(", ")
                    ))
                }),
        })
        .collect()
}

/// `stage3-validate-step`: whether a step is a device-code change kt can apply and measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepValidation {
    /// False for host-code changes, profiling, libraries (cuBLAS, CUTLASS, Thrust), compiler flags, or changes
    /// to the kernel's signature or launch.
    pub valid: bool,
    /// Why, in one sentence.
    pub reason: String,
}

/// `stage3-breakdown`: sub-steps for a step too large to apply at once. Empty means "apply it as it is".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Breakdown {
    #[serde(deserialize_with = "steps_as_text")]
    pub substeps: Vec<String>,
}

/// A tunable parameter: a name the kernel uses as a compile-time constant and the values to try.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct TunableParameter {
    pub name: String,
    pub values: Vec<i64>,
}

/// How the grid shrinks when a thread or block does more work: per dimension, the names whose product divides
/// the problem size (Kernel Tuner's grid divisors). A missing dimension keeps the default `block_size_<d>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GridDivisors {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<Vec<String>>,
}

/// `stage3-apply-step`, `stage3-one-prompt`, `stage3-explicit-*`: the rewritten kernel and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelRewrite {
    /// The complete CUDA source of the new kernel (same name and parameters as before). Tunable parameters are
    /// used as macros and are not `#define`d in the code: kt defines them for each configuration.
    pub code: String,
    /// Every tunable parameter the new code uses, with the values to try.
    #[serde(default)]
    pub parameters: Vec<TunableParameter>,
    #[serde(default)]
    pub grid_divisors: GridDivisors,
    /// Dynamic shared memory in bytes as an expression over parameter names, when the code uses
    /// `extern __shared__`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_shared_memory: Option<String>,
    /// What changed, in a few sentences.
    #[serde(default)]
    pub explanation: String,
    /// Configurations the author expects to win, each a map of parameter name to value (some or all of the
    /// parameters): measured first. Optional, and left out of the schema sent with the question (`schemars(skip)`):
    /// the schema is part of every recorded request's hash, so recorded runs replay unchanged; an answer that
    /// carries it anyway is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub expected_best: Vec<std::collections::BTreeMap<String, i64>>,
}

/// `stage3-code-parameters`: the parameters of a rewrite that came as code only (the code-first fallback).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CodeParameters {
    #[serde(default)]
    pub parameters: Vec<TunableParameter>,
    #[serde(default)]
    pub grid_divisors: GridDivisors,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_shared_memory: Option<String>,
}

/// One rename of the naming pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rename {
    pub from: String,
    pub to: String,
}

/// `stage3-parameter-names`: renames that make the tunable parameter names distinct and conventional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ParameterRenames {
    pub renames: Vec<Rename>,
}

/// `stage3-restrictions`: boolean expressions over tunable parameter names that every configuration must meet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Restrictions {
    pub restrictions: Vec<String>,
}

/// `stage3-explicit-worth-it`: whether an explicit step is worth doing for this kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorthIt {
    pub worth_it: bool,
    pub reason: String,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_may_name_the_configurations_it_expects_to_win_without_changing_the_schema() {
        let old: KernelRewrite = serde_json::from_str(
            r#"{"code": "k", "parameters": [{"name": "b", "values": [1, 2]}]}"#,
        )
        .unwrap();
        assert!(old.expected_best.is_empty());
        assert!(
            !serde_json::to_string(&old)
                .unwrap()
                .contains("expected_best")
        );
        let seeded: KernelRewrite =
            serde_json::from_str(r#"{"code": "k", "expected_best": [{"b": 2}]}"#).unwrap();
        assert_eq!(seeded.expected_best[0]["b"], 2);
        let schema = serde_json::to_string(&schemars::schema_for!(KernelRewrite)).unwrap();
        assert!(!schema.contains("expected_best"), "{schema}");
    }

    #[test]
    fn plan_steps_given_as_objects_are_taken_by_their_text() {
        let p: Plan = serde_json::from_str(
            r#"{"steps": ["tile", {"step": "unroll", "why": "x"}, {"description": "vectorise"}, {"title": "t", "text": "ignored"}]}"#,
        )
        .unwrap();
        assert_eq!(p.steps, ["tile", "unroll", "vectorise", "ignored"]);
        let err = serde_json::from_str::<Plan>(r#"{"steps": [{"why": "x"}]}"#).unwrap_err();
        assert!(
            err.to_string().contains("give each step as a string"),
            "{err}"
        );
        let b: Breakdown = serde_json::from_str(r#"{"substeps": [{"text": "a"}]}"#).unwrap();
        assert_eq!(b.substeps, ["a"]);
    }
}
