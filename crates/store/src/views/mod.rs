//! Read models for pages: the dashboard, inbox, run days, task detail.
//! They read many tables and write none (except the inbox's own state).

pub mod activity_feed;
pub mod attention;
pub mod board;
pub mod dashboard;
pub(crate) mod dashboard_runs;
pub(crate) mod days;
pub mod detail;
pub mod inbox;
pub mod inbox_badge;
pub mod metrics;
pub(crate) mod run_days;
pub mod run_status;
pub mod task_pages;
pub mod ui;
