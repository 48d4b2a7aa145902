//! GitHub-flavoured Markdown as the console shows it: the pull-request
//! comment Faultline posts, rendered the way GitHub renders it
//! (pulldown-cmark, GFM tables, strikethrough and alerts) and then
//! sanitised (ammonia): the comment quotes log text, so the HTML a page
//! receives holds no script, handler, style or foreign element whatever a
//! log contained. Links open outside the console.

use std::collections::HashSet;

use pulldown_cmark::{Options, Parser, html};

/// `markdown` as safe HTML.
pub fn github_html(markdown: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    options.insert(Options::ENABLE_GFM);
    let mut raw = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut raw, Parser::new_ext(markdown, options));
    ammonia::Builder::default()
        .add_tags(["details", "summary"])
        .add_generic_attributes(["open"].iter().copied().collect::<HashSet<_>>())
        .add_allowed_classes("blockquote", ["markdown-alert", "markdown-alert-note"])
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&raw)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_code_and_links_render_as_github_shows_them() {
        let md = "<!-- faultline:pr-comment -->\n### Faultline: 2 failed jobs on abc1234\n\n\
                  <details><summary><b>this change</b> · CODE_ERROR · <code>build</code>: rustc E0308</summary>\n\n\
                  **Jobs:** `build`\n\n**Open:** [src/lib.rs:12](https://github.com/o/r/blob/abc/src/lib.rs#L12)\n\n</details>\n";
        let out = github_html(md);
        assert!(
            out.contains("<h3>Faultline: 2 failed jobs on abc1234</h3>"),
            "{out}"
        );
        assert!(
            out.contains("<details><summary><b>this change</b>"),
            "{out}"
        );
        assert!(
            out.contains("<strong>Jobs:</strong> <code>build</code>"),
            "{out}"
        );
        assert!(
            out.contains(r#"<a href="https://github.com/o/r/blob/abc/src/lib.rs#L12" rel="noopener noreferrer nofollow">"#),
            "{out}"
        );
        // The hidden marker is not shown.
        assert!(!out.contains("faultline:pr-comment"), "{out}");
    }

    #[test]
    fn html_a_log_smuggled_past_the_escaping_is_removed() {
        // The comment escapes log text; were a line to slip through, the
        // page still runs and loads nothing of it.
        let out = github_html(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n\
             <a href=\"javascript:alert(1)\">x</a> <iframe src=\"https://example.com\"></iframe>\n\n\
             <details open onclick=\"alert(1)\"><summary style=\"color:red\">s</summary>t</details>",
        );
        for banned in [
            "<script",
            "onerror",
            "javascript:",
            "<iframe",
            "onclick",
            "style=",
        ] {
            assert!(!out.contains(banned), "{banned} in {out}");
        }
        assert!(out.contains("<details open"), "{out}");
    }
}
