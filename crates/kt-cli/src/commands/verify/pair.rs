//! The two kernels `kt verify` compares: the reference, and the candidate with its own launch and the command
//! line's overrides (launch flags, block, parameter values, template arguments, arguments the reference lacks).

use std::collections::BTreeMap;

use anyhow::Context as _;
use kt_tuner::input::arg_map::match_arguments;
use kt_tuner::input::{
    CandidateSpec, LoadedKernel, load_candidate, load_kernel, reference_kernel_name,
};
use kt_tuner::model::space::{Config, TunableParam};
use kt_tuner::session::config_from_block;

use super::VerifyArgs;
use crate::commands::kernel_input::{parse_kv, parse_pairs, split_list};

/// The reference and the candidate, each with the configuration it runs at.
pub(super) struct Pair {
    pub(super) reference: LoadedKernel,
    pub(super) ref_config: Config,
    pub(super) candidate: LoadedKernel,
    pub(super) cand_config: Config,
}

/// Reads both kernels with their launches; notes on host code and globals go to stderr.
pub(super) fn load_pair(args: &VerifyArgs) -> anyhow::Result<Pair> {
    let mut reference = load_kernel(
        &args.reference,
        reference_name(args).as_deref(),
        &args.include,
    )?;
    // A templated reference takes the `--template` values that name its own template parameters (verifying
    // a templated kernel against itself, or versions that share a template parameter).
    let given = parse_pairs(&args.templates)?;
    let reference_params = reference.template_params();
    let mut reference_given: BTreeMap<String, String> = given
        .into_iter()
        .filter(|(name, _)| reference_params.iter().any(|(p, _)| p == name))
        .collect();
    let mut notes = Vec::new();
    let launched = reference.launched_template_values(&[], &reference_given);
    reference_given.extend(launched.fixed);
    notes.extend(launched.lines);
    reference.set_template_args(&[], &reference_given)?;
    reference.size_arrays_per_configuration();
    let ref_config = reference
        .default_block
        .map(|b| config_from_block(&[], b))
        .unwrap_or(Config(vec![]));
    let (candidate, cand_config, cand_notes) = candidate_with_overrides(args, &reference)?;
    notes.extend(cand_notes);
    notes.extend(take_candidate_size_rules(&mut reference, &candidate));
    notes.extend(reference.host_launch_lines.iter().cloned());
    notes.extend(
        [&reference.host_code_note, &candidate.host_code_note]
            .into_iter()
            .flatten()
            .cloned(),
    );
    // the same file as reference and candidate says the same things once
    let mut seen = std::collections::BTreeSet::new();
    notes.retain(|n| seen.insert(n.clone()));
    for note in notes {
        eprintln!("note: {note}");
    }
    if let Some(note) = globals_note(&candidate.parsed) {
        eprintln!("note: {note}");
    }
    Ok(Pair {
        reference,
        ref_config,
        candidate,
        cand_config,
    })
}

/// The candidate's valid sizes (its sidecar's `size_rules`, its own launch's asserts) bind the tests too:
/// they are the reference's inputs, and a kernel that reads eight elements at a time is not wrong at a size
/// it is never called at. A line each for the user.
fn take_candidate_size_rules(
    reference: &mut LoadedKernel,
    candidate: &LoadedKernel,
) -> Vec<String> {
    let (Some(inputs), Some(cand_inputs)) = (reference.inputs.as_mut(), candidate.inputs.as_ref())
    else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for (name, rule) in &cand_inputs.size_rules {
        if inputs.size_rules.contains_key(name)
            || !inputs.test.contains_key(name) && !inputs.bench.contains_key(name)
        {
            continue;
        }
        inputs.size_rules.insert(name.clone(), *rule);
        lines.push(format!(
            "valid sizes: `{name}` {}, the candidate's rule (its tests use the nearest valid sizes)",
            rule.describe()
        ));
    }
    lines
}

/// The reference's kernel name: `--reference-kernel`, else `--kernel` when the reference file has it.
pub(super) fn reference_name(args: &VerifyArgs) -> Option<String> {
    reference_kernel_name(
        &args.reference,
        args.reference_kernel.as_deref(),
        args.kernel.as_deref(),
        &args.include,
    )
}

pub(super) fn parse_block(text: &str) -> anyhow::Result<[i64; 3]> {
    let mut block = [1i64; 3];
    let parts = split_list(text);
    anyhow::ensure!(
        (1..=3).contains(&parts.len()),
        "--block {text}: give 1 to 3 sizes, x first (e.g. 16,16)"
    );
    for (i, p) in parts.iter().enumerate() {
        block[i] = p
            .parse()
            .with_context(|| format!("--block {text}: `{p}` is not an integer"))?;
    }
    Ok(block)
}

/// The candidate with its own launch (kt-tuner's `load_candidate`), then the command line's overrides:
/// launch flags, block, parameter values, template arguments (the file's own launches' where none is
/// given), arguments the reference lacks. The notes say which template values came from the launches.
pub(super) fn candidate_with_overrides(
    args: &VerifyArgs,
    reference: &LoadedKernel,
) -> anyhow::Result<(LoadedKernel, Config, Vec<String>)> {
    let spec = CandidateSpec {
        file: &args.candidate,
        kernel: args.kernel.as_deref(),
        sidecar: args.candidate_sidecar.as_deref(),
        include_dirs: &args.include,
    };
    let mut cand = load_candidate(spec, reference)?;
    args.launch.apply(&mut cand.kernel.geometry);
    let block = match &args.block {
        Some(b) => Some(parse_block(b)?),
        None => cand.default_block,
    };
    let mut config = block
        .map(|b| config_from_block(&[], b))
        .unwrap_or(Config(vec![]));
    for p in &args.params {
        let (k, v) = parse_kv(p)?;
        let v: i64 = v
            .parse()
            .with_context(|| format!("`{p}`: value must be an integer"))?;
        match config.0.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v.into(),
            None => config.0.push((k, v.into())),
        }
    }
    // a template parameter given as a --param is instantiated at that value
    let tuned: Vec<TunableParam> = config
        .0
        .iter()
        .map(|(n, v)| TunableParam::new(n.clone(), [v.clone()]))
        .collect();
    let mut given = parse_pairs(&args.templates)?;
    let launched = cand.launched_template_values(&tuned, &given);
    given.extend(launched.fixed);
    cand.set_template_args(&tuned, &given)?;
    cand.size_arrays_per_configuration();
    cand.kernel.arguments =
        match_arguments(&reference.parsed, &cand.parsed, &parse_pairs(&args.args)?)?;
    Ok((cand, config, launched.lines))
}

/// What verification does about a kernel's state across launches, when it keeps any.
fn globals_note(kernel: &kt_cuda::Kernel) -> Option<String> {
    if kernel.mutable_globals.is_empty() {
        return None;
    }
    let names: Vec<String> = kernel
        .mutable_globals
        .iter()
        .map(|g| format!("{} `{}`", g.space, g.name))
        .collect();
    Some(format!(
        "the candidate writes {}: state that outlives a launch. Its module is reloaded before every \
         test, so each test starts from the globals' initial values; then the tests run back to back in \
         one loaded module (state carried from one input to the next fails there), and each test's last \
         timed launch and one after up to {} more launches are checked",
        names.join(", "),
        kt_tuner::check::late_check::LATE_LAUNCHES
    ))
}
