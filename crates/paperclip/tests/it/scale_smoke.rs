//! The scale bench, tiny: a company built through the API and the bulk SQL,
//! restarted, checked, and every board page and API route it times fetched.
//! Asserts what was built (through the API and in the database) and that
//! every route answered 2xx; never how fast. On Postgres too when
//! `PAPERCLIP_TEST_PG_URL` is set (a fresh database of its own).

use crate::common;

use paperclip_bench::scale::{self, Config};

#[tokio::test]
async fn a_bulk_built_company_is_what_the_app_would_have_made_and_every_route_answers() {
    let database_url = match std::env::var("PAPERCLIP_TEST_PG_URL") {
        Ok(admin) if !admin.is_empty() => Some(common::create_pg_database(&admin).await),
        _ => None,
    };
    let issues = 2000;
    let report = scale::run(&Config {
        binary: env!("CARGO_BIN_EXE_paperclip").into(),
        database_url,
        data_dir: None,
        issues,
        agents: 20,
        comments_per_issue: 0.1,
        runs: Some(300),
        requests: 2,
    })
    .await
    .expect("the scale run itself failed");
    println!("{}", report.markdown());
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let db = &report.db;
    // Five tasks, twenty comments go through the API after the bulk.
    assert_eq!(db.issues, issues as i64 + 5);
    assert_eq!(report.dashboard_total, db.issues);
    assert_eq!(
        report.listed, db.issues,
        "every task is listed, page by page"
    );
    assert_eq!(
        report.new_identifier,
        format!("{}-{}", report.prefix, issues + 1)
    );
    assert_eq!(db.comments, 200 + 20);
    assert_eq!(db.agents, 20);
    // 300 bulk runs and the CEO's real one; a cost event per bulk run that
    // got to spend (succeeded or failed, ~95%).
    assert_eq!(db.runs, 301);
    assert!(
        db.cost_events > 250 && db.cost_events <= 300,
        "{}",
        db.cost_events
    );
    assert!(db.activity > issues as i64 + 200 + 300, "{}", db.activity);
    let failed: Vec<String> = report
        .rows
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{} -> {e}", r.path)))
        .collect();
    assert!(failed.is_empty(), "routes not 2xx:\n{}", failed.join("\n"));
    assert!(
        report.rows.len() > 60,
        "{} routes measured",
        report.rows.len()
    );
}
