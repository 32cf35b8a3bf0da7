//! Web Push: people's subscriptions (one per device), their preferences,
//! and the action links already used. Personal device settings, not company
//! data: they write no company activity row (as an account-wide board key
//! does not); what a notification's link does (an approval decided, a
//! comment) records its own.

pub mod link_uses;
pub mod preferences;
pub mod subscriptions;

pub use subscriptions::{Recipient, Subscription};
