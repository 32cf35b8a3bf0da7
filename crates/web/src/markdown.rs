//! Markdown for descriptions and comments. Raw HTML in the source is shown
//! as text, never rendered: comments come from agents.

use maud::{Markup, PreEscaped};
use pulldown_cmark::{html, Event, Options, Parser};

pub fn render(source: &str) -> Markup {
    let parser = Parser::new_ext(
        source,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS,
    )
    .map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    html::push_html(&mut out, parser);
    PreEscaped(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_html_is_escaped() {
        let out = render("**bold** <script>alert(1)</script>\n\n- a\n- b").0;
        assert!(out.contains("<strong>bold</strong>"));
        assert!(out.contains("&lt;script&gt;"));
        assert!(!out.contains("<script>"));
        assert!(out.contains("<li>a</li>"));
    }
}
