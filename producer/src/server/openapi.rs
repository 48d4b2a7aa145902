//! The server's OpenAPI 3.1 document, served at `GET /api/v1/openapi.json`.
//!
//! Every route outside the HTML console is registered through
//! [`utoipa_axum`]'s `routes!` ([`super::router`]), which reads the
//! handler's `#[utoipa::path]`: a route cannot exist without its operation
//! in the document, and the document's request and response schemas are
//! derived from the types the handlers read and answer with. The error body
//! of every operation is an RFC 9457 [`Problem`].

use std::sync::Arc;

use axum::{
    Extension,
    http::header,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
};
use uuid::Uuid;

use faultline_shared::storage::steps::StepRow;

use super::{
    console::live::Verdict,
    error::{PROBLEM_JSON, Problem},
};

/// The security schemes the operations name.
pub const BEARER: &str = "token";
pub const JENKINS: &str = "jenkins_token";
pub const GITHUB: &str = "github_signature";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Faultline",
        description = "CI failure analysis: submit failed builds (webhooks or the API), read \
            each analysis with its trace, and work the human-review queue. Tokens are made \
            with `faultline token create --role ingest|reviewer|admin`; errors are RFC 9457 \
            problems (`application/problem+json`). docs/usage.md walks through it.",
    ),
    modifiers(&Security),
    components(schemas(Problem)),
    tags(
        (name = "analyses", description = "Submit a failed build and read its analysis."),
        (name = "review", description = "The human-review queue (role `reviewer` or `admin`)."),
        (name = "webhooks", description = "Failure events from GitHub Actions and Jenkins."),
        (name = "operations", description = "Health, readiness, metrics and this document."),
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token (`faultline token create`); its role decides what it may \
                         call: `ingest` submits, `reviewer` reads and reviews, `admin` does all.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            JENKINS,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Faultline-Token",
                "JENKINS_WEBHOOK_TOKEN (also accepted as `Authorization: Bearer`).",
            ))),
        );
        components.add_security_scheme(
            GITHUB,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Hub-Signature-256",
                "`sha256=` and the HMAC-SHA256 of the body under GITHUB_WEBHOOK_SECRET.",
            ))),
        );
    }
}

/// 202: the event is stored and its analysis queued (or it was known).
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    /// The analysis: `GET /api/v1/analyses/{run_id}` (also the `Location` header).
    pub run_id: Uuid,
    pub event_id: Uuid,
    /// False when the same event (dedup key or idempotency key) was already stored.
    pub created: bool,
}

/// 202: a well-formed delivery that is not analysed, and why.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ignored {
    pub ignored: String,
}

/// 202: a passing run recorded in the failure history (GitHub).
#[derive(Debug, Serialize, ToSchema)]
pub struct Recorded {
    /// The outcome recorded: `success`.
    pub recorded: String,
    /// False when this delivery was already recorded.
    pub created: bool,
}

/// 202 of a webhook: stored, recorded, or ignored.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Delivery {
    Accepted(Accepted),
    Recorded(Recorded),
    Ignored(Ignored),
}

/// 200: GitHub's `ping` event, answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pong {
    pub pong: bool,
}

/// One event of `GET /api/v1/analyses/{id}/events`, as a client's SSE
/// parser reads it: `event` (`iteration`, then `verdict`), `id` (the
/// iteration's number, or `verdict`) and `data`, JSON: a journal row
/// ([`StepRow`]), then the [`Verdict`]. It only describes the stream.
pub struct StreamEvent;

impl utoipa::PartialSchema for StreamEvent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::{
            Ref,
            schema::{ObjectBuilder, OneOfBuilder, Type},
        };
        let text = || ObjectBuilder::new().schema_type(Type::String);
        let data = OneOfBuilder::new()
            .item(Ref::from_schema_name("StepRow"))
            .item(Ref::from_schema_name("Verdict"));
        ObjectBuilder::new()
            .property("event", text().enum_values(Some(["iteration", "verdict"])))
            .property("id", text())
            .property(
                "data",
                text()
                    .content_media_type("application/json")
                    .content_schema(Some(data)),
            )
            .required("data")
            .description(Some(
                "One server-sent event: `iteration` (data: a StepRow as JSON), then `verdict` \
                 (data: a Verdict as JSON).",
            ))
            .into()
    }
}

impl ToSchema for StreamEvent {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        schemas.push(("StepRow".into(), StepRow::schema()));
        schemas.push(("Verdict".into(), Verdict::schema()));
        StepRow::schemas(schemas);
        Verdict::schemas(schemas);
    }
}

/// `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready` (the database answers).
    pub status: String,
}

/// The responses every operation may give besides its own: the server's
/// caps (408, 503, 500) on every route behind them, the token's (401, 429)
/// where a token is checked. Every error response is a [`Problem`].
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, path::Operation};
    exactly_one_log(doc);
    let problem = || {
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build()
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let behind_caps = !matches!(path.as_str(), "/healthz" | "/readyz");
        let operations: [&mut Option<Operation>; 2] = [&mut item.get, &mut item.post];
        for op in operations.into_iter().flatten() {
            // Every security requirement here is a credential the handler
            // checks (the token, the Jenkins token, GitHub's signature).
            let authenticated = op.security.as_ref().is_some_and(|s| !s.is_empty());
            let mut common: Vec<(&str, &str)> = Vec::new();
            if op.request_body.is_some() {
                common.push(("413", "The body is over FAULTLINE_MAX_BODY_BYTES."));
            }
            if authenticated {
                common.push(("401", "No credential, or not a valid one."));
                common.push((
                    "429",
                    "Too many wrong credentials from this client; see Retry-After.",
                ));
            }
            if behind_caps {
                common.push(("408", "The request (or its body) took longer than FAULTLINE_REQUEST_TIMEOUT / FAULTLINE_BODY_READ_TIMEOUT allow."));
                common.push(("503", "The server is at its in-flight cap, or the database does not answer; retry shortly."));
            }
            common.push(("500", "An internal error (logged; the body says no more)."));
            for (status, description) in common {
                op.responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| ResponseBuilder::new().description(description).into());
            }
            for (status, response) in op.responses.responses.iter_mut() {
                if let RefOr::T(r) = response
                    && (status.starts_with('4') || status.starts_with('5'))
                    && r.content.is_empty()
                {
                    r.content.insert(PROBLEM_JSON.to_string(), problem().into());
                }
            }
        }
    }
}

/// `POST /api/v1/analyses` takes exactly one of `log` (not empty) and
/// `log_url` (`api::log_or_url`), which a struct's derived schema cannot
/// say: its schema becomes that struct's and a `oneOf` of the two.
fn exactly_one_log(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Type};
    let Some(schema) = doc
        .components
        .as_mut()
        .and_then(|c| c.schemas.get_mut("CreateAnalysis"))
    else {
        return;
    };
    let given = |field: &str| {
        ObjectBuilder::new().required(field).property(
            field,
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1)),
        )
    };
    let one_of = OneOfBuilder::new()
        .item(given("log"))
        .item(given("log_url"));
    *schema = AllOfBuilder::new().item(schema.clone()).item(one_of).into();
}

/// The document as served (built once, with the router).
#[derive(Clone)]
pub struct Document(pub Arc<str>);

/// The document itself, as JSON.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "operations",
    responses((status = 200, description = "This OpenAPI 3.1 document.", content_type = "application/json", body = Object)),
)]
pub async fn document(Extension(Document(json)): Extension<Document>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        json.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// A route added with axum's own `.route(…)` (not `routes!`) would be
    /// served without its operation in the document: only the console's
    /// HTML pages (`/` and `/ui…`, docs/console.md) are.
    #[test]
    fn every_route_outside_the_console_is_in_the_document() {
        fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut console_routes = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for call in [".route(", ".route_service(", ".nest(", ".nest_service("] {
                for (at, _) in text.match_indices(call) {
                    // A mention in a comment or a string (this test's own).
                    if matches!(text[..at].chars().last(), Some('"' | '`')) {
                        continue;
                    }
                    let rest = text[at + call.len()..].trim_start();
                    let literal = rest
                        .strip_prefix('"')
                        .and_then(|r| r.split('"').next())
                        .unwrap_or_else(|| {
                            panic!("{}: {call} without a literal path", file.display())
                        });
                    assert!(
                        literal == "/" || literal == "/ui" || literal.starts_with("/ui/"),
                        "{}: {call}\"{literal}\" is served but not in the OpenAPI document: \
                         register it with utoipa_axum's routes! (server/mod.rs, api_routes)",
                        file.display()
                    );
                    console_routes += 1;
                }
            }
        }
        assert!(console_routes > 10, "the scan found the console's routes");
        let doc = crate::server::openapi_document();
        for path in [
            "/api/v1/analyses",
            "/api/v1/review/{id}/resolve",
            "/webhooks/github",
            "/healthz",
            "/api/v1/openapi.json",
        ] {
            assert!(doc.paths.paths.contains_key(path), "{path}");
        }
    }
}
