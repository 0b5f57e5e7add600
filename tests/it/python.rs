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

/// The Python client as the wheel `memd-client`: built with its standard
/// backend (hatchling, from the wheelhouse `.ci/run` fills, so offline)
/// without writing into the source tree, installed into a fresh venv, where
/// its tests pass against the real daemon importing the installed package.
#[test]
fn the_python_client_wheel_installs_into_a_fresh_venv_and_passes_its_tests() {
    let python = std::env::var("MEMD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let wheelhouse = std::env::var("MEMD_TEST_WHEELHOUSE").ok();
    let has = |module: &str| {
        std::process::Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !require(
        wheelhouse.is_some(),
        "MEMD_TEST_WHEELHOUSE names no directory of wheels (hatchling, pytest): .ci/run \
         fills target/py-wheels",
    ) || !require(
        has("venv") && has("pip"),
        &format!("{python} has no venv or pip"),
    ) {
        return;
    }
    let wheelhouse = std::path::PathBuf::from(wheelhouse.unwrap());
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python");
    let dir = tempfile::tempdir().unwrap();
    let run = |cmd: &mut std::process::Command| {
        let out = cmd
            .env_remove("MEMD_SOCKET")
            .env_remove("MEMD_NAMESPACE")
            .env_remove("MEMD_DATA_DIR")
            .env_remove("PIP_REQUIRE_VIRTUALENV")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{cmd:?} failed:\n{text}");
        text
    };
    let leftovers = || {
        ["build", "dist"]
            .iter()
            .map(|d| source.join(d))
            .chain(
                std::fs::read_dir(&source)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.to_string_lossy().ends_with(".egg-info")),
            )
            .filter(|p| p.exists())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        leftovers(),
        Vec::<std::path::PathBuf>::new(),
        "before the build"
    );

    // The wheel, with pip's build isolation, from the wheelhouse only.
    let wheels = dir.path().join("wheels");
    run(std::process::Command::new(&python)
        .args(["-m", "pip", "wheel", "--no-deps", "--no-index", "-q"])
        .arg("--find-links")
        .arg(&wheelhouse)
        .arg("-w")
        .arg(&wheels)
        .arg(&source));
    let version = env!("CARGO_PKG_VERSION");
    let wheel = wheels.join(format!("memd_client-{version}-py3-none-any.whl"));
    assert!(wheel.is_file(), "no {}", wheel.display());
    assert_eq!(
        leftovers(),
        Vec::<std::path::PathBuf>::new(),
        "the build left files in clients/python"
    );

    // A fresh venv (no system packages), the wheel and pytest installed.
    let venv = dir.path().join("venv");
    run(std::process::Command::new(&python)
        .args(["-m", "venv"])
        .arg(&venv));
    let vpython = venv.join("bin/python");
    run(std::process::Command::new(&vpython)
        .args(["-m", "pip", "install", "--no-index", "-q"])
        .arg("--find-links")
        .arg(&wheelhouse)
        .arg(&wheel)
        .arg("pytest"));
    let shown =
        run(std::process::Command::new(&vpython).args(["-m", "pip", "show", "memd-client"]));
    assert!(shown.contains("Name: memd-client"), "{shown}");
    assert!(shown.contains(&format!("Version: {version}")), "{shown}");

    // The tests and the example, without the package's sources beside them:
    // they import the installed memd_client.
    let suite = dir.path().join("suite");
    for sub in ["tests", "examples"] {
        std::fs::create_dir_all(suite.join(sub)).unwrap();
        for file in std::fs::read_dir(source.join(sub)).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "py") {
                std::fs::copy(&file, suite.join(sub).join(file.file_name().unwrap())).unwrap();
            }
        }
    }
    let origin = run(std::process::Command::new(&vpython)
        .args(["-c", "import memd_client; print(memd_client.__file__)"])
        .current_dir(&suite));
    assert!(
        origin.trim().starts_with(&*venv.to_string_lossy()),
        "memd_client comes from {origin}"
    );
    let text = run(std::process::Command::new(&vpython)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(&suite)
        .env("MEMD_BIN", BIN));
    assert!(text.contains(" passed"), "{text}");
    assert!(
        !text.contains("skipped"),
        "a Python test was skipped:\n{text}"
    );
}
