//! The parts of a company update beyond its plain fields: the resolver
//! governance of its cards, the feedback consent record and the logo. Each
//! is checked and applied inside the update's transaction, its change noted
//! for the activity row.

use paperclip_core::actor::Actor;
use paperclip_core::company_governance::{change_consent, Consent, ResolverGovernance};
use paperclip_core::model::Company;
use serde_json::{Map, Value};

use crate::engine::sql::diff;
use crate::org::company_assets::{self, Released};
use crate::{now, Error, Result, Tx};

/// What a patch asks of these parts (absent: left alone).
#[derive(Default)]
pub(crate) struct Extras {
    pub governance: Option<ResolverGovernance>,
    pub sharing_enabled: Option<bool>,
    pub terms_version: Option<Option<String>>,
    pub consent_at: Option<Option<Value>>,
    pub consent_by_user_id: Option<Option<Value>>,
    pub logo_asset_id: Option<Option<String>>,
}

/// Applies `x` to `after` (a copy of `before`); returns the file of a logo
/// it replaced, which the caller deletes once the change is committed.
pub(crate) async fn apply(
    tx: &mut Tx,
    actor: &Actor,
    before: &Company,
    after: &mut Company,
    x: Extras,
    changes: &mut Map<String, Value>,
) -> Result<Option<Released>> {
    // Who agreed and when is the server's to record: a client's claim of it
    // would make the record say what nobody did.
    for (field, sent) in [
        ("feedbackDataSharingConsentAt", x.consent_at.is_some()),
        (
            "feedbackDataSharingConsentByUserId",
            x.consent_by_user_id.is_some(),
        ),
    ] {
        if sent {
            return Err(Error::invalid(
                field,
                "Recorded by the server when consent is given: send feedbackDataSharingEnabled (and feedbackDataSharingTermsVersion) instead",
            ));
        }
    }
    if let Some(governance) = x.governance {
        diff(
            changes,
            "interactionResolverGovernance",
            &before.interaction_resolver_governance,
            &governance,
        );
        after.interaction_resolver_governance = governance;
    }
    if x.sharing_enabled.is_some() || x.terms_version.is_some() {
        let person = actor
            .user_id()
            .ok_or_else(|| Error::forbidden("Only a person can give or withdraw consent"))?;
        let current = Consent {
            enabled: before.feedback_data_sharing_enabled,
            at: before.feedback_data_sharing_consent_at.clone(),
            by_user_id: before.feedback_data_sharing_consent_by_user_id.clone(),
            terms_version: before.feedback_data_sharing_terms_version.clone(),
        };
        let terms = x.terms_version.as_ref().map(|t| t.as_deref());
        let next = change_consent(&current, x.sharing_enabled, terms, person, &now())
            .map_err(|e| Error::invalid(e.field, e.message))?;
        diff(
            changes,
            "feedbackDataSharingEnabled",
            &current.enabled,
            &next.enabled,
        );
        diff(
            changes,
            "feedbackDataSharingConsentAt",
            &current.at,
            &next.at,
        );
        diff(
            changes,
            "feedbackDataSharingConsentByUserId",
            &current.by_user_id,
            &next.by_user_id,
        );
        diff(
            changes,
            "feedbackDataSharingTermsVersion",
            &current.terms_version,
            &next.terms_version,
        );
        after.feedback_data_sharing_enabled = next.enabled;
        after.feedback_data_sharing_consent_at = next.at;
        after.feedback_data_sharing_consent_by_user_id = next.by_user_id;
        after.feedback_data_sharing_terms_version = next.terms_version;
    }
    let Some(logo) = x.logo_asset_id else {
        return Ok(None);
    };
    if let Some(asset) = &logo {
        company_assets::check_logo_in(tx, &before.id, asset).await?;
    }
    diff(changes, "logoAssetId", &before.logo_asset_id, &logo);
    let released = company_assets::set_logo_in(
        tx,
        &before.id,
        before.logo_asset_id.as_deref(),
        logo.as_deref(),
    )
    .await?;
    after.logo_url = paperclip_core::asset::logo_url(logo.as_deref());
    after.logo_asset_id = logo;
    Ok(released)
}
