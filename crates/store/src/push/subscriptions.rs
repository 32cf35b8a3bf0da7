//! A person's push subscriptions: the push service's endpoint for one
//! browser and that browser's keys (`p256dh`, `auth`), which encrypt what is
//! sent to it. The endpoint is unique: the same browser subscribing again,
//! or for another person, replaces the row.

use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::push::Preferences;
use paperclip_core::team::Role;

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store};

#[derive(Debug, Clone)]
pub struct Subscription {
    pub id: String,
    pub user_id: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub last_sent_at: Option<String>,
}

/// A subscription of someone who may hear about a company, with what they
/// want and their role there (`None`: the local board, which may do all).
#[derive(Debug, Clone)]
pub struct Recipient {
    pub subscription: Subscription,
    pub preferences: Preferences,
    pub role: Option<Role>,
}

pub struct NewSubscription<'a> {
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub user_agent: Option<&'a str>,
}

/// Adds the subscription, or takes the endpoint over with new keys.
pub async fn upsert(
    store: &Store,
    user_id: &str,
    new: &NewSubscription<'_>,
) -> Result<Subscription> {
    let mut tx = store.begin().await?;
    let ts = now();
    let row = crate::engine::db::query(
        "INSERT INTO push_subscriptions (id, user_id, endpoint, p256dh, auth, user_agent, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (endpoint) DO UPDATE SET \
         user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth, \
         user_agent = excluded.user_agent, updated_at = excluded.updated_at RETURNING *",
    )
    .bind(new_id())
    .bind(user_id)
    .bind(new.endpoint)
    .bind(new.p256dh)
    .bind(new.auth)
    .bind(new.user_agent)
    .bind(&ts)
    .fetch_one(tx.conn())
    .await?;
    let sub = map(&row)?;
    tx.commit().await?;
    Ok(sub)
}

pub async fn of_user(store: &Store, user_id: &str) -> Result<Vec<Subscription>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at, id",
    )
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Removes one of the person's subscriptions; another's is a 404.
pub async fn remove(store: &Store, user_id: &str, id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let gone =
        crate::engine::db::query("DELETE FROM push_subscriptions WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .execute(tx.conn())
            .await?
            .rows_affected();
    if gone == 0 {
        return Err(Error::not_found("Push subscription"));
    }
    tx.commit().await?;
    Ok(())
}

/// The push service said the subscription is gone (404/410): forget it.
/// Only the row with these keys: a browser that subscribed again meanwhile
/// keeps its new row.
pub async fn forget(store: &Store, id: &str, p256dh: &str) -> Result<bool> {
    let mut tx = store.begin().await?;
    let gone =
        crate::engine::db::query("DELETE FROM push_subscriptions WHERE id = $1 AND p256dh = $2")
            .bind(id)
            .bind(p256dh)
            .execute(tx.conn())
            .await?
            .rows_affected();
    tx.commit().await?;
    Ok(gone > 0)
}

pub async fn mark_sent(store: &Store, id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    crate::engine::db::query("UPDATE push_subscriptions SET last_sent_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now())
        .execute(tx.conn())
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Who hears about `company_id`: on a local trusted instance the local
/// board's devices; on an authenticated one the devices of its active
/// members, each with their role there.
pub async fn recipients(store: &Store, company_id: &str, local: bool) -> Result<Vec<Recipient>> {
    let rows = if local {
        crate::engine::db::query(
            "SELECT s.*, CAST(NULL AS TEXT) AS member_role, p.questions, p.approvals, p.failed_runs, p.budget_stops \
             FROM push_subscriptions s LEFT JOIN push_preferences p ON p.user_id = s.user_id \
             WHERE s.user_id = $1 ORDER BY s.id",
        )
        .bind(LOCAL_BOARD_USER_ID)
        .fetch_all(store.pool())
        .await?
    } else {
        crate::engine::db::query(
            "SELECT s.*, m.role AS member_role, p.questions, p.approvals, p.failed_runs, \
             p.budget_stops FROM push_subscriptions s \
             JOIN company_memberships m ON m.user_id = s.user_id AND m.company_id = $1 \
             AND m.status = 'active' \
             LEFT JOIN push_preferences p ON p.user_id = s.user_id ORDER BY s.id",
        )
        .bind(company_id)
        .fetch_all(store.pool())
        .await?
    };
    rows.iter()
        .map(|row| {
            Ok(Recipient {
                subscription: map(row)?,
                preferences: crate::push::preferences::from_row(row)?,
                role: row
                    .opt_text("member_role")?
                    .map(|text| {
                        Role::parse(&text)
                            .ok_or_else(|| Error::Rule(format!("Stored role '{text}' is unknown")))
                    })
                    .transpose()?,
            })
        })
        .collect()
}

/// The devices of one person (a test notification).
pub async fn recipients_of(store: &Store, user_id: &str) -> Result<Vec<Recipient>> {
    let rows = crate::engine::db::query(
        "SELECT s.*, p.questions, p.approvals, p.failed_runs, p.budget_stops \
         FROM push_subscriptions s LEFT JOIN push_preferences p ON p.user_id = s.user_id \
         WHERE s.user_id = $1 ORDER BY s.id",
    )
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Recipient {
                subscription: map(row)?,
                preferences: crate::push::preferences::from_row(row)?,
                role: None,
            })
        })
        .collect()
}

fn map(row: &DbRow) -> Result<Subscription> {
    Ok(Subscription {
        id: row.text("id")?,
        user_id: row.text("user_id")?,
        endpoint: row.text("endpoint")?,
        p256dh: row.text("p256dh")?,
        auth: row.text("auth")?,
        user_agent: row.opt_text("user_agent")?,
        created_at: row.text("created_at")?,
        last_sent_at: row.opt_text("last_sent_at")?,
    })
}
