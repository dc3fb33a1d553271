//! The explicit strategy's steps: each has its own prompt template, the tunable parameters it introduces and
//! the steps it depends on. Ordering respects dependencies and otherwise keeps the file's order.

use serde::{Deserialize, Serialize};

/// A tunable parameter an explicit step introduces, with the values to try.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepParameter {
    pub name: String,
    pub values: Vec<i64>,
}

/// One step of the explicit strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitStep {
    /// Short identifier, e.g. `block_size`; used in dependencies, file names and the report.
    pub id: String,
    /// What the step does, in a few words.
    pub title: String,
    /// The prompt template that applies this step.
    pub template: String,
    /// Whether the LLM is asked first if the step is worth doing for this kernel.
    #[serde(default = "yes")]
    pub ask_if_worth_it: bool,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub parameters: Vec<StepParameter>,
}

fn yes() -> bool {
    true
}

/// Orders steps so that every step follows its dependencies; among steps whose dependencies are met, the
/// file's order wins. Fails on duplicate ids, unknown dependencies and cycles, naming the steps concerned.
pub(crate) fn order_steps(steps: Vec<ExplicitStep>) -> Result<Vec<ExplicitStep>, String> {
    let mut seen = std::collections::HashSet::new();
    for s in &steps {
        if !seen.insert(s.id.as_str()) {
            return Err(format!("step id `{}` appears twice", s.id));
        }
        if s.template.trim().is_empty() {
            return Err(format!("step `{}` names no template", s.id));
        }
        for p in &s.parameters {
            if p.values.is_empty() {
                return Err(format!(
                    "step `{}`: parameter `{}` has no values",
                    s.id, p.name
                ));
            }
        }
    }
    for s in &steps {
        for d in &s.depends_on {
            if !seen.contains(d.as_str()) {
                return Err(format!(
                    "step `{}` depends on `{d}`, which is not a step of this strategy",
                    s.id
                ));
            }
            if d == &s.id {
                return Err(format!("step `{}` depends on itself", s.id));
            }
        }
    }
    let mut placed: Vec<ExplicitStep> = Vec::with_capacity(steps.len());
    let mut remaining = steps;
    while !remaining.is_empty() {
        let ready = remaining.iter().position(|s| {
            s.depends_on
                .iter()
                .all(|d| placed.iter().any(|p| &p.id == d))
        });
        match ready {
            Some(i) => placed.push(remaining.remove(i)),
            None => {
                let ids: Vec<&str> = remaining.iter().map(|s| s.id.as_str()).collect();
                return Err(format!(
                    "the dependencies of steps {} form a cycle",
                    ids.join(", ")
                ));
            }
        }
    }
    Ok(placed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn step(id: &str, deps: &[&str]) -> ExplicitStep {
        ExplicitStep {
            id: id.into(),
            title: id.into(),
            template: format!("t-{id}"),
            ask_if_worth_it: true,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            parameters: vec![],
        }
    }

    #[test]
    fn steps_follow_their_dependencies_and_otherwise_keep_file_order() {
        let ordered = order_steps(vec![
            step("c", &["b"]),
            step("a", &[]),
            step("b", &["a"]),
            step("d", &[]),
        ])
        .unwrap();
        let ids: Vec<&str> = ordered.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
    }

    #[test]
    fn cycles_unknown_and_duplicate_steps_are_rejected_by_name() {
        let err = order_steps(vec![step("a", &["b"]), step("b", &["a"])]).unwrap_err();
        assert!(
            err.contains("cycle") && err.contains('a') && err.contains('b'),
            "{err}"
        );
        let err = order_steps(vec![step("a", &["zzz"])]).unwrap_err();
        assert!(err.contains("zzz"), "{err}");
        let err = order_steps(vec![step("a", &[]), step("a", &[])]).unwrap_err();
        assert!(err.contains("twice"), "{err}");
    }
}
