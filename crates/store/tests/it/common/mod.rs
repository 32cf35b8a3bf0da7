//! A fresh store per test: SQLite in a temp dir, or a new database on the
//! Postgres server named by `PAPERCLIP_TEST_PG_URL`.

use paperclip_core::actor::Actor;
use paperclip_core::input::NewCompany;
use paperclip_store::{org::companies, Store};
use sqlx::Connection;

pub async fn store() -> Store {
    match std::env::var("PAPERCLIP_TEST_PG_URL") {
        Ok(admin) if !admin.is_empty() => {
            let name = format!("pc_store_{}", uuid::Uuid::new_v4().simple());
            let mut conn = sqlx::postgres::PgConnection::connect(&admin).await.unwrap();
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await
                .unwrap();
            let url = format!("{}/{name}", &admin[..admin.rfind('/').unwrap()]);
            Store::connect(&url).await.unwrap()
        }
        _ => {
            let dir =
                std::env::temp_dir().join(format!("paperclip-store-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&dir).unwrap();
            Store::connect(&format!(
                "sqlite://{}?mode=rwc",
                dir.join("db.sqlite").display()
            ))
            .await
            .unwrap()
        }
    }
}

/// A new company named `name`, made by the board; returns its id.
#[allow(dead_code)]
pub async fn company(store: &Store, name: &str) -> String {
    companies::create(
        store,
        &Actor::local_board(),
        NewCompany {
            name: name.into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap()
    .id
}
