//! `paperclip company export|import`: company packages (the original's
//! markdown format) to and from a folder or one JSON file, with progress.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::client::fail;
use super::table::s;
use super::Ctx;

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The company (prefix, name or id) [default: the current one].
    pub company: Option<String>,
    /// A folder to write the package into, or a `.json` file for all of it.
    #[arg(long)]
    pub out: PathBuf,
    /// Leave tasks, their threads and routines out.
    #[arg(long)]
    pub without_tasks: bool,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// A package folder, its COMPANY.md, or a `.json` file from `export`.
    pub source: Option<PathBuf>,
    /// A starter template shipped with the server instead: solo-dev, content-studio.
    #[arg(long, conflicts_with = "source")]
    pub template: Option<String>,
    /// Import into this existing company instead of a new one.
    #[arg(long)]
    pub into: Option<String>,
    /// The new company's name [default: the package's].
    #[arg(long)]
    pub name: Option<String>,
    /// An agent or project whose name exists: rename (default) or skip.
    #[arg(long, default_value = "rename")]
    pub collision: String,
    /// Show what would be created, renamed or skipped; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub async fn export(ctx: &Ctx, args: ExportArgs) -> anyhow::Result<()> {
    let company = match &args.company {
        Some(c) => ctx.find_company(c).await?,
        None => ctx.company().await?,
    };
    let id = s(&company, "id");
    eprintln!(
        "Exporting {} ({})…",
        s(&company, "name"),
        s(&company, "issuePrefix")
    );
    let tasks = !args.without_tasks;
    let exported = ctx
        .api
        .post(
            &format!("/companies/{id}/exports"),
            json!({ "include": { "company": true, "agents": true, "projects": true, "issues": tasks } }),
        )
        .await?;
    let files = exported["files"].as_object().cloned().unwrap_or_default();
    let is_json = args.out.extension().is_some_and(|e| e == "json");
    if is_json {
        std::fs::write(&args.out, serde_json::to_string_pretty(&exported)? + "\n")?;
    } else {
        for (path, content) in &files {
            let Some(text) = content.as_str() else {
                continue;
            };
            let target = safe_join(&args.out, path)?;
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&target, text)?;
        }
    }
    for w in exported["warnings"].as_array().into_iter().flatten() {
        eprintln!("warning: {}", w.as_str().unwrap_or_default());
    }
    let m = &exported["manifest"];
    let count = |k: &str| m[k].as_array().map_or(0, Vec::len);
    if ctx.json {
        ctx.print_json(&json!({ "out": args.out, "filesWritten": files.len(), "warningCount": exported["warnings"].as_array().map_or(0, Vec::len) }));
    } else {
        println!(
            "Wrote {} files to {} ({} agents, {} projects, {} tasks and routines)",
            files.len(),
            args.out.display(),
            count("agents"),
            count("projects"),
            count("issues")
        );
    }
    Ok(())
}

/// `root/path`, refusing a path that would leave `root`.
fn safe_join(root: &Path, path: &str) -> anyhow::Result<PathBuf> {
    if path.starts_with('/') || path.split(['/', '\\']).any(|seg| seg == "..") {
        return Err(fail(format!(
            "Refusing to write {path} outside {}",
            root.display()
        )));
    }
    Ok(root.join(path))
}

/// The package's text files, by path relative to its folder.
fn read_package(source: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    if source.extension().is_some_and(|e| e == "json") {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(source)?)
            .map_err(|e| fail(format!("{} is not a package export: {e}", source.display())))?;
        let files = v
            .get("files")
            .and_then(Value::as_object)
            .ok_or_else(|| fail(format!("{} has no `files`", source.display())))?;
        return Ok(files
            .iter()
            .filter_map(|(p, c)| c.as_str().map(|c| (p.clone(), c.to_string())))
            .collect());
    }
    let root = match source.is_file() {
        true => source.parent().unwrap_or(Path::new(".")).to_path_buf(),
        false => source.to_path_buf(),
    };
    if !root.join("COMPANY.md").is_file() {
        return Err(fail(format!(
            "{} has no COMPANY.md: not a company package",
            root.display()
        )));
    }
    let mut files = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if name.starts_with(".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".md") || name == ".paperclip.yaml" || name == ".paperclip.yml"
            {
                let rel = path
                    .strip_prefix(&root)?
                    .to_string_lossy()
                    .replace('\\', "/");
                files.insert(rel, std::fs::read_to_string(&path)?);
            }
        }
    }
    Ok(files)
}

fn summary(list: &Value, name_key: &str) -> String {
    let items = list.as_array().cloned().unwrap_or_default();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for i in &items {
        *counts.entry(s(i, "action")).or_default() += 1;
    }
    let mut out: Vec<String> = counts.iter().map(|(a, n)| format!("{n} {a}")).collect();
    if out.is_empty() {
        out.push("none".into());
    }
    let renamed: Vec<String> = items
        .iter()
        .filter(|i| {
            i["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("Renamed"))
        })
        .map(|i| format!("{} → {}", s(i, "slug"), s(i, name_key)))
        .collect();
    if !renamed.is_empty() {
        out.push(format!("renamed: {}", renamed.join(", ")));
    }
    out.join(", ")
}

pub async fn import(ctx: &Ctx, args: ImportArgs) -> anyhow::Result<()> {
    let source = match (&args.source, &args.template) {
        (_, Some(t)) => {
            eprintln!("Using the starter template {t}…");
            json!({ "type": "template", "name": t })
        }
        (Some(path), None) => {
            eprintln!("Reading package from {}…", path.display());
            let files = read_package(path)?;
            eprintln!("Read {} files", files.len());
            json!({ "type": "inline", "files": files, "expectedFileCount": files.len() })
        }
        (None, None) => return Err(fail("Give a package folder or file, or --template NAME")),
    };
    let (target, base) = match &args.into {
        Some(c) => {
            let company = ctx.find_company(c).await?;
            let id = s(&company, "id");
            eprintln!(
                "Target: {} ({})",
                s(&company, "name"),
                s(&company, "issuePrefix")
            );
            (
                json!({ "mode": "existing_company", "companyId": id }),
                format!("/companies/{id}/imports"),
            )
        }
        None => (
            json!({ "mode": "new_company", "newCompanyName": args.name }),
            "/companies/import".to_string(),
        ),
    };
    let body = json!({ "source": source, "target": target, "collisionStrategy": args.collision, "agents": "all" });
    eprintln!("Previewing…");
    let preview = ctx
        .api
        .post(&format!("{base}/preview"), body.clone())
        .await?;
    let plan = &preview["plan"];
    if !ctx.json || args.dry_run {
        let out = |line: String| match ctx.json {
            true => eprintln!("{line}"),
            false => println!("{line}"),
        };
        out(format!(
            "Company:  {} ({})",
            preview["targetCompanyName"].as_str().unwrap_or("?"),
            s(plan, "companyAction")
        ));
        out(format!(
            "Agents:   {}",
            summary(&plan["agentPlans"], "plannedName")
        ));
        out(format!(
            "Projects: {}",
            summary(&plan["projectPlans"], "plannedName")
        ));
        out(format!(
            "Goals:    {}",
            summary(&plan["goalPlans"], "plannedTitle")
        ));
        out(format!(
            "Tasks:    {}",
            summary(&plan["issuePlans"], "plannedTitle")
        ));
        for w in preview["warnings"].as_array().into_iter().flatten() {
            out(format!("warning: {}", w.as_str().unwrap_or_default()));
        }
    }
    if args.dry_run {
        if ctx.json {
            ctx.print_json(&preview);
        } else {
            println!("Dry run: nothing was written.");
        }
        return Ok(());
    }
    eprintln!("Importing…");
    let apply_path = match args.into {
        Some(_) => format!("{base}/apply"),
        None => base,
    };
    let result = ctx.api.post(&apply_path, body).await?;
    if ctx.json {
        ctx.print_json(&result);
        return Ok(());
    }
    let created = |k: &str| {
        result[k]
            .as_array()
            .map_or(0, |l| l.iter().filter(|d| d["action"] == "created").count())
    };
    println!(
        "Imported into {} ({}): {} agents, {} projects, {} goals, {} tasks ({} comments), {} routines",
        s(&result["company"], "name"),
        s(&result["company"], "action"),
        created("agents"),
        created("projects"),
        created("goals"),
        created("tasks"),
        result["commentCount"],
        created("routines"),
    );
    Ok(())
}
