//! The fleet benchmark, short: a compressed day of a few agents on two
//! instances sharing one Postgres database, each killed in turn (with its
//! agents' processes) and started again, while the board acts, routines
//! fire and a load client reads every board route through both. Then, from
//! the database and the agents' logs, nothing may be lost, duplicated or
//! left running. `paperclip-bench fleet` runs the same for a whole day of
//! 100 agents (BENCHMARKS.md, "Fleet"). Postgres only: two instances
//! cannot share a SQLite file.

use crate::common;

use paperclip_bench::fleet::{self, Config, FleetArgs};

#[tokio::test]
async fn a_short_fleet_day_loses_duplicates_and_strands_no_run() {
    if !common::fleet::on_postgres("fleet_bench") {
        return;
    }
    let admin = std::env::var("PAPERCLIP_TEST_PG_URL").unwrap();
    let config = Config {
        binary: env!("CARGO_BIN_EXE_paperclip").into(),
        database_url: common::create_pg_database(&admin).await,
        args: FleetArgs {
            agents: 4,
            minutes: 0.0,
            secs: Some(10),
            kill_every_secs: 4,
            down_secs: 2,
            load_rps: 5.0,
            drain_secs: 60,
            seed: std::env::var("PAPERCLIP_FLEET_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(38),
        },
    };
    let report = fleet::run(&config)
        .await
        .expect("the fleet day itself failed");
    let summary = report.summary();
    println!("{summary}");
    let f = &report.figures;
    assert!(
        report.drained && f.lost.is_empty() && f.duplicated == 0 && f.left_running == 0,
        "{summary}\n{}\n(evidence in {})",
        report.findings().join("\n"),
        report.data_dir.display()
    );
    assert!(f.violations.is_empty(), "{}", f.violations.join("\n"));
    // A day in which nothing happened would pass vacuously. (How many kills
    // fit in the compressed day depends on the machine's load: at least one.)
    assert!(!report.kills.is_empty(), "{summary}");
    assert!(
        f.chaos.started_runs >= 10 && f.routine_runs >= 1,
        "{summary}"
    );
    assert!(f.model_requests >= 10, "{summary}");
    for (route, r) in &report.routes {
        assert!(!r.latencies.is_empty(), "{route} never answered 2xx: {r:?}");
    }
}
