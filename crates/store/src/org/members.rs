//! Who belongs to a company and in what role, and the invites that bring
//! people in. A company always keeps an active owner: the last one cannot be
//! demoted, suspended or removed.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::team::{MembershipStatus, Role};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::org::people::BoardUser;
use crate::{new_id, now, Error, Result, Store, Tx};

#[derive(Debug, Clone)]
pub struct Membership {
    pub id: String,
    pub company_id: String,
    pub user_id: String,
    pub role: Role,
    pub status: MembershipStatus,
    pub created_at: String,
    pub updated_at: String,
    /// The member's name and email, for lists people read.
    pub user_name: String,
    pub user_email: String,
}

#[derive(Debug, Clone)]
pub struct Invite {
    pub id: String,
    pub company_id: Option<String>,
    pub role: Role,
    pub instance_admin: bool,
    pub created_by_user_id: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub accepted_at: Option<String>,
    pub accepted_by_user_id: Option<String>,
    pub revoked_at: Option<String>,
}

impl Invite {
    /// Why the invite can no longer be used at `at`, if it cannot.
    pub fn unusable(&self, at: &str) -> Option<&'static str> {
        if self.revoked_at.is_some() {
            Some("This invite was revoked; ask for a new one")
        } else if self.accepted_at.is_some() {
            Some("This invite was used already; sign in instead")
        } else if self.expires_at.as_str() <= at {
            Some("This invite has expired; ask for a new one")
        } else {
            None
        }
    }
}

const MEMBER_SELECT: &str = "SELECT m.*, u.name AS user_name, u.email AS user_email \
     FROM company_memberships m JOIN board_users u ON u.id = m.user_id";

/// Every membership of a user, suspended ones included.
pub async fn of_user(store: &Store, user_id: &str) -> Result<Vec<Membership>> {
    let rows = crate::engine::db::query(&format!(
        "{MEMBER_SELECT} WHERE m.user_id = $1 ORDER BY m.created_at"
    ))
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_member).collect()
}

pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Membership>> {
    let rows = crate::engine::db::query(&format!(
        "{MEMBER_SELECT} WHERE m.company_id = $1 ORDER BY m.created_at, m.id"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_member).collect()
}

pub async fn get(store: &Store, member_id: &str) -> Result<Membership> {
    let mut tx = store.begin().await?;
    let m = get_in(&mut tx, member_id).await?;
    tx.commit().await?;
    Ok(m)
}

async fn get_in(tx: &mut Tx, member_id: &str) -> Result<Membership> {
    crate::engine::db::query(&format!("{MEMBER_SELECT} WHERE m.id = $1"))
        .bind(member_id)
        .fetch_optional(tx.conn())
        .await?
        .map(|r| map_member(&r))
        .transpose()?
        .ok_or_else(|| Error::not_found("Member"))
}

/// Makes the creator of a company its owner, in the transaction that creates
/// it. A caller who is no board user (the local board, the system) gets none.
pub(crate) async fn add_owner(tx: &mut Tx, company_id: &str, user_id: &str) -> Result<()> {
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO company_memberships (id, company_id, user_id, role, status, created_at, updated_at) \
         SELECT $1, $2, id, 'owner', 'active', $4, $4 FROM board_users WHERE id = $3",
    )
    .bind(new_id())
    .bind(company_id)
    .bind(user_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// A change to one membership.
pub enum Change {
    Role(Role),
    Status(MembershipStatus),
    Remove,
}

pub async fn change(
    store: &Store,
    actor: &Actor,
    member_id: &str,
    change: Change,
) -> Result<Option<Membership>> {
    let mut tx = store.begin().await?;
    let before = get_in(&mut tx, member_id).await?;
    let loses_ownership = before.role == Role::Owner
        && before.status == MembershipStatus::Active
        && match change {
            Change::Role(role) => role != Role::Owner,
            Change::Status(status) => status != MembershipStatus::Active,
            Change::Remove => true,
        };
    if loses_ownership {
        // Counted inside the transaction; on Postgres two owners demoting
        // each other at once could both see the other, so the row of every
        // active owner is locked first.
        let lock = match store.backend() {
            crate::Backend::Sqlite => "",
            crate::Backend::Postgres => " FOR UPDATE",
        };
        let owners = crate::engine::db::query(&format!(
            "SELECT id FROM company_memberships \
             WHERE company_id = $1 AND role = 'owner' AND status = 'active'{lock}"
        ))
        .bind(&before.company_id)
        .fetch_all(tx.conn())
        .await?;
        if owners.len() <= 1 {
            return Err(Error::conflict(
                "Cannot remove the last active owner: make someone else owner first",
                Some(json!({ "code": "last_owner" })),
            ));
        }
    }
    let ts = now();
    let (action, details) = match change {
        Change::Role(role) => {
            crate::engine::db::query(
                "UPDATE company_memberships SET role = $2, updated_at = $3 WHERE id = $1",
            )
            .bind(member_id)
            .bind(role.as_str())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
            (
                Action::MemberRoleChanged,
                json!({ "userId": before.user_id, "from": before.role, "to": role }),
            )
        }
        Change::Status(status) => {
            crate::engine::db::query(
                "UPDATE company_memberships SET status = $2, updated_at = $3 WHERE id = $1",
            )
            .bind(member_id)
            .bind(status.as_str())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
            let action = match status {
                MembershipStatus::Active => Action::MemberReactivated,
                MembershipStatus::Suspended => Action::MemberSuspended,
            };
            (action, json!({ "userId": before.user_id }))
        }
        Change::Remove => {
            crate::engine::db::query("DELETE FROM company_memberships WHERE id = $1")
                .bind(member_id)
                .execute(tx.conn())
                .await?;
            (
                Action::MemberRemoved,
                json!({ "userId": before.user_id, "role": before.role }),
            )
        }
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action,
            entity_type: EntityType::User,
            entity_id: &before.user_id,
            details,
        },
    )
    .await?;
    let after = match action {
        Action::MemberRemoved => None,
        _ => Some(get_in(&mut tx, member_id).await?),
    };
    tx.commit().await?;
    Ok(after)
}

/// Records an invite whose token hashes to `token_hash`. `company_id` is
/// `None` only for the bootstrap invite of the first administrator.
pub async fn create_invite(
    store: &Store,
    actor: &Actor,
    company_id: Option<&str>,
    role: Role,
    token_hash: &str,
    expires_at: &str,
) -> Result<Invite> {
    let mut tx = store.begin().await?;
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO invites (id, company_id, role, instance_admin, token_hash, created_by_user_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(role.as_str())
    .bind(i64::from(company_id.is_none()))
    .bind(token_hash)
    .bind(actor.user_id())
    .bind(now())
    .bind(expires_at)
    .execute(tx.conn())
    .await?;
    if let Some(company_id) = company_id {
        activity::record(
            &mut tx,
            actor,
            Entry {
                company_id,
                action: Action::InviteCreated,
                entity_type: EntityType::Invite,
                entity_id: &id,
                details: json!({ "role": role, "expiresAt": expires_at }),
            },
        )
        .await?;
    }
    let invite = invite_in(&mut tx, "id", &id).await?;
    tx.commit().await?;
    Ok(invite)
}

pub async fn invites(store: &Store, company_id: &str) -> Result<Vec<Invite>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM invites WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 200",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_invite).collect()
}

pub async fn invite(store: &Store, id: &str) -> Result<Invite> {
    let mut tx = store.begin().await?;
    let invite = invite_in(&mut tx, "id", id).await?;
    tx.commit().await?;
    Ok(invite)
}

pub async fn invite_by_token(store: &Store, token_hash: &str) -> Result<Invite> {
    let mut tx = store.begin().await?;
    let invite = invite_in(&mut tx, "token_hash", token_hash).await?;
    tx.commit().await?;
    Ok(invite)
}

/// Whether a bootstrap invite is open (not used, revoked or expired) at `at`.
pub async fn bootstrap_open(store: &Store, at: &str) -> Result<bool> {
    let row = crate::engine::db::query(
        "SELECT id FROM invites WHERE company_id IS NULL AND accepted_at IS NULL \
         AND revoked_at IS NULL AND expires_at > $1 LIMIT 1",
    )
    .bind(at)
    .fetch_optional(store.pool())
    .await?;
    Ok(row.is_some())
}

/// Revokes every open bootstrap invite (a new one is about to be printed).
pub async fn revoke_bootstraps(store: &Store) -> Result<()> {
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE invites SET revoked_at = $1 WHERE company_id IS NULL \
         AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(now())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn revoke_invite(store: &Store, actor: &Actor, id: &str) -> Result<Invite> {
    let mut tx = store.begin().await?;
    let invite = invite_in(&mut tx, "id", id).await?;
    if invite.accepted_at.is_some() {
        return Err(Error::conflict("This invite was used already", None));
    }
    if invite.revoked_at.is_none() {
        crate::engine::db::query("UPDATE invites SET revoked_at = $2 WHERE id = $1")
            .bind(id)
            .bind(now())
            .execute(tx.conn())
            .await?;
        if let Some(company_id) = &invite.company_id {
            activity::record(
                &mut tx,
                actor,
                Entry {
                    company_id,
                    action: Action::InviteRevoked,
                    entity_type: EntityType::Invite,
                    entity_id: id,
                    details: json!({ "role": invite.role }),
                },
            )
            .await?;
        }
    }
    let invite = invite_in(&mut tx, "id", id).await?;
    tx.commit().await?;
    Ok(invite)
}

/// Uses the invite with this token hash, once, for a signed-in user: makes
/// them a member with the invite's role (or the instance's administrator for
/// the bootstrap invite) and marks the invite used. Two people accepting the
/// same invite at once: one wins, the other gets 409.
pub async fn accept(
    store: &Store,
    token_hash: &str,
    user_id: &str,
) -> Result<(Invite, BoardUser, Option<Membership>)> {
    let mut tx = store.begin().await?;
    let invite = invite_in(&mut tx, "token_hash", token_hash).await?;
    let ts = now();
    if let Some(why) = invite.unusable(&ts) {
        return Err(Error::conflict(
            why,
            Some(json!({ "code": "invite_unusable" })),
        ));
    }
    let taken = crate::engine::db::query(
        "UPDATE invites SET accepted_at = $2 WHERE id = $1 AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(&invite.id)
    .bind(&ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if taken != 1 {
        return Err(Error::conflict(
            "This invite was used already; sign in instead",
            Some(json!({ "code": "invite_unusable" })),
        ));
    }
    if invite.instance_admin {
        crate::engine::db::query("UPDATE board_users SET is_instance_admin = $2 WHERE id = $1")
            .bind(user_id)
            .bind(1i64)
            .execute(tx.conn())
            .await?;
    }
    let row = crate::engine::db::query("SELECT * FROM board_users WHERE id = $1")
        .bind(user_id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("User"))?;
    let user = BoardUser {
        id: row.text("id")?,
        email: row.text("email")?,
        name: row.text("name")?,
        is_instance_admin: row.flag("is_instance_admin")?,
        created_at: row.text("created_at")?,
    };
    crate::engine::db::query("UPDATE invites SET accepted_by_user_id = $2 WHERE id = $1")
        .bind(&invite.id)
        .bind(&user.id)
        .execute(tx.conn())
        .await?;
    let mut membership = None;
    if let Some(company_id) = &invite.company_id {
        let existing = crate::engine::db::query(
            "SELECT id, role FROM company_memberships WHERE company_id = $1 AND user_id = $2",
        )
        .bind(company_id)
        .bind(&user.id)
        .fetch_optional(tx.conn())
        .await?;
        let member_id = match existing {
            // The transaction is dropped, so the invite stays unused for
            // the person it was meant for.
            Some(_) => {
                return Err(Error::conflict(
                    "You already belong to this company",
                    Some(json!({ "code": "already_member" })),
                ))
            }
            None => {
                let id = new_id();
                crate::engine::db::query(
                    "INSERT INTO company_memberships (id, company_id, user_id, role, status, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, 'active', $5, $5)",
                )
                .bind(&id)
                .bind(company_id)
                .bind(&user.id)
                .bind(invite.role.as_str())
                .bind(&ts)
                .execute(tx.conn())
                .await?;
                id
            }
        };
        let actor = Actor {
            kind: paperclip_core::actor::ActorKind::User,
            id: user.id.clone(),
            run_id: None,
            company_id: None,
        };
        activity::record(
            &mut tx,
            &actor,
            Entry {
                company_id,
                action: Action::MemberJoined,
                entity_type: EntityType::User,
                entity_id: &user.id,
                details: json!({ "inviteId": invite.id, "role": invite.role, "name": user.name }),
            },
        )
        .await?;
        membership = Some(get_in(&mut tx, &member_id).await?);
    }
    let invite = invite_in(&mut tx, "id", &invite.id).await?;
    tx.commit().await?;
    Ok((invite, user, membership))
}

async fn invite_in(tx: &mut Tx, column: &str, value: &str) -> Result<Invite> {
    crate::engine::db::query(&format!("SELECT * FROM invites WHERE {column} = $1"))
        .bind(value)
        .fetch_optional(tx.conn())
        .await?
        .map(|r| map_invite(&r))
        .transpose()?
        .ok_or_else(|| Error::not_found("Invite"))
}

fn parse_role(text: &str) -> Result<Role> {
    Role::parse(text).ok_or_else(|| Error::Rule(format!("Stored role '{text}' is unknown")))
}

fn map_member(row: &DbRow) -> Result<Membership> {
    let status = row.text("status")?;
    Ok(Membership {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        user_id: row.text("user_id")?,
        role: parse_role(&row.text("role")?)?,
        status: MembershipStatus::parse(&status).ok_or_else(|| {
            Error::Rule(format!("Stored membership status '{status}' is unknown"))
        })?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
        user_name: row.text("user_name")?,
        user_email: row.text("user_email")?,
    })
}

fn map_invite(row: &DbRow) -> Result<Invite> {
    Ok(Invite {
        id: row.text("id")?,
        company_id: row.opt_text("company_id")?,
        role: parse_role(&row.text("role")?)?,
        instance_admin: row.flag("instance_admin")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_at: row.text("created_at")?,
        expires_at: row.text("expires_at")?,
        accepted_at: row.opt_text("accepted_at")?,
        accepted_by_user_id: row.opt_text("accepted_by_user_id")?,
        revoked_at: row.opt_text("revoked_at")?,
    })
}
