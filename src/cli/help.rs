//! What the command line says about itself, generated from the clap
//! definitions of [`crate::commands::args`]: `memd --help` grouped by what a
//! person does, `memd help [COMMAND|TOPIC]` (a command's help, or the docs
//! page that explains a topic), `memd completions SHELL` and `memd man`.

use std::path::Path;

use clap::builder::StyledStr;
use clap::{CommandFactory, Subcommand};
use serde_json::json;

use crate::commands::args::{Cli, ShellLine, Suggest};
use crate::commands::{CommandError, Output};

/// The groups of `memd --help`, in order: every command is in exactly one
/// (a test checks it).
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Memories",
        &[
            "add",
            "get",
            "list",
            "search",
            "update",
            "forget",
            "purge",
            "supersede",
            "history",
            "confirm",
            "task",
            "ingest",
            "import-md",
            "ui",
        ],
    ),
    (
        "Sessions",
        &["inject", "compacted", "refresh", "session", "shell"],
    ),
    ("Hosts", &["setup", "hook", "mcp", "capture"]),
    ("Projects", &["trust", "untrust"]),
    ("Team", &["team"]),
    (
        "Service",
        &[
            "daemon", "status", "stop", "socket", "service", "config", "doctor",
        ],
    ),
    (
        "Maintenance",
        &[
            "check", "sweep", "prune", "export", "import", "backup", "restore", "reembed", "model",
        ],
    ),
    ("Help", &["help", "completions", "man"]),
];

/// A docs page and what its reader comes for.
#[derive(Debug, Clone, Copy)]
pub struct Topic {
    /// The topic's name (`memd help NAME`).
    pub name: &'static str,
    /// The page, relative to the repository's root.
    pub page: &'static str,
    /// What it explains.
    pub about: &'static str,
}

/// The docs topics `memd help TOPIC` knows; the docs test checks that each
/// page exists.
pub const TOPICS: &[Topic] = &[
    Topic {
        name: "commands",
        page: "docs/commands.md",
        about: "every command, its output and --json, exit codes, memd shell",
    },
    Topic {
        name: "configuration",
        page: "docs/configuration.md",
        about: "files and paths, every config key, its default, its environment variable",
    },
    Topic {
        name: "memory",
        page: "docs/memory.md",
        about: "namespaces, scopes, the write gate, supersession, tasks, lifecycle, export",
    },
    Topic {
        name: "sessions",
        page: "docs/sessions.md",
        about: "sessions, named sessions, the frozen memory block (inject)",
    },
    Topic {
        name: "drift",
        page: "docs/drift.md",
        about: "what the drift guard refuses, and how to recover",
    },
    Topic {
        name: "search",
        page: "docs/search.md",
        about: "search modes, threads, embeddings, ranking, retrieval quality",
    },
    Topic {
        name: "hosts",
        page: "docs/hosts.md",
        about: "Claude Code, Codex CLI, Gemini CLI and other MCP hosts",
    },
    Topic {
        name: "capture",
        page: "docs/capture.md",
        about: "conversations captured by the hooks: what is kept, what never is, how to turn it off",
    },
    Topic {
        name: "http",
        page: "docs/http.md",
        about: "the HTTP API on the socket (curl), the Python client, memd as an agent's tools",
    },
    Topic {
        name: "viewer",
        page: "docs/viewer.md",
        about: "the web viewer: memd ui, its one-time login, the loopback listener and its limits",
    },
    Topic {
        name: "team",
        page: "docs/team.md",
        about: "team memory: shared namespaces on PostgreSQL",
    },
    Topic {
        name: "service",
        page: "docs/service.md",
        about: "installing and upgrading memd, the foreground daemon, a systemd or launchd service",
    },
    Topic {
        name: "security",
        page: "docs/security.md",
        about: "who may connect, files and modes, secrets, what leaves the machine",
    },
    Topic {
        name: "troubleshooting",
        page: "docs/troubleshooting.md",
        about: "every error code: what it means, what to do, its exit code",
    },
    Topic {
        name: "not-built",
        page: "docs/not-built.md",
        about: "what memd does not do yet",
    },
];

/// The topic whose page explains a command (shown under its `--help`).
const COMMAND_TOPICS: &[(&str, &str)] = &[
    ("add", "memory"),
    ("get", "commands"),
    ("list", "commands"),
    ("search", "search"),
    ("update", "memory"),
    ("forget", "drift"),
    ("purge", "security"),
    ("supersede", "memory"),
    ("history", "memory"),
    ("confirm", "memory"),
    ("prune", "memory"),
    ("task", "memory"),
    ("inject", "sessions"),
    ("compacted", "sessions"),
    ("refresh", "sessions"),
    ("status", "commands"),
    ("check", "drift"),
    ("sweep", "memory"),
    ("export", "memory"),
    ("import", "memory"),
    ("ingest", "search"),
    ("import-md", "hosts"),
    ("backup", "memory"),
    ("restore", "drift"),
    ("stop", "service"),
    ("shell", "commands"),
    ("daemon", "service"),
    ("config", "configuration"),
    ("service", "service"),
    ("mcp", "hosts"),
    ("session", "sessions"),
    ("hook", "hosts"),
    ("setup", "hosts"),
    ("reembed", "search"),
    ("team", "team"),
    ("model", "search"),
    ("socket", "http"),
    ("ui", "viewer"),
    ("capture", "capture"),
    ("trust", "memory"),
    ("untrust", "memory"),
    ("doctor", "troubleshooting"),
];

/// Where a page is read: in the source tree and on the web.
fn page_ref(page: &str) -> String {
    format!(
        "{page} in memd's source ({}/blob/main/{page})",
        env!("CARGO_PKG_REPOSITORY")
    )
}

fn topic(name: &str) -> Option<&'static Topic> {
    TOPICS.iter().find(|t| t.name == name)
}

/// `memd`'s clap command: the derived definition plus the grouped command
/// list of `--help` and each command's docs page.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for (name, topic_name) in COMMAND_TOPICS {
        if let Some(t) = topic(topic_name) {
            let docs = format!("Docs: {}", page_ref(t.page));
            cmd = cmd.mut_subcommand(*name, |s| s.after_help(docs));
        }
    }
    // `memd help <TAB>` offers the docs topics and the commands.
    let words: Vec<&'static str> = TOPICS
        .iter()
        .map(|t| t.name)
        .chain(GROUPS.iter().flat_map(|(_, names)| names.iter().copied()))
        .collect();
    cmd = cmd.mut_subcommand("help", |s| {
        s.mut_arg("topic", |a| {
            a.value_parser(Suggest(words)).hide_possible_values(true)
        })
    });
    let styles = cmd.get_styles().clone();
    let (header, literal) = (styles.get_header(), styles.get_literal());
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|n| n.len())
        .max()
        .unwrap_or(0);
    let mut groups = String::new();
    for (heading, names) in GROUPS {
        groups.push_str(&format!("{header}{heading}:{header:#}\n"));
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|s| s.get_about())
                .map(ToString::to_string)
                .unwrap_or_default();
            groups.push_str(&format!("  {literal}{name:<width$}{literal:#}  {about}\n"));
        }
        groups.push('\n');
    }
    let topics: Vec<&str> = TOPICS.iter().map(|t| t.name).collect();
    let template = format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{groups}\
         {header}Options:{header:#}\n{{options}}\n\n\
         Docs topics (memd help TOPIC): {}\n",
        topics.join(", ")
    );
    cmd.help_template(StyledStr::from(template))
}

/// `memd help [COMMAND|TOPIC]`: a command's help (`task add` for a nested
/// one), or a docs topic's page; nothing: the whole help. `root` is the
/// command line being helped: `memd`'s, or a shell line's.
///
/// # Errors
///
/// A name that is neither a command nor a topic is a usage error listing
/// both.
pub fn help(mut root: clap::Command, words: &[String]) -> Result<Output, CommandError> {
    root.build();
    if words.is_empty() {
        return Ok(text(root.render_long_help()));
    }
    if words.len() == 1 && words[0] == "topics" {
        let lines: Vec<String> = TOPICS
            .iter()
            .map(|t| format!("{:<16}{} ({})", t.name, t.about, t.page))
            .collect();
        return Ok(Output {
            json: json!({"success": true, "topics": TOPICS.iter().map(|t| json!({
                "topic": t.name, "page": t.page, "about": t.about})).collect::<Vec<_>>()}),
            human: lines.join("\n"),
        });
    }
    if let Some(cmd) = descend(&mut root, words) {
        return Ok(text(cmd.render_long_help()));
    }
    if let [word] = words
        && let Some(t) = topic(word)
    {
        return Ok(Output {
            json: json!({"success": true, "topic": t.name, "page": t.page, "about": t.about}),
            human: format!("{}: {}\n  {}", t.name, t.about, page_ref(t.page)),
        });
    }
    let commands: Vec<String> = root
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let topics: Vec<&str> = TOPICS.iter().map(|t| t.name).collect();
    Err(CommandError::Usage(format!(
        "`{}` is neither a command nor a docs topic; commands: {}; topics: {}",
        words.join(" "),
        commands.join(", "),
        topics.join(", ")
    )))
}

/// The command `words` names under `root` (`task add`), if any.
fn descend<'a>(root: &'a mut clap::Command, words: &[String]) -> Option<&'a mut clap::Command> {
    match words.split_first() {
        None => Some(root),
        Some((first, rest)) => descend(root.find_subcommand_mut(first)?, rest),
    }
}

/// The root help of a shell line (`help` in `memd shell`).
pub fn shell_command() -> clap::Command {
    ShellLine::command()
}

fn text(help: StyledStr) -> Output {
    let text = help.to_string().trim_end().to_string();
    Output {
        json: json!({"success": true, "help": text}),
        human: text,
    }
}

/// `memd completions SHELL`: the completion script for `memd`.
pub fn completions(shell: clap_complete::Shell) -> Output {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut command(), "memd", &mut buf);
    let script = String::from_utf8_lossy(&buf).trim_end().to_string();
    Output {
        json: json!({"success": true, "shell": shell.to_string(), "script": script}),
        human: script,
    }
}

/// `memd man [COMMAND…]`: memd(1), or the page of a command (`add`:
/// memd-add(1); `task add`: memd-task-add(1)) — every page memd(1) and the
/// pages of commands with subcommands name under SUBCOMMANDS. With `dir`,
/// every page is written there (`memd.1`, `memd-add.1`, …) and their paths
/// listed.
///
/// # Errors
///
/// A word that names no command is a usage error; a directory that cannot
/// be written is an I/O error.
pub fn man(words: &[String], dir: Option<&Path>) -> Result<Output, CommandError> {
    let mut root = command();
    root.build();
    if let Some(dir) = dir {
        let mut written = Vec::new();
        std::fs::create_dir_all(dir)
            .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", dir.display())))?;
        for page in pages(&root) {
            let path = page_of(page).generate_to(dir).map_err(|e| {
                CommandError::Io(format!("cannot write into {}: {e}", dir.display()))
            })?;
            written.push(path.display().to_string());
        }
        return Ok(Output {
            json: json!({"success": true, "pages": written}),
            human: written.join("\n"),
        });
    }
    let Some(cmd) = descend(&mut root, words) else {
        let commands: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        return Err(CommandError::Usage(format!(
            "`{}` names no command; commands: {}",
            words.join(" "),
            commands.join(", ")
        )));
    };
    let man = page_of(cmd.clone());
    let mut buf = Vec::new();
    man.render(&mut buf)
        .map_err(|e| CommandError::Io(e.to_string()))?;
    let page = String::from_utf8_lossy(&buf).trim_end().to_string();
    Ok(Output {
        json: json!({"success": true, "name": man.get_filename(), "man": page}),
        human: page,
    })
}

/// The page of one command: its footer names memd's version and the build
/// date.
fn page_of(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd)
        .source(format!("memd {}", crate::version::VERSION))
        .date(crate::version::DATE)
}

/// Every page of a built command: its own and, depth first, those of its
/// visible subcommands (the ones its SUBCOMMANDS section names).
fn pages(cmd: &clap::Command) -> Vec<clap::Command> {
    let mut all = vec![cmd.clone()];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        all.extend(pages(sub));
    }
    all
}

/// Every command name of the command line, as clap knows them.
pub fn command_names() -> Vec<String> {
    crate::commands::args::Command::augment_subcommands(clap::Command::new("memd"))
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_command_is_in_exactly_one_group() {
        let mut seen = BTreeSet::new();
        for (_, names) in GROUPS {
            for name in *names {
                assert!(seen.insert(*name), "{name} is in two groups");
            }
        }
        let all: BTreeSet<String> = command_names().into_iter().collect();
        let grouped: BTreeSet<String> = seen.iter().map(|s| (*s).to_string()).collect();
        assert_eq!(
            all, grouped,
            "groups of memd --help and the commands differ"
        );
    }

    #[test]
    fn every_command_names_a_docs_topic() {
        for name in command_names() {
            if ["help", "completions", "man"].contains(&name.as_str()) {
                continue;
            }
            let t = COMMAND_TOPICS.iter().find(|(c, _)| *c == name);
            let t = t.unwrap_or_else(|| panic!("{name} has no docs topic"));
            assert!(topic(t.1).is_some(), "{name}: no topic {}", t.1);
        }
    }

    #[test]
    fn help_finds_commands_nested_commands_and_topics() {
        let out = help(command(), &["task".into(), "add".into()]).unwrap();
        assert!(out.human.contains("Usage: memd task add"), "{}", out.human);
        let out = help(command(), &["drift".into()]).unwrap();
        assert!(out.human.contains("docs/drift.md"), "{}", out.human);
        assert_eq!(out.json["page"], "docs/drift.md");
        let out = help(command(), &["search".into()]).unwrap();
        assert!(out.human.contains("docs/search.md"), "{}", out.human);
        assert!(help(command(), &["frobnicate".into()]).is_err());
        let out = help(command(), &[]).unwrap();
        assert!(out.human.contains("Memories:"), "{}", out.human);
        assert!(!out.human.contains('\u{1b}'), "no escapes in text");
    }
}
