//! The web server: routes, the shared state handlers read, and [`serve`]. Handlers are thin: each opens the
//! run, calls one function of this crate or kt-runs on a blocking thread (SQLite and files), and answers JSON.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use kt_runs::{Breakpoints, RunRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::access::Access;
use crate::assets;
use crate::error::StudioError;
use crate::jobs::Jobs;
use crate::live::{run_fingerprint, runs_fingerprint, watch};
use crate::redact::redact;
use crate::steer::{self, ForkRequest};
use crate::timing::timed;
use crate::view_cache::ViewCache;

/// What `kt studio` is started with.
#[derive(Debug, Clone)]
pub struct StudioConfig {
    pub runs_dir: PathBuf,
    pub addr: SocketAddr,
    /// Serve on a non-loopback address (needs `access_token`).
    pub allow_remote: bool,
    pub access_token: Option<String>,
    pub read_only: bool,
    /// The `kt` executable, for `kt resume`.
    pub kt: PathBuf,
}

#[derive(Clone)]
struct AppState {
    runs_dir: Arc<PathBuf>,
    access: Arc<Access>,
    jobs: Jobs,
    kt: Arc<PathBuf>,
    /// The run page's JSON per run (what it draws first, and its sections), while the run's files are
    /// unchanged.
    views: ViewCache<Bytes>,
    sections: ViewCache<Bytes>,
    /// The newest page of each run's history (what the timeline loads first), likewise.
    newest_pages: ViewCache<Bytes>,
}

/// Runs `f` on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StudioError> + Send + 'static,
) -> Result<T, StudioError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StudioError::Task(e.to_string()))?
}

/// A run id from a URL: a plain directory name under the runs directory, never a path.
fn open_run(state: &AppState, id: &str) -> Result<RunRecord, StudioError> {
    Ok(RunRecord::open(run_dir(state, id)?)?)
}

/// The directory of run `id` (a plain id or a unique prefix of one, never a path).
fn run_dir(state: &AppState, id: &str) -> Result<kt_pipeline::RunDir, StudioError> {
    let plain = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !plain {
        return Err(StudioError::BadRequest(format!("`{id}` is not a run id")));
    }
    Ok(kt_runs::resolve_run(id, &state.runs_dir)?)
}

fn json_of<T: serde::Serialize>(value: &T) -> Result<Value, StudioError> {
    let mut v = serde_json::to_value(value).map_err(|e| StudioError::Task(e.to_string()))?;
    redact(&mut v);
    Ok(v)
}

async fn runs(State(s): State<AppState>) -> Result<Json<Value>, StudioError> {
    let base = s.runs_dir.clone();
    let read_only = s.access.read_only();
    blocking(move || {
        let runs = kt_runs::list_runs(&base)?;
        let experiments = crate::experiments::find_experiments(&base);
        Ok(Json(json!({
            "runs_dir": *base,
            "runs_dir_exists": base.is_dir(),
            "read_only": read_only,
            "runs": json_of(&runs)?,
            "experiments": json_of(&experiments)?,
        })))
    })
    .await
}

async fn run(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, StudioError> {
    let cache = s.views.clone();
    kept_json(s, cache, id, "run page built", |record| {
        json_bytes(&crate::run_view::run_view(record)?)
    })
    .await
}

async fn sections(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, StudioError> {
    let cache = s.sections.clone();
    kept_json(s, cache, id, "run page's sections built", |record| {
        json_bytes(&crate::sections::run_sections(record)?)
    })
    .await
}

/// Run `id`'s JSON from `build`, kept in `cache` while the run's files are unchanged (the check reads file
/// times alone: the run is opened only to build); `what` names the build in the debug log with its time.
async fn kept_json(
    s: AppState,
    cache: ViewCache<Bytes>,
    id: String,
    what: &'static str,
    build: impl FnOnce(&RunRecord) -> Result<Bytes, StudioError> + Send + 'static,
) -> Result<Response, StudioError> {
    let body = blocking(move || {
        let dir = run_dir(&s, &id)?;
        cache.get(dir.root(), || {
            timed(what, &id, || build(&RunRecord::open(dir.clone())?))
        })
    })
    .await?;
    Ok(json_response(body))
}

/// `value` as the JSON body of an answer, redacted.
fn json_bytes<T: serde::Serialize>(value: &T) -> Result<Bytes, StudioError> {
    serde_json::to_vec(&json_of(value)?)
        .map(Bytes::from)
        .map_err(|e| StudioError::Task(e.to_string()))
}

fn json_response(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The most checkpoints one history request answers with (the timeline's range picker).
const MAX_HISTORY_PAGE: usize = 5_000;

/// A page of the history: the newest checkpoints older than `before` (the newest of all without it).
#[derive(Deserialize)]
struct HistoryQuery {
    before: Option<u64>,
    limit: Option<usize>,
}

async fn history(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, StudioError> {
    let body = blocking(move || {
        let dir = run_dir(&s, &id)?;
        // a range the page asks for is bounded: one answer never holds a whole long run
        let limit = q
            .limit
            .unwrap_or(kt_runs::HISTORY_PAGE)
            .min(MAX_HISTORY_PAGE);
        let before = q.before.map(kt_runs::CheckpointId);
        let page = || {
            let record = RunRecord::open(dir.clone())?;
            json_bytes(&kt_runs::history_page(&record, before, limit)?)
        };
        match (before, q.limit) {
            (None, None) => s.newest_pages.get(dir.root(), page),
            _ => page(),
        }
    })
    .await?;
    Ok(json_response(body))
}

#[derive(Deserialize)]
struct StateQuery {
    at: String,
    field: Option<String>,
}

async fn state_at(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<StateQuery>,
) -> Result<Json<Value>, StudioError> {
    blocking(move || {
        let record = open_run(&s, &id)?;
        let at = record.resolve(&q.at)?;
        let mut v = kt_runs::state_at(&record, at, q.field.as_deref())?;
        redact(&mut v);
        Ok(Json(json!({ "checkpoint": at.0, "state": v })))
    })
    .await
}

#[derive(Deserialize)]
struct DiffQuery {
    a: String,
    b: String,
}

async fn diff(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<DiffQuery>,
) -> Result<Json<Value>, StudioError> {
    blocking(move || {
        let record = open_run(&s, &id)?;
        let (a, b) = (record.resolve(&q.a)?, record.resolve(&q.b)?);
        let changes = kt_runs::diff(&record, a, b)?;
        Ok(Json(
            json!({ "a": a.0, "b": b.0, "changes": json_of(&changes)? }),
        ))
    })
    .await
}

async fn llm_call(
    State(s): State<AppState>,
    UrlPath((id, index)): UrlPath<(String, usize)>,
) -> Result<Json<Value>, StudioError> {
    blocking(move || {
        let record = open_run(&s, &id)?;
        Ok(Json(crate::sections::llm_call(&record, index)?))
    })
    .await
}

async fn run_events(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, StudioError> {
    // the directory, not the record: a run opened while it is starting has no history yet, and its
    // stream must still tell the page when the first step lands
    let dir = {
        let s = s.clone();
        blocking(move || run_dir(&s, &id)).await?
    };
    let dir = dir.root().to_path_buf();
    Ok(watch(move || run_fingerprint(&dir)).into_response())
}

async fn runs_events(State(s): State<AppState>) -> Response {
    let base = s.runs_dir.clone();
    watch(move || runs_fingerprint(&base)).into_response()
}

async fn jobs(State(s): State<AppState>) -> Json<Value> {
    Json(json!({ "jobs": s.jobs.list() }))
}

async fn fork(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Json(request): Json<ForkRequest>,
) -> Result<Json<Value>, StudioError> {
    blocking(move || {
        let record = open_run(&s, &id)?;
        Ok(Json(json_of(&steer::fork(&record, &request)?)?))
    })
    .await
}

async fn breakpoints(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Json(wanted): Json<Breakpoints>,
) -> Result<Json<Value>, StudioError> {
    blocking(move || {
        let record = open_run(&s, &id)?;
        Ok(Json(json_of(&steer::set_breakpoints(&record, wanted)?)?))
    })
    .await
}

#[derive(Deserialize)]
struct ReplayRequest {
    from: String,
    #[serde(default = "default_step_limit")]
    step_limit: u64,
}

fn default_step_limit() -> u64 {
    10_000
}

async fn replay(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Json(request): Json<ReplayRequest>,
) -> Result<Json<Value>, StudioError> {
    let record = {
        let (s, id) = (s.clone(), id.clone());
        blocking(move || open_run(&s, &id)).await?
    };
    // Checked before the job starts, so a wrong checkpoint is an answer, not a failed job.
    record.resolve(&request.from)?;
    let job = s.jobs.start(&id, "replay");
    let jobs = s.jobs.clone();
    tokio::task::spawn_blocking(move || {
        match steer::replay(&record, &request.from, request.step_limit) {
            Ok(r) => jobs.finish(
                job,
                true,
                match &r.stopped {
                    Some(why) => format!(
                        "stopped at #{} on branch b{}: {why}",
                        r.checkpoint, r.branch
                    ),
                    None => format!("{} at #{} on branch b{}", r.outcome, r.checkpoint, r.branch),
                },
            ),
            Err(e) => jobs.finish(job, false, e.to_string()),
        }
    });
    Ok(Json(json!({ "job": job })))
}

async fn resume(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, StudioError> {
    let record = {
        let (s, id) = (s.clone(), id.clone());
        blocking(move || open_run(&s, &id)).await?
    };
    let job = steer::spawn_resume(&s.kt, record.root(), &id, "resume", &s.jobs)?;
    Ok(Json(json!({ "job": job })))
}

#[derive(Deserialize)]
struct AnswerRequest {
    /// The prompt's id, as the page showed it.
    id: String,
    text: String,
}

async fn answer(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Json(request): Json<AnswerRequest>,
) -> Result<Json<Value>, StudioError> {
    let (record, waiting) = {
        let (s, id) = (s.clone(), id.clone());
        blocking(move || {
            let record = open_run(&s, &id)?;
            let waiting = steer::answer(&record, &request.id, &request.text)?;
            Ok((record, waiting))
        })
        .await?
    };
    let job = steer::spawn_resume(&s.kt, record.root(), &id, "answer", &s.jobs)?;
    Ok(Json(
        json!({ "job": job, "answered": kt_runs::prompt_id(&waiting), "node": waiting.node }),
    ))
}

async fn index(State(s): State<AppState>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, assets::CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        assets::index_html(s.access.session_token(), s.access.read_only()),
    )
        .into_response()
}

/// The studio's routes over `state`, behind the access guard.
fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/studio.js", get(assets::script))
        .route("/assets/timeline.js", get(assets::timeline_script))
        .route("/assets/steer.js", get(assets::steer_script))
        .route("/assets/studio.css", get(assets::style))
        .route("/api/runs", get(runs))
        .route("/api/events", get(runs_events))
        .route("/api/jobs", get(jobs))
        .route("/api/runs/{id}", get(run))
        .route("/api/runs/{id}/sections", get(sections))
        .route("/api/runs/{id}/events", get(run_events))
        .route("/api/runs/{id}/history", get(history))
        .route("/api/runs/{id}/state", get(state_at))
        .route("/api/runs/{id}/diff", get(diff))
        .route("/api/runs/{id}/llm/{index}", get(llm_call))
        .route("/api/runs/{id}/fork", post(fork))
        .route("/api/runs/{id}/breakpoints", post(breakpoints))
        .route("/api/runs/{id}/replay", post(replay))
        .route("/api/runs/{id}/resume", post(resume))
        .route("/api/runs/{id}/answer", post(answer))
        .layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            crate::access::guard,
        ))
        .with_state(state)
}

/// Binds `config.addr`, calls `ready` with the address and the URL to open, and serves until Ctrl-C.
pub async fn serve(
    config: StudioConfig,
    ready: impl FnOnce(SocketAddr, String),
) -> Result<(), StudioError> {
    // Checked before binding, so a refused address binds nothing; made again for the port bound (the cookie's
    // name is the port's).
    Access::new(
        config.addr,
        config.allow_remote,
        config.access_token.clone(),
        config.read_only,
    )?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| StudioError::Bind {
            addr: config.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(StudioError::Serve)?;
    let access = Access::new(
        addr,
        config.allow_remote,
        config.access_token.clone(),
        config.read_only,
    )?;
    let url = access.url(addr);
    let state = AppState {
        runs_dir: Arc::new(config.runs_dir),
        access: Arc::new(access),
        jobs: Jobs::default(),
        kt: Arc::new(config.kt),
        views: ViewCache::default(),
        sections: ViewCache::default(),
        newest_pages: ViewCache::default(),
    };
    ready(addr, url);
    let app = router(state);
    tokio::select! {
        served = axum::serve(listener, app) => served.map_err(StudioError::Serve),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
