//! A company's rules over its agents' interaction cards and its feedback
//! data-sharing consent, as upstream models them on the company row.
//!
//! Resolver governance: per card kind, a `defaultPolicy` for cards that ask
//! for none and a `cap`, the least restrictive policy a card may end up
//! with (a card asking `anyone` under a `human_only` cap is answered by a
//! person). Policies rank `anyone` < `not_creator` < `human_only`.
//!
//! Feedback consent: the record of a person agreeing to share feedback
//! traces. This build has no feedback traces and sends nothing anywhere;
//! only the consent record is kept, so a client of upstream can read and set
//! it truthfully (who agreed, when, to which terms).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::interaction::{InteractionKind, ResolverPolicy};

/// Upstream's current terms version, recorded when consent names none.
pub const DEFAULT_FEEDBACK_TERMS_VERSION: &str = "feedback-data-sharing-v1";

/// The rule for one kind of card. Unknown keys are refused (400).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KindGovernance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_policy: Option<ResolverPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<ResolverPolicy>,
}

/// `interactionResolverGovernance`: the kinds an agent may create, each
/// optional (`connection_intent` cards are the server's own, as upstream's
/// schema has it). Unknown kinds are refused (400); `{}` governs nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolverGovernance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest_tasks: Option<KindGovernance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask_user_questions: Option<KindGovernance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_confirmation: Option<KindGovernance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_checkbox_confirmation: Option<KindGovernance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_item_verdicts: Option<KindGovernance>,
}

impl ResolverGovernance {
    pub fn for_kind(&self, kind: InteractionKind) -> Option<KindGovernance> {
        use InteractionKind as K;
        match kind {
            K::SuggestTasks => self.suggest_tasks,
            K::AskUserQuestions => self.ask_user_questions,
            K::RequestConfirmation => self.request_confirmation,
            K::RequestCheckboxConfirmation => self.request_checkbox_confirmation,
            K::RequestItemVerdicts => self.request_item_verdicts,
            K::ConnectionIntent => None,
        }
    }
}

/// The policy a card asks for when neither it nor its company names one.
pub fn default_policy(kind: InteractionKind) -> ResolverPolicy {
    match kind {
        InteractionKind::ConnectionIntent => ResolverPolicy::HumanOnly,
        _ => ResolverPolicy::Anyone,
    }
}

fn rank(policy: ResolverPolicy) -> u8 {
    match policy {
        ResolverPolicy::Anyone => 0,
        ResolverPolicy::NotCreator => 1,
        ResolverPolicy::HumanOnly => 2,
    }
}

/// Where a card's policies came from, as upstream reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyChoice {
    /// What the card asked for, or inherited (company default, else kind default).
    pub requested: ResolverPolicy,
    /// What resolving it is held to.
    pub effective: ResolverPolicy,
    /// `explicit` when the card named a policy, else `inherited`.
    pub provenance: &'static str,
    /// `company_cap` when the company's cap made it stricter, else `requested`.
    pub source: &'static str,
}

/// A new card's policies under its company's governance.
pub fn choose_policy(
    kind: InteractionKind,
    asked: Option<ResolverPolicy>,
    governance: &ResolverGovernance,
) -> PolicyChoice {
    let rule = governance.for_kind(kind).unwrap_or_default();
    let requested = asked
        .or(rule.default_policy)
        .unwrap_or_else(|| default_policy(kind));
    let (effective, source) = match rule.cap {
        Some(cap) if rank(cap) > rank(requested) => (cap, "company_cap"),
        _ => (requested, "requested"),
    };
    PolicyChoice {
        requested,
        effective,
        provenance: if asked.is_some() {
            "explicit"
        } else {
            "inherited"
        },
        source,
    }
}

/// A company's feedback data-sharing consent record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consent {
    pub enabled: bool,
    pub at: Option<String>,
    pub by_user_id: Option<String>,
    pub terms_version: Option<String>,
}

/// A refused consent change: the field and why (a 400 naming it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentError {
    pub field: &'static str,
    pub message: &'static str,
}

/// The consent after a person's change. Enabling (or agreeing to other
/// terms while enabled) records who and when; disabling keeps the record of
/// the last agreement, so the row says who consented before it was withdrawn.
/// The terms version only travels with an agreement: alone it would claim a
/// consent nobody gave.
pub fn change_consent(
    current: &Consent,
    enabled: Option<bool>,
    terms_version: Option<Option<&str>>,
    by_user_id: &str,
    now: &str,
) -> Result<Consent, ConsentError> {
    let terms = match terms_version {
        Some(Some(t)) if t.trim().is_empty() => {
            return Err(ConsentError {
                field: "feedbackDataSharingTermsVersion",
                message: "The terms version must not be empty",
            })
        }
        Some(t) => t,
        None => None,
    };
    match enabled {
        Some(true) => {
            let new_terms = terms.is_some_and(|t| current.terms_version.as_deref() != Some(t));
            if current.enabled && !new_terms {
                return Ok(current.clone());
            }
            Ok(Consent {
                enabled: true,
                at: Some(now.to_string()),
                by_user_id: Some(by_user_id.to_string()),
                terms_version: Some(terms.unwrap_or(DEFAULT_FEEDBACK_TERMS_VERSION).to_string()),
            })
        }
        _ if terms_version.is_some() => Err(ConsentError {
            field: "feedbackDataSharingTermsVersion",
            message: "The terms version is recorded with a consent: send it with feedbackDataSharingEnabled: true",
        }),
        Some(false) => Ok(Consent {
            enabled: false,
            ..current.clone()
        }),
        None => Ok(current.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InteractionKind as K;
    use ResolverPolicy as P;

    #[test]
    fn a_cap_only_ever_tightens_and_defaults_fill_what_a_card_leaves_out() {
        let none = ResolverGovernance::default();
        let plain = choose_policy(K::SuggestTasks, None, &none);
        assert_eq!(
            (
                plain.requested,
                plain.effective,
                plain.provenance,
                plain.source
            ),
            (P::Anyone, P::Anyone, "inherited", "requested")
        );
        assert_eq!(
            choose_policy(K::ConnectionIntent, None, &none).effective,
            P::HumanOnly
        );
        let gov: ResolverGovernance = serde_json::from_value(serde_json::json!({
            "suggest_tasks": { "defaultPolicy": "not_creator", "cap": "human_only" },
            "request_confirmation": { "cap": "not_creator" },
        }))
        .unwrap();
        let inherited = choose_policy(K::SuggestTasks, None, &gov);
        assert_eq!(inherited.requested, P::NotCreator);
        assert_eq!(
            (inherited.effective, inherited.source),
            (P::HumanOnly, "company_cap")
        );
        // A card already stricter than the cap keeps its own policy.
        let strict = choose_policy(K::RequestConfirmation, Some(P::HumanOnly), &gov);
        assert_eq!(
            (strict.effective, strict.provenance, strict.source),
            (P::HumanOnly, "explicit", "requested")
        );
        let loose = choose_policy(K::RequestConfirmation, Some(P::Anyone), &gov);
        assert_eq!(
            (loose.effective, loose.source),
            (P::NotCreator, "company_cap")
        );
        // Another kind is not governed.
        assert_eq!(
            choose_policy(K::AskUserQuestions, None, &gov).effective,
            P::Anyone
        );
    }

    #[test]
    fn governance_refuses_unknown_kinds_keys_and_policies_and_reads_legacy_names() {
        let parse = |v: serde_json::Value| serde_json::from_value::<ResolverGovernance>(v);
        assert!(parse(serde_json::json!({ "connection_intent": {} })).is_err());
        assert!(parse(serde_json::json!({ "suggest_tasks": { "floor": "anyone" } })).is_err());
        assert!(parse(serde_json::json!({ "suggest_tasks": { "cap": "nobody" } })).is_err());
        let legacy =
            parse(serde_json::json!({ "suggest_tasks": { "cap": "board_only" } })).unwrap();
        assert_eq!(legacy.suggest_tasks.unwrap().cap, Some(P::HumanOnly));
        assert_eq!(
            serde_json::to_value(ResolverGovernance::default()).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn consent_records_who_and_when_and_terms_need_an_agreement() {
        let off = Consent::default();
        let on = change_consent(&off, Some(true), None, "u1", "T1").unwrap();
        assert_eq!(
            on,
            Consent {
                enabled: true,
                at: Some("T1".into()),
                by_user_id: Some("u1".into()),
                terms_version: Some(DEFAULT_FEEDBACK_TERMS_VERSION.into()),
            }
        );
        // Enabling again changes nothing; agreeing to new terms is a new consent.
        assert_eq!(
            change_consent(&on, Some(true), None, "u2", "T2").unwrap(),
            on
        );
        let v2 = change_consent(&on, Some(true), Some(Some("v2")), "u2", "T2").unwrap();
        assert_eq!(
            (v2.by_user_id.as_deref(), v2.at.as_deref()),
            (Some("u2"), Some("T2"))
        );
        let withdrawn = change_consent(&v2, Some(false), None, "u3", "T3").unwrap();
        assert!(!withdrawn.enabled);
        assert_eq!(withdrawn.by_user_id.as_deref(), Some("u2"));
        assert!(change_consent(&off, None, Some(Some("v9")), "u", "T").is_err());
        assert!(change_consent(&off, Some(false), Some(None), "u", "T").is_err());
        assert!(change_consent(&off, Some(true), Some(Some(" ")), "u", "T").is_err());
        assert_eq!(change_consent(&off, None, None, "u", "T").unwrap(), off);
    }
}
