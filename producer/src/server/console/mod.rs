//! The review console: server-rendered pages under `/ui/` for the ops team
//! (issue 17). Sign-in with an API token of role reviewer or admin opens a
//! server-side session (`storage::console`) held in an `HttpOnly`,
//! `SameSite=Strict` cookie; every form carries the session's CSRF token.
//! Every action goes through the same storage functions as the REST API
//! and the CLI (`review::claim`, `resolution::resolve`, …), recorded in
//! the audit trail with `via = console`.
//!
//! | page | shows |
//! |---|---|
//! | `/ui/login`, `/ui/logout` | sign in (form field `token`), sign out |
//! | `/ui/review` | the queue grouped by failure fingerprint; filters as query parameters |
//! | `/ui/review/{id}` | an item: answer, excerpt with cited lines, trace, group, similar, history, audit; actions |
//! | `/ui/review/{id}/audit` | its audit trail, the agent's answer against the correction |
//! | `/ui/analyses`, `/ui/analyses/{id}` | recent runs; one run's answer and trace, growing live |
//! | `/ui/analyses/{id}/events` | the run's iterations as server-sent events (HTML), see [`live::run_events`] |
//! | `/ui/groups` | failure groups: runs per fingerprint, verdict, 14-day sparkline |
//! | `/ui/live` | server-sent events: the queue changed (LISTEN/NOTIFY, see [`live`]) |
//! | `/ui/assets/…` | the stylesheet and script, embedded in the binary |

mod assets;
pub mod live;
mod markdown;
mod views;

use std::time::Duration;

use axum::{
    Form, Router,
    extract::{FromRequestParts, Path, Query, State, rejection::FormRejection},
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    middleware,
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use faultline_shared::{
    storage::{
        console::{self, ConsoleSession},
        feedback, history,
        resolution::{self, Decision, GroupDecision},
        review::{self, Actor, Filter, ReviewError, Via},
        runs, similar, steps,
        tokens::{self, Role},
    },
    types::RunStatus,
};
use maud::Markup;
use serde::Deserialize;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use self::views::{Draft, ItemView, Notice};
use super::{
    AppState,
    auth::{check_throttle, client_ip, record_failure},
    error::AppError,
};

/// The session cookie.
const COOKIE: &str = "faultline_session";
/// The sign-in form's own CSRF cookie (double submit: there is no session yet).
const LOGIN_COOKIE: &str = "faultline_login";
/// Groups per queue page.
const PER_PAGE: i64 = 50;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/review") }))
        .route("/ui", get(|| async { Redirect::to("/ui/review") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/review") }))
        .route("/ui/login", get(login_form).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/review", get(queue))
        .route("/ui/review/{id}", get(item))
        .route("/ui/review/{id}/audit", get(audit))
        .route("/ui/review/{id}/claim", post(claim))
        .route("/ui/review/{id}/decide", post(decide))
        .route("/ui/live", get(live::events))
        .route("/ui/analyses", get(analyses))
        .route("/ui/analyses/{id}", get(analysis))
        .route("/ui/analyses/{id}/events", get(analysis_events))
        .route("/ui/analyses/{id}/feedback", post(analysis_feedback))
        .route("/ui/analyses/{id}/pr-comment", get(analysis_pr_comment))
        .route("/ui/groups", get(groups))
        .route("/ui/assets/{name}", get(assets::serve))
        .layer(middleware::map_response(secure_headers))
}

/// Pages are not framed, cached or given to other origins; scripts and
/// styles come only from the console itself.
async fn secure_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Who is signed in, as the pages need it.
pub struct Viewer {
    pub name: String,
    pub role: Role,
    pub admin: bool,
    pub csrf: String,
}

impl Viewer {
    fn actor(&self) -> Actor {
        Actor {
            name: self.name.clone(),
            via: Via::Console,
            admin: self.admin,
        }
    }
}

/// A request with a live session. Without one: a GET is sent to the
/// sign-in page (and back after it); anything else gets the sign-in page
/// with a message, status 401, and changes nothing.
pub struct Signed(pub Viewer);

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let session = match cookie(&parts.headers, COOKIE) {
            Some(value) => console::find(&state.pool, value)
                .await
                .map_err(|e| AppError::from(e).into_response())?,
            None => None,
        };
        match session {
            Some(ConsoleSession { token, csrf, .. }) => Ok(Signed(Viewer {
                admin: token.role == Role::Admin,
                name: token.name,
                role: token.role,
                csrf,
            })),
            None if parts.method == axum::http::Method::GET => {
                let next = parts
                    .uri
                    .path_and_query()
                    .map_or("/ui/review", |p| p.as_str());
                Err(Redirect::to(&format!("/ui/login?next={}", encode(next))).into_response())
            }
            None => {
                let had = cookie(&parts.headers, COOKIE).is_some();
                let text = if had {
                    "Your session has expired or was ended (its token revoked?). Sign in again; nothing was changed."
                } else {
                    "Sign in first; nothing was changed."
                };
                Err(login_page(
                    StatusCode::UNAUTHORIZED,
                    "/ui/review",
                    Some(Notice::error(text)),
                ))
            }
        }
    }
}

/// The value of cookie `name`, if sent.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// Encodes a query value (application/x-www-form-urlencoded, as the
/// handlers' `Query` extractors read it).
fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Only a path of this console may be where sign-in sends you.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/ui/") && !n.starts_with("//") && !n.contains('\\') => {
            n.to_string()
        }
        _ => "/ui/review".into(),
    }
}

fn set_cookie(state: &AppState, name: &str, value: &str, max_age: Duration) -> HeaderValue {
    let secure = if state.config.public_url_is_https() {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        max_age.as_secs()
    ))
    .expect("cookie values are hex")
}

fn html(status: StatusCode, page: Markup) -> Response {
    (status, page).into_response()
}

/// The sign-in page with a fresh form token in its own cookie.
fn login_page(status: StatusCode, next: &str, notice: Option<Notice>) -> Response {
    let csrf = tokens::generate();
    let mut response = html(status, views::login(next, &csrf, notice.as_ref()));
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&format!(
            "{LOGIN_COOKIE}={csrf}; Path=/ui/login; HttpOnly; SameSite=Strict; Max-Age=3600"
        ))
        .expect("hex"),
    );
    response
}

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

async fn login_form(Query(q): Query<NextQuery>) -> Response {
    login_page(StatusCode::OK, &safe_next(q.next.as_deref()), None)
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
    csrf: Option<String>,
    next: Option<String>,
}

fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return login_page(
            StatusCode::BAD_REQUEST,
            "/ui/review",
            Some(Notice::error("The sign-in form was incomplete.")),
        );
    };
    let next = safe_next(form.next.as_deref());
    let expected = cookie(&headers, LOGIN_COOKIE).unwrap_or("");
    if expected.is_empty() || !same_secret(form.csrf.as_deref().unwrap_or(""), expected) {
        return login_page(
            StatusCode::FORBIDDEN,
            &next,
            Some(Notice::error(
                "The sign-in form was stale or not ours (missing form token). Try again.",
            )),
        );
    }
    let ip = client_ip(&extensions);
    if let Err(e) = check_throttle(&state, ip) {
        let wait = match &e {
            AppError::TooManyAttempts(w) => w.as_secs().max(1),
            _ => 60,
        };
        return login_page(
            StatusCode::TOO_MANY_REQUESTS,
            &next,
            Some(Notice::error(format!(
                "Too many wrong tokens from your address; try again in {wait}s."
            ))),
        );
    }
    let token = match tokens::find_active(&state.pool, form.token.trim()).await {
        Ok(t) => t,
        Err(e) => return AppError::from(e).into_response(),
    };
    let Some(token) = token else {
        record_failure(&state, ip);
        return login_page(
            StatusCode::UNAUTHORIZED,
            &next,
            Some(Notice::error("Unknown, revoked or expired token.")),
        );
    };
    if !token.role.grants(Role::Reviewer) {
        return login_page(
            StatusCode::FORBIDDEN,
            &next,
            Some(Notice::error(format!(
                "Token {:?} has role {}; the console needs a reviewer or admin token.",
                token.name, token.role
            ))),
        );
    }
    let ttl = state.config.console_session_ttl;
    let opened = match console::open(&state.pool, &token, ttl).await {
        Ok(o) => o,
        Err(e) => return AppError::from(e).into_response(),
    };
    tracing::info!(token = %token.name, "console sign-in");
    let mut response = Redirect::to(&next).into_response();
    let h = response.headers_mut();
    h.append(
        header::SET_COOKIE,
        set_cookie(&state, COOKIE, &opened.cookie, ttl),
    );
    h.append(
        header::SET_COOKIE,
        HeaderValue::from_static("faultline_login=; Path=/ui/login; Max-Age=0"),
    );
    response
}

#[derive(Deserialize)]
struct CsrfForm {
    csrf: Option<String>,
}

/// Refuses a POST whose form token is not the session's.
fn check_csrf(viewer: &Viewer, sent: Option<&str>) -> Result<(), Notice> {
    match sent {
        Some(t) if same_secret(t, &viewer.csrf) => Ok(()),
        Some(_) => Err(Notice::error(
            "This form is stale (its security token is not your session's): reload the page and try again. Nothing was changed.",
        )),
        None => Err(Notice::error(
            "The form had no security token (CSRF): nothing was changed.",
        )),
    }
}

async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Signed(viewer): Signed,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let sent = form.ok().and_then(|Form(f)| f.csrf);
    if let Err(notice) = check_csrf(&viewer, sent.as_deref()) {
        return html(
            StatusCode::FORBIDDEN,
            views::message(Some(&viewer), "Refused", &notice),
        );
    }
    if let Some(value) = cookie(&headers, COOKIE)
        && let Err(e) = console::close(&state.pool, value).await
    {
        return AppError::from(e).into_response();
    }
    let mut response = login_page(
        StatusCode::OK,
        "/ui/review",
        Some(Notice::info("Signed out.")),
    );
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state, COOKIE, "", Duration::ZERO),
    );
    response
}

/// The queue's query parameters (all optional), kept as text so a bad
/// value is shown back with its message.
#[derive(Debug, Default, Deserialize)]
pub struct QueueQuery {
    pub status: Option<String>,
    pub category: Option<String>,
    pub min_confidence: Option<String>,
    pub max_confidence: Option<String>,
    pub older_than: Option<String>,
    pub job: Option<String>,
    pub repository: Option<String>,
    pub page: Option<i64>,
    pub done: Option<String>,
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl QueueQuery {
    fn filter(&self) -> Result<Filter, String> {
        let number = |name: &str, v: &Option<String>| -> Result<Option<f32>, String> {
            nonempty(v)
                .map(|t| {
                    t.parse::<f32>()
                        .map_err(|_| format!("{name}: {t:?} is not a number"))
                })
                .transpose()
        };
        let filter = Filter::parse(
            nonempty(&self.status),
            nonempty(&self.category),
            number("min_confidence", &self.min_confidence)?,
            number("max_confidence", &self.max_confidence)?,
            nonempty(&self.older_than),
            None,
        )?;
        filter.matching(self.job.as_deref(), self.repository.as_deref())
    }

    /// This query on another page.
    pub fn with_page(&self, page: i64) -> String {
        let mut parts = vec![];
        for (k, v) in [
            ("status", &self.status),
            ("category", &self.category),
            ("min_confidence", &self.min_confidence),
            ("max_confidence", &self.max_confidence),
            ("older_than", &self.older_than),
            ("job", &self.job),
            ("repository", &self.repository),
        ] {
            if let Some(v) = nonempty(v) {
                parts.push(format!("{k}={}", encode(v)));
            }
        }
        parts.push(format!("page={page}"));
        format!("/ui/review?{}", parts.join("&"))
    }
}

async fn queue(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    query: Result<Query<QueueQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, AppError> {
    let (q, mut notice) = match query {
        Ok(Query(q)) => (q, None),
        Err(e) => (
            QueueQuery::default(),
            Some(Notice::error(format!(
                "Ignored the filters: {}",
                e.body_text()
            ))),
        ),
    };
    let filter = match q.filter() {
        Ok(f) => f,
        Err(why) => {
            notice = Some(Notice::error(format!("Invalid filter, showing all: {why}")));
            Filter::default()
        }
    };
    if notice.is_none() {
        notice = q.done.as_deref().map(|d| Notice::info(done_text(d)));
    }
    let page_no = q.page.unwrap_or(1).clamp(1, 100_000);
    let page =
        review::queue_groups(&state.pool, &filter, PER_PAGE, (page_no - 1) * PER_PAGE).await?;
    let sla = state.config.review_sla.as_secs() as i64;
    Ok(html(
        StatusCode::OK,
        views::queue(
            &viewer,
            &q,
            &page,
            chrono::Utc::now(),
            sla,
            PER_PAGE,
            notice.as_ref(),
        ),
    ))
}

fn done_text(done: &str) -> String {
    format!("Done: {}.", done.replace('-', " "))
}

#[derive(Deserialize)]
struct ItemQuery {
    done: Option<String>,
}

async fn item(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    id: Result<Path<Uuid>, axum::extract::rejection::PathRejection>,
    Query(q): Query<ItemQuery>,
) -> Result<Response, AppError> {
    let Ok(Path(id)) = id else {
        return Ok(not_found(&viewer));
    };
    let notice = q.done.as_deref().map(|d| Notice::info(done_text(d)));
    render_item(&state, &viewer, id, StatusCode::OK, notice, None).await
}

fn not_found(viewer: &Viewer) -> Response {
    html(
        StatusCode::NOT_FOUND,
        views::message(
            Some(viewer),
            "Not found",
            &Notice::error("No such review item."),
        ),
    )
}

/// Reads everything the item page shows and renders it.
async fn render_item(
    state: &AppState,
    viewer: &Viewer,
    id: Uuid,
    status: StatusCode,
    notice: Option<Notice>,
    draft: Option<&Draft>,
) -> Result<Response, AppError> {
    let mut conn = state.pool.acquire().await?;
    let Some(item) = review::get(&mut conn, id).await? else {
        return Ok(not_found(viewer));
    };
    drop(conn);
    let run = runs::get(&state.pool, item.run_id).await?;
    let steps = steps::list(&state.pool, item.run_id).await?;
    let audit = review::audit(&state.pool, id).await?;
    let fingerprint = item.fingerprint.clone().filter(|f| !f.is_empty());
    let (group, resolutions) = match &fingerprint {
        Some(fp) => (
            review::group_members(&state.pool, fp).await?,
            resolution::by_fingerprint(&state.pool, fp, 5).await?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let similar = match &fingerprint {
        Some(fp) => {
            let text = similar::failure_text(&state.pool, item.run_id).await?;
            similar::tiered(&state.pool, &[item.run_id], fp, text.as_deref(), 5).await?
        }
        None => Vec::new(),
    };
    // The event's columns and its payload (the build's page) in one read.
    let (event, payload) = match &run {
        Some(r) => {
            match faultline_shared::storage::events::get_with_payload(&state.pool, r.event_id)
                .await?
            {
                Some((e, p)) => (Some(e), p),
                None => (None, None),
            }
        }
        None => (None, None),
    };
    let history = match &event {
        Some(e) if e.job_name.is_some() || e.test_name.is_some() => history::history(
            &state.pool,
            e.job_name.as_deref(),
            e.test_name.as_deref(),
            20,
        )
        .await
        .ok()
        .filter(|h| h.failures + h.passes > 1),
        _ => None,
    };
    let build_url = payload.as_ref().and_then(build_url);
    let (prev, next) = review::neighbours(&state.pool, &item).await?;
    let view = ItemView {
        item: &item,
        run: run.as_ref(),
        steps: &steps,
        audit: &audit,
        group: &group,
        similar: &similar,
        resolutions: &resolutions,
        history: history.as_ref(),
        build_url: build_url.as_deref(),
        prev,
        next,
        now: chrono::Utc::now(),
        sla_secs: state.config.review_sla.as_secs() as i64,
        draft,
    };
    Ok(html(status, views::item(viewer, &view, notice.as_ref())))
}

/// The CI build's page from the event's payload (Jenkins, GitHub, API).
fn build_url(payload: &serde_json::Value) -> Option<String> {
    ["/jenkins/build_url", "/github/html_url", "/api/log_url"]
        .iter()
        .find_map(|p| payload.pointer(p).and_then(|v| v.as_str()))
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .map(str::to_string)
}

async fn audit(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    id: Result<Path<Uuid>, axum::extract::rejection::PathRejection>,
) -> Result<Response, AppError> {
    let Ok(Path(id)) = id else {
        return Ok(not_found(&viewer));
    };
    let mut conn = state.pool.acquire().await?;
    let Some(item) = review::get(&mut conn, id).await? else {
        return Ok(not_found(&viewer));
    };
    drop(conn);
    let audit = review::audit(&state.pool, id).await?;
    Ok(html(
        StatusCode::OK,
        views::audit_page(&viewer, &item, &audit),
    ))
}

/// A review action refused: the item page again with the reason, nothing changed.
async fn refused(
    state: &AppState,
    viewer: &Viewer,
    id: Uuid,
    status: StatusCode,
    notice: Notice,
    draft: Option<&Draft>,
) -> Result<Response, AppError> {
    render_item(state, viewer, id, status, Some(notice), draft).await
}

fn review_status(e: &ReviewError) -> StatusCode {
    match e {
        ReviewError::NotFound(_) => StatusCode::NOT_FOUND,
        ReviewError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::CONFLICT,
    }
}

async fn claim(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    Path(id): Path<Uuid>,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Result<Response, AppError> {
    let sent = form.ok().and_then(|Form(f)| f.csrf);
    if let Err(notice) = check_csrf(&viewer, sent.as_deref()) {
        return refused(&state, &viewer, id, StatusCode::FORBIDDEN, notice, None).await;
    }
    match review::claim(&state.pool, id, &viewer.actor(), state.review_claim_ttl).await {
        Ok(_) => Ok(Redirect::to(&format!("/ui/review/{id}?done=claimed")).into_response()),
        Err(ReviewError::Database(e)) => Err(e.into()),
        Err(e) => {
            let status = review_status(&e);
            refused(
                &state,
                &viewer,
                id,
                status,
                Notice::error(format!("Not claimed: {e}.")),
                None,
            )
            .await
        }
    }
}

#[derive(Debug, Deserialize)]
struct DecideForm {
    csrf: Option<String>,
    action: Option<String>,
    category: Option<String>,
    root_cause: Option<String>,
    fix: Option<String>,
    comment: Option<String>,
    scope: Option<String>,
}

async fn decide(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    Path(id): Path<Uuid>,
    form: Result<Form<DecideForm>, FormRejection>,
) -> Result<Response, AppError> {
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            let notice = Notice::error(format!("The form could not be read: {}", e.body_text()));
            return refused(&state, &viewer, id, StatusCode::BAD_REQUEST, notice, None).await;
        }
    };
    if let Err(notice) = check_csrf(&viewer, form.csrf.as_deref()) {
        return refused(&state, &viewer, id, StatusCode::FORBIDDEN, notice, None).await;
    }
    let comment = form
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let draft = Draft {
        category: form.category.clone(),
        root_cause: form.root_cause.clone(),
        fix: form.fix.clone(),
        comment: comment.clone(),
    };
    let decision = match form.action.as_deref() {
        Some("accept") => GroupDecision::Resolve(Decision {
            accept: true,
            comment,
            ..Decision::default()
        }),
        Some("correct") => GroupDecision::Resolve(Decision {
            accept: false,
            // Every field of the form is sent: an empty one is an error
            // (the storage rule names it), not "keep the agent's".
            category: Some(form.category.unwrap_or_default()),
            root_cause: Some(form.root_cause.unwrap_or_default()),
            fix: Some(form.fix.unwrap_or_default()),
            comment,
        }),
        Some("dismiss") => GroupDecision::Dismiss(comment),
        other => {
            let notice = Notice::error(format!(
                "Unknown action {:?}: accept, correct or dismiss.",
                other.unwrap_or("")
            ));
            return refused(
                &state,
                &viewer,
                id,
                StatusCode::BAD_REQUEST,
                notice,
                Some(&draft),
            )
            .await;
        }
    };
    let actor = viewer.actor();
    let group = form.scope.as_deref() == Some("group");
    let outcome = if group {
        resolution::decide_group(&state.pool, id, &actor, state.review_claim_ttl, &decision).await
    } else {
        let single = match &decision {
            GroupDecision::Resolve(d) => resolution::resolve(&state.pool, id, &actor, d)
                .await
                .map(drop),
            GroupDecision::Dismiss(c) => resolution::dismiss(&state.pool, id, &actor, c.as_deref())
                .await
                .map(drop),
        };
        single.map(|()| resolution::GroupOutcome {
            closed: vec![id],
            skipped: Vec::new(),
        })
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(ReviewError::Database(e)) => return Err(e.into()),
        Err(e) => {
            let status = review_status(&e);
            let notice = Notice::error(format!(
                "Not saved: {}.",
                e.to_string().trim_end_matches('.')
            ));
            return refused(&state, &viewer, id, status, notice, Some(&draft)).await;
        }
    };
    let verb = match form.action.as_deref() {
        Some("accept") => "accepted",
        Some("correct") => "corrected",
        _ => "dismissed",
    };
    let mut done = format!(
        "{verb}-{}-item{}",
        outcome.closed.len(),
        if outcome.closed.len() == 1 { "" } else { "s" }
    );
    if !outcome.skipped.is_empty() {
        done.push_str(&format!(
            "-({}-held-by-others-left-alone)",
            outcome.skipped.len()
        ));
    }
    // The next item: the oldest pending one nobody else holds.
    let next = review::next_for(&state.pool, &viewer.name).await?;
    Ok(match next {
        Some(n) => Redirect::to(&format!("/ui/review/{n}?done={}", encode(&done))),
        None => Redirect::to(&format!("/ui/review?done={}", encode(&done))),
    }
    .into_response())
}

#[derive(Deserialize)]
struct AnalysesQuery {
    status: Option<String>,
    page: Option<i64>,
}

async fn analyses(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    query: Result<Query<AnalysesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, AppError> {
    let q = query.map(|Query(q)| q).unwrap_or(AnalysesQuery {
        status: None,
        page: None,
    });
    let status = match nonempty(&q.status).map(str::parse::<RunStatus>) {
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            let notice = Notice::error(format!(
                "Unknown status {:?}.",
                q.status.as_deref().unwrap_or("")
            ));
            return Ok(html(
                StatusCode::BAD_REQUEST,
                views::message(Some(&viewer), "Analyses", &notice),
            ));
        }
        None => None,
    };
    let page_no = q.page.unwrap_or(1).clamp(1, 100_000);
    let mut runs =
        console::recent_runs(&state.pool, status, PER_PAGE + 1, (page_no - 1) * PER_PAGE).await?;
    let more = runs.len() as i64 > PER_PAGE;
    runs.truncate(PER_PAGE as usize);
    let rates =
        feedback::rates(&state.pool, faultline_shared::metrics::FEEDBACK_WINDOW_DAYS).await?;
    Ok(html(
        StatusCode::OK,
        views::analyses(
            &viewer,
            &runs,
            status.map(|s| s.as_str()),
            page_no,
            more,
            &rates,
        ),
    ))
}

async fn analysis(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    id: Result<Path<Uuid>, axum::extract::rejection::PathRejection>,
) -> Result<Response, AppError> {
    let Ok(Path(id)) = id else {
        return Ok(not_found(&viewer));
    };
    let Some(run) = runs::get(&state.pool, id).await? else {
        return Ok(no_such_analysis(&viewer));
    };
    let event = faultline_shared::storage::events::get(&state.pool, run.event_id).await?;
    let steps = steps::list(&state.pool, id).await?;
    let item = review::for_run(&state.pool, id).await?;
    let (helpful, not_helpful) = feedback::of_run(&state.pool, id).await?;
    let mine = feedback::console_vote(&state.pool, id, &viewer.name).await?;
    let votes = views::Feedback {
        helpful,
        not_helpful,
        mine,
    };
    Ok(html(
        StatusCode::OK,
        views::analysis(&viewer, &run, event.as_ref(), &steps, item.as_ref(), &votes),
    ))
}

/// The pull-request comment that shows this analysis, as GitHub renders
/// it: every analysed job of its commit when the event names a repository
/// and a commit (what the notifier posts), else this job alone.
async fn analysis_pr_comment(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    id: Result<Path<Uuid>, axum::extract::rejection::PathRejection>,
) -> Result<Response, AppError> {
    use faultline_shared::storage::pr_comments;
    let Ok(Path(id)) = id else {
        return Ok(not_found(&viewer));
    };
    let Some(run) = runs::get(&state.pool, id).await? else {
        return Ok(no_such_analysis(&viewer));
    };
    let event = faultline_shared::storage::events::get(&state.pool, run.event_id).await?;
    let target = event
        .as_ref()
        .and_then(|e| Some((e.repository.clone()?, e.commit_sha.clone()?)));
    let mut jobs = match &target {
        Some((repo, sha)) => pr_comments::jobs_of_commit(&state.pool, repo, sha).await?,
        None => Vec::new(),
    };
    if jobs.is_empty() {
        jobs.extend(pr_comments::job_of_run(&state.pool, id).await?);
    }
    // A failed analysis is shown as the comment shows it ("no answer").
    let finished = ["completed", "needs_review", "failed"].contains(&run.status.as_str());
    if !finished || jobs.is_empty() {
        return Ok(html(
            StatusCode::NOT_FOUND,
            views::message(
                Some(&viewer),
                "No comment yet",
                &Notice::error(
                    "This analysis has not finished: no pull-request comment shows it yet.",
                ),
            ),
        ));
    }
    let (repository, head_sha) = target.unwrap_or_else(|| ("local".into(), "0000000".into()));
    let body = crate::show::comment_preview(repository, head_sha, &jobs);
    Ok(html(
        StatusCode::OK,
        views::pr_comment(&viewer, &run, &markdown::github_html(&body)),
    ))
}

/// The page an unknown analysis id gets.
fn no_such_analysis(viewer: &Viewer) -> Response {
    html(
        StatusCode::NOT_FOUND,
        views::message(
            Some(viewer),
            "Not found",
            &Notice::error("No such analysis."),
        ),
    )
}

#[derive(Debug, Deserialize)]
struct FeedbackForm {
    csrf: Option<String>,
    helpful: Option<String>,
}

/// "Helpful" / "Not helpful" on an analysis: the viewer's vote (a second
/// one replaces the first), back to the analysis.
async fn analysis_feedback(
    State(state): State<AppState>,
    Signed(viewer): Signed,
    id: Result<Path<Uuid>, axum::extract::rejection::PathRejection>,
    form: Result<Form<FeedbackForm>, FormRejection>,
) -> Result<Response, AppError> {
    let Ok(Path(id)) = id else {
        return Ok(not_found(&viewer));
    };
    let form = form.ok().map(|Form(f)| f);
    let sent = form.as_ref().and_then(|f| f.csrf.as_deref());
    if let Err(notice) = check_csrf(&viewer, sent) {
        return Ok(html(
            StatusCode::FORBIDDEN,
            views::message(Some(&viewer), "Analysis", &notice),
        ));
    }
    let helpful = match form.as_ref().and_then(|f| f.helpful.as_deref()) {
        Some("yes") => true,
        Some("no") => false,
        _ => {
            return Ok(html(
                StatusCode::BAD_REQUEST,
                views::message(
                    Some(&viewer),
                    "Analysis",
                    &Notice::error("Say \"yes\" or \"no\": was the analysis helpful?"),
                ),
            ));
        }
    };
    if !feedback::record(
        &state.pool,
        id,
        feedback::Source::Console,
        &viewer.name,
        helpful,
    )
    .await?
    {
        return Ok(no_such_analysis(&viewer));
    }
    Ok(Redirect::to(&format!("/ui/analyses/{id}#feedback")).into_response())
}

#[derive(Deserialize)]
struct EventsQuery {
    last_event_id: Option<String>,
}

/// The run's iterations as they commit, each rendered as the trace's HTML.
async fn analysis_events(
    State(state): State<AppState>,
    _: Signed,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Result<Response, AppError> {
    let resume = live::last_event_id(&headers, q.last_event_id.as_deref())
        .map_err(|e| AppError::bad_request("invalid header", e))?;
    if runs::get(&state.pool, id).await?.is_none() {
        return Err(AppError::NotFound(format!("analysis {id} not found")));
    }
    if resume == live::Resume::Done {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(
        live::run_events(&state, id, resume, |s| views::step(s).into_string())
            .await?
            .into_response(),
    )
}

/// Failure groups seen in this many days.
const GROUP_DAYS: i32 = 90;

async fn groups(
    State(state): State<AppState>,
    Signed(viewer): Signed,
) -> Result<Response, AppError> {
    let groups = console::failure_groups(&state.pool, GROUP_DAYS, 200, 0).await?;
    Ok(html(
        StatusCode::OK,
        views::groups(&viewer, &groups, GROUP_DAYS),
    ))
}
