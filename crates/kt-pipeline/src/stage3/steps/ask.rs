//! One Stage 3 LLM call: render the call's template (a fresh conversation: the system prompt and this one
//! question, never an earlier conversation), ask for the typed answer, and journal it as a graph effect so that
//! resuming or replaying the run reuses the answer instead of paying for it again.

use std::time::Instant;

use kt_graph::{EffectError, NodeContext};
use kt_llm::{LlmError, LlmRequest};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::FailureKind;
use crate::error::{PipelineError, is_llm_outage};
use crate::stage3::context::Stage3Context;
use crate::stage3::state::LlmCallRecord;

/// The template every Stage 3 call uses as its system message.
pub const SYSTEM_TEMPLATE: &str = "stage3-system";

/// A typed answer with the record of the call that produced it.
#[derive(Debug, Clone)]
pub(crate) struct Asked<T> {
    pub answer: T,
    pub call: LlmCallRecord,
}

/// What the journal keeps of one call.
#[derive(Serialize, Deserialize)]
struct Journaled<T> {
    answer: T,
    tokens_in: u64,
    tokens_out: u64,
    cost_usd: Option<f64>,
    seconds: f64,
}

/// Why a call gave no answer.
#[derive(Debug)]
pub(crate) enum AskError {
    /// Worth another attempt at the step: the answer was unusable, or a recording has no answer for it.
    Recoverable { kind: FailureKind, message: String },
    /// Not worth retrying (no LLM, an outage, bad credentials, template error): the run stops, resumable.
    Fatal(PipelineError),
}

impl From<PipelineError> for AskError {
    fn from(e: PipelineError) -> Self {
        AskError::Fatal(e)
    }
}

/// The last path segment of a type name: the name templates declare in `answer = "..."`.
pub(crate) fn answer_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

fn classify(node: &str, e: LlmError) -> AskError {
    match e {
        LlmError::NoCode { .. }
        | LlmError::SchemaMismatch { .. }
        | LlmError::BadResponse { .. } => AskError::Recoverable {
            kind: FailureKind::BadAnswer,
            message: e.to_string(),
        },
        // An outage of the service ends the run (`llm_unavailable`, resumable): counting it as the step's or the
        // planner's failure would make an outage look like a result.
        e if is_llm_outage(&e) => AskError::Fatal(PipelineError::from_llm(node, e)),
        // A recording or script without this question ends the step (and the run goes on with what it has)
        // rather than the run: a replay on a GPU that failed a kernel the recording's did not is still useful.
        LlmError::ReplayMiss { .. } | LlmError::ScriptExhausted { .. } => AskError::Recoverable {
            kind: FailureKind::LlmUnavailable,
            message: e.to_string(),
        },
        other => AskError::Fatal(PipelineError::Llm {
            node: node.to_string(),
            source: Box::new(other),
        }),
    }
}

/// Asks the question of template `template` with `vars`, as graph node `node`, for a `T`.
pub(crate) async fn ask<T, V>(
    cx: &Stage3Context,
    nctx: &NodeContext,
    node: &str,
    template: &str,
    vars: &V,
) -> Result<Asked<T>, AskError>
where
    T: JsonSchema + DeserializeOwned + Serialize + Send + 'static,
    V: Serialize,
{
    let mode = cx.structured_mode;
    ask_journaled::<T, T, V, _, _>(
        cx,
        nctx,
        node,
        template,
        vars,
        move |llm, request| async move { llm.structured::<T>(request, mode).await },
    )
    .await
}

/// Asks for a `T` (its schema in the request, as the native structured mode does) but returns the answer's
/// text, for callers that read more than the JSON out of it (the code-first fallback of rewrites).
pub(crate) async fn ask_text<T, V>(
    cx: &Stage3Context,
    nctx: &NodeContext,
    node: &str,
    template: &str,
    vars: &V,
) -> Result<Asked<String>, AskError>
where
    T: JsonSchema,
    V: Serialize,
{
    ask_journaled::<T, String, V, _, _>(cx, nctx, node, template, vars, |llm, request| async move {
        let response = llm
            .complete(request.schema(kt_llm::OutputSchema::of::<T>()))
            .await?;
        Ok((response.text.clone(), response))
    })
    .await
}

/// The common part of [`ask`] and [`ask_text`]: render the template (declared to answer a `T`), make the call
/// as a journaled effect, account for it. `call` gives the journaled answer `J` and the response.
async fn ask_journaled<'a, T, J, V, F, Fut>(
    cx: &'a Stage3Context,
    nctx: &NodeContext,
    node: &str,
    template: &str,
    vars: &V,
    call: F,
) -> Result<Asked<J>, AskError>
where
    J: DeserializeOwned + Serialize + Send + 'static,
    V: Serialize,
    F: FnOnce(&'a kt_llm::LlmClient, LlmRequest) -> Fut,
    Fut: std::future::Future<Output = Result<(J, kt_llm::LlmResponse), LlmError>>,
{
    let rendered = cx.prompts.render_as(template, answer_name::<T>(), vars)?;
    let system = cx.prompts.render(SYSTEM_TEMPLATE, &serde_json::json!({}))?;
    let llm = cx.llm()?;
    let request = LlmRequest::new(node)
        .system(system.text)
        .user(rendered.text.clone());
    let result = nctx
        .effect("llm", || async move {
            let started = Instant::now();
            let (answer, response) = call(llm, request).await?;
            Ok::<_, LlmError>(Journaled {
                answer,
                tokens_in: response.usage.input_tokens,
                tokens_out: response.usage.output_tokens,
                cost_usd: response.cost_usd,
                seconds: started.elapsed().as_secs_f64(),
            })
        })
        .await;
    let journaled = match result {
        Ok(j) => j,
        Err(EffectError::Failed {
            source: source @ LlmError::AwaitingManualAnswer { .. },
            ..
        }) => {
            return Err(AskError::Fatal(crate::graph_run::llm_failure(
                nctx, node, source,
            )));
        }
        Err(EffectError::Failed { source, .. }) => return Err(classify(node, source)),
        Err(EffectError::Journal { source, .. }) => {
            return Err(AskError::Fatal(PipelineError::Journal {
                node: node.to_string(),
                message: source.to_string(),
            }));
        }
    };
    Ok(Asked {
        answer: journaled.answer,
        call: LlmCallRecord {
            node: node.to_string(),
            template: template.to_string(),
            template_hash: rendered.template_hash,
            prompt_hash: rendered.text_hash,
            tokens_in: journaled.tokens_in,
            tokens_out: journaled.tokens_out,
            cost_usd: journaled.cost_usd,
            seconds: journaled.seconds,
        },
    })
}
