//! The MCP tools: names, JSON schemas and descriptions written for a model,
//! and the pure mapping from a tool call's arguments to the CLI command it
//! runs. Every tool is a `memd` command over the MCP server's one session,
//! so a tool's result is exactly that command's `--json` output.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::commands::args::{
    AddArgs, Command, FilterArgs, ForgetArgs, GetArgs, IdArgs, ListArgs, MemoryFields, SearchArgs,
    SupersedeArgs, TaskAddArgs, TaskCommand, TaskListArgs, TaskMoveArgs, UpdateArgs,
};

/// One tool as the MCP server lists it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: &'static str,
    /// What it is for, when to use it, what it returns.
    pub description: &'static str,
    /// JSON Schema of its arguments.
    pub schema: Value,
    /// Whether it only reads.
    pub read_only: bool,
    /// Whether it may destroy or overwrite information.
    pub destructive: bool,
}

const ID: &str = "The memory's id: the number after `#` in the memory block, or the `id` field \
                  of a search, list, get or store result.";
const EXPECT_REV: &str = "Optional safety check: the memory's `rev` as you last read it. If \
                          someone changed it since, nothing is written and the result is a \
                          conflict error holding `current_rev`.";
const CATEGORY: &str = "One of: preference, fact, convention, decision, gotcha, pattern, \
                        procedure, identity, project, note, task, episode (the daemon's config \
                        may allow others).";
const TAGS: &str = "Short labels, lower-cased (e.g. [\"deploy\", \"ci\"]).";

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Every tool, in the order they are listed.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "memory_store",
            description: "Store one durable fact, preference, decision, convention or lesson in \
                the shared memory, so that later sessions (and other agents on this machine) \
                know it. Use it when you learn something worth keeping beyond this \
                conversation; write one self-contained statement per memory. Do not store \
                code, diffs, stack traces, logs or secrets: they are refused (`reason`). An \
                exact or near duplicate is merged into the existing memory instead of stored \
                twice. Returns {accepted, id, deduped, merged_into, similar_to, reason, drift}; \
                `id` is the memory that now holds the text.",
            schema: object(
                json!({
                    "content": {"type": "string", "description": "The memory itself: one self-contained statement, at most 10 KB."},
                    "category": {"type": "string", "description": CATEGORY},
                    "subject": {"type": "string", "description": "A short subject line (e.g. the component it is about)."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": TAGS},
                    "scope": {"type": "string", "enum": ["project", "agent", "session"], "description": "Who sees it: project (everyone in this namespace, the default), agent (only this agent id), session (only this session)."},
                    "metadata": {"type": "object", "description": "Free-form JSON object stored with the memory (e.g. {\"ticket\": \"OPS-12\"})."},
                    "supersedes": {"type": "integer", "description": "Id of an older memory this one replaces; the old one is kept in history but no longer shown."},
                    "expires": {"type": "string", "description": "When it stops being true: a duration such as 30m, 12h, 7d, 2w, or an RFC 3339 time."},
                    "from": {"type": "integer", "description": "Id of a captured conversation turn (a search hit whose source is capture) this memory keeps: where it came from is recorded in its metadata (kept_from)."},
                    "personal": {"type": "boolean", "description": "The user's own, not this project's (a personal preference or habit of the user's that holds in every project): stored in the user's personal memory (@me), shown in every project's memory block from the next session on. Default false."},
                    "cites": {"type": "array", "items": {"type": "string"}, "description": "Code this memory is about, relative to the repository root: \"path\", \"path:40\" or \"path:40-44\". memd hashes the lines and later tells you when they moved, changed or are gone. Paths of the repository named in the content are cited too."}
                }),
                &["content"],
            ),
            read_only: false,
            destructive: false,
        },
        ToolSpec {
            name: "memory_search",
            description: "Search the shared memory before you answer or act on anything that \
                earlier sessions may have learned (conventions, decisions, where things are, \
                user preferences). Plain words work best; typos are tolerated. Returns {hits: \
                [{id, text, score, relevance, category, source, when, thread, namespace}], \
                count, mode, generation}, best first; nothing relevant: no hits. A long text \
                is cut around your words (cut: true): memory_get gives the whole memory.",
            schema: object(
                json!({
                    "query": {"type": "string", "description": "What to look for, in plain words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most hits to return (default 20)."},
                    "mode": {"type": "string", "enum": ["auto", "lexical", "fuzzy", "semantic", "hybrid"], "description": "auto (default): words, then typo-tolerant matching when few hits. semantic and hybrid need an embedding model on the daemon."},
                    "category": {"type": "string", "description": "Only this category."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories carrying all of these tags."}
                }),
                &["query"],
            ),
            read_only: true,
            destructive: false,
        },
        ToolSpec {
            name: "memory_get",
            description: "Read one memory in full by id (content, category, tags, metadata, \
                rev, timestamps). Use it before changing or forgetting a memory, so the change \
                is made on what is really stored now. Returns {memory, generation}.",
            schema: object(
                json!({"id": {"type": "integer", "description": ID}}),
                &["id"],
            ),
            read_only: true,
            destructive: false,
        },
        ToolSpec {
            name: "memory_list",
            description: "List memories, newest first, optionally of one category or with given \
                tags. Use it to browse (e.g. every convention); use memory_search to find \
                something specific. Returns {memories, count, generation}.",
            schema: object(
                json!({
                    "category": {"type": "string", "description": "Only this category."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories carrying all of these tags."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most memories to return (default 20)."}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
        },
        ToolSpec {
            name: "memory_update",
            description: "Correct or refine an existing memory in place (its old version stays \
                in history). Give only the fields to change; `tags` replaces the tag set. \
                Refused with a drift error (rule `row`) if anyone else — another session or \
                agent, memd itself, another tool — changed this memory after you last read it \
                (a memory you never read: after this session began); the error holds the \
                memory as it is now (`current`) and who changed it. Read it with memory_get, \
                then retry: a retry without reading is refused again. Changes to other \
                memories never refuse it. Returns {memory, generation} as stored now.",
            schema: object(
                json!({
                    "id": {"type": "integer", "description": ID},
                    "content": {"type": "string", "description": "The new text."},
                    "category": {"type": "string", "description": CATEGORY},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "The new tag set (replaces the old one)."},
                    "expect_rev": {"type": "integer", "description": EXPECT_REV}
                }),
                &["id"],
            ),
            read_only: false,
            destructive: true,
        },
        ToolSpec {
            name: "memory_forget",
            description: "Delete a memory that is wrong or no longer useful (its last version \
                stays in history). Prefer memory_supersede when a newer memory replaces it. \
                Refused with a drift error if anyone else changed it after you last read it \
                (read it with memory_get, then retry). Returns {id, forgotten, generation}.",
            schema: object(
                json!({
                    "id": {"type": "integer", "description": ID},
                    "expect_rev": {"type": "integer", "description": EXPECT_REV}
                }),
                &["id"],
            ),
            read_only: false,
            destructive: true,
        },
        ToolSpec {
            name: "memory_supersede",
            description: "Mark memory old_id as replaced by memory new_id (store the new one \
                first with memory_store). The old one disappears from search and lists but \
                stays in history. Returns {old, new, generation}.",
            schema: object(
                json!({
                    "old_id": {"type": "integer", "description": "The memory that is out of date."},
                    "new_id": {"type": "integer", "description": "The memory that replaces it."}
                }),
                &["old_id", "new_id"],
            ),
            read_only: false,
            destructive: true,
        },
        ToolSpec {
            name: "memory_history",
            description: "How a memory came to be: its supersession chain (oldest first) and the \
                earlier versions of each memory in it. Use it when a memory looks surprising or \
                to see what it said before. Returns {chain, revisions, generation}.",
            schema: object(
                json!({"id": {"type": "integer", "description": ID}}),
                &["id"],
            ),
            read_only: true,
            destructive: false,
        },
        ToolSpec {
            name: "memory_task_add",
            description: "Record a piece of open work that must survive this conversation (a \
                TODO for a later session). It is a memory of category task with status \
                pending, listed by memory_task_list. Returns {accepted, id, ...} like \
                memory_store.",
            schema: object(
                json!({
                    "content": {"type": "string", "description": "What has to be done."},
                    "subject": {"type": "string", "description": "A short subject line."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": TAGS},
                    "scope": {"type": "string", "enum": ["project", "agent", "session"], "description": "Who sees it (default project)."}
                }),
                &["content"],
            ),
            read_only: false,
            destructive: false,
        },
        ToolSpec {
            name: "memory_task_update",
            description: "Move a task: in_progress when you start it, completed when it is \
                done, cancelled when it will not be done (closed tasks stay closed: moving them \
                again is a conflict). Returns {memory}.",
            schema: object(
                json!({
                    "id": {"type": "integer", "description": "The task's id."},
                    "status": {"type": "string", "enum": ["in_progress", "completed", "cancelled"], "description": "The new status."},
                    "expect_rev": {"type": "integer", "description": EXPECT_REV}
                }),
                &["id", "status"],
            ),
            read_only: false,
            destructive: false,
        },
        ToolSpec {
            name: "memory_task_list",
            description: "The open tasks (pending or in progress), oldest first; with all=true \
                also completed and cancelled ones. Check it at the start of a session. \
                Returns {memories, count}.",
            schema: object(
                json!({
                    "all": {"type": "boolean", "description": "Include closed tasks."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most tasks to return (default 50)."}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
        },
        ToolSpec {
            name: "memory_compacted",
            description: "Call this right after your context was compacted or summarized. The \
                memory block (resource memory://inject, prompt `memory`) stays byte-for-byte \
                the same during a conversation so the prompt cache stays warm; after this call \
                it is rebuilt at its next read and then shows what was stored or changed \
                meanwhile. Returns {invalidated}.",
            schema: object(json!({}), &[]),
            read_only: false,
            destructive: false,
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreArgs {
    content: String,
    category: Option<String>,
    subject: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    scope: Option<String>,
    metadata: Option<Map<String, Value>>,
    supersedes: Option<i64>,
    expires: Option<String>,
    from: Option<i64>,
    #[serde(default)]
    personal: bool,
    #[serde(default)]
    cites: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchToolArgs {
    query: String,
    limit: Option<u32>,
    mode: Option<String>,
    category: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdOnly {
    id: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListToolArgs {
    category: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateToolArgs {
    id: i64,
    content: Option<String>,
    category: Option<String>,
    tags: Option<Vec<String>>,
    expect_rev: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetToolArgs {
    id: i64,
    expect_rev: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SupersedeToolArgs {
    old_id: i64,
    new_id: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskAddToolArgs {
    content: String,
    subject: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    scope: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskUpdateToolArgs {
    id: i64,
    status: String,
    expect_rev: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskListToolArgs {
    #[serde(default)]
    all: bool,
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Why a tool call could not be turned into a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// No tool of that name.
    Unknown(String),
    /// The arguments do not fit the tool's schema.
    Arguments(String),
}

fn parse<T: for<'de> Deserialize<'de>>(
    tool: &str,
    args: Map<String, Value>,
) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::Arguments(format!("invalid arguments for {tool}: {e}")))
}

/// Metadata as the CLI's `--meta K=V` pairs (values as JSON text, which
/// the CLI parses back into typed values).
fn meta_pairs(metadata: Option<Map<String, Value>>) -> Vec<(String, String)> {
    metadata
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect()
}

fn filter(category: Option<String>, tags: Vec<String>, limit: Option<u32>) -> FilterArgs {
    FilterArgs {
        category,
        tags,
        limit: limit.unwrap_or(20),
        ..FilterArgs::default()
    }
}

/// What a tool's result gives the model: `memory_search`'s hits compact
/// (`memd_proto::json::compact_hit`: the few fields an agent picks by, the
/// text cut around its words; `memory_get` has the rest), every other
/// tool's result as the command printed it.
pub fn compact(name: &str, query: Option<&str>, mut value: Value) -> Value {
    if name != "memory_search" {
        return value;
    }
    if let Some(Value::Array(hits)) = value.get_mut("hits") {
        for h in hits.iter_mut() {
            *h = memd_proto::json::compact_hit(h, query.unwrap_or_default());
        }
    }
    value
}

/// The command a tool call runs (pure).
///
/// # Errors
/// [`ToolError::Unknown`] for a name not in [`specs`];
/// [`ToolError::Arguments`] when the arguments do not fit its schema.
pub fn command(name: &str, args: Map<String, Value>) -> Result<Command, ToolError> {
    let command = match name {
        "memory_store" => {
            let a: StoreArgs = parse(name, args)?;
            Command::Add(AddArgs {
                text: Some(a.content),
                file: None,
                fields: MemoryFields {
                    category: a.category,
                    subject: a.subject,
                    tags: a.tags,
                    scope: a.scope,
                    expires: a.expires,
                    meta: meta_pairs(a.metadata),
                    cites: a.cites,
                    ..MemoryFields::default()
                },
                supersedes: a.supersedes,
                thread: None,
                position: None,
                occurred_at: None,
                from: a.from,
                personal: a.personal,
                no_cites: false,
            })
        }
        "memory_search" => {
            let a: SearchToolArgs = parse(name, args)?;
            Command::Search(SearchArgs {
                query: a.query,
                mode: a.mode.unwrap_or_else(|| "auto".into()),
                syntax: "plain".into(),
                explain: false,
                filter: filter(a.category, a.tags, a.limit),
                offset: 0,
            })
        }
        "memory_get" => {
            let a: IdOnly = parse(name, args)?;
            Command::Get(GetArgs {
                id: a.id,
                include_inactive: false,
            })
        }
        "memory_list" => {
            let a: ListToolArgs = parse(name, args)?;
            Command::List(ListArgs {
                filter: filter(a.category, a.tags, a.limit),
                offset: 0,
            })
        }
        "memory_update" => {
            let a: UpdateToolArgs = parse(name, args)?;
            if a.content.is_none() && a.category.is_none() && a.tags.is_none() {
                return Err(ToolError::Arguments(
                    "memory_update needs at least one of content, category, tags".into(),
                ));
            }
            Command::Update(UpdateArgs {
                id: a.id,
                content: a.content,
                file: None,
                clear_tags: a.tags.as_ref().is_some_and(Vec::is_empty),
                fields: MemoryFields {
                    category: a.category,
                    tags: a.tags.unwrap_or_default(),
                    ..MemoryFields::default()
                },
                unpin: false,
                expect_rev: a.expect_rev,
            })
        }
        "memory_forget" => {
            let a: ForgetToolArgs = parse(name, args)?;
            Command::Forget(ForgetArgs {
                id: Some(a.id),
                expect_rev: a.expect_rev,
                thread: None,
                source: None,
                dry_run: false,
            })
        }
        "memory_supersede" => {
            let a: SupersedeToolArgs = parse(name, args)?;
            Command::Supersede(SupersedeArgs {
                old: a.old_id,
                new: a.new_id,
            })
        }
        "memory_history" => {
            let a: IdOnly = parse(name, args)?;
            Command::History(IdArgs { id: a.id })
        }
        "memory_task_add" => {
            let a: TaskAddToolArgs = parse(name, args)?;
            Command::Task(TaskCommand::Add(TaskAddArgs {
                text: a.content,
                subject: a.subject,
                tags: a.tags,
                importance: None,
                scope: a.scope,
                meta: Vec::new(),
            }))
        }
        "memory_task_update" => {
            let a: TaskUpdateToolArgs = parse(name, args)?;
            let m = TaskMoveArgs {
                id: a.id,
                expect_rev: a.expect_rev,
            };
            Command::Task(match a.status.as_str() {
                "in_progress" => TaskCommand::Start(m),
                "completed" => TaskCommand::Done(m),
                "cancelled" => TaskCommand::Cancel(m),
                other => {
                    return Err(ToolError::Arguments(format!(
                        "unknown task status `{other}`: expected in_progress, completed or cancelled"
                    )));
                }
            })
        }
        "memory_task_list" => {
            let a: TaskListToolArgs = parse(name, args)?;
            Command::Task(TaskCommand::List(TaskListArgs {
                all: a.all,
                limit: a.limit.unwrap_or(50),
            }))
        }
        "memory_compacted" => {
            let _: NoArgs = parse(name, args)?;
            Command::Compacted
        }
        other => return Err(ToolError::Unknown(other.to_string())),
    };
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_listed_tool_maps_to_a_command() {
        let minimal = |name: &str| match name {
            "memory_store" | "memory_task_add" => json!({"content": "x"}),
            "memory_search" => json!({"query": "x"}),
            "memory_get" | "memory_history" | "memory_forget" => json!({"id": 1}),
            "memory_update" => json!({"id": 1, "content": "y"}),
            "memory_supersede" => json!({"old_id": 1, "new_id": 2}),
            "memory_task_update" => json!({"id": 1, "status": "completed"}),
            _ => json!({}),
        };
        let specs = specs();
        assert_eq!(specs.len(), 12);
        for spec in specs {
            let schema = &spec.schema;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            for required in schema["required"].as_array().unwrap() {
                let key = required.as_str().unwrap();
                assert!(
                    schema["properties"].get(key).is_some(),
                    "{}: {key}",
                    spec.name
                );
            }
            let cmd = command(spec.name, args(minimal(spec.name)));
            assert!(cmd.is_ok(), "{}: {cmd:?}", spec.name);
        }
    }

    #[test]
    fn store_carries_every_field() {
        let cmd = command(
            "memory_store",
            args(
                json!({"content": "Deploys use ops/ship.sh", "category": "fact",
                "subject": "deploy", "tags": ["ops"], "scope": "agent",
                "metadata": {"port": 5432, "env": "prod"}, "supersedes": 3, "expires": "7d",
                "cites": ["ops/ship.sh:3-9", "ops/README.md"]}),
            ),
        )
        .unwrap();
        let Command::Add(a) = cmd else {
            panic!("{cmd:?}")
        };
        assert_eq!(a.text.as_deref(), Some("Deploys use ops/ship.sh"));
        assert_eq!(a.fields.category.as_deref(), Some("fact"));
        assert_eq!(a.fields.tags, vec!["ops"]);
        assert_eq!(a.fields.scope.as_deref(), Some("agent"));
        assert_eq!(a.fields.expires.as_deref(), Some("7d"));
        assert_eq!(a.supersedes, Some(3));
        assert_eq!(a.fields.cites, ["ops/ship.sh:3-9", "ops/README.md"]);
        assert!(!a.no_cites, "the paths the text names are cited too");
        let mut meta = a.fields.meta.clone();
        meta.sort();
        assert_eq!(
            meta,
            vec![
                ("env".to_string(), "\"prod\"".to_string()),
                ("port".to_string(), "5432".to_string())
            ]
        );
    }

    #[test]
    fn update_with_no_tags_clears_them() {
        let update = |a| match command("memory_update", args(a)).unwrap() {
            Command::Update(u) => u,
            other => panic!("{other:?}"),
        };
        let u = update(json!({"id": 1, "tags": []}));
        assert!(u.clear_tags && u.fields.tags.is_empty());
        let u = update(json!({"id": 1, "tags": ["ops"]}));
        assert!(!u.clear_tags);
        assert_eq!(u.fields.tags, vec!["ops"]);
        assert!(!update(json!({"id": 1, "content": "x"})).clear_tags);
    }

    #[test]
    fn bad_arguments_are_named() {
        let cases = [
            ("memory_store", json!({})),
            ("memory_store", json!({"content": "x", "colour": "red"})),
            ("memory_get", json!({"id": "seven"})),
            ("memory_update", json!({"id": 1})),
            ("memory_task_update", json!({"id": 1, "status": "done"})),
            ("memory_compacted", json!({"now": true})),
        ];
        for (name, a) in cases {
            match command(name, args(a.clone())) {
                Err(ToolError::Arguments(m)) => assert!(!m.is_empty()),
                other => panic!("{name} {a}: {other:?}"),
            }
        }
        assert_eq!(
            command("memory_drop_all", Map::new()).unwrap_err(),
            ToolError::Unknown("memory_drop_all".into())
        );
    }
}
