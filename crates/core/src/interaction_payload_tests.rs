//! Unit tests of [`super::normalize`]: defaults, limits and rules.

use super::*;

#[test]
fn defaults_are_filled_and_unknown_keys_dropped() {
    let out = normalize(
        InteractionKind::RequestConfirmation,
        &json!({ "prompt": "Ship it?", "colour": "red" }),
    )
    .unwrap();
    assert_eq!(out["version"], 1);
    assert_eq!(out["allowDeclineReason"], true);
    assert_eq!(out["supersedeOnUserComment"], true);
    assert!(out.get("colour").is_none());
}

#[test]
fn limits_and_rules_are_refused_with_their_path() {
    let long = "x".repeat(1001);
    let e = normalize(
        InteractionKind::RequestConfirmation,
        &json!({ "prompt": long }),
    )
    .unwrap_err();
    assert_eq!(e.path, vec![json!("payload"), json!("prompt")]);
    let e = normalize(
        InteractionKind::RequestConfirmation,
        &json!({ "prompt": "p", "toolAction": {} }),
    )
    .unwrap_err();
    assert!(e.rule);
    let e = normalize(
        InteractionKind::AskUserQuestions,
        &json!({ "questions": [{ "id": "a", "prompt": "?", "selectionMode": "single",
            "options": [{ "id": "o", "label": "O" }, { "id": "o", "label": "P" }] }] }),
    )
    .unwrap_err();
    assert!(e.message.contains("twice"), "{e:?}");
    let e = normalize(
        InteractionKind::AskUserQuestions,
        &json!({ "questions": [] }),
    )
    .unwrap_err();
    assert!(e.message.contains("1 to 64"));
    let e = normalize(
        InteractionKind::SuggestTasks,
        &json!({ "tasks": [
            { "clientKey": "a", "parentClientKey": "b", "title": "A" },
            { "clientKey": "b", "parentClientKey": "a", "title": "B" }] }),
    )
    .unwrap_err();
    assert!(e.message.contains("cycle"));
    assert!(
        normalize(InteractionKind::ConnectionIntent, &json!({}))
            .unwrap_err()
            .rule
    );
    let e = normalize(
        InteractionKind::RequestConfirmation,
        &json!({ "prompt": "a\u{0}b" }),
    )
    .unwrap_err();
    assert!(e.message.contains("NUL"));
}

#[test]
fn a_plan_target_is_read_back() {
    let out = normalize(
        InteractionKind::RequestConfirmation,
        &json!({ "prompt": "Approve the plan?", "target": {
            "type": "issue_document", "key": "plan", "revisionId": "r1" } }),
    )
    .unwrap();
    assert_eq!(document_target(&out), Some(("plan".into(), "r1".into())));
}
