//! The page shell: sidebar (company switcher, New Task, search, sections),
//! the live region pages re-render into, the toast area and dialogs.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::Ctx;

/// The sidebar's sections in groups (a heading, then `(path, label)`); each
/// path's icon is drawn by the stylesheet (`.nav a[data-icon]`).
const SECTIONS: &[(&str, &[(&str, &str)])] = &[
    (
        "",
        &[
            ("dashboard", "Dashboard"),
            ("inbox", "Inbox"),
            ("chats", "Chat"),
        ],
    ),
    (
        "Work",
        &[
            ("tasks", "Tasks"),
            ("projects", "Projects"),
            ("goals", "Goals"),
            ("routines", "Routines"),
            ("artifacts", "Artifacts"),
        ],
    ),
    (
        "Organisation",
        &[
            ("agents", "Agents"),
            ("org", "Org chart"),
            ("approvals", "Approvals"),
            ("company/members", "Members"),
        ],
    ),
    (
        "Company",
        &[
            ("costs", "Costs"),
            ("activity", "Activity"),
            ("company/secrets", "Secrets"),
            ("skills", "Skills"),
            ("company/settings", "Settings"),
        ],
    ),
];

/// Cycles System → Light → Dark (app.js handles the click).
fn theme_toggle() -> Markup {
    html! {
        button.theme-toggle #theme-toggle type="button" data-theme-toggle title="Colour theme: follows the system until you pick one" { "Theme: system" }
    }
}

fn head(title: &str) -> Markup {
    let viewer = crate::viewer::current();
    html! {
        head {
            meta charset="utf-8";
            @if let Some(csrf) = &viewer.csrf {
                meta name="paperclip-csrf" content=(csrf);
            }
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Paperclip" }
            meta name="color-scheme" content="light dark";
            // Before the first paint (not deferred): the theme the person
            // picked, else the system's, so a dark page never flashes light.
            // A file, not inline: the CSP allows only our own scripts.
            script src="/ui/theme-boot.js" {}
            link rel="icon" type="image/svg+xml" href="/ui/favicon.svg";
            link rel="manifest" href="/manifest.webmanifest";
            meta name="theme-color" content="#3b5bdb";
            link rel="stylesheet" href="/ui/app.css";
            @for (name, _) in crate::assets::SCRIPTS {
                script src={"/ui/" (name)} defer {}
            }
        }
    }
}

/// A company page: `active` is the sidebar section, `body` goes in the
/// live region that is re-rendered when the company's events arrive.
pub fn page(ctx: &Ctx, active: &str, title: &str, body: Markup) -> Markup {
    page_with(ctx, active, title, body, html! {})
}

/// Like [`page`], with `fixed` after the live region: forms a person types
/// into, which a live update must not reset.
pub fn page_with(ctx: &Ctx, active: &str, title: &str, body: Markup, fixed: Markup) -> Markup {
    let prefix = &ctx.company.issue_prefix;
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body data-company-id=(ctx.company.id) data-prefix=(prefix) data-live-from=(ctx.live_from) {
                a.skip-link href="#live" { "Skip to content" }
                div.shell {
                    nav.sidebar #sidebar {
                        div.brand { a href="/" { "Paperclip" } }
                        label.visually-hidden for="company-switcher" { "Company" }
                        div.switcher-row {
                            (company_logo(ctx))
                            select #company-switcher.switcher data-switch-company {
                                @for c in &ctx.companies {
                                    option value=(c.issue_prefix) selected[c.id == ctx.company.id] { (c.name) }
                                }
                                option value="__new" { "+ New company" }
                            }
                        }
                        button.primary.wide type="button" data-open-dialog="new-task" { "New Task" }
                        button.wide.palette-open type="button" data-open-palette aria-keyshortcuts="Control+K Meta+K" { "Find anything… " kbd { "Ctrl K" } }
                        form.search action={"/" (prefix) "/tasks"} method="get" {
                            input type="search" name="q" placeholder="Search tasks" aria-label="Search tasks";
                        }
                        @for (heading, items) in SECTIONS {
                            @if !heading.is_empty() { div.nav-heading { (heading) } }
                            ul.nav {
                                @for (key, label) in *items {
                                    li { (nav_link(ctx, prefix, key, label, active)) }
                                }
                            }
                        }
                        div.side-foot {
                            div.live-state #live-state title="Live updates" { "connecting…" }
                            (theme_toggle())
                        }
                    }
                    // On a phone: a bar with the menu and the company's name.
                    div.topbar {
                        button.menu-toggle type="button" data-toggle-sidebar aria-label="Menu" { "☰" }
                        (company_logo(ctx))
                        span.topbar-name { (ctx.company.name) }
                    }
                    main #live tabindex="-1" {
                        (who(&ctx.company.id, prefix))
                        div #live-body { (body) }
                        (fixed)
                    }
                }
                div #toasts aria-live="polite" {}
                (new_task_dialog())
                (new_company_dialog())
            }
        }
    }
}

/// The company's logo beside its name, when it has one (served from the
/// asset route with a type that cannot run script).
fn company_logo(ctx: &Ctx) -> Markup {
    html! {
        @if let Some(url) = &ctx.company.logo_url {
            img.company-logo src=(url) alt={(ctx.company.name) " logo"} width="24" height="24";
        }
    }
}

/// One sidebar link, with its section's badges (what waits on the board).
fn nav_link(ctx: &Ctx, prefix: &str, key: &str, label: &str, active: &str) -> Markup {
    let icon = key.rsplit('/').next().unwrap_or(key);
    html! {
        a href={"/" (prefix) "/" (key)} class=@if key == active { "active" } data-icon=(icon) {
            span.nav-label { (label) }
            @if key == "inbox" && ctx.open_failures > 0 {
                span.badge.bad #open-failures title="Failed runs not yet looked at" { (ctx.open_failures) }
            }
            @if key == "inbox" && ctx.pending_questions > 0 {
                span.badge #pending-questions title="Agents waiting on an answer" { (ctx.pending_questions) }
            }
            @if key == "approvals" && ctx.pending_approvals > 0 {
                span.badge #pending-approvals { (ctx.pending_approvals) }
            }
        }
    }
}

/// The signed-in person, their role here, and sign-out (authenticated only).
fn who(company_id: &str, prefix: &str) -> Markup {
    let viewer = crate::viewer::current();
    let Some(name) = &viewer.name else {
        return html! {};
    };
    let role = viewer.role_in(company_id);
    html! {
        div.who #who {
            span { "Signed in as " a #who-name href={"/" (prefix) "/account"} title="Your account and API keys" { strong { (name) } } }
            @if let Some(role) = role { " · " span.badge #who-role { (role.as_str()) } }
            " "
            button type="button" data-sign-out { "Sign out" }
        }
        @if role == Some(paperclip_core::team::Role::Viewer) {
            p.notice #read-only { "You are a viewer in this company: you can see everything, and changes are refused. Ask an owner for another role." }
        }
    }
}

/// A signed-in person who belongs to no company yet.
pub fn no_company(viewer: &crate::viewer::Viewer) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("No company yet"))
            body {
                main.bare {
                    h1 { "No company yet" }
                    p { "Signed in as " strong { (viewer.name.clone().unwrap_or_default()) } ". You do not belong to any company: ask an owner or admin for an invite link." }
                    button type="button" data-sign-out { "Sign out" }
                }
                div #toasts aria-live="polite" {}
            }
        }
    }
}

/// Sign-in, for an authenticated instance.
pub fn login() -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Sign in"))
            body {
                main.bare {
                    h1 { "Sign in to Paperclip" }
                    form.card #sign-in data-sign-in {
                        label { "Email" input name="email" type="email" autocomplete="username" required; }
                        label { "Password" input name="password" type="password" autocomplete="current-password" required; }
                        button.primary type="submit" { "Sign in" }
                    }
                    p.muted { "New here? Open the invite link you were sent." }
                }
                div #toasts aria-live="polite" {}
            }
        }
    }
}

/// An invite link: sign up (or sign in), then join.
pub fn invite(token: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Join"))
            body {
                main.bare data-invite=(token) {
                    h1 #invite-title { "You are invited" }
                    p #invite-detail.muted { "Create your account to join, or sign in if you have one." }
                    form.card #invite-sign-up data-invite-sign-up {
                        h2 { "New account" }
                        label { "Name" input name="name" required; }
                        label { "Email" input name="email" type="email" autocomplete="username" required; }
                        label { "Password (8 characters or more)" input name="password" type="password" autocomplete="new-password" minlength="8" required; }
                        button.primary type="submit" { "Create account and join" }
                    }
                    form.card #invite-sign-in data-invite-sign-in {
                        h2 { "I have an account" }
                        label { "Email" input name="email" type="email" autocomplete="username" required; }
                        label { "Password" input name="password" type="password" autocomplete="current-password" required; }
                        button type="submit" { "Sign in and join" }
                    }
                }
                div #toasts aria-live="polite" {}
            }
        }
    }
}

fn new_task_dialog() -> Markup {
    html! {
        dialog #new-task {
            form data-api-form="new-task" method="dialog" {
                h2 { "New task" }
                label { "Title" input name="title" required autofocus; }
                label { "Description (Markdown)" textarea name="description" rows="6" {} }
                div.row {
                    label { "Assignee" select name="assigneeAgentId" data-fill="agents" { option value="" { "Unassigned" } } }
                    label { "Priority" select name="priority" {
                        option value="low" { "Low" } option value="medium" selected { "Medium" }
                        option value="high" { "High" } option value="critical" { "Critical" }
                    } }
                }
                div.row {
                    label { "Project" select name="projectId" data-fill="projects" { option value="" { "None" } } }
                    label { "Goal" select name="goalId" data-fill="goals" { option value="" { "None" } } }
                }
                div.row {
                    label { "Find a parent task" input type="search" name="parentSearch" data-search-tasks="parentId" placeholder="Words or ACM-12" autocomplete="off"; }
                    label { "Parent task" select name="parentId" { option value="" { "None" } } }
                }
                label.inline { input type="checkbox" name="todo" checked; " Start now (todo). Unticked, it waits in the backlog: its assignee starts when you move it to todo." }
                div.actions {
                    button type="button" data-close-dialog { "Cancel" }
                    button.primary type="submit" { "Create task" }
                }
            }
        }
    }
}

fn new_company_dialog() -> Markup {
    html! {
        dialog #new-company {
            form data-api-form="new-company" method="dialog" {
                h2 { "New company" }
                label { "Name" input name="name" required; }
                label { "Goal / description" textarea name="description" rows="3" {} }
                div.actions {
                    button type="button" data-sample-company title="Two script agents at work, no model key needed" { "Try a sample company" }
                    button type="button" data-close-dialog { "Cancel" }
                    button.primary type="submit" { "Create company" }
                }
                (crate::pages::company_port::templates_row())
            }
        }
    }
}

/// A page outside any company (errors, first run).
pub fn bare(title: &str, detail: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                main.bare {
                    h1 { (title) }
                    p { (detail) }
                    p { a href="/" { "Back to Paperclip" } }
                }
                div #toasts aria-live="polite" {}
            }
        }
    }
}

/// First run: no company yet.
pub fn welcome() -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Welcome"))
            body {
                main.bare {
                    h1 { "Create your first company" }
                    p.muted { "A company has a goal, an org chart of agents, and tasks for them." }
                    form.card data-api-form="new-company" {
                        label { "Name" input name="name" required; }
                        label { "Goal / description" textarea name="description" rows="3" {} }
                        button.primary type="submit" { "Create company" }
                    }
                    (crate::pages::company_port::templates_row())
                    (crate::pages::chief::first_run())
                    section.card {
                        h2 { "Or look around first" }
                        p { "A sample company with a goal, a CEO and an engineer, and three tasks. Its agents run Paperclip's example agent, a shell script, so you watch Casey and Eli pick the tasks up, work a few seconds on each (their steps show on the task page), comment and finish them, all within about ten seconds. No model or API key needed." }
                        button.primary type="button" data-sample-company { "Try a sample company" }
                    }
                }
                div #toasts aria-live="polite" {}
                (PreEscaped(""))
            }
        }
    }
}
