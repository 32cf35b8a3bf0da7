//! Chaos, quick: script agents work tasks while the board wakes, assigns,
//! comments, @mentions, cancels, pauses and stops budgets, and the server is
//! SIGKILLed and restarted every few seconds; then every invariant is
//! checked from the database and the agents' own logs. The driver and the
//! checks are `paperclip_bench::chaos`, which `paperclip-bench chaos` runs
//! for longer. `PAPERCLIP_CHAOS_SEED` repeats a run's sequence of actions.

use crate::common;

use std::time::Duration;

use paperclip_bench::chaos::{self, Config};

#[tokio::test]
async fn the_run_engine_keeps_its_invariants_through_kills_cancels_and_budget_stops() {
    let database_url = match std::env::var("PAPERCLIP_TEST_PG_URL") {
        Ok(admin) if !admin.is_empty() => Some(common::create_pg_database(&admin).await),
        _ => None,
    };
    let config = Config {
        binary: env!("CARGO_BIN_EXE_paperclip").into(),
        database_url,
        secs: 20,
        seed: Config::seed_from_env(),
        agents: 6,
        restart_every: (Duration::from_secs(2), Duration::from_secs(4)),
        action_every: Duration::from_millis(40),
        drain_secs: 90,
    };
    let report = chaos::run(&config)
        .await
        .expect("the chaos run itself failed");
    println!("{}", report.summary());
    let shown: Vec<&str> = report
        .violations
        .iter()
        .take(40)
        .map(String::as_str)
        .collect();
    assert!(
        report.violations.is_empty(),
        "seed {}: {} violations ({}; server.log, agent logs and SQLite kept in {}):\n{}",
        report.seed,
        report.violations.len(),
        report.by_invariant(),
        report.data_dir.display(),
        shown.join("\n")
    );
    // A run in which nothing happened would pass the checks vacuously. The
    // chaos lasts a fixed time, so a loaded CI machine starts fewer runs in
    // it (18 once, with 11 killed by restarts): the floor asks for work, not
    // for speed.
    let f = &report.figures;
    assert!(report.restarts >= 3, "{}", report.summary());
    assert!(
        f.started_runs >= 12 && f.deliveries >= 10,
        "{}",
        report.summary()
    );
}
