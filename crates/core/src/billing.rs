//! Who pays for a run's usage: upstream's `billingType`. A coding CLI runs
//! either on an API key (metered: every token is billed) or on its vendor's
//! subscription login (the tokens are included in a plan); the costs page
//! splits runs and tokens between the two.

use crate::stored::stored_words;

stored_words!(
    BillingType,
    "billing type",
    [
        MeteredApi = "metered_api",
        SubscriptionIncluded = "subscription_included",
        SubscriptionOverage = "subscription_overage",
        Credits = "credits",
        Fixed = "fixed",
        Unknown = "unknown",
    ]
);

impl BillingType {
    /// What a run reported, read as upstream's ledger reads an adapter's
    /// result: its adapters say `api` or `subscription`; a ledger word is
    /// itself; nothing, or a word it does not know, is `unknown` (a run's
    /// usage is recorded whatever it says, so this never refuses).
    pub fn from_report(text: Option<&str>) -> BillingType {
        match text.map(str::trim) {
            Some("api") => BillingType::MeteredApi,
            Some("subscription") => BillingType::SubscriptionIncluded,
            Some(word) => <BillingType as crate::stored::Stored>::from_stored(word)
                .unwrap_or(BillingType::Unknown),
            None => BillingType::Unknown,
        }
    }

    /// An API key in the run's environment means metered billing; without
    /// one the CLI uses its login, a subscription.
    pub fn by_key(has_api_key: bool) -> BillingType {
        if has_api_key {
            BillingType::MeteredApi
        } else {
            BillingType::SubscriptionIncluded
        }
    }

    /// The cents a run's cost event records, of the cents its usage is
    /// priced at: a run whose tokens are included in a plan costs nothing
    /// more (as upstream's ledger records it), so it neither spends a budget
    /// nor is stopped by one; its tokens are still counted.
    pub fn billed_cents(self, priced: Option<u64>) -> Option<u64> {
        match self {
            BillingType::SubscriptionIncluded => Some(0),
            _ => priced,
        }
    }

    /// Counted as subscription runs and tokens (upstream counts overage too).
    pub fn is_subscription(self) -> bool {
        matches!(
            self,
            BillingType::SubscriptionIncluded | BillingType::SubscriptionOverage
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_words_become_ledger_words() {
        assert_eq!(
            BillingType::from_report(Some("api")),
            BillingType::MeteredApi
        );
        assert_eq!(
            BillingType::from_report(Some("subscription")),
            BillingType::SubscriptionIncluded
        );
        assert_eq!(
            BillingType::from_report(Some("subscription_overage")),
            BillingType::SubscriptionOverage
        );
        assert_eq!(
            BillingType::from_report(Some("credits")),
            BillingType::Credits
        );
        assert_eq!(BillingType::from_report(Some("gold")), BillingType::Unknown);
        assert_eq!(BillingType::from_report(None), BillingType::Unknown);
        assert_eq!(BillingType::by_key(true).as_str(), "metered_api");
        assert_eq!(BillingType::by_key(false).as_str(), "subscription_included");
        assert_eq!(
            BillingType::SubscriptionIncluded.billed_cents(Some(250)),
            Some(0)
        );
        assert_eq!(
            BillingType::SubscriptionIncluded.billed_cents(None),
            Some(0)
        );
        assert_eq!(
            BillingType::SubscriptionOverage.billed_cents(Some(250)),
            Some(250)
        );
        assert_eq!(BillingType::MeteredApi.billed_cents(Some(250)), Some(250));
        assert_eq!(BillingType::Unknown.billed_cents(None), None);
        assert!(BillingType::SubscriptionOverage.is_subscription());
        assert!(
            !BillingType::MeteredApi.is_subscription() && !BillingType::Unknown.is_subscription()
        );
    }

    #[test]
    fn stored_words_round_trip() {
        use crate::stored::Stored;
        for v in BillingType::ALL {
            assert_eq!(BillingType::from_stored(v.as_str()), Some(*v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        assert_eq!(BillingType::from_stored("api"), None);
    }
}
