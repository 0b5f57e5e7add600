//! `[team]`: where the team's PostgreSQL is, which namespaces it holds,
//! what this machine is called, how long a call may take; and how memd
//! connects the way libpq would (the password from `PGPASSWORD`,
//! `PGPASSFILE` or `~/.pgpass`, TLS by `sslmode` up to `verify-full`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `[team]` section. Without it (or without a URL), memd is the
/// single-machine daemon: no connection is ever tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TeamConfig {
    /// A libpq-style URL (`postgresql://user@host:5432/db?sslmode=verify-full`)
    /// or key=value string; `MEMD_TEAM_URL` overrides it. Never holds the
    /// password: see [`password_for`].
    pub url: Option<String>,
    /// Where the pull listens and reads, when not at `url`: a direct or
    /// session-mode address when `url` is a pooler in transaction mode
    /// (which carries no `LISTEN` and no statement between transactions);
    /// `MEMD_TEAM_LISTEN_URL` overrides it. Writes always go to `url`.
    pub listen_url: Option<String>,
    /// A streaming replica the pull reads its pages from (`LISTEN` and
    /// writes stay on the primary); `MEMD_TEAM_REPLICA_URL` overrides it.
    pub replica_url: Option<String>,
    /// How many team commits the replica may be behind the primary before
    /// the pull reads from the primary instead.
    pub replica_max_lag: i64,
    /// Globs (`*`, `?`) of the namespaces PostgreSQL holds; every other
    /// namespace never leaves the machine.
    pub namespaces: Vec<String>,
    /// This machine's name in authorship (`changed_by.machine`); default:
    /// the host name.
    pub machine: Option<String>,
    /// Bound on every PostgreSQL call, in ms.
    pub timeout_ms: u64,
    /// How long tombstones, operation ids and decided proposals are kept
    /// in PostgreSQL (`90d`; `memd team cleanup`).
    pub retention: String,
    /// How often this daemon cleans up (`1d`); empty: never (the admin
    /// command only). Only a role with admin on `*` may.
    pub cleanup_every: String,
}

impl Default for TeamConfig {
    fn default() -> Self {
        TeamConfig {
            url: None,
            listen_url: None,
            replica_url: None,
            replica_max_lag: 100,
            namespaces: Vec::new(),
            machine: None,
            timeout_ms: 3_000,
            retention: "90d".into(),
            cleanup_every: String::new(),
        }
    }
}

impl TeamConfig {
    /// The URL in force: `MEMD_TEAM_URL` over the file's.
    pub fn url_with(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        env("MEMD_TEAM_URL")
            .filter(|u| !u.trim().is_empty())
            .or_else(|| self.url.clone())
    }

    /// Where the pull goes: `MEMD_TEAM_LISTEN_URL` over the file's
    /// `listen_url`; `None`: the URL in force.
    pub fn listen_url_with(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        env("MEMD_TEAM_LISTEN_URL")
            .filter(|u| !u.trim().is_empty())
            .or_else(|| self.listen_url.clone().filter(|u| !u.trim().is_empty()))
    }

    /// The replica the pull reads from: `MEMD_TEAM_REPLICA_URL` over the
    /// file's `replica_url`; `None`: the pull reads where it listens.
    pub fn replica_url_with(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        env("MEMD_TEAM_REPLICA_URL")
            .filter(|u| !u.trim().is_empty())
            .or_else(|| self.replica_url.clone().filter(|u| !u.trim().is_empty()))
    }

    /// Whether team memory is on: a URL and at least one namespace glob.
    pub fn enabled_with(&self, env: impl Fn(&str) -> Option<String>) -> bool {
        self.url_with(env).is_some() && !self.namespaces.is_empty()
    }

    /// The machine's name: the setting, else the host name.
    pub fn machine_name(&self) -> String {
        self.machine
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(host_name)
    }

    /// The call bound.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    /// How long cleaned-up things are kept (`retention`).
    pub fn retention(&self) -> Duration {
        crate::clock::parse_duration(&self.retention).unwrap_or(Duration::from_secs(90 * 86_400))
    }

    /// How often the daemon cleans up, if it does (`cleanup_every`).
    pub fn cleanup_every(&self) -> Option<Duration> {
        crate::clock::parse_duration(&self.cleanup_every).filter(|d| !d.is_zero())
    }

    /// Whether `namespace` is shared. The person's own namespace (`@me`)
    /// only when a pattern is exactly `@me`: no wider glob (`*`) takes it.
    pub fn shares(&self, namespace: &str) -> bool {
        if namespace == memd_proto::PERSONAL_NAMESPACE {
            return self.shares_personal();
        }
        self.namespaces.iter().any(|g| glob_matches(g, namespace))
    }

    /// Whether the person shares their own namespace (`@me` named as is).
    pub fn shares_personal(&self) -> bool {
        self.namespaces
            .iter()
            .any(|g| g == memd_proto::PERSONAL_NAMESPACE)
    }

    /// What is wrong with the section, if anything.
    ///
    /// # Errors
    /// The setting's dotted key and a message naming it.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(g) = self.namespaces.iter().find(|g| g.trim().is_empty()) {
            return Err((
                "team.namespaces",
                format!("team.namespaces holds an empty pattern `{g}`"),
            ));
        }
        if crate::clock::parse_duration(&self.retention).is_none() {
            return Err((
                "team.retention",
                format!(
                    "team.retention `{}` is not a duration (like 90d, 12w)",
                    self.retention
                ),
            ));
        }
        if !self.cleanup_every.trim().is_empty()
            && crate::clock::parse_duration(&self.cleanup_every).is_none_or(|d| d.is_zero())
        {
            return Err((
                "team.cleanup_every",
                format!(
                    "team.cleanup_every `{}` is not a duration (like 1d); empty: never",
                    self.cleanup_every
                ),
            ));
        }
        if self.timeout_ms == 0 {
            return Err(("team.timeout_ms", "team.timeout_ms must be above 0".into()));
        }
        if let Some(url) = &self.url
            && let Err(e) = Target::parse(url)
        {
            return Err(("team.url", format!("team.url: {e}")));
        }
        Ok(())
    }
}

/// The host name (from the kernel), or `localhost`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// `*` (any run) and `?` (one character) globs, the rest literal.
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with backtracking to the last `*`.
    let (mut gi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if gi < g.len() && (g[gi] == '?' || g[gi] == t[ti]) {
            gi += 1;
            ti += 1;
        } else if gi < g.len() && g[gi] == '*' {
            star = Some(gi);
            mark = ti;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while gi < g.len() && g[gi] == '*' {
        gi += 1;
    }
    gi == g.len()
}

/// A glob as a SQL `LIKE` pattern (with `\` as the escape character).
pub fn glob_to_like(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len());
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// How TLS is asked for (libpq's `sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain text.
    Disable,
    /// TLS when the server offers it, unverified; plain text otherwise.
    Prefer,
    /// TLS, the certificate not verified.
    Require,
    /// TLS, the certificate chain verified against the root certificates.
    VerifyCa,
    /// TLS, the chain and the host name verified.
    VerifyFull,
}

impl SslMode {
    /// The mode's name in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "unknown sslmode `{other}` (disable, prefer, require, verify-ca, verify-full)"
                ));
            }
        })
    }
}

/// A parsed URL: tokio-postgres's config plus the TLS settings libpq has
/// and tokio-postgres does not.
#[derive(Debug, Clone)]
pub struct Target {
    /// Host, port, user, database, options.
    pub pg: tokio_postgres::Config,
    /// `sslmode` (default `prefer`, as libpq).
    pub ssl: SslMode,
    /// `sslrootcert`: a PEM file of root certificates, or `system`.
    pub root_cert: Option<String>,
}

/// The URL parameters memd reads itself (tokio-postgres does not know them).
const OWN_PARAMS: &[&str] = &["sslmode", "sslrootcert"];

impl Target {
    /// Parses a URL (`postgres://…`, `postgresql://…`) or a key=value
    /// string.
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(url: &str) -> Result<Target, String> {
        let mut own: Vec<(String, String)> = Vec::new();
        let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (base, query) = url.split_once('?').unwrap_or((url, ""));
            let mut kept = Vec::new();
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if OWN_PARAMS.contains(&k) {
                    own.push((k.to_string(), percent_decode(v)));
                } else {
                    kept.push(pair);
                }
            }
            if kept.is_empty() {
                base.to_string()
            } else {
                format!("{base}?{}", kept.join("&"))
            }
        } else {
            let mut kept = Vec::new();
            for token in url.split_whitespace() {
                match token.split_once('=') {
                    Some((k, v)) if OWN_PARAMS.contains(&k) => {
                        own.push((k.to_string(), v.trim_matches('\'').to_string()));
                    }
                    _ => kept.push(token),
                }
            }
            kept.join(" ")
        };
        let mut pg: tokio_postgres::Config = rest.parse().map_err(|e| {
            format!(
                "not a PostgreSQL connection string ({e}): expected \
                 postgresql://USER@HOST[:PORT]/DATABASE[?sslmode=…], \
                 postgresql://USER@/DATABASE?host=/SOCKET/DIR, or `host=… dbname=…` pairs"
            )
        })?;
        if let Some(h) = pg.get_hosts().iter().find_map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) if h.contains('/') => Some(h.clone()),
            _ => None,
        }) {
            return Err(format!(
                "host `{h}` is neither a host name nor a socket directory (a socket directory \
                 is an absolute path: `/var/run/postgresql`)"
            ));
        }
        if pg.get_password().is_some() {
            return Err(
                "the URL holds a password: keep it in PGPASSWORD, PGPASSFILE or ~/.pgpass".into(),
            );
        }
        let mut ssl = SslMode::Prefer;
        let mut root_cert = None;
        for (k, v) in own {
            match k.as_str() {
                "sslmode" => ssl = SslMode::parse(&v)?,
                _ => root_cert = Some(v),
            }
        }
        if pg.get_hosts().is_empty() {
            pg.host(std::env::var("PGHOST").unwrap_or_else(|_| "/var/run/postgresql".into()));
        }
        if pg.get_user().is_none() {
            pg.user(std::env::var("PGUSER").unwrap_or_else(|_| os_user()));
        }
        // libpq never uses TLS over a Unix socket: `disable`, `allow` and
        // `prefer` are plain there, and a mode that demands TLS cannot be
        // met.
        let hosts = pg.get_hosts();
        let on_socket = hosts
            .iter()
            .any(|h| matches!(h, tokio_postgres::config::Host::Unix(_)));
        let on_tcp = hosts
            .iter()
            .any(|h| matches!(h, tokio_postgres::config::Host::Tcp(_)));
        if on_socket && ssl != SslMode::Disable && ssl != SslMode::Prefer {
            return Err(format!(
                "sslmode={} asks for TLS, which is not possible over a Unix socket (the host is a \
                 socket directory): use sslmode=disable or prefer there, or a TCP host name for TLS",
                ssl.as_str()
            ));
        }
        if on_socket && on_tcp && ssl == SslMode::Prefer {
            return Err(
                "the URL lists both Unix-socket directories and TCP hosts with sslmode=prefer: \
                 memd cannot use TLS on some hosts and not others; give sslmode=disable, or one \
                 kind of host"
                    .into(),
            );
        }
        let ssl = if on_socket { SslMode::Disable } else { ssl };
        pg.ssl_mode(match ssl {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        Ok(Target { pg, ssl, root_cert })
    }

    /// The host as it is written (a name, an address or a socket dir).
    pub fn host(&self) -> String {
        match self.pg.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => String::new(),
        }
    }

    /// The port (5432 by default).
    pub fn port(&self) -> u16 {
        self.pg.get_ports().first().copied().unwrap_or(5432)
    }

    /// The database (the user's name by default).
    pub fn database(&self) -> String {
        self.pg.get_dbname().map_or_else(
            || self.pg.get_user().unwrap_or_default().to_string(),
            str::to_string,
        )
    }

    /// The URL without any secret, for logs and `status`.
    pub fn display(&self) -> String {
        format!(
            "postgresql://{}@{}:{}/{}",
            self.pg.get_user().unwrap_or_default(),
            self.host(),
            self.port(),
            self.database()
        )
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn os_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "postgres".into())
}

/// The password for `target`, where libpq users keep it: `PGPASSWORD`,
/// else the first matching line of `PGPASSFILE` (or `~/.pgpass`), which is
/// ignored — with a warning — when others may read it.
pub fn password_for(target: &Target, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(p) = env("PGPASSWORD") {
        return Some(p);
    }
    let file = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
    let text = read_private(&file)?;
    let host = target.host();
    // libpq matches a socket connection against `localhost`.
    let host = if host.starts_with('/') {
        "localhost".to_string()
    } else {
        host
    };
    let port = target.port().to_string();
    let db = target.database();
    let user = target.pg.get_user().unwrap_or_default().to_string();
    pgpass_lookup(&text, [&host, &port, &db, &user])
}

fn read_private(file: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            file = %file.display(),
            "the password file is readable by others: ignored (chmod 0600 it), as libpq does"
        );
        return None;
    }
    std::fs::read_to_string(file).ok()
}

/// The password of the first `host:port:database:user:password` line whose
/// four fields match (`*` matches anything; `\:` and `\\` are escapes).
pub fn pgpass_lookup(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4..].join(":"));
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("one field").push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("one field").push(c),
        }
    }
    out
}

/// The TLS client settings for `target`: root certificates from
/// `sslrootcert` (a PEM file, or `system` for the bundled web roots), else
/// `~/.postgresql/root.crt` when it exists, else the bundled roots; and the
/// verification `sslmode` asks for.
///
/// # Errors
/// A message when the root certificates cannot be read.
pub fn tls_config(
    target: &Target,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match target.ssl {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth(),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = root_store(target, env)?;
            if target.ssl == SslMode::VerifyFull {
                builder.with_root_certificates(roots).with_no_client_auth()
            } else {
                let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .map_err(|e| e.to_string())?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(inner)))
                    .with_no_client_auth()
            }
        }
    };
    Ok(Arc::new(config))
}

fn root_store(
    target: &Target,
    env: impl Fn(&str) -> Option<String>,
) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let file = match target.root_cert.as_deref() {
        Some("system") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => env("HOME")
            .map(|h| Path::new(&h).join(".postgresql/root.crt"))
            .filter(|p| p.exists()),
    };
    match file {
        Some(path) => {
            use rustls::pki_types::pem::PemObject;
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(&path)
                .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
            for cert in certs {
                let cert =
                    cert.map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
            }
            if roots.is_empty() {
                return Err(format!(
                    "sslrootcert {} holds no certificate",
                    path.display()
                ));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(roots)
}

/// `require`: encrypted, not authenticated (libpq's meaning without a root
/// certificate).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the name in the
/// certificate is not compared with the host.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pull_listens_at_listen_url_its_variable_first_else_at_url() {
        let none = |_: &str| None;
        let mut c = TeamConfig {
            url: Some("host=/run/bouncer port=6432".into()),
            ..TeamConfig::default()
        };
        assert_eq!(c.listen_url_with(none), None, "the URL in force then");
        c.listen_url = Some("  ".into());
        assert_eq!(c.listen_url_with(none), None, "blank is unset");
        c.listen_url = Some("host=/run/postgresql".into());
        assert_eq!(
            c.listen_url_with(none).as_deref(),
            Some("host=/run/postgresql")
        );
        let env = |k: &str| (k == "MEMD_TEAM_LISTEN_URL").then(|| "host=/elsewhere".to_string());
        assert_eq!(c.listen_url_with(env).as_deref(), Some("host=/elsewhere"));
        let toml: TeamConfig = toml::from_str("listen_url = \"host=/x\"").unwrap();
        assert_eq!(toml.listen_url.as_deref(), Some("host=/x"));
    }

    #[test]
    fn globs() {
        assert!(glob_matches("team-*", "team-web"));
        assert!(glob_matches("team-*", "team-"));
        assert!(!glob_matches("team-*", "teams"));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("a?c", "abc"));
        assert!(!glob_matches("a?c", "ac"));
        assert!(glob_matches("github.com/acme/*", "github.com/acme/api"));
        assert!(glob_matches("*/api", "github.com/acme/api"));
        assert!(!glob_matches("proj", "proj2"));
        // The person's own namespace is shared only when named as is.
        let wide = TeamConfig {
            namespaces: vec!["*".into(), "@*".into()],
            ..TeamConfig::default()
        };
        assert!(wide.shares("github.com/acme/api") && !wide.shares("@me"));
        let mine = TeamConfig {
            namespaces: vec!["@me".into()],
            ..TeamConfig::default()
        };
        assert!(mine.shares("@me") && !mine.shares("github.com/acme/api"));
        assert_eq!(glob_to_like("a_b*%?"), "a\\_b%\\%_");
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let text = "# comment\n\
                    db.example:5432:memd:alice:s3cret\n\
                    *:*:*:bob:pa\\:ss\\\\word\n\
                    localhost:5433:*:*:local:with:colons\n";
        let find = |w: [&str; 4]| pgpass_lookup(text, w);
        assert_eq!(
            find(["db.example", "5432", "memd", "alice"]).as_deref(),
            Some("s3cret")
        );
        assert_eq!(find(["db.example", "5432", "other", "alice"]), None);
        assert_eq!(
            find(["anywhere", "1", "x", "bob"]).as_deref(),
            Some("pa:ss\\word")
        );
        assert_eq!(
            find(["localhost", "5433", "x", "carol"]).as_deref(),
            Some("local:with:colons")
        );
    }

    #[test]
    fn urls_keep_tls_settings_and_refuse_passwords() {
        let t = Target::parse(
            "postgresql://memd@db.example:6432/team?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=memd",
        )
        .unwrap();
        assert_eq!(t.ssl, SslMode::VerifyFull);
        assert_eq!(t.root_cert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(t.display(), "postgresql://memd@db.example:6432/team");
        let kv = Target::parse("host=/tmp/pg port=5499 user=u dbname=d sslmode=disable").unwrap();
        assert_eq!(kv.ssl, SslMode::Disable);
        assert_eq!(kv.host(), "/tmp/pg");
        assert!(Target::parse("postgresql://u:secret@h/d").is_err());
        // A Unix socket is plain whatever `prefer` or `allow` says; a mode
        // that demands TLS there is refused with the reason.
        for url in [
            "postgresql://u@/d?host=/var/run/postgresql",
            "postgresql://u@/d?host=/var/run/postgresql&sslmode=prefer",
            "postgresql://u@/d?host=/var/run/postgresql&sslmode=allow",
            "host=/tmp/pg user=u dbname=d",
        ] {
            assert_eq!(Target::parse(url).unwrap().ssl, SslMode::Disable, "{url}");
        }
        for mode in ["require", "verify-ca", "verify-full"] {
            let e = Target::parse(&format!(
                "postgresql://u@/d?host=/var/run/postgresql&sslmode={mode}"
            ))
            .unwrap_err();
            assert!(e.contains("not possible over a Unix socket"), "{e}");
        }
        assert_eq!(
            Target::parse("postgresql://u@db.example/d").unwrap().ssl,
            SslMode::Prefer
        );
        assert!(Target::parse("postgresql://u@h/d?sslmode=sometimes").is_err());
        let e = Target::parse("postgresql://u@/d?host=run/postgresql").unwrap_err();
        assert!(
            e.contains("neither a host name nor a socket directory"),
            "{e}"
        );
        let e = Target::parse("postgresql://u@h:port/d").unwrap_err();
        assert!(e.contains("expected postgresql://"), "{e}");
    }

    #[test]
    fn the_environment_gives_the_password_first() {
        let t = Target::parse("postgresql://alice@db.example:5432/memd").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "db.example:5432:memd:alice:from-file\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = |pw: Option<&str>| {
            let file = file.clone();
            let pw = pw.map(str::to_string);
            move |k: &str| match k {
                "PGPASSWORD" => pw.clone(),
                "PGPASSFILE" => Some(file.display().to_string()),
                _ => None,
            }
        };
        assert_eq!(
            password_for(&t, env(Some("from-env"))).as_deref(),
            Some("from-env")
        );
        assert_eq!(password_for(&t, env(None)).as_deref(), Some("from-file"));
        // A file others may read is ignored, as libpq does.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(password_for(&t, env(None)), None);
    }
}
