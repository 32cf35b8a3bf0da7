//! Markdown for descriptions and comments. Raw HTML in the source is shown
//! as text, never rendered, and links or images may only point at http(s),
//! mailto or relative URLs: comments come from agents.

use maud::{Markup, PreEscaped};
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

pub fn render(source: &str) -> Markup {
    let parser = Parser::new_ext(
        source,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS,
    )
    .map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    html::push_html(&mut out, parser);
    PreEscaped(out)
}

/// `javascript:`, `data:` and other schemes become a dead link.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None | Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

/// A link an agent supplied, if a person may be sent there: http(s) or a
/// path on this board. `javascript:`, `data:` and protocol-relative `//host`
/// (another site dressed as a path) are not links.
pub fn safe_link(url: &str) -> Option<&str> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let local = url.starts_with('/') && !url.starts_with("//") && !url.starts_with("/\\");
    (lower.starts_with("https://") || lower.starts_with("http://") || local).then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_and_board_links_are_links() {
        for ok in [
            "https://github.com/a/b/pull/1",
            "HTTP://x",
            "/ACM/tasks/ACM-1#document-plan",
        ] {
            assert_eq!(safe_link(ok), Some(ok));
        }
        for bad in [
            "javascript:alert(1)",
            " JavaScript:x",
            "data:text/html,x",
            "//evil.example",
            "/\\evil.example",
            "vbscript:x",
            "ACM-1",
        ] {
            assert_eq!(safe_link(bad), None, "{bad}");
        }
    }

    #[test]
    fn markdown_renders_and_html_is_escaped() {
        let out = render("**bold** <script>alert(1)</script>\n\n- a\n- b").0;
        assert!(out.contains("<strong>bold</strong>"));
        assert!(out.contains("&lt;script&gt;"));
        assert!(!out.contains("<script>"));
        assert!(out.contains("<li>a</li>"));
    }

    #[test]
    fn only_safe_link_schemes_survive() {
        let out = render("[a](javascript:alert(1)) [b](https://x.test/p) [c](/ACM/tasks/ACM-1) ![d](data:text/html,x)").0;
        assert!(!out.contains("javascript:"), "{out}");
        assert!(!out.contains("data:"), "{out}");
        assert!(out.contains(r#"href="https://x.test/p""#));
        assert!(out.contains(r#"href="/ACM/tasks/ACM-1""#));
    }
}
