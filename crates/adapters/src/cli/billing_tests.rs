//! Who pays for a CLI run, from its environment: upstream's rules per CLI.

use std::collections::BTreeMap;

use paperclip_core::billing::BillingType::{self, *};
use serde_json::json;

use super::{claude::Claude, codex::Codex, gemini::Gemini, opencode::OpenCode, CliKind};
use crate::Outcome;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn of(kind: &impl CliKind, pairs: &[(&str, &str)]) -> BillingType {
    kind.billing_type(&env(pairs))
}

#[test]
fn an_api_key_is_metered_and_a_login_is_a_subscription() {
    assert_eq!(of(&Claude, &[("ANTHROPIC_API_KEY", "sk-ant")]), MeteredApi);
    assert_eq!(
        of(&Claude, &[("CLAUDE_CODE_OAUTH_TOKEN", "t")]),
        SubscriptionIncluded
    );
    assert_eq!(of(&Claude, &[]), SubscriptionIncluded);
    // A blank key is no key, as upstream reads it.
    assert_eq!(
        of(&Claude, &[("ANTHROPIC_API_KEY", "  ")]),
        SubscriptionIncluded
    );
    // Bedrock bills through AWS, with or without an Anthropic key.
    assert_eq!(of(&Claude, &[("CLAUDE_CODE_USE_BEDROCK", "1")]), MeteredApi);
    assert_eq!(
        of(&Claude, &[("CLAUDE_CODE_USE_BEDROCK", "0")]),
        SubscriptionIncluded
    );
    assert_eq!(
        of(&Claude, &[("ANTHROPIC_BEDROCK_BASE_URL", "https://b")]),
        MeteredApi
    );

    assert_eq!(of(&Codex, &[("OPENAI_API_KEY", "sk")]), MeteredApi);
    assert_eq!(of(&Codex, &[("OPENAI_API_KEY", "")]), SubscriptionIncluded);
    assert_eq!(
        of(&Codex, &[("ANTHROPIC_API_KEY", "sk")]),
        SubscriptionIncluded
    );

    assert_eq!(of(&Gemini, &[("GEMINI_API_KEY", "g")]), MeteredApi);
    assert_eq!(of(&Gemini, &[("GOOGLE_API_KEY", "g")]), MeteredApi);
    assert_eq!(of(&Gemini, &[]), SubscriptionIncluded);

    // OpenCode reaches many providers: upstream records no billing type.
    assert_eq!(of(&OpenCode, &[("OPENAI_API_KEY", "sk")]), Unknown);
}

#[test]
fn the_billing_type_is_stamped_on_usage_only() {
    let mut out = Outcome::succeeded();
    super::stamp_billing(&mut out, MeteredApi);
    assert!(out.usage.is_none(), "no usage, nothing to bill");
    out.usage = Some(json!({ "provider": "anthropic", "inputTokens": 3 }));
    super::stamp_billing(&mut out, SubscriptionIncluded);
    assert_eq!(out.usage.unwrap()["billingType"], "subscription_included");
}
