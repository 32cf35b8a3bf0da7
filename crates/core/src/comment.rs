//! What a comment carries beyond its body, as the original has it: how the
//! board's thread presents it (`presentation`), structured detail beside the
//! prose (`metadata`), who deleted it, and which agent's run a board-written
//! comment came from (`derivedAuthor*`).
//!
//! The shapes are checked as the original checks them (its zod schemas):
//! unknown keys and values are refused, text is trimmed and bounded, ids are
//! UUIDs. A refusal names the field (`["metadata", "sections", 0, "rows",
//! 1, "agentId"]`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::decision::uuid_like;
use crate::stored::stored_words;

stored_words!(
    PresentationKind,
    "comment presentation kind",
    [Message = "message", SystemNotice = "system_notice",]
);
stored_words!(
    PresentationTone,
    "comment presentation tone",
    [
        Neutral = "neutral",
        Info = "info",
        Success = "success",
        Warning = "warning",
        Danger = "danger",
    ]
);
stored_words!(
    PresentationDensity,
    "comment presentation density",
    [Compact = "compact"]
);
stored_words!(
    CommentActorType,
    "comment actor type",
    [User = "user", Agent = "agent", System = "system",]
);
// The original has a second source, `run_log_comment_post` (a run's log
// recording that it posted the comment). It needs an agent posting as the
// board from inside its run; here the board is refused inside a run (the
// guard's local-peer check), so only the run id can attribute a comment.
stored_words!(
    DerivedAuthorSource,
    "comment derived author source",
    [RunId = "run_id"]
);

/// The original's defaults for an unsaid kind and tone.
fn message() -> PresentationKind {
    PresentationKind::Message
}

fn neutral() -> PresentationTone {
    PresentationTone::Neutral
}

impl From<crate::actor::ActorKind> for CommentActorType {
    fn from(kind: crate::actor::ActorKind) -> Self {
        match kind {
            crate::actor::ActorKind::User => CommentActorType::User,
            crate::actor::ActorKind::Agent => CommentActorType::Agent,
            crate::actor::ActorKind::System => CommentActorType::System,
        }
    }
}

/// How the thread shows a comment: a message or a system notice, its tone,
/// a title, whether its metadata starts unfolded, and a compact density.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Presentation {
    #[serde(default = "message")]
    pub kind: PresentationKind,
    #[serde(default = "neutral")]
    pub tone: PresentationTone,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub details_default_open: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub density: Option<PresentationDensity>,
}

/// The one channel the original names as a comment's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SourceChannel {
    #[serde(rename = "imessage-photon")]
    ImessagePhoton,
}

/// Structured detail shown beside a comment: titled sections of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommentMetadata {
    /// Always 1 (the original's only version).
    pub version: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_channel: Option<SourceChannel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_reason: Option<String>,
    pub sections: Vec<MetadataSection>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetadataSection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub rows: Vec<MetadataRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MetadataRow {
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        text: String,
    },
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        code: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
    },
    KeyValue {
        label: String,
        value: String,
    },
    IssueLink {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, rename = "issueId", skip_serializing_if = "Option::is_none")]
        issue_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identifier: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    AgentLink {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(rename = "agentId")]
        agent_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    RunLink {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(rename = "runId")]
        run_id: String,
        #[serde(default, rename = "agentId", skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

/// The most a comment's metadata (or presentation) may take as JSON. The
/// original bounds each part (20 sections of 50 rows, 4000 characters of
/// code a row); this bounds the whole, as our other stored JSON is.
pub const STRUCTURED_MAX_BYTES: usize = 64 * 1024;

/// Why a presentation or metadata was refused, in zod's issue shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeIssue {
    pub code: &'static str,
    pub path: Vec<Value>,
    pub message: String,
}

impl ShapeIssue {
    pub fn to_json(&self) -> Value {
        json!({ "code": self.code, "path": self.path, "message": self.message })
    }
}

fn at(base: &[Value], more: &[Value]) -> Vec<Value> {
    base.iter().chain(more).cloned().collect()
}

/// Trims `value` and holds it to `min..=max` characters.
fn bounded(path: Vec<Value>, value: &mut String, max: usize, trim: bool) -> Result<(), ShapeIssue> {
    if trim {
        let trimmed = value.trim();
        if trimmed.len() != value.len() {
            *value = trimmed.to_string();
        }
    }
    if value.is_empty() {
        return Err(ShapeIssue {
            code: "too_small",
            path,
            message: "Must not be empty".into(),
        });
    }
    if value.chars().take(max + 1).count() > max {
        return Err(ShapeIssue {
            code: "too_big",
            path,
            message: format!("Must be at most {max} characters"),
        });
    }
    Ok(())
}

fn opt_bounded(path: Vec<Value>, value: &mut Option<String>, max: usize) -> Result<(), ShapeIssue> {
    value
        .as_mut()
        .map_or(Ok(()), |v| bounded(path, v, max, true))
}

fn uuid(path: Vec<Value>, value: &str) -> Result<(), ShapeIssue> {
    match uuid_like(value) {
        Some(_) => Ok(()),
        None => Err(ShapeIssue {
            code: "invalid_string",
            path,
            message: "Must be a UUID".into(),
        }),
    }
}

fn count(path: Vec<Value>, len: usize, max: usize, what: &str) -> Result<(), ShapeIssue> {
    if len == 0 {
        return Err(ShapeIssue {
            code: "too_small",
            path,
            message: format!("At least one {what}"),
        });
    }
    if len > max {
        return Err(ShapeIssue {
            code: "too_big",
            path,
            message: format!("At most {max} {what}s"),
        });
    }
    Ok(())
}

fn whole_size(field: &str, value: &impl Serialize) -> Result<(), ShapeIssue> {
    let bytes = serde_json::to_string(value).map_or(0, |s| s.len());
    if bytes > STRUCTURED_MAX_BYTES {
        return Err(ShapeIssue {
            code: "too_big",
            path: vec![json!(field)],
            message: format!("{field} must be at most {STRUCTURED_MAX_BYTES} bytes as JSON"),
        });
    }
    Ok(())
}

impl Presentation {
    /// The original's rules, trimming the title as it does.
    pub fn normalize(&mut self) -> Result<(), ShapeIssue> {
        opt_bounded(
            vec![json!("presentation"), json!("title")],
            &mut self.title,
            160,
        )?;
        whole_size("presentation", &*self)
    }
}

impl CommentMetadata {
    /// The original's rules, trimming text as it does.
    pub fn normalize(&mut self) -> Result<(), ShapeIssue> {
        let base = [json!("metadata")];
        if self.version != 1 {
            return Err(ShapeIssue {
                code: "invalid_literal",
                path: at(&base, &[json!("version")]),
                message: "version must be 1".into(),
            });
        }
        if let Some(run) = &self.source_run_id {
            uuid(at(&base, &[json!("sourceRunId")]), run)?;
        }
        opt_bounded(
            at(&base, &[json!("authorizationReason")]),
            &mut self.authorization_reason,
            160,
        )?;
        count(
            at(&base, &[json!("sections")]),
            self.sections.len(),
            20,
            "section",
        )?;
        for (i, section) in self.sections.iter_mut().enumerate() {
            let s = at(&base, &[json!("sections"), json!(i)]);
            opt_bounded(at(&s, &[json!("title")]), &mut section.title, 160)?;
            count(at(&s, &[json!("rows")]), section.rows.len(), 50, "row")?;
            for (j, row) in section.rows.iter_mut().enumerate() {
                row.normalize(at(&s, &[json!("rows"), json!(j)]))?;
            }
        }
        whole_size("metadata", &*self)
    }
}

impl MetadataRow {
    fn normalize(&mut self, r: Vec<Value>) -> Result<(), ShapeIssue> {
        let f = |name: &str| at(&r, &[json!(name)]);
        match self {
            MetadataRow::Text { label, text } => {
                opt_bounded(f("label"), label, 120)?;
                bounded(f("text"), text, 2000, true)
            }
            MetadataRow::Code {
                label,
                code,
                language,
            } => {
                opt_bounded(f("label"), label, 120)?;
                // Code keeps its whitespace: indentation is meaning.
                bounded(f("code"), code, 4000, false)?;
                opt_bounded(f("language"), language, 40)
            }
            MetadataRow::KeyValue { label, value } => {
                bounded(f("label"), label, 120, true)?;
                bounded(f("value"), value, 2000, true)
            }
            MetadataRow::IssueLink {
                label,
                issue_id,
                identifier,
                title,
            } => {
                opt_bounded(f("label"), label, 120)?;
                if let Some(id) = issue_id {
                    uuid(f("issueId"), id.as_str())?;
                }
                opt_bounded(f("identifier"), identifier, 80)?;
                opt_bounded(f("title"), title, 240)?;
                if issue_id.is_none() && identifier.is_none() {
                    return Err(ShapeIssue {
                        code: "custom",
                        path: f("issueId"),
                        message: "Issue link rows require issueId or identifier".into(),
                    });
                }
                Ok(())
            }
            MetadataRow::AgentLink {
                label,
                agent_id,
                name,
            } => {
                opt_bounded(f("label"), label, 120)?;
                uuid(f("agentId"), agent_id.as_str())?;
                opt_bounded(f("name"), name, 160)
            }
            MetadataRow::RunLink {
                label,
                run_id,
                agent_id,
                title,
            } => {
                opt_bounded(f("label"), label, 120)?;
                uuid(f("runId"), run_id.as_str())?;
                if let Some(a) = agent_id {
                    uuid(f("agentId"), a.as_str())?;
                }
                opt_bounded(f("title"), title, 160)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(v: Value) -> Result<CommentMetadata, String> {
        let mut m: CommentMetadata = serde_json::from_value(v).map_err(|e| e.to_string())?;
        m.normalize().map_err(|i| format!("{:?}", i.path))?;
        Ok(m)
    }

    #[test]
    fn a_presentation_takes_the_originals_defaults_and_trims_its_title() {
        let mut p: Presentation =
            serde_json::from_value(json!({ "title": "  Heads up " })).unwrap();
        p.normalize().unwrap();
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({ "kind": "message", "tone": "neutral", "title": "Heads up", "detailsDefaultOpen": false })
        );
        let mut blank: Presentation = serde_json::from_value(json!({ "title": "   " })).unwrap();
        assert_eq!(
            blank.normalize().unwrap_err().path,
            [json!("presentation"), json!("title")]
        );
        assert!(serde_json::from_value::<Presentation>(json!({ "tone": "loud" })).is_err());
        assert!(serde_json::from_value::<Presentation>(json!({ "color": "red" })).is_err());
    }

    #[test]
    fn metadata_rows_are_checked_where_they_are() {
        let ok = metadata(
            json!({ "version": 1, "sections": [{ "title": " Why ", "rows": [
                { "type": "key_value", "label": "Reason", "value": " budget " },
                { "type": "code", "code": "  indented", "language": "rust" },
            ]}]}),
        )
        .unwrap();
        assert_eq!(ok.sections[0].title.as_deref(), Some("Why"));
        assert_eq!(
            ok.sections[0].rows[1],
            MetadataRow::Code {
                label: None,
                code: "  indented".into(),
                language: Some("rust".into())
            }
        );
        let bad_id = metadata(json!({ "version": 1, "sections": [{ "rows": [
            { "type": "text", "text": "fine" },
            { "type": "agent_link", "agentId": "not-a-uuid" },
        ]}]}));
        assert_eq!(
            bad_id.unwrap_err(),
            r#"[String("metadata"), String("sections"), Number(0), String("rows"), Number(1), String("agentId")]"#
        );
        let link =
            metadata(json!({ "version": 1, "sections": [{ "rows": [{ "type": "issue_link" }] }] }));
        assert!(link.unwrap_err().contains("issueId"));
        assert!(metadata(
            json!({ "version": 2, "sections": [{ "rows": [{ "type": "text", "text": "x" }] }] })
        )
        .unwrap_err()
        .contains("version"));
        assert!(metadata(json!({ "version": 1, "sections": [] }))
            .unwrap_err()
            .contains("sections"));
        assert!(
            metadata(json!({ "version": 1, "sections": [{ "rows": [{ "type": "chart" }] }] }))
                .is_err()
        );
        assert!(metadata(json!({ "version": 1, "extra": 1, "sections": [{ "rows": [{ "type": "text", "text": "x" }] }] })).is_err());
    }

    #[test]
    fn metadata_past_its_size_is_refused_as_a_whole() {
        let row = json!({ "type": "code", "code": "x".repeat(4000) });
        let sections: Vec<Value> = (0..20)
            .map(|_| json!({ "rows": vec![row.clone(); 2] }))
            .collect();
        let err = metadata(json!({ "version": 1, "sections": sections })).unwrap_err();
        assert_eq!(err, r#"[String("metadata")]"#);
    }
}
