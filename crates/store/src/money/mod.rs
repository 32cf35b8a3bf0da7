//! Cost events, their totals, budgets and the token thrift report.

pub mod budget_changes;
pub mod budgets;
pub(crate) mod cost_totals;
pub mod cost_views;
pub mod costs;
pub mod local_spend;
pub(crate) mod spend;
pub mod thrift;
