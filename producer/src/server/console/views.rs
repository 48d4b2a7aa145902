//! The console's pages (maud): a layout and one function per page. Views
//! only render what the handlers read; they query nothing.

use chrono::{DateTime, Utc};
use faultline_shared::{
    storage::{
        history::History,
        resolution::LibraryEntry,
        review::{self, AuditRow, QueuePage, ReviewRow, ReviewStatus},
        runs::RunRow,
        similar::SimilarMatch,
        steps::StepRow,
    },
    tool::LogExcerpt,
    types::{Category, Evidence},
};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use super::{QueueQuery, Viewer};

/// A message shown at the top of a page.
pub struct Notice {
    pub error: bool,
    pub text: String,
}

impl Notice {
    pub fn error(text: impl Into<String>) -> Self {
        Notice {
            error: true,
            text: text.into(),
        }
    }
    pub fn info(text: impl Into<String>) -> Self {
        Notice {
            error: false,
            text: text.into(),
        }
    }
}

/// The page frame: header with navigation and the signed-in user, the
/// notice, the content, the keyboard cheat sheet.
pub fn page(
    title: &str,
    viewer: Option<&Viewer>,
    page: &str,
    notice: Option<&Notice>,
    content: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Faultline" }
                link rel="stylesheet" href="/ui/assets/console.css";
                script src="/ui/assets/console.js" defer {}
            }
            body data-page=(page) data-csrf=[viewer.map(|v| v.csrf.as_str())] {
                header.top {
                    a.brand href="/ui/review" { "Faultline" }
                    @if viewer.is_some() {
                        nav {
                            a href="/ui/review" aria-current=[(page == "queue").then_some("page")] { "Review queue" }
                            a href="/ui/groups" aria-current=[(page == "groups").then_some("page")] { "Failure groups" }
                            a href="/ui/analyses" aria-current=[(page == "analyses").then_some("page")] { "Analyses" }
                        }
                    }
                    span.spacer {}
                    @if let Some(v) = viewer {
                        span.who { (v.name) " · " (v.role) }
                        button.help type="button" data-key="?" title="Keyboard shortcuts (?)" { "?" }
                        form.inline method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(v.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main {
                    @if let Some(n) = notice {
                        p.notice.error[n.error] role=(if n.error { "alert" } else { "status" }) { (n.text) }
                    }
                    (content)
                }
                @if viewer.is_some() {
                    dialog #cheatsheet {
                        h2 { "Keyboard" }
                        table {
                            tr { td { kbd { "j" } " / " kbd { "k" } } td { "next / previous item" } }
                            tr { td { kbd { "Enter" } } td { "open the selected item" } }
                            tr { td { kbd { "c" } } td { "claim" } }
                            tr { td { kbd { "a" } } td { "accept the agent's answer" } }
                            tr { td { kbd { "e" } } td { "correct it (edit the answer)" } }
                            tr { td { kbd { "d" } } td { "dismiss" } }
                            tr { td { kbd { "g" } } td { "queue: expand the group · item: apply to the whole group" } }
                            tr { td { kbd { "u" } } td { "back to the queue" } }
                            tr { td { kbd { "?" } } td { "this sheet" } }
                            tr { td { kbd { "Esc" } } td { "close, leave a field" } }
                        }
                        form method="dialog" { button { "Close" } }
                    }
                }
            }
        }
    }
}

pub fn login(next: &str, csrf: &str, notice: Option<&Notice>) -> Markup {
    page(
        "Sign in",
        None,
        "login",
        notice,
        html! {
            section.login {
                h1 { "Sign in to the review console" }
                p { "Use an API token with role " code { "reviewer" } " or " code { "admin" } " ("
                    code { "faultline token create --role reviewer --name you" } ")." }
                form method="post" action="/ui/login" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="next" value=(next);
                    label for="token" { "API token" }
                    input #token type="password" name="token" autocomplete="current-password" required autofocus;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// A plain page with a message (not found, refused, …).
pub fn message(viewer: Option<&Viewer>, title: &str, notice: &Notice) -> Markup {
    page(
        title,
        viewer,
        "message",
        Some(notice),
        html! { p { a href="/ui/review" { "Back to the review queue" } } },
    )
}

fn category_badge(category: Option<&str>) -> Markup {
    let c = category.unwrap_or("—");
    html! { span.badge data-category=(c) { (c) } }
}

fn confidence(c: Option<f32>) -> Markup {
    match c {
        Some(c) => {
            html! { span.conf title=(format!("{c:.3}")) { (format!("{:.0} %", c * 100.0)) } }
        }
        None => html! { span.conf { "—" } },
    }
}

/// "1 item", "3 items".
fn plural(n: i64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// "3h 12m" from seconds.
pub fn human_age(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

fn age(now: DateTime<Utc>, at: DateTime<Utc>, sla_secs: i64) -> Markup {
    let secs = (now - at).num_seconds();
    let late = secs > sla_secs;
    html! {
        time.age.late[late] datetime=(at.to_rfc3339()) title=(format!("{} UTC{}", at.format("%Y-%m-%d %H:%M:%S"), if late { " · past the review SLA" } else { "" })) {
            (human_age(secs))
        }
    }
}

fn job_cell(row: &ReviewRow) -> Markup {
    html! {
        (row.job_name.as_deref().or(row.log_name.as_deref()).unwrap_or("—"))
        @if let Some(b) = &row.build_number { " #" (b) }
    }
}

fn claim_cell(row: &ReviewRow) -> Markup {
    html! {
        @if row.status == ReviewStatus::Claimed {
            span.claimed { (row.claimed_by.as_deref().unwrap_or("")) }
        } @else {
            span.muted { (row.status.as_str()) }
        }
    }
}

/// The queue: filters, then one row per failure group (its oldest item),
/// the members in hidden rows below it.
pub fn queue(
    viewer: &Viewer,
    q: &QueueQuery,
    p: &QueuePage,
    now: DateTime<Utc>,
    sla_secs: i64,
    per_page: i64,
    notice: Option<&Notice>,
) -> Markup {
    let page_no = q.page.unwrap_or(1).max(1);
    let pages = ((p.total_groups + per_page - 1) / per_page).max(1);
    let content = html! {
        div.titlebar {
            h1 { "Review queue" }
            span #queue-count.count aria-live="polite" {
                (plural(p.total_items, "item")) " in " (plural(p.total_groups, "group"))
            }
            span #live.live title="Updates without reloading" { "live" }
        }
        (filters(q))
        @if p.groups.is_empty() {
            p.empty { "Nothing waits for review here." }
        } @else {
            table #queue.queue {
                thead { tr {
                    th { "Age" } th { "Category" } th { "Confidence" } th { "Job · build" }
                    th { "Repository" } th { "Why here" } th { "Claim" } th { "Group" }
                } }
                tbody {
                    @for g in &p.groups {
                        @let lead = p.members.iter().find(|m| m.id == g.lead);
                        @if let Some(lead) = lead {
                            tr.row.group-row tabindex="0" data-href=(format!("/ui/review/{}", lead.id))
                                data-id=(lead.id) data-group=(g.key) {
                                td { (age(now, lead.created_at, sla_secs)) }
                                td { (category_badge(lead.category.as_ref().map(|c| c.0.as_str()))) }
                                td { (confidence(lead.confidence)) }
                                td { a href=(format!("/ui/review/{}", lead.id)) { (job_cell(lead)) } }
                                td { (lead.repository.as_deref().unwrap_or("—")) }
                                td { (reason_text(&lead.reason)) }
                                td { (claim_cell(lead)) }
                                td {
                                    @if g.count > 1 {
                                        button.toggle type="button" data-toggle=(g.key) aria-expanded="false"
                                            title=(format!("first seen {} · last seen {} · jobs: {}",
                                                g.first_seen.format("%Y-%m-%d %H:%M"), g.last_seen.format("%Y-%m-%d %H:%M"),
                                                if g.jobs.is_empty() { "—".to_string() } else { g.jobs.join(", ") })) {
                                            "×" (g.count) " ▸"
                                        }
                                        @if !g.jobs.is_empty() { " " span.muted.jobs { (plural(g.jobs.len() as i64, "job")) } }
                                    } @else {
                                        span.muted { "1" }
                                    }
                                }
                            }
                            @for m in p.members.iter().filter(|m| m.id != g.lead && review::group_key(m) == g.key) {
                                tr.row.member tabindex="0" hidden data-href=(format!("/ui/review/{}", m.id))
                                    data-id=(m.id) data-member-of=(g.key) {
                                    td { (age(now, m.created_at, sla_secs)) }
                                    td { (category_badge(m.category.as_ref().map(|c| c.0.as_str()))) }
                                    td { (confidence(m.confidence)) }
                                    td { a href=(format!("/ui/review/{}", m.id)) { "↳ " (job_cell(m)) } }
                                    td { (m.repository.as_deref().unwrap_or("—")) }
                                    td { (reason_text(&m.reason)) }
                                    td { (claim_cell(m)) }
                                    td {}
                                }
                            }
                        }
                    }
                }
            }
            nav.pager {
                @if page_no > 1 { a rel="prev" href=(q.with_page(page_no - 1)) { "← newer page" } }
                span { "page " (page_no) " of " (pages) }
                @if page_no < pages { a rel="next" href=(q.with_page(page_no + 1)) { "next page →" } }
            }
        }
    };
    page("Review queue", Some(viewer), "queue", notice, content)
}

/// Why an item is in the queue, for people.
pub fn reason_text(reason: &str) -> String {
    let known = [
        ("low_confidence", "low confidence"),
        ("failed", "the analysis failed"),
        ("max_iterations", "ran out of iterations"),
        ("self_correct_exhausted", "self-correction exhausted"),
    ];
    known
        .iter()
        .find(|(k, _)| reason.starts_with(k))
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| reason.replace('_', " "))
}

fn filters(q: &QueueQuery) -> Markup {
    let statuses = ["", "open", "claimed", "resolved", "dismissed"];
    html! {
        form.filters method="get" action="/ui/review" {
            label { "Status "
                select name="status" {
                    @for s in statuses {
                        option value=(s) selected[q.status.as_deref().unwrap_or("") == s] {
                            (if s.is_empty() { "open + claimed" } else { s })
                        }
                    }
                }
            }
            label { "Category "
                select name="category" {
                    option value="" { "any" }
                    @for c in Category::ALL {
                        option value=(c.as_str()) selected[q.category.as_deref() == Some(c.as_str())] { (c.as_str()) }
                    }
                }
            }
            label { "Confidence " input type="number" name="min_confidence" min="0" max="1" step="0.05" placeholder="min" value=[q.min_confidence.as_deref()]; }
            label { "to " input type="number" name="max_confidence" min="0" max="1" step="0.05" placeholder="max" value=[q.max_confidence.as_deref()]; }
            label { "Older than " input type="text" name="older_than" size="5" placeholder="4h" value=[q.older_than.as_deref()]; }
            label { "Job " input type="text" name="job" size="14" value=[q.job.as_deref()]; }
            label { "Repository " input type="text" name="repository" size="14" value=[q.repository.as_deref()]; }
            button type="submit" { "Filter" }
            a href="/ui/review" { "Clear" }
        }
    }
}

/// What the item page shows.
pub struct ItemView<'a> {
    pub item: &'a ReviewRow,
    pub run: Option<&'a RunRow>,
    pub steps: &'a [StepRow],
    pub audit: &'a [AuditRow],
    pub group: &'a [ReviewRow],
    pub similar: &'a [SimilarMatch],
    pub resolutions: &'a [LibraryEntry],
    pub history: Option<&'a History>,
    pub build_url: Option<&'a str>,
    pub prev: Option<uuid::Uuid>,
    pub next: Option<uuid::Uuid>,
    pub now: DateTime<Utc>,
    pub sla_secs: i64,
    /// Values of a refused correction, to show again.
    pub draft: Option<&'a Draft>,
}

/// A correction form's values.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct Draft {
    pub category: Option<String>,
    pub root_cause: Option<String>,
    pub fix: Option<String>,
    pub comment: Option<String>,
}

pub fn item(viewer: &Viewer, v: &ItemView<'_>, notice: Option<&Notice>) -> Markup {
    let item = v.item;
    let result = v.run.and_then(|r| r.result.as_ref());
    let field = |name: &str| -> String {
        result
            .and_then(|r| r[name].as_str())
            .unwrap_or("")
            .to_string()
    };
    let mine = item.status == ReviewStatus::Claimed
        && item.claimed_by.as_deref() == Some(viewer.name.as_str());
    let closed = item.status.is_closed();
    let others = v.group.iter().filter(|m| m.id != item.id).count();
    let draft = v.draft.cloned().unwrap_or_else(|| Draft {
        category: Some(
            item.category
                .as_ref()
                .map(|c| c.0.as_str().to_string())
                .unwrap_or_else(|| field("category")),
        ),
        root_cause: Some(field("root_cause")),
        fix: Some(field("fix")),
        comment: None,
    });
    let evidence: Vec<Evidence> = result
        .and_then(|r| serde_json::from_value(r["evidence"].clone()).ok())
        .unwrap_or_default();
    let content = html! {
        nav.pager.itemnav {
            a href="/ui/review" data-key="u" { "↑ Queue (u)" }
            @if let Some(p) = v.prev { a #prev href=(format!("/ui/review/{p}")) data-key="k" { "← previous (k)" } }
            @if let Some(n) = v.next { a #next href=(format!("/ui/review/{n}")) data-key="j" { "next (j) →" } }
        }
        div.titlebar {
            h1 { (category_badge(item.category.as_ref().map(|c| c.0.as_str()))) " " (job_cell(item)) }
            span #live.live { "live" }
        }
        div #status.status data-status=(item.status.as_str()) data-claimed-by=[item.claimed_by.as_deref()] {
            "Status: " strong { (item.status.as_str()) }
            @if item.status == ReviewStatus::Claimed {
                " by " strong.claimant { (item.claimed_by.as_deref().unwrap_or("")) }
                @if let Some(until) = item.claim_expires_at { " until " (until.format("%H:%M UTC")) }
            }
            " · why here: " (reason_text(&item.reason))
            " · waiting " (age(v.now, item.created_at, v.sla_secs))
            @if let Some(r) = &item.repository { " · " (r) }
            @if let Some(url) = v.build_url { " · " a href=(url) rel="noreferrer noopener" target="_blank" { "CI build ↗" } }
            " · " a href=(format!("/ui/analyses/{}", item.run_id)) { "analysis" }
        }
        div.columns {
            div.maincol {
                section.answer {
                    h2 { "The agent's answer" }
                    @if result.is_none() {
                        p.muted { "The analysis produced no answer (" (v.run.and_then(|r| r.failure_reason.as_deref()).unwrap_or("failed")) ")." }
                    } @else {
                        dl {
                            dt { "Category" } dd { (category_badge(Some(&field("category")))) " at " (confidence(item.confidence)) }
                            @if let Some((origin, why)) = result.filter(|r| r["origin"].is_string()).map(faultline_shared::Origin::of_result) {
                                dt { "Origin" } dd #origin {
                                    (origin.label())
                                    @for why in &why { br; small.muted { (why) } }
                                }
                            }
                            dt { "Root cause" } dd #root-cause { (field("root_cause")) }
                            dt { "Fix" } dd { (field("fix")) }
                        }
                        @if let Some(specifics) = result.and_then(|r| serde_json::from_value::<faultline_shared::specifics::Specifics>(r["specifics"].clone()).ok()).filter(|s| !s.is_empty()) {
                            h3 { "What the log names" }
                            ul.facts { @for (label, text) in specifics.lines() { li { strong { (label) } ": " (text) } } }
                        }
                        @if let Some(parts) = result.and_then(|r| r["confidence_parts"].as_object()).filter(|p| !p.is_empty()) {
                            details.parts {
                                summary { "How sure, and why" }
                                table { @for (k, val) in parts { tr { th { (k) } td { (short_json(val)) } } } }
                            }
                        }
                    }
                }
                (excerpt_section(v.steps, &evidence))
                (trace_section(v.steps))
            }
            aside.sidecol {
                (actions(viewer, v, mine, closed, others, &draft))
                (group_section(v, others))
                (similar_section(v))
                (history_section(v.history))
                (audit_section(v.audit))
            }
        }
    };
    page("Review item", Some(viewer), "item", notice, content)
}

fn scope_box(others: usize) -> Markup {
    html! {
        @if others > 0 {
            label.scope { input type="checkbox" name="scope" value="group" class="scope-group";
                " apply to the whole group (" (others + 1) " items) (g)" }
        }
    }
}

fn actions(
    viewer: &Viewer,
    v: &ItemView<'_>,
    mine: bool,
    closed: bool,
    others: usize,
    draft: &Draft,
) -> Markup {
    let id = v.item.id;
    let may_decide = mine || (viewer.admin && !closed);
    html! {
        section.actions #actions {
            h2 { "Decide" }
            @if closed {
                p.muted { "This item is " (v.item.status.as_str()) "." }
            } @else {
                @if !mine {
                    form #claim-form method="post" action=(format!("/ui/review/{id}/claim")) {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        button type="submit" data-key="c" { "Claim (c)" }
                    }
                }
                @if may_decide {
                    form #accept-form method="post" action=(format!("/ui/review/{id}/decide")) {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        input type="hidden" name="action" value="accept";
                        (scope_box(others))
                        button type="submit" data-key="a" { "Accept (a)" }
                    }
                    form #correct-form method="post" action=(format!("/ui/review/{id}/decide")) {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        input type="hidden" name="action" value="correct";
                        label for="category" { "Category" }
                        select #category name="category" {
                            @for c in Category::ALL {
                                option value=(c.as_str()) selected[draft.category.as_deref() == Some(c.as_str())] { (c.as_str()) }
                            }
                        }
                        label for="root_cause" { "Root cause" }
                        textarea #root_cause name="root_cause" rows="3" { (draft.root_cause.as_deref().unwrap_or("")) }
                        label for="fix" { "Fix" }
                        textarea #fix name="fix" rows="2" { (draft.fix.as_deref().unwrap_or("")) }
                        label for="correct-comment" { "Comment" }
                        input #correct-comment type="text" name="comment" value=[draft.comment.as_deref()];
                        (scope_box(others))
                        button type="submit" { "Save correction (e, then Ctrl+Enter)" }
                    }
                    form #dismiss-form method="post" action=(format!("/ui/review/{id}/decide")) {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        input type="hidden" name="action" value="dismiss";
                        label for="dismiss-comment" { "Why dismiss" }
                        input #dismiss-comment type="text" name="comment" placeholder="noise, duplicate, infrastructure blip…";
                        (scope_box(others))
                        button type="submit" data-key="d" { "Dismiss (d)" }
                    }
                } @else {
                    p.muted { "Claim the item to decide on it." }
                }
            }
        }
    }
}

fn group_section(v: &ItemView<'_>, others: usize) -> Markup {
    html! {
        @if others > 0 {
            section.group {
                h2 { "Same failure: " (others + 1) " pending items" }
                ul { @for m in v.group {
                    li { @if m.id == v.item.id { strong { "this item" } } @else {
                        a href=(format!("/ui/review/{}", m.id)) { (job_cell(m)) } } " · " (claim_cell(m)) }
                } }
            }
        }
    }
}

fn similar_section(v: &ItemView<'_>) -> Markup {
    html! {
        @if !v.resolutions.is_empty() {
            section.resolutions {
                h2 { "Earlier human resolutions" }
                ul { @for r in v.resolutions {
                    li { (category_badge(Some(r.category.0.as_str()))) " " (r.root_cause)
                        span.muted { " — " (r.resolved_by) ", " (r.resolved_at.format("%Y-%m-%d")) @if r.accepted { " (accepted)" } @else { " (corrected)" } } }
                } }
            }
        }
        @if !v.similar.is_empty() {
            section.similar {
                h2 { "Similar past failures" }
                ul { @for m in v.similar {
                    li { a href=(format!("/ui/analyses/{}", m.run_id)) { (category_badge(m.category.as_ref().map(|c| c.0.as_str()))) }
                        " " (m.root_cause.as_deref().unwrap_or("—"))
                        span.muted { " · " (m.source) @if m.human_confirmed { " · confirmed by a reviewer" } } }
                } }
            }
        }
    }
}

fn history_section(h: Option<&History>) -> Markup {
    html! {
        @if let Some(h) = h {
            section.history {
                h2 { "This job's failure history" }
                p { (h.failures) " failures, " (h.passes) " passes"
                    @if h.consecutive_failures > 0 { ", failing " (h.consecutive_failures) " times in a row" }
                    @if h.flaky { " · " strong { "flaky" } " (passed and failed on the same commit)" } }
                @if !h.recent.is_empty() {
                    ol.recent { @for o in &h.recent {
                        li.outcome data-outcome=(o.outcome) title=(format!("{} {}", o.at.format("%Y-%m-%d %H:%M"), o.commit_sha.as_deref().unwrap_or(""))) { (o.outcome) }
                    } }
                }
            }
        }
    }
}

fn audit_section(audit: &[AuditRow]) -> Markup {
    html! {
        section.audit #audit {
            h2 { "Audit" }
            @if audit.is_empty() { p.muted { "No action yet." } }
            ol { @for a in audit { li { (audit_entry(a)) } } }
        }
    }
}

pub fn audit_entry(a: &AuditRow) -> Markup {
    let resolution = &a.after["resolution"];
    html! {
        div.entry {
            time datetime=(a.at.to_rfc3339()) { (a.at.format("%Y-%m-%d %H:%M:%S UTC")) }
            " " strong { (a.actor) } " " (a.action)
            @if resolution["action"].is_string() { " (" (resolution["action"].as_str().unwrap_or("")) ")" }
            " via " (a.via)
            @if let Some(c) = &a.comment { blockquote { (c) } }
            @if resolution["action"] == "correct" {
                (answer_diff(&resolution["agent"], resolution))
            }
        }
    }
}

/// The agent's answer against the human's, field by field, words marked.
fn answer_diff(agent: &Value, human: &Value) -> Markup {
    html! {
        table.diff {
            thead { tr { th {} th { "agent" } th { "reviewer" } } }
            tbody {
                @for f in ["category", "root_cause", "fix"] {
                    @let before = agent[f].as_str().unwrap_or("");
                    @let after = human[f].as_str().unwrap_or("");
                    tr.changed[before != after] {
                        th { (f.replace('_', " ")) }
                        @if before == after {
                            td colspan="2" { (before) }
                        } @else {
                            td.before { (word_diff(before, after, false)) }
                            td.after { (word_diff(before, after, true)) }
                        }
                    }
                }
            }
        }
    }
}

/// `before` with removed words in `<del>` (or `after` with added words in
/// `<ins>`), by a word-level diff.
fn word_diff(before: &str, after: &str, show_after: bool) -> Markup {
    use similar::{ChangeTag, TextDiff};
    let diff = TextDiff::from_words(before, after);
    html! {
        @for change in diff.iter_all_changes() {
            @match (change.tag(), show_after) {
                (ChangeTag::Equal, _) => (change.value()),
                (ChangeTag::Delete, false) => del { (change.value()) },
                (ChangeTag::Insert, true) => ins { (change.value()) },
                _ => {},
            }
        }
    }
}

/// The log excerpt(s) the run read, numbered, cited lines highlighted.
fn excerpt_section(steps: &[StepRow], evidence: &[Evidence]) -> Markup {
    let excerpts: Vec<(i32, LogExcerpt)> = steps
        .iter()
        .filter(|s| s.action == "log_excerpt")
        .filter_map(|s| {
            Some((
                s.iteration,
                serde_json::from_value(s.observation.clone()).ok()?,
            ))
        })
        .collect();
    html! {
        section.evidence {
            h2 { "Log excerpt" }
            @if excerpts.is_empty() { p.muted { "The run read no excerpt of the log." } }
            @for (iteration, ex) in &excerpts {
                p.muted { "Read at iteration " (iteration) ": " (ex.lines.len()) " of " (ex.total_lines) " lines ("
                    (serde_json::to_value(ex.mode).ok().and_then(|m| m.as_str().map(str::to_string)).unwrap_or_default()) "). Highlighted: lines the answer cites as evidence." }
                div.log role="region" aria-label="log excerpt" {
                    @for line in &ex.lines {
                        @let cited = is_cited(*iteration, &line.text, evidence);
                        div.line.cited[cited] data-n=(line.n) {
                            span.ln { (line.n) }
                            span.text { (line.text) }
                        }
                    }
                }
            }
        }
    }
}

/// True when an evidence quote of `iteration` covers this line (a quote may
/// span several lines, each is matched on its own).
fn is_cited(iteration: i32, line: &str, evidence: &[Evidence]) -> bool {
    let line = line.trim();
    if line.is_empty() {
        return false;
    }
    evidence
        .iter()
        .filter(|e| e.iteration == iteration)
        .flat_map(|e| e.quote.lines())
        .map(str::trim)
        .filter(|q| q.len() >= 4)
        .any(|q| line.contains(q) || q.contains(line))
}

/// Each iteration: thought, tool, arguments, observation, time and tokens.
pub fn trace_section(steps: &[StepRow]) -> Markup {
    html! {
        section.trace #trace {
            h2 { "Trace" }
            @if steps.is_empty() { p.muted { "No iteration committed yet." } }
            ol.steps {
                @for s in steps { li data-iteration=(s.iteration) { (step(s)) } }
            }
        }
    }
}

pub fn step(s: &StepRow) -> Markup {
    html! {
        details {
            summary {
                span.it { "#" (s.iteration) } " " strong { (s.action) }
                span.muted { " · " (s.reasoner) " · " (s.step_ms) " ms"
                    @if s.tokens_in + s.tokens_out > 0 { " · " (s.tokens_in) "+" (s.tokens_out) " tokens" } }
            }
            @if !s.thought.is_empty() { p.thought { (s.thought) } }
            h4 { "Arguments" }
            pre { (clip(&pretty(&s.action_input), 4000)) }
            h4 { "Observation" }
            pre { (clip(&pretty(&s.observation), 12_000)) }
        }
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn short_json(v: &Value) -> String {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(|f| format!("{f:.3}"))
            .unwrap_or_else(|| n.to_string()),
        Value::String(s) => s.clone(),
        other => clip(&other.to_string(), 300),
    }
}

/// `s` cut to at most `max` bytes at a word boundary, with "…" when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = s[..end].rfind(' ').filter(|&i| i > max / 2).unwrap_or(end);
    format!("{}…", s[..cut].trim_end())
}

/// `s` cut to at most `max` bytes (at a character boundary), marked when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &s[..end], s.len() - end)
}

/// The audit page of one item.
pub fn audit_page(viewer: &Viewer, item: &ReviewRow, audit: &[AuditRow]) -> Markup {
    page(
        "Audit",
        Some(viewer),
        "audit",
        None,
        html! {
            nav.pager { a href=(format!("/ui/review/{}", item.id)) { "← the item" } }
            h1 { "Audit of " (job_cell(item)) }
            (audit_section(audit))
        },
    )
}

/// The list of recent analyses.
pub fn analyses(
    viewer: &Viewer,
    runs: &[faultline_shared::storage::console::RunSummary],
    status: Option<&str>,
    page_no: i64,
    more: bool,
    rates: &[faultline_shared::storage::feedback::Rate],
) -> Markup {
    let statuses = [
        "",
        "queued",
        "running",
        "retry_wait",
        "completed",
        "needs_review",
        "failed",
    ];
    let link = |p: i64| match status {
        Some(s) => format!("/ui/analyses?status={s}&page={p}"),
        None => format!("/ui/analyses?page={p}"),
    };
    page(
        "Analyses",
        Some(viewer),
        "analyses",
        None,
        html! {
            div.titlebar { h1 { "Analyses" } }
            form.filters method="get" action="/ui/analyses" {
                label { "Status "
                    select name="status" {
                        @for s in statuses {
                            option value=(s) selected[status.unwrap_or("") == s] { (if s.is_empty() { "any" } else { s }) }
                        }
                    }
                }
                button type="submit" { "Filter" }
            }
            table #analyses.queue {
                thead { tr {
                    th { "Started" } th { "Status" } th { "Category" } th { "Confidence" } th { "Job · build" }
                    th { "Repository" } th { "Reasoner" } th { "Iterations" } th { "Duration" } th { "Tokens" } th { "Cost" }
                } }
                tbody {
                    @for r in runs {
                        tr.row tabindex="0" data-href=(format!("/ui/analyses/{}", r.id)) data-id=(r.id) {
                            td { time datetime=(r.created_at.to_rfc3339()) { (r.created_at.format("%Y-%m-%d %H:%M:%S")) } }
                            td { span.runstatus data-status=(r.status.as_str()) { (r.status.as_str()) } }
                            td { (category_badge(r.category.as_ref().map(|c| c.0.as_str()))) }
                            td { (confidence(r.confidence)) }
                            td { a href=(format!("/ui/analyses/{}", r.id)) {
                                (r.job_name.as_deref().or(r.log_name.as_deref()).unwrap_or("—"))
                                @if let Some(b) = &r.build_number { " #" (b) } } }
                            td { (r.repository.as_deref().unwrap_or("—")) }
                            td { (r.reasoner) }
                            td { (r.iteration) }
                            td { @if let Some(f) = r.finished_at { (duration_ms((f - r.created_at).num_milliseconds())) } @else { "—" } }
                            td { (r.tokens_in + r.tokens_out) }
                            td { (format!("${:.4}", r.cost_usd)) }
                        }
                    }
                }
            }
            @if runs.is_empty() { p.empty { "No analyses." } }
            nav.pager {
                @if page_no > 1 { a rel="prev" href=(link(page_no - 1)) { "← newer" } }
                span { "page " (page_no) }
                @if more { a rel="next" href=(link(page_no + 1)) { "older →" } }
            }
            (feedback_rates(rates, faultline_shared::metrics::FEEDBACK_WINDOW_DAYS))
        },
    )
}

fn duration_ms(ms: i64) -> String {
    match ms {
        m if m < 1000 => format!("{m} ms"),
        m if m < 60_000 => format!("{:.1} s", m as f64 / 1000.0),
        m => human_age(m / 1000),
    }
}

/// One analysis: status, answer, excerpt, and its trace, which grows live
/// while the run goes on.
pub fn analysis(
    viewer: &Viewer,
    run: &RunRow,
    event: Option<&faultline_shared::storage::events::EventRow>,
    steps: &[StepRow],
    review: Option<&ReviewRow>,
    feedback: &Feedback,
) -> Markup {
    let result = run.result.as_ref();
    let evidence: Vec<Evidence> = result
        .and_then(|r| serde_json::from_value(r["evidence"].clone()).ok())
        .unwrap_or_default();
    let text = |name: &str| {
        result
            .and_then(|r| r[name].as_str())
            .unwrap_or("")
            .to_string()
    };
    page(
        "Analysis",
        Some(viewer),
        "analysis",
        None,
        html! {
            nav.pager { a href="/ui/analyses" { "↑ Analyses" } }
            div.titlebar {
                h1 { (category_badge(run.category.as_ref().map(|c| c.0.as_str()))) " "
                    (event.and_then(|e| e.job_name.as_deref().or(e.log_name.as_deref())).unwrap_or("analysis"))
                    @if let Some(b) = event.and_then(|e| e.build_number.as_deref()) { " #" (b) } }
            }
            div #run-status.status data-status=(run.status.as_str()) data-run=(run.id) data-last=(steps.last().map_or(0, |s| s.iteration)) {
                "Status: " strong #run-state { (run.status.as_str()) }
                " · " (run.reasoner) " · iteration " (run.iteration) " of at most " (run.max_iterations)
                " · " (run.tokens_in + run.tokens_out) " tokens · " (format!("${:.4}", run.cost_usd))
                @if let Some(f) = run.finished_at { " · took " (duration_ms((f - run.created_at).num_milliseconds())) }
                @if let Some(item) = review { " · " a href=(format!("/ui/review/{}", item.id)) { "review item (" (item.status.as_str()) ")" } }
                @if let Some(reason) = &run.failure_reason { " · failed: " (reason) }
            }
            div.columns {
                div.maincol {
                    @if result.is_some() {
                        section.answer {
                            h2 { "Answer" }
                            dl {
                                dt { "Category" } dd { (category_badge(Some(&text("category")))) " at " (confidence(run.confidence)) }
                                dt { "Root cause" } dd { (text("root_cause")) }
                                dt { "Fix" } dd { (text("fix")) }
                            }
                        }
                        p { a #pr-comment-link href=(format!("/ui/analyses/{}/pr-comment", run.id)) { "The pull-request comment that shows it →" } }
                        (feedback_section(viewer, run.id, feedback))
                    }
                    (excerpt_section(steps, &evidence))
                }
                aside.sidecol {
                    (trace_section(steps))
                }
            }
        },
    )
}

/// The pull-request comment of an analysis as GitHub shows it (`comment`
/// is sanitised HTML, [`super::markdown::github_html`]).
pub fn pr_comment(viewer: &Viewer, run: &RunRow, comment: &str) -> Markup {
    page(
        "Pull-request comment",
        Some(viewer),
        "analysis",
        None,
        html! {
            nav.pager { a href=(format!("/ui/analyses/{}", run.id)) { "↑ Analysis" } }
            div.titlebar { h1 { "Pull-request comment" } }
            p.muted { "As GitHub shows it on the pull request (NOTIFY_GITHUB_PR_COMMENTS): every analysed job of the commit, grouped by failure." }
            article #pr-comment.markdown-body { (PreEscaped(comment)) }
        },
    )
}

/// What was said of one analysis: every vote (👍 / 👎 on pull-request
/// comments and the console's buttons), and the viewer's own.
#[derive(Debug, Clone, Default)]
pub struct Feedback {
    pub helpful: i64,
    pub not_helpful: i64,
    pub mine: Option<bool>,
}

fn feedback_section(viewer: &Viewer, run: uuid::Uuid, f: &Feedback) -> Markup {
    let action = format!("/ui/analyses/{run}/feedback");
    html! {
        section #feedback.feedback {
            h2 { "Was this analysis helpful?" }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(viewer.csrf);
                button type="submit" name="helpful" value="yes" aria-pressed=(f.mine == Some(true)) { "Helpful" }
                " "
                button type="submit" name="helpful" value="no" aria-pressed=(f.mine == Some(false)) { "Not helpful" }
            }
            p.muted #feedback-counts {
                (plural(f.helpful, "helpful vote")) " · " (plural(f.not_helpful, "not-helpful vote"))
                @if let Some(mine) = f.mine { " · yours: " (if mine { "helpful" } else { "not helpful" }) }
            }
        }
    }
}

/// Feedback on analyses by category and origin (the window's votes).
pub fn feedback_rates(rates: &[faultline_shared::storage::feedback::Rate], days: i32) -> Markup {
    html! {
        section #feedback-rates {
            h2 { "Feedback, last " (days) " days" }
            @if rates.is_empty() {
                p.empty { "No feedback yet: 👍 / 👎 on pull-request comments and the buttons on each analysis count here." }
            } @else {
                table.queue {
                    thead { tr { th { "Category" } th { "Origin" } th { "Helpful" } th { "Not helpful" } th { "Not-helpful rate" } } }
                    tbody {
                        @for r in rates {
                            tr {
                                td { (category_badge(Some(&r.category))) }
                                td { (r.origin) }
                                td.num { (r.helpful) }
                                td.num { (r.not_helpful) }
                                td.num { (format!("{:.0} %", r.not_helpful_rate() * 100.0)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Failure groups: fingerprints with their runs, verdict and a 14-day sparkline.
pub fn groups(
    viewer: &Viewer,
    groups: &[faultline_shared::storage::console::FailureGroup],
    days: i32,
) -> Markup {
    page(
        "Failure groups",
        Some(viewer),
        "groups",
        None,
        html! {
            div.titlebar { h1 { "Failure groups" } span.count { "fingerprints seen in the last " (days) " days" } }
            table #groups.queue {
                thead { tr {
                    th { "Last seen" } th { "First seen" } th { "Runs" } th { "Last 14 days" } th { "Verdict" }
                    th { "Root cause" } th { "Jobs" } th { "Pending review" }
                } }
                tbody {
                    @for g in groups {
                        @let human = g.human_category.is_some();
                        tr.row tabindex="0" data-href=(format!("/ui/analyses/{}", g.latest_run)) {
                            td.when { (g.last_seen.format("%Y-%m-%d %H:%M")) }
                            td.when { (g.first_seen.format("%Y-%m-%d %H:%M")) }
                            td.num { (g.runs) }
                            td { (sparkline(&g.daily)) }
                            td {
                                (category_badge(g.human_category.as_ref().or(g.agent_category.as_ref()).map(|c| c.0.as_str())))
                                @if human { " " span.muted title="confirmed or corrected by a reviewer" { "✔ reviewer" } } @else { " " span.muted { "agent" } }
                            }
                            td { (g.human_root_cause.as_deref().or(g.agent_root_cause.as_deref()).map(|s| shorten(s, 160)).unwrap_or_default()) }
                            td { (g.jobs.join(", ")) }
                            td.num { (g.pending) }
                        }
                    }
                }
            }
            @if groups.is_empty() { p.empty { "No failure groups yet." } }
        },
    )
}

/// 14 bars, one per day, scaled to the busiest day (inline SVG).
pub fn sparkline(daily: &[i64]) -> Markup {
    let max = daily.iter().copied().max().unwrap_or(0).max(1) as f64;
    let (w, h) = (6.0, 22.0);
    let total: i64 = daily.iter().sum();
    html! {
        svg.spark width=(daily.len() as f64 * (w + 1.0)) height=(h) viewBox=(format!("0 0 {} {h}", daily.len() as f64 * (w + 1.0)))
            role="img" aria-label=(format!("{} in the last {} days", plural(total, "run"), daily.len())) {
            title { (format!("{} in the last {} days (per day: {})", plural(total, "run"), daily.len(),
                daily.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "))) }
            @for (i, n) in daily.iter().enumerate() {
                @let bh = if *n == 0 { 1.0 } else { (*n as f64 / max * (h - 2.0)).max(2.0) };
                rect x=(i as f64 * (w + 1.0)) y=(h - bh) width=(w) height=(bh) class=(if *n == 0 { "zero" } else { "bar" }) {}
            }
        }
    }
}
