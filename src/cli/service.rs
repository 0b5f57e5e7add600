//! `memd service install|uninstall|status`: the user service, without root.
//!
//! systemd (Linux): `memd.socket` + `memd.service` in
//! `$XDG_CONFIG_HOME/systemd/user`, from the templates in `systemd/` with
//! this binary's path, the data dir and the socket filled in; then
//! `systemctl --user daemon-reload` and `enable --now memd.socket`.
//! launchd (macOS): `~/Library/LaunchAgents/dev.memd.memd.plist`, then
//! `launchctl bootstrap gui/<uid>`. `--no-start` only writes (or removes)
//! the files. The rendering is pure and unit-tested; the tests run
//! `systemd-analyze verify` on the files `install` writes.

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use serde_json::{Value, json};

use crate::commands::args::{Global, ServiceArgs, ServiceCommand};
use crate::commands::output::Output;
use crate::commands::{CommandError, paths};

/// The checked-in socket unit.
pub const SOCKET_UNIT: &str = include_str!("../../systemd/memd.socket");
/// The checked-in service unit.
pub const SERVICE_UNIT: &str = include_str!("../../systemd/memd.service");
/// The checked-in launchd agent.
pub const PLIST: &str = include_str!("../../systemd/dev.memd.memd.plist");
/// The launchd label.
pub const LAUNCHD_LABEL: &str = "dev.memd.memd";
/// The socket unit's default, `$XDG_RUNTIME_DIR/memd/memd.sock` (memd's
/// default socket).
pub const DEFAULT_LISTEN: &str = "%t/memd/memd.sock";

/// The service manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// systemd user units.
    Systemd,
    /// A launchd user agent.
    Launchd,
}

impl Manager {
    fn parse(name: Option<&str>) -> Result<Manager, CommandError> {
        match name {
            None if cfg!(target_os = "macos") => Ok(Manager::Launchd),
            None => Ok(Manager::Systemd),
            Some("systemd") => Ok(Manager::Systemd),
            Some("launchd") => Ok(Manager::Launchd),
            Some(other) => Err(CommandError::Usage(format!(
                "unknown service manager `{other}`: expected systemd or launchd"
            ))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Manager::Systemd => "systemd",
            Manager::Launchd => "launchd",
        }
    }
}

/// What goes into the units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The memd binary.
    pub exe: PathBuf,
    /// The data dir.
    pub data_dir: PathBuf,
    /// The socket: a path, or `None` for the default (`%t/memd/memd.sock`
    /// under systemd, `<data_dir>/memd.sock` under launchd).
    pub socket: Option<PathBuf>,
    /// A config file named explicitly.
    pub config: Option<PathBuf>,
    /// Directories outside the data dir the daemon writes to (those of the
    /// `[sidecar]` files), writable under `ProtectSystem=strict`.
    pub writes: Vec<PathBuf>,
}

/// Quotes one word for a systemd unit line: `%` and `$` are escaped so a
/// path is taken literally.
fn systemd_word(path: &Path) -> String {
    let raw = path.to_string_lossy();
    let escaped = raw
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%")
        .replace('$', "$$");
    if escaped.contains(char::is_whitespace) || escaped.contains('"') {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

fn replace_line(text: &str, prefix: &str, line: &str) -> String {
    text.lines()
        .map(|l| if l.starts_with(prefix) { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `memd.service` for `spec` (pure).
pub fn render_service(spec: &Spec) -> String {
    let socket = spec
        .socket
        .as_deref()
        .map_or(DEFAULT_LISTEN.to_string(), systemd_word);
    let mut exec = format!(
        "ExecStart={} daemon --data-dir {} --socket {socket}",
        systemd_word(&spec.exe),
        systemd_word(&spec.data_dir)
    );
    if let Some(config) = &spec.config {
        exec.push_str(&format!(" --config {}", systemd_word(config)));
    }
    let text = replace_line(SERVICE_UNIT, "ExecStart=", &exec);
    // A `-` before a path: a directory that is gone does not stop the unit.
    let mut writable = systemd_word(&spec.data_dir);
    for dir in spec
        .writes
        .iter()
        .filter(|d| !d.starts_with(&spec.data_dir))
    {
        let optional = PathBuf::from(format!("-{}", dir.to_string_lossy()));
        writable.push_str(&format!(" {}", systemd_word(&optional)));
    }
    replace_line(
        &text,
        "ReadWritePaths=",
        &format!("ReadWritePaths={writable}"),
    )
}

/// `memd.socket` for `spec` (pure).
pub fn render_socket(spec: &Spec) -> String {
    match &spec.socket {
        None => SOCKET_UNIT.to_string(),
        Some(path) => replace_line(
            SOCKET_UNIT,
            "ListenStream=",
            &format!("ListenStream={}", systemd_word(path)),
        ),
    }
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The launchd agent for `spec`, logging to `log` (pure).
pub fn render_plist(spec: &Spec, log: &Path) -> String {
    let word = |p: &Path| format!("<string>{}</string>", xml(&p.to_string_lossy()));
    let mut args = vec![
        word(&spec.exe),
        "<string>daemon</string>".to_string(),
        "<string>--data-dir</string>".to_string(),
        word(&spec.data_dir),
    ];
    if let Some(socket) = &spec.socket {
        args.push("<string>--socket</string>".into());
        args.push(word(socket));
    }
    if let Some(config) = &spec.config {
        args.push("<string>--config</string>".into());
        args.push(word(config));
    }
    let indented: Vec<String> = args.iter().map(|a| format!("    {a}")).collect();
    PLIST
        .replace(
            "    <string>/usr/local/bin/memd</string>\n    <string>daemon</string>",
            &indented.join("\n"),
        )
        .replace(
            "<string>/Users/YOU/Library/Logs/memd.log</string>",
            &word(log),
        )
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// Where the unit files go.
fn unit_files(manager: Manager) -> Vec<PathBuf> {
    match manager {
        Manager::Systemd => {
            let dir = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map_or_else(|| home().join(".config"), PathBuf::from)
                .join("systemd/user");
            vec![dir.join("memd.socket"), dir.join("memd.service")]
        }
        Manager::Launchd => vec![
            home()
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        ],
    }
}

/// Runs a service-manager command; its error output on failure.
fn call(program: &str, args: &[&str]) -> Result<(), String> {
    let shown = format!("{program} {}", args.join(" "));
    match Process::new(program).args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{shown}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run `{shown}`: {e}")),
    }
}

fn gui_domain() -> String {
    format!("gui/{}", crate::sys::euid())
}

/// Runs `memd service …`.
///
/// # Errors
/// Usage errors; [`CommandError::Io`] when files cannot be written or the
/// service manager fails (the message says what to run by hand).
pub fn run(g: &Global, command: ServiceCommand) -> Result<Output, CommandError> {
    match command {
        ServiceCommand::Install(a) => install(g, &a),
        ServiceCommand::Uninstall(a) => uninstall(&a),
        ServiceCommand::Status(a) => status(g, &a),
    }
}

fn spec(g: &Global) -> Result<Spec, CommandError> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CommandError::Io(format!("cannot find the memd executable: {e}")))?;
    let p = paths(g);
    Ok(Spec {
        exe,
        data_dir: p.data_dir,
        // The units name the socket clients resolve with the same flags and
        // environment, unless it is the runtime dir's default (`%t`): an
        // explicit data dir puts the socket in it.
        socket: (Some(&p.socket) != runtime_socket().as_ref()).then(|| p.socket.clone()),
        config: g.config.as_ref().map(|_| p.config.clone()),
        writes: sidecar_dirs(&p.config)?,
    })
}

/// The directories of the `[sidecar]` files the config names (the daemon
/// writes each file through a temporary one beside it).
fn sidecar_dirs(config: &Path) -> Result<Vec<PathBuf>, CommandError> {
    let text =
        crate::config::Config::read_text(config).map_err(|e| CommandError::Io(e.to_string()))?;
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let config = crate::config::Config::parse(config, &text)
        .map_err(|e| CommandError::Usage(e.to_string()))?;
    let mut dirs: Vec<PathBuf> = config
        .sidecar
        .files
        .values()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    Ok(dirs)
}

/// The default socket under `$XDG_RUNTIME_DIR`, which the units write as
/// `%t/memd/memd.sock`.
fn runtime_socket() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|v| !v.is_empty())
        .map(|r| PathBuf::from(r).join("memd").join("memd.sock"))
}

fn write_file(path: &Path, text: &str) -> Result<(), CommandError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| CommandError::Io(format!("cannot write {}: {e}", path.display())))
}

/// Stops a daemon that answers on the socket (e.g. one a client started),
/// so the service manager can take over the socket and the data dir.
fn stop_running(g: &Global) -> bool {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    rt.block_on(async {
        let Ok(mut client) = crate::commands::connect(g, false).await else {
            return false;
        };
        if client.stop().await.is_err() {
            return false;
        }
        drop(client);
        let socket = paths(g).socket;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline && socket.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        true
    })
}

fn install(g: &Global, a: &ServiceArgs) -> Result<Output, CommandError> {
    let manager = Manager::parse(a.manager.as_deref())?;
    let spec = spec(g)?;
    let files = unit_files(manager);
    let texts = match manager {
        Manager::Systemd => vec![render_socket(&spec), render_service(&spec)],
        Manager::Launchd => vec![render_plist(&spec, &home().join("Library/Logs/memd.log"))],
    };
    for (path, text) in files.iter().zip(&texts) {
        write_file(path, text)?;
    }
    // ProtectSystem=strict needs the data dir to exist for ReadWritePaths.
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&spec.data_dir)
            .map_err(|e| {
                CommandError::Io(format!("cannot create {}: {e}", spec.data_dir.display()))
            })?;
    }
    let commands: Vec<Vec<String>> = match manager {
        Manager::Systemd => vec![
            vec!["systemctl".into(), "--user".into(), "daemon-reload".into()],
            vec![
                "systemctl".into(),
                "--user".into(),
                "enable".into(),
                "--now".into(),
                "memd.socket".into(),
            ],
        ],
        Manager::Launchd => vec![vec![
            "launchctl".into(),
            "bootstrap".into(),
            gui_domain(),
            files[0].to_string_lossy().into_owned(),
        ]],
    };
    let mut stopped = false;
    if !a.no_start {
        stopped = stop_running(g);
        for cmd in &commands {
            let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
            call(&cmd[0], &args).map_err(|e| {
                CommandError::Io(format!(
                    "{e}. The unit files are written ({}); start them by hand: {}",
                    files
                        .iter()
                        .map(|f| f.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    shown(&commands)
                ))
            })?;
        }
    }
    let json = json!({
        "success": true,
        "manager": manager.as_str(),
        "files": files,
        "exe": spec.exe,
        "data_dir": spec.data_dir,
        "socket": spec.socket.as_ref().map_or(Value::from(DEFAULT_LISTEN), |s| json!(s)),
        "started": !a.no_start,
        "stopped_running_daemon": stopped,
        "commands": commands.iter().map(|c| c.join(" ")).collect::<Vec<_>>(),
    });
    let mut human = files
        .iter()
        .map(|f| format!("wrote {}", f.display()))
        .collect::<Vec<_>>();
    if a.no_start {
        human.push(format!("to start it: {}", shown(&commands)));
    } else {
        human.push(format!("started: {}", shown(&commands)));
    }
    Ok(Output {
        json,
        human: human.join("\n"),
    })
}

fn shown(commands: &[Vec<String>]) -> String {
    commands
        .iter()
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join(" && ")
}

fn uninstall(a: &ServiceArgs) -> Result<Output, CommandError> {
    let manager = Manager::parse(a.manager.as_deref())?;
    let files = unit_files(manager);
    let mut warnings = Vec::new();
    if !a.no_start {
        let result = match manager {
            Manager::Systemd => call(
                "systemctl",
                &["--user", "disable", "--now", "memd.socket", "memd.service"],
            ),
            Manager::Launchd => call(
                "launchctl",
                &["bootout", &gui_domain(), &files[0].to_string_lossy()],
            ),
        };
        if let Err(e) = result {
            warnings.push(e);
        }
    }
    let mut removed = Vec::new();
    for f in &files {
        match std::fs::remove_file(f) {
            Ok(()) => removed.push(f.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(CommandError::Io(format!(
                    "cannot remove {}: {e}",
                    f.display()
                )));
            }
        }
    }
    if !a.no_start
        && manager == Manager::Systemd
        && let Err(e) = call("systemctl", &["--user", "daemon-reload"])
    {
        warnings.push(e);
    }
    let mut human: Vec<String> = removed
        .iter()
        .map(|f| format!("removed {}", f.display()))
        .collect();
    if removed.is_empty() {
        human.push("no unit files were installed".into());
    }
    human.extend(warnings.iter().map(|w| format!("warning: {w}")));
    Ok(Output {
        json: json!({"success": true, "manager": manager.as_str(), "removed": removed, "warnings": warnings}),
        human: human.join("\n"),
    })
}

fn unit_state(manager: Manager, no_start: bool) -> Value {
    if no_start {
        return Value::Null;
    }
    match manager {
        Manager::Systemd => {
            let mut states = serde_json::Map::new();
            for unit in ["memd.socket", "memd.service"] {
                let state = Process::new("systemctl")
                    .args(["--user", "is-active", unit])
                    .output()
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .filter(|s| !s.is_empty());
                states.insert(unit.into(), json!(state));
            }
            Value::Object(states)
        }
        Manager::Launchd => {
            let loaded = call(
                "launchctl",
                &["print", &format!("{}/{LAUNCHD_LABEL}", gui_domain())],
            )
            .is_ok();
            json!({ LAUNCHD_LABEL: if loaded { "loaded" } else { "not loaded" } })
        }
    }
}

fn status(g: &Global, a: &ServiceArgs) -> Result<Output, CommandError> {
    let manager = Manager::parse(a.manager.as_deref())?;
    let files: Vec<Value> = unit_files(manager)
        .into_iter()
        .map(|f| json!({"path": f, "installed": f.exists()}))
        .collect();
    let units = unit_state(manager, a.no_start);
    let daemon = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
        .and_then(|rt| {
            rt.block_on(async {
                let mut client = crate::commands::connect(g, false).await.ok()?;
                client.status().await.ok()
            })
        });
    let daemon_json = match &daemon {
        Some(s) => json!({
            "answers": true,
            "version": s["version"],
            "pid": s["pid"],
            "socket": s["paths"]["socket"],
            "socket_inherited": s["socket_inherited"],
        }),
        None => json!({"answers": false, "socket": paths(g).socket}),
    };
    let mut human: Vec<String> = files
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["path"].as_str().unwrap_or_default(),
                if f["installed"] == true {
                    "installed"
                } else {
                    "not installed"
                }
            )
        })
        .collect();
    if let Value::Object(states) = &units {
        for (unit, state) in states {
            human.push(format!(
                "{unit}: {}",
                state
                    .as_str()
                    .unwrap_or("unknown (no service manager answers)")
            ));
        }
    }
    human.push(match &daemon {
        Some(s) => format!(
            "daemon: answers on {} (memd {}, pid {})",
            s["paths"]["socket"].as_str().unwrap_or_default(),
            s["version"].as_str().unwrap_or_default(),
            s["pid"]
        ),
        None => format!(
            "daemon: nothing answers on {} (socket activation starts it at the first client)",
            paths(g).socket.display()
        ),
    });
    Ok(Output {
        json: json!({
            "success": true,
            "manager": manager.as_str(),
            "files": files,
            "units": units,
            "daemon": daemon_json,
        }),
        human: human.join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            exe: "/opt/memd bin/memd".into(),
            data_dir: "/home/me/.local/share/memd".into(),
            socket: None,
            config: None,
            writes: Vec::new(),
        }
    }

    #[test]
    fn service_unit_names_the_binary_and_data_dir() {
        let text = render_service(&spec());
        assert!(text.contains(
            "ExecStart=\"/opt/memd bin/memd\" daemon --data-dir /home/me/.local/share/memd \
             --socket %t/memd/memd.sock\n"
        ));
        assert!(text.contains("ReadWritePaths=/home/me/.local/share/memd\n"));
        // Everything else is the checked-in unit, line for line.
        let kept = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with("ExecStart=") && !l.starts_with("ReadWritePaths="))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(kept(&text), kept(SERVICE_UNIT));
        for key in [
            "Type=notify",
            "Restart=on-failure",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "PrivateTmp=yes",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
            "MemoryDenyWriteExecute=yes",
            "SystemCallFilter=@system-service",
            "UMask=0077",
        ] {
            assert!(text.lines().any(|l| l == key), "{key}");
        }
    }

    #[test]
    fn explicit_socket_and_config_reach_both_units() {
        let s = Spec {
            socket: Some("/run/memd/100%.sock".into()),
            config: Some("/etc/memd/config.toml".into()),
            ..spec()
        };
        let service = render_service(&s);
        assert!(
            service.contains("--socket /run/memd/100%%.sock --config /etc/memd/config.toml\n"),
            "{service}"
        );
        assert!(render_socket(&s).contains("\nListenStream=/run/memd/100%%.sock\n"));
        assert_eq!(render_socket(&spec()), SOCKET_UNIT);
    }

    #[test]
    fn sidecar_directories_are_writable_too() {
        let s = Spec {
            writes: vec![
                "/home/me/project a".into(),
                "/home/me/.local/share/memd/notes".into(),
            ],
            ..spec()
        };
        assert!(
            render_service(&s)
                .contains("\nReadWritePaths=/home/me/.local/share/memd \"-/home/me/project a\"\n"),
            "{}",
            render_service(&s)
        );
    }

    #[test]
    fn plist_names_the_binary_data_dir_and_log() {
        let text = render_plist(&spec(), Path::new("/Users/me/Library/Logs/memd.log"));
        assert!(text.contains(
            "    <string>/opt/memd bin/memd</string>\n    <string>daemon</string>\n    \
             <string>--data-dir</string>\n    <string>/home/me/.local/share/memd</string>\n"
        ));
        assert!(text.contains("<string>/Users/me/Library/Logs/memd.log</string>"));
        assert!(!text.contains("/usr/local/bin/memd"));
    }
}
