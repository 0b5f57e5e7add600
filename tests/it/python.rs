//! The Python client (`clients/python`, standard library only) and its
//! pytest suite, against the real `memd` binary: `.ci/run` installs pytest
//! in its venv and names its python in `MEMD_TEST_PYTHON`.

use crate::common::{BIN, require};

#[test]
fn the_python_client_passes_its_tests_against_the_real_daemon() {
    let python = std::env::var("MEMD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_pytest = std::process::Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !require(
        has_pytest,
        &format!("{python} cannot import pytest (pip install pytest)"),
    ) {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python");
    let out = std::process::Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(dir)
        .env("MEMD_BIN", BIN)
        .env_remove("MEMD_SOCKET")
        .env_remove("MEMD_NAMESPACE")
        .env_remove("MEMD_DATA_DIR")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{text}");
    assert!(text.contains(" passed"), "{text}");
    assert!(
        !text.contains("skipped"),
        "a Python test was skipped:\n{text}"
    );
}
